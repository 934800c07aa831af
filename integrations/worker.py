"""The delivery worker: threads that claim due deliveries, attempt them and record the outcome.

It holds :class:`Worker`, which runs :mod:`flagadmin.integrations.delivery`'s policy (claim,
:func:`~flagadmin.integrations.delivery.attempt`,
:func:`~flagadmin.integrations.delivery.record`, retention sweeps) in threads inside
``flagadmin serve`` or ``flagadmin deliver``, or once in the calling thread
(``flagadmin deliver --once``). What it delivers and how outcomes are judged are described
there; spec 4.1 serves the log it writes (spec 2.2's integration events).

A worker is woken by every commit in its process that recorded events
(:func:`flagadmin.events.on_recorded`) and otherwise polls; when it shares its process with
the API it yields to the requests in progress (:data:`YIELD_S`, ``web/inflight.py``).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import secrets
import threading
import time
from collections.abc import Callable
from datetime import timedelta

from .. import events
from ..config import Settings
from ..store import Connection, StoreError, connect
from ..store import deliveries as store_deliveries
from ..store import events as store_events
from ..store import integrations as store_integrations
from ..timestamps import SYSTEM_CLOCK, Clock, parse_rfc3339
from . import configs, delivery

log = logging.getLogger("flagadmin.delivery")

#: Seconds a lease outlives its attempt's deadline (time to record the outcome), at least;
#: the margin is the attempt's timeout when that is longer.
MIN_LEASE_MARGIN_S = 2.0
#: Seconds between two retention sweeps over every integration's log and the finished outbox.
SWEEP_INTERVAL_S = 600.0
#: Longest wait, before each attempt, for the API requests in progress to leave room (when the
#: worker shares its process with the server, web/inflight.py): requests first, deliveries in
#: the room they leave.
YIELD_S = 0.1


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
        self.policy = delivery.Policy.from_settings(settings)
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
        per ``YIELD_S`` took about 5 % of a saturated server's CPU (bench/journal/2026-11-27.md,
        "Deliveries under steady traffic"); the one attempt kept per ``YIELD_S`` is there so
        that deliveries never stop for as long as the server stays saturated."""
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
            attempted = delivery.attempt(
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
                conn.after_commit(functools.partial(delivery.outcome_recorded, "cancelled"))
            elif delivery.record(
                conn, claimed.integration_id, attempted, policy=self.policy, clock=self.clock
            ):
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
                    delivery.disable_gone(conn, claimed.integration_id, self.clock)
                self.recorded += 1
                conn.after_commit(
                    functools.partial(delivery.outcome_recorded, *self._outcome(attempted, event))
                )
            # else: the integration was deleted during the attempt, and its deliveries with it
            if self._stopping.is_set():
                return None
            return self._claim(conn).claimed

    def _outcome(self, attempted: delivery.Attempted, event: dict) -> tuple[str, float | None, float | None]:
        """What :func:`~flagadmin.integrations.delivery.on_outcome` listeners are told of an
        attempt: the delivery's new state, the attempt's seconds, and (delivered) the seconds
        since the event was created."""
        state = attempted.verdict.delivery_state
        duration_ms = attempted.details.get("durationMs")
        lag = None
        if state == "delivered":
            lag = max(self.clock.time() - parse_rfc3339(event["createdAt"]).timestamp(), 0.0)
        return state, None if duration_ms is None else duration_ms / 1000, lag

    def _maybe_sweep(self, conn: Connection, force: bool = False) -> None:
        if not force and time.monotonic() < self._next_sweep:
            return
        with self._sweep_lock:
            self._next_sweep = time.monotonic() + SWEEP_INTERVAL_S
        try:
            delivery.sweep(conn, self.policy, self.clock)
        except StoreError as exc:
            log.warning("delivery: retention sweep skipped (%s)", exc)
