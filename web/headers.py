"""Response headers of the admin API: caching rules, no sniffing, CORS only where configured,
gzip for large bodies when the client accepts it.

Every response under ``/api/admin`` (errors included) carries ``X-Content-Type-Options:
nosniff`` (a browser must take the declared ``application/json`` at its word) and a
``Cache-Control``: ``private, no-cache`` on the answers of conditional operations (4.2, 4.3,
4.4: the caller may keep the body and revalidate it with its ETag; no shared cache may keep
it), ``no-store`` on everything else (answers that hold tokens, errors). CORS headers are sent
only when ``FLAGADMIN_CORS_ORIGINS`` names origins, and then only for ``/api/admin/*``
(flask-cors).

``OPTIONS`` on any route answers 200 with ``Allow`` and a JSON body saying the same
(:func:`options_response`), except a CORS preflight when CORS is configured, which flask-cors
answers as it always has.
"""

from __future__ import annotations

import re

import orjson
from flask import Flask, Response, request
from flask.globals import request_ctx
from flask_compress import Compress
from flask_cors import CORS

#: Paths of the admin API: ``/api/admin`` and everything under it.
ADMIN_API = re.compile(r"/api/admin(?:/.*)?\Z")

#: ``Cache-Control`` of every admin API answer that does not set its own.
NO_STORE = "no-store"

#: flask-compress settings: gzip only (every client has it), for JSON and SCIM's JSON (a
#: 10,000-member group is about 1 MB), level 1 (JSON still shrinks
#: about 8 times, at a fraction of the CPU of the default level 6), bodies of 1 KiB or more,
#: streamed bodies (spec 4.4) included, and ETags kept distinct per encoding
#: (``"<etag>:gzip"``; see :func:`flagadmin.web.responses.if_none_match`).
COMPRESSION = {
    "COMPRESS_MIMETYPES": ["application/json", "application/scim+json"],
    "COMPRESS_ALGORITHM": ["gzip"],
    "COMPRESS_ALGORITHM_STREAMING": ["gzip"],
    "COMPRESS_LEVEL": 1,
    "COMPRESS_MIN_SIZE": 1024,
    "COMPRESS_STREAMING_ENDPOINT_CONDITIONAL": ["archived_features.get_archived_features"],
}


class NegotiatedResponse(Response):
    """A response whose content coding is chosen already: an answer kept with its own gzip
    (:func:`flagadmin.web.responses.answer_response`), sent gzipped or as it is; a 304; or a
    JSON body too short to gzip (:func:`flagadmin.web.jsonio.json_response`). It
    varies on ``Accept-Encoding`` (RFC 9110 section 12.5.5: set here, so every shared cache
    keys it by the coding), and the compression hook passes it by instead of examining it
    again (about 14 µs of each such request).
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.headers["Vary"] = "Accept-Encoding"


def _secure(response: Response) -> Response:
    if ADMIN_API.match(request.path):
        headers = response.headers
        headers["X-Content-Type-Options"] = "nosniff"
        if response.status_code not in (200, 304) or "Cache-Control" not in headers:
            headers["Cache-Control"] = NO_STORE
    return response


def is_preflight() -> bool:
    """True for a CORS preflight: ``OPTIONS`` with ``Origin`` and
    ``Access-Control-Request-Method`` (Fetch standard, CORS protocol)."""
    headers = request.headers
    return "Origin" in headers and "Access-Control-Request-Method" in headers


def options_response() -> Response:
    """The answer to ``OPTIONS`` on a route that does not handle it itself: 200, ``Allow``
    listing the methods of the path, and the same in JSON,
    ``{"path": <path>, "allow": [<method>...], "message": <sentence>}`` (RFC 9110 section
    9.3.7: a 200 to OPTIONS should send ``Allow``; the body is not defined, so it says what
    the header says). ``Cache-Control: no-store``, as every other answer of the API."""
    methods = sorted(request_ctx.url_adapter.allowed_methods())
    if request.blueprint == "scim":
        described = "the SCIM resources are described at /scim/v2/ResourceTypes and /scim/v2/Schemas"
    else:
        described = "the operations are described at /docs/openapi.json"
    body = {
        "path": request.path,
        "allow": methods,
        "message": f"{request.path} answers {', '.join(methods)}; {described}.",
    }
    response = NegotiatedResponse(orjson.dumps(body), status=200, mimetype="application/json")
    response.allow.update(methods)
    response.headers["Cache-Control"] = NO_STORE
    return response


def init_app(app: Flask, cors_origins: tuple[str, ...]) -> None:
    """Add the caching and sniffing headers to ``app``'s admin API responses, gzip for large
    bodies, and CORS for ``cors_origins`` (none: no CORS headers at all)."""
    for key, value in COMPRESSION.items():
        app.config.setdefault(key, value)
    app.config["COMPRESS_REGISTER"] = False
    compress = Compress(app)

    @app.after_request
    def _finish(response: Response) -> Response:
        """flask-compress's hook (for every response but a :class:`NegotiatedResponse`), then
        the caching and sniffing headers: one hook, so that Flask looks one up per request."""
        if not isinstance(response, NegotiatedResponse):
            response = compress.after_request(response)
        return _secure(response)

    if cors_origins:
        CORS(app, resources={ADMIN_API: {"origins": list(cors_origins)}}, expose_headers=["Retry-After"])

    flask_options = app.make_default_options_response

    def make_default_options_response() -> Response:
        """Flask calls this for ``OPTIONS`` on a route without a view of its own for it (and
        only then: no cost to other requests). A preflight, when CORS is on, gets Flask's
        empty answer that flask-cors completes, unchanged; every other ``OPTIONS`` the JSON
        of :func:`options_response`."""
        if cors_origins and is_preflight():
            return flask_options()
        return options_response()

    # Set on the instance: the app's class is the factory's (Flask documents subclassing).
    app.make_default_options_response = make_default_options_response
