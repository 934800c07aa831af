"""The one error envelope of flagadmin (spec 2.8, 7) and the handlers that produce it.

Every error response is ``{"id": <UUID>, "name": <kind>, "message": <what to do>}``; 400
responses add ``"details": [{"message": ...}]``, one entry per problem. Handlers turn Werkzeug's
HTTP exceptions (unknown path, wrong method, body too large) and unexpected failures into the
same envelope, so no request ever gets an HTML page or a traceback.
"""

from __future__ import annotations

import logging
import uuid

import orjson
from flask import Flask, Response, current_app, request
from marshmallow import Schema, fields
from werkzeug.exceptions import HTTPException
from werkzeug.routing import RequestRedirect

from .. import refusals
from ..store import Conflict, Unavailable
from .access_log import redact_tokens
from .jsonio import json_response

log = logging.getLogger("flagadmin")

#: Error name per HTTP status for errors raised outside flagadmin's own code.
NAMES = {
    400: "BadDataError",
    401: "AuthenticationRequired",
    403: "NoAccessError",
    404: "NotFoundError",
    405: "MethodNotAllowedError",
    406: "NotAcceptableError",
    308: "PermanentRedirect",
    409: "ConflictError",
    413: "ContentTooLargeError",
    414: "URITooLongError",
    415: "UnsupportedMediaTypeError",
    429: "TooManyRequestsError",
    431: "RequestHeaderFieldsTooLargeError",
    500: "InternalError",
    503: "ServiceUnavailableError",
}


class APIError(Exception):
    """An error answered with the envelope: ``status`` (int), ``name`` (str), a message.

    ``details`` is a list of messages (400 only); ``headers`` extra response headers.
    """

    status = 500
    name = "InternalError"

    def __init__(
        self,
        message: str,
        *,
        details: list[str] | None = None,
        headers: dict[str, str] | None = None,
    ):
        super().__init__(message)
        self.message = message
        self.details = details
        self.headers = headers or {}


class BadDataError(APIError):
    """400: a parameter is malformed or out of range (spec 7 leaves 400 open)."""

    status, name = 400, "BadDataError"


class AuthenticationRequired(APIError):
    """401: no valid API token in the Authorization header (spec 5.2)."""

    status, name = 401, "AuthenticationRequired"


class NoAccessError(APIError):
    """403: a valid token whose user lacks the permission (spec 5.3)."""

    status, name = 403, "NoAccessError"


class NotFoundError(APIError):
    """404: the requested resource does not exist (spec 7)."""

    status, name = 404, "NotFoundError"


class ConflictError(APIError):
    """409: the request conflicts with what exists (a name taken, a state already reached)."""

    status, name = 409, "ConflictError"


class TooManyRequestsError(APIError):
    """429: too many failed authentications from one client address."""

    status, name = 429, "TooManyRequestsError"


class ServiceUnavailableError(APIError):
    """503: the database cannot be read."""

    status, name = 503, "ServiceUnavailableError"


def error_body(status: int, name: str, message: str, details: list[str] | None = None) -> dict:
    """Return the envelope as a dict; 400s always carry ``details``."""
    body = {"id": str(uuid.uuid4()), "name": name, "message": message}
    if status == 400:
        body["details"] = [{"message": m} for m in (details or [message])]
    return body


def error_response(
    status: int,
    name: str,
    message: str,
    details: list[str] | None = None,
    headers: dict[str, str] | None = None,
) -> Response:
    """Return the envelope as a JSON response with ``status``."""
    response = json_response(error_body(status, name, message, details), status)
    response.headers.update(headers or {})
    return response


def _handle_api_error(exc: APIError) -> Response:
    return error_response(exc.status, exc.name, exc.message, exc.details, exc.headers)


#: The envelope's ``name`` for each domain refusal (see :mod:`flagadmin.refusals`).
REFUSAL_NAMES: dict[type[refusals.Refusal], str] = {
    refusals.Invalid: "BadDataError",
    refusals.Forbidden: "NoAccessError",
    refusals.NotFound: "NotFoundError",
    refusals.Conflict: "ConflictError",
    refusals.Unavailable: "ServiceUnavailableError",
}


def _handle_refusal(exc: refusals.Refusal) -> Response:
    """The one place a domain refusal becomes the envelope (spec 7): its status, its name, its
    message and, for a 400, one detail per problem; a 503 says when to retry."""
    name = next((n for kind, n in REFUSAL_NAMES.items() if isinstance(exc, kind)), NAMES[exc.status])
    headers = {"Retry-After": str(exc.retry_after_s)} if isinstance(exc, refusals.Unavailable) else None
    return error_response(exc.status, name, exc.message, exc.details, headers)


def _handle_http_exception(exc: HTTPException) -> Response:
    status = exc.code or 500
    if status == 404:
        message = f"The path {request.path} does not exist. The API is described at /docs/openapi.json."
    elif status == 405:
        allowed = exc.valid_methods or []
        message = f"{request.method} is not allowed on {request.path}; use {', '.join(allowed)}."
    elif status == 413:
        message = too_large_message()
    else:
        message = exc.description or exc.name
    response = error_response(status, NAMES.get(status, exc.name.replace(" ", "") + "Error"), message)
    allow = dict(exc.get_headers()).get("Allow")
    if allow:
        response.headers["Allow"] = allow
    return response


def too_large_message() -> str:
    """What a 413 says: the body's size when announced, the limit in bytes, and whether the
    operation takes a body at all (an operation declared without a body schema takes none;
    the limit still bounds what is read of one)."""
    limit = request.max_content_length or current_app.config.get("MAX_CONTENT_LENGTH")
    size = request.content_length
    sent = f"The request body is {size} bytes" if size is not None else "The request body is too large"
    view = current_app.view_functions.get(request.endpoint) if request.endpoint else None
    declaration = getattr(view, "operation", None)
    where = f"{request.method} {request.path}"
    if declaration is not None and declaration.body_schema is not None:
        return f"{sent}; {where} takes a JSON body of at most {limit} bytes."
    if declaration is not None:
        return f"{sent}; {where} takes no body (at most {limit} bytes are read of one)."
    return f"{sent}; the limit is {limit} bytes."


def _handle_unavailable(exc: Unavailable) -> Response:
    log.warning("database unavailable on %s %s: %s", request.method, redact_tokens(request.path), exc)
    return error_response(
        503,
        "ServiceUnavailableError",
        "The database is busy or cannot be opened right now; retry in a moment.",
        headers={"Retry-After": "1"},
    )


def _handle_conflict(exc: Conflict) -> Response:
    log.info("conflict on %s %s: %s", request.method, redact_tokens(request.path), exc)
    return error_response(
        409, "ConflictError", "The request conflicts with what is stored; reload and retry."
    )


def _handle_unexpected(exc: Exception) -> Response:
    log.exception("unexpected failure on %s %s", request.method, redact_tokens(request.path))
    return error_response(
        500,
        "InternalError",
        "The server failed to answer this request. The failure was logged; retry later.",
    )


def redirect_in_json(response: Response) -> Response:
    """Give the redirect of routing (Werkzeug's 308 for a path with a doubled slash, ``//``,
    or without the trailing slash its route has) the envelope in place of Werkzeug's HTML:
    the same status and ``Location``, and a message naming where to send the request. Flask
    answers those redirects without calling an error handler, so this runs after the request
    (on the response object itself, keeping the headers other hooks set)."""
    redirect = request.routing_exception
    if isinstance(redirect, RequestRedirect) and response.status_code == redirect.code:
        status = redirect.code
        location = response.headers.get("Location", redirect.new_url)
        message = f"The path is {location}: send the request there (the same method and body)."
        response.set_data(orjson.dumps(error_body(status, NAMES.get(status, "Redirect"), message)))
        response.mimetype = "application/json"
    return response


def register(app: Flask) -> None:
    """Install the envelope for every error on ``app``, and for routing's redirects."""
    app.register_error_handler(APIError, _handle_api_error)
    app.register_error_handler(refusals.Refusal, _handle_refusal)
    app.register_error_handler(HTTPException, _handle_http_exception)
    app.register_error_handler(Unavailable, _handle_unavailable)
    app.register_error_handler(Conflict, _handle_conflict)
    app.register_error_handler(Exception, _handle_unexpected)
    app.after_request(redirect_in_json)


class ErrorDetailSchema(Schema):
    """One problem of a 400 answer."""

    message = fields.String(required=True)


class ErrorSchema(Schema):
    """The error record of every non-2xx answer (spec 2.8)."""

    id = fields.String(
        required=True, metadata={"format": "uuid", "description": "Id of this error instance."}
    )
    name = fields.String(required=True, metadata={"description": "Name of the error kind."})
    message = fields.String(required=True, metadata={"description": "What went wrong and what to do."})
    details = fields.List(
        fields.Nested(ErrorDetailSchema), metadata={"description": "One entry per problem (400 only)."}
    )


def outside_base_path(environ: dict, start_response) -> list[bytes]:
    """WSGI app answering the JSON 404 envelope for paths outside ``--base-uri-path``."""
    path = environ.get("SCRIPT_NAME", "") + environ.get("PATH_INFO", "")
    body = orjson.dumps(error_body(404, "NotFoundError", f"The path {path} does not exist on this server."))
    start_response(
        "404 NOT FOUND", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
    )
    return [body]
