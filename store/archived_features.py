"""Archived feature flags (spec 4.4), most recently archived first.

Each flag's JSON text is built by the database, one variant per engine, and both write the
same bytes for the same data: keys in spec 2.6's order, no spaces, strings escaped alike
(``"`` and ``\\`` and the control characters, ``\\n``-style where JSON has a short form and
``\\u00xx`` otherwise; anything else as it is), booleans ``true``/``false``, absent values
``null``. Names order bytewise on both engines (SQLite's BINARY, PostgreSQL's ``"C"``), whatever
the PostgreSQL database's own collation. ``tests/test_archived_features.py`` compares the two
engines' answers on the demo data.
"""

from __future__ import annotations

from collections.abc import Iterator

from .engine import Connection
from .visibility import DIALECTS, visible

#: A 0/1 column as a JSON boolean. ``json('true')`` is a constant, which SQLite evaluates once
#: per statement; ``json(CASE ... THEN 'true' ...)`` parsed a literal for every flag and every
#: environment (a Viewer's 4.4 of 100 flags: about 495 -> 450 µs, the same bytes).
_BOOLEAN = "CASE WHEN {} = 1 THEN json('true') ELSE json('false') END"

#: One archived flag as a JSON object with every field of spec 2.6, built by SQLite:
#: ``json_object`` writes compact JSON in the order of its arguments.
_SQLITE_FEATURE_JSON = (
    "json_object('name', f.name, 'type', f.type, 'description', f.description,"
    " 'project', f.project_id, 'stale', " + _BOOLEAN.format("f.stale") + ","
    " 'impressionData', " + _BOOLEAN.format("f.impression_data") + ","
    " 'createdAt', f.created_at, 'archivedAt', f.archived_at, 'lastSeenAt', f.last_seen_at,"
    " 'environments', json((SELECT json_group_array(json_object('name', e.name,"
    "     'lastSeenAt', e.last_seen_at, 'enabled', " + _BOOLEAN.format("e.enabled") + "))"
    "   FROM (SELECT * FROM feature_environments WHERE feature_name = f.name ORDER BY name) e)))"
)

#: The same object built by PostgreSQL. ``json_build_object`` and ``json_agg`` put spaces after
#: their colons and commas; ``row_to_json`` writes a row compactly, its columns as keys in
#: their order, a boolean column as true/false and a ``json`` column as it is. The environments
#: are joined with ``string_agg`` for the same reason (no space after the comma).
_POSTGRESQL_FEATURE_JSON = (
    "SELECT f.name, f.type, f.description, f.project_id AS project, f.stale = 1 AS stale,"
    ' f.impression_data = 1 AS "impressionData", f.created_at AS "createdAt",'
    ' f.archived_at AS "archivedAt", f.last_seen_at AS "lastSeenAt",'
    " (SELECT CAST(coalesce('[' || string_agg(CAST(row_to_json(e) AS TEXT), ','"
    "     ORDER BY e.name COLLATE \"C\") || ']', '[]') AS JSON)"
    '   FROM (SELECT fe.name, fe.last_seen_at AS "lastSeenAt", fe.enabled = 1 AS enabled'
    "     FROM feature_environments fe WHERE fe.feature_name = f.name) e) AS environments"
)

_ARCHIVED = {
    ("sqlite", sees_all): (
        f"SELECT {_SQLITE_FEATURE_JSON} AS feature FROM features f"
        f" WHERE f.archived_at IS NOT NULL AND {visible('f.project_id', sees_all, 'sqlite')}"
        " ORDER BY f.archived_at DESC, f.name"
    )
    for sees_all in (False, True)
} | {
    ("postgresql", sees_all): (
        "SELECT CAST(row_to_json(a) AS TEXT) AS feature FROM features f"
        f" CROSS JOIN LATERAL ({_POSTGRESQL_FEATURE_JSON}) a"
        f" WHERE f.archived_at IS NOT NULL AND {visible('f.project_id', sees_all, 'postgresql')}"
        ' ORDER BY f.archived_at DESC, f.name COLLATE "C"'
    )
    for sees_all in (False, True)
}

_COUNT = {
    (dialect, sees_all): "SELECT count(*) FROM features f"
    f" WHERE f.archived_at IS NOT NULL AND {visible('f.project_id', sees_all, dialect)}"
    for dialect in DIALECTS
    for sees_all in (False, True)
}


def archived_features_json(conn: Connection, user_id: int | None, sees_all: bool) -> Iterator[str]:
    """Yield each archived flag of the projects the caller sees as JSON text, newest archival
    first (ties by name).

    Each object carries every field of spec 2.6: ``name, type, description, project (project
    id), stale, impressionData, createdAt, archivedAt, lastSeenAt, environments`` (``[{name,
    lastSeenAt, enabled}]`` by name). Rows come from the database as they are read (one
    statement, so one snapshot): memory stays flat whatever the number of flags. Until the
    iterator is exhausted or closed, run nothing else on ``conn``.
    """
    return conn.stream(_ARCHIVED[conn.dialect, sees_all], {"user_id": user_id})


def count(conn: Connection, user_id: int | None, sees_all: bool) -> int:
    """How many archived flags of the projects the caller sees there are (one index count)."""
    return conn.value(_COUNT[conn.dialect, sees_all], {"user_id": user_id})
