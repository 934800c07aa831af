"""The evaluation context of a Frontend API request (and of anything else that asks the engine
on a client's behalf), read from a query string or a JSON object and put in the one shape
yggdrasil-engine reads.

What the reference server does with a context (shared notes on the Client API, section 6), and
where flagadmin differs:

- ``appName``, ``environment``, ``userId``, ``sessionId`` and ``remoteAddress`` stay at the top
  level; ``properties[name]=value`` (query) or ``properties: {name: value}`` (body) are
  properties; **every other key** is a property too (a ``properties`` value wins over a
  top-level key of the same name), as the reference's.
- ``currentTime``: the reference moves it into ``properties`` too, so date constraints compare
  with the server's clock. flagadmin keeps it at the top level, where the engine reads it: a
  date constraint is evaluated at the context's time. It must be an RFC 3339 date-time (one
  without a zone is UTC); it is passed on as ``YYYY-MM-DDTHH:MM:SS.mmmZ``.
- A missing (or empty) ``remoteAddress`` is the caller's address, as the reference fills it.
- A missing (or empty) ``sessionId``: the reference makes a random one per request, so that
  every rollout sticky on the session (``default`` stickiness without ``userId``) is drawn
  again on each request and the answer, and its ETag, change between two identical requests.
  flagadmin derives it from the rest of the context instead (``ctx-`` and 24 hex digits of a
  BLAKE2b digest of the normalised context, the caller's address included): the same context
  always gets the same answer (and its ETag stays), two callers that differ in anything get
  independent draws. The browser SDK always sends a ``sessionId`` of its own.
- Values are strings, as the engine reads them. In a body, numbers and booleans are written as
  JSON writes them (``3``, ``2.5``, ``true``; ``2.0`` as ``2``) and ``null`` means absent; an object or a list
  (but ``properties``' object) is refused. In a query string a parameter given twice is
  refused; a property's name is what stands between ``properties[`` and ``]`` (properties do not
  nest).

Limits (400 naming the field): at most :data:`MAX_PROPERTIES` properties, names of 1 to
:data:`MAX_NAME_LENGTH` characters, values of at most :data:`MAX_VALUE_LENGTH` characters.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson

from ..refusals import Invalid

#: The fields the engine reads at the top level of a context.
TOP_LEVEL = ("appName", "environment", "userId", "sessionId", "remoteAddress", "currentTime")
_TOP_LEVEL = frozenset(TOP_LEVEL)

#: At most this many properties; names of at most this many characters; values of at most
#: this many (a context is part of an answer cache's key: it stays small).
MAX_PROPERTIES = 100
MAX_NAME_LENGTH = 255
MAX_VALUE_LENGTH = 2000

#: Prefix of a ``sessionId`` derived from the context (see the module).
DERIVED_SESSION_PREFIX = "ctx-"

_PROPERTY_PREFIX = "properties["


@dataclass(frozen=True)
class Context:
    """One normalised context.

    ``key``: a hashable, canonical form (the top-level fields and the properties, each sorted
    by name; the derived ``sessionId`` is not in it, as it follows from the rest), equal for
    two contexts that evaluate alike. ``engine``: the dict the engine takes (``appName``,
    ``environment``, ``userId``, ``sessionId``, ``remoteAddress``, ``currentTime`` when
    present, ``properties`` always; every value a string). Shared: read it, do not change it.
    """

    key: tuple
    engine: dict[str, Any]

    def get(self, name: str) -> str | None:
        """The value of a top-level field or, failing that, of a property (None: absent)."""
        if name in _TOP_LEVEL:
            return self.engine.get(name)
        return self.engine["properties"].get(name)


def _refuse(field: str, problem: str) -> None:
    message = f"context.{field}: {problem}"
    raise Invalid(message, details=[message])


def _value(field: str, value: Any) -> str | None:
    """A context value as the engine reads it (a string), from what a body holds; None when
    absent (``null``)."""
    if value is None:
        return None
    kind = type(value)
    if kind is str:
        text = value
    elif kind is bool:
        text = "true" if value else "false"
    elif kind is int or kind is float:
        text = orjson.dumps(value).decode()
        if text.endswith(".0"):
            text = text[:-2]
    else:
        _refuse(field, f"must be a string, a number or a boolean, not {_kind(value)}")
    if len(text) > MAX_VALUE_LENGTH:
        _refuse(field, f"is {len(text)} characters long; at most {MAX_VALUE_LENGTH} are taken")
    return text


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return type(value).__name__


def current_time(text: str) -> str:
    """``text`` (an RFC 3339 date-time; without a zone: UTC) as the engine reads it:
    ``YYYY-MM-DDTHH:MM:SS.mmmZ``.

    :raise Invalid: not a date-time (a date alone is not one).
    """
    moment = None
    if 10 < len(text) <= 40 and text[10:11] in ("T", "t", " "):
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            moment = None
    if moment is None:
        _refuse(
            "currentTime",
            f"{text[:60]!r} is not an RFC 3339 date-time (such as 2026-11-28T09:30:00Z)",
        )
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        moment = moment.astimezone(UTC)
    except OverflowError:  # 0001-01-01T00:00:00+01:00 is in year 0 once in UTC
        _refuse("currentTime", f"{text[:60]!r} falls outside the years 1 to 9999 once in UTC")
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _check_name(field: str, name: str) -> None:
    if not name or len(name) > MAX_NAME_LENGTH:
        _refuse(field, f"a property name must be 1 to {MAX_NAME_LENGTH} characters long")


def _build(top: dict[str, str], properties: dict[str, str], client_ip: str | None) -> Context:
    """The :class:`Context` of ``top`` (top-level fields given) and ``properties`` (both
    strings; empty ``remoteAddress`` and ``sessionId`` count as absent)."""
    if len(properties) > MAX_PROPERTIES:
        _refuse("properties", f"holds {len(properties)} properties; at most {MAX_PROPERTIES} are taken")
    if "currentTime" in top:
        top["currentTime"] = current_time(top["currentTime"])
    if not top.get("remoteAddress"):
        top.pop("remoteAddress", None)
        if client_ip:
            top["remoteAddress"] = client_ip
    session = top.pop("sessionId", None) or None
    fields = tuple(sorted(top.items()))
    props = tuple(sorted(properties.items()))
    key = (fields, props, session)
    engine: dict[str, Any] = dict(fields)
    if session is None:
        digest = hashlib.blake2b(repr((fields, props)).encode("utf-8", "surrogatepass"), digest_size=12)
        session = DERIVED_SESSION_PREFIX + digest.hexdigest()
    engine["sessionId"] = session
    engine["properties"] = dict(props)
    return Context(key, engine)


def from_query(pairs: Iterable[tuple[str, str]], client_ip: str | None) -> Context:
    """The context of a query string's ``(name, value)`` pairs (``GET /api/frontend``), the
    caller's address ``client_ip`` filling a missing ``remoteAddress``.

    :raise Invalid: a parameter is given twice, ``properties`` is not given as
        ``properties[name]=value``, ``currentTime`` is not a date-time, or a limit of the
        module is passed; the message names the parameter.
    """
    top: dict[str, str] = {}
    given: dict[str, str] = {}
    extra: dict[str, str] = {}
    for name, value in pairs:
        if len(value) > MAX_VALUE_LENGTH:
            _refuse(
                name[:MAX_NAME_LENGTH],
                f"is {len(value)} characters long; at most {MAX_VALUE_LENGTH} are taken",
            )
        if name in _TOP_LEVEL:
            target, field = top, name
        elif name.startswith(_PROPERTY_PREFIX) and name.endswith("]"):
            field = name[len(_PROPERTY_PREFIX) : -1]
            _check_name(name[:MAX_NAME_LENGTH], field)
            if "[" in field or "]" in field:
                _refuse(name[:MAX_NAME_LENGTH], "a property's value is text: properties do not nest")
            target = given
        elif name == "properties" or name.startswith(_PROPERTY_PREFIX):
            _refuse(name[:MAX_NAME_LENGTH], "give each property as properties[name]=value")
        else:
            _check_name(name[:MAX_NAME_LENGTH], name)
            target, field = extra, name
        if field in target:
            _refuse(name[:MAX_NAME_LENGTH], "is given more than once; give it once")
        target[field] = value
    return _build(top, {**extra, **given}, client_ip)


def from_mapping(context: Any, client_ip: str | None) -> Context:
    """The context of a JSON object (``POST /api/frontend``'s ``context``; None: empty), the
    caller's address ``client_ip`` filling a missing ``remoteAddress``.

    :raise Invalid: ``context`` or its ``properties`` is not an object, a value is an object
        or a list, ``currentTime`` is not a date-time, or a limit of the module is passed; the
        message names the field.
    """
    if context is None:
        context = {}
    if not isinstance(context, Mapping):
        raise Invalid(
            f"context must be an object of context fields, not {_kind(context)}",
            details=[f"context: must be an object, not {_kind(context)}"],
        )
    top: dict[str, str] = {}
    extra: dict[str, str] = {}
    given: dict[str, str] = {}
    for name, value in context.items():
        if name == "properties":
            if value is None:
                continue
            if not isinstance(value, Mapping):
                _refuse("properties", f"must be an object of names and values, not {_kind(value)}")
            for prop, prop_value in value.items():
                _check_name(f"properties.{prop[:MAX_NAME_LENGTH]}", prop)
                text = _value(f"properties.{prop}", prop_value)
                if text is not None:
                    given[prop] = text
            continue
        text = _value(name[:MAX_NAME_LENGTH], value)
        if text is None:
            continue
        if name in _TOP_LEVEL:
            top[name] = text
        else:
            _check_name(name[:MAX_NAME_LENGTH], name)
            extra[name] = text
    return _build(top, {**extra, **given}, client_ip)
