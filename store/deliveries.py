"""The delivery outbox: which integrations must handle an event (written with the event), and
the claims, leases and outcomes of the workers that deliver them.

A delivery row is ``pending`` (due at ``next_attempt_at``), ``in_flight`` (claimed by a worker
until ``lease_until``), or finished: ``delivered``, ``failed`` (no more attempts) or
``cancelled`` (its integration was disabled before it went out). Timestamps are the stored
RFC 3339 format, so comparing them as text compares moments.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from .engine import Connection

#: Providers whose configurations flagadmin delivers to; configurations of other providers
#: (seeded from the reference server) are listed but never handle events, as the reference
#: server skips configurations whose provider it does not know.
DELIVERABLE_PROVIDERS = ("webhook",)

#: An integration configuration matches an event when it is enabled, lists the event's type,
#: and its project and environment filters let the event through: an event without a project
#: (or environment) passes every filter; an empty list or one starting with "*" means all
#: (the reference server's rules, evaluated against the configuration as it is right now).
#: The type is looked up in the JSON text of ``events`` with its quotes (``"feature-created"``):
#: event types are plain ``[a-z-]`` words, so that finds exactly a whole element, without
#: parsing the list of every configuration on every change. The providers are this module's
#: constant, written into the text once.
_PROVIDERS_SQL = ", ".join(f"'{provider}'" for provider in DELIVERABLE_PROVIDERS)
_MATCHING = {
    "sqlite": (
        "SELECT i.id FROM integrations i"
        " WHERE i.enabled = 1"
        f" AND i.provider IN ({_PROVIDERS_SQL})"
        " AND instr(i.events, :quoted_type) > 0"
        " AND (:project IS NULL OR json_array_length(i.projects) = 0"
        "      OR json_extract(i.projects, '$[0]') = '*'"
        "      OR EXISTS (SELECT 1 FROM json_each(i.projects) WHERE value = :project))"
        " AND (:environment IS NULL OR json_array_length(i.environments) = 0"
        "      OR json_extract(i.environments, '$[0]') = '*'"
        "      OR EXISTS (SELECT 1 FROM json_each(i.environments) WHERE value = :environment))"
        " ORDER BY i.id"
    ),
    # The same rules with jsonb. FOR KEY SHARE: a configuration being deleted by another
    # transaction (which locks its row FOR UPDATE first, store.integrations.delete) is waited
    # for and then no longer matches, instead of the outbox row failing its foreign key.
    "postgresql": (
        "SELECT i.id FROM integrations i"
        " WHERE i.enabled = 1"
        f" AND i.provider IN ({_PROVIDERS_SQL})"
        " AND strpos(i.events, CAST(:quoted_type AS TEXT)) > 0"
        " AND (CAST(:project AS TEXT) IS NULL OR jsonb_array_length(i.projects::jsonb) = 0"
        "      OR i.projects::jsonb ->> 0 = '*'"
        "      OR i.projects::jsonb @> jsonb_build_array(CAST(:project AS TEXT)))"
        " AND (CAST(:environment AS TEXT) IS NULL OR jsonb_array_length(i.environments::jsonb) = 0"
        "      OR i.environments::jsonb ->> 0 = '*'"
        "      OR i.environments::jsonb @> jsonb_build_array(CAST(:environment AS TEXT)))"
        " ORDER BY i.id FOR KEY SHARE OF i"
    ),
}


def new_webhook_id() -> str:
    """A delivery's id for receivers (Standard Webhooks ``webhook-id``): ``msg_`` + 32 hex digits."""
    return f"msg_{secrets.token_hex(16)}"


#: A new delivery's ``webhook_id`` made by the database, per row: ``msg_`` + 32 lower-case hex
#: digits, as :func:`new_webhook_id` makes them. SQLite: 16 bytes of ``randomblob`` (its PRNG,
#: ChaCha20 since SQLite 3.40, seeded from the operating system). PostgreSQL: a random (version 4)
#: UUID without its dashes, 122 random bits (``gen_random_uuid``, in core since PostgreSQL 13).
_NEW_WEBHOOK_ID = {
    "sqlite": "'msg_' || lower(hex(randomblob(16)))",
    "postgresql": "'msg_' || replace(CAST(gen_random_uuid() AS TEXT), '-', '')",
}


def outbox_insert(dialect: str, event_id: str = ":event_id") -> str:
    """The statement that writes the outbox rows of one event in ``dialect``: one pending
    delivery per configuration matching the event (:data:`_MATCHING`'s rules, parameters
    ``:quoted_type``, ``:project``, ``:environment``), due at ``:now``, each with its
    ``webhook_id`` (``msg_`` + 32 hex digits, made by the database: :data:`_NEW_WEBHOOK_ID`),
    the same on every attempt. ``event_id``: the SQL of the event's id (a parameter, or a
    subquery of the statement that inserts the event)."""
    return (
        "INSERT INTO integration_deliveries (event_id, integration_id, webhook_id, next_attempt_at,"
        f" created_at) SELECT {event_id}, m.id, {_NEW_WEBHOOK_ID[dialect]}, :now, :now"
        f" FROM ({_MATCHING[dialect]}) m"
    )


_ENQUEUE = {dialect: outbox_insert(dialect) for dialect in _MATCHING}


def enqueue(
    conn: Connection, event_id: int, event_type: str, project: str | None, environment: str | None, now: str
) -> int:
    """Write one pending delivery of event ``event_id`` per matching integration (call inside
    the event's write transaction), due at ``now``, in one statement (:func:`outbox_insert`);
    return how many were written."""
    return conn.run(
        _ENQUEUE[conn.dialect],
        {
            "event_id": event_id,
            "now": now,
            "project": project,
            "environment": environment,
            "quoted_type": quoted_type(event_type),
        },
    )


def quoted_type(event_type: str) -> str:
    """``event_type`` as :data:`_MATCHING` looks it up in a configuration's ``events`` (the
    ``:quoted_type`` parameter): with its JSON quotes."""
    return f'"{event_type}"'


# --- claims ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Claimed:
    """A delivery a worker now holds: ``id``, ``event_id``, ``integration_id``, ``webhook_id``,
    ``attempt`` (1 for the first), the ``claim`` token and when its lease ends."""

    id: int
    event_id: int
    integration_id: int
    webhook_id: str
    attempt: int
    claim: str
    lease_until: str


@dataclass(frozen=True)
class ClaimResult:
    """What a claim found: the delivery it took (or None) and, when nothing was due, the
    earliest stored moment at which something will be (None: nothing unfinished at all)."""

    claimed: Claimed | None
    next_due: str | None


#: The first ``:window`` unfinished deliveries of every integration whose window is
#: ``:window``: one seek of the partial index per integration. (SQLite takes no outer column
#: in a subquery's LIMIT, so there is one query per distinct window size, usually one.)
_WINDOWS_SQLITE = (
    "SELECT i.id AS integration_id, i.enabled, d.id, d.state, d.next_attempt_at, d.lease_until"
    " FROM integrations i LEFT JOIN integration_options o ON o.integration_id = i.id"
    " JOIN integration_deliveries d ON d.id IN (SELECT x.id FROM integration_deliveries x"
    "  WHERE x.integration_id = i.id AND x.state IN ('pending', 'in_flight')"
    "  ORDER BY x.id LIMIT :window)"
    " WHERE coalesce(o.max_in_flight, :default) = :window"
)

#: The same windows in one query on PostgreSQL, whose LATERAL subquery takes the outer
#: integration's own window as its LIMIT. The window starts at the integration's first
#: unfinished delivery, found in the partial index: without that bound the planner, not
#: knowing the LIMIT and taking unfinished rows to be spread evenly, may walk the primary key
#: from the oldest delivery and filter, reading every finished one kept (36,000 rows per
#: integration and 130 ms per claim, seen after an autoanalyze with 27,000 finished).
_WINDOWS_POSTGRESQL = (
    "SELECT i.id AS integration_id, i.enabled, d.id, d.state, d.next_attempt_at, d.lease_until"
    " FROM integrations i LEFT JOIN integration_options o ON o.integration_id = i.id"
    " CROSS JOIN LATERAL (SELECT x.id, x.state, x.next_attempt_at, x.lease_until"
    "  FROM integration_deliveries x"
    "  WHERE x.integration_id = i.id AND x.state IN ('pending', 'in_flight')"
    "  AND x.id >= (SELECT min(y.id) FROM integration_deliveries y"
    "   WHERE y.integration_id = i.id AND y.state IN ('pending', 'in_flight'))"
    "  ORDER BY x.id LIMIT coalesce(o.max_in_flight, CAST(:default AS INTEGER))) d"
)


def _windows(conn: Connection, default_window: int) -> list[dict[str, Any]]:
    """Every integration's window: its first ``max_in_flight`` (else ``default_window``)
    unfinished deliveries, as ``{integration_id, enabled, id, state, next_attempt_at,
    lease_until}`` rows."""
    if conn.dialect == "postgresql":
        return conn.all(_WINDOWS_POSTGRESQL, {"default": default_window})
    windows = conn.values(
        "SELECT DISTINCT coalesce(o.max_in_flight, :default) FROM integrations i"
        " LEFT JOIN integration_options o ON o.integration_id = i.id",
        {"default": default_window},
    )
    return [
        row
        for window in list(windows)
        for row in conn.all(_WINDOWS_SQLITE, {"window": window, "default": default_window})
    ]


def _scan(
    conn: Connection, now: str, default_window: int
) -> tuple[dict[str, Any] | None, str | None, list[int]]:
    """The delivery to claim (or None), the earliest moment something else comes due, and the
    disabled integrations that still have deliveries to cancel."""
    best: dict[str, Any] | None = None
    next_due: str | None = None
    disabled: set[int] = set()
    for row in _windows(conn, default_window):
        if not row["enabled"]:
            if row["state"] == "pending":
                disabled.add(row["integration_id"])
            continue
        due = row["next_attempt_at"] if row["state"] == "pending" else row["lease_until"]
        ready = due <= now if row["state"] == "pending" else due < now
        if ready and (best is None or (due, row["id"]) < (best["due"], best["id"])):
            best = {**row, "due": due}
        elif not ready and (next_due is None or due < next_due):
            next_due = due
    return best, next_due, sorted(disabled)


#: Takes one delivery found due, only if it still is: a writer that does not hold the claim
#: lock (an integration disabled or deleted through the API, in another process on
#: PostgreSQL) may have changed it since it was read, and then nothing is taken.
_TAKE = (
    "UPDATE integration_deliveries SET state = 'in_flight', attempts = attempts + 1,"
    " lease_until = :lease_until, claim = :claim, last_attempt_at = :now"
    " WHERE id = :id AND ((state = 'pending' AND next_attempt_at <= :now)"
    "  OR (state = 'in_flight' AND lease_until < :now))"
    " RETURNING id, event_id, integration_id, webhook_id, attempts"
)

#: Scans a claim makes before it gives up on deliveries changed under it (see :data:`_TAKE`).
_CLAIM_TRIES = 3


def claim(
    conn: Connection, *, now: str, lease_until: str, claim_token: str, default_window: int
) -> ClaimResult:
    """Take the delivery that has been due the longest.

    Each integration's unfinished deliveries are considered in event order, and only the first
    ``window`` of them (its ``max_in_flight``, else ``default_window``): with a window of 1, an
    integration's events go out one at a time and in order, a delivery waiting for its retry
    holding back the later ones. Within the windows, a ``pending`` delivery is due at its
    ``next_attempt_at`` and an ``in_flight`` one whose lease ended before ``now`` (its worker
    died) is due again; one whose lease still runs is never taken (at most one attempt in
    flight per delivery). Pending deliveries of disabled integrations are cancelled on the
    way. The taken row becomes ``in_flight`` with ``attempts`` + 1, ``claim_token`` and the
    lease.

    Outside a transaction, a read-only look comes first, so that a worker finding nothing to
    do never takes the write lock; the claim itself is one short write transaction (or part
    of the caller's) under the write lock ``integration_deliveries``. On SQLite that is the
    database's one writer; on PostgreSQL it is an advisory transaction lock that every claim
    and every recorded outcome, in every process, takes first: claims never interleave, so a
    delivery is taken by exactly one worker and each integration's window holds across
    processes (see docs/postgresql.md).
    """
    if not conn.in_transaction:
        best, next_due, disabled = _scan(conn, now, default_window)
        if best is None and not disabled:
            return ClaimResult(None, next_due)
    with conn.write("integration_deliveries"):
        taken = None
        for _ in range(_CLAIM_TRIES):
            best, next_due, disabled = _scan(conn, now, default_window)
            if disabled:
                for integration_id in disabled:
                    cancel_pending(conn, integration_id, now)
                best, next_due, _ = _scan(conn, now, default_window)
            if best is None:
                return ClaimResult(None, next_due)
            taken = conn.one(
                _TAKE, {"lease_until": lease_until, "claim": claim_token, "now": now, "id": best["id"]}
            )
            if taken is not None:
                break
        if taken is None:
            # Changed under every scan: look again right away rather than wait for a poll.
            return ClaimResult(None, now)
    return ClaimResult(
        Claimed(
            id=taken["id"],
            event_id=taken["event_id"],
            integration_id=taken["integration_id"],
            webhook_id=taken["webhook_id"],
            attempt=taken["attempts"],
            claim=claim_token,
            lease_until=lease_until,
        ),
        None,
    )


def release(conn: Connection, delivery_id: int, claim_token: str) -> bool:
    """Give back a claimed delivery that was never attempted (a worker stopping): pending again
    at once, its attempt not counted. Return False when the claim was no longer held."""
    with conn.write("integration_deliveries"):
        return (
            conn.run(
                "UPDATE integration_deliveries SET state = 'pending', attempts = attempts - 1,"
                " lease_until = NULL, claim = NULL WHERE id = ? AND claim = ? AND state = 'in_flight'",
                [delivery_id, claim_token],
            )
            == 1
        )


def finish(
    conn: Connection,
    delivery_id: int,
    claim_token: str,
    *,
    state: str,
    now: str,
    next_attempt_at: str | None = None,
) -> bool:
    """Record the outcome of a claimed delivery's attempt (inside the caller's write
    transaction): ``state`` ``pending`` (retry at ``next_attempt_at``), ``delivered`` or
    ``failed``. Return False when the claim is no longer held (its lease ended and another
    worker took it): then the row is left to that worker.
    """
    finished = None if state == "pending" else now
    return (
        conn.run(
            "UPDATE integration_deliveries SET state = ?, next_attempt_at = coalesce(?, next_attempt_at),"
            " lease_until = NULL, claim = NULL, finished_at = ? WHERE id = ? AND claim = ?",
            [state, next_attempt_at, finished, delivery_id, claim_token],
        )
        == 1
    )


def cancel_pending(conn: Connection, integration_id: int, now: str) -> int:
    """Cancel the pending deliveries of an integration (it was disabled); in-flight ones finish.
    Return how many were cancelled."""
    return conn.run(
        "UPDATE integration_deliveries SET state = 'cancelled', finished_at = ?"
        " WHERE integration_id = ? AND state = 'pending'",
        [now, integration_id],
    )


def purge_finished(conn: Connection, before: str, limit: int = 1000) -> int:
    """Delete up to ``limit`` finished deliveries that finished before ``before`` (their
    attempts stay in the log); return how many went."""
    with conn.write("integration_deliveries"):
        return conn.run(
            "DELETE FROM integration_deliveries WHERE id IN (SELECT id FROM integration_deliveries"
            " WHERE finished_at IS NOT NULL AND finished_at < ? LIMIT ?)",
            [before, limit],
        )


def of_event(conn: Connection, event_id: int) -> list[dict[str, Any]]:
    """The deliveries of one event: ``{id, integration_id, webhook_id, state, attempts,
    next_attempt_at, finished_at}`` by integration."""
    return conn.all(
        "SELECT id, integration_id, webhook_id, state, attempts, next_attempt_at, finished_at"
        " FROM integration_deliveries WHERE event_id = ? ORDER BY integration_id",
        [event_id],
    )


def unfinished_count(conn: Connection) -> int:
    """How many deliveries are pending or in flight."""
    return conn.value("SELECT count(*) FROM integration_deliveries WHERE state IN ('pending', 'in_flight')")
