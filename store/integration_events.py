"""The integration event log (spec 4.1): pages of one integration's events, newest first."""

from __future__ import annotations

from typing import Any

import sqlite_utils


def integration_exists(db: sqlite_utils.Database, integration_id: int) -> bool:
    """Return True when an integration configuration with ``integration_id`` exists."""
    row = db.execute("SELECT 1 FROM integrations WHERE id = ?", [integration_id]).fetchone()
    return row is not None


def page(db: sqlite_utils.Database, integration_id: int, limit: int, offset: int) -> list[dict[str, Any]]:
    """Return up to ``limit`` events of one integration, newest first, skipping ``offset``.

    Each item: ``{"id": str, "integrationId": int, "createdAt": str, "state": str,
    "stateDetails": str, "event": bytes (JSON text), "details": bytes (JSON text)}``.
    The offset is turned into a bound on ``seq`` (the gap-free per-integration number), so
    the cost is one index seek whatever the offset.
    """
    top = db.execute(
        "SELECT max(seq) FROM integration_events WHERE integration_id = ?", [integration_id]
    ).fetchone()[0]
    if top is None or offset >= top:
        return []
    rows = db.execute(
        "SELECT id, integration_id, created_at, state, state_details,"
        " CAST(event AS BLOB), CAST(details AS BLOB)"
        " FROM integration_events WHERE integration_id = ? AND seq <= ?"
        " ORDER BY seq DESC LIMIT ?",
        [integration_id, top - offset, limit],
    ).fetchall()
    return [
        {
            "id": str(row[0]),
            "integrationId": row[1],
            "createdAt": row[2],
            "state": row[3],
            "stateDetails": row[4],
            "event": row[5],
            "details": row[6],
        }
        for row in rows
    ]
