"""SIGTERM lets in-flight requests finish before the process exits (real waitress)."""

from __future__ import annotations

import contextlib
import signal
import threading
import time

from flagadmin.store import connect
from flagadmin.store.tokens import digest, new_admin_token


def test_sigterm__in_flight_request__answered_then_clean_exit(live_server, database):
    # Given: a request that is in flight, blocked on the write lock that SCIM token generation
    # takes (SQLite: the database's one writer; PostgreSQL: its advisory lock), held here
    admin = new_admin_token()
    server = live_server(env={"FLAGADMIN_ADMIN_TOKEN": admin})
    blocker = contextlib.ExitStack()
    blocker.enter_context(blocker.enter_context(connect(database)).write("scim_tokens"))
    result: dict = {}

    def call() -> None:
        result["reply"] = server.request(
            "POST", "/api/admin/scim-settings/generate-new-token", {"Authorization": admin}
        )

    caller = threading.Thread(target=call)
    caller.start()
    time.sleep(0.5)
    # When: the server is told to stop, and only then the lock is released
    server.process.send_signal(signal.SIGTERM)
    time.sleep(0.5)
    assert server.process.poll() is None, "exited with a request in flight"
    blocker.close()  # commits, then closes the connection
    caller.join(30)
    # Then: the request got its answer, and the process exited cleanly
    assert result["reply"].status == 200
    assert b"scim_" in result["reply"].body
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
