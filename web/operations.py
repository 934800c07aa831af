"""Declaring an operation once: route, permission, parameters, bodies, statuses, links.

:func:`operation` registers a view on a blueprint and attaches an :class:`Operation` to the
registered view function. The same declaration drives request handling (authentication,
permission, query and body validation, conditional answers, serialization) and the OpenAPI
document (:mod:`flagadmin.web.openapi`, built from the app's own view functions), so the two
cannot drift apart. Statuses that follow from a declaration are derived, not repeated: 400 with
a query or body schema, 401 and 429 always (every operation authenticates), 403 with a
permission, 404 with a path parameter, 413 with a body, 503 always.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from flask import Blueprint, Response, current_app, request
from marshmallow import Schema
from werkzeug.exceptions import RequestEntityTooLarge

from .auth import Permission, authenticate, require
from .cache import Answer, SplicedAnswer
from .database import connection
from .jsonio import json_response
from .requests import parse_body, parse_query
from .responses import answer_response, empty_response

#: Status -> description of every status but the success one an operation may answer.
STATUS_DESCRIPTIONS = {
    304: "Not Modified: the representation still has the ETag sent in If-None-Match.",
    400: "A parameter or the request body is malformed or out of range (BadDataError).",
    401: "No valid API token in the Authorization header (AuthenticationRequired).",
    403: "The token's user lacks the permission; the message names it (NoAccessError).",
    404: "The resource does not exist (NotFoundError).",
    409: "The request conflicts with what exists; the message says what to do (ConflictError).",
    413: "The request body is larger than 64 KiB (ContentTooLargeError).",
    415: "The request body is not JSON: send Content-Type: application/json (UnsupportedMediaTypeError).",
    429: "Too many failed authentications from this address (TooManyRequestsError).",
    503: "The database is busy or unreadable; retry after Retry-After seconds (ServiceUnavailableError).",
}

#: Cache-Control of the answers of conditional operations: a client may keep the body (and
#: only the client: it is about the caller), and must revalidate it (If-None-Match) each time.
REVALIDATE = "private, no-cache"

_BODY_METHODS = ("POST", "PUT", "PATCH")

#: A variable of a werkzeug rule, with or without converter: ``<id>``, ``<int:id>``.
RULE_VARIABLE = re.compile(r"<(?:[a-z_]+(?:\([^)]*\))?:)?([A-Za-z_]+)>")


@dataclass(frozen=True)
class PathParameter:
    """A path parameter of an operation: what it names, and its OpenAPI schema."""

    description: str
    schema: dict[str, Any] = field(default_factory=lambda: {"type": "string"})


@dataclass
class Operation:
    """One operation of the API as declared with :func:`operation`."""

    rule: str
    method: str
    section: str
    summary: str
    description: str
    response_schema: Schema | None
    query_schema: Schema | None = None
    body_schema: Schema | None = None
    permission: Permission = Permission.ANY
    path_parameters: dict[str, PathParameter] = field(default_factory=dict)
    links: dict[str, dict[str, Any]] = field(default_factory=dict)
    extra_statuses: tuple[int, ...] = ()
    success_status: int = 200
    deprecated: bool = False
    conditional: bool = False
    tag: str = "admin"
    response_headers: dict[str, str] = field(default_factory=dict)
    #: Whether a request must carry a body (OpenAPI ``requestBody.required``; with
    #: ``body_schema``). False where an empty body has a meaning (OFREP: an empty context).
    body_required: bool = True
    #: An error status whose body is not flagadmin's envelope (``Error``): ``{status:
    #: (description, marshmallow schema)}`` (OFREP answers its failures in the protocol's shape).
    error_schemas: dict[int, tuple[str, Any]] = field(default_factory=dict)

    @property
    def statuses(self) -> tuple[int, ...]:
        """Every error status the operation can answer: derived from the declaration, plus the
        declared extra ones, in order."""
        derived = {401, 429, 503, *self.extra_statuses}
        if self.query_schema is not None or self.body_schema is not None:
            derived.add(400)
        if self.permission is not Permission.ANY:
            derived.add(403)
        if self.path_parameters:
            derived.add(404)
        if self.method in _BODY_METHODS:
            derived.add(413)
        if self.body_schema is not None:
            derived.add(415)
        return tuple(sorted(derived))


def _declared_path_parameters(rule: str, path: dict[str, PathParameter] | None) -> dict[str, PathParameter]:
    names = RULE_VARIABLE.findall(rule)
    declared = dict(path or {})
    missing = [name for name in names if name not in declared]
    extra = [name for name in declared if name not in names]
    if missing or extra:
        raise TypeError(
            f"{rule}: declare exactly its path parameters {names}; missing {missing}, extra {extra}"
        )
    return {name: declared[name] for name in names}


def operation(
    blueprint: Blueprint,
    rule: str,
    *,
    method: str = "GET",
    section: str,
    summary: str,
    response: Schema | None,
    query: Schema | None = None,
    body: Schema | None = None,
    permission: Permission = Permission.ANY,
    path: dict[str, PathParameter] | None = None,
    links: dict[str, dict[str, Any]] | None = None,
    statuses: Iterable[int] = (),
    status: int = 200,
    deprecated: bool = False,
    response_headers: dict[str, str] | None = None,
    conditional: bool = False,
    tag: str = "admin",
) -> Callable:
    """Register the decorated view as an operation of spec section ``section``.

    The view is called as ``view(caller, conn, **path_args, **query_args[, body=...])`` after
    the caller is authenticated (401) and holds ``permission`` (403), the query string has
    loaded with ``query`` and the body with ``body`` (400). It returns data, dumped with
    ``response`` into a ``status`` JSON response; an :class:`~flagadmin.web.cache.Answer`
    or :class:`~flagadmin.web.cache.SplicedAnswer` (bytes computed once, with its ETag and
    its gzip once made: :func:`answer_response`); or a ready :class:`flask.Response`. ``statuses``
    lists error statuses beyond those derived from the declaration (see :class:`Operation`).

    ``conditional=True``: the answer carries an ETag, ``If-None-Match`` is answered 304 before
    any body is built when the view already knows the ETag (an Answer; or
    :func:`if_none_match` in the view), and ``Cache-Control`` is :data:`REVALIDATE`.
    """
    path_parameters = _declared_path_parameters(rule, path)

    def decorator(view: Callable) -> Callable:
        declaration = Operation(
            rule=(blueprint.url_prefix or "") + rule,
            method=method,
            section=section,
            summary=summary,
            description=(view.__doc__ or "").strip(),
            response_schema=response,
            query_schema=query,
            body_schema=body,
            permission=permission,
            path_parameters=path_parameters,
            links=dict(links or {}),
            extra_statuses=tuple(statuses),
            success_status=status,
            deprecated=deprecated,
            conditional=conditional,
            tag=tag,
            response_headers=dict(response_headers or {}),
        )

        @functools.wraps(view)
        def endpoint(**path_args: Any) -> Response:
            conn = connection()
            caller = authenticate(conn)
            require(caller, permission)
            args = parse_query(query) if query is not None else {}
            if body is not None:
                args["body"] = parse_body(body)
            result = view(caller, conn, **path_args, **args)
            if isinstance(result, Answer | SplicedAnswer):
                result = answer_response(result, status)
            elif not isinstance(result, Response):
                data = result if response is None else response.dump(result)
                result = json_response(data, status) if data is not None else empty_response(status)
            if declaration.response_headers:
                result.headers.update(declaration.response_headers)
            if conditional and result.status_code in (200, 304):
                result.headers["Cache-Control"] = REVALIDATE
            return result

        endpoint.operation = declaration
        blueprint.add_url_rule(rule, view_func=endpoint, methods=[method])
        return endpoint

    return decorator


def declared_operations(app) -> list[tuple[str, Operation]]:
    """``(endpoint name, Operation)`` of every view of ``app`` declared with :func:`operation`,
    in the order their rules were added."""
    found = []
    for rule in app.url_map.iter_rules():
        declaration = getattr(app.view_functions.get(rule.endpoint), "operation", None)
        if declaration is not None:
            found.append((rule.endpoint, declaration))
    return found


def refuse_large_body() -> None:
    """Answer 413 before any work when the body exceeds the request's limit, from its
    ``Content-Length`` alone.

    The limit is ``MAX_CONTENT_LENGTH``, unless the view of the request carries its own
    ``max_content_length`` attribute (bytes; SCIM takes larger bodies than the admin API). It
    also bounds the reading of a body sent without ``Content-Length``. A request that has no
    body (neither ``Content-Length`` nor ``Transfer-Encoding``, as most GETs) is let through at
    once: there is nothing to bound.
    """
    environ = request.environ
    if "CONTENT_LENGTH" not in environ and "HTTP_TRANSFER_ENCODING" not in environ:
        return
    view = current_app.view_functions.get(request.endpoint) if request.endpoint else None
    limit = getattr(view, "max_content_length", None) or current_app.config["MAX_CONTENT_LENGTH"]
    request.max_content_length = limit
    if limit is not None and (request.content_length or 0) > limit:
        raise RequestEntityTooLarge()


def init_app(app) -> None:
    """Refuse large bodies up front."""
    app.before_request(refuse_large_body)
