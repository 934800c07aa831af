"""``GET /ready``: the reference server's readiness check. 200 ``{"health": "GOOD"}`` (its
``readyCheckSchema``) while the database answers a query; 503 with no body once it does not,
whether the SQLite file is gone or the PostgreSQL database is."""

from __future__ import annotations

import shutil
from urllib.parse import urlsplit

import psycopg
import pytest
from openapi_schema_validator import OAS30Validator

#: The reference's readyCheckSchema (Unleash 8.2.0), as its OpenAPI document declares it.
READY_CHECK_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["health"],
    "properties": {"health": {"type": "string", "enum": ["GOOD"]}},
}


def test_ready__database_answers__200_good_without_token(client):
    # When
    response = client.get("/ready")
    # Then
    assert response.status_code == 200
    assert response.get_json() == {"health": "GOOD"}
    OAS30Validator(READY_CHECK_SCHEMA).validate(response.get_json())
    assert response.headers["Content-Type"] == "application/json"
    assert response.headers["Cache-Control"] == "no-store"


def test_ready__head__200_without_body(client):
    response = client.head("/ready")
    assert response.status_code == 200
    assert response.get_data() == b""


def test_ready__not_an_operation_of_the_admin_api(openapi_document):
    assert "/ready" not in openapi_document["paths"]


def test_ready__database_gone__503_without_body_then_200_once_back(engine, database, make_app, request):
    # Given: an app that answered once
    client = make_app().test_client()
    assert client.get("/ready").status_code == 200
    # When: its database goes away (the SQLite file moved aside; the PostgreSQL database renamed,
    # its connections ended)
    if engine == "postgresql":
        server = request.getfixturevalue("postgres_server")
        name = urlsplit(database).path.lstrip("/")
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", [name])
            conn.execute(f'ALTER DATABASE "{name}" RENAME TO "{name}_away"')
    else:
        shutil.move(database, database + ".away")
    try:
        response = client.get("/ready")
    finally:
        if engine == "postgresql":
            with psycopg.connect(server, autocommit=True) as conn:
                conn.execute(f'ALTER DATABASE "{name}_away" RENAME TO "{name}"')
        else:
            shutil.move(database + ".away", database)
    # Then: 503, no body (as the reference's), and ready again once it is back
    assert response.status_code == 503
    assert response.get_data() == b""
    assert "Content-Type" not in response.headers
    assert response.headers["Retry-After"] == "1"
    assert response.headers["Cache-Control"] == "no-store"
    assert client.get("/ready").status_code == 200


def test_ready__database_file_corrupted__503(make_app, db_path):
    client = make_app().test_client()
    db_path.write_bytes(b"this is no sqlite database " * 400)
    assert client.get("/ready").status_code == 503


@pytest.mark.parametrize("path", ["/ready", "/health"])
def test_ready_and_health__real_server__200(live_server, path):
    server = live_server()
    reply = server.request("GET", path)
    assert reply.status == 200
    assert reply.json() == ({"health": "GOOD"} if path == "/ready" else {"status": "ok"})
