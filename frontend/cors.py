"""Which browser origins may call the Frontend API (CORS, the Fetch standard), as the reference
server decides it (shared notes on the Client API, section 6).

The origins are ui-config's ``frontendApiOrigins`` (spec 2.5): ``FLAGADMIN_FRONTEND_API_ORIGINS``
(default ``*``) until an Admin sets them with ``POST /api/admin/ui-config/cors``; from then on
the list stored in the database (:mod:`flagadmin.store.frontend_settings`), for every process
on it. ``*`` in the list, or an empty list, allows every origin (the answer then says
``Access-Control-Allow-Origin: *``); otherwise an origin in the list is allowed (and echoed),
any other gets no CORS header at all, so the browser refuses the answer to its page.

An origin to store is ``*`` or exactly what a browser sends as ``Origin``: ``http`` or ``https``,
``://``, the host name or IPv4 address in lower case and a port only when it is not the scheme's
default, nothing after (the reference's check: the origin of the URL is the text itself; an
IPv6 address is not taken here); anything else is refused with 400 naming it, as the
reference's ``Invalid origin: <text>``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import orjson

from .. import events
from ..events import Actor
from ..refusals import Invalid
from ..store import Connection
from ..store import frontend_settings as store

#: The name the reference gives these settings in its events (``setting-created``/``-updated``).
SETTING_ID = "unleash.frontend"

#: Most origins a list may hold, and the longest origin taken.
MAX_ORIGINS = 200
MAX_ORIGIN_LENGTH = 500

#: A host name or IPv4 address, in lower case (what a browser's ``Origin`` holds).
_HOST = r"(?:[a-z0-9_-]+\.)*[a-z0-9_-]+"
#: Ports 1 to 65535 without leading zeros: those of 1 to 5 digits, 80 left out of http's and
#: 443 of https's (a browser leaves a scheme's default port out of ``Origin``).
_FIVE_DIGITS = r"[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]"
_HTTP_PORT = rf"[1-9]|[1-7][0-9]|8[1-9]|9[0-9]|[1-9][0-9]{{2,3}}|{_FIVE_DIGITS}"
_HTTPS_PORT = rf"[1-9][0-9]?|[1-35-9][0-9]{{2}}|4[0-35-9][0-9]|44[0-24-9]|[1-9][0-9]{{3}}|{_FIVE_DIGITS}"

#: What an origin to allow is (the OpenAPI document's pattern too, so that the document and the
#: check agree): ``*``, or ``http://`` or ``https://``, a host, a port only when it is not the
#: scheme's default, nothing after.
ORIGIN_PATTERN = rf"^(?:\*|http://{_HOST}(?::(?:{_HTTP_PORT}))?|https://{_HOST}(?::(?:{_HTTPS_PORT}))?)$"
_ORIGIN = re.compile(ORIGIN_PATTERN)


def origin_problem(text: Any) -> str | None:
    """Why ``text`` is not an origin to allow (a sentence), or None when it is one
    (:data:`ORIGIN_PATTERN`)."""
    if not isinstance(text, str):
        return "must be a string"
    if not text or len(text) > MAX_ORIGIN_LENGTH:
        return f"must be 1 to {MAX_ORIGIN_LENGTH} characters long"
    if _ORIGIN.match(text) is None:
        return (
            "is not an origin: give it as a browser sends it, scheme, host and port only"
            " (https://app.example.com, http://localhost:3000), or * for every origin"
        )
    return None


def check_origins(origins: Any) -> list[str]:
    """``origins`` as stored: a list of origins (:func:`origin_problem`), repeats dropped, in
    order.

    :raise Invalid: not a list, more than :data:`MAX_ORIGINS`, or an item is no origin (the
        message names it, as the reference's ``Invalid origin: ...``).
    """
    if not isinstance(origins, list):
        raise Invalid(
            "frontendApiOrigins must be a list of origins.", details=["frontendApiOrigins: must be a list"]
        )
    if len(origins) > MAX_ORIGINS:
        message = f"frontendApiOrigins holds {len(origins)} origins; at most {MAX_ORIGINS} are taken."
        raise Invalid(message, details=[message])
    for index, origin in enumerate(origins):
        problem = origin_problem(origin)
        if problem:
            shown = origin[:100] if isinstance(origin, str) else origin
            message = f"Invalid origin: {shown!r} (frontendApiOrigins[{index}]) {problem}."
            raise Invalid(message, details=[f"frontendApiOrigins.{index}: {problem}"])
    return list(dict.fromkeys(origins))


def stored_origins(conn: Connection) -> tuple[str, ...] | None:
    """The origins set through the API, or None when none were (the setting holds)."""
    text = store.origins(conn)
    return None if text is None else tuple(orjson.loads(text))


def current_origins(conn: Connection, default: Sequence[str]) -> tuple[str, ...]:
    """The origins in force: those set through the API, else ``default`` (the setting)."""
    stored = stored_origins(conn)
    return tuple(default) if stored is None else stored


def allowed_origin(origins: Sequence[str], origin: str) -> str | None:
    """What ``Access-Control-Allow-Origin`` says to a request from ``origin`` under
    ``origins``: ``*`` (every origin allowed), ``origin`` itself (it is in the list), or None
    (refused: no CORS header)."""
    if not origins or "*" in origins:
        return "*"
    return origin if origin in origins else None


def set_origins(conn: Connection, actor: Actor, origins: Any, default: Sequence[str]) -> list[str]:
    """Store ``origins`` (checked by :func:`check_origins`) as the origins in force, and record
    ``setting-created`` (the first time) or ``setting-updated`` (``data`` ``{"id":
    "unleash.frontend", "frontendApiOrigins": [...]}``, ``preData`` the origins stored
    before), as the reference does, in one transaction. Setting
    the origins already stored changes and records nothing. Returns what was stored.

    :raise Invalid: see :func:`check_origins`.
    """
    checked = check_origins(origins)
    with conn.write("settings"):
        before = stored_origins(conn)
        store.set_origins(conn, orjson.dumps(checked).decode())
        data = {"id": SETTING_ID, "frontendApiOrigins": checked}
        if before is None:
            events.record(conn, "setting-created", actor, data=data)
        else:
            pre = {"id": SETTING_ID, "frontendApiOrigins": list(before)}
            events.record(conn, "setting-updated", actor, data=data, pre_data=pre)
    return checked
