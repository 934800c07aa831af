"""``GET /health`` and ``GET /ready``: 200 while the database can be read, else 503. No
authentication.

For load balancers, orchestrators and process supervisors; not operations of the admin API, so
they are not in its OpenAPI document. Both run the same check (a fresh connection and a cheap
query, :func:`flagadmin.store.health.check`) and log a failure with its cause, which the answer
leaves out. ``/health`` is flagadmin's own (``{"status": "ok"}``, a failure in the error
envelope of spec 7); ``/ready`` answers as the reference server's readiness check does
(``{"health": "GOOD"}``, a failure as 503 with no body), so that probes written for it work.
"""

from __future__ import annotations

import logging

from flask import Blueprint, Response

from ..store import StoreError, health
from ..web.errors import ServiceUnavailableError
from ..web.jsonio import json_response
from ..web.state import state

bp = Blueprint("health", __name__)

log = logging.getLogger("flagadmin")


@bp.get("/health")
def get_health() -> Response:
    """200 ``{"status": "ok"}`` when a query on the database answers, else 503."""
    try:
        health.check(state().database)
    except StoreError as exc:
        log.warning("health check failed: the database cannot be read: %s", exc)
        raise ServiceUnavailableError(
            "The database cannot be read; the server log says why. Retry once it is restored."
        ) from exc
    response = json_response({"status": "ok"})
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.get("/ready")
def get_ready() -> Response:
    """200 ``{"health": "GOOD"}`` while a query on the database answers; else 503 with no body
    (the reference server's ``readyCheckSchema`` and its empty 503)."""
    try:
        health.check(state().database)
    except StoreError as exc:
        log.warning("readiness check failed: the database cannot be read: %s", exc)
        response = Response(status=503)
        del response.headers["Content-Type"]  # no body, so no type
        response.headers["Retry-After"] = "1"
    else:
        response = json_response({"health": "GOOD"})
    response.headers["Cache-Control"] = "no-store"
    return response
