"""System events (spec 2.3, 6): writing them, reading them back in their wire shape."""

from __future__ import annotations

import secrets
import time
import weakref
from typing import Any

import orjson

from . import deliveries
from .engine import Connection


def _json(value: Any) -> str | None:
    return None if value is None else orjson.dumps(value).decode()


#: The columns of an event row that :func:`insert` writes, in this order.
_COLUMNS = (
    "type",
    "created_at",
    "created_by",
    "created_by_user_id",
    "project",
    "environment",
    "feature_name",
    "data",
    "pre_data",
    "tags",
    "group_id",
)
_INSERT = f"INSERT INTO events ({', '.join(_COLUMNS)}) VALUES ({', '.join(':' + c for c in _COLUMNS)})"

#: PostgreSQL: the event and its outbox rows in one statement, one round trip (a
#: data-modifying CTE; the outbox insert reads the event's id from it).
_INSERT_WITH_DELIVERIES_POSTGRESQL = (
    f"WITH e AS ({_INSERT} RETURNING id),"
    f" d AS ({deliveries.outbox_insert('postgresql', '(SELECT id FROM e)')} RETURNING 1)"
    " SELECT (SELECT id FROM e) AS id, (SELECT count(*) FROM d) AS owed"
)


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
) -> tuple[int, int]:
    """Store one event with the deliveries it owes (call inside the change's write
    transaction): one pending delivery per matching integration, due at ``created_at``
    (:func:`flagadmin.store.deliveries.outbox_insert`). Return ``(event id, deliveries
    written)``.

    The id is higher than every id given before it (SQLite: AUTOINCREMENT; PostgreSQL: an
    identity column, whose ids are never reused either; there, two transactions committing
    together may become visible in the other order). On PostgreSQL the event and its
    deliveries are one statement, one round trip; on SQLite two statements (in-process, no
    round trip to save).
    """
    params = {
        "type": type,
        "created_at": created_at,
        "created_by": created_by,
        "created_by_user_id": created_by_user_id,
        "project": project,
        "environment": environment,
        "feature_name": feature_name,
        "data": _json(data),
        "pre_data": _json(pre_data),
        "tags": _json(tags),
        "group_id": _group(conn),
        "now": created_at,
        "quoted_type": deliveries.quoted_type(type),
    }
    if conn.dialect == "postgresql":
        row = conn.one(_INSERT_WITH_DELIVERIES_POSTGRESQL, params)
        _joined(conn, row["id"], params["group_id"])
        return row["id"], row["owed"]
    event_id = conn.insert(_INSERT, params)
    _joined(conn, event_id, params["group_id"])
    return event_id, deliveries.enqueue(conn, event_id, type, project, environment, created_at)


#: 2020-01-01T00:00:00Z in milliseconds since 1970: new groups count from there.
_GROUP_EPOCH_MS = 1_577_836_800_000

#: The transaction group of the write transaction open on each connection that has recorded an
#: event in it: ``(group, id of its first event)``, forgotten when it commits.
_groups: weakref.WeakKeyDictionary[Any, tuple[int, int]] = weakref.WeakKeyDictionary()


def _group(conn: Connection) -> int:
    """The ``group_id`` of an event about to be written in ``conn``'s open transaction: the one
    its earlier events have, or a new one (the reference's ``groupId``: the events of one
    change share it). A new group is the milliseconds since 2020 times 2^21 plus 21 random
    bits (a signed 64-bit integer until 2159): unique in practice, and increasing, so its index
    grows at one end. The group noted for the connection is checked against the first event's
    row (one seek): a transaction rolled back takes that row with it, so the next one never
    inherits its group."""
    noted = _groups.get(conn)
    if noted is not None:
        group, first = noted
        if conn.value("SELECT 1 FROM events WHERE id = ? AND group_id = ?", [first, group]):
            return group
        del _groups[conn]
    return (time.time_ns() // 1_000_000 - _GROUP_EPOCH_MS) << 21 | secrets.randbits(21)


def _joined(conn: Connection, event_id: int, group: int) -> None:
    """Note ``group`` for ``conn``'s transaction once its first event (``event_id``) is written;
    forget it when the transaction commits."""
    if conn not in _groups:
        _groups[conn] = (group, event_id)
        conn.after_commit(lambda: _groups.pop(conn, None))


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
