"""Archived feature flags (spec 4.4), most recently archived first."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import sqlite_utils

from .visibility import visible


def archived_features(
    db: sqlite_utils.Database, user_id: int | None, sees_all: bool
) -> Iterator[dict[str, Any]]:
    """Yield the archived flags of the projects the caller sees, newest archival first.

    Items carry every field of spec 2.6: ``name, type, description, project (project id),
    stale, impressionData, createdAt, archivedAt, lastSeenAt`` and ``environments`` as JSON
    text of ``[{"name", "lastSeenAt", "enabled"}]`` ordered by name.
    """
    cursor = db.execute(
        "SELECT f.name, f.type, f.description, f.project_id, f.stale, f.impression_data,"
        " f.created_at, f.archived_at, f.last_seen_at,"
        " (SELECT json_group_array(json_object('name', e.name, 'lastSeenAt', e.last_seen_at,"
        "     'enabled', json(CASE WHEN e.enabled THEN 'true' ELSE 'false' END)))"
        "   FROM (SELECT * FROM feature_environments WHERE feature_name = f.name ORDER BY name) e)"
        " FROM features f"
        f" WHERE f.archived_at IS NOT NULL AND {visible('f.project_id')}"
        " ORDER BY f.archived_at DESC, f.name",
        {"user_id": user_id, "sees_all": int(sees_all)},
    )
    for r in cursor:
        yield {
            "name": r[0],
            "type": r[1],
            "description": r[2],
            "project": r[3],
            "stale": bool(r[4]),
            "impressionData": bool(r[5]),
            "createdAt": r[6],
            "archivedAt": r[7],
            "lastSeenAt": r[8],
            "environments": r[9],
        }
