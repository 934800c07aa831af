"""The integration event log (spec 4.1): pages of one integration's events, newest first."""

from __future__ import annotations

from typing import Any

from .engine import Connection


def head(conn: Connection, integration_id: int) -> int | None:
    """Return the ``seq`` of the integration's newest event (0 without events), or None when
    no integration configuration has ``integration_id``.

    Rows are only ever appended at the head, so ``(integration, head)`` names one state of the
    log: a page read at the same head is the same page.
    """
    row = conn.one(
        "SELECT (SELECT coalesce(max(seq), 0) FROM integration_events WHERE integration_id = i.id)"
        " AS head FROM integrations i WHERE i.id = ?",
        [integration_id],
    )
    return None if row is None else row["head"]


def page(conn: Connection, integration_id: int, top: int, limit: int, offset: int) -> list[dict[str, Any]]:
    """Return up to ``limit`` events of one integration, newest first, skipping ``offset``,
    as of head ``top`` (see :func:`head`).

    Each item: ``{"id": str, "integrationId": int, "createdAt": str, "state": str,
    "stateDetails": str, "event": bytes (JSON text), "details": bytes (JSON text)}``.
    The offset is turned into a bound on ``seq`` (the gap-free per-integration number), so
    the cost is one index seek whatever the offset.
    """
    if offset >= top:
        return []
    return conn.all(
        "SELECT CAST(id AS TEXT) AS id, integration_id AS integrationId, created_at AS createdAt,"
        " state, state_details AS stateDetails, CAST(event AS BLOB) AS event,"
        " CAST(details AS BLOB) AS details"
        " FROM integration_events WHERE integration_id = ? AND seq <= ?"
        " ORDER BY seq DESC LIMIT ?",
        [integration_id, top - offset, limit],
    )
