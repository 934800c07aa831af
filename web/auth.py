"""Authentication and permissions of the admin API (spec 5, 7).

The ``Authorization`` header holds an API token, raw or as ``Bearer <token>``. Admin API tokens
act as root role Admin; personal access tokens act as their user. Decisions flagadmin makes
where the spec is silent: the ADMIN permission means root role Admin; a project is visible to
Admins and Editors, and to anyone with a role in it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from flask import request

from ..store import Connection, tokens
from ..store.tokens import Caller
from .database import versions
from .errors import AuthenticationRequired, NoAccessError
from .state import AppState, state

__all__ = ["Caller", "Permission", "authenticate", "bearer_token", "require"]

#: Tokens longer than this are refused before any lookup (ours are 69 characters).
MAX_TOKEN_LENGTH = 512

HOW_TO_AUTHENTICATE = (
    "Send an API token in the Authorization header, raw or as 'Bearer <token>'; "
    "an operator creates one with `flagadmin create-token --admin` or "
    "`flagadmin create-token --user USERNAME`."
)


@dataclass(frozen=True)
class Permission:
    """What an operation needs of its caller, declared once with it (``operation(...,
    permission=...)``); ``value`` says it in words, and the OpenAPI document prints "Needs
    ``value``." (so a view's docstring does not say it again).

    :data:`ANY`, :data:`ADMIN` and :data:`USER` depend on the token alone: :func:`require`
    checks them before the view runs. A project permission (:meth:`in_project`,
    ``per_project`` True) depends on the project, which only the domain finds (the path's
    project, or the named flag's): the view's domain code checks it
    (``flagadmin.flags.access.require``, 403 naming the permission and the project), and
    :func:`require` lets it pass. ``project_permission`` is its name (the reference server's,
    e.g. ``CREATE_FEATURE``; None for seeing the project's flags).
    """

    value: str
    per_project: bool = False
    project_permission: str | None = None

    #: Any valid API token (spec 4.3, 4.4).
    ANY: ClassVar[Permission]
    #: Root role Admin: an admin API token, or a personal token of an Admin (spec 4.1, 4.5).
    ADMIN: ClassVar[Permission]
    #: A personal access token: the operation is about the calling user (spec 4.2).
    USER: ClassVar[Permission]

    @classmethod
    def in_project(cls, name: str | None, project: str = "the path's project") -> Permission:
        """The permission ``name`` (None: seeing the project's flags) in ``project`` (words
        for where the project comes from), held by root roles Admin and Editor (an admin API
        token acts as Admin) and by any role in that project (spec 5.3)."""
        holders = "root role Admin or Editor (an admin API token acts as Admin), or any role in that project"
        what = f"the {name} permission in {project}" if name else f"a token that sees {project}"
        return cls(f"{what}: {holders}", per_project=True, project_permission=name)


Permission.ANY = Permission("any valid API token")
Permission.ADMIN = Permission("the ADMIN permission")
Permission.USER = Permission("a personal access token")


def bearer_token(header: str | None) -> str:
    """Return the token of an ``Authorization`` header value.

    :raise AuthenticationRequired: the header is missing, empty, holds a scheme without a
        token, more than one token, or a token too long to be one of ours.
    """
    if header is None or not header.strip():
        raise AuthenticationRequired("Your request had no Authorization header. " + HOW_TO_AUTHENTICATE)
    parts = header.split()
    if parts[0].lower() == "bearer":
        parts = parts[1:]
        if not parts:
            raise AuthenticationRequired(
                "The Authorization header names the Bearer scheme but holds no token. " + HOW_TO_AUTHENTICATE
            )
    if len(parts) != 1:
        raise AuthenticationRequired(
            "The Authorization header must hold exactly one token. " + HOW_TO_AUTHENTICATE
        )
    token = parts[0]
    if len(token) > MAX_TOKEN_LENGTH:
        raise AuthenticationRequired(
            "The token in the Authorization header is not a valid API token. " + HOW_TO_AUTHENTICATE
        )
    return token


@dataclass
class _KnownCaller:
    """A token found valid: its caller, the credentials version it was found at, when its
    ``last_used_at`` is next due (monotonic seconds), and its expiry (epoch seconds)."""

    caller: Caller
    credentials_version: int
    touch_due: float
    expires: float | None
    size: int = 300


def authenticate(conn: Connection) -> Caller:
    """Return the :class:`Caller` of the current request.

    The token is looked up by its digest. A token found valid is kept in the app's ``callers``
    cache until the credentials version moves (a revocation, a new expiry, a role change,
    from any process) or its own expiry passes, so a revoked or expired token is refused by
    the very next request. A failure counts against the client address; a valid token is
    never throttled.

    :raise AuthenticationRequired: no valid, unexpired, unrevoked API token (spec 5.2).
    :raise TooManyRequestsError: no valid token, and the address has failed too often lately.
    """
    app_state = state()
    clock = app_state.clock
    try:
        token = bearer_token(request.environ.get("HTTP_AUTHORIZATION"))
        version = versions().credentials
        key = tokens.digest(token)
        known = app_state.caches.callers.get(key)
        if known is None or not _still_valid(known, version, clock.time()):
            known = app_state.caches.callers.put(key, _look_up(conn, token, version, app_state))
    except AuthenticationRequired:
        app_state.throttle.failed(request.remote_addr or "-")
        raise
    if clock.monotonic() >= known.touch_due:
        known.touch_due = clock.monotonic() + tokens.LAST_USED_GRANULARITY_S
        app_state.token_uses.record(known.caller.token_id, clock.now_rfc3339())
    return known.caller


def _still_valid(known: _KnownCaller, credentials_version: int, now: float) -> bool:
    """Whether a kept token still stands: found at the current credentials version, and its own
    expiry (epoch seconds) not passed at ``now``."""
    return known.credentials_version == credentials_version and (known.expires is None or known.expires > now)


def _look_up(conn: Connection, token: str, credentials_version: int, app_state: AppState) -> _KnownCaller:
    """Find ``token`` in the database (found valid: its use noted when due).

    :raise AuthenticationRequired: the token is unknown, revoked or expired.
    """
    clock = app_state.clock
    caller = tokens.find_caller(conn, token, clock.now_rfc3339())
    if caller is None:
        raise AuthenticationRequired(
            "The API token in the Authorization header is unknown, revoked or expired. " + HOW_TO_AUTHENTICATE
        )
    now = clock.now_rfc3339()
    if tokens.use_is_due(caller.last_used_at, now):
        app_state.token_uses.record(caller.token_id, now)
    due = clock.monotonic() + tokens.LAST_USED_GRANULARITY_S
    return _KnownCaller(caller, credentials_version, due, caller.expires_epoch)


def require(caller: Caller, permission: Permission) -> None:
    """Check that ``caller`` holds ``permission`` (a project permission passes: the domain
    checks it once it knows the project, see :class:`Permission`).

    :raise NoAccessError: the permission is missing; the message names it (spec 5.3, 7).
    """
    if permission is Permission.ADMIN and caller.root_role != "Admin":
        raise NoAccessError(
            "You don't have the required permissions to perform this operation. "
            'To perform this action, you need the "ADMIN" permission.'
        )
    if permission is Permission.USER and caller.user_id is None:
        raise NoAccessError(
            "This operation is about the calling user, and an admin API token has no user. "
            "Use a personal access token: `flagadmin create-token --user USERNAME`."
        )
