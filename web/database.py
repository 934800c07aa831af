"""Database access for request code: one connection per waitress thread (SQLite), or one
borrowed from the process's pool for each request (PostgreSQL).

On SQLite each thread takes one connection on its first request and keeps it for the life of
the app: opening a connection and setting its pragmas costs more than most requests. The
connection is one ``flagadmin serve`` opened and warmed before traffic
(:meth:`~flagadmin.web.state.AppState.prewarm`) while any is left, else a new one; either way
it is used by that thread alone from then on. On PostgreSQL a request borrows a connection from the app's
pool on first use and gives it back when the request ends (after a streamed body is sent).
Either way a request that failed with a transaction still open has it rolled back at teardown,
so the next request starts clean.
"""

from __future__ import annotations

import queue

from flask import Flask, g, request

from ..store import Connection, connect, settings
from .state import state


def connection() -> Connection:
    """Return the connection of the current request to the app's database.

    :raise flagadmin.store.Unavailable: the database cannot be opened or reached, or (on
        PostgreSQL) no pooled connection was free in time.
    """
    app_state = state()
    if app_state.pool is not None:
        conn = g.get("flagadmin_connection")
        if conn is None:
            conn = g.flagadmin_connection = app_state.pool.connect()
        return conn
    conn = getattr(app_state.connections, "conn", None)
    if conn is None:
        try:
            conn = app_state.warm_connections.get_nowait()
        except queue.Empty:
            conn = connect(app_state.database, busy_timeout_ms=app_state.busy_timeout_ms)
        app_state.connections.conn = conn
    return conn


#: Where a request keeps the versions it read (its WSGI environ lives exactly as long as it).
VERSIONS = "flagadmin.versions"


def versions() -> settings.Versions:
    """The content, credentials and rules versions, read once per request (at its first use).

    Everything a request checks against them (the token it came with, a cached answer) is
    checked against one reading.
    """
    found = request.environ.get(VERSIONS)
    if found is None:
        found = request.environ[VERSIONS] = settings.versions(connection())
    return found


def end_transaction(exc: BaseException | None = None) -> None:
    """Roll back a transaction a failed request left open; give a borrowed connection back."""
    app_state = state()
    if app_state.pool is not None:
        conn = g.pop("flagadmin_connection", None)
        if conn is not None:
            conn.rollback()
            conn.close()
        return
    conn = getattr(app_state.connections, "conn", None)
    if conn is not None:
        conn.rollback()


def init_app(app: Flask) -> None:
    """Roll back whatever a request leaves open, at the end of each request."""
    app.teardown_appcontext(end_transaction)
