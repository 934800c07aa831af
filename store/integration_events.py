"""The integration event log (spec 4.1): pages of one integration's events, newest first; rows
appended by the delivery workers; retention that deletes the oldest rows first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .engine import Connection


@dataclass(frozen=True)
class LogBounds:
    """The ``seq`` of an integration's newest row (``head``, 0 without rows) and of its oldest
    (``low``, 0 without rows).

    Rows are appended at the head and retention deletes them from the low end only, so
    ``(integration, head, low)`` names one state of the log: a page read at the same bounds is
    the same page.
    """

    head: int
    low: int


def head(conn: Connection, integration_id: int) -> LogBounds | None:
    """Return the :class:`LogBounds` of the integration's log, or None when no integration
    configuration has ``integration_id``."""
    row = conn.one(
        "SELECT (SELECT coalesce(max(seq), 0) FROM integration_events WHERE integration_id = i.id) AS head,"
        " (SELECT coalesce(min(seq), 0) FROM integration_events WHERE integration_id = i.id) AS low"
        " FROM integrations i WHERE i.id = ?",
        [integration_id],
    )
    return None if row is None else LogBounds(row["head"], row["low"])


#: A page of one integration's log, newest first, from a bound on ``seq``: each row as 4.1
#: serves it, built by the database by concatenation. ``event`` and ``details`` are compact
#: JSON text and go in as they are; the two free texts are quoted by the engine's JSON quoting
#: (``json_quote`` on SQLite, ``to_json`` on PostgreSQL); ``created_at`` is RFC 3339 text and
#: needs none. SQLite's comes out as bytes (``CAST AS BLOB``), PostgreSQL's as text.
_PAGE = {
    "sqlite": (
        """SELECT CAST('{"id":"' || id || '","integrationId":' || integration_id"""
        """ || ',"createdAt":"' || created_at || '","state":' || json_quote(state)"""
        """ || ',"stateDetails":' || json_quote(state_details) || ',"event":' || event"""
        """ || ',"details":' || details || '}' AS BLOB)"""
        " FROM integration_events WHERE integration_id = ? AND seq <= ?"
        " ORDER BY seq DESC LIMIT ?"
    ),
    "postgresql": (
        """SELECT '{"id":"' || id || '","integrationId":' || integration_id"""
        """ || ',"createdAt":"' || created_at || '","state":' || to_json(state)::text"""
        """ || ',"stateDetails":' || to_json(state_details)::text || ',"event":' || event"""
        """ || ',"details":' || details || '}'"""
        " FROM integration_events WHERE integration_id = ? AND seq <= ?"
        " ORDER BY seq DESC LIMIT ?"
    ),
}


def page(conn: Connection, integration_id: int, top: int, limit: int, offset: int) -> list[bytes]:
    """Return up to ``limit`` events of one integration, newest first, skipping ``offset``,
    as of head ``top`` (see :func:`head`), each as the JSON bytes of its 4.1 item:
    ``{"id":"<id>","integrationId":<int>,"createdAt":"<RFC 3339>","state":"...",
    "stateDetails":"...","event":{...},"details":{...}}``, ``event`` and ``details`` embedded
    exactly as recorded.

    The offset is turned into a bound on ``seq`` (the gap-free per-integration number), so the
    cost is one index seek of ``(integration_id, seq)`` whatever the offset, on both engines;
    rows deleted by retention only make the oldest pages shorter. The rows are assembled by the
    database: no per-field Python objects, no re-encoding.
    """
    if offset >= top:
        return []
    items = list(conn.values(_PAGE[conn.dialect], [integration_id, top - offset, limit]))
    if conn.dialect == "postgresql":
        return [item.encode() for item in items]
    return items


def append(
    conn: Connection,
    integration_id: int,
    *,
    created_at: str,
    state: str,
    state_details: str,
    event: bytes | str,
    details: bytes | str,
) -> dict[str, Any] | None:
    """Append one row at the head of an integration's log, inside the caller's write
    transaction, so that ``seq`` = head + 1 is never taken twice and ids grow with ``seq``.
    ``event`` and ``details`` are compact JSON text. Return the row as 4.1 serves it (``id``
    a decimal string, ``event`` and ``details`` JSON text), or None when the integration no
    longer exists.

    On SQLite the write transaction is the database's one writer. On PostgreSQL the
    integration's row is locked first (``FOR NO KEY UPDATE``, held to the commit): appends to
    one log, from any process and whatever write lock their transaction took, queue there and
    each reads the head its predecessor committed; a configuration deleted meanwhile (its
    delete locks the row too) is found gone.
    """
    if isinstance(event, bytes):
        event = event.decode()
    if isinstance(details, bytes):
        details = details.decode()
    if conn.dialect == "postgresql":
        held = conn.value("SELECT id FROM integrations WHERE id = ? FOR NO KEY UPDATE", [integration_id])
        if held is None:
            return None
    seq = (
        conn.value(
            "SELECT coalesce(max(seq), 0) FROM integration_events WHERE integration_id = ?", [integration_id]
        )
        + 1
    )
    row_id = conn.insert(
        "INSERT INTO integration_events (integration_id, seq, created_at, state, state_details, event,"
        " details) VALUES (?, ?, ?, ?, ?, ?, ?)",
        [integration_id, seq, created_at, state, state_details, event, details],
    )
    return {
        "id": str(row_id),
        "integrationId": integration_id,
        "createdAt": created_at,
        "state": state,
        "stateDetails": state_details,
        "event": event,
        "details": details,
    }


#: Rows read per step when looking for the rows older than the retention age.
PRUNE_BATCH = 500

#: Rows one :func:`prune` deletes at most, so that one write transaction stays short: a log
#: with a backlog (a server started on an old file, a retention just lowered: 590,000 rows
#: at the reference size) is cut over several transactions, not in one that holds the write
#: lock for seconds while every request that writes waits.
PRUNE_MAX_ROWS = 1_000


def prune(
    conn: Connection, integration_id: int, *, keep: int, before: str, max_rows: int = PRUNE_MAX_ROWS
) -> int:
    """Apply retention to one integration's log, inside the caller's write transaction: keep
    its newest ``keep`` rows (``keep`` >= 1), and delete the rows created before ``before``
    (a stored timestamp), oldest first, at most ``max_rows`` of them (call again while it
    returns ``max_rows``). The newest row always stays, so the log keeps the integration's last
    outcome. Only a prefix of the log (its lowest ``seq``) is ever deleted, so 4.1's ``seq``
    bounds stay exact, whatever is left for the next call. Return how many rows were deleted.
    """
    # Two subqueries, not max() and min() in one: SQLite answers a lone min() or max() with one
    # index seek, but both together by reading every row of the integration.
    bounds = conn.one(
        "SELECT (SELECT coalesce(max(seq), 0) FROM integration_events WHERE integration_id = ?) AS head,"
        " (SELECT coalesce(min(seq), 0) FROM integration_events WHERE integration_id = ?) AS low",
        [integration_id, integration_id],
    )
    if not bounds["head"]:
        return 0
    # the highest cut this call may make (seq is gap-free: cut - low rows go)
    limit = min(bounds["head"], bounds["low"] + max(max_rows, 1))
    cut = min(max(bounds["low"], bounds["head"] - max(keep, 1) + 1), limit)
    if cut == bounds["low"]:
        oldest = conn.value(
            "SELECT created_at FROM integration_events WHERE integration_id = ? AND seq = ?",
            [integration_id, cut],
        )
        if oldest is None or oldest >= before:
            return 0  # within both bounds: the usual case, two index seeks
    # Rows are appended in time order, so the old ones form a prefix: extend the cut past it,
    # one batch at a time, stopping at the first row young enough (or at the limit).
    while cut < limit:
        rows = conn.all(
            "SELECT seq, created_at FROM integration_events WHERE integration_id = ? AND seq >= ?"
            " ORDER BY seq LIMIT ?",
            [integration_id, cut, PRUNE_BATCH],
        )
        young = next((r["seq"] for r in rows if r["created_at"] >= before), None)
        if young is not None:
            cut = min(max(cut, young), limit)
            break
        if not rows:
            break
        cut = min(rows[-1]["seq"] + 1, limit)
    if cut <= bounds["low"]:
        return 0
    return conn.run(
        "DELETE FROM integration_events WHERE integration_id = ? AND seq < ?", [integration_id, cut]
    )
