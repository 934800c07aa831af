"""Spec 7: one JSON error envelope for every status; no request gets a 500 page."""

from __future__ import annotations

import io
import json
import sqlite3
import uuid

import pytest
from flask import Blueprint

from flagadmin.app import create_app

from helpers import auth


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
