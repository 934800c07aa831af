"""CORS of the Frontend API, as the reference server answers it: the origins of ui-config's
``frontendApiOrigins`` (``FLAGADMIN_FRONTEND_API_ORIGINS``, default ``*``, until an Admin sets
them with ``POST /api/admin/ui-config/cors``) may call ``/api/frontend`` from a browser; an
allowed origin is echoed (``*`` when every origin is), a refused one gets no CORS header; a
preflight is answered 204 before any token check with the request's headers echoed,
``Expose-Headers: ETag`` and ``Max-Age: 86400``. The origins set through the API are stored,
shown by ui-config, recorded as the reference records them, and in force for every app on the
database from the next request.

Run on either engine (``--engine=postgresql``), and with ``--answer-cache=off``.
"""

from __future__ import annotations

import pytest

from flagadmin import events
from flagadmin.tokens.changes import create_api_token

from flag_helpers import recorded
from helpers import auth

FRONTEND = "/api/frontend"
CORS = "/api/admin/ui-config/cors"
APP = "https://app.example.com"
EVIL = "https://evil.example.com"

ACCESS_CONTROL = (
    "Access-Control-Allow-Origin",
    "Access-Control-Allow-Methods",
    "Access-Control-Allow-Headers",
    "Access-Control-Expose-Headers",
    "Access-Control-Max-Age",
)


def access_control(response) -> dict[str, str]:
    return {name: value for name, value in response.headers.items() if name.startswith("Access-Control-")}


def preflight(client, origin: str, path: str = FRONTEND, headers: str | None = "authorization,content-type"):
    sent = {"Origin": origin, "Access-Control-Request-Method": "GET"}
    if headers:
        sent["Access-Control-Request-Headers"] = headers
    return client.open(path, method="OPTIONS", headers=sent)


@pytest.fixture
def frontend_token(db) -> str:
    secret, _ = create_api_token(
        db, events.COMMAND_LINE, type="frontend", name="browser", environment="development", projects=["*"]
    )
    return secret


@pytest.fixture
def listed(make_app):
    """A client of an app whose setting allows one origin (FLAGADMIN_FRONTEND_API_ORIGINS)."""
    return make_app(frontend_api_origins=(APP, "http://localhost:3000")).test_client()


# --- the default: every origin ----------------------------------------------------------------


def test_default__every_origin__star_and_the_etag_exposed(client, frontend_token):
    response = client.get(FRONTEND, headers={**auth(frontend_token), "Origin": EVIL})
    assert response.status_code == 200
    assert access_control(response) == {
        "Access-Control-Allow-Origin": "*",
        "Access-Control-Expose-Headers": "ETag",
    }
    assert "Origin" not in response.headers.get("Vary", "")


def test_default__preflight__204_before_any_token__the_references_headers(client):
    response = preflight(client, APP)
    assert response.status_code == 204
    assert response.get_data() == b""
    assert access_control(response) == {
        "Access-Control-Allow-Origin": "*",
        "Access-Control-Allow-Methods": "GET,HEAD,PUT,PATCH,POST,DELETE",
        "Access-Control-Allow-Headers": "authorization,content-type",
        "Access-Control-Expose-Headers": "ETag",
        "Access-Control-Max-Age": "86400",
    }
    # the request's headers, whatever they are, are echoed; none asked: none allowed
    odd = preflight(client, APP, headers="x-custom-header, if-none-match")
    assert odd.headers["Access-Control-Allow-Headers"] == "x-custom-header, if-none-match"
    assert "Access-Control-Allow-Headers" not in preflight(client, APP, headers=None).headers
    # every path under /api/frontend, metrics included
    assert preflight(client, APP, f"{FRONTEND}/client/metrics").status_code == 204


def test_no_origin__no_cors_headers(client, frontend_token):
    response = client.get(FRONTEND, headers=auth(frontend_token))
    assert access_control(response) == {}


def test_the_admin_api__not_opened_by_the_frontend_apis_origins(client, admin_token):
    response = client.get("/api/admin/ui-config", headers={**auth(admin_token), "Origin": APP})
    assert access_control(response) == {}


# --- a list of origins ------------------------------------------------------------------------


def test_listed__an_allowed_origin_echoed__a_refused_one_gets_nothing(listed, frontend_token):
    allowed = listed.get(FRONTEND, headers={**auth(frontend_token), "Origin": APP})
    assert allowed.status_code == 200
    assert access_control(allowed) == {
        "Access-Control-Allow-Origin": APP,
        "Access-Control-Expose-Headers": "ETag",
    }
    assert "Origin" in allowed.headers["Vary"]
    refused = listed.get(FRONTEND, headers={**auth(frontend_token), "Origin": EVIL})
    assert refused.status_code == 200  # the server answers; the browser keeps it from the page
    assert access_control(refused) == {}
    assert "Origin" in refused.headers["Vary"]
    # an origin differs from one in the list by its scheme, its port or its case: refused
    for near in ("http://app.example.com", "https://app.example.com:8443", "https://APP.example.com"):
        assert access_control(listed.get(FRONTEND, headers={**auth(frontend_token), "Origin": near})) == {}


def test_listed__preflights(listed):
    allowed = preflight(listed, "http://localhost:3000")
    assert allowed.status_code == 204
    assert allowed.headers["Access-Control-Allow-Origin"] == "http://localhost:3000"
    assert allowed.headers["Access-Control-Allow-Headers"] == "authorization,content-type"
    assert allowed.headers["Access-Control-Max-Age"] == "86400"
    refused = preflight(listed, EVIL)
    assert refused.status_code == 204
    assert access_control(refused) == {}


def test_listed__errors_carry_the_headers_too(listed, frontend_token):
    """A browser page can read a 401 or a 400 only when it carries the CORS headers."""
    unauthenticated = listed.get(FRONTEND, headers={"Origin": APP})
    assert unauthenticated.status_code == 401
    assert unauthenticated.headers["Access-Control-Allow-Origin"] == APP
    bad = listed.get(f"{FRONTEND}?currentTime=soon", headers={**auth(frontend_token), "Origin": APP})
    assert bad.status_code == 400
    assert bad.headers["Access-Control-Allow-Origin"] == APP
    metrics = listed.post(
        f"{FRONTEND}/client/metrics", json={"appName": "web"}, headers={**auth(frontend_token), "Origin": APP}
    )
    assert metrics.status_code == 200
    assert metrics.headers["Access-Control-Allow-Origin"] == APP


# --- POST /api/admin/ui-config/cors -------------------------------------------------------------


def test_set_cors__204__shown_by_ui_config__recorded__in_force(client, admin_token, frontend_token, db):
    assert client.get("/api/admin/ui-config", headers=auth(admin_token)).get_json()["frontendApiOrigins"] == [
        "*"
    ]
    response = client.post(CORS, json={"frontendApiOrigins": [APP]}, headers=auth(admin_token))
    assert response.status_code == 204 and response.get_data() == b""
    assert client.get("/api/admin/ui-config", headers=auth(admin_token)).get_json()["frontendApiOrigins"] == [
        APP
    ]
    assert (
        client.get(FRONTEND, headers={**auth(frontend_token), "Origin": APP}).headers[
            "Access-Control-Allow-Origin"
        ]
        == APP
    )
    assert access_control(client.get(FRONTEND, headers={**auth(frontend_token), "Origin": EVIL})) == {}
    assert access_control(preflight(client, EVIL)) == {}

    (created,) = recorded(db, "setting-created")
    assert created["data"] == {"id": "unleash.frontend", "frontendApiOrigins": [APP]}
    assert created["createdBy"] == "admin"

    client.post(CORS, json={"frontendApiOrigins": ["*"]}, headers=auth(admin_token))
    (updated,) = recorded(db, "setting-updated")
    assert updated["data"] == {"id": "unleash.frontend", "frontendApiOrigins": ["*"]}
    assert updated["preData"] == {"id": "unleash.frontend", "frontendApiOrigins": [APP]}
    assert (
        client.get(FRONTEND, headers={**auth(frontend_token), "Origin": EVIL}).headers[
            "Access-Control-Allow-Origin"
        ]
        == "*"
    )
    # the same origins again: nothing changes, nothing recorded
    client.post(CORS, json={"frontendApiOrigins": ["*"]}, headers=auth(admin_token))
    assert len(recorded(db, "setting-updated")) == 1


def test_set_cors__overrides_the_setting__for_another_app_on_the_database(
    listed, make_app, admin_token, frontend_token
):
    other = make_app(frontend_api_origins=(APP,)).test_client()
    assert other.post(CORS, json={"frontendApiOrigins": [EVIL]}, headers=auth(admin_token)).status_code == 204
    response = listed.get(FRONTEND, headers={**auth(frontend_token), "Origin": EVIL})
    assert response.headers["Access-Control-Allow-Origin"] == EVIL
    assert access_control(listed.get(FRONTEND, headers={**auth(frontend_token), "Origin": APP})) == {}
    assert listed.get("/api/admin/ui-config", headers=auth(admin_token)).get_json()["frontendApiOrigins"] == [
        EVIL
    ]


def test_set_cors__an_empty_list_allows_every_origin(listed, admin_token, frontend_token):
    assert listed.post(CORS, json={"frontendApiOrigins": []}, headers=auth(admin_token)).status_code == 204
    response = listed.get(FRONTEND, headers={**auth(frontend_token), "Origin": EVIL})
    assert response.headers["Access-Control-Allow-Origin"] == "*"


@pytest.mark.parametrize(
    "origins",
    [
        ["app.example.com"],
        ["https://app.example.com/"],
        ["https://app.example.com/path"],
        ["HTTPS://app.example.com"],
        ["https://App.example.com"],
        ["https://app.example.com:443"],
        ["ftp://app.example.com"],
        ["https://user@app.example.com"],
        ["https://app.example.com?x=1"],
        [APP, 3],
        [None],
    ],
)
def test_set_cors__not_an_origin__400_naming_it(client, admin_token, origins):
    response = client.post(CORS, json={"frontendApiOrigins": origins}, headers=auth(admin_token))
    assert response.status_code == 400
    assert response.get_json()["message"].startswith("Invalid origin")
    assert client.get("/api/admin/ui-config", headers=auth(admin_token)).get_json()["frontendApiOrigins"] == [
        "*"
    ]


@pytest.mark.parametrize(
    "body", [{}, {"frontendApiOrigins": "https://app.example.com"}, {"frontendApiOrigins": [APP], "other": 1}]
)
def test_set_cors__a_bad_body__400(client, admin_token, body):
    response = client.post(CORS, json=body, headers=auth(admin_token))
    assert response.status_code == 400
    assert "frontendApiOrigins" in response.get_json()["message"] or "other" in response.get_json()["message"]


def test_set_cors__admins_only(client, alice, admin_user, frontend_token):
    body = {"frontendApiOrigins": [APP]}
    assert client.post(CORS, json=body, headers=auth(alice)).status_code == 403  # an Editor
    assert client.post(CORS, json=body, headers=auth(frontend_token)).status_code == 403
    assert client.post(CORS, json=body).status_code == 401
    assert client.post(CORS, json=body, headers=auth(admin_user)).status_code == 204
