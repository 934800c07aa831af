"""Headers of every admin API answer: Cache-Control (``private, no-cache`` on the answers of
the conditional operations, ``no-store`` on everything else), nosniff, and CORS only for the
configured origins."""

from __future__ import annotations

import pytest

from flagadmin.app import create_app
from flagadmin.config import SettingsError, settings_from_env

from helpers import auth

pytestmark = pytest.mark.same_on_both_engines

UI = "/api/admin/ui-config"
EVENTS = "/api/admin/addons/1/events"
DASHBOARD = "/api/admin/personal-dashboard"
ARCHIVE = "/api/admin/archive/features"
GENERATE = "/api/admin/scim-settings/generate-new-token"
SCIM = "/scim/v2/ServiceProviderConfig"


def _fail(*args, **kwargs):
    raise RuntimeError("boom")


@pytest.mark.parametrize(
    ("status", "method", "path", "token", "data"),
    [
        (200, "GET", UI, "admin", None),
        (200, "GET", DASHBOARD, "alice", None),
        (200, "GET", ARCHIVE, "alice", None),
        (200, "GET", EVENTS, "admin", None),
        (200, "POST", GENERATE, "admin", None),
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
def test_admin_api__any_status__cache_control_and_nosniff(
    make_app, monkeypatch, admin_token, alice, status, method, path, token, data
):
    # Given: an app allowing one failure a minute, whose token lookup fails when a 500 is wanted
    client = make_app(auth_failure_limit="1/minute").test_client()
    if status == 429:
        client.get(UI)
    if status == 500:
        monkeypatch.setattr("flagadmin.store.tokens.find_caller", _fail)
    headers = auth({"admin": admin_token, "alice": alice}[token]) if token else {}
    # When
    response = client.open(path, method=method, headers=headers, data=data)
    # Then
    assert response.status_code == status
    revalidated = status == 200 and path in (UI, DASHBOARD, ARCHIVE)
    assert response.headers["Cache-Control"] == ("private, no-cache" if revalidated else "no-store")
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


def test_cors__configured__allowed_origin_only_and_admin_api_only(make_app, admin_token):
    # Given
    client = make_app(cors_origins=("https://ui.example",)).test_client()
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


def test_cors_origins__from_environment__parsed_and_applied(monkeypatch, database, admin_token):
    monkeypatch.setenv("FLAGADMIN_CORS_ORIGINS", "https://ui.example, http://localhost:3000")
    assert settings_from_env().cors_origins == ("https://ui.example", "http://localhost:3000")
    client = create_app({"DATABASE": database}).test_client()
    response = client.get(UI, headers={**auth(admin_token), "Origin": "http://localhost:3000"})
    assert response.headers["Access-Control-Allow-Origin"] == "http://localhost:3000"


@pytest.mark.parametrize("value", ["ui.example", "ftp://ui.example", "https://ui.example/path", "https://"])
def test_cors_origins__not_an_origin__refused_naming_the_variable(value):
    with pytest.raises(SettingsError, match="FLAGADMIN_CORS_ORIGINS"):
        settings_from_env({"FLAGADMIN_CORS_ORIGINS": value})


def test_settings__unset__no_cors_origins():
    assert settings_from_env({}).cors_origins == ()
