"""``GET /internal-backstage/prometheus``: this process's metrics in the Prometheus exposition
format, on the reference server's path. No authentication, as the reference's backstage.

The metrics themselves, and what moves each, are :mod:`flagadmin.web.telemetry`'s; this module
serves them and wires the domain's hooks to them (:func:`init_app`): events by type through
:func:`flagadmin.events.on_committed`, webhook delivery outcomes through
:func:`flagadmin.integrations.delivery.on_outcome`. Neither the events nor the integrations
know of Prometheus.

Not an operation of the admin API (it is absent from the OpenAPI document): it answers the
exposition format, and Prometheus asks for it. ``FLAGADMIN_PROMETHEUS=false`` makes it answer
404, as ``FLAGADMIN_PROMETHEUS_ADDRESS`` does (the metrics are then served on that address
alone). Nothing in it is a token or a user's data (see the labels in ``web/telemetry.py``);
``docs/operations.md`` says how to keep it from the internet all the same.
"""

from __future__ import annotations

import threading

from flask import Blueprint, Flask, Response, request
from werkzeug.exceptions import NotFound

from .. import events
from ..config import Settings
from ..integrations import delivery
from ..web import telemetry
from ..web.state import state

bp = Blueprint("backstage", __name__)

#: The reference server's path of its Prometheus metrics.
PATH = "/internal-backstage/prometheus"

_subscribed = False
_subscribed_lock = threading.Lock()


@bp.get(PATH)
def get_prometheus() -> Response:
    """200: every metric of this process, in the format the ``Accept`` header asks for (the
    Prometheus text format by default, OpenMetrics when asked); 404 when the metrics are off or
    served on another address."""
    settings = state().settings
    if not settings.prometheus or settings.prometheus_address is not None:
        raise NotFound()
    body, content_type = telemetry.exposition(request.headers.get("Accept"))
    response = Response(body, content_type=content_type)
    response.headers["Cache-Control"] = "no-store"
    return response


def _subscribe() -> None:
    """Count the domain's events and delivery outcomes, once per process (the hooks are the
    process's, as the metrics are)."""
    global _subscribed
    with _subscribed_lock:
        if _subscribed:
            return
        events.on_committed(telemetry.event_committed)
        delivery.on_outcome(telemetry.delivery_outcome)
        _subscribed = True


def init_app(app: Flask, settings: Settings) -> None:
    """Time ``app``'s requests and serve the metrics as ``settings`` say
    (:func:`flagadmin.web.telemetry.init_app`), and count the domain's events and deliveries.
    Call it before any other request hook is registered.

    :raise flagadmin.config.SettingsError: ``FLAGADMIN_PROMETHEUS_ADDRESS`` cannot be listened on.
    """
    telemetry.init_app(app, settings)
    _subscribe()
