"""The integration event log (spec 4.1): pages of one integration's events, newest first; rows
appended by the delivery workers; retention that deletes the oldest rows first.
"""

from __future__ import annotations

from dataclasses import dataclass

import orjson

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


#: A page of one integration's log, newest first, from a bound on ``seq``: the stored items,
#: as they are (``item`` holds each row's 4.1 item in its wire bytes, made when the row was
#: appended), so the page is a join of stored bytes. Both engines store it as bytes (SQLite
#: BLOB, PostgreSQL bytea) and return it as bytes.
_PAGE = "SELECT item FROM integration_events WHERE integration_id = ? AND seq <= ? ORDER BY seq DESC LIMIT ?"


def page(conn: Connection, integration_id: int, top: int, limit: int, offset: int) -> list[bytes]:
    """Return up to ``limit`` events of one integration, newest first, skipping ``offset``,
    as of head ``top`` (see :func:`head`), each as the JSON bytes of its 4.1 item (spec 2.2)
    exactly as stored by :func:`append`: ``{"id":"<id>","integrationId":<int>,"createdAt":
    "<RFC 3339>","state":"...","stateDetails":"...","event":{...},"details":{...}}``.

    The offset is turned into a bound on ``seq`` (the gap-free per-integration number), so the
    cost is one index seek of ``(integration_id, seq)`` whatever the offset, on both engines;
    rows deleted by retention only make the oldest pages shorter. Each row is one stored value:
    nothing is assembled or encoded per request.
    """
    if offset >= top:
        return []
    return conn.column(_PAGE, [integration_id, top - offset, limit])


@dataclass(frozen=True)
class Entry:
    """One row to append to an integration's log: the fields of its 4.1 item but ``id`` (given
    when it is appended). ``event`` and ``details`` are compact JSON text or bytes."""

    integration_id: int
    created_at: str
    state: str
    state_details: str
    event: bytes | str
    details: bytes | str


def item(row_id: int, entry: Entry) -> bytes:
    """The wire bytes of one 4.1 item (spec 2.2), as :func:`page` serves it: ``id`` (the row's
    id) as a decimal string, ``createdAt`` RFC 3339 text as given, the two free texts
    JSON-quoted, ``event`` and ``details`` (compact JSON text or bytes) embedded exactly as
    given."""
    event = entry.event.encode() if isinstance(entry.event, str) else entry.event
    details = entry.details.encode() if isinstance(entry.details, str) else entry.details
    return (
        b'{"id":"%d","integrationId":%d,"createdAt":"%s","state":%s,"stateDetails":%s,"event":%s,"details":%s}'
        % (
            row_id,
            entry.integration_id,
            entry.created_at.encode(),
            orjson.dumps(entry.state),
            orjson.dumps(entry.state_details),
            event,
            details,
        )
    )


_INSERT = (
    "INSERT INTO integration_events (id, integration_id, seq, created_at, state, item)"
    " VALUES (?, ?, ?, ?, ?, ?)"
)


def append(
    conn: Connection,
    integration_id: int,
    *,
    created_at: str,
    state: str,
    state_details: str,
    event: bytes | str,
    details: bytes | str,
) -> bytes | None:
    """Append one row at the head of an integration's log, inside the caller's write
    transaction (:func:`append_many` with one entry). Return the row's 4.1 item in its wire
    bytes (:func:`item`), or None when the integration no longer exists."""
    entry = Entry(integration_id, created_at, state, state_details, event, details)
    appended = append_many(conn, [entry])
    return appended[0] if appended else None


def append_many(conn: Connection, entries: list[Entry]) -> list[bytes]:
    """Append ``entries`` (oldest first) at the heads of their integrations' logs, inside the
    caller's write transaction, so that each log's ``seq`` goes on from its head without a gap
    and ids grow with ``seq``; each row stores its 4.1 item (:func:`item`), made here once.
    Return the items appended, in order; the entries of an integration that no longer exists
    (on PostgreSQL, deleted by another process) are left out.

    On SQLite the write transaction is the database's one writer, and ids are one more than
    the largest stored, as SQLite gives a rowid. On PostgreSQL each integration's row is locked
    first (``FOR NO KEY UPDATE``, in id order, held to the commit): appends to one log, from
    any process and whatever write lock their transaction took, queue there and each reads the
    head its predecessor committed; ids come from the table's identity sequence, taken after
    the lock, so they too grow with ``seq``.
    """
    heads: dict[int, int] = {}
    for integration_id in sorted({e.integration_id for e in entries}):
        if conn.dialect == "postgresql":
            held = conn.value("SELECT id FROM integrations WHERE id = ? FOR NO KEY UPDATE", [integration_id])
            if held is None:
                continue
        heads[integration_id] = conn.value(
            "SELECT coalesce(max(seq), 0) FROM integration_events WHERE integration_id = ?", [integration_id]
        )
    kept = [e for e in entries if e.integration_id in heads]
    if not kept:
        return []
    rows, items = [], []
    for row_id, e in zip(_next_ids(conn, len(kept)), kept, strict=True):
        heads[e.integration_id] += 1
        wire = item(row_id, e)
        rows.append((row_id, e.integration_id, heads[e.integration_id], e.created_at, e.state, wire))
        items.append(wire)
    conn.run_many(_INSERT, rows)
    return items


def _next_ids(conn: Connection, count: int) -> list[int]:
    """``count`` ids for new rows, increasing: on SQLite the ones after the largest stored (as
    SQLite gives a rowid), on PostgreSQL the identity sequence's next ones."""
    if conn.dialect == "postgresql":
        return conn.column(
            "SELECT nextval(pg_get_serial_sequence('integration_events', 'id')) FROM generate_series(1, ?)",
            [count],
        )
    top = conn.value("SELECT coalesce(max(id), 0) FROM integration_events")
    return list(range(top + 1, top + 1 + count))


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
