"""Spec 7: one JSON error envelope for every status; no request gets a 500 page."""

from __future__ import annotations

import io
import json
import sqlite3
import uuid

import pytest
from flask import Blueprint
from scim_helpers import assert_scim_error, new_scim_token

from flagadmin.app import create_app
from flagadmin.directory.protocol import MAX_BODY_BYTES
from flagadmin.web.limits import MAX_JSON_DEPTH

from helpers import auth, fingerprint


def assert_envelope(response, status: int, name: str) -> dict:
    assert response.status_code == status
    assert response.mimetype == "application/json"
    body = response.get_json()
    assert body["name"] == name
    uuid.UUID(body["id"])
    assert body["message"]
    assert ("details" in body) == (status == 400)
    return body


@pytest.mark.parametrize(
    "path", ["/api/admin/does-not-exist", "/api/nothing", "/", "/api/admin/addons/1/event"]
)
def test_unknown_path__json_404(client, admin_token, path):
    body = assert_envelope(client.get(path, headers=auth(admin_token)), 404, "NotFoundError")
    assert path in body["message"]


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("POST", "/api/admin/addons/1/events", "GET"),
        ("DELETE", "/api/admin/ui-config", "GET"),
        ("GET", "/api/admin/scim-settings/generate-new-token", "POST"),
        ("PUT", "/api/admin/personal-dashboard", "GET"),
    ],
)
def test_wrong_method__405_with_allow(client, admin_token, method, path, allowed):
    response = client.open(path, method=method, headers=auth(admin_token))
    assert_envelope(response, 405, "MethodNotAllowedError")
    assert allowed in response.headers["Allow"]


def test_huge_body__413(client, admin_token):
    response = client.post(
        "/api/admin/scim-settings/generate-new-token", headers=auth(admin_token), data=b"x" * (1024 * 1024)
    )
    assert_envelope(response, 413, "ContentTooLargeError")


def test_unexpected_failure__json_500_without_traceback(database):
    # Given: an app with a route that fails
    app = create_app({"DATABASE": database})
    broken = Blueprint("broken", __name__)

    @broken.get("/api/broken")
    def fail():
        raise RuntimeError("secret internals")

    app.register_blueprint(broken)
    # When
    response = app.test_client().get("/api/broken")
    # Then
    body = assert_envelope(response, 500, "InternalError")
    assert "secret internals" not in response.get_data(as_text=True)
    assert "Traceback" not in response.get_data(as_text=True)
    assert "retry" in body["message"]


def test_database_locked__scim_write_503_with_retry_after_reads_still_200(make_app, db_path, admin_token, db):
    # Given: an app that waits only briefly for the write lock, and a token it has already used
    # (so that its last-used time is recent and the next requests write nothing for it)
    client = make_app(config={"BUSY_TIMEOUT_MS": 50}).test_client()
    assert client.get("/api/admin/ui-config", headers=auth(admin_token)).status_code == 200
    active_before = db.value("SELECT count(*) FROM scim_tokens")
    # When: another connection holds the write lock while a SCIM token is generated
    blocker = sqlite3.connect(db_path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        read = client.get("/api/admin/ui-config", headers=auth(admin_token))
        response = client.post("/api/admin/scim-settings/generate-new-token", headers=auth(admin_token))
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    # Then: the read went through (so authentication did not need the lock), the write got 503
    assert read.status_code == 200
    assert_envelope(response, 503, "ServiceUnavailableError")
    assert response.headers["Retry-After"] == "1"
    assert db.value("SELECT count(*) FROM scim_tokens") == active_before
    # and once the lock is free, the same request succeeds
    assert (
        client.post("/api/admin/scim-settings/generate-new-token", headers=auth(admin_token)).status_code
        == 200
    )


@pytest.mark.parametrize(
    "body",
    [
        b'{"name": "nul\\u0000name"}',
        b'{"name": "ok", "description": "a\\u0000b"}',
        b'{"name": "ok", "tags": [{"type": "simple", "value": "x\\u0000y"}]}',
        b'{"na\\u0000me": "ok"}',
    ],
)
def test_body__nul_character_anywhere__400_and_nothing_written(client, admin_token, db, body):
    # Given: flags before
    before = db.value("SELECT count(*) FROM features")
    # When: a body holds a NUL character, in a value or a key
    response = client.post(
        "/api/admin/projects/default/features",
        data=body,
        headers={**auth(admin_token), "Content-Type": "application/json"},
    )
    # Then
    body_ = assert_envelope(response, 400, "BadDataError")
    assert "NUL" in body_["message"]
    assert db.value("SELECT count(*) FROM features") == before


def test_body__escaped_backslash_before_u0000__not_a_nul(client, admin_token):
    # A JSON string holding the six characters \u0000 (escaped backslash) is no NUL.
    response = client.post(
        "/api/admin/features/validate",
        data=b'{"name": "plain-name-\\\\u0000"}',
        headers={**auth(admin_token), "Content-Type": "application/json"},
    )
    assert "NUL" not in response.get_data(as_text=True)


def _create_flag_chunked(client, token: str, body: str):
    """POST ``body`` as a flag create with ``Transfer-Encoding: chunked`` and no
    ``Content-Length``, as a WSGI server that does not buffer the body passes it on."""
    return client.post(
        "/api/admin/projects/default/features",
        headers={**auth(token), "Content-Type": "application/json", "Transfer-Encoding": "chunked"},
        input_stream=io.BytesIO(body.encode()),
        environ_overrides={"wsgi.input_terminated": True},
    )


def test_chunked_body_without_content_length__over_the_limit__413_and_nothing_created(client, admin_token):
    """A body whose length is not announced (``Transfer-Encoding: chunked``, as a WSGI server
    that does not buffer it passes it on) is still bounded while it is read."""
    # Given: a flag create whose body is over the 64 KiB of the admin API
    body = json.dumps({"name": "chunked-huge", "type": "release", "description": "x" * (80 * 1024)})
    # When
    response = _create_flag_chunked(client, admin_token, body)
    # Then
    assert_envelope(response, 413, "ContentTooLargeError")
    found = client.get("/api/admin/projects/default/features/chunked-huge", headers=auth(admin_token))
    assert found.status_code == 404


def test_chunked_body_without_content_length__under_the_limit__read_whole_and_created(client, admin_token):
    # Given: a flag create of 60 KiB, just under the limit, its length not announced
    body = json.dumps({"name": "chunked-fits", "type": "release", "description": "y" * (60 * 1024)})
    # When
    response = _create_flag_chunked(client, admin_token, body)
    # Then: the whole body was read, nothing cut
    assert response.status_code == 201
    assert response.get_json()["description"] == "y" * (60 * 1024)


# --- every answer in JSON: OPTIONS, routing's redirects, 413s that name their limit ------------


@pytest.mark.parametrize(
    ("path", "allowed"),
    [
        ("/api/admin/ui-config", ["GET", "HEAD", "OPTIONS"]),
        ("/api/admin/projects/default/features", ["GET", "HEAD", "OPTIONS", "POST"]),
        (
            "/api/admin/projects/default/features/dark-mode",
            ["DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "PUT"],
        ),
        ("/docs/openapi.json", ["GET", "HEAD", "OPTIONS"]),
    ],
)
def test_options__any_route__200_json_listing_what_the_allow_header_lists(client, path, allowed):
    # When: OPTIONS, no token needed (it says what the path answers, nothing about its data)
    response = client.options(path)
    # Then
    assert response.status_code == 200
    assert response.mimetype == "application/json"
    assert sorted(m.strip() for m in response.headers["Allow"].split(",")) == allowed
    body = response.get_json()
    assert body["path"] == path
    assert body["allow"] == allowed
    assert all(method in body["message"] for method in allowed)
    assert response.headers["Cache-Control"] == "no-store"


def test_options__scim_route__200_json_with_allow(client):
    response = client.options("/scim/v2/Users")
    assert response.status_code == 200
    assert response.mimetype == "application/json"
    assert {"GET", "POST"} <= set(response.get_json()["allow"])
    assert "GET" in response.headers["Allow"]


def test_options__cors_configured__preflight_left_to_cors_other_options_json(make_app):
    # Given: CORS for one origin
    client = make_app(cors_origins=("https://ui.example",)).test_client()
    preflight_headers = {"Origin": "https://ui.example", "Access-Control-Request-Method": "POST"}
    # When
    preflight = client.options("/api/admin/projects/default/features", headers=preflight_headers)
    plain = client.options("/api/admin/projects/default/features", headers={"Origin": "https://ui.example"})
    # Then: the preflight is flask-cors's answer, as before; a plain OPTIONS says itself in JSON
    assert preflight.status_code == 200
    assert preflight.headers["Access-Control-Allow-Origin"] == "https://ui.example"
    assert "POST" in preflight.headers["Access-Control-Allow-Methods"]
    assert not preflight.get_data()
    assert plain.get_json()["allow"] == ["GET", "HEAD", "OPTIONS", "POST"]
    assert plain.headers["Access-Control-Allow-Origin"] == "https://ui.example"


@pytest.mark.parametrize(
    ("method", "path", "target"),
    [
        ("GET", "/api/admin//ui-config", "/api/admin/ui-config"),
        ("POST", "/api/admin/projects//default/features", "/api/admin/projects/default/features"),
    ],
)
def test_doubled_slash__308_envelope_naming_where_to_go(client, admin_token, db, method, path, target):
    # Given
    before = db.value("SELECT count(*) FROM features")
    # When: a path with a doubled slash, which routing redirects to the path without it
    response = client.open(path, method=method, headers=auth(admin_token), json={"name": "slashes"})
    # Then: the redirect says so in the envelope, and Location has it too; nothing was done
    body = assert_envelope(response, 308, "PermanentRedirect")
    assert response.headers["Location"].endswith(target)
    assert target in body["message"]
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert db.value("SELECT count(*) FROM features") == before


def test_413__operation_with_a_body__names_its_limit(client, admin_token, db):
    # Given
    before = db.value("SELECT count(*) FROM features")
    # When: a flag create of 70,000 bytes
    response = client.post(
        "/api/admin/projects/default/features",
        headers={**auth(admin_token), "Content-Type": "application/json"},
        data=b"x" * 70_000,
    )
    # Then
    body = assert_envelope(response, 413, "ContentTooLargeError")
    assert "70000 bytes" in body["message"]
    assert "at most 65536 bytes" in body["message"]
    assert "no body" not in body["message"]
    assert db.value("SELECT count(*) FROM features") == before


def test_413__update_names_its_limit(client, admin_token):
    response = client.put(
        "/api/admin/projects/default/features/dark-mode",
        headers={**auth(admin_token), "Content-Type": "application/json"},
        data=b"x" * 70_000,
    )
    body = assert_envelope(response, 413, "ContentTooLargeError")
    assert "at most 65536 bytes" in body["message"]


def test_413__operation_without_a_body__says_it_takes_none_and_the_limit(client, admin_token):
    response = client.post(
        "/api/admin/scim-settings/generate-new-token", headers=auth(admin_token), data=b"x" * 70_000
    )
    body = assert_envelope(response, 413, "ContentTooLargeError")
    assert "takes no body" in body["message"]
    assert "65536 bytes" in body["message"]


def test_413__scim__scim_error_naming_the_documented_limit(client, db):
    # Given: the limit docs/scim.md states
    assert MAX_BODY_BYTES == 2 * 1024 * 1024
    token = new_scim_token(db)
    # When
    response = client.post(
        "/scim/v2/Users",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/scim+json"},
        data=b"x" * (MAX_BODY_BYTES + 1),
    )
    # Then
    body = assert_scim_error(response, 413)
    assert str(MAX_BODY_BYTES) in body["detail"]


# --- any JSON, any depth, any escape: 400, never 500 -----------------------------------------


def _deep(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


@pytest.mark.parametrize("depth", [65, 600, 5000])
@pytest.mark.parametrize(
    ("method", "path", "wrap"),
    [
        ("POST", "/api/admin/projects/default/features", b'{"name": "deep", "description": %s}'),
        ("PUT", "/api/admin/projects/default/features/dark-mode", b'{"description": %s}'),
        (
            "PATCH",
            "/api/admin/projects/default/features/dark-mode",
            b'[{"op": "replace", "path": "/description", "value": %s}]',
        ),
        (
            "PATCH",
            "/api/admin/projects/default/features/dark-mode",
            b'[{"op": "test", "path": "/x", "value": %s}]',
        ),
        ("POST", "/api/admin/addons", b'{"provider": "webhook", "parameters": %s}'),
    ],
)
def test_body_nested_past_the_limit__400_before_any_schema_and_nothing_written(
    client, admin_token, database, method, path, wrap, depth
):
    """A JSON Patch value 600 levels deep (which the parser takes) answered 500 with a
    RecursionError; every body deeper than MAX_JSON_DEPTH is now refused where it is read."""
    before = fingerprint(database)
    response = client.open(
        path,
        method=method,
        data=wrap % _deep(depth),
        headers={**auth(admin_token), "Content-Type": "application/json"},
    )
    body = assert_envelope(response, 400, "BadDataError")
    assert f"more than {MAX_JSON_DEPTH} levels" in body["message"]
    assert fingerprint(database) == before


def test_body_nested_at_the_limit__read(client, admin_token):
    # 64 levels in all (the list of operations is the first): the patch is read, its value refused
    value = _deep(MAX_JSON_DEPTH - 2)
    response = client.patch(
        "/api/admin/projects/default/features/dark-mode",
        data=b'[{"op": "replace", "path": "/description", "value": %s}]' % value,
        headers={**auth(admin_token), "Content-Type": "application/json"},
    )
    body = assert_envelope(response, 400, "BadDataError")
    assert "levels" not in body["message"]


def test_body_brackets_inside_strings__not_nesting(client, admin_token):
    description = "[{" * 100
    response = client.post(
        "/api/admin/projects/default/features",
        data=json.dumps({"name": "brackets-in-text", "description": description}),
        headers={**auth(admin_token), "Content-Type": "application/json"},
    )
    assert response.status_code == 201, response.get_json()
    assert response.get_json()["description"] == description


@pytest.fixture
def scim_headers(db) -> dict[str, str]:
    return {"Authorization": f"Bearer {new_scim_token(db)}", "Content-Type": "application/scim+json"}


def test_scim_body_nested_past_the_limit__scim_400_invalid_syntax(client, scim_headers, database):
    before = fingerprint(database)
    data = b'{"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"], "userName": "d", "x": %s}'
    response = client.post("/scim/v2/Users", headers=scim_headers, data=data % _deep(900))
    assert_scim_error(response, 400, "invalidSyntax")
    assert fingerprint(database) == before


@pytest.mark.parametrize(
    "scim_filter",
    [
        'userName eq "\\ud800"',
        'userName eq "a\\udc00b"',
        'userName eq "\\ud800\\u0041"',
        'emails[value eq "\\udbff"]',
    ],
)
def test_scim_filter_with_escape_of_a_lone_surrogate__400_invalid_filter(client, scim_headers, scim_filter):
    """A filter holding \\ud800 (the escape of no character) answered 500: the database could
    not encode the value it decoded to."""
    response = client.get("/scim/v2/Users", headers=scim_headers, query_string={"filter": scim_filter})
    body = assert_scim_error(response, 400, "invalidFilter")
    assert "lone surrogate" in body["detail"]


@pytest.mark.parametrize(
    "scim_filter",
    ['userName eq "\\ud83d\\ude00"', 'userName eq "\\\\ud800"', 'userName eq "%ED%A0%80"'],
)
def test_scim_filter_with_pair_or_escaped_backslash__read(client, scim_headers, scim_filter):
    response = client.get("/scim/v2/Users", headers=scim_headers, query_string={"filter": scim_filter})
    assert response.status_code == 200, response.get_json()


def test_scim_filter_undecodable_bytes__not_a_500(client, scim_headers):
    # %ED%A0%80 is the surrogate U+D800 written as if it were UTF-8: not UTF-8, kept quoted
    response = client.get("/scim/v2/Users?filter=userName%20eq%20%22%ED%A0%80%22", headers=scim_headers)
    assert response.status_code == 200


@pytest.mark.parametrize(
    ("path", "data"),
    [
        (
            "/scim/v2/Users/.search",
            b'{"schemas": ["urn:ietf:params:scim:api:messages:2.0:SearchRequest"],'
            b' "filter": "userName eq \\"\\\\ud800\\""}',
        ),
        (
            "/scim/v2/.search",
            b'{"schemas": ["urn:ietf:params:scim:api:messages:2.0:SearchRequest"],'
            b' "filter": "userName eq \\"\\u005cudc00\\""}',
        ),
    ],
)
def test_scim_search_body_with_escape_of_a_lone_surrogate__400(client, scim_headers, path, data):
    body = assert_scim_error(client.post(path, headers=scim_headers, data=data), 400)
    assert "lone surrogate" in body["detail"]


def test_body_json_lone_surrogate__400_not_json(client, admin_token):
    response = client.post(
        "/api/admin/projects/default/features",
        data=b'{"name": "x", "description": "\\ud800"}',
        headers={**auth(admin_token), "Content-Type": "application/json"},
    )
    assert_envelope(response, 400, "BadDataError")
