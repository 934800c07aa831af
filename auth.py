"""Authentication and permissions of the admin API (spec 5, 7).

The ``Authorization`` header holds an API token, raw or as ``Bearer <token>``. Admin API tokens
act as root role Admin; personal access tokens act as their user. Decisions flagadmin makes
where the spec is silent: ADMIN permission means root role Admin; a project is visible to
Admins and Editors, and to anyone with a role in it.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from datetime import datetime

from flask import Flask, current_app, request

from . import throttle
from .errors import AuthenticationRequired, NoAccessError
from .store import tokens

#: Tokens longer than this are refused before any lookup (ours are 69 characters).
MAX_TOKEN_LENGTH = 512

#: Permission names an operation may require.
ADMIN = "ADMIN"  # root role Admin (spec 4.1, 4.5)
USER = "USER"  # a personal access token: the operation is about the calling user (spec 4.2)
ANY = None  # any valid API token (spec 4.3, 4.4)

_HOW = (
    "Send an API token in the Authorization header, raw or as 'Bearer <token>'; "
    "an operator creates one with `flagadmin create-token --admin` or "
    "`flagadmin create-token --user USERNAME`."
)


@dataclass(frozen=True)
class Caller:
    """Who is calling: the token's row id and kind, its user (None for admin tokens), root role."""

    token_id: int
    kind: str
    user_id: int | None
    root_role: str
    last_used_at: str | None = None
    expires_at: str | None = None

    @property
    def sees_all_projects(self) -> bool:
        """True for Admins and Editors, who see every project."""
        return self.root_role in ("Admin", "Editor")


def bearer_token(header: str | None) -> str:
    """Return the token of an ``Authorization`` header value.

    :raise AuthenticationRequired: the header is missing, empty, holds a scheme without a
        token, more than one token, or a token too long to be one of ours.
    """
    if header is None or not header.strip():
        raise AuthenticationRequired("Your request had no Authorization header. " + _HOW)
    parts = header.split()
    if parts[0].lower() == "bearer":
        parts = parts[1:]
        if not parts:
            raise AuthenticationRequired(
                "The Authorization header names the Bearer scheme but holds no token. " + _HOW
            )
    if len(parts) != 1:
        raise AuthenticationRequired("The Authorization header must hold exactly one token. " + _HOW)
    token = parts[0]
    if len(token) > MAX_TOKEN_LENGTH:
        raise AuthenticationRequired(
            "The token in the Authorization header is not a valid API token. " + _HOW
        )
    return token


def authenticate(db) -> Caller:
    """Return the :class:`Caller` of the current request.

    The token is looked up by its digest. A token found valid is remembered by its digest until
    it expires or until any other connection commits (``PRAGMA data_version`` moves, checked on
    every request), so a revoked or expired token is still refused at once. A failure counts
    against the client address; a valid token is never throttled.

    :raise AuthenticationRequired: no valid, unexpired, unrevoked API token (spec 5.2).
    :raise TooManyRequestsError: no valid token, and the address has failed too often lately.
    """
    try:
        return _authenticate(db)
    except AuthenticationRequired:
        throttle.count_failure()
        raise


CALLERS = "flagadmin.callers"


@dataclass
class _Known:
    """A token found valid: its caller, when it expires (epoch seconds) and when its
    ``last_used_at`` is next due (monotonic seconds)."""

    caller: Caller
    expires: float | None
    touch_due: float


class _KnownCallers(threading.local):
    """Per thread, so per database connection: tokens found valid, by digest, kept while
    ``PRAGMA data_version`` of that connection stays the same, that is while no other
    connection has committed anything (a revocation, a new token, a seed load...)."""

    def __init__(self) -> None:
        self.version: int | None = None
        self.by_digest: dict[str, _Known] = {}


def _authenticate(db) -> Caller:
    token = bearer_token(request.headers.get("Authorization"))
    known_callers: _KnownCallers = current_app.extensions[CALLERS]
    version = tokens.change_counter(db)
    if version != known_callers.version:
        known_callers.by_digest.clear()
        known_callers.version = version
    key = tokens.digest(token)
    known = known_callers.by_digest.get(key)
    if known is None or (known.expires is not None and known.expires <= time.time()):
        found = tokens.find_caller(db, token)
        if found is None:
            known_callers.by_digest.pop(key, None)
            raise AuthenticationRequired(
                "The API token in the Authorization header is unknown, revoked or expired. " + _HOW
            )
        caller = Caller(**found)
        tokens.touch(db, caller.token_id, caller.last_used_at)
        expires = datetime.fromisoformat(caller.expires_at).timestamp() if caller.expires_at else None
        known = _Known(caller, expires, time.monotonic() + tokens.LAST_USED_GRANULARITY_S)
        known_callers.by_digest[key] = known
    elif time.monotonic() >= known.touch_due:
        tokens.touch(db, known.caller.token_id, None)
        known.touch_due = time.monotonic() + tokens.LAST_USED_GRANULARITY_S
    return known.caller


def init_app(app: Flask) -> None:
    """Give ``app`` its per-thread record of tokens found valid."""
    app.extensions[CALLERS] = _KnownCallers()


def require(caller: Caller, permission: str | None) -> None:
    """Check that ``caller`` holds ``permission`` (:data:`ADMIN`, :data:`USER` or :data:`ANY`).

    :raise NoAccessError: the permission is missing; the message names it (spec 5.3, 7).
    """
    if permission == ADMIN and caller.root_role != "Admin":
        raise NoAccessError(
            "You don't have the required permissions to perform this operation. "
            'To perform this action, you need the "ADMIN" permission.'
        )
    if permission == USER and caller.user_id is None:
        raise NoAccessError(
            "This operation is about the calling user, and an admin API token has no user. "
            "Use a personal access token: `flagadmin create-token --user USERNAME`."
        )
