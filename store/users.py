"""Users, for the command line."""

from __future__ import annotations

from .engine import Connection


def id_by_username(conn: Connection, username: str) -> int | None:
    """Return the id of the user named ``username``, or None."""
    return conn.value("SELECT id FROM users WHERE username = ?", [username])
