"""``GET /health``: 200 while the database can be read, else 503. No authentication.

For load balancers and process supervisors; not an operation of the admin API, so it is not in
its OpenAPI document. A failure answers the error envelope (spec 7) and is logged with its
cause, which the answer leaves out.
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
