"""Response headers of the admin API: no caching, no sniffing, CORS only where configured,
gzip for large bodies when the client accepts it.

Every response under ``/api/admin`` (errors included) carries :data:`SECURITY_HEADERS`: answers
hold tokens and user data, so no cache may keep them, and a browser must take the declared
``application/json`` at its word. CORS headers are sent only when
``FLAGADMIN_CORS_ORIGINS`` names origins, and then only for ``/api/admin/*`` (flask-cors).
"""

from __future__ import annotations

import re

from flask import Flask, Response, request
from flask_compress import Compress
from flask_cors import CORS

#: Paths of the admin API: ``/api/admin`` and everything under it.
ADMIN_API = re.compile(r"/api/admin(?:/.*)?\Z")

SECURITY_HEADERS = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"}

#: flask-compress settings: gzip only (every client has it), level 1 (JSON still shrinks
#: about 8 times, at a fraction of the CPU of the default level 6), bodies of 1 KiB or more,
#: streamed bodies (spec 4.4) included, and ETags kept distinct per encoding.
COMPRESSION = {
    "COMPRESS_MIMETYPES": ["application/json"],
    "COMPRESS_ALGORITHM": ["gzip"],
    "COMPRESS_ALGORITHM_STREAMING": ["gzip"],
    "COMPRESS_LEVEL": 1,
    "COMPRESS_MIN_SIZE": 1024,
    "COMPRESS_STREAMING_ENDPOINT_CONDITIONAL": ["archived_features.get_archived_features"],
}


def _secure(response: Response) -> Response:
    if ADMIN_API.match(request.path):
        response.headers.update(SECURITY_HEADERS)
    return response


def init_app(app: Flask) -> None:
    """Add the security headers to ``app``'s admin API responses, gzip for large bodies, and
    CORS for the origins of ``SETTINGS.cors_origins`` (none: no CORS headers at all)."""
    app.after_request(_secure)
    for key, value in COMPRESSION.items():
        app.config.setdefault(key, value)
    Compress(app)
    origins = list(app.config["SETTINGS"].cors_origins)
    if origins:
        CORS(app, resources={ADMIN_API: {"origins": origins}}, expose_headers=["Retry-After"])
