"""API tokens through the admin API, on the reference server's paths and bodies
(``/api/admin/api-tokens``, ``/api/admin/projects/{projectId}/api-tokens``): what a create
answers (the secret once) and what a list never shows, the reference server's validation and
its words, the events (never the secret nor its digest), the ``apiTokens`` resource limit, the
permissions, schemathesis on these routes, and the upgrade of ``api_tokens`` to schema version
11 on both engines.
"""

from __future__ import annotations

import re
import sqlite3

import orjson
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.config import SchemathesisConfig

from flagadmin.config import DEFAULT_RESOURCE_LIMITS
from flagadmin.store import connect, tokens
from flagadmin.store import schema as store_schema
from flagadmin.timestamps import now_rfc3339

from flag_helpers import assert_reference, events_since, last_event_id
from helpers import auth, examples

TOKENS = "/api/admin/api-tokens"


def project_tokens(project: str) -> str:
    return f"/api/admin/projects/{project}/api-tokens"


def create_body(**fields) -> dict:
    """A createApiTokenSchema body (checked against the reference's schema)."""
    body = {"tokenName": "checkout-service", "type": "backend", "environment": "development", **fields}
    assert_reference(body, "createApiTokenSchema")
    return body


def create(client, token: str, **fields):
    return client.post(TOKENS, json=create_body(**fields), headers=auth(token))


# --- create and list ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "prefix", "type_", "projects", "project"),
    [
        ({}, "*:development.", "backend", ["*"], "*"),
        ({"type": "CLIENT", "project": "mobile"}, "mobile:development.", "client", ["mobile"], "mobile"),
        (
            {"type": "FrontEnd", "projects": ["mobile", "growth"]},
            "[]:development.",
            "frontend",
            ["mobile", "growth"],
            "mobile,growth",
        ),
        ({"projects": ["*"], "environment": "production"}, "*:production.", "backend", ["*"], "*"),
    ],
)
def test_create__201_reference_body_with_the_secret_once(
    client, admin_token, db, fields, prefix, type_, projects, project
):
    # When
    response = create(client, admin_token, **fields)
    # Then
    assert response.status_code == 201, response.get_json()
    body = response.get_json()
    assert_reference(body, "apiTokenSchema")
    assert re.fullmatch(re.escape(prefix) + "[0-9a-f]{56}", body["secret"])
    environment = fields.get("environment", "development")
    assert {k: body[k] for k in ("tokenName", "type", "environment", "projects", "project")} == {
        "tokenName": "checkout-service",
        "type": type_,
        "environment": environment,
        "projects": projects,
        "project": project,
    }
    assert (body["expiresAt"], body["seenAt"], body["alias"], body["secure"]) == (None, None, None, True)
    # ... stored as its digest only
    row = db.one("SELECT * FROM api_tokens WHERE digest = ?", [tokens.digest(body["secret"])])
    assert row["kind"] == ("frontend" if type_ == "frontend" else "client")
    assert body["secret"] not in repr(db.all("SELECT * FROM api_tokens"))


def test_create__expiry__kept_and_shown(client, admin_token):
    response = create(client, admin_token, expiresAt="2031-02-03T04:05:06+01:00")
    assert response.status_code == 201
    assert response.get_json()["expiresAt"] == "2031-02-03T03:05:06.000Z"


def test_list__every_admin_client_and_frontend_token__never_a_secret(client, admin_token, alice):
    # Given: a client and a frontend token besides the admin token (and alice's personal one)
    made = [create(client, admin_token).get_json(), create(client, admin_token, type="frontend").get_json()]
    assert client.get("/api/admin/ui-config", headers=auth(made[0]["secret"])).status_code == 403
    # When
    response = client.get(TOKENS, headers=auth(admin_token))
    # Then
    assert response.status_code == 200
    body = response.get_json()
    assert_reference(body, "apiTokensSchema")
    listed = body["tokens"]
    assert [t["type"] for t in listed] == ["admin", "backend", "frontend"]
    assert listed[0]["environment"] == "*" and listed[0]["projects"] == ["*"]
    text = response.get_data(as_text=True)
    for token in (*(m["secret"] for m in made), admin_token, alice):
        assert token not in text and tokens.digest(token) not in text
    assert all("secret" not in t for t in listed)


def test_list__deleted_token__not_listed(client, admin_token):
    secret = create(client, admin_token).get_json()["secret"]
    assert client.delete(f"{TOKENS}/{secret}", headers=auth(admin_token)).status_code == 200
    assert [t["type"] for t in client.get(TOKENS, headers=auth(admin_token)).get_json()["tokens"]] == [
        "admin"
    ]


# --- validation ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ({"tokenName": "x", "type": "client"}, "Environment=default does not exist"),
        (
            {"tokenName": "x", "type": "client", "environment": "staging"},
            "Environment=staging does not exist",
        ),
        (
            {"tokenName": "x", "type": "client", "environment": "*"},
            "Client token cannot be scoped to all environments",
        ),
        (
            {"tokenName": "x", "type": "frontend", "environment": "*"},
            "Frontend token cannot be scoped to all environments",
        ),
        (
            {"tokenName": "x", "type": "client", "environment": "development", "project": "nope"},
            "Project=nope does not exist",
        ),
        (
            {
                "tokenName": "x",
                "type": "client",
                "environment": "development",
                "projects": ["mobile", "nope"],
            },
            "Project=nope does not exist",
        ),
        (
            {"tokenName": "x", "type": "client", "environment": "development", "projects": []},
            "at least one project",
        ),
        (
            {"tokenName": "x", "type": "client", "environment": "development", "projects": ["*", "mobile"]},
            "stands alone",
        ),
        (
            {
                "tokenName": "x",
                "type": "client",
                "environment": "development",
                "project": "a",
                "projects": ["b"],
            },
            "project or projects, not both",
        ),
        ({"tokenName": "x", "type": "admin", "environment": "development"}, "type: must be client, backend"),
        ({"tokenName": "x", "type": "proxy", "environment": "development"}, "type: must be client, backend"),
        ({"type": "client", "environment": "development"}, "tokenName"),
        ({"tokenName": "", "type": "client", "environment": "development"}, "tokenName"),
        ({"tokenName": "x", "environment": "development"}, "type"),
        (
            {"tokenName": "x", "type": "client", "environment": "development", "expiresAt": "soon"},
            "expiresAt",
        ),
    ],
)
def test_create__refused__400_bad_data_in_the_reference_words_nothing_written(
    client, admin_token, db, body, said
):
    before = (db.value("SELECT count(*) FROM api_tokens"), last_event_id(db))
    response = client.post(TOKENS, json=body, headers=auth(admin_token))
    assert response.status_code == 400
    error = response.get_json()
    assert error["name"] == "BadDataError" and said in error["message"], error
    assert set(error) == {"id", "name", "message", "details"}
    assert (db.value("SELECT count(*) FROM api_tokens"), last_event_id(db)) == before


def test_create__past_the_api_tokens_limit__400_naming_it(make_app, admin_token, db):
    in_use = tokens.count_api_tokens_in_use(db)
    client = make_app(resource_limits={**DEFAULT_RESOURCE_LIMITS, "apiTokens": in_use + 1}).test_client()
    assert create(client, admin_token).status_code == 201
    response = create(client, admin_token)
    assert response.status_code == 400
    assert f"the apiTokens resource limit is {in_use + 1}" in response.get_json()["message"]
    # a deleted token frees its place
    made = client.get(TOKENS, headers=auth(admin_token)).get_json()["tokens"]
    assert [t["type"] for t in made].count("backend") == 1
    db.run("UPDATE api_tokens SET revoked_at = ? WHERE kind = 'client'", [now_rfc3339()])
    assert create(client, admin_token).status_code == 201


def test_limit__counts_admin_client_and_frontend_tokens_in_use__not_personal_ones(db, make_token):
    before = tokens.count_api_tokens_in_use(db)
    make_token(user="alice")
    make_token("admin", expires_at="2000-01-01T00:00:00.000Z")
    assert tokens.count_api_tokens_in_use(db) == before
    make_token("admin")
    assert tokens.count_api_tokens_in_use(db) == before + 1


# --- update and delete -------------------------------------------------------------------------


def test_update__new_expiry__200_listed_and_api_token_updated(client, admin_token, db):
    secret = create(client, admin_token).get_json()["secret"]
    after = last_event_id(db)
    body = {"expiresAt": "2030-01-01T00:00:00Z"}
    assert_reference(body, "updateApiTokenSchema")
    response = client.put(f"{TOKENS}/{secret}", json=body, headers=auth(admin_token))
    assert response.status_code == 200 and response.get_data() == b""
    assert client.get(TOKENS, headers=auth(admin_token)).get_json()["tokens"][-1]["expiresAt"] == (
        "2030-01-01T00:00:00.000Z"
    )
    (event,) = events_since(db, after)
    assert event["type"] == "api-token-updated"
    assert (event["preData"]["expiresAt"], event["data"]["expiresAt"]) == (None, "2030-01-01T00:00:00.000Z")
    assert secret not in orjson.dumps(event).decode()


@pytest.mark.parametrize("expires_at", ["0001-01-01T00:00:00+01:01", "9999-12-31T23:30:00-01:00"])
def test_create_and_update__expiry_outside_years_1_to_9999_in_utc__400_naming_it(
    client, admin_token, db, expires_at
):
    secret = create(client, admin_token).get_json()["secret"]
    before = (last_event_id(db), db.all("SELECT * FROM api_tokens"))
    for response in (
        client.put(f"{TOKENS}/{secret}", json={"expiresAt": expires_at}, headers=auth(admin_token)),
        client.post(
            TOKENS,
            json={
                "tokenName": "late",
                "type": "client",
                "environment": "production",
                "expiresAt": expires_at,
            },
            headers=auth(admin_token),
        ),
    ):
        assert response.status_code == 400, response.get_json()
        assert "expiresAt" in response.get_json()["message"]
    assert (last_event_id(db), db.all("SELECT * FROM api_tokens")) == before


@pytest.mark.parametrize("method", ["PUT", "DELETE"])
def test_update_and_delete__unknown_token__200_nothing_changed(client, admin_token, alice, db, method):
    """As the reference server: a secret that names no token is answered 200 and changes
    nothing; a personal access token is not an API token."""
    before = (last_event_id(db), db.all("SELECT * FROM api_tokens"))
    for secret in ("*:development." + "0" * 56, "nothing-like-a-token", alice):
        response = client.open(
            f"{TOKENS}/{secret}",
            method=method,
            json={"expiresAt": "2030-01-01T00:00:00Z"},
            headers=auth(admin_token),
        )
        assert response.status_code == 200
    assert (last_event_id(db), db.all("SELECT * FROM api_tokens")) == before


def test_delete__api_token_deleted_with_pre_data_without_secret_or_digest(client, admin_token, db):
    secret = create(client, admin_token, project="mobile").get_json()["secret"]
    after = last_event_id(db)
    assert client.delete(f"{TOKENS}/{secret}", headers=auth(admin_token)).status_code == 200
    assert client.delete(f"{TOKENS}/{secret}", headers=auth(admin_token)).status_code == 200  # once only
    (event,) = events_since(db, after)
    assert event["type"] == "api-token-deleted" and event["data"] is None
    assert event["preData"]["tokenName"] == "checkout-service" and event["preData"]["projects"] == ["mobile"]
    assert event["environment"] == "development"
    text = orjson.dumps(event).decode()
    assert secret not in text and tokens.digest(secret) not in text


def test_create__api_token_created_by_the_caller_without_secret_or_digest(client, admin_token, alice, db):
    after = last_event_id(db)
    secret = create(client, admin_token, projects=["mobile"]).get_json()["secret"]
    (event,) = events_since(db, after)
    assert event["type"] == "api-token-created"
    assert (event["createdBy"], event["project"], event["environment"]) == ("admin", "mobile", "development")
    assert {k: event["data"][k] for k in ("tokenName", "type", "environment", "projects", "kind")} == {
        "tokenName": "checkout-service",
        "type": "backend",
        "environment": "development",
        "projects": ["mobile"],
        "kind": "client",
    }
    text = orjson.dumps(event).decode()
    assert secret not in text and tokens.digest(secret) not in text


# --- permissions -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", TOKENS), ("POST", TOKENS), ("PUT", f"{TOKENS}/x"), ("DELETE", f"{TOKENS}/x")],
)
def test_api_tokens__editor__403_naming_admin(client, alice, method, path):
    response = client.open(path, method=method, json=create_body(), headers=auth(alice))
    assert response.status_code == 403
    assert '"ADMIN" permission' in response.get_json()["message"]


def test_api_tokens__admin_users_personal_token__allowed(client, admin_user):
    assert create(client, admin_user).status_code == 201
    assert client.get(TOKENS, headers=auth(admin_user)).status_code == 200


# --- a project's tokens ------------------------------------------------------------------------


def test_project_tokens__create_list_delete(client, alice, db):
    # Given / When: alice (an Editor) creates a token of project mobile
    body = {"tokenName": "ios", "type": "Frontend", "environment": "production"}
    assert_reference(body, "createProjectApiTokenSchema")
    response = client.post(project_tokens("mobile"), json=body, headers=auth(alice))
    # Then
    assert response.status_code == 201, response.get_json()
    made = response.get_json()
    assert_reference(made, "apiTokenSchema")
    assert made["secret"].startswith("mobile:production.")
    assert (made["type"], made["projects"], made["project"]) == ("frontend", ["mobile"], "mobile")
    # the project lists it (without its secret); another project does not, nor tokens of every project
    listed = client.get(project_tokens("mobile"), headers=auth(alice)).get_json()
    assert_reference(listed, "apiTokensSchema")
    assert [t["tokenName"] for t in listed["tokens"]] == ["ios"] and "secret" not in listed["tokens"][0]
    assert client.get(project_tokens("default"), headers=auth(alice)).get_json() == {"tokens": []}
    # another project cannot delete it
    response = client.delete(f"{project_tokens('default')}/{made['secret']}", headers=auth(alice))
    assert response.status_code == 400 and "other projects" in response.get_json()["message"]
    # its project can, once
    assert (
        client.delete(f"{project_tokens('mobile')}/{made['secret']}", headers=auth(alice)).status_code == 200
    )
    assert client.get(project_tokens("mobile"), headers=auth(alice)).get_json() == {"tokens": []}
    assert client.get("/api/admin/ui-config", headers=auth(made["secret"])).status_code == 401


def test_project_tokens__token_of_several_projects__listed_by_each_deleted_by_none(client, admin_token):
    secret = create(client, admin_token, projects=["mobile", "growth"]).get_json()["secret"]
    for project in ("mobile", "growth"):
        assert len(client.get(project_tokens(project), headers=auth(admin_token)).get_json()["tokens"]) == 1
        assert (
            client.delete(f"{project_tokens(project)}/{secret}", headers=auth(admin_token)).status_code == 400
        )


def test_project_tokens__unknown_project__404(client, admin_token):
    body = {"tokenName": "x", "type": "client", "environment": "development"}
    assert client.get(project_tokens("nope"), headers=auth(admin_token)).status_code == 404
    assert client.post(project_tokens("nope"), json=body, headers=auth(admin_token)).status_code == 404


def test_project_tokens__unknown_environment__400(client, admin_token):
    body = {"tokenName": "x", "type": "client", "environment": "staging"}
    response = client.post(project_tokens("mobile"), json=body, headers=auth(admin_token))
    assert (
        response.status_code == 400 and response.get_json()["message"] == "Environment=staging does not exist"
    )


@pytest.mark.parametrize(
    ("method", "suffix", "permission"),
    [
        ("GET", "", "READ_PROJECT_API_TOKEN"),
        ("POST", "", "CREATE_PROJECT_API_TOKEN"),
        ("DELETE", "/x", "DELETE_PROJECT_API_TOKEN"),
    ],
)
def test_project_tokens__no_role_in_the_project__403_naming_the_permission(
    client, victor, method, suffix, permission
):
    """victor (Viewer) has a role in mobile only."""
    body = {"tokenName": "x", "type": "client", "environment": "development"}
    response = client.open(
        project_tokens("payments") + suffix, method=method, json=body, headers=auth(victor)
    )
    assert response.status_code == 403
    assert permission in response.get_json()["message"]


# --- schemathesis on these routes ---------------------------------------------------------------

#: The routes of this file.
ROUTES = r"^/api/admin/(api-tokens|projects/[^/]+/api-tokens)"

#: As for the flag routes (tests/test_features_schemathesis.py), a 400 counts as an answer to
#: data that fits the schema: an environment or a project can fit it and not exist, and the
#: reference server answers 400 BadDataError then.
CONFIG = {
    "generation": {"allow-x00": False},
    "checks": {"positive_data_acceptance": {"expected-statuses": ["2xx", "400", "401", "403", "404", "429"]}},
    "parameters": {"path.projectId": "mobile"},
}


@pytest.fixture
def tokens_api_schema(make_app, admin_token):
    config = {**CONFIG, "auth": {"openapi": {"apiKey": {"api_key": admin_token}}}}
    app = make_app(auth_failure_limit="100000/minute")
    loaded = schemathesis.openapi.from_wsgi(
        "/docs/openapi.json", app, config=SchemathesisConfig.from_dict(config)
    )
    return loaded.include(path_regex=ROUTES)


schema = schemathesis.pytest.from_fixture("tokens_api_schema").include(path_regex=ROUTES)


@schema.parametrize()
@settings(max_examples=examples(25), deadline=None, suppress_health_check=list(HealthCheck))
def test_api_token_routes__schemathesis_finds_nothing(case):
    case.call_and_validate(headers={"Accept-Encoding": "identity"})


# --- the upgrade to schema version 11 ----------------------------------------------------------

#: api_tokens as schema version 10 made it (SQLite).
API_TOKENS_10 = (
    "CREATE TABLE api_tokens_v10 (id INTEGER PRIMARY KEY,"
    " digest TEXT NOT NULL UNIQUE CHECK (length(digest) = 64),"
    " kind TEXT NOT NULL CHECK (kind IN ('admin', 'personal')), user_id INTEGER REFERENCES users (id),"
    " name TEXT NOT NULL, created_at TEXT NOT NULL, last_used_at TEXT, expires_at TEXT, revoked_at TEXT,"
    " CHECK ((kind = 'admin') = (user_id IS NULL)))"
)
COLUMNS_10 = "id, digest, kind, user_id, name, created_at, last_used_at, expires_at, revoked_at"


def _as_in_version_10(database: str, engine: str) -> None:
    """Take api_tokens back to version 10's (no client or frontend kind, no scope) and mark the
    database as version 10."""
    if engine == "postgresql":
        with connect(database) as conn, conn.write():
            conn.run(
                "ALTER TABLE api_tokens DROP CONSTRAINT api_tokens_kind_check,"
                " DROP CONSTRAINT api_tokens_user_of_personal, DROP CONSTRAINT api_tokens_type_of_kind,"
                " DROP CONSTRAINT api_tokens_environment_of_kind,"
                " DROP CONSTRAINT api_tokens_projects_of_kind,"
                " DROP COLUMN type CASCADE, DROP COLUMN environment CASCADE, DROP COLUMN projects CASCADE"
            )
            conn.run(
                "ALTER TABLE api_tokens"
                " ADD CONSTRAINT api_tokens_kind_check CHECK (kind IN ('admin', 'personal')),"
                " ADD CHECK ((kind = 'admin') = (user_id IS NULL))"
            )
            conn.run("UPDATE settings SET value = '10' WHERE key = 'schema_version'")
        return
    raw = sqlite3.connect(database, isolation_level=None)
    raw.executescript(
        "PRAGMA foreign_keys = OFF; BEGIN;"
        + API_TOKENS_10
        + f"; INSERT INTO api_tokens_v10 SELECT {COLUMNS_10} FROM api_tokens; DROP TABLE api_tokens;"
        "PRAGMA legacy_alter_table = ON; ALTER TABLE api_tokens_v10 RENAME TO api_tokens;"
        "PRAGMA legacy_alter_table = OFF;"
        "CREATE TRIGGER api_tokens_update_credentials_version"
        " AFTER UPDATE OF digest, kind, user_id, expires_at, revoked_at ON api_tokens"
        " BEGIN UPDATE settings SET value = value + 1 WHERE key = 'credentials_version'; END;"
        "CREATE TRIGGER api_tokens_delete_credentials_version AFTER DELETE ON api_tokens"
        " BEGIN UPDATE settings SET value = value + 1 WHERE key = 'credentials_version'; END;"
        "COMMIT; PRAGMA user_version = 10;"
    )
    raw.close()


def test_upgrade_from_10__tokens_kept__new_kinds_taken__revocation_moves_credentials(
    database, engine, make_token, client, tmp_path
):
    # Given: a version-10 database with an admin token and a personal one
    admin = make_token("admin")
    alice = make_token(user="alice")
    _as_in_version_10(database, engine)
    with connect(database) as conn:
        rows_before = conn.all(f"SELECT {COLUMNS_10} FROM api_tokens ORDER BY id")
        with pytest.raises(Exception), conn.write():  # noqa: B017 (either engine's integrity error)
            conn.run(
                "INSERT INTO api_tokens (digest, kind, name, created_at) VALUES (?, 'client', 'x', 'now')",
                ["c" * 64],
            )
    # When
    assert store_schema.ensure_schema(database) == 10
    # Then: every row kept, the admin token's type is admin, the personal one's none
    with connect(database) as conn:
        assert conn.all(f"SELECT {COLUMNS_10} FROM api_tokens ORDER BY id") == rows_before
        assert conn.value("SELECT type FROM api_tokens WHERE digest = ?", [tokens.digest(admin)]) == "admin"
        assert conn.value("SELECT type FROM api_tokens WHERE digest = ?", [tokens.digest(alice)]) is None
    # ... both still work, an SDK token can be made, and a revocation still reaches a running app
    response = create(client, admin)
    assert response.status_code == 201, response.get_json()
    assert client.get("/api/admin/ui-config", headers=auth(alice)).status_code == 200
    with connect(database) as conn, conn.write():
        conn.run(
            "UPDATE api_tokens SET revoked_at = ? WHERE digest = ?", [now_rfc3339(), tokens.digest(alice)]
        )
    assert client.get("/api/admin/ui-config", headers=auth(alice)).status_code == 401
    # ... and the rules hold: a client token needs its environment, a personal one its user
    with connect(database) as conn:
        for values in (
            ("client", None, None, "client"),
            ("personal", None, None, None),
            ("admin", 1, None, "admin"),
        ):
            kind, user_id, environment, type_ = values
            with pytest.raises(Exception), conn.write():  # noqa: B017
                conn.run(
                    "INSERT INTO api_tokens (digest, kind, user_id, name, created_at, type, environment)"
                    " VALUES (?, ?, ?, 'x', 'now', ?, ?)",
                    ["d" * 64, kind, user_id, type_, environment],
                )
    if engine == "postgresql":
        return
    fresh_path = tmp_path / "new.db"
    store_schema.ensure_schema(fresh_path)
    upgraded, fresh = sqlite3.connect(database), sqlite3.connect(fresh_path)
    try:
        assert upgraded.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        info = "SELECT name, type, \"notnull\", pk FROM pragma_table_info('api_tokens') ORDER BY cid"
        assert upgraded.execute(info).fetchall() == fresh.execute(info).fetchall()
        triggers = "SELECT name, sql FROM sqlite_master WHERE tbl_name = 'api_tokens' AND type = 'trigger'"
        assert sorted(upgraded.execute(triggers).fetchall()) == sorted(fresh.execute(triggers).fetchall())
    finally:
        upgraded.close()
        fresh.close()
