"""The integration event log (spec 4.1): pages of one integration's events, newest first; rows
appended by the delivery workers; retention that deletes the oldest rows first.
"""

from __future__ import annotations

from dataclasses import dataclass

import orjson

from .engine import Connection, StoreError


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


#: On SQLite, ``log_key`` (the log table's rowid) is ``log_no * LOG_KEY_SPAN + seq``, with
#: ``log_no`` the integration's number in ``integration_logs`` (1 to :data:`MAX_LOG_NO`): one
#: integration's rows are neighbours in the table, in ``seq`` order (schema.sql).
LOG_KEY_SPAN = 2**40

#: The largest log number: ``MAX_LOG_NO * LOG_KEY_SPAN + seq`` stays a signed 64-bit integer.
MAX_LOG_NO = 2**23 - 1

#: A page of one integration's log, newest first, from a bound on ``seq``: the stored items,
#: as they are (``item`` holds each row's 4.1 item in its wire bytes, made when the row was
#: appended), so the page is a join of stored bytes. Both engines store it as bytes (SQLite
#: BLOB, PostgreSQL bytea) and return it as bytes. On SQLite the bound is on ``log_key``, the
#: table's rowid (:data:`LOG_KEY_SPAN`): the page is one backward range of the table itself.
_PAGE = {
    "sqlite": (
        "SELECT item FROM integration_events WHERE log_key BETWEEN"
        f" (SELECT log_no FROM integration_logs WHERE integration_id = ?1) * {LOG_KEY_SPAN} + 1 AND"
        f" (SELECT log_no FROM integration_logs WHERE integration_id = ?1) * {LOG_KEY_SPAN} + ?2"
        " ORDER BY log_key DESC LIMIT ?3"
    ),
    "postgresql": (
        "SELECT item FROM integration_events WHERE integration_id = ? AND seq <= ? ORDER BY seq DESC LIMIT ?"
    ),
}


def page(conn: Connection, integration_id: int, top: int, limit: int, offset: int) -> list[bytes]:
    """Return up to ``limit`` events of one integration, newest first, skipping ``offset``,
    as of head ``top`` (see :func:`head`), each as the JSON bytes of its 4.1 item (spec 2.2)
    exactly as stored by :func:`append`: ``{"id":"<id>","integrationId":<int>,"createdAt":
    "<RFC 3339>","state":"...","stateDetails":"...","event":{...},"details":{...}}``.

    The offset is turned into a bound on ``seq`` (the gap-free per-integration number), so the
    cost is one seek whatever the offset: on SQLite into the table itself, clustered by log
    (``log_key``), on PostgreSQL into the ``(integration_id, seq)`` index; rows deleted by
    retention only make the oldest pages shorter. Each row is one stored value: nothing is
    assembled or encoded per request.
    """
    if offset >= top:
        return []
    return conn.column(_PAGE[conn.dialect], [integration_id, top - offset, limit])


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


_INSERT = {
    "sqlite": (
        "INSERT INTO integration_events (log_key, id, integration_id, seq, created_at, state, item)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)"
    ),
    "postgresql": (
        "INSERT INTO integration_events (id, integration_id, seq, created_at, state, item)"
        " VALUES (?, ?, ?, ?, ?, ?)"
    ),
}


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

    On SQLite the write transaction is the database's one writer, ids are one more than the
    largest stored, and each row's ``log_key`` is its log's number (:func:`_log_no`, given at
    the log's first row) times :data:`LOG_KEY_SPAN` plus its ``seq``. On PostgreSQL each
    integration's row is locked first (``FOR NO KEY UPDATE``, in id order, held to the
    commit): appends to one log, from any process and whatever write lock their transaction
    took, queue there and each reads the head its predecessor committed; ids come from the
    table's identity sequence, taken after the lock, so they too grow with ``seq``.
    """
    sqlite = conn.dialect == "sqlite"
    heads: dict[int, int] = {}
    bases: dict[int, int] = {}  # SQLite: each log's log_no * LOG_KEY_SPAN
    for integration_id in sorted({e.integration_id for e in entries}):
        if sqlite:
            log_no = _log_no(conn, integration_id)
            if log_no is None:
                continue
            bases[integration_id] = log_no * LOG_KEY_SPAN
        else:
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
        seq = heads[e.integration_id] = heads[e.integration_id] + 1
        wire = item(row_id, e)
        row = (row_id, e.integration_id, seq, e.created_at, e.state, wire)
        rows.append((bases[e.integration_id] + seq, *row) if sqlite else row)
        items.append(wire)
    conn.run_many(_INSERT[conn.dialect], rows)
    return items


def _log_no(conn: Connection, integration_id: int) -> int | None:
    """SQLite: the log number of ``integration_id`` (``integration_logs``), given now if it has
    none: one more than the largest given, or the lowest free one once that is
    :data:`MAX_LOG_NO`. None when no integration has that id. Inside the write transaction of
    the append (SQLite's one writer), so two appends never take the same number.

    :raise StoreError: every log number is taken (2^23 - 1 integrations with a log at once).
    """
    log_no = conn.value("SELECT log_no FROM integration_logs WHERE integration_id = ?", [integration_id])
    if log_no is not None:
        return log_no
    if conn.value("SELECT 1 FROM integrations WHERE id = ?", [integration_id]) is None:
        return None
    top = conn.value("SELECT coalesce(max(log_no), 0) FROM integration_logs")
    log_no = top + 1 if top < MAX_LOG_NO else _lowest_free_log_no(conn)
    conn.run("INSERT INTO integration_logs (integration_id, log_no) VALUES (?, ?)", [integration_id, log_no])
    return log_no


def _lowest_free_log_no(conn: Connection) -> int:
    free = conn.value(
        "SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM integration_logs WHERE log_no = 1) THEN 1"
        " ELSE (SELECT min(l.log_no) + 1 FROM integration_logs l WHERE l.log_no < ? AND NOT EXISTS"
        "  (SELECT 1 FROM integration_logs m WHERE m.log_no = l.log_no + 1)) END",
        [MAX_LOG_NO],
    )
    if free is None:
        raise StoreError(
            f"every log number (1 to {MAX_LOG_NO}) is taken: delete integrations that are not used"
        )
    return free


def delete_log(conn: Connection, integration_id: int) -> int:
    """Delete the whole log of ``integration_id`` inside the caller's write transaction (its
    configuration is being deleted), and on SQLite free its log number for another. Return how
    many rows were deleted."""
    deleted = conn.run("DELETE FROM integration_events WHERE integration_id = ?", [integration_id])
    if conn.dialect == "sqlite":
        conn.run("DELETE FROM integration_logs WHERE integration_id = ?", [integration_id])
    return deleted


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
