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
    """The two version counters at one moment: ``content`` and ``credentials``."""

    content: int
    credentials: int


def versions(conn: Connection) -> Versions:
    """Return both version counters, read at most once per commit anywhere.

    The counters are read again only when the connection's commit counter has moved (someone
    else committed) or this connection committed itself; otherwise the values read last
    still hold, and the answer costs one ``PRAGMA`` and no table access.
    """
    counter = conn.commit_counter()  # None: the engine has none, so read every time
    memo = conn.memo.get("versions")
    if counter is not None and memo is not None and memo[0] == counter:
        return memo[1]
    rows = conn.all("SELECT key, value FROM settings WHERE key IN ('content_version', 'credentials_version')")
    values = {row["key"]: int(row["value"]) for row in rows}
    found = Versions(values["content_version"], values["credentials_version"])
    conn.memo["versions"] = (counter, found)
    return found
