"""Integration configurations (the reference server's "addons"): reading, writing, deleting.

A configuration is one ``integrations`` row (the reference server's fields; ``events``,
``projects``, ``environments`` and ``parameters`` as JSON text) and, for those made through the
API, one ``integration_options`` row (flagadmin's own: when it was created, its delivery window
and the retention of its log). Rows come back as dicts::

    {"id": int, "provider": str, "description": str | None, "enabled": bool,
     "events": [str], "projects": [str], "environments": [str], "parameters": {str: Any},
     "created_at": str | None, "max_in_flight": int | None, "events_keep": int | None,
     "events_max_age": str | None}

``None`` options mean the instance's defaults (``FLAGADMIN_*`` settings).
"""

from __future__ import annotations

from typing import Any

import orjson

from . import integration_events
from .engine import Connection

_SELECT = (
    "SELECT i.id, i.provider, i.description, i.enabled, i.events, i.projects, i.environments,"
    " i.parameters, o.created_at, o.max_in_flight, o.events_keep, o.events_max_age"
    " FROM integrations i LEFT JOIN integration_options o ON o.integration_id = i.id"
)

#: The option columns of ``integration_options`` a caller may set.
OPTIONS = ("max_in_flight", "events_keep", "events_max_age")


def _decoded(text: str | None, empty: Any) -> Any:
    if text is None:
        return empty
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return empty


def _row(row: dict[str, Any]) -> dict[str, Any]:
    return {
        **row,
        "enabled": bool(row["enabled"]),
        "events": _decoded(row["events"], []),
        "projects": _decoded(row["projects"], []),
        "environments": _decoded(row["environments"], []),
        "parameters": _decoded(row["parameters"], {}),
    }


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


def list_all(conn: Connection) -> list[dict[str, Any]]:
    """Every integration configuration, by id."""
    return [_row(row) for row in conn.all(_SELECT + " ORDER BY i.id")]


def get(conn: Connection, integration_id: int) -> dict[str, Any] | None:
    """The configuration ``integration_id``, or None."""
    row = conn.one(_SELECT + " WHERE i.id = ?", [integration_id])
    return None if row is None else _row(row)


#: The largest id (SQLite's and PostgreSQL's signed 64-bit integer).
MAX_ID = 2**63 - 1


def next_id(conn: Connection) -> int:
    """The id of the next configuration: one more than the largest stored, as SQLite gives a
    rowid, or the lowest free id when that one is :data:`MAX_ID` (seeds may give any id).

    Ids are given explicitly on both engines (seeded configurations keep the reference
    server's ids, which an identity sequence would not know about). Call inside the write
    transaction of the insert, under the ``integrations`` write lock, so that two creations
    never read the same largest id.
    """
    top = conn.value("SELECT max(id) FROM integrations")
    if top is None:
        return 1
    if top < MAX_ID:
        return top + 1
    return conn.value(
        "SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM integrations WHERE id = 1) THEN 1"
        " ELSE (SELECT min(i.id) + 1 FROM integrations i WHERE i.id < ? AND NOT EXISTS"
        "  (SELECT 1 FROM integrations j WHERE j.id = i.id + 1)) END",
        [MAX_ID],
    )


def insert(conn: Connection, config: dict[str, Any], *, created_at: str) -> int:
    """Store a new configuration (keys of the module's row shape but ``id`` and
    ``created_at``); return its id (:func:`next_id`). Call inside a write transaction with its
    event, under the ``integrations`` write lock.

    :raise flagadmin.store.Conflict: another process took the same id meanwhile (only when
        the caller did not hold the lock).
    """
    integration_id = next_id(conn)
    conn.run(
        "INSERT INTO integrations (id, provider, description, enabled, events, projects, environments,"
        " parameters) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [
            integration_id,
            config["provider"],
            config.get("description"),
            int(config["enabled"]),
            _json(config["events"]),
            _json(config.get("projects") or []),
            _json(config.get("environments") or []),
            _json(config["parameters"]),
        ],
    )
    conn.run(
        "INSERT INTO integration_options (integration_id, created_at, max_in_flight, events_keep,"
        " events_max_age) VALUES (?, ?, ?, ?, ?)",
        [integration_id, created_at, *(config.get(name) for name in OPTIONS)],
    )
    return integration_id


def update(conn: Connection, integration_id: int, config: dict[str, Any]) -> None:
    """Replace the fields of configuration ``integration_id`` with those of ``config`` (the
    module's row shape); its ``created_at`` stays. Call inside a write transaction."""
    conn.run(
        "UPDATE integrations SET provider = ?, description = ?, enabled = ?, events = ?, projects = ?,"
        " environments = ?, parameters = ? WHERE id = ?",
        [
            config["provider"],
            config.get("description"),
            int(config["enabled"]),
            _json(config["events"]),
            _json(config.get("projects") or []),
            _json(config.get("environments") or []),
            _json(config["parameters"]),
            integration_id,
        ],
    )
    options = [config.get(name) for name in OPTIONS]
    changed = conn.run(
        "UPDATE integration_options SET max_in_flight = ?, events_keep = ?, events_max_age = ?"
        " WHERE integration_id = ?",
        [*options, integration_id],
    )
    if not changed:
        conn.run(
            "INSERT INTO integration_options (integration_id, created_at, max_in_flight, events_keep,"
            " events_max_age) VALUES (?, NULL, ?, ?, ?)",
            [integration_id, *options],
        )


def set_enabled(conn: Connection, integration_id: int, enabled: bool) -> int:
    """Enable or disable configuration ``integration_id``; return 1 when it changed, else 0."""
    return conn.run(
        "UPDATE integrations SET enabled = ? WHERE id = ? AND enabled <> ?",
        [int(enabled), integration_id, int(enabled)],
    )


def delete(conn: Connection, integration_id: int) -> bool:
    """Delete configuration ``integration_id`` with its log (4.1), its deliveries and its
    options, all in the caller's write transaction (the log's foreign key has no cascade).
    Return False when there was no such configuration."""
    with conn.write("integrations"):
        if conn.dialect == "postgresql":
            # The row first: writers that reference it (an event's outbox rows, a log row)
            # lock it too, so they either finish before this delete or find it gone.
            conn.run("SELECT id FROM integrations WHERE id = ? FOR UPDATE", [integration_id])
        conn.run("DELETE FROM integration_deliveries WHERE integration_id = ?", [integration_id])
        integration_events.delete_log(conn, integration_id)
        conn.run("DELETE FROM integration_options WHERE integration_id = ?", [integration_id])
        return conn.run("DELETE FROM integrations WHERE id = ?", [integration_id]) == 1
