"""The integration event log (spec 4.1): pages of one integration's events, newest first."""

from __future__ import annotations

from typing import Any

import sqlite_utils


def head(db: sqlite_utils.Database, integration_id: int) -> int | None:
    """Return the ``seq`` of the integration's newest event (0 without events), or None when
    no integration configuration has ``integration_id``.

    The log is append-only, so ``(integration, head)`` names one state of it: a page read at
    the same head is the same page.
    """
    row = db.execute(
        "SELECT (SELECT coalesce(max(seq), 0) FROM integration_events WHERE integration_id = i.id)"
        " FROM integrations i WHERE i.id = ?",
        [integration_id],
    ).fetchone()
    return None if row is None else row[0]


def page(
    db: sqlite_utils.Database, integration_id: int, top: int, limit: int, offset: int
) -> list[dict[str, Any]]:
    """Return up to ``limit`` events of one integration, newest first, skipping ``offset``,
    as of head ``top`` (see :func:`head`).

    Each item: ``{"id": str, "integrationId": int, "createdAt": str, "state": str,
    "stateDetails": str, "event": bytes (JSON text), "details": bytes (JSON text)}``.
    The offset is turned into a bound on ``seq`` (the gap-free per-integration number), so
    the cost is one index seek whatever the offset.
    """
    if offset >= top:
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
