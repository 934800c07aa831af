"""Hostile and generated input on the flag routes, with schemathesis: every check it
has, on positive and negative data, operation by operation; then its stateful phase, which
follows the document's links from a create to the get, update, patch, archive, revive and
delete of the same flag.

One setting differs from schemathesis's defaults, on these routes only: a 400 counts as an
answer to data that fits the schema. A name can fit the schema's pattern and still be taken
(by a flag of the demo, or by one created earlier in the same run), and a JSON Patch can fit
RFC 6902's shape and still write a read-only field or give ``type`` an unknown value: the
issue asks for 400 naming the field in both cases.
"""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.config import SchemathesisConfig

from flagadmin.store import connect
from flagadmin.store import features as store_features

from helpers import examples

#: The routes of the flag changes (4.4's own GET /api/admin/archive/features is tested elsewhere;
#: a project's API tokens in test_api_tokens.py).
FLAG_ROUTES = r"^/api/admin/(projects/(?![^/]+/api-tokens)|features/validate|archive/(revive/|(?!features$)))"

CONFIG = {
    # No field takes a NUL character (a 400 says so, test_errors.py): not generated here.
    "generation": {"allow-x00": False},
    "checks": {
        "positive_data_acceptance": {
            "expected-statuses": ["2xx", "3xx", "400", "401", "403", "404", "409", "429"]
        }
    },
    # A real project and environment of the demo, so that creates succeed and the links
    # that follow them reach the flag they created (any other name is a plain 404).
    "parameters": {"path.projectId": "default", "path.environment": "production"},
}
PINNED = {"projectId": "default", "environment": "production"}


def flag_schema(app, token: str | None = None):
    """The document of ``app``, reduced to the flag routes, with requests authorized by
    ``token`` (the security scheme's key: schemathesis itself leaves it out of the requests it
    makes without authorization)."""
    config = {**CONFIG, "auth": {"openapi": {"apiKey": {"api_key": token}}}} if token else CONFIG
    loaded = schemathesis.openapi.from_wsgi(
        "/docs/openapi.json", app, config=SchemathesisConfig.from_dict(config)
    )
    return loaded.include(path_regex=FLAG_ROUTES)


@pytest.fixture
def flags_api_schema(make_app, admin_user):
    # As in test_openapi.py: schemathesis's ignored_auth check sends many unauthenticated
    # requests, which the auth-failure throttle would rightly answer with 429. The token is a
    # personal token of an Admin: every route, favorites included, is open to it.
    return flag_schema(make_app(auth_failure_limit="100000/minute"), admin_user)


schema = schemathesis.pytest.from_fixture("flags_api_schema").include(path_regex=FLAG_ROUTES)


@schema.parametrize()
@settings(max_examples=examples(20), deadline=None, suppress_health_check=list(HealthCheck))
def test_flag_routes__schemathesis_finds_nothing(case):
    case.call_and_validate(headers={"Accept-Encoding": "identity"})


def test_document__flag_routes_and_their_links(make_app):
    found = [result.ok() for result in flag_schema(make_app()).get_all_operations()]
    operations = {(operation.path, operation.method.upper()) for operation in found}
    assert ("/api/admin/projects/{projectId}/features", "POST") in operations
    assert ("/api/admin/archive/revive/{featureName}", "POST") in operations
    assert ("/api/admin/archive/{featureName}", "DELETE") in operations
    assert ("/api/admin/archive/features", "GET") not in operations
    strategies = "/api/admin/projects/{projectId}/features/{featureName}/environments/{environment}"
    strategies += "/strategies"
    assert (strategies, "POST") in operations and (strategies + "/set-sort-order", "POST") in operations
    # the flag changes' 13, and the rollout rules kept under a flag's path, fuzzed here too: its
    # strategies (7), variants (4) and dependencies (6)
    assert len(operations) == 13 + 7 + 4 + 6


def test_stateful__create_then_update_archive_revive_delete__schemathesis_finds_nothing(
    make_app, admin_user, database
):
    # Given: the links of the document, followed by schemathesis's state machine
    machine = flag_schema(make_app(auth_failure_limit="100000/minute"), admin_user).as_state_machine()

    class FlagLifecycle(machine):
        def get_call_kwargs(self, case):
            return {"headers": {"Accept-Encoding": "identity"}}

        def setup(self):
            self.created = set()

        def teardown(self):
            # Each scenario starts from the demo data: hypothesis replays scenarios, and a
            # flag left by one would make the next one's create a 400
            with connect(database) as conn, conn.write():
                for name in self.created:
                    store_features.delete(conn, name)

        def after_call(self, response, case):
            if response.status_code == 201:
                self.created.add(response.json()["name"])

        def before_call(self, case):
            # The stateful phase does not apply the configured parameters: pin them here
            for name, value in PINNED.items():
                if case.path_parameters and name in case.path_parameters:
                    case.path_parameters[name] = value

    # When / Then: every step's response passes every check
    FlagLifecycle.run(
        settings=settings(
            max_examples=examples(20),
            stateful_step_count=8,
            deadline=None,
            suppress_health_check=list(HealthCheck),
        )
    )
