"""Users, for the command line."""

from __future__ import annotations

import sqlite_utils


def id_by_username(db: sqlite_utils.Database, username: str) -> int | None:
    """Return the id of the user named ``username``, or None."""
    row = db.execute("SELECT id FROM users WHERE username = ?", [username]).fetchone()
    return None if row is None else row[0]
