"""Credentials (spec 5, 7): tokens never logged, token management on the command line,
throttled authentication failures, and the headers of every admin API response."""

from __future__ import annotations

import http.client
import json
import re
import time
from datetime import UTC, datetime, timedelta

import limits
import pytest

from flagadmin.app import create_app
from flagadmin.config import (
    DEFAULT_AUTH_FAILURE_LIMIT,
    ENVIRONMENT_VARIABLES,
    Settings,
    SettingsError,
    settings_from_env,
)
from flagadmin.store import tokens

from helpers import auth

UI = "/api/admin/ui-config"
EVENTS = "/api/admin/addons/1/events"
DASHBOARD = "/api/admin/personal-dashboard"
ARCHIVE = "/api/admin/archive/features"
GENERATE = "/api/admin/scim-settings/generate-new-token"
SCIM = "/scim/v2/ServiceProviderConfig"


def make_app(db_path, **settings):
    """An app on ``db_path`` with these :class:`Settings` fields."""
    return create_app(
        {
            "DATABASE": str(db_path),
            "SETTINGS": Settings(git_revision="abc123", **settings),
            "TESTING": True,
        }
    )


def columns(line: str) -> list[str]:
    """The cells of a line of ``list-tokens`` output (columns are two or more spaces apart)."""
    return re.split(r" {2,}", line.strip())


def call(server, method: str, path: str, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        conn.request(method, path, headers=headers or {})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


# --- no token is ever written to a log ----------------------------------------------------


def test_access_log__every_operation_and_failure__holds_no_token(live_server, db, make_token, admin_token):
    # Given: a real server with access logging; tokens valid, revoked, expired and made up
    alice = make_token(user="alice")
    revoked = make_token(user="bob")
    tokens.revoke(db, tokens.find_caller(db, revoked)["token_id"])
    expired = make_token("admin", expires_at="2020-01-01T00:00:00.000Z")
    wrong_admin, wrong_personal = tokens.new_admin_token(), tokens.new_personal_token()
    wrong_scim = "scim_" + "A" * 43
    server = live_server(args=("--access-log",), env={"FLAGADMIN_AUTH_FAILURE_LIMIT": "20/minute"})
    # When: every operation runs, with good tokens and with bad ones
    statuses = [
        call(server, "GET", EVENTS + "?limit=5", auth(admin_token))[0],
        call(server, "GET", DASHBOARD, auth(f"Bearer {alice}"))[0],
        call(server, "GET", UI, auth(admin_token))[0],
        call(server, "GET", ARCHIVE, auth(alice))[0],
    ]
    status, body = call(server, "POST", GENERATE, auth(admin_token))
    scim = json.loads(body)["token"]
    statuses += [
        status,
        call(server, "GET", SCIM, auth(f"Bearer {scim}"))[0],
        call(server, "GET", EVENTS, auth(alice))[0],  # 403: alice is no Admin
    ]
    for bad in (wrong_admin, wrong_personal, revoked, expired, "garbage"):
        for path in (EVENTS, DASHBOARD, UI, ARCHIVE):
            statuses.append(call(server, "GET", path, auth(bad))[0])
        statuses.append(call(server, "POST", GENERATE, auth(f"Bearer {bad}"))[0])
    for bad in (wrong_scim, admin_token, alice):
        statuses.append(call(server, "GET", SCIM, auth(f"Bearer {bad}"))[0])
    # ... and tokens where they do not belong: the query string and the path
    statuses.append(call(server, "GET", f"{UI}?token={alice}&key={scim}")[0])
    statuses.append(call(server, "GET", f"/api/admin/addons/{admin_token}/events")[0])
    server.stop()
    # Then: the answers are what they should be (past 20 failures: 429)
    assert statuses[:6] == [200] * 6
    assert statuses[6] == 403
    assert statuses[7:27] == [401] * 20
    assert {401, 429} == set(statuses[27:])
    # ... the log holds one access line per request (so it would show a token if one leaked)
    log = server.log.read_text()
    access_lines = [line for line in log.splitlines() if " flagadmin.access: " in line]
    assert len(access_lines) == len(statuses)
    assert sum('"GET /api/admin/addons/*:*.[redacted]/events"' in line for line in access_lines) == 1
    # ... and no token, nor the secret part of one, nor a digest, appears anywhere in it
    used = [admin_token, alice, revoked, expired, wrong_admin, wrong_personal, wrong_scim, scim]
    for token in used:
        secret = token.split(":")[-1].split(".")[-1].removeprefix("scim_")
        assert token not in log and secret not in log
        assert tokens.digest(token) not in log


# --- list-tokens, revoke-token, create-token --expires-in ---------------------------------


def test_list_tokens__tokens_of_each_kind__every_column_and_no_secret(invoke, db_path, client):
    # Given: an admin token and an expiring personal token, the latter used once
    admin = invoke("create-token", "--admin", "--name", "ci robot", db=str(db_path)).stdout.strip()
    alice = invoke("create-token", "--user", "alice", "--expires-in", "P30D", db=str(db_path)).stdout.strip()
    assert client.get(UI, headers=auth(alice)).status_code == 200
    # When
    result = invoke("list-tokens", db=str(db_path))
    # Then: a header and one row per token, with every column
    assert result.exit_code == 0
    header, *rows = (columns(line) for line in result.output.splitlines())
    assert header == ["ID", "STATUS", "KIND", "USER", "NAME", "CREATED", "LAST USED", "EXPIRES", "REVOKED"]
    assert len(rows) == 2
    assert rows[0][:5] == ["1", "active", "admin", "-", "ci robot"]
    assert rows[0][6:] == ["-", "-", "-"]  # never used, never expires, not revoked
    assert rows[1][:5] == ["2", "active", "personal", "alice", "alice token"]
    assert rows[1][6] != "-" and rows[1][8] == "-"  # used, not revoked
    expires = datetime.fromisoformat(rows[1][7])
    assert abs(expires - (datetime.now(UTC) + timedelta(days=30))) < timedelta(minutes=1)
    for row in rows:
        assert abs(datetime.fromisoformat(row[5]) - datetime.now(UTC)) < timedelta(minutes=1)
    # ... and never a token or a digest
    for token in (admin, alice):
        assert token not in result.output and tokens.digest(token) not in result.output


def test_list_tokens__none__says_how_to_create_one(invoke):
    result = invoke("list-tokens")
    assert result.exit_code == 0
    assert "flagadmin create-token" in result.output


def test_revoke_token__by_id__401_at_once_and_listed_as_revoked(invoke, db_path, client):
    # Given: a personal token that works
    token = invoke("create-token", "--user", "alice", db=str(db_path)).stdout.strip()
    assert client.get(UI, headers=auth(token)).status_code == 200
    # When
    result = invoke("revoke-token", "1", db=str(db_path))
    # Then: the same running app refuses it on the next request
    assert result.exit_code == 0 and "Token 1 revoked at" in result.output
    response = client.get(UI, headers=auth(token))
    assert response.status_code == 401
    assert response.get_json()["name"] == "AuthenticationRequired"
    assert columns(invoke("list-tokens", db=str(db_path)).output.splitlines()[1])[1] == "revoked"


def test_revoke_token__twice__harmless_and_said(invoke, db_path):
    invoke("create-token", "--admin", db=str(db_path))
    first = invoke("revoke-token", "1", db=str(db_path))
    second = invoke("revoke-token", "1", db=str(db_path))
    assert first.exit_code == 0 and second.exit_code == 0
    assert "was already revoked" in second.output


def test_revoke_token__unknown_id__refused_nothing_changed(invoke, db_path, db, admin_token):
    # Given: one token
    before = db.execute("SELECT * FROM api_tokens").fetchall()
    # When
    result = invoke("revoke-token", "999", db=str(db_path))
    # Then
    assert result.exit_code != 0
    assert "No API token has id 999" in result.output and "list-tokens" in result.output
    assert db.execute("SELECT * FROM api_tokens").fetchall() == before


def test_create_token__expires_in__works_until_then_401_at_once(invoke, db_path, client):
    # Given: a token that expires two seconds from now
    result = invoke("create-token", "--admin", "--expires-in", "PT2S", db=str(db_path))
    token = result.stdout.strip()
    assert "expires at" in result.stderr
    # When / Then: it works now, and is refused once the moment has passed
    assert client.get(UI, headers=auth(token)).status_code == 200
    time.sleep(2.1)
    assert client.get(UI, headers=auth(token)).status_code == 401
    assert columns(invoke("list-tokens", db=str(db_path)).output.splitlines()[1])[1] == "expired"


@pytest.mark.parametrize(
    ("duration", "hint"),
    [("30d", "ISO 8601"), ("banana", "ISO 8601"), ("P0D", "longer than zero"), ("-P1D", "longer than zero")],
)
def test_create_token__bad_expires_in__refused_nothing_stored(invoke, db_path, db, duration, hint):
    result = invoke("create-token", "--admin", "--expires-in", duration, db=str(db_path))
    assert result.exit_code != 0
    assert hint in result.output
    assert db.execute("SELECT count(*) FROM api_tokens").fetchone()[0] == 0


# --- throttling of authentication failures ------------------------------------------------


@pytest.fixture
def throttled(db_path):
    """A client of an app that allows 3 failed authentications a minute per address."""
    return make_app(db_path, auth_failure_limit="3/minute").test_client()


def test_auth_failures__over_the_limit__429_with_retry_after(throttled, assert_valid):
    # Given: three failures from one address
    wrong = auth(tokens.new_admin_token())
    assert [throttled.get(UI, headers=wrong).status_code for _ in range(3)] == [401] * 3
    # When: a fourth, without any token this time
    response = throttled.get(UI)
    # Then
    assert response.status_code == 429
    assert response.get_json()["name"] == "TooManyRequestsError"
    assert 1 <= int(response.headers["Retry-After"]) <= 60
    assert_valid(response, "/api/admin/ui-config")


def test_auth_failures__valid_token_while_throttled__never_throttled(throttled, admin_token):
    # Given: an address over its limit
    for _ in range(4):
        throttled.get(UI, headers=auth("wrong"))
    assert throttled.get(UI, headers=auth("wrong")).status_code == 429
    # When / Then: a valid token from that address still gets through, every time
    assert [throttled.get(UI, headers=auth(admin_token)).status_code for _ in range(10)] == [200] * 10


def test_auth_failures__successes__not_counted(throttled, admin_token):
    for _ in range(10):
        throttled.get(UI, headers=auth(admin_token))
    assert [throttled.get(UI).status_code for _ in range(4)] == [401, 401, 401, 429]


def test_auth_failures__other_address__not_throttled(throttled):
    for _ in range(4):
        throttled.get(UI)
    assert throttled.get(UI).status_code == 429
    other = throttled.get(UI, environ_base={"REMOTE_ADDR": "192.0.2.7"})
    assert other.status_code == 401


def test_auth_failures__window_passed__counted_again(db_path):
    # Given: a limit of one failure a second, used up
    client = make_app(db_path, auth_failure_limit="1/second").test_client()
    assert [client.get(UI).status_code for _ in range(2)] == [401, 429]
    # When: the window moves past the failure
    time.sleep(1.1)
    # Then
    assert client.get(UI).status_code == 401


def test_auth_failure_limit__default__at_least_20_a_minute():
    (item,) = limits.parse_many(settings_from_env({}).auth_failure_limit)
    assert settings_from_env({}).auth_failure_limit == DEFAULT_AUTH_FAILURE_LIMIT
    assert item.amount * 60 / item.get_expiry() >= 20
    listed = [variable[:2] for variable in ENVIRONMENT_VARIABLES]
    assert ("FLAGADMIN_AUTH_FAILURE_LIMIT", DEFAULT_AUTH_FAILURE_LIMIT) in listed


def test_auth_failure_limit__from_environment__applied(monkeypatch, db_path):
    monkeypatch.setenv("FLAGADMIN_AUTH_FAILURE_LIMIT", "2/minute")
    client = create_app({"DATABASE": str(db_path)}).test_client()
    assert [client.get(UI).status_code for _ in range(3)] == [401, 401, 429]


@pytest.mark.parametrize("value", ["lots", "0/minute", "30/minute;5/second", "", "30 per fortnight"])
def test_auth_failure_limit__unusable__refused_naming_the_variable(value):
    with pytest.raises(SettingsError, match="FLAGADMIN_AUTH_FAILURE_LIMIT"):
        settings_from_env({"FLAGADMIN_AUTH_FAILURE_LIMIT": value})


def test_serve__unusable_auth_failure_limit__refused_at_start(invoke, db_path):
    result = invoke("serve", "--port", "0", db=str(db_path), env={"FLAGADMIN_AUTH_FAILURE_LIMIT": "lots"})
    assert result.exit_code != 0
    assert "FLAGADMIN_AUTH_FAILURE_LIMIT" in result.output


# --- headers of every admin API response --------------------------------------------------


def _fail(*args, **kwargs):
    raise RuntimeError("boom")


@pytest.mark.parametrize(
    ("status", "method", "path", "token", "data"),
    [
        (200, "GET", UI, "admin", None),
        (401, "GET", UI, None, None),
        (403, "GET", EVENTS, "alice", None),
        (404, "GET", "/api/admin/addons/999/events", "admin", None),
        (404, "GET", "/api/admin/no-such-thing", "admin", None),
        (405, "DELETE", UI, "admin", None),
        (413, "POST", GENERATE, "admin", b"x" * (65 * 1024)),
        (429, "GET", UI, None, None),
        (500, "GET", UI, "admin", None),
    ],
)
def test_admin_api__any_status__no_store_and_nosniff(
    db_path, monkeypatch, admin_token, alice, status, method, path, token, data
):
    # Given: an app allowing one failure a minute, whose token lookup fails when a 500 is wanted
    client = make_app(db_path, auth_failure_limit="1/minute").test_client()
    if status == 429:
        client.get(UI)
    if status == 500:
        monkeypatch.setattr("flagadmin.store.tokens.find_caller", _fail)
    headers = auth({"admin": admin_token, "alice": alice}[token]) if token else {}
    # When
    response = client.open(path, method=method, headers=headers, data=data)
    # Then
    assert response.status_code == status
    assert response.headers["Cache-Control"] == "no-store"
    assert response.headers["X-Content-Type-Options"] == "nosniff"


def _cors_headers(response) -> dict[str, str]:
    return {k: v for k, v in response.headers.items() if k.lower().startswith("access-control-")}


def test_cors__not_configured__no_cors_header_at_all(client, admin_token):
    origin = {"Origin": "https://ui.example"}
    responses = [
        client.get(UI, headers={**auth(admin_token), **origin}),
        client.get(UI, headers=origin),
        client.options(UI, headers={**origin, "Access-Control-Request-Method": "GET"}),
    ]
    assert [_cors_headers(r) for r in responses] == [{}, {}, {}]


def test_cors__configured__allowed_origin_only_and_admin_api_only(db_path, admin_token):
    # Given
    client = make_app(db_path, cors_origins=("https://ui.example",)).test_client()
    # When
    allowed = client.get(UI, headers={**auth(admin_token), "Origin": "https://ui.example"})
    refused = client.get(UI, headers={**auth(admin_token), "Origin": "https://evil.example"})
    docs = client.get("/docs/openapi.json", headers={"Origin": "https://ui.example"})
    preflight = client.options(
        UI,
        headers={
            "Origin": "https://ui.example",
            "Access-Control-Request-Method": "GET",
            "Access-Control-Request-Headers": "Authorization",
        },
    )
    # Then
    assert allowed.status_code == 200
    assert allowed.headers["Access-Control-Allow-Origin"] == "https://ui.example"
    assert "Access-Control-Allow-Origin" not in refused.headers
    assert _cors_headers(docs) == {}
    assert preflight.headers["Access-Control-Allow-Origin"] == "https://ui.example"
    assert "authorization" in preflight.headers["Access-Control-Allow-Headers"].lower()


def test_cors_origins__from_environment__parsed_and_applied(monkeypatch, db_path, admin_token):
    monkeypatch.setenv("FLAGADMIN_CORS_ORIGINS", "https://ui.example, http://localhost:3000")
    assert settings_from_env().cors_origins == ("https://ui.example", "http://localhost:3000")
    client = create_app({"DATABASE": str(db_path)}).test_client()
    response = client.get(UI, headers={**auth(admin_token), "Origin": "http://localhost:3000"})
    assert response.headers["Access-Control-Allow-Origin"] == "http://localhost:3000"


@pytest.mark.parametrize("value", ["ui.example", "ftp://ui.example", "https://ui.example/path", "https://"])
def test_cors_origins__not_an_origin__refused_naming_the_variable(value):
    with pytest.raises(SettingsError, match="FLAGADMIN_CORS_ORIGINS"):
        settings_from_env({"FLAGADMIN_CORS_ORIGINS": value})


def test_settings__unset__no_cors_origins():
    assert settings_from_env({}).cors_origins == ()


def test_token_lookup__by_digest__plain_token_never_sent_to_sqlite(db, admin_token):
    # Given: a record of every SQL statement the connection runs, parameters expanded
    sent: list[str] = []
    db.conn.set_trace_callback(sent.append)
    # When
    found = tokens.find_caller(db, admin_token)
    # Then
    assert found is not None
    assert any(tokens.digest(admin_token) in statement for statement in sent)
    assert not any(admin_token in statement for statement in sent)
