"""Per-thread database access for request code.

Each waitress thread opens one connection on its first request and keeps it for the life of
the app: opening a connection and setting its pragmas costs more than most requests. A
connection never leaves its thread. A request that failed with a transaction still open has it
rolled back at teardown, so the thread's next request starts clean.
"""

from __future__ import annotations

from flask import Flask, request

from ..store import Connection, connect, settings
from .state import state


def connection() -> Connection:
    """Return the calling thread's connection to the app's database, opened on first use.

    :raise flagadmin.store.Unavailable: the database cannot be opened.
    """
    app_state = state()
    conn = getattr(app_state.connections, "conn", None)
    if conn is None:
        conn = app_state.connections.conn = connect(
            app_state.database, busy_timeout_ms=app_state.busy_timeout_ms
        )
    return conn


#: Where a request keeps the versions it read (its WSGI environ lives exactly as long as it).
VERSIONS = "flagadmin.versions"


def versions() -> settings.Versions:
    """The content and credentials versions, read once per request (at its first use).

    Everything a request checks against them (the token it came with, a cached answer) is
    checked against one reading.
    """
    found = request.environ.get(VERSIONS)
    if found is None:
        found = request.environ[VERSIONS] = settings.versions(connection())
    return found


def end_transaction(exc: BaseException | None = None) -> None:
    """Roll back a transaction a failed request left open, so the next one starts clean."""
    conn = getattr(state().connections, "conn", None)
    if conn is not None:
        conn.rollback()


def init_app(app: Flask) -> None:
    """Roll back whatever a request leaves open, at the end of each request."""
    app.teardown_appcontext(end_transaction)
