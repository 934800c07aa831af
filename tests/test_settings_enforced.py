"""Settings that ui-config shows are kept, not only shown: maintenance mode refuses every write of
the admin API with 503 and keeps reads; a create past a resource limit (featureFlags, projects,
environments, apiTokens) is refused with 400 naming the limit and its value, through the API
and the command line alike, and writes nothing."""

from __future__ import annotations

import re

import orjson
import pytest

from flagadmin.config import DEFAULT_RESOURCE_LIMITS
from flagadmin.web.auth import WRITE_METHODS
from flagadmin.web.operations import declared_operations

from flag_helpers import ARCHIVE, DASHBOARD, VALIDATE, features_path, flag_path, last_event_id, revive_path
from helpers import auth

# --- maintenance mode ---------------------------------------------------------------------------


def _path_of(rule: str) -> str:
    """A concrete path for an operation's rule: every variable filled with a plausible value."""
    values = {
        "projectId": "default",
        "featureName": "checkout-v2",
        "environment": "production",
        "id": "1",
        "strategyId": "00000000-0000-4000-8000-000000000000",  # (a UUID: the route takes no other)
    }
    return re.sub(r"<(?:[^:>]+:)?([^>]+)>", lambda m: values.get(m.group(1), "x"), rule)


def test_maintenance_mode__every_write_of_the_admin_api__503_with_retry_after_and_nothing_written(
    make_app, admin_token, alice, db
):
    # Given
    app = make_app(maintenance_mode=True)
    client = app.test_client()
    before = last_event_id(db), db.value("SELECT count(*) FROM features")
    # the SDKs' APIs (/api/client, /api/frontend) are not the admin API: their reports go on
    writes = [
        (op, endpoint)
        for endpoint, op in declared_operations(app)
        if op.method in WRITE_METHODS
        and not getattr(app.view_functions[endpoint], "changes_nothing", False)
        and not op.permission.for_sdks
    ]
    assert len(writes) >= 15  # flags, archive, favorites, addons, group roles, SCIM token
    for op, endpoint in writes:
        # a personal token for the operations about the calling user, else the admin token
        token = alice if "favorite" in endpoint else admin_token
        # When
        response = client.open(_path_of(op.rule), method=op.method, json={}, headers=auth(token))
        # Then
        assert response.status_code == 503, (endpoint, response.get_json())
        body = response.get_json()
        assert body["name"] == "ServiceUnavailableError"
        assert "maintenance mode" in body["message"] and "refuses every change" in body["message"]
        assert int(response.headers["Retry-After"]) > 0
    assert (last_event_id(db), db.value("SELECT count(*) FROM features")) == before


def test_maintenance_mode__reads_and_the_name_check__answered(make_app, admin_token, alice):
    client = make_app(maintenance_mode=True).test_client()
    for path, token in [
        ("/api/admin/ui-config", admin_token),
        (ARCHIVE, admin_token),
        (DASHBOARD, alice),
        (features_path("default"), alice),
        (flag_path("default", "checkout-v2"), alice),
    ]:
        assert client.get(path, headers=auth(token)).status_code == 200, path
    assert client.get("/api/admin/ui-config", headers=auth(admin_token)).get_json()["maintenanceMode"] is True
    # POST /features/validate checks a name and writes nothing
    assert client.post(VALIDATE, json={"name": "free-name"}, headers=auth(alice)).status_code == 200


def test_maintenance_mode__off__writes_go_through(make_app, alice):
    client = make_app(maintenance_mode=False).test_client()
    response = client.post(
        features_path("default"), json={"name": "made-outside-maintenance"}, headers=auth(alice)
    )
    assert response.status_code == 201


def test_maintenance_mode__a_request_without_a_token__still_401(make_app):
    response = (
        make_app(maintenance_mode=True).test_client().post(features_path("default"), json={"name": "x"})
    )
    assert response.status_code == 401


# --- resource limits ----------------------------------------------------------------------------


def _limits(**overrides: int) -> dict[str, int]:
    return {**DEFAULT_RESOURCE_LIMITS, **overrides}


def _assert_past_limit(response, limit: str, value: int) -> None:
    assert response.status_code == 400, response.get_json()
    body = response.get_json()
    assert body["name"] == "BadDataError"
    assert f"the {limit} resource limit is {value}" in body["message"]
    assert "FLAGADMIN_RESOURCE_LIMITS" in body["message"]


def test_feature_flags_limit__create_past_it__400_naming_it_and_nothing_written(make_app, alice, db):
    # Given: as many live flags as the limit allows
    live = db.value("SELECT count(*) FROM features WHERE archived_at IS NULL")
    client = make_app(resource_limits=_limits(featureFlags=live)).test_client()
    before = last_event_id(db)
    # When
    response = client.post(features_path("default"), json={"name": "one-too-many"}, headers=auth(alice))
    # Then
    _assert_past_limit(response, "featureFlags", live)
    assert last_event_id(db) == before
    assert db.value("SELECT count(*) FROM features WHERE name = 'one-too-many'") == 0
    # archived flags are not counted: archiving one makes room
    assert client.delete(flag_path("default", "checkout-v2"), headers=auth(alice)).status_code == 202
    response = client.post(features_path("default"), json={"name": "one-too-many"}, headers=auth(alice))
    assert response.status_code == 201


def test_feature_flags_limit__revive_past_it__400_naming_it_and_the_flag_stays_archived(make_app, alice, db):
    name = db.value(
        "SELECT name FROM features WHERE archived_at IS NOT NULL AND project_id = 'default' LIMIT 1"
    )
    live = db.value("SELECT count(*) FROM features WHERE archived_at IS NULL")
    client = make_app(resource_limits=_limits(featureFlags=live)).test_client()
    response = client.post(revive_path(name), headers=auth(alice))
    _assert_past_limit(response, "featureFlags", live)
    assert db.value("SELECT archived_at FROM features WHERE name = ?", [name]) is not None


@pytest.fixture
def cli(invoke, database):
    """Run a command on the test's (demo) database with ``FLAGADMIN_RESOURCE_LIMITS`` set."""

    def run(limits: dict[str, int], *args: str):
        env = {"FLAGADMIN_RESOURCE_LIMITS": orjson.dumps(limits).decode()}
        return invoke(*args, db=database, env=env)

    return run


def test_projects_limit__project_create_past_it__refused_naming_it(cli, db):
    count = db.value("SELECT count(*) FROM projects")
    before = last_event_id(db)
    result = cli({"projects": count}, "project", "create", "one-more")
    assert result.exit_code == 1
    assert f"the projects resource limit is {count}" in result.output
    assert last_event_id(db) == before and db.value("SELECT count(*) FROM projects") == count
    assert cli({"projects": count + 1}, "project", "create", "one-more").exit_code == 0


def test_environments_limit__environment_add_past_it__refused_naming_it(cli, db):
    count = db.value("SELECT count(*) FROM environments")
    result = cli({"environments": count}, "environment", "add", "one-more")
    assert result.exit_code == 1
    assert f"the environments resource limit is {count}" in result.output
    assert db.value("SELECT count(*) FROM environments") == count


def test_api_tokens_limit__admin_token_past_it__refused_naming_it_personal_tokens_not_counted(cli, db):
    in_use = db.value(
        "SELECT count(*) FROM api_tokens WHERE kind = 'admin' AND revoked_at IS NULL AND expires_at IS NULL"
    )
    result = cli({"apiTokens": in_use}, "create-token", "--admin")
    assert result.exit_code == 1
    assert f"the apiTokens resource limit is {in_use}" in result.output
    # personal access tokens are not counted (spec 8.4)
    assert cli({"apiTokens": in_use}, "create-token", "--user", "alice").exit_code == 0
    assert cli({"apiTokens": in_use + 1}, "create-token", "--admin").exit_code == 0


def test_openapi__the_503_of_every_write__says_maintenance_mode_refuses_it(app, client):
    document = client.get("/docs/openapi.json").get_json()
    for endpoint, op in declared_operations(app):
        path = re.sub(r"<(?:[^:>]+:)?([^>]+)>", r"{\1}", op.rule)
        said = document["paths"][path][op.method.lower()]["responses"]["503"]["description"]
        writes = (
            op.method in WRITE_METHODS
            and not getattr(app.view_functions[endpoint], "changes_nothing", False)
            and not op.permission.for_sdks
        )
        assert ("maintenance mode" in said) == writes, (endpoint, said)
