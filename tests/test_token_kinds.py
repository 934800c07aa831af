"""Which API takes which token, as the reference server decides it: a client token only the
Client API (``/api/client``), a frontend token only the Frontend API (``/api/frontend``), an
admin or personal token only the admin API; 403 ``invalid token: expected a different token
type for this endpoint`` for a valid token of another kind, 401 with the reference server's
message on the SDKs' APIs. Also: the SDK token formats, the ``Authorization`` header holding
the raw secret, a deletion or a new expiry taking effect on the very next request, and
``flagadmin create-token`` making each kind.

The table's twelve cells are checked on operations declared here with the permissions the
Client and Frontend APIs declare (``Permission.CLIENT``, ``Permission.FRONTEND``), so that they
hold whatever those APIs answer; a second test checks that every operation the app declares
under ``/api/client`` and ``/api/frontend`` declares exactly those permissions.
"""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from flask import Blueprint

from flagadmin.events import COMMAND_LINE
from flagadmin.store import connect, tokens
from flagadmin.timestamps import now_rfc3339
from flagadmin.tokens import changes
from flagadmin.web.auth import Permission
from flagadmin.web.operations import declared_operations, operation

from flag_helpers import recorded
from helpers import auth

UI = "/api/admin/ui-config"

#: Operations on the SDKs' paths, declared as the Client and Frontend APIs declare theirs.
probes = Blueprint("token_kind_probes", __name__)


@operation(
    probes, "/api/client/probe", section="test", summary="probe", response=None, permission=Permission.CLIENT
)
def _client_probe(caller, conn):
    """Answers 200 to a client token."""


@operation(
    probes,
    "/api/frontend/probe",
    section="test",
    summary="probe",
    response=None,
    permission=Permission.FRONTEND,
)
def _frontend_probe(caller, conn):
    """Answers 200 to a frontend token."""


@operation(
    probes,
    "/api/client/probe",
    method="POST",
    section="test",
    summary="probe",
    response=None,
    permission=Permission.CLIENT,
)
def _client_write_probe(caller, conn):
    """A write of the Client API (as metrics and registrations are)."""


#: The three APIs of the table: a path of each.
PATHS = {"client": "/api/client/probe", "frontend": "/api/frontend/probe", "admin": UI}

WRONG_TYPE = "invalid token: expected a different token type for this endpoint"
SDK_401 = (
    "This endpoint requires an API token. "
    "Please add an authorization header to your request with a valid token"
)


@pytest.fixture
def probe_app(make_app):
    def make(**settings):
        app = make_app(**settings)
        app.register_blueprint(probes)
        return app

    return make


@pytest.fixture
def sdk_tokens(db) -> dict[str, str]:
    """A client token, a backend one (the same kind by its newer name) and a frontend token,
    for development and every project."""
    made = {}
    for type_ in ("client", "backend", "frontend"):
        made[type_], _ = changes.create_api_token(
            db, COMMAND_LINE, type=type_, name=f"{type_} probe", environment="development"
        )
    return made


#: The table of the reference server (row: the token; column: the API; cell: the status).
TABLE = {
    "client": {"client": 200, "frontend": 403, "admin": 403},
    "backend": {"client": 200, "frontend": 403, "admin": 403},
    "frontend": {"client": 403, "frontend": 200, "admin": 403},
    "admin": {"client": 403, "frontend": 403, "admin": 200},
    "personal": {"client": 403, "frontend": 403, "admin": 200},
    "none": {"client": 401, "frontend": 401, "admin": 401},
    "unknown": {"client": 401, "frontend": 401, "admin": 401},
}


@pytest.mark.parametrize("api", ["client", "frontend", "admin"])
@pytest.mark.parametrize("token_kind", list(TABLE))
def test_which_api_takes_which_token__each_cell__status_and_reference_body(
    probe_app, sdk_tokens, admin_token, alice, token_kind, api
):
    # Given
    client = probe_app().test_client()
    secret = {
        **sdk_tokens,
        "admin": admin_token,
        "personal": alice,
        "none": None,
        "unknown": "*:development." + "0" * 56,
    }[token_kind]
    headers = {} if secret is None else auth(secret)
    # When
    response = client.get(PATHS[api], headers=headers)
    # Then
    expected = TABLE[token_kind][api]
    assert response.status_code == expected, response.get_json()
    if expected == 200:
        return
    body = response.get_json()
    assert set(body) == {"id", "name", "message"}
    if expected == 403:
        assert (body["name"], body["message"]) == ("NoAccessError", WRONG_TYPE)
    elif api == "admin":  # flagadmin's own words on the admin API (spec 5.2)
        assert body["name"] == "AuthenticationRequired" and "flagadmin create-token" in body["message"]
    else:
        assert (body["name"], body["message"]) == ("AuthenticationRequired", SDK_401)


def test_which_api_takes_which_token__declared_operations__client_and_frontend_paths_take_their_kind(app):
    """Every operation of the app follows the table: under /api/client only client tokens,
    under /api/frontend only frontend tokens, under /api/admin only admin and personal ones."""
    for endpoint, op in declared_operations(app):
        if op.rule.startswith("/api/client"):
            assert op.permission.token_kinds == ("client",), endpoint
        elif op.rule.startswith("/api/frontend"):
            assert op.permission.token_kinds == ("frontend",), endpoint
        elif op.rule.startswith("/api/admin"):
            assert op.permission.token_kinds == ("admin", "personal"), endpoint


def test_sdk_api__raw_secret_or_bearer__both_accepted(probe_app, sdk_tokens):
    client = probe_app().test_client()
    secret = sdk_tokens["client"]
    assert client.get(PATHS["client"], headers={"Authorization": secret}).status_code == 200
    assert client.get(PATHS["client"], headers={"Authorization": f"Bearer {secret}"}).status_code == 200


@pytest.mark.parametrize("header", [None, "", "Bearer", "a b", "x" * 1000])
def test_sdk_api__malformed_header__401_with_the_reference_message(probe_app, header):
    client = probe_app().test_client()
    response = client.get(PATHS["frontend"], headers={} if header is None else {"Authorization": header})
    assert response.status_code == 401
    assert response.get_json()["message"] == SDK_401


def test_sdk_api__maintenance_mode__sdk_writes_answered_admin_writes_refused(
    probe_app, sdk_tokens, admin_token
):
    """Maintenance mode refuses the admin API's writes; the SDKs' reports are not edits."""
    client = probe_app(maintenance_mode=True).test_client()
    assert client.post(PATHS["client"], headers=auth(sdk_tokens["client"])).status_code == 200
    body = {"tokenName": "x", "type": "client", "environment": "development"}
    assert client.post("/api/admin/api-tokens", json=body, headers=auth(admin_token)).status_code == 503


def test_sdk_api__maintenance_mode__a_real_registration_answered(make_app, sdk_tokens):
    """The Client API's registration, a write of an SDK, is answered in maintenance mode."""
    client = make_app(maintenance_mode=True).test_client()
    body = {
        "appName": "my-app",
        "instanceId": "i-1",
        "sdkVersion": "unleash-client-python:6.0.0",
        "strategies": ["default"],
        "started": "2026-11-28T00:00:00Z",
        "interval": 15000,
    }
    response = client.post("/api/client/register", json=body, headers=auth(sdk_tokens["client"]))
    assert response.status_code == 202


# --- formats -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("projects", "prefix"),
    [
        (None, "*:development."),
        (["*"], "*:development."),
        (["mobile"], "mobile:development."),
        (["mobile", "default"], "[]:development."),
    ],
)
def test_sdk_token__formats__the_reference_servers(db, projects, prefix):
    secret, token = changes.create_api_token(
        db, COMMAND_LINE, type="frontend", name="f", environment="development", projects=projects
    )
    assert re.fullmatch(re.escape(prefix) + "[0-9a-f]{56}", secret)
    assert token["secret"] == secret
    caller = tokens.find_caller(db, secret, now_rfc3339())
    assert (caller.kind, caller.environment, caller.user_id) == ("frontend", "development", None)
    assert caller.projects == (None if projects in (None, ["*"]) else tuple(projects))


def test_sdk_token__stored_only_as_its_digest(db, sdk_tokens):
    stored = "\n".join(repr(tuple(row.values())) for row in db.all("SELECT * FROM api_tokens"))
    for secret in sdk_tokens.values():
        assert secret not in stored and secret.split(".")[1] not in stored
        assert tokens.digest(secret) in stored


def test_caller__reads_project__its_projects_or_all(db):
    one, _ = changes.create_api_token(
        db, COMMAND_LINE, type="client", name="c", environment="production", projects=["mobile"]
    )
    every, _ = changes.create_api_token(db, COMMAND_LINE, type="client", name="c", environment="production")
    now = now_rfc3339()
    assert tokens.find_caller(db, one, now).reads_project("mobile")
    assert not tokens.find_caller(db, one, now).reads_project("default")
    assert tokens.find_caller(db, every, now).reads_project("default")


# --- revocation and expiry take effect at once -----------------------------------------------


def test_sdk_token__deleted_through_the_api__401_on_the_very_next_request(probe_app, sdk_tokens, admin_token):
    # Given: a client token the app has found valid (and remembers)
    client = probe_app().test_client()
    secret = sdk_tokens["client"]
    assert client.get(PATHS["client"], headers=auth(secret)).status_code == 200
    # When
    assert client.delete(f"/api/admin/api-tokens/{secret}", headers=auth(admin_token)).status_code == 200
    # Then
    response = client.get(PATHS["client"], headers=auth(secret))
    assert response.status_code == 401 and response.get_json()["message"] == SDK_401


def test_sdk_token__deleted_by_another_process__401_on_the_very_next_request(probe_app, sdk_tokens, database):
    client = probe_app().test_client()
    secret = sdk_tokens["frontend"]
    assert client.get(PATHS["frontend"], headers=auth(secret)).status_code == 200
    with connect(database) as other:
        changes.delete_api_token(other, COMMAND_LINE, secret)
    assert client.get(PATHS["frontend"], headers=auth(secret)).status_code == 401


def test_sdk_token__expiry_moved_into_the_past__401_then_back__200(probe_app, sdk_tokens, admin_token):
    client = probe_app().test_client()
    secret = sdk_tokens["backend"]
    assert client.get(PATHS["client"], headers=auth(secret)).status_code == 200
    past = now_rfc3339(-timedelta(minutes=1))
    put = client.put(f"/api/admin/api-tokens/{secret}", json={"expiresAt": past}, headers=auth(admin_token))
    assert put.status_code == 200
    assert client.get(PATHS["client"], headers=auth(secret)).status_code == 401
    future = "2999-01-01T00:00:00Z"
    client.put(f"/api/admin/api-tokens/{secret}", json={"expiresAt": future}, headers=auth(admin_token))
    assert client.get(PATHS["client"], headers=auth(secret)).status_code == 200


# --- flagadmin create-token --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "prefix", "kind", "projects"),
    [
        (("--client", "development"), "*:development.", "client", None),
        (("--client", "production", "--project", "mobile"), "mobile:production.", "client", ["mobile"]),
        (
            ("--frontend", "development", "--project", "mobile", "--project", "default"),
            "[]:development.",
            "frontend",
            ["mobile", "default"],
        ),
    ],
)
def test_create_token__client_and_frontend__printed_once_stored_as_digest_event_recorded(
    invoke, database, args, prefix, kind, projects
):
    # When
    result = invoke("create-token", *args, "--name", "svc", db=database)
    # Then
    assert result.exit_code == 0, result.output
    secret = result.stdout.strip()
    assert re.fullmatch(re.escape(prefix) + "[0-9a-f]{56}", secret)
    with connect(database) as conn:
        caller = tokens.find_caller(conn, secret, now_rfc3339())
        assert caller.kind == kind and caller.projects == (None if projects is None else tuple(projects))
        event = recorded(conn, "api-token-created", limit=1)[0]
    assert event["createdBy"] == "flagadmin-cli"
    assert event["data"]["tokenName"] == "svc" and event["data"]["type"] == kind
    assert event["data"]["projects"] == (projects or ["*"])
    assert secret not in str(event) and tokens.digest(secret) not in str(event)
    # ... and list-tokens shows what it reads, never the secret
    listed = invoke("list-tokens", db=database).output
    assert prefix[:-1] in listed and secret not in listed


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--client", "staging"), "Environment=staging does not exist"),
        (("--client", "*"), "Client token cannot be scoped to all environments"),
        (("--frontend", "development", "--project", "nope"), "Project=nope does not exist"),
    ],
)
def test_create_token__unknown_environment_or_project__refused_nothing_written(invoke, database, args, said):
    with connect(database) as conn:
        before = conn.value("SELECT count(*) FROM api_tokens")
    result = invoke("create-token", *args, db=database)
    assert result.exit_code == 1
    assert said in result.output and "Nothing was written" in result.output
    with connect(database) as conn:
        assert conn.value("SELECT count(*) FROM api_tokens") == before


@pytest.mark.parametrize(
    "args",
    [
        ("--admin", "--client", "development"),
        ("--client", "development", "--frontend", "development"),
        ("--user", "alice", "--frontend", "development"),
        ("--admin", "--project", "mobile"),
        (),
    ],
)
def test_create_token__not_exactly_one_kind_or_project_without_one__usage_error(invoke, database, args):
    result = invoke("create-token", *args, db=database)
    assert result.exit_code == 2
    assert "--client ENVIRONMENT" in result.output or "--project goes with" in result.output


def test_create_token__past_the_api_tokens_limit__refused_naming_it(invoke, database):
    with connect(database) as conn:
        in_use = tokens.count_api_tokens_in_use(conn)
    env = {"FLAGADMIN_RESOURCE_LIMITS": f'{{"apiTokens": {in_use}}}'}
    result = invoke("create-token", "--client", "development", db=database, env=env)
    assert result.exit_code == 1
    assert f"the apiTokens resource limit is {in_use}" in result.output
