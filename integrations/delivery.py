"""Delivering events to integrations: at least once, off the request path, across restarts.

The outbox rows (``integration_deliveries``) are written with their event, in the change's
transaction (:func:`flagadmin.events.record`). A :class:`Worker` (threads inside ``flagadmin
serve``, or ``flagadmin deliver``) then, for each delivery:

1. **claims** it in one short write transaction: a lease (the attempt's deadline plus a
   margin) and a claim token; at most one attempt of a delivery is ever in flight, and at
   most ``maxInFlight`` deliveries of one integration are under way (default 1: in order);
2. **sends** it outside any transaction: one POST with a hard total deadline
   (:func:`flagadmin.webhooks.send`);
3. **records** the attempt in one write transaction: a row of the integration's log (spec
   4.1), the delivery's new state (delivered, failed, or pending again at its retry time) and
   the log's retention; the same transaction claims the worker's next delivery.

A worker killed between 1 and 3 loses nothing: its lease ends and another attempt follows
(the receiver may then see the same ``webhook-id`` twice: at least once, not exactly once).

Any number of workers, in any number of processes (``serve`` on several hosts, ``deliver``
beside them), may share one database (issue 12): claims and recorded outcomes all run under
the write lock ``integration_deliveries`` (SQLite's one writer; on PostgreSQL an advisory
transaction lock), and a claim takes a row only if it is still due, so no attempt is made
twice while every worker lives (:func:`flagadmin.store.deliveries.claim`).

Retries: transport errors, timeouts, 408, 429 and 5xx are retried after the delays of the
retry schedule (``FLAGADMIN_DELIVERY_RETRY_SCHEDULE``, each with +/-20 % jitter, and never
sooner than the answer's ``Retry-After``); 3xx (redirects are not followed), other 4xx, a
blocked address and a template that cannot render are final; 410 Gone also disables the
integration (an ``addon-config-updated`` event by :data:`flagadmin.events.SYSTEM`).
"""

from __future__ import annotations

import contextlib
import logging
import random
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from .. import events
from ..config import Settings, iso_duration
from ..store import Connection, StoreError, connect
from ..store import deliveries as store_deliveries
from ..store import events as store_events
from ..store import integration_events as store_log
from ..store import integrations as store_integrations
from ..timestamps import SYSTEM_CLOCK, Clock, format_rfc3339, parse_rfc3339
from . import configs, webhooks

log = logging.getLogger("flagadmin.delivery")

#: Seconds a lease outlives its attempt's deadline (time to record the outcome), at least;
#: the margin is the attempt's timeout when that is longer.
MIN_LEASE_MARGIN_S = 2.0
#: Seconds between two retention sweeps over every integration's log and the finished outbox.
SWEEP_INTERVAL_S = 600.0
#: Jitter of retry delays: each delay is multiplied by a factor in [1 - J, 1 + J].
JITTER = 0.2
#: Longest wait, before each attempt, for the API requests in progress to leave room (when the
#: worker shares its process with the server, web/inflight.py): requests first, deliveries in
#: the room they leave.
YIELD_S = 0.1


@dataclass(frozen=True)
class Policy:
    """How deliveries are made: the attempt's ``timeout`` (s), the retry ``schedule`` (delays
    in s; its length is the number of retries), the default delivery window per integration,
    the log's default retention (``keep`` rows, ``max_age`` s), the ``poll_interval`` (s)
    and the address ``guard``."""

    timeout: float
    schedule: tuple[float, ...]
    default_window: int
    keep: int
    max_age: float
    poll_interval: float
    guard: webhooks.AddressGuard

    @classmethod
    def from_settings(cls, settings: Settings) -> Policy:
        """The policy of the instance's settings (``FLAGADMIN_DELIVERY_*`` and co)."""
        return cls(
            timeout=settings.delivery_timeout,
            schedule=tuple(settings.delivery_retry_schedule),
            default_window=settings.delivery_max_in_flight,
            keep=settings.integration_events_keep,
            max_age=settings.integration_events_max_age,
            poll_interval=settings.delivery_poll_interval,
            guard=configs.guard(settings),
        )

    @property
    def max_attempts(self) -> int:
        """The first attempt plus one per retry."""
        return 1 + len(self.schedule)


@dataclass(frozen=True)
class Verdict:
    """An attempt judged: the log row's ``state`` and ``state_details``, the delivery's next
    state (``delivered``, ``pending`` or ``failed``), when it is retried, and whether the
    receiver asked to be forgotten (410)."""

    state: str
    state_details: str
    delivery_state: str
    next_attempt_at: str | None = None
    gone: bool = False


def _retryable(outcome: webhooks.Outcome) -> bool:
    if outcome.status is None:
        return not outcome.blocked
    return outcome.status in (408, 429) or outcome.status >= 500


def judge(
    outcome: webhooks.Outcome | None,
    *,
    problems: list[str],
    attempt: int,
    policy: Policy,
    now: float,
    test: bool = False,
    failure: str | None = None,
) -> Verdict:
    """The verdict on attempt number ``attempt`` (1 for the first) that came to ``outcome``
    (None when nothing was sent: ``failure`` says why), at ``now`` (epoch seconds).

    The first line after ``problems`` is the reference server's text where it has one
    ("Webhook request was successful with status code: 200." / "Webhook request failed with
    status code: 503."), else the real reason of a transport failure; the last says whether and
    when the delivery is retried. ``test``: a test delivery, never retried.
    """
    lines = list(problems)
    if outcome is None:
        lines += [f"Webhook request not sent: {failure}", _final("it cannot succeed as configured", test)]
        return Verdict("failed", "\n".join(lines), "failed")
    if outcome.status is not None and 200 <= outcome.status < 300:
        lines.append(f"Webhook request was successful with status code: {outcome.status}.")
        return Verdict("successWithErrors" if problems else "success", "\n".join(lines), "delivered")
    if outcome.status is not None:
        lines.append(f"Webhook request failed with status code: {outcome.status}.")
    else:
        lines.append(f"Webhook request failed: {outcome.error}.")
    if outcome.status == 410:
        lines.append(
            "The receiver answered 410 Gone: the integration was disabled and the delivery is not retried."
            if not test
            else "The receiver answered 410 Gone (a real delivery would disable the integration)."
        )
        return Verdict("failed", "\n".join(lines), "failed", gone=not test)
    if outcome.status is not None and 300 <= outcome.status < 400:
        where = f" to {outcome.location}" if outcome.location else ""
        lines.append(_final(f"redirects{where} are not followed; point the URL at the final address", test))
        return Verdict("failed", "\n".join(lines), "failed")
    if not _retryable(outcome):
        reason = "the address is not allowed" if outcome.blocked else "the receiver refused the request"
        lines.append(_final(reason, test))
        return Verdict("failed", "\n".join(lines), "failed")
    if test:
        lines.append("This was a test delivery: it is not retried.")
        return Verdict("failed", "\n".join(lines), "failed")
    if attempt > len(policy.schedule):
        lines.append(f"Giving up after {attempt} attempt{'s' if attempt > 1 else ''}.")
        return Verdict("failed", "\n".join(lines), "failed")
    delay = policy.schedule[attempt - 1] * random.uniform(1 - JITTER, 1 + JITTER)
    if outcome.retry_after is not None:
        delay = max(delay, outcome.retry_after)
    retry_at = format_rfc3339(_utc(now + delay))
    lines.append(f"Will retry at {retry_at} (attempt {attempt + 1} of {policy.max_attempts}).")
    return Verdict("failed", "\n".join(lines), "pending", next_attempt_at=retry_at)


def _final(reason: str, test: bool) -> str:
    return f"Not retried: {reason}." if not test else f"Not retried ({reason})."


def _utc(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, UTC)


@dataclass
class Attempted:
    """One attempt, ready to record: the event's JSON, the log row's details and the verdict."""

    event_json: bytes
    details: dict[str, Any]
    verdict: Verdict


def attempt(
    config: dict[str, Any],
    event: dict[str, Any],
    *,
    webhook_id: str,
    number: int,
    policy: Policy,
    clock: Clock,
    test: bool = False,
) -> Attempted:
    """Make attempt ``number`` at delivering ``event`` (spec 2.3 shape) to ``config`` (a
    stored webhook configuration): prepare the request, send it, judge the outcome. Never
    raises for network or template trouble: they are in the verdict."""
    parameters = config["parameters"]
    details: dict[str, Any] = {
        "url": parameters.get("url"),
        "contentType": parameters.get("contentType") or webhooks.DEFAULT_CONTENT_TYPE,
        "body": event,
        "webhookId": webhook_id,
        "attempt": number,
        "maxAttempts": 1 if test else policy.max_attempts,
    }
    try:
        prepared = webhooks.prepare(parameters, event, webhook_id=webhook_id, timestamp=int(clock.time()))
    except webhooks.TemplateError as exc:
        verdict = judge(
            None, problems=[], attempt=number, policy=policy, now=clock.time(), test=test,
            failure=f"the bodyTemplate cannot be rendered for this event: {exc}.",
        )  # fmt: skip
        return Attempted(orjson.dumps(event), details, verdict)
    details["body"] = prepared.logged_body
    outcome = webhooks.send(prepared, timeout=policy.timeout, guard=policy.guard)
    details["status"] = outcome.status
    details["durationMs"] = outcome.duration_ms
    verdict = judge(
        outcome, problems=prepared.problems, attempt=number, policy=policy, now=clock.time(), test=test
    )
    if verdict.next_attempt_at is not None:
        details["nextAttemptAt"] = verdict.next_attempt_at
    return Attempted(orjson.dumps(event), details, verdict)


def retention_of(config: dict[str, Any], policy: Policy) -> tuple[int, float]:
    """``(keep, max_age seconds)`` of an integration's log: its own options, else the policy's."""
    keep = config.get("events_keep") or policy.keep
    max_age = iso_duration("eventsMaxAge", config["events_max_age"]) if config.get("events_max_age") else None
    return keep, max_age or policy.max_age


def record(
    conn: Connection, integration_id: int, attempted: Attempted, *, policy: Policy, clock: Clock
) -> bytes | None:
    """Append an attempt's row to the integration's log and apply the log's retention, inside
    the caller's write transaction. Return the row's 4.1 item in its wire bytes (as 4.1 serves
    it), or None when the integration was deleted meanwhile."""
    config = store_integrations.get(conn, integration_id)
    if config is None:
        return None
    item = store_log.append(
        conn,
        integration_id,
        created_at=clock.now_rfc3339(),
        state=attempted.verdict.state,
        state_details=attempted.verdict.state_details,
        event=attempted.event_json,
        details=orjson.dumps(attempted.details),
    )
    if item is None:  # deleted by another process since it was read (PostgreSQL)
        return None
    keep, max_age = retention_of(config, policy)
    store_log.prune(conn, integration_id, keep=keep, before=clock.now_rfc3339(timedelta(seconds=-max_age)))
    return item


def disable_gone(conn: Connection, integration_id: int, clock: Clock) -> None:
    """Disable an integration whose receiver answered 410 Gone, cancel its pending deliveries
    and record ``addon-config-updated`` by :data:`flagadmin.events.SYSTEM`; inside the
    caller's write transaction."""
    before = store_integrations.get(conn, integration_id)
    if before is None or not store_integrations.set_enabled(conn, integration_id, False):
        return
    store_deliveries.cancel_pending(conn, integration_id, clock.now_rfc3339())
    after = store_integrations.get(conn, integration_id)
    events.record(
        conn,
        "addon-config-updated",
        events.SYSTEM,
        data=configs.event_data(after),
        pre_data=configs.event_data(before),
        clock=clock,
    )


def sample_event(
    conn: Connection, config: dict[str, Any], actor: events.Actor, clock: Clock
) -> dict[str, Any]:
    """The event a test delivery sends: a sample of the configuration's first event type, made
    by ``actor`` now, with the id of the newest stored event (a sample is not stored)."""
    newest = store_events.latest(conn, limit=1)
    event_type = config["events"][0] if config["events"] else "feature-created"
    return {
        **webhooks.SAMPLE_EVENT,
        "id": newest[0]["id"] if newest else 1,
        "createdAt": clock.now_rfc3339(),
        "type": event_type,
        "createdBy": actor.name,
        "createdByUserId": actor.user_id,
        "project": _first_named(config["projects"]),
        "environment": _first_named(config["environments"]),
        "data": {**webhooks.SAMPLE_EVENT["data"], "test": True},
    }


def _first_named(names: list[str]) -> str | None:
    """The first name of a project or environment filter (None for "all"), so that the sample
    passes the filter."""
    return names[0] if names and names[0] != "*" else None


def send_test(
    conn: Connection, config: dict[str, Any], actor: events.Actor, *, policy: Policy, clock: Clock
) -> bytes | None:
    """Send a sample event to ``config`` now, through the same path as real deliveries, and
    record the attempt in its log; never retried. Return the log row's 4.1 item (None: the integration
    was deleted meanwhile)."""
    event = sample_event(conn, config, actor, clock)
    attempted = attempt(
        config,
        event,
        webhook_id=store_deliveries.new_webhook_id(),
        number=1,
        policy=policy,
        clock=clock,
        test=True,
    )
    with conn.write("integration_deliveries"):
        return record(conn, config["id"], attempted, policy=policy, clock=clock)


def sweep(conn: Connection, policy: Policy, clock: Clock) -> int:
    """Apply retention to every integration's log, and delete finished deliveries older than
    the default maximum age; return how many log rows went. A log's backlog is deleted in
    transactions of at most :data:`~flagadmin.store.integration_events.PRUNE_MAX_ROWS` rows,
    so writers never wait long behind it."""
    deleted = 0
    for config in store_integrations.list_all(conn):
        keep, max_age = retention_of(config, policy)
        before = clock.now_rfc3339(timedelta(seconds=-max_age))
        while True:  # a backlog goes in several short transactions (PRUNE_MAX_ROWS each)
            with conn.write("integration_events"):
                pruned = store_log.prune(conn, config["id"], keep=keep, before=before)
            deleted += pruned
            if pruned < store_log.PRUNE_MAX_ROWS:
                break
    before = clock.now_rfc3339(timedelta(seconds=-policy.max_age))
    while store_deliveries.purge_finished(conn, before) > 0:
        pass
    return deleted


def _discard(conn: Connection | None) -> None:
    """Close ``conn`` (whatever state it is in); return None, the connection to use next."""
    if conn is not None:
        with contextlib.suppress(Exception):
            conn.rollback()
        with contextlib.suppress(Exception):
            conn.close()
    return None


class Worker:
    """Delivery threads: ``threads`` of them, each with its own database connection, woken at
    once by every commit that records events in this process (:func:`flagadmin.events.
    on_recorded`) and otherwise looking for due deliveries every ``poll_interval`` seconds
    (events written by other processes, retries coming due).

    ``start()`` starts them; ``stop()`` lets each finish its attempt in progress (up to a grace
    period) and gives back deliveries claimed but not attempted. :meth:`run_once` delivers what
    is due in the calling thread (``flagadmin deliver --once``).
    """

    def __init__(
        self,
        database: str,
        settings: Settings,
        *,
        threads: int | None = None,
        clock: Clock = SYSTEM_CLOCK,
        room: Callable[[float], bool] | None = None,
    ):
        self.database = database
        #: ``room(seconds)`` waits up to that long for the API requests in progress to leave
        #: room for an attempt (:meth:`flagadmin.web.inflight.RequestGauge.wait_for_room`);
        #: None: never wait.
        self.room = room
        self.policy = Policy.from_settings(settings)
        self.threads = settings.delivery_workers if threads is None else threads
        self.clock = clock
        self._stopping = threading.Event()
        self._wakeup = threading.Condition()
        self._generation = 0
        self._running: list[threading.Thread] = []
        self._unsubscribe = None
        self._next_sweep = 0.0
        self._sweep_lock = threading.Lock()
        self._busy_pass = threading.Lock()
        self._busy_turns = threading.Lock()  # guards _next_busy_turn
        #: when (monotonic s) the next attempt without room may start (:meth:`_busy_turn`)
        self._next_busy_turn = 0.0
        #: Attempts recorded by this worker (all threads), for logs and benchmarks.
        self.recorded = 0

    # --- lifecycle ----------------------------------------------------------------------

    def start(self) -> Worker:
        """Start the threads (none when ``threads`` is 0); return self."""
        if self.threads <= 0:
            return self
        self._unsubscribe = events.on_recorded(self.wake)
        for index in range(self.threads):
            thread = threading.Thread(
                target=self._run, args=(index,), name=f"flagadmin-delivery-{index}", daemon=True
            )
            thread.start()
            self._running.append(thread)
        log.info("%d delivery thread(s) started", self.threads)
        return self

    def wake(self) -> None:
        """Make every idle thread look for due deliveries now."""
        with self._wakeup:
            self._generation += 1
            self._wakeup.notify_all()

    def stop(self, grace: float | None = None) -> None:
        """Stop the threads, waiting up to ``grace`` seconds (default: the attempt timeout plus
        a second) for attempts in progress; one still running then is picked up again after its
        lease ends."""
        self._stopping.set()
        self.wake()
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        deadline = time.monotonic() + (self.policy.timeout + 1 if grace is None else grace)
        for thread in self._running:
            thread.join(max(deadline - time.monotonic(), 0))
        self._running = [t for t in self._running if t.is_alive()]

    # --- the loop -----------------------------------------------------------------------

    def run_once(self) -> int:
        """Deliver, in the calling thread, every delivery due now (retries due later are left);
        return how many attempts were made."""
        made = 0
        with connect(self.database) as conn:
            self._maybe_sweep(conn, force=True)
            claimed = self._claim(conn).claimed
            while claimed is not None:
                claimed = self._deliver(conn, claimed)
                made += 1
        return made

    def _run(self, index: int) -> None:
        conn: Connection | None = None
        claimed = None
        while not self._stopping.is_set():
            try:
                if conn is None:
                    conn = connect(self.database)
                if index == 0:
                    self._maybe_sweep(conn)
                calm = self.room is None or self.room(YIELD_S)
                # Without room (the server saturated), one attempt per YIELD_S between all the
                # threads, one thread at a time: the deliveries move, the requests keep the core.
                if not calm and not self._busy_turn():
                    continue
                with contextlib.nullcontext() if calm else self._busy_pass:
                    if claimed is None:
                        generation = self._generation
                        result = self._claim(conn)
                        if result.claimed is None:
                            self._sleep(generation, result.next_due)
                            continue
                        claimed = result.claimed
                    claimed = self._deliver(conn, claimed)
            except StoreError as exc:
                log.warning("delivery: the database is unavailable (%s); retrying shortly", exc)
                claimed = None
                # A fresh connection next time: a PostgreSQL server that went away and came
                # back does not revive the old one.
                conn = _discard(conn)
                self._stopping.wait(min(self.policy.poll_interval, 1.0))
            except Exception:
                log.exception("delivery: unexpected failure; the delivery will be retried after its lease")
                claimed = None
                self._stopping.wait(self.policy.poll_interval)
        if conn is not None:
            if claimed is not None:
                with contextlib.suppress(StoreError):  # else its lease ends on its own
                    store_deliveries.release(conn, claimed.id, claimed.claim)
            conn.close()

    def _busy_turn(self) -> bool:
        """Whether this thread may make an attempt without room: the first to ask once
        :data:`YIELD_S` has passed since the last one that could. Four threads each making one
        per ``YIELD_S`` took about 5 % of a saturated server's CPU (bench/RESULTS.md, tenth
        section); the one attempt kept per ``YIELD_S`` is there so that deliveries never stop
        for as long as the server stays saturated."""
        with self._busy_turns:
            now = time.monotonic()
            if now < self._next_busy_turn:
                return False
            self._next_busy_turn = now + YIELD_S
            return True

    def _sleep(self, generation: int, next_due: str | None) -> None:
        timeout = self.policy.poll_interval
        if next_due is not None:
            until = parse_rfc3339(next_due).timestamp() - self.clock.time()
            timeout = min(timeout, max(until, 0.005))
        with self._wakeup:
            if self._generation == generation and not self._stopping.is_set():
                self._wakeup.wait(timeout)

    def _claim(self, conn: Connection) -> store_deliveries.ClaimResult:
        lease = timedelta(seconds=self.policy.timeout + max(MIN_LEASE_MARGIN_S, self.policy.timeout))
        return store_deliveries.claim(
            conn,
            now=self.clock.now_rfc3339(),
            lease_until=self.clock.now_rfc3339(lease),
            claim_token=secrets.token_hex(8),
            default_window=self.policy.default_window,
        )

    def _deliver(
        self, conn: Connection, claimed: store_deliveries.Claimed
    ) -> store_deliveries.Claimed | None:
        """Attempt ``claimed``, record the outcome and claim the next delivery in the same
        transaction; return that next one (or None)."""
        config = store_integrations.get(conn, claimed.integration_id)
        event = store_events.get(conn, claimed.event_id)
        attempted = None
        if config is not None and event is not None and config["enabled"] and configs.deliverable(config):
            attempted = attempt(
                config,
                event,
                webhook_id=claimed.webhook_id,
                number=claimed.attempt,
                policy=self.policy,
                clock=self.clock,
            )
        with conn.write("integration_deliveries"):
            now = self.clock.now_rfc3339()
            if attempted is None:
                # Disabled, deleted or no longer deliverable since it was queued: nothing sent.
                store_deliveries.finish(conn, claimed.id, claimed.claim, state="cancelled", now=now)
            elif record(conn, claimed.integration_id, attempted, policy=self.policy, clock=self.clock):
                verdict = attempted.verdict
                held = store_deliveries.finish(
                    conn,
                    claimed.id,
                    claimed.claim,
                    state=verdict.delivery_state,
                    now=now,
                    next_attempt_at=verdict.next_attempt_at,
                )
                if not held:
                    log.warning(
                        "delivery %d: its lease ended during the attempt; recorded anyway", claimed.id
                    )
                if verdict.gone:
                    disable_gone(conn, claimed.integration_id, self.clock)
                self.recorded += 1
            # else: the integration was deleted during the attempt, and its deliveries with it
            if self._stopping.is_set():
                return None
            return self._claim(conn).claimed

    def _maybe_sweep(self, conn: Connection, force: bool = False) -> None:
        if not force and time.monotonic() < self._next_sweep:
            return
        with self._sweep_lock:
            self._next_sweep = time.monotonic() + SWEEP_INTERVAL_S
        try:
            sweep(conn, self.policy, self.clock)
        except StoreError as exc:
            log.warning("delivery: retention sweep skipped (%s)", exc)
