"""Through a real waitress process on 127.0.0.1: what only a real server shows."""

from __future__ import annotations

import http.client
import json
from concurrent.futures import ThreadPoolExecutor

from flagadmin.store import scim_tokens
from flagadmin.store.db import connect
from flagadmin.store.tokens import new_admin_token

GENERATE = "/api/admin/scim-settings/generate-new-token"
SCIM = "/scim/v2/ServiceProviderConfig"


def request(server, method: str, path: str, headers: dict[str, str]) -> tuple[int, dict, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        conn.request(method, path, headers=headers)
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), json.loads(response.read() or b"null")
    finally:
        conn.close()


def test_serve__twenty_concurrent_generations__exactly_one_scim_token_accepted(live_server, db_path):
    # Given: a server whose admin token comes from FLAGADMIN_ADMIN_TOKEN
    admin = new_admin_token()
    server = live_server(env={"FLAGADMIN_ADMIN_TOKEN": admin})
    # When: 20 clients generate SCIM tokens at once
    with ThreadPoolExecutor(max_workers=20) as pool:
        results = list(
            pool.map(lambda _: request(server, "POST", GENERATE, {"Authorization": admin}), range(20))
        )
    # Then: all succeeded, all distinct, and exactly one is accepted by the SCIM API
    assert [status for status, _, _ in results] == [200] * 20
    generated = [body["token"] for _, _, body in results]
    assert len(set(generated)) == 20
    accepted = [
        t for t in generated if request(server, "GET", SCIM, {"Authorization": f"Bearer {t}"})[0] == 200
    ]
    assert len(accepted) == 1
    db = connect(db_path)
    assert scim_tokens.active_count(db) == 1
    db.close()


def test_serve__fixed_admin_token__valid_on_every_start_and_idempotent(live_server, db_path):
    admin = new_admin_token()
    for _ in range(2):
        server = live_server(env={"FLAGADMIN_ADMIN_TOKEN": admin})
        status, _, body = request(server, "GET", "/api/admin/ui-config", {"Authorization": admin})
        assert status == 200 and body["version"]
        server.stop()
    db = connect(db_path)
    assert db.execute("SELECT count(*) FROM api_tokens WHERE kind = 'admin'").fetchone()[0] == 1
    db.close()


def test_serve__no_admin_token__creates_and_prints_one(live_server):
    server = live_server()
    printed = server.log.read_text()
    token = next(word for word in printed.split() if word.startswith("*:*."))
    status, _, _ = request(server, "GET", "/api/admin/ui-config", {"Authorization": token})
    assert status == 200


def test_serve__base_uri_path__operations_under_the_prefix(live_server):
    admin = new_admin_token()
    server = live_server(env={"FLAGADMIN_ADMIN_TOKEN": admin}, args=("--base-uri-path", "/flags"))
    status, _, body = request(server, "GET", "/flags/api/admin/ui-config", {"Authorization": admin})
    assert status == 200
    assert body["baseUriPath"] == "/flags"
    assert request(server, "GET", "/api/admin/ui-config", {"Authorization": admin})[0] == 404


def test_serve__demo_on_empty_database__seeded(tmp_path):
    from helpers import LiveServer

    admin = new_admin_token()
    server = LiveServer(tmp_path / "empty.db", env={"FLAGADMIN_ADMIN_TOKEN": admin}, args=("--demo",))
    try:
        status, _, body = request(
            server, "GET", "/api/admin/addons/1/events?limit=1", {"Authorization": admin}
        )
        assert status == 200
        assert len(body["integrationEvents"]) == 1
    finally:
        server.stop()
