"""``GET /health``: 200 while the database can be read, 503 with the error envelope when not."""

from __future__ import annotations

import shutil
import uuid


def assert_unavailable(response, path) -> None:
    assert response.status_code == 503
    body = response.get_json()
    assert body["name"] == "ServiceUnavailableError"
    uuid.UUID(body["id"])
    assert "database" in body["message"]
    assert str(path) not in response.get_data(as_text=True)


def test_health__database_readable__200_ok_without_token(client):
    # When
    response = client.get("/health")
    # Then
    assert response.status_code == 200
    assert response.get_json() == {"status": "ok"}
    assert response.headers["Cache-Control"] == "no-store"


def test_health__database_file_corrupted__503_envelope(make_app, db_path):
    # Given: an app whose database file is then overwritten with garbage
    client = make_app().test_client()
    assert client.get("/health").status_code == 200
    db_path.write_bytes(b"this is no sqlite database " * 400)
    # When
    response = client.get("/health")
    # Then
    assert_unavailable(response, db_path)


def test_health__database_directory_deleted__503_envelope(tmp_path, db_path, make_app):
    # Given: an app whose database lives in a directory that is then deleted
    folder = tmp_path / "data"
    folder.mkdir()
    path = folder / "flagadmin.db"
    shutil.copyfile(db_path, path)
    client = make_app(config={"DATABASE": str(path)}).test_client()
    assert client.get("/health").status_code == 200
    shutil.rmtree(folder)
    # When
    response = client.get("/health")
    # Then
    assert_unavailable(response, path)
    assert not folder.exists()  # the check did not recreate anything


def test_health__not_an_operation_of_the_admin_api(openapi_document):
    # The document describes the admin API only; /health is for load balancers
    assert "/health" not in openapi_document["paths"]


def test_health__real_server_under_base_uri_path__200(live_server):
    # Given
    server = live_server(args=("--base-uri-path", "/flags"))
    # When
    reply = server.request("GET", "/flags/health")
    # Then
    assert reply.status == 200
    assert reply.body == b'{"status":"ok"}'
