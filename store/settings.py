"""Instance-wide values kept in the database (the ``settings`` table)."""

from __future__ import annotations

import uuid

import sqlite_utils

from .db import immediate


def instance_id(db: sqlite_utils.Database) -> str:
    """Return this instance's id (a UUID), creating it on first call (spec 2.5 instanceId)."""
    with immediate(db):
        db.execute(
            "INSERT OR IGNORE INTO settings (key, value) VALUES ('instance_id', ?)",
            [str(uuid.uuid4())],
        )
        return db.execute("SELECT value FROM settings WHERE key = 'instance_id'").fetchone()[0]


def data_version(db: sqlite_utils.Database) -> int:
    """Return the count of changes made so far to the data the operations read.

    Triggers in ``schema.sql`` bump it on every write to users, projects, members, flags,
    their environments and favorites: an answer computed at one version holds until it moves.
    """
    return int(db.execute("SELECT value FROM settings WHERE key = 'data_version'").fetchone()[0])
