"""Prometheus metrics of this process: the registry, every metric, and the request hooks that
time HTTP requests. ``GET /internal-backstage/prometheus`` serves them (``blueprints/backstage.py``),
or a second small server on ``FLAGADMIN_PROMETHEUS_ADDRESS`` does (:func:`init_app`).

What moves each metric (names and labels; ``docs/operations.md`` lists them for operators):

- ``http_request_duration_milliseconds{path,method,status}``, a histogram: every request the
  app answers, timed from the moment the WSGI call enters the app until its answer's head is
  ready (as the reference server's metric: a streamed body's sending is not in it). ``path`` is
  the route template in the reference's style (``/api/admin/projects/:projectId/features``),
  ``(hidden)`` for a path no route matches (also as the reference); ``method`` is the
  request's, ``OTHER`` for a method outside HTTP's usual seven. The reference serves a summary
  under that name; prometheus_client's summaries have no quantiles, so this is a histogram
  (buckets in ms, :data:`HTTP_BUCKETS_MS`): its ``_count`` and ``_sum`` read as the
  reference's do, quantiles come from ``histogram_quantile``.
- ``flagadmin_request_database_seconds{path,method}``, a histogram: per request, the time its
  thread spent in SQL meanwhile (:data:`flagadmin.store.engine.STATEMENT_TIME`).
- ``flagadmin_events_recorded_total{type}``: every event (spec 6's types) whose transaction
  committed in this process (:func:`flagadmin.events.on_committed`), whatever its door.
- ``flagadmin_webhook_deliveries_total{state}``, ``flagadmin_webhook_attempt_seconds`` and
  ``flagadmin_webhook_delivery_lag_seconds``: the outcome of every delivery attempt recorded by
  this process's delivery threads (:func:`flagadmin.integrations.delivery.on_outcome`).
- ``flagadmin_scim_requests_total{resource,method,status}``: every request to ``/scim/v2``
  (``blueprints/scim.py``), by resource type (``Users``, ``Groups``, ``Schemas``...).
- ``flagadmin_sdk_registrations_total{api}`` and ``flagadmin_sdk_metrics_posts_total{api}``:
  see :data:`SDK_REGISTRATIONS` and :data:`SDK_METRICS_POSTS`.
- ``flagadmin_answer_cache_hits_total{cache}``, ``flagadmin_answer_cache_misses_total{cache}``:
  lookups of the answer caches (``web/cache.py``), by cache name.
- ``process_*``, ``python_info``, ``python_gc_*``: prometheus_client's own collectors.

Labels are route templates, names from fixed sets and statuses, never a raw path, a token or a
user's data: the number of series is bounded by the app's routes, whatever clients send.

The registry is the process's (not one per app): what a scrape sees is this process, as the
reference's is. Several ``serve`` processes each serve their own; Prometheus tells them apart by
the ``instance`` label it gives each target (``docs/operations.md`` says why prometheus_client's
multiprocess mode is not used). Counters' ``_created`` series are left out (prometheus_client's
:func:`~prometheus_client.disable_created_metrics`): they double the series and no query here
needs them.

Cost per request, measured in one thread: about 4 µs with both histograms (two observations
of about 1.5 µs, a dictionary lookup of the request's series, two clock readings); the series
of a (route, method, status) is resolved once, then kept (:func:`_series_of`).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable
from time import perf_counter
from typing import Any

from flask import Flask, Response, request
from prometheus_client import (
    GC_COLLECTOR,
    PLATFORM_COLLECTOR,
    PROCESS_COLLECTOR,
    CollectorRegistry,
    Counter,
    Histogram,
    disable_created_metrics,
    start_http_server,
)
from prometheus_client.exposition import choose_encoder

from ..config import Settings, SettingsError
from ..spec import EVENT_TYPES
from ..store.engine import STATEMENT_TIME

#: The registry of this process's metrics.
REGISTRY = CollectorRegistry(auto_describe=True)
for _collector in (PROCESS_COLLECTOR, PLATFORM_COLLECTOR, GC_COLLECTOR):
    REGISTRY.register(_collector)

#: Buckets (ms) of the HTTP histogram: a kept answer takes about a millisecond, a write a few,
#: a 4.4 of thousands of flags hundreds.
HTTP_BUCKETS_MS = (1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 2500.0, 5000.0, 10000.0)
#: Buckets (s) of a request's time in SQL.
DATABASE_BUCKETS_S = (0.0002, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)

HTTP_DURATION = Histogram(
    "http_request_duration_milliseconds",
    "Time from a request's arrival in the app until its answer's head is ready, in ms, by route "
    "template ((hidden): no route matched), method and status.",
    ["path", "method", "status"],
    buckets=HTTP_BUCKETS_MS,
    registry=REGISTRY,
)
DATABASE_TIME = Histogram(
    "flagadmin_request_database_seconds",
    "Time a request's thread spent in SQL (statements, fetches, commits) while it was answered.",
    ["path", "method"],
    buckets=DATABASE_BUCKETS_S,
    registry=REGISTRY,
)
EVENTS_RECORDED = Counter(
    "flagadmin_events_recorded_total",
    "Events (every change: flags, projects, tokens, integrations, users) committed by this process, by type.",
    ["type"],
    registry=REGISTRY,
)
WEBHOOK_DELIVERIES = Counter(
    "flagadmin_webhook_deliveries_total",
    "Delivery attempts recorded by this process's delivery threads, by the delivery's new state "
    "(delivered; pending: to be retried; failed: given up; cancelled: nothing sent).",
    ["state"],
    registry=REGISTRY,
)
WEBHOOK_ATTEMPT = Histogram(
    "flagadmin_webhook_attempt_seconds",
    "Time one webhook attempt's HTTP request took (sent attempts only).",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
    registry=REGISTRY,
)
WEBHOOK_LAG = Histogram(
    "flagadmin_webhook_delivery_lag_seconds",
    "Time from an event's creation to its delivery, retries included (delivered ones only).",
    buckets=(0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 1800.0, 7200.0, 36000.0, 86400.0),
    registry=REGISTRY,
)
SCIM_REQUESTS = Counter(
    "flagadmin_scim_requests_total",
    "Requests to the SCIM API, by resource type ((root), (unknown) for other paths), method and status.",
    ["resource", "method", "status"],
    registry=REGISTRY,
)
#: Moved once per registration an SDK posts and flagadmin accepts (``api``: ``client`` for
#: ``POST /api/client/register``, ``frontend`` for the Frontend API's
#: ``/api/frontend/client/register``), by the views of those routes: :func:`sdk_registration`.
SDK_REGISTRATIONS = Counter(
    "flagadmin_sdk_registrations_total",
    "SDK registrations accepted (an application instance announcing itself), by API.",
    ["api"],
    registry=REGISTRY,
)
#: Moved once per metrics report flagadmin accepts (``api``: ``client`` for ``POST
#: /api/client/metrics``, ``edge`` for Unleash Edge's ``/api/client/metrics/bulk``, ``frontend``
#: for the Frontend API's ``/api/frontend/client/metrics``), by the views of those routes:
#: :func:`sdk_metrics_post`.
SDK_METRICS_POSTS = Counter(
    "flagadmin_sdk_metrics_posts_total",
    "SDK metrics reports accepted, by API.",
    ["api"],
    registry=REGISTRY,
)
CACHE_HITS = Counter(
    "flagadmin_answer_cache_hits_total",
    "Lookups of an answer cache that found a kept answer still true, by cache.",
    ["cache"],
    registry=REGISTRY,
)
CACHE_MISSES = Counter(
    "flagadmin_answer_cache_misses_total",
    "Lookups of an answer cache that found nothing, or an answer no longer true, by cache.",
    ["cache"],
    registry=REGISTRY,
)

#: The states of the delivery counter and the APIs of the SDK counters: their series exist
#: from the start (at 0), so that a rate over them is never missing.
DELIVERY_STATES = ("delivered", "pending", "failed", "cancelled")
SDK_APIS = ("client", "frontend", "edge")

for _type in EVENT_TYPES:
    EVENTS_RECORDED.labels(_type)
for _state in DELIVERY_STATES:
    WEBHOOK_DELIVERIES.labels(_state)
for _api in SDK_APIS:
    SDK_REGISTRATIONS.labels(_api)
    SDK_METRICS_POSTS.labels(_api)

#: The ``path`` label of a request no route matched (the reference server's word).
UNMATCHED = "(hidden)"
#: Methods kept as they are in the ``method`` label; any other is ``OTHER``.
METHODS = frozenset(("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"))

#: A variable of a werkzeug rule, with or without converter: ``<id>``, ``<path:rest>``.
_VARIABLE = re.compile(r"<(?:[^<>:]+:)?([^<>:]+)>")


def route_template(rule: str | None) -> str:
    """The ``path`` label of a werkzeug rule: its variables written ``:name`` as the reference
    server's routes are (``/api/admin/projects/<projectId>`` -> ``/api/admin/projects/:projectId``);
    :data:`UNMATCHED` for None."""
    return UNMATCHED if rule is None else _VARIABLE.sub(r":\1", rule)


# --- HTTP requests --------------------------------------------------------------------------

#: Where the WSGI call's start is kept in its environ: (perf_counter(), STATEMENT_TIME.seconds).
STARTED = "flagadmin.telemetry.started"

#: (rule, method, status) -> (the HTTP histogram's child, the database histogram's child).
_series: dict[tuple[str | None, str, int], tuple[Any, Any]] = {}
_series_lock = threading.Lock()


def _series_of(key: tuple[str | None, str, int]) -> tuple[Any, Any]:
    """The histogram children of ``key``, made once (labels resolved once per route, method and
    status, not per request)."""
    with _series_lock:
        found = _series.get(key)
        if found is None:
            rule, method, status = key
            path = route_template(rule)
            found = _series[key] = (
                HTTP_DURATION.labels(path, method, str(status)),
                DATABASE_TIME.labels(path, method),
            )
        return found


class _Timed:
    """WSGI middleware noting when a request entered the app (the clock, and its thread's time
    in SQL so far) in its environ, for :func:`_observe`."""

    def __init__(self, wsgi_app: Callable[..., Iterable[bytes]]):
        self.wsgi_app = wsgi_app

    def __call__(self, environ: dict[str, Any], start_response: Callable) -> Iterable[bytes]:
        environ[STARTED] = (perf_counter(), STATEMENT_TIME.seconds)
        return self.wsgi_app(environ, start_response)


def _observe(response: Response) -> Response:
    """After the view and every other hook: observe the request in both histograms."""
    current = request._get_current_object()
    started = current.environ.get(STARTED)
    if started is not None:
        rule = current.url_rule
        method = current.method
        if method not in METHODS:
            method = "OTHER"
        key = (None if rule is None else rule.rule, method, response.status_code)
        series = _series.get(key) or _series_of(key)
        series[0].observe((perf_counter() - started[0]) * 1000.0)
        series[1].observe(STATEMENT_TIME.seconds - started[1])
    return response


# --- what other parts count -------------------------------------------------------------------


def event_committed(event_type: str) -> None:
    """Count one committed event of ``event_type`` (an :func:`flagadmin.events.on_committed`
    listener)."""
    EVENTS_RECORDED.labels(event_type).inc()


def delivery_outcome(state: str, attempt_s: float | None, lag_s: float | None) -> None:
    """Count one delivery outcome (an :func:`flagadmin.integrations.delivery.on_outcome`
    listener): its state, its attempt's seconds and, delivered, its lag."""
    WEBHOOK_DELIVERIES.labels(state if state in DELIVERY_STATES else "failed").inc()
    if attempt_s is not None:
        WEBHOOK_ATTEMPT.observe(attempt_s)
    if lag_s is not None:
        WEBHOOK_LAG.observe(lag_s)


#: SCIM rule -> its resource label.
_scim_resources: dict[str, str] = {}


def scim_resource(rule: str, prefix: str = "/scim/v2") -> str:
    """The ``resource`` label of a SCIM rule: its first segment after ``prefix`` (``Users``,
    ``Groups``, ``Schemas``, ``.search``...), ``(root)`` for the prefix itself, ``(unknown)``
    for the catch-all rule of other paths."""
    found = _scim_resources.get(rule)
    if found is None:
        segment = rule.removeprefix(prefix).strip("/").split("/", 1)[0]
        found = "(root)" if not segment else "(unknown)" if segment.startswith("<") else segment
        _scim_resources[rule] = found
    return found


def scim_request(rule: str | None, method: str, status: int) -> None:
    """Count one SCIM request by the resource of its ``rule``, its method and its status."""
    resource = "(unknown)" if rule is None else scim_resource(rule)
    SCIM_REQUESTS.labels(resource, method if method in METHODS else "OTHER", str(status)).inc()


def sdk_registration(api: str) -> None:
    """Count one accepted SDK registration of ``api`` (``client``, ``frontend`` or ``edge``)."""
    SDK_REGISTRATIONS.labels(api if api in SDK_APIS else "client").inc()


def sdk_metrics_post(api: str) -> None:
    """Count one accepted SDK metrics report of ``api`` (``client``, ``frontend`` or ``edge``)."""
    SDK_METRICS_POSTS.labels(api if api in SDK_APIS else "client").inc()


def cache_counters(name: str) -> tuple[Any, Any]:
    """The (hits, misses) counters of the answer cache ``name`` (``web/cache.py``)."""
    return CACHE_HITS.labels(name), CACHE_MISSES.labels(name)


# --- serving them -----------------------------------------------------------------------------


def exposition(accept: str | None) -> tuple[bytes, str]:
    """Every metric of :data:`REGISTRY` in the format ``accept`` asks for (the Prometheus text
    format, or OpenMetrics when asked first): ``(body, Content-Type)``."""
    encoder, content_type = choose_encoder(accept or "")
    return encoder(REGISTRY), content_type


#: The side servers this process started, by address (``FLAGADMIN_PROMETHEUS_ADDRESS``).
_side_servers: dict[tuple[str, int], Any] = {}
_side_lock = threading.Lock()


def serve_elsewhere(host: str, port: int) -> None:
    """Serve :data:`REGISTRY` on ``host:port`` (at any path), by prometheus_client's own small
    server in a daemon thread; once per process and address.

    :raise SettingsError: nothing can listen there (names ``FLAGADMIN_PROMETHEUS_ADDRESS``).
    """
    with _side_lock:
        if (host, port) in _side_servers:
            return
        try:
            server, _ = start_http_server(port, addr=host, registry=REGISTRY)
        except OSError as exc:
            raise SettingsError(
                f"FLAGADMIN_PROMETHEUS_ADDRESS={host}:{port}: cannot listen there ({exc.strerror or exc}); "
                "give a free port of an address of this machine"
            ) from exc
        _side_servers[(host, port)] = server


def init_app(app: Flask, settings: Settings) -> None:
    """Time ``app``'s requests when the metrics are served (``FLAGADMIN_PROMETHEUS``), and serve
    them on ``FLAGADMIN_PROMETHEUS_ADDRESS`` when it is set. Call it before any other request
    hook is registered: the timer then sees every hook's work (Flask runs ``after_request``
    functions last registered, first).

    :raise SettingsError: the address cannot be listened on.
    """
    disable_created_metrics()
    if not settings.prometheus:
        return
    app.wsgi_app = _Timed(app.wsgi_app)
    app.after_request(_observe)
    if settings.prometheus_address is not None:
        serve_elsewhere(*settings.prometheus_address)
