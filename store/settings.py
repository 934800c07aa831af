"""Instance-wide values kept in the database (the ``settings`` table)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from .engine import Connection


def instance_id(conn: Connection) -> str:
    """Return this instance's id (a UUID), creating it on first call (spec 2.5 instanceId)."""
    with conn.write("settings"):
        conn.run(
            "INSERT INTO settings (key, value) VALUES ('instance_id', ?) ON CONFLICT DO NOTHING",
            [str(uuid.uuid4())],
        )
        return conn.value("SELECT value FROM settings WHERE key = 'instance_id'")


def content_version(conn: Connection) -> int:
    """Return the content version: the count of changes made so far to the data that 4.2 and
    4.4 read.

    Triggers in ``schema.sql`` move it on every write to users, projects, members, flags,
    their environments and favorites: an answer computed at one version holds until it moves.
    """
    return int(conn.value("SELECT value FROM settings WHERE key = 'content_version'"))


def credentials_version(conn: Connection) -> int:
    """Return the credentials version: the count of changes that can invalidate a valid API
    token or change whom it acts as (revocation, expiry, root role, user removed).

    A token found valid at one credentials version is valid, as the same caller, until it
    moves (or the token's own expiry passes).
    """
    return int(conn.value("SELECT value FROM settings WHERE key = 'credentials_version'"))


@dataclass(frozen=True)
class Versions:
    """The version counters at one moment: ``content``, ``credentials`` and ``rules`` (the
    rules revision: ``rules_version``, moved by every write that can change what
    ``GET /api/client/features`` answers; triggers of ``schema.sql``'s "Rules revision")."""

    content: int
    credentials: int
    rules: int = 0


#: The version counters as one row: one step of SQLite's fewer than one row each took (each
#: step lets go of the GIL).
_VERSIONS = (
    "SELECT (SELECT value FROM settings WHERE key = 'content_version') AS content,"
    " (SELECT value FROM settings WHERE key = 'credentials_version') AS credentials,"
    " (SELECT value FROM settings WHERE key = 'rules_version') AS rules"
)


def versions(conn: Connection) -> Versions:
    """Return the version counters, read from the database (one row, one statement) at every
    call: a commit of any connection or process shows in the next call. A database without
    the rules revision's row (only a hand-made one) reads it as 0."""
    row = conn.one(_VERSIONS)
    return Versions(int(row["content"]), int(row["credentials"]), int(row["rules"] or 0))
