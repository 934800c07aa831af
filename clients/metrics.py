"""SDK metrics and registrations: noted in memory by the request, written in batches by the
writer thread (the reference server's client metrics, client instances and applications,
shared notes on the Client API, sections 4 and 5).

A request that reports (``POST /api/client/metrics``, ``/api/client/register``, and the
Frontend API's ``/api/frontend/client/metrics`` and ``/register``) only notes what it was told
in the app's :class:`Aggregator`, under one lock, without touching the database: it never
waits for a write lock nor for a disk sync. :meth:`Aggregator.flush`, called every
``FLAGADMIN_CLIENT_METRICS_FLUSH_INTERVAL`` seconds by :class:`flagadmin.clients.writer.Writer`
(one thread per ``flagadmin serve`` process) and once more when it stops, writes everything
noted since the last flush in one transaction (:mod:`flagadmin.store.client_metrics`):

- applications (``client_applications``): created on first sight, with the event
  ``application-created`` (spec 6; ``createdBy`` the system, ``data`` the application) in the
  same transaction, exactly once even when several processes see a new application together;
  later sights move ``updated_at``, and a registration's ``strategies`` replace the stored ones;
- instances (``client_instances``): ``instanceId`` (``default`` when not sent), SDK version and
  type (``backend`` for the Client API, ``frontend`` for the Frontend API), the client's
  address, the environment and when last seen;
- usage (``client_application_usage``): the projects of the token (``*`` for all) and its
  environment;
- hourly counts (``client_metrics``): per flag, application, environment and hour of the
  bucket's start, yes, no and variants summed;
- unknown flags (``unknown_flags``): names reported that are no flag, live or archived, and
  could be one (:func:`flagadmin.flags.names.name_problem`);
- ``lastSeenAt`` of each reported flag and of its environment (``features.last_seen_at``,
  ``feature_environments.last_seen_at``; spec 2.6): the time the metrics arrived.

Only flags counted at least once in the bucket (``yes + no > 0``) count as seen, as the
reference's. A flush that fails because the database is unavailable puts its batch back to be
written by the next one (any other failure drops it, logged); what is noted is bounded
(:data:`MAX_PENDING`), and a crash loses at most one interval of reports.

The calls other parts make (the Frontend API among them)::

    aggregator = flagadmin.web.state.state().client_metrics      # this app's Aggregator
    aggregator.record_metrics(caller, body, client_ip, "frontend", sdk_version=header_or_None)
    aggregator.record_registration(caller, body, client_ip, "frontend")

``caller`` is the request's :class:`~flagadmin.store.tokens.Caller` (its ``environment`` and
``projects`` say where the SDK reads); ``body`` is what
``flagadmin.blueprints.client_metrics.ClientMetricsSchema`` (resp. ``ClientApplicationSchema``)
loads, i.e. the reference's ``clientMetricsSchema`` (resp. ``clientApplicationSchema``) body
with ``bucket.start`` as an aware datetime; ``client_ip`` the client's address (or None).
Neither call touches the database or raises for a loaded body.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from .. import events
from ..flags.names import name_problem
from ..store import Connection, Unavailable
from ..store import client_metrics as store
from ..timestamps import SYSTEM_CLOCK, Clock, format_rfc3339

log = logging.getLogger("flagadmin.clients")

#: The environment of a caller whose token names none (the reference's default).
DEFAULT_ENVIRONMENT = "default"
#: The instance id of a report that names none.
DEFAULT_INSTANCE = "default"
#: Project name that stands for every project in usage (a token for all projects).
ALL_PROJECTS = "*"
#: The SDK types an instance is recorded with.
SDK_TYPES = ("backend", "frontend")

#: Keys (applications, instances, usage, counts, seen flags) noted and not yet written, at most;
#: past it, new keys are dropped (and counted) until the next flush. About 200 bytes a key:
#: some 40 MiB at most.
MAX_PENDING = 200_000

#: How long what is written is kept (the reference's windows): hourly counts two days, an
#: instance two days after it was last seen, an unknown flag one day after it was last reported.
KEEP_COUNTS = timedelta(days=2)
KEEP_INSTANCES = timedelta(days=2)
KEEP_UNKNOWN_FLAGS = timedelta(days=1)
#: Seconds between two deletions of what is older than kept.
PRUNE_EVERY_S = 3600.0


@dataclass
class Batch:
    """What was noted since the last flush.

    ``applications``: name -> [last seen (stored timestamp), strategies or None];
    ``instances``: (application, instance, environment) -> [sdk version, sdk type, client
    address, last seen]; ``usage``: {(application, project, environment)}; ``counts``:
    (application, environment, hour) -> {flag: [yes, no, {variant: count}]}; ``seen``:
    (application, environment) -> {flag: last seen}; ``flags``: how many entries ``counts`` and
    ``seen`` hold. The flags are grouped by what one report shares, so that noting a report's
    flags makes no key per flag.
    """

    applications: dict[str, list[Any]] = field(default_factory=dict)
    instances: dict[tuple[str, str, str], list[Any]] = field(default_factory=dict)
    usage: set[tuple[str, str, str]] = field(default_factory=set)
    counts: dict[tuple[str, str, str], dict[str, list[Any]]] = field(default_factory=dict)
    seen: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)
    flags: int = 0

    @property
    def size(self) -> int:
        """How many keys the batch holds."""
        return len(self.applications) + len(self.instances) + len(self.usage) + self.flags

    def note_application(self, name: str, at: str, strategies: list[str] | None) -> None:
        known = self.applications.get(name)
        if known is None:
            self.applications[name] = [at, strategies]
            return
        if at > known[0]:
            known[0] = at
        if strategies is not None:
            known[1] = strategies

    def note_instance(self, key: tuple[str, str, str], sdk_version, sdk_type, client_ip, at: str) -> None:
        known = self.instances.get(key)
        if known is None:
            self.instances[key] = [sdk_version, sdk_type, client_ip, at]
            return
        if sdk_version is not None:
            known[0] = sdk_version
        if sdk_type is not None:
            known[1] = sdk_type
        if client_ip is not None:
            known[2] = client_ip
        if at > known[3]:
            known[3] = at

    def add_count(
        self, group: tuple[str, str, str], flag: str, yes: int, no: int, variants: dict | None, at: str = ""
    ) -> None:
        """Add one flag's counts to ``group`` (application, environment, hour) and, given
        ``at``, note that the flag was seen then."""
        counts = self.counts.get(group)
        if counts is None:
            counts = self.counts[group] = {}
        known = counts.get(flag)
        if known is None:
            counts[flag] = [yes, no, dict(variants) if variants else {}]
            self.flags += 1
        else:
            known[0] += yes
            known[1] += no
            if variants:
                kept = known[2]
                for name, count in variants.items():
                    kept[name] = kept.get(name, 0) + count
        if at:
            self.note_seen(group[:2], flag, at)

    def note_seen(self, group: tuple[str, str], flag: str, at: str) -> None:
        """Note that ``flag`` was seen ``at`` by ``group`` (application, environment)."""
        seen = self.seen.get(group)
        if seen is None:
            seen = self.seen[group] = {}
        if flag not in seen:
            self.flags += 1
        if at > seen.get(flag, ""):
            seen[flag] = at

    def count_rows(self) -> list[tuple[str, str, str, str, int, int, dict[str, int]]]:
        """``(flag, application, environment, hour, yes, no, variants)`` of every count."""
        return [
            (flag, app, environment, hour, yes, no, variants)
            for (app, environment, hour), counts in self.counts.items()
            for flag, (yes, no, variants) in counts.items()
        ]

    def seen_rows(self) -> list[tuple[str, str, str, str]]:
        """``(flag, application, environment, last seen)`` of every flag seen."""
        return [
            (flag, app, environment, at)
            for (app, environment), seen in self.seen.items()
            for flag, at in seen.items()
        ]

    def merge(self, other: Batch) -> None:
        """Add ``other`` (an older batch that could not be written) into this one."""
        for name, (at, strategies) in other.applications.items():
            newer = self.applications.get(name)
            self.note_application(name, at, strategies if newer is None or newer[1] is None else newer[1])
        for key, (sdk_version, sdk_type, client_ip, at) in other.instances.items():
            newer = self.instances.get(key)
            if newer is None:
                self.instances[key] = [sdk_version, sdk_type, client_ip, at]
            else:
                newer[0] = newer[0] if newer[0] is not None else sdk_version
                newer[1] = newer[1] if newer[1] is not None else sdk_type
                newer[2] = newer[2] if newer[2] is not None else client_ip
                newer[3] = max(newer[3], at)
        self.usage |= other.usage
        for flag, app, environment, hour, yes, no, variants in other.count_rows():
            self.add_count((app, environment, hour), flag, yes, no, variants)
        for flag, app, environment, at in other.seen_rows():
            self.note_seen((app, environment), flag, at)


def hour_of(moment: datetime) -> str:
    """The stored timestamp of the start of ``moment``'s hour (UTC)."""
    return format_rfc3339(moment.astimezone(UTC).replace(minute=0, second=0, microsecond=0))


class Aggregator:
    """What SDKs reported and was not written yet, for one app (see the module).

    ``open_connection()`` returns a connection to the app's database that the caller closes
    (or None when there is none to write to); ``clock`` tells the time of sights and writes.
    """

    def __init__(self, open_connection: Callable[[], Connection | None], clock: Clock = SYSTEM_CLOCK):
        self._open = open_connection
        self._clock = clock
        self._batch = Batch()
        self._lock = threading.Lock()  # guards _batch; never held across a write
        self._flushing = threading.Lock()  # held by the one flush writing a batch
        self._next_prune = 0.0
        #: Keys dropped because :data:`MAX_PENDING` was reached, since the last flush.
        self.dropped = 0
        #: Flushes that wrote something, and applications created, by this aggregator.
        self.flushes = 0
        self.created = 0

    # --- noting (the request path) ----------------------------------------------------------

    def record_metrics(
        self, caller: Any, body: dict[str, Any], client_ip: str | None, sdk_type: str, *, sdk_version=None
    ) -> None:
        """Note a metrics report: the instance (and its application and usage) and, per flag of
        ``body["bucket"]["toggles"]`` counted at least once, its counts for the bucket's hour and
        that it was seen now. ``sdk_version``: used when the body has no ``sdkVersion``."""
        now = self._clock.now_rfc3339()
        environment = getattr(caller, "environment", None) or DEFAULT_ENVIRONMENT
        app = body["appName"]
        bucket = body.get("bucket")
        toggles: Iterable = ()
        hour = ""
        if bucket:
            toggles = bucket["toggles"].items()
            hour = hour_of(bucket["start"])
        with self._lock:
            batch = self._batch
            if batch.size >= MAX_PENDING:
                self.dropped += 1
                return
            self._note_sight(batch, caller, body, client_ip, sdk_type, now, None, sdk_version)
            counts = batch.counts.get((app, environment, hour))
            if counts is None:
                counts = batch.counts[app, environment, hour] = {}
            seen = batch.seen.get((app, environment))
            if seen is None:
                seen = batch.seen[app, environment] = {}
            for name, toggle in toggles:
                yes = toggle.get("yes") or 0
                no = toggle.get("no") or 0
                if yes + no <= 0:
                    continue
                kept = counts.get(name)
                variants = toggle.get("variants")
                if kept is not None:
                    kept[0] += yes
                    kept[1] += no
                    if variants:
                        kept_variants = kept[2]
                        for variant, count in variants.items():
                            kept_variants[variant] = kept_variants.get(variant, 0) + count
                elif batch.flags >= MAX_PENDING:
                    self.dropped += 1
                    continue
                else:
                    counts[name] = [yes, no, dict(variants) if variants else {}]
                    batch.flags += 1
                if name not in seen:
                    batch.flags += 1
                seen[name] = now

    def record_registration(
        self, caller: Any, body: dict[str, Any], client_ip: str | None, sdk_type: str
    ) -> None:
        """Note a registration: the application (with the strategies the SDK knows), the
        instance (with its SDK version) and the usage."""
        now = self._clock.now_rfc3339()
        with self._lock:
            batch = self._batch
            if batch.size >= MAX_PENDING:
                self.dropped += 1
                return
            self._note_sight(
                batch, caller, body, client_ip, sdk_type, now, list(body.get("strategies") or ()), None
            )

    def record_bulk(self, caller: Any, body: dict[str, Any], client_ip: str | None) -> None:
        """Note what Edge relays (``bulkMetricsSchema`` as loaded): each registration and each
        flag's counts of the caller's environment (those of other environments are left out),
        as :meth:`record_registration` and :meth:`record_metrics` note theirs."""
        now = self._clock.now_rfc3339()
        environment = getattr(caller, "environment", None) or DEFAULT_ENVIRONMENT
        with self._lock:
            batch = self._batch
            for registration in body["applications"]:
                if registration["environment"] != environment or batch.size >= MAX_PENDING:
                    continue
                strategies = registration.get("strategies")
                self._note_sight(
                    batch,
                    caller,
                    registration,
                    client_ip,
                    registration.get("sdkType") or "backend",
                    now,
                    None if strategies is None else list(strategies),
                    None,
                )
            for metric in body["metrics"]:
                yes, no = metric.get("yes") or 0, metric.get("no") or 0
                if metric["environment"] != environment or yes + no <= 0:
                    continue
                if batch.flags >= MAX_PENDING:
                    self.dropped += 1
                    continue
                start = metric.get("timestamp")
                hour = hour_of(start) if start is not None else hour_of(self._clock.now())
                group = (metric["appName"], environment, hour)
                batch.add_count(group, metric["featureName"], yes, no, metric.get("variants"), now)

    @staticmethod
    def _note_sight(batch, caller, body, client_ip, sdk_type, now, strategies, sdk_version) -> None:
        environment = getattr(caller, "environment", None) or DEFAULT_ENVIRONMENT
        app = body["appName"]
        instance = body.get("instanceId") or DEFAULT_INSTANCE
        batch.note_application(app, now, strategies)
        batch.note_instance(
            (app, instance, environment), body.get("sdkVersion") or sdk_version, sdk_type, client_ip, now
        )
        projects = getattr(caller, "projects", None)
        for project in (ALL_PROJECTS,) if projects is None else projects:
            batch.usage.add((app, project, environment))

    @property
    def pending(self) -> int:
        """How many keys are noted and not written yet."""
        with self._lock:
            return self._batch.size

    # --- writing (the writer thread, or a stop) -----------------------------------------------

    def flush(self) -> int:
        """Write everything noted so far in one transaction; return how many keys it wrote.

        Waits for a flush already writing, so that when it returns every report noted before it
        was called is committed (or, the database being unavailable, kept for the next flush
        and logged)."""
        with self._flushing:
            with self._lock:
                batch, self._batch = self._batch, Batch()
                dropped, self.dropped = self.dropped, 0
            if dropped:
                log.warning(
                    "SDK reports: %d report(s) or flag(s) dropped, over %d pending", dropped, MAX_PENDING
                )
            prune = self._clock.monotonic() >= self._next_prune
            if not batch.size and not prune:
                return 0
            try:
                conn = self._open()
                if conn is None:
                    return 0
                try:
                    self._write(conn, batch, prune)
                finally:
                    conn.close()
            except Unavailable as exc:
                log.warning("SDK reports not written (kept for the next write): %s", exc)
                with self._lock:
                    self._batch.merge(batch)
                return 0
            except Exception:  # the writer thread has nobody to raise to; never retried forever
                log.exception("SDK reports not written, and dropped: %d key(s)", batch.size)
                return 0
            if prune:
                self._next_prune = self._clock.monotonic() + PRUNE_EVERY_S
            if batch.size:
                self.flushes += 1
            return batch.size

    def _write(self, conn: Connection, batch: Batch, prune: bool) -> None:
        now = self._clock.now()
        with conn.write(store.LOCK):
            seen = batch.seen_rows()
            names = {flag for flag, _, _, _ in seen}
            known = store.existing_flags(conn, names) if names else set()
            created = store.add_applications(
                conn,
                [
                    {"app_name": name, "seen_at": at, "strategies": strategies}
                    for name, (at, strategies) in batch.applications.items()
                ],
                events.SYSTEM.name,
            )
            for name in created:
                seen_at, strategies = batch.applications[name]
                events.record(
                    conn,
                    "application-created",
                    events.SYSTEM,
                    data={
                        "appName": name,
                        "createdAt": seen_at,
                        "createdBy": events.SYSTEM.name,
                        "strategies": strategies or [],
                    },
                    clock=self._clock,
                )
            self.created += len(created)
            store.add_instances(
                conn,
                [
                    {
                        "app_name": app,
                        "instance_id": instance,
                        "environment": environment,
                        "sdk_version": sdk_version,
                        "sdk_type": sdk_type,
                        "client_ip": client_ip,
                        "seen_at": at,
                    }
                    for (app, instance, environment), (sdk_version, sdk_type, client_ip, at) in (
                        batch.instances.items()
                    )
                ],
            )
            store.add_usage(conn, batch.usage)
            store.add_counts(conn, [row for row in batch.count_rows() if row[0] in known])
            store.add_unknown_flags(
                conn,
                [row for row in seen if row[0] not in known and name_problem(row[0]) is None],
            )
            flags: dict[str, str] = {}
            environments: dict[tuple[str, str], str] = {}
            for flag, _, environment, at in seen:
                if flag in known:
                    flags[flag] = max(at, flags.get(flag, ""))
                    environments[flag, environment] = max(at, environments.get((flag, environment), ""))
            store.mark_seen(conn, flags, environments)
            if prune:
                store.prune(
                    conn,
                    counts_before=format_rfc3339(now - KEEP_COUNTS),
                    instances_before=format_rfc3339(now - KEEP_INSTANCES),
                    unknown_before=format_rfc3339(now - KEEP_UNKNOWN_FLAGS),
                )
