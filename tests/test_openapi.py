"""The OpenAPI document: valid, complete, and kept by every response (schemathesis)."""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from openapi_spec_validator import validate
from schemathesis.config import SchemathesisConfig

from flagadmin.web.operations import declared_operations

from helpers import examples
from receiver import Receiver, point_demo_webhooks_at

pytestmark = pytest.mark.same_on_both_engines

SECTIONS = {"4.1", "4.2", "4.3", "4.4", "4.5"}

# --- flags change through the API (blueprints/features.py, feature_archive.py) -------------
FLAG_SECTION = "1 (flag changes, on the reference server's paths)"
FLAG_PATHS = {
    "/api/admin/projects/{projectId}/features",
    "/api/admin/projects/{projectId}/features/{featureName}",
    "/api/admin/projects/{projectId}/features/{featureName}/environments/{environment}/on",
    "/api/admin/projects/{projectId}/features/{featureName}/environments/{environment}/off",
    "/api/admin/projects/{projectId}/features/{featureName}/favorites",
    "/api/admin/features/validate",
    "/api/admin/archive/revive/{featureName}",
    "/api/admin/archive/{featureName}",
}
#: Their schemathesis run, with its own settings, is in test_features_schemathesis.py.
FLAG_ROUTES = r"^/api/admin/(projects/|features/validate|archive/(revive/|(?!features$)))"

# --- integration configurations (blueprints/addons.py), in the runs below ------------
ADDON_SECTION = "2.2"
ADDON_PATHS = {"/api/admin/addons", "/api/admin/addons/{id}", "/api/admin/addons/{id}/test"}
#: Settings of the schemathesis apps: generated webhook URLs name any host, and are only
#: checked for their syntax when private addresses are allowed (a public-address check needs
#: DNS); a test delivery to a generated host gives up after 1 s.
ADDON_SETTINGS = {"integrations_allow_private": True, "delivery_timeout": 1.0}


# --- what SCIM groups grant (blueprints/group_roles.py); /scim/v2 is not in it ---------------
GROUP_ROLES_SECTION = "4.5 (the roles SCIM groups grant)"
GROUP_ROLES_PATHS = {
    "/api/admin/group-roles",
    "/api/admin/group-roles/root-role",
    "/api/admin/group-roles/project-roles",
}

# --- rollout rules: strategy types (blueprints/strategies.py), in the runs below; a flag's
# strategies are fuzzed with the flag routes, in test_features_schemathesis.py ----------------
RULES_SECTION = "1 (rollout rules, on the reference server's paths)"
STRATEGY_PATHS = {
    "/api/admin/strategies",
    "/api/admin/strategies/{name}",
    "/api/admin/strategies/{strategyName}/deprecate",
    "/api/admin/strategies/{strategyName}/reactivate",
    "/api/admin/projects/{projectId}/features/{featureName}/environments/{environment}/strategies",
    "/api/admin/projects/{projectId}/features/{featureName}/environments/{environment}/strategies/{strategyId}",
    "/api/admin/projects/{projectId}/features/{featureName}/environments/{environment}/strategies/set-sort-order",
}

# --- rollout rules: segments, a flag's variants and its dependency (blueprints/segments.py,
# variants.py, dependencies.py); their own tests are test_segments.py, test_variants.py and
# test_dependencies.py -----------------------------------------------------------------------
SEGMENT_VARIANT_DEPENDENCY_PATHS = {
    "/api/admin/segments",
    "/api/admin/segments/validate",
    "/api/admin/segments/{id}",
    "/api/admin/segments/{id}/strategies",
    "/api/admin/segments/strategies/{strategyId}",
    "/api/admin/projects/{projectId}/features/{featureName}/variants-batch",
    "/api/admin/projects/{projectId}/features/{featureName}/environments/{environment}/variants",
    "/api/admin/projects/{projectId}/dependencies",
    "/api/admin/projects/{projectId}/features/{child}/dependencies",
    "/api/admin/projects/{projectId}/features/{child}/dependencies/{parent}",
    "/api/admin/projects/{projectId}/features/{child}/parents",
    "/api/admin/projects/{projectId}/features/{parent}/parent-variants",
}

# --- the system event log (blueprints/events.py), in the runs below -------------------------
EVENT_LOG_SECTION = "2.3 (the system event log, on the reference server's paths)"
EVENT_LOG_PATHS = {"/api/admin/events", "/api/admin/events/{featureName}", "/api/admin/search/events"}

# --- API tokens (blueprints/api_tokens.py); their schemathesis run is in test_api_tokens.py ------
API_TOKENS_SECTION = "5 (API tokens for the SDKs, on the reference server's paths)"
API_TOKEN_ROUTES = r"^/api/admin/api-tokens"
API_TOKEN_PATHS = {
    "/api/admin/api-tokens",
    "/api/admin/api-tokens/{token}",
    "/api/admin/projects/{projectId}/api-tokens",
    "/api/admin/projects/{projectId}/api-tokens/{token}",
}

# --- the Client API's flag configuration (blueprints/client_api.py); a client token's run is in
# test_client_features.py, here it answers the admin token 403 --------------------------------
CLIENT_FEATURES_SECTION = "Client API (the reference server's /api/client: the flag configuration SDKs poll)"
CLIENT_FEATURES_PATHS = {"/api/client/features", "/api/client/features/{featureName}"}

# --- what SDKs report (blueprints/client_metrics.py: a client token's runs are in
# test_client_metrics.py, here they answer the admin token 403) and the applications they make
# (blueprints/applications.py), in the runs below -----------------------------------------------
CLIENT_METRICS_SECTION = "Client API (the reference server's /api/client: SDK registrations and metrics)"
CLIENT_METRICS_PATHS = {"/api/client/register", "/api/client/metrics", "/api/client/metrics/bulk"}
APPLICATIONS_SECTION = "Applications (the reference server's /api/admin/metrics: what SDKs report)"
APPLICATIONS_PATHS = {
    "/api/admin/metrics/applications",
    "/api/admin/metrics/applications/{appName}",
    "/api/admin/metrics/unknown-flags",
}

# --- flags evaluated in the server: the Frontend API (blueprints/frontend_api.py; a frontend
# token's tests are test_frontend_api.py) and OFREP (blueprints/ofrep.py, test_ofrep.py) --------
FRONTEND_SECTION = "Frontend API (the reference server's /api/frontend: flags evaluated for a context)"
FRONTEND_PATHS = {"/api/frontend", "/api/frontend/client/metrics", "/api/frontend/client/register"}
OFREP_SECTION = "OFREP (the OpenFeature Remote Evaluation Protocol, v0.3.0)"
OFREP_PATHS = {"/ofrep/v1/evaluate/flags", "/ofrep/v1/evaluate/flags/{key}"}


def test_document__valid_openapi_3(openapi_document):
    validate(openapi_document)
    assert openapi_document["openapi"].startswith("3.")


def test_document__five_operations_of_the_spec(app, openapi_document):
    assert {op.section for _, op in declared_operations(app)} == SECTIONS | {
        FLAG_SECTION,
        ADDON_SECTION,
        GROUP_ROLES_SECTION,
        RULES_SECTION,
        EVENT_LOG_SECTION,
        API_TOKENS_SECTION,
        CLIENT_FEATURES_SECTION,
        CLIENT_METRICS_SECTION,
        APPLICATIONS_SECTION,
        FRONTEND_SECTION,
        OFREP_SECTION,
    }
    assert (
        set(openapi_document["paths"])
        == {
            "/api/admin/addons/{id}/events",
            "/api/admin/personal-dashboard",
            "/api/admin/ui-config",
            "/api/admin/ui-config/cors",
            "/api/admin/archive/features",
            "/api/admin/scim-settings/generate-new-token",
        }
        | FLAG_PATHS
        | ADDON_PATHS
        | GROUP_ROLES_PATHS
        | STRATEGY_PATHS
        | SEGMENT_VARIANT_DEPENDENCY_PATHS
        | EVENT_LOG_PATHS
        | API_TOKEN_PATHS
        | CLIENT_FEATURES_PATHS
        | CLIENT_METRICS_PATHS
        | APPLICATIONS_PATHS
        | FRONTEND_PATHS
        | OFREP_PATHS
    )


def test_document__security_scheme_and_error_statuses(openapi_document):
    scheme = openapi_document["components"]["securitySchemes"]["apiKey"]
    assert scheme == {**scheme, "type": "apiKey", "in": "header", "name": "Authorization"}
    for path, operations in openapi_document["paths"].items():
        for operation in operations.values():
            assert operation["security"] == [{"apiKey": []}]
            assert "401" in operation["responses"], path
            # 200, or 201/202 for the flag changes' create and archive, 204 for the writes the
            # reference answers with no body (segments, ui-config's CORS origins)
            assert {"200", "201", "202", "204"} & set(operation["responses"]), path
    events = openapi_document["paths"]["/api/admin/addons/{id}/events"]["get"]
    assert set(events["responses"]) == {"200", "400", "401", "403", "404", "429", "503"}


def test_document__no_auth_needed(client):
    response = client.get("/docs/openapi.json")
    assert response.status_code == 200
    assert response.get_json()["info"]["title"]


def test_document__statuses_derived_from_each_declaration(openapi_document):
    """400 with a query or body schema, 401 and 429 always, 403 with a permission, 404 with a
    path parameter, 413 with a body, 503 always; 304 with an ETag."""
    paths = openapi_document["paths"]
    assert set(paths["/api/admin/ui-config"]["get"]["responses"]) == {"200", "304", "401", "429", "503"}
    assert set(paths["/api/admin/personal-dashboard"]["get"]["responses"]) == {
        "200",
        "304",
        "401",
        "403",
        "429",
        "503",
    }
    assert set(paths["/api/admin/scim-settings/generate-new-token"]["post"]["responses"]) == {
        "200",
        "401",
        "403",
        "413",
        "429",
        "503",
    }
    parameters = paths["/api/admin/addons/{id}/events"]["get"]["parameters"]
    (path_id,) = [p for p in parameters if p["in"] == "path"]
    assert path_id["name"] == "id" and "integration configuration" in path_id["description"]


def test_document__one_per_app__built_from_its_own_views(make_app):
    """No module-global list: an app's document holds exactly its own operations."""
    from flask import Blueprint

    from flagadmin.web.operations import operation

    extra = Blueprint("extra", __name__, url_prefix="/api/admin")

    @operation(
        extra,
        "/things/<name>",
        section="test",
        summary="A thing",
        response=None,
        path={
            "name": __import__("flagadmin.web.operations", fromlist=["PathParameter"]).PathParameter("A name")
        },
    )
    def get_thing(caller, conn, name):
        """A thing by name."""
        return {"name": name}

    app = make_app()
    app.register_blueprint(extra)
    with_extra = app.test_client().get("/docs/openapi.json").get_json()["paths"]
    plain = make_app().test_client().get("/docs/openapi.json").get_json()["paths"]
    assert "/api/admin/things/{name}" in with_extra
    assert "/api/admin/things/{name}" not in plain
    assert with_extra["/api/admin/things/{name}"]["get"]["parameters"][0]["description"] == "A name"


@pytest.fixture
def api_schema(make_app, admin_token):
    # schemathesis's ignored_auth check sends hundreds of unauthenticated requests a minute from
    # one address and wants 401 to each: the throttle (tested in test_throttle.py) would
    # rightly answer 429 past the limit, so this app allows far more failures than the default.
    # No field takes a NUL character (a 400 says so, test_errors.py): not generated here.
    # The admin token is the document's security scheme's key, so that schemathesis itself
    # decides when a request goes without it (a negative case that drops the header must
    # stay without it).
    # A test delivery (POST /addons/{id}/test) to a demo webhook goes to this test's receiver.
    app = make_app(auth_failure_limit="100000/minute", **ADDON_SETTINGS)
    receiver = Receiver()
    point_demo_webhooks_at(app.test_client(), admin_token, receiver.url("/ok"))
    config = SchemathesisConfig.from_dict(
        {"generation": {"allow-x00": False}, "auth": {"openapi": {"apiKey": {"api_key": admin_token}}}}
    )
    yield schemathesis.openapi.from_wsgi("/docs/openapi.json", app, config=config)
    receiver.close()


#: Rollout rules whose validity no schema can say: a constraint's values depend on its operator
#: (IN needs one, SEMVER_* a strict version...), a name may be taken, a type may be in use.
#: Their run below counts a 400 as an answer to data that fits the schema, as the flag routes' does.
RULES_ROUTES = r"^/api/admin/(segments|strategies)"

schema = (
    schemathesis.pytest.from_fixture("api_schema")
    .exclude(path_regex=FLAG_ROUTES)
    .exclude(path_regex=API_TOKEN_ROUTES)
    .exclude(path_regex=RULES_ROUTES)
)


@schema.parametrize()
@settings(max_examples=examples(20), deadline=None, suppress_health_check=list(HealthCheck))
def test_api__schemathesis_finds_nothing(case):
    # Every check schemathesis has, on positive and negative data, with a valid admin token
    # identity: the in-process WSGI transport hands schemathesis the raw bytes, gzip undecoded
    case.call_and_validate(headers={"Accept-Encoding": "identity"})


@pytest.fixture
def rules_api_schema(make_app, admin_token):
    config = SchemathesisConfig.from_dict(
        {
            "generation": {"allow-x00": False},
            "auth": {"openapi": {"apiKey": {"api_key": admin_token}}},
            # A strategy type may declare 100 parameters: generated bodies can pass the 64 KiB
            # a body may hold, which is refused with 413 (a refusal, documented as such): added
            # to schemathesis's own lists of the statuses each check expects
            "checks": {
                "positive_data_acceptance": {
                    "expected-statuses": ["2xx", "3xx", "400", "401", "403", "404", "409", "413", "429"]
                },
                "negative_data_rejection": {
                    "expected-statuses": [
                        *["400", "401", "403", "404", "405", "406", "409", "413", "415"],
                        *["422", "428", "429", "5xx"],
                    ]
                },
            },
        }
    )
    app = make_app(auth_failure_limit="100000/minute")
    return schemathesis.openapi.from_wsgi("/docs/openapi.json", app, config=config)


# (the filter goes on the fixture's loader: one on the schema the fixture returns is not applied,
# and every operation of the document would be run a second time here)
@schemathesis.pytest.from_fixture("rules_api_schema").include(path_regex=RULES_ROUTES).parametrize()
@settings(max_examples=examples(20), deadline=None, suppress_health_check=list(HealthCheck))
def test_rules_api__schemathesis_finds_nothing(case):
    # Every other check, on positive and negative data, as above
    case.call_and_validate(headers={"Accept-Encoding": "identity"})
