"""System events (spec 2.3, 6): writing them, reading them back in their wire shape."""

from __future__ import annotations

from typing import Any

import orjson

from .engine import Connection


def _json(value: Any) -> str | None:
    return None if value is None else orjson.dumps(value).decode()


def insert(
    conn: Connection,
    *,
    type: str,
    created_at: str,
    created_by: str,
    created_by_user_id: int | None,
    project: str | None = None,
    environment: str | None = None,
    feature_name: str | None = None,
    data: Any = None,
    pre_data: Any = None,
    tags: list[dict[str, str]] | None = None,
) -> int:
    """Store one event (call inside the change's write transaction); return its id, which is
    higher than every id given before it (SQLite: AUTOINCREMENT; PostgreSQL: an identity
    column, whose ids are never reused either; there, two transactions committing together
    may become visible in the other order)."""
    return conn.insert(
        "INSERT INTO events (type, created_at, created_by, created_by_user_id, project, environment,"
        " feature_name, data, pre_data, tags) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            type,
            created_at,
            created_by,
            created_by_user_id,
            project,
            environment,
            feature_name,
            _json(data),
            _json(pre_data),
            _json(tags),
        ],
    )


def get(conn: Connection, event_id: int) -> dict[str, Any] | None:
    """The event ``event_id`` in its wire shape (spec 2.3): ``{id, createdAt, type, createdBy,
    createdByUserId, environment, project, featureName, data, preData, tags}``, or None."""
    row = conn.one(
        "SELECT id, created_at, type, created_by, created_by_user_id, environment, project,"
        " feature_name, data, pre_data, tags FROM events WHERE id = ?",
        [event_id],
    )
    return None if row is None else wire(row)


def wire(row: dict[str, Any]) -> dict[str, Any]:
    """An ``events`` row as the event object of spec 2.3 (JSON columns decoded)."""

    def decoded(text: str | None) -> Any:
        return None if text is None else orjson.loads(text)

    return {
        "id": row["id"],
        "createdAt": row["created_at"],
        "type": row["type"],
        "createdBy": row["created_by"],
        "createdByUserId": row["created_by_user_id"],
        "environment": row["environment"],
        "project": row["project"],
        "featureName": row["feature_name"],
        "data": decoded(row["data"]),
        "preData": decoded(row["pre_data"]),
        "tags": decoded(row["tags"]),
    }


def latest(conn: Connection, limit: int = 50, type: str | None = None) -> list[dict[str, Any]]:
    """The newest ``limit`` events (of ``type``, when given), newest first, in wire shape."""
    rows = conn.all(
        "SELECT id, created_at, type, created_by, created_by_user_id, environment, project,"
        " feature_name, data, pre_data, tags FROM events"
        " WHERE (CAST(:type AS TEXT) IS NULL OR type = :type) ORDER BY id DESC LIMIT :limit",
        {"type": type, "limit": limit},
    )
    return [wire(row) for row in rows]
