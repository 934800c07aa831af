"""Reading a request: its query string and its JSON body, checked before any field is read.

Every endpoint reads through here, the admin API's operations (:func:`parse_query`,
:func:`parse_body`) and SCIM's views (:func:`query_pairs`, :func:`read_body`) alike, so that
the limits of :mod:`flagadmin.web.limits` (depth, lone surrogates) and the body's size hold for
all of them, and a 400 lists at most :data:`MAX_DETAILS` problems.
"""

from __future__ import annotations

from collections import Counter
from typing import Any
from urllib.parse import parse_qsl

import orjson
from flask import request
from marshmallow import Schema, ValidationError
from werkzeug.exceptions import RequestEntityTooLarge, UnsupportedMediaType

from .. import refusals
from ..records import validation_messages
from .errors import BadDataError
from .jsonio import JSON_MIMETYPE
from .limits import MAX_JSON_DEPTH, lone_surrogate_escape, lone_surrogate_escape_in_json, too_deep

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
    ``Content-Length``) is read up to the request's limit
    (:func:`~flagadmin.web.operations.refuse_large_body`); one that goes on past the limit is
    refused rather than cut short.

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
