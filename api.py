"""Declaring an operation once: route, permission, query schema, response schema, statuses.

:func:`operation` registers a view on a blueprint and records an :class:`Operation`; the same
record drives request handling (authentication, permission, query validation, serialization)
and the OpenAPI document (``openapi.py``), so the two cannot drift apart.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import sqlite_utils
from flask import Blueprint, Flask, Response, current_app, request
from marshmallow import Schema, ValidationError
from werkzeug.exceptions import RequestEntityTooLarge

from . import auth
from .errors import BadDataError
from .fields import validation_messages
from .jsonio import json_response
from .store import db as store_db

#: Status -> description of every status but 200 an operation may answer, for the OpenAPI document.
STATUS_DESCRIPTIONS = {
    400: "A query parameter is malformed or out of range (BadDataError).",
    401: "No valid API token in the Authorization header (AuthenticationRequired).",
    403: "The token's user lacks the permission; the message names it (NoAccessError).",
    404: "The resource does not exist (NotFoundError).",
    304: "Not Modified: the representation still has the ETag sent in If-None-Match.",
    413: "The request has a body larger than 64 KiB; no operation takes one (ContentTooLargeError).",
    429: "Too many failed authentications from this address (TooManyRequestsError).",
    503: "The database is busy or unreadable; retry after Retry-After seconds (ServiceUnavailableError).",
}

#: Statuses every operation can answer, whatever it does (429: every operation authenticates).
COMMON_STATUSES = (429, 503)


@dataclass
class Operation:
    """One operation of the API as declared by :func:`operation`."""

    endpoint: str
    rule: str
    method: str
    section: str
    summary: str
    description: str
    response_schema: Schema | None
    query_schema: Schema | None = None
    permission: str | None = auth.ANY
    statuses: tuple[int, ...] = (401,)
    deprecated: bool = False
    conditional: bool = False
    tag: str = "admin"
    response_headers: dict[str, str] = field(default_factory=dict)


#: Every operation declared so far, in declaration order.
OPERATIONS: list[Operation] = []


CONNECTIONS = "flagadmin.connections"


def database() -> sqlite_utils.Database:
    """Return the calling thread's connection to the app's database, opened on first use.

    One connection per waitress thread, kept for the life of the app: opening a connection and
    setting its pragmas costs more than most requests. A connection never leaves its thread.
    """
    local = current_app.extensions[CONNECTIONS]
    db = getattr(local, "db", None)
    if db is None:
        db = local.db = store_db.connect(current_app.config["DATABASE"])
    return db


def end_transaction(exc: BaseException | None = None) -> None:
    """Roll back a transaction a failed request left open, so the next one starts clean."""
    db = getattr(current_app.extensions[CONNECTIONS], "db", None)
    if db is not None and db.conn.in_transaction:
        db.conn.rollback()


def parse_query(schema: Schema) -> dict[str, Any]:
    """Load the query string with ``schema``.

    :raise BadDataError: a parameter is repeated, unknown, malformed or out of range; the
        details name each parameter.
    """
    repeated = [name for name in request.args if len(request.args.getlist(name)) > 1]
    if repeated:
        raise BadDataError(
            f"Query parameter {repeated[0]} is given more than once; give it once.",
            details=_at_most(MAX_DETAILS, [f"{name}: given more than once" for name in repeated]),
        )
    try:
        return schema.load(request.args.to_dict())
    except ValidationError as exc:
        details = _at_most(MAX_DETAILS, validation_messages(exc))
        raise BadDataError("Invalid query parameters: " + "; ".join(details), details=details) from exc


#: A 400 lists at most this many problems, so that a query of thousands of bad parameters
#: gets a small answer rather than one ten times its own size.
MAX_DETAILS = 20


def _at_most(n: int, details: list[str]) -> list[str]:
    """The first ``n`` details, plus one saying how many more were left out."""
    if len(details) <= n:
        return details
    return [*details[:n], f"... and {len(details) - n} more problems"]


def operation(
    blueprint: Blueprint,
    rule: str,
    *,
    method: str = "GET",
    section: str,
    summary: str,
    response: Schema | None,
    query: Schema | None = None,
    permission: str | None = auth.ANY,
    statuses: tuple[int, ...] = (401,),
    deprecated: bool = False,
    response_headers: dict[str, str] | None = None,
    conditional: bool = False,
) -> Callable:
    """Register the decorated view as an operation of spec section ``section``.

    The view is called as ``view(caller, db, **path_args, **query_args)`` after the caller is
    authenticated (401) and holds ``permission`` (403) and the query string has loaded with
    ``query`` (400). It returns data, which is dumped with ``response`` into a 200 JSON
    response, or a ready :class:`flask.Response`. ``statuses`` lists the error statuses the
    operation can answer, for the OpenAPI document.

    A view that builds its body itself (in the wire shape that ``response`` documents, and
    against which the tests validate every answer) returns it as a Response, with no
    marshmallow pass. ``conditional=True``: the answer carries an
    ``ETag`` (the view's own, else a digest of the body) and ``If-None-Match`` gets 304.
    """

    def decorator(view: Callable) -> Callable:
        @functools.wraps(view)
        def endpoint(**path_args: Any) -> Response:
            db = database()
            caller = auth.authenticate(db)
            auth.require(caller, permission)
            args = parse_query(query) if query is not None else {}
            result = view(caller, db, **path_args, **args)
            if not isinstance(result, Response):
                result = json_response(response.dump(result) if response is not None else result)
            result.headers.update(response_headers or {})
            if conditional:
                if not result.is_streamed and "ETag" not in result.headers:
                    result.add_etag()
                if "If-None-Match" in request.headers:  # werkzeug's check is not free: only when asked
                    result.make_conditional(request)
            return result

        blueprint.add_url_rule(rule, view_func=endpoint, methods=[method])
        OPERATIONS.append(
            Operation(
                endpoint=f"{blueprint.name}.{view.__name__}",
                rule=(blueprint.url_prefix or "") + rule,
                method=method,
                section=section,
                summary=summary,
                description=(view.__doc__ or "").strip(),
                response_schema=response,
                query_schema=query,
                permission=permission,
                statuses=(*statuses, *COMMON_STATUSES),
                deprecated=deprecated,
                conditional=conditional,
                response_headers=dict(response_headers or {}),
            )
        )
        return endpoint

    return decorator


def refuse_large_body() -> None:
    """Answer 413 before any work when the body exceeds ``MAX_CONTENT_LENGTH``.

    No operation reads a body (spec 4), so a small one is ignored and a large one refused
    from its ``Content-Length`` alone.
    """
    limit = current_app.config["MAX_CONTENT_LENGTH"]
    if limit is not None and (request.content_length or 0) > limit:
        raise RequestEntityTooLarge()


def init_app(app: Flask) -> None:
    """Refuse large bodies up front and close each request's database connection at teardown."""
    app.before_request(refuse_large_body)
    app.extensions[CONNECTIONS] = threading.local()
    app.teardown_appcontext(end_transaction)
