"""Through a real waitress process on 127.0.0.1: what only a real server shows."""

from __future__ import annotations

import socket
from concurrent.futures import ThreadPoolExecutor

import pytest

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


def _health(sock: socket.socket) -> bytes:
    """Send GET /health on ``sock`` and read its whole answer (headers and body)."""
    sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    answer = b""
    while b"\r\n\r\n" not in answer:
        answer += sock.recv(4096)
    head, _, body = answer.partition(b"\r\n\r\n")
    length = int(
        next(h for h in head.split(b"\r\n") if h.lower().startswith(b"content-length:")).split(b":")[1]
    )
    while len(body) < length:
        body += sock.recv(4096)
    return answer


def _open_idle(port: int, count: int, *, keep_alive: bool) -> list[socket.socket]:
    """``count`` connections to the server; with ``keep_alive``, each has been answered once
    (GET /health) and stays open, as a reverse proxy's pool keeps them; without, each is open
    and has sent nothing."""
    opened = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        opened.append(sock)
        if keep_alive:
            assert _health(sock).startswith(b"HTTP/1.1 200")
    return opened


@pytest.mark.same_on_both_engines
def test_serve__300_idle_keep_alive_and_100_silent_connections__health_still_answers(live_server):
    """Idle connections do not stop the server accepting (waitress's default limit was 100):
    with 300 answered keep-alive connections and 100 that sent nothing open (under the default
    limit, 500), a new one is still answered, as is one of the idle ones. Loopback only; every
    socket waits at most 10 s."""
    server = live_server()
    opened: list[socket.socket] = []
    try:
        # Given
        opened += _open_idle(server.port, 300, keep_alive=True)
        opened += _open_idle(server.port, 100, keep_alive=False)
        # When / Then: a new connection, and an idle keep-alive one, are answered
        assert server.request("GET", "/health", timeout=10).status == 200
        assert _health(opened[0]).startswith(b"HTTP/1.1 200")
    finally:
        for sock in opened:
            sock.close()


@pytest.mark.same_on_both_engines
def test_serve__connection_limit_setting__connections_past_it_wait_until_one_closes(live_server):
    """FLAGADMIN_CONNECTION_LIMIT: past it, a new connection is not served until one closes."""
    server = live_server(env={"FLAGADMIN_CONNECTION_LIMIT": "10"})
    opened = _open_idle(server.port, 10, keep_alive=False)
    try:
        with pytest.raises(TimeoutError):
            server.request("GET", "/health", timeout=1)
    finally:
        for sock in opened:
            sock.close()
    assert server.request("GET", "/health", timeout=10).status == 200


@pytest.mark.same_on_both_engines
def test_serve__idle_timeout_setting__silent_connection_closed(live_server):
    """FLAGADMIN_CONNECTION_IDLE_TIMEOUT: a connection that sends nothing is closed after it."""
    server = live_server(env={"FLAGADMIN_CONNECTION_IDLE_TIMEOUT": "1"})
    (sock,) = _open_idle(server.port, 1, keep_alive=False)
    try:
        assert sock.recv(1) == b""  # closed by the server (the socket waits at most 10 s)
    finally:
        sock.close()


@pytest.mark.same_on_both_engines
def test_serving__waitress_body_limit__above_every_limit_of_the_app():
    """The app answers every 413 for the bodies it limits (admin API, SCIM), in its own words:
    waitress's own plain-text 413 comes only past all of them."""
    from flagadmin import serving
    from flagadmin.app import DEFAULTS
    from flagadmin.directory.protocol import MAX_BODY_BYTES

    assert max(MAX_BODY_BYTES, DEFAULTS["MAX_CONTENT_LENGTH"]) < serving.MAX_REQUEST_BODY_SIZE


@pytest.mark.same_on_both_engines
@pytest.mark.parametrize(("size", "status"), [(1536 * 1024, 401), (3 * 1024 * 1024, 413)])
def test_serve__scim_body_between_1_and_4_mib__answered_by_scim_not_waitress(live_server, size, status):
    """A SCIM body under SCIM's 2 MiB reaches SCIM (here: 401, no token), and one over it gets
    SCIM's own 413: both as SCIM errors, never waitress's plain text (its limit was 1 MiB)."""
    server = live_server()
    body = b'{"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"], "x": "' + b"a" * size + b'"}'
    reply = server.request("POST", "/scim/v2/Users", {"Content-Type": "application/scim+json"}, body)
    assert reply.status == status
    assert reply.headers["content-type"].startswith("application/scim+json")
    assert reply.json()["status"] == str(status)
