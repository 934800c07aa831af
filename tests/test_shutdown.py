"""SIGTERM lets in-flight requests finish before the process exits (real waitress)."""

from __future__ import annotations

import contextlib
import signal
import socket
import time
from pathlib import Path

from flagadmin.store import connect
from flagadmin.store.tokens import digest, new_admin_token

from helpers import wait_until


def unread_bytes(server_port: int, client_port: int) -> int | None:
    """Bytes the kernel holds for the server's end of 127.0.0.1:``client_port`` that the server
    has not read yet (Linux's /proc/net/tcp); None when there is no such connection."""
    ends = (f"0100007F:{server_port:04X}", f"0100007F:{client_port:04X}")
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if (fields[1], fields[2]) == ends:
            return int(fields[4].split(":")[1], 16)
    return None


def test_sigterm__in_flight_request__answered_then_clean_exit(live_server, database):
    # Given: a request that is in flight, blocked on the write lock that SCIM token generation
    # takes (SQLite: the database's one writer; PostgreSQL: its advisory lock), held here. In
    # flight means read by the server: its bytes have left the kernel's buffer for the server
    # (a request still there when the signal comes is not one the server has received)
    admin = new_admin_token()
    server = live_server(env={"FLAGADMIN_ADMIN_TOKEN": admin})
    blocker = contextlib.ExitStack()
    blocker.enter_context(blocker.enter_context(connect(database)).write("scim_tokens"))
    caller = socket.create_connection(("127.0.0.1", server.port), timeout=60)
    caller.sendall(
        b"POST /api/admin/scim-settings/generate-new-token HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Authorization: " + admin.encode() + b"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    wait_until(lambda: unread_bytes(server.port, caller.getsockname()[1]) == 0, timeout=30)
    # When: the server is told to stop, and only then the lock is released
    server.process.send_signal(signal.SIGTERM)
    wait_until(lambda: "finishing in-flight requests" in server.log.read_text(), timeout=30)
    for _ in range(10):  # it keeps running meanwhile (looked at over half a second)
        assert server.process.poll() is None, "exited with a request in flight"
        time.sleep(0.05)
    blocker.close()  # commits, then closes the connection
    with caller:
        answer = b"".join(iter(lambda: caller.recv(65536), b""))
    # Then: the request got its answer, and the process exited cleanly
    assert answer.startswith(b"HTTP/1.1 200 "), answer[:200]
    assert b"scim_" in answer
    assert server.process.wait(15) == 0
    # and new connections are no longer served
    try:
        refused = server.request("GET", "/docs/openapi.json", timeout=2).status is None
    except OSError:
        refused = True
    assert refused


def test_sigterm__token_used_just_before__its_last_use_written_at_the_stop(live_server, database):
    # Given: a server, and a token it has never seen
    admin = new_admin_token()
    server = live_server(env={"FLAGADMIN_ADMIN_TOKEN": admin})
    with connect(database) as conn:
        token_id = conn.value("SELECT id FROM api_tokens WHERE digest = ?", [digest(admin)])
        never_used = conn.value("SELECT last_used_at FROM api_tokens WHERE id = ?", [token_id]) is None
    assert never_used
    # When: the token is used, and the server told to stop at once (before its batch of token
    # uses, a second later, would have been written)
    assert server.request("GET", "/api/admin/ui-config", {"Authorization": admin}).status == 200
    server.process.send_signal(signal.SIGTERM)
    # Then: the process exits cleanly, having written the use on its way out
    assert server.process.wait(15) == 0
    with connect(database) as conn:
        assert conn.value("SELECT last_used_at FROM api_tokens WHERE id = ?", [token_id]) is not None


def test_sigterm__many_at_once__one_clean_exit(live_server):
    """systemd's KillMode=control-group sends SIGTERM to every process of the service at once,
    and the one-file build's launcher forwards its own to the server: several SIGTERMs, even
    one arriving while the handler of the first still runs, must give one graceful stop and
    exit 0, never a handler waiting on a lock its own interrupted run holds."""
    # Given: a server that has answered a request
    server = live_server()
    assert server.request("GET", "/health").status == 200
    # When: a burst of SIGTERMs, as fast as they can be sent
    for _ in range(500):
        with contextlib.suppress(ProcessLookupError):
            server.process.send_signal(signal.SIGTERM)
    # Then
    assert server.process.wait(15) == 0
