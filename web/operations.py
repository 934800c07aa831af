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
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

import orjson
from flask import Blueprint, Response, current_app, request
from marshmallow import Schema, ValidationError
from werkzeug.exceptions import RequestEntityTooLarge, UnsupportedMediaType

from .. import refusals
from ..records import validation_messages
from .auth import Permission, authenticate, require
from .cache import Answer, SplicedAnswer
from .database import connection
from .errors import BadDataError
from .headers import COMPRESSION, NegotiatedResponse
from .jsonio import JSON_MIMETYPE, json_response
from .limits import MAX_JSON_DEPTH, lone_surrogate_escape, lone_surrogate_escape_in_json, too_deep

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


#: A 400 lists at most this many problems, so that a query of thousands of bad parameters
#: gets a small answer rather than one ten times its own size.
MAX_DETAILS = 20


def _at_most(n: int, details: list[str]) -> list[str]:
    """The first ``n`` details, plus one saying how many more were left out."""
    if len(details) <= n:
        return details
    return [*details[:n], f"... and {len(details) - n} more problems"]


#: The error handler werkzeug registers for URLs (``werkzeug.urls``): a byte that is not UTF-8
#: stays percent-encoded (``%FF``) instead of failing the decoding.
KEEP_BAD_BYTES_QUOTED = "werkzeug.url_quote"


def query_pairs() -> list[tuple[str, str]]:
    """The request's query parameters, ``(name, value)`` in order, repeats included: what
    ``request.args`` holds (blank values kept, RFC 3986 percent-decoding, ``+`` as a space),
    read without building its MultiDict. Bytes that are not UTF-8, percent-encoded or raw (a
    WSGI server other than waitress may pass them on), stay percent-encoded in the text: they
    fail validation as text (400), never decoding (500).

    :raise refusals.Invalid: a name or value holds the escape of a lone surrogate
        (:func:`~flagadmin.web.limits.lone_surrogate_escape`): 400, ``scimType`` ``invalidFilter`` for SCIM's
        ``filter``, ``invalidValue`` for any other parameter.
    """
    text = request.query_string.decode("utf-8", KEEP_BAD_BYTES_QUOTED)
    pairs = parse_qsl(text, keep_blank_values=True, errors=KEEP_BAD_BYTES_QUOTED)
    if "%5C" in text or "%5c" in text or "\\" in text:
        for name, value in pairs:
            escape = lone_surrogate_escape(name) or lone_surrogate_escape(value)
            if escape:
                raise refusals.Invalid(
                    f"Query parameter {name[:100]} holds {escape}, the escape of a lone surrogate,"
                    " which is not a character: escape a character outside the BMP as a pair"
                    " (\\ud83d\\ude00) or send it as UTF-8.",
                    scim_type="invalidFilter" if name == "filter" else "invalidValue",
                )
    return pairs


def parse_query(schema: Schema) -> dict[str, Any]:
    """Load the query string (:func:`query_pairs`) with ``schema``.

    :raise BadDataError: a parameter is repeated, unknown, malformed or out of range; the
        details name each parameter.
    """
    pairs = query_pairs()
    values = dict(pairs)
    if len(values) != len(pairs):
        repeated = [name for name, count in Counter(name for name, _ in pairs).items() if count > 1]
        raise BadDataError(
            f"Query parameter {repeated[0]} is given more than once; give it once.",
            details=_at_most(MAX_DETAILS, [f"{name}: given more than once" for name in repeated]),
        )
    try:
        return schema.load(values)
    except ValidationError as exc:
        details = _at_most(MAX_DETAILS, validation_messages(exc, schema))
        raise BadDataError("Invalid query parameters: " + "; ".join(details), details=details) from exc


def parse_body(schema: Schema) -> Any:
    """Load the JSON request body with ``schema``.

    :raise UnsupportedMediaType: the body is not declared as JSON (415).
    :raise refusals.Invalid: the body nests deeper than
        :data:`~flagadmin.web.limits.MAX_JSON_DEPTH` or holds the escape of a lone surrogate
        (:func:`read_body`).
    :raise BadDataError: the body is not JSON, or does not load; details name each field.
    """
    if request.mimetype != JSON_MIMETYPE and not request.mimetype.endswith("+json"):
        raise UnsupportedMediaType("Send the body as JSON, with Content-Type: application/json.")
    raw = read_body() or b"null"
    try:
        document = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise BadDataError(f"The request body is not valid JSON: {exc}") from exc
    if document is None:
        raise BadDataError("The request needs a JSON body; it had none.")
    if b"\\u0000" in raw and _holds_nul(document):
        raise BadDataError("The request body holds a NUL character (\\u0000), which no field accepts.")
    try:
        return schema.load(document)
    except ValidationError as exc:
        details = _at_most(MAX_DETAILS, validation_messages(exc, schema))
        raise BadDataError("Invalid request body: " + "; ".join(details), details=details) from exc


def read_body() -> bytes:
    """The request's body, whole, once it is known to be safe to parse and walk. A body of
    unannounced length (chunked, behind a WSGI server that passes it on as it comes, without
    ``Content-Length``) is read up to the request's limit (:func:`refuse_large_body`); one
    that goes on past the limit is refused rather than cut short.

    Every endpoint that takes JSON (the admin API's and SCIM's) reads its body here, so the
    checks of :mod:`flagadmin.web.limits` run before any parsing of fields, schema or JSON
    Patch: no endpoint can recurse past Python's limit on a body the parser accepts (it takes
    1,024 levels).

    :raise RequestEntityTooLarge: the body is longer than the limit (413).
    :raise refusals.Invalid: 400 (``scimType`` ``invalidSyntax``) when the body's arrays and
        objects nest deeper than :data:`~flagadmin.web.limits.MAX_JSON_DEPTH`; 400
        (``invalidValue``) when one of its strings holds the escape of a lone surrogate.
    """
    raw = request.get_data(cache=False)
    limit = request.max_content_length
    unannounced = request.content_length is None and limit is not None
    if unannounced and len(raw) >= limit and request.environ["wsgi.input"].read(1):
        raise RequestEntityTooLarge()
    if too_deep(raw):
        raise refusals.Invalid(
            f"The request body nests arrays and objects more than {MAX_JSON_DEPTH} levels deep;"
            f" flagadmin reads at most {MAX_JSON_DEPTH}.",
            scim_type="invalidSyntax",
        )
    escape = lone_surrogate_escape_in_json(raw)
    if escape is not None:
        raise refusals.Invalid(
            f"A string of the request body holds {escape}, the escape of a lone surrogate,"
            " which is not a character: escape a character outside the BMP as a pair"
            " (\\ud83d\\ude00) or send it as UTF-8.",
            scim_type="invalidValue",
        )
    return raw


def _holds_nul(value: Any) -> bool:
    """True when a NUL character stands anywhere in ``value``'s strings (keys included):
    SQLite's text functions stop at it and PostgreSQL refuses it, so no field takes one."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_holds_nul(k) or _holds_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_holds_nul(item) for item in value)
    return False


def if_none_match(etag: str) -> str | None:
    """The ETag to answer 304 with when the request's ``If-None-Match`` names ``etag`` (or
    ``etag`` of its gzip variant, as compression names it: ``"<etag>:gzip"``), else None."""
    sent = request.if_none_match
    if not sent:
        return None
    if sent.star_tag or sent.contains_weak(etag):
        return etag
    gzipped = f"{etag}:gzip"
    return gzipped if sent.contains_weak(gzipped) else None


def not_modified(etag: str) -> Response:
    """A 304 answer carrying ``etag``, with no body (varying on ``Accept-Encoding``, as the
    200 it stands for)."""
    response = NegotiatedResponse(status=304)
    response.set_etag(etag)
    return response


#: Answers of at least this many bytes are sent gzipped to clients that accept it: the bound of
#: every other compressed response (``web/headers.py``).
GZIP_MIN_BYTES = COMPRESSION["COMPRESS_MIN_SIZE"]


def accepts_gzip() -> bool:
    """True when the request's ``Accept-Encoding`` takes gzip (RFC 9110 section 12.5.3)."""
    if "gzip" not in request.environ.get("HTTP_ACCEPT_ENCODING", ""):
        return False
    return request.accept_encodings.quality("gzip") > 0


def empty_response(status: int) -> Response:
    """A success with no body (an archive's 202, a 204): no ``Content-Type``, as there is no
    content to type (RFC 9110 section 8.3), ``Content-Length: 0``, and nothing to compress."""
    response = NegotiatedResponse(status=status)
    del response.headers["Content-Type"]
    return response


def answer_response(answer: Answer | SplicedAnswer, status: int = 200) -> Response:
    """The response of a ready :class:`Answer`: 304 when the request's ``If-None-Match``
    names its ETag, else its bytes (with its ETag), gzipped when the client accepts it and the
    body is large enough: the answer's own gzip, made once (``"<etag>:gzip"`` names that
    representation, as for every other compressed response)."""
    if answer.etag is not None:
        matched = if_none_match(answer.etag)
        if matched is not None:
            return not_modified(matched)
    if answer.length >= GZIP_MIN_BYTES and accepts_gzip():
        response = NegotiatedResponse(answer.gzipped(), status=status, mimetype=JSON_MIMETYPE)
        response.headers["Content-Encoding"] = "gzip"
        if answer.etag is not None:
            response.set_etag(f"{answer.etag}:gzip")
        return response
    response = NegotiatedResponse(answer.body, status=status, mimetype=JSON_MIMETYPE)
    if answer.etag is not None:
        response.set_etag(answer.etag)
    return response


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
