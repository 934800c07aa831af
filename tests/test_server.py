"""Through a real waitress process on 127.0.0.1: what only a real server shows."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from flagadmin.store import connect, scim_tokens
from flagadmin.store.tokens import new_admin_token

from helpers import LiveServer

GENERATE = "/api/admin/scim-settings/generate-new-token"
SCIM = "/scim/v2/ServiceProviderConfig"


def test_serve__twenty_concurrent_generations__exactly_one_scim_token_accepted(live_server, database):
    # Given: a server whose admin token comes from FLAGADMIN_ADMIN_TOKEN
    admin = new_admin_token()
    server = live_server(env={"FLAGADMIN_ADMIN_TOKEN": admin})
    # When: 20 clients generate SCIM tokens at once
    with ThreadPoolExecutor(max_workers=20) as pool:
        results = list(
            pool.map(lambda _: server.request("POST", GENERATE, {"Authorization": admin}), range(20))
        )
    # Then: all succeeded, all distinct, and exactly one is accepted by the SCIM API
    assert [reply.status for reply in results] == [200] * 20
    generated = [reply.json()["token"] for reply in results]
    assert len(set(generated)) == 20
    accepted = [
        t for t in generated if server.request("GET", SCIM, {"Authorization": f"Bearer {t}"}).status == 200
    ]
    assert len(accepted) == 1
    with connect(database) as conn:
        assert scim_tokens.active_count(conn) == 1


def test_serve__fixed_admin_token__valid_on_every_start_and_idempotent(live_server, database):
    admin = new_admin_token()
    for _ in range(2):
        server = live_server(env={"FLAGADMIN_ADMIN_TOKEN": admin})
        reply = server.request("GET", "/api/admin/ui-config", {"Authorization": admin})
        assert reply.status == 200 and reply.json()["version"]
        server.stop()
    with connect(database) as conn:
        assert conn.value("SELECT count(*) FROM api_tokens WHERE kind = 'admin'") == 1


def test_serve__no_admin_token__creates_and_prints_one(live_server):
    server = live_server()
    printed = server.log.read_text()
    token = next(word for word in printed.split() if word.startswith("*:*."))
    assert server.request("GET", "/api/admin/ui-config", {"Authorization": token}).status == 200


def test_serve__base_uri_path__operations_under_the_prefix(live_server):
    admin = new_admin_token()
    server = live_server(env={"FLAGADMIN_ADMIN_TOKEN": admin}, args=("--base-uri-path", "/flags"))
    reply = server.request("GET", "/flags/api/admin/ui-config", {"Authorization": admin})
    assert reply.status == 200
    assert reply.json()["baseUriPath"] == "/flags"
    assert server.request("GET", "/api/admin/ui-config", {"Authorization": admin}).status == 404


def test_serve__demo_on_empty_database__seeded(tmp_path):
    admin = new_admin_token()
    server = LiveServer(tmp_path / "empty.db", env={"FLAGADMIN_ADMIN_TOKEN": admin}, args=("--demo",))
    try:
        reply = server.request("GET", "/api/admin/addons/1/events?limit=1", {"Authorization": admin})
        assert reply.status == 200
        assert len(reply.json()["integrationEvents"]) == 1
    finally:
        server.stop()
