"""Archived feature flags (spec 4.4), most recently archived first.

Each archived flag's JSON object is stored in its wire bytes (``features.archived_item``,
schema version 9), made by the database when the flag or its environments are
written (``archived_feature_json`` and the triggers of ``schema.sql``;
``flagadmin_archived_item`` and the triggers of ``schema.postgresql.sql``), not by every
request: a 4.4 answer is the stored items of the caller's projects, in order, joined. Both
engines store the same bytes for the same data: keys in spec 2.6's order, no spaces, strings
escaped alike (``"`` and ``\\`` and the control characters, ``\\n``-style where JSON has a
short form and ``\\u00xx`` otherwise; anything else as it is), booleans ``true``/``false``,
absent values ``null``. Names order bytewise on both engines (SQLite's BINARY, PostgreSQL's
``"C"``), whatever the PostgreSQL database's own collation. ``tests/test_archived_features.py``
compares the two engines' answers on the demo data, and the stored items with what the
database makes from the flags after every kind of write.
"""

from __future__ import annotations

from collections.abc import Iterator

from .collation import BINARY
from .engine import Connection
from .visibility import DIALECTS, visible

#: The stored items of the archived flags the caller sees, in 4.4's order. On SQLite (its
#: plans, checked at the benchmark's size): for a caller who sees a few projects, their archived
#: flags from ``features_project_health`` (one range per project), then sorted; for a caller who
#: sees every project, in the order of ``features_archived_order``.
_ARCHIVED = {
    (dialect, sees_all): "SELECT archived_item FROM features"
    f" WHERE archived_at IS NOT NULL AND {visible('project_id', sees_all, dialect)}"
    f" ORDER BY archived_at DESC, name{BINARY[dialect]}"
    for dialect in DIALECTS
    for sees_all in (False, True)
}

_COUNT = {
    (dialect, sees_all): "SELECT count(*) FROM features"
    f" WHERE archived_at IS NOT NULL AND {visible('project_id', sees_all, dialect)}"
    for dialect in DIALECTS
    for sees_all in (False, True)
}


def archived_features_json(conn: Connection, user_id: int | None, sees_all: bool) -> Iterator[bytes]:
    """Yield each archived flag of the projects the caller sees as its stored JSON bytes (UTF-8),
    newest archival first (ties by name, by code point).

    Each object carries every field of spec 2.6: ``name, type, description, project (project
    id), stale, impressionData, createdAt, archivedAt, lastSeenAt, environments`` (``[{name,
    lastSeenAt, enabled}]`` by name, by code point). Rows come from the database as they are read (one
    statement, so one snapshot): memory stays flat whatever the number of flags. Until the
    iterator is exhausted or closed, run nothing else on ``conn``.
    """
    return conn.stream(_ARCHIVED[conn.dialect, sees_all], {"user_id": user_id})


def count(conn: Connection, user_id: int | None, sees_all: bool) -> int:
    """How many archived flags of the projects the caller sees there are (one index count)."""
    return conn.value(_COUNT[conn.dialect, sees_all], {"user_id": user_id})
