"""Archived feature flags (spec 4.4), most recently archived first."""

from __future__ import annotations

from collections.abc import Iterator

from .engine import Connection
from .visibility import visible

_BOOLEAN = "json(CASE WHEN {} THEN 'true' ELSE 'false' END)"

#: One archived flag as a JSON object with every field of spec 2.6, built by SQLite.
_FEATURE_JSON = (
    "json_object('name', f.name, 'type', f.type, 'description', f.description,"
    " 'project', f.project_id, 'stale', " + _BOOLEAN.format("f.stale") + ","
    " 'impressionData', " + _BOOLEAN.format("f.impression_data") + ","
    " 'createdAt', f.created_at, 'archivedAt', f.archived_at, 'lastSeenAt', f.last_seen_at,"
    " 'environments', json((SELECT json_group_array(json_object('name', e.name,"
    "     'lastSeenAt', e.last_seen_at, 'enabled', " + _BOOLEAN.format("e.enabled") + "))"
    "   FROM (SELECT * FROM feature_environments WHERE feature_name = f.name ORDER BY name) e)))"
)


def archived_features_json(conn: Connection, user_id: int | None, sees_all: bool) -> Iterator[str]:
    """Yield each archived flag of the projects the caller sees as JSON text, newest archival
    first (ties by name).

    Each object carries every field of spec 2.6: ``name, type, description, project (project
    id), stale, impressionData, createdAt, archivedAt, lastSeenAt, environments`` (``[{name,
    lastSeenAt, enabled}]`` by name). Rows are read one at a time: memory stays flat whatever
    the number of flags.
    """
    return conn.values(
        f"SELECT {_FEATURE_JSON} AS feature FROM features f"
        f" WHERE f.archived_at IS NOT NULL AND {visible('f.project_id')}"
        " ORDER BY f.archived_at DESC, f.name",
        {"user_id": user_id, "sees_all": int(sees_all)},
    )
