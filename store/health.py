"""The database check behind ``GET /health``."""

from __future__ import annotations

import sqlite_utils


def check(db: sqlite_utils.Database) -> None:
    """Run a cheap query that reads the database file.

    :raise sqlite3.Error: the file cannot be opened or read, or is not a flagadmin database.
    """
    db.execute("SELECT count(*) FROM settings").fetchone()
