"""Delivering events to integrations, the policy: what one attempt is, how its outcome is
judged, and how it is recorded in the integration's log (spec 4.1).

It holds :class:`Policy` (the instance's delivery settings), :func:`judge` (an outcome becomes
a :class:`Verdict`: the log row's ``state`` of spec 3, and whether and when to retry),
:func:`attempt` (prepare, send, judge), :func:`record` (the log row of spec 2.2, and the log's
retention), :func:`disable_gone` (a 410 Gone disables the integration), :func:`send_test`
(a sample event, sent now) and :func:`sweep` (retention over every log). The threads that run
them are :class:`flagadmin.integrations.worker.Worker`.

Deliveries are at least once, off the request path, across restarts. The outbox rows
(``integration_deliveries``) are written with their event, in the change's transaction
(:func:`flagadmin.events.record`). A worker (threads inside ``flagadmin serve``, or
``flagadmin deliver``) then, for each delivery:

1. **claims** it in one short write transaction: a lease (the attempt's deadline plus a
   margin) and a claim token; at most one attempt of a delivery is ever in flight, and at
   most ``maxInFlight`` deliveries of one integration are under way (default 1: in order);
2. **sends** it outside any transaction: one POST with a hard total deadline
   (:func:`flagadmin.integrations.sending.send`);
3. **records** the attempt in one write transaction: a row of the integration's log (spec
   4.1), the delivery's new state (delivered, failed, or pending again at its retry time) and
   the log's retention; the same transaction claims the worker's next delivery.

A worker killed between 1 and 3 loses nothing: its lease ends and another attempt follows
(the receiver may then see the same ``webhook-id`` twice: at least once, not exactly once;
Standard Webhooks has receivers use ``webhook-id`` to recognise a message seen before).

Any number of workers, in any number of processes (``serve`` on several hosts, ``deliver``
beside them), may share one database: claims and recorded outcomes all run under the write
lock ``integration_deliveries`` (SQLite's one writer; on PostgreSQL an advisory transaction
lock), and a claim takes a row only if it is still due, so no attempt is made twice while
every worker lives (:func:`flagadmin.store.deliveries.claim`).

Retries: transport errors, timeouts, 408, 429 and 5xx are retried after the delays of the
retry schedule (``FLAGADMIN_DELIVERY_RETRY_SCHEDULE``, each with +/-20 % jitter, and never
sooner than the answer's ``Retry-After``); 3xx (redirects are not followed), other 4xx, a
blocked address and a template that cannot render are final; 410 Gone also disables the
integration (an ``addon-config-updated`` event by :data:`flagadmin.events.SYSTEM`).
"""

from __future__ import annotations

import contextlib
import random
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from .. import events
from ..config import Settings, iso_duration
from ..store import Connection
from ..store import deliveries as store_deliveries
from ..store import events as store_events
from ..store import integration_events as store_log
from ..store import integrations as store_integrations
from ..timestamps import Clock, format_rfc3339
from . import address_guard, configs, sending, template, webhooks

#: Jitter of retry delays: each delay is multiplied by a factor in [1 - J, 1 + J].
JITTER = 0.2

#: Called after each delivery's outcome has committed: ``listener(state, attempt_s, lag_s)``
#: (process-wide, as :func:`flagadmin.events.on_recorded`; the Prometheus counters register here).
_outcome_listeners: list[Callable[[str, float | None, float | None], None]] = []
_outcome_lock = threading.Lock()


def on_outcome(listener: Callable[[str, float | None, float | None], None]) -> Callable[[], None]:
    """Call ``listener(state, attempt_s, lag_s)`` after a worker of this process has recorded
    a delivery's outcome: ``state`` is the delivery's new state (``delivered``; ``pending``, to
    be retried; ``failed``; ``cancelled``, nothing sent), ``attempt_s`` how long the attempt's
    HTTP request took (None: nothing was sent), ``lag_s`` from the event's creation to its
    delivery (None unless delivered). Test deliveries (:func:`send_test`) are not reported.
    Returns a function that removes the listener. A listener must be quick and must not raise:
    it runs in the delivery thread."""
    with _outcome_lock:
        _outcome_listeners.append(listener)

    def remove() -> None:
        with _outcome_lock, contextlib.suppress(ValueError):
            _outcome_listeners.remove(listener)

    return remove


def outcome_recorded(state: str, attempt_s: float | None = None, lag_s: float | None = None) -> None:
    """Tell the :func:`on_outcome` listeners of a delivery's committed outcome."""
    for listener in tuple(_outcome_listeners):
        listener(state, attempt_s, lag_s)


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
    guard: address_guard.AddressGuard

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


def _retryable(outcome: sending.Outcome) -> bool:
    if outcome.status is None:
        return not outcome.blocked
    return outcome.status in (408, 429) or outcome.status >= 500


def judge(
    outcome: sending.Outcome | None,
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
        lines.append(f"Webhook request failed: {(outcome.error or '').rstrip('.')}.")
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
    except template.TemplateError as exc:
        verdict = judge(
            None, problems=[], attempt=number, policy=policy, now=clock.time(), test=test,
            failure=f"the bodyTemplate cannot be rendered for this event: {exc}.",
        )  # fmt: skip
        return Attempted(orjson.dumps(event), details, verdict)
    details["body"] = prepared.logged_body
    details["contentType"] = prepared.content_type  # a custom Content-Type replaces the parameter
    outcome = sending.send(prepared, timeout=policy.timeout, guard=policy.guard)
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
        **template.SAMPLE_EVENT,
        "id": newest[0]["id"] if newest else 1,
        "createdAt": clock.now_rfc3339(),
        "type": event_type,
        "createdBy": actor.name,
        "createdByUserId": actor.user_id,
        "project": _first_named(config["projects"]),
        "environment": _first_named(config["environments"]),
        "data": {**template.SAMPLE_EVENT["data"], "test": True},
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
