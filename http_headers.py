"""Response headers of the admin API: no caching, no sniffing, CORS only where configured.

Every response under ``/api/admin`` (errors included) carries :data:`SECURITY_HEADERS`: answers
hold tokens and user data, so no cache may keep them, and a browser must take the declared
``application/json`` at its word. CORS headers are sent only when
``FLAGADMIN_CORS_ORIGINS`` names origins, and then only for ``/api/admin/*`` (flask-cors).
"""

from __future__ import annotations

import re

from flask import Flask, Response, request
from flask_cors import CORS

#: Paths of the admin API: ``/api/admin`` and everything under it.
ADMIN_API = re.compile(r"/api/admin(?:/.*)?\Z")

SECURITY_HEADERS = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"}


def _secure(response: Response) -> Response:
    if ADMIN_API.match(request.path):
        response.headers.update(SECURITY_HEADERS)
    return response


def init_app(app: Flask) -> None:
    """Add the security headers to ``app``'s admin API responses, and CORS for the origins of
    ``SETTINGS.cors_origins`` (none: no CORS headers at all)."""
    app.after_request(_secure)
    origins = list(app.config["SETTINGS"].cors_origins)
    if origins:
        CORS(app, resources={ADMIN_API: {"origins": origins}}, expose_headers=["Retry-After"])
