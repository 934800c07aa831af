"""What a request's JSON and text may hold, checked before anything parses them further
(:func:`flagadmin.web.requests.read_body` and ``query_pairs`` call these): arrays and objects
nested at most :data:`MAX_JSON_DEPTH` levels, and no escape of a lone surrogate (``\\ud800``)
in the text of a string or of a query parameter.

Pure functions of bytes and text, without Flask: each says what it found, the request reader
refuses it (400; SCIM's ``invalidSyntax``, ``invalidValue`` or ``invalidFilter``).
"""

from __future__ import annotations

import re

import orjson

#: Arrays and objects of a request body nest at most this deep (the deepest real body, a
#: SCIM PATCH adding members with their attributes, nests 4 levels; SCIM refuses past 12).
MAX_JSON_DEPTH = 64

#: A backslash and the character it escapes (``\\"`` among them), dropped before the quotes
#: are matched up.
_BACKSLASH_PAIR = re.compile(rb"\\.", re.DOTALL)
#: Every byte but the four brackets, deleted before counting them.
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
#: A backslash in the text of a JSON string is written ``\\\\`` or ``\\u005c``.
_ESCAPED_BACKSLASH = re.compile(rb"\\\\|\\u005[cC]")


def too_deep(raw: bytes) -> bool:
    """True when the JSON text ``raw`` nests deeper than :data:`MAX_JSON_DEPTH` (or the parser
    would say so: it stops at 1,024). The brackets outside strings are kept, then each pass
    drops the innermost pairs: a body within the limit is empty after :data:`MAX_JSON_DEPTH`
    passes. A body that is not JSON (unbalanced brackets, an unended string) is left to the
    parser, which says what is wrong with it. Every step is a scan in C (no Python step per
    string or bracket); a body with fewer brackets than the limit is not scanned at all."""
    if raw.count(b"[") + raw.count(b"{") <= MAX_JSON_DEPTH:
        return False
    text = _BACKSLASH_PAIR.sub(b"", raw) if b"\\" in raw else raw
    # what stands between the quotes is inside strings: every other piece is outside them
    brackets = b"".join(text.split(b'"')[::2]).translate(None, _NOT_BRACKETS)
    for _ in range(MAX_JSON_DEPTH):
        if not brackets:
            return False
        shorter = brackets.replace(b"[]", b"").replace(b"{}", b"")
        if len(shorter) == len(brackets):
            return False  # unbalanced or crossed: not JSON, the parser answers
        brackets = shorter
    if not brackets:
        return False
    try:
        orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        return "depth" in str(exc)
    return True


def lone_surrogate_escape_in_json(raw: bytes) -> str | None:
    """The first escape of a lone surrogate in the text of a string (key or value) of the
    JSON body ``raw`` (nested at most :data:`MAX_JSON_DEPTH` levels); None when there is none
    or ``raw`` is not JSON (the parser of the endpoint says so). The body is parsed only when
    one of its strings holds a backslash (written ``\\\\`` or ``\\u005c``): the escape of
    an escape."""
    if not _ESCAPED_BACKSLASH.search(raw):
        return None
    try:
        document = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    stack = [document]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            escape = lone_surrogate_escape(value)
            if escape:
                return escape
        elif isinstance(value, dict):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return None


#: A backslash escape of JSON's string syntax (RFC 8259 section 7), which SCIM filters and
#: paths use for their values (RFC 7644 section 3.4.2.2): ``\\uXXXX`` or a backslash and one
#: character, read left to right so that an escaped backslash is never taken for an escape.
_ESCAPE = re.compile(r"\\(?:u([0-9A-Fa-f]{4})|.)", re.DOTALL)


def lone_surrogate_escape(text: str) -> str | None:
    """The first escape in ``text`` of a lone surrogate (``\\ud800``: a high surrogate not
    followed by the escape of a low one, or a low one on its own), else None.

    Such an escape decodes to no character (RFC 8259 section 8.2; RFC 7493 section 2.1
    forbids it): a SCIM filter holding one would otherwise reach the database as a string
    that cannot be encoded. JSON bodies that hold one as JSON are refused by the parser; this
    is for escapes inside the text of a string or of a query parameter.
    """
    if "\\" not in text:
        return None
    pending: str | None = None  # the escape of a high surrogate waiting for its low one
    position = -1  # where the escape after ``pending`` must start
    for match in _ESCAPE.finditer(text):
        code = int(match.group(1), 16) if match.group(1) else None
        is_low = code is not None and 0xDC00 <= code <= 0xDFFF
        if pending is not None:
            if is_low and match.start() == position:
                pending = None
                continue
            return pending
        if is_low:
            return match.group(0)
        if code is not None and 0xD800 <= code <= 0xDBFF:
            pending, position = match.group(0), match.end()
    return pending
