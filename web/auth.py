"""Authentication and permissions of the admin API (spec 5, 7) and of the SDKs' APIs.

The ``Authorization`` header holds an API token, raw (as the SDKs send it) or as ``Bearer
<token>``. Admin API tokens act as root role Admin; personal access tokens act as their user.
Decisions flagadmin makes where the spec is silent: the ADMIN permission means root role
Admin; a project is visible to Admins and Editors, and to anyone with a role in it.

Which API takes which token, as the reference server decides it: a client token only the Client
API (:data:`Permission.CLIENT`), a frontend token only the Frontend API
(:data:`Permission.FRONTEND`), an admin or personal token only the admin API; a valid token on
another API is refused with 403 ``invalid token: expected a different token type for this
endpoint``, and no valid token on the SDKs' APIs with the reference server's 401 message.

Maintenance mode (``FLAGADMIN_MAINTENANCE_MODE``, shown as ui-config's ``maintenanceMode``)
is enforced here too, in :func:`refuse_writes_in_maintenance`, which :func:`require` runs for
every declared operation: writes are refused with 503, reads keep working.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from flask import current_app, request

from ..refusals import Unavailable
from ..store import Connection, tokens
from ..store.tokens import Caller
from .database import versions
from .errors import AuthenticationRequired, NoAccessError
from .state import AppState, state

__all__ = [
    "Caller",
    "Permission",
    "authenticate",
    "bearer_token",
    "changes_nothing",
    "refuse_writes_in_maintenance",
    "require",
]

#: Tokens longer than this are refused before any lookup (ours are 69 characters).
MAX_TOKEN_LENGTH = 512

HOW_TO_AUTHENTICATE = (
    "Send an API token in the Authorization header, raw or as 'Bearer <token>'; "
    "an operator creates one with `flagadmin create-token --admin` or "
    "`flagadmin create-token --user USERNAME`."
)


#: The token kinds the admin API takes (:attr:`Permission.token_kinds`' default).
ADMIN_API_KINDS = ("admin", "personal")

#: The reference server's 403 for a valid token sent to an API that takes another kind.
WRONG_TOKEN_TYPE = "invalid token: expected a different token type for this endpoint"

#: The reference server's 401 on the SDKs' APIs (no token, or one that is unknown, revoked or
#: expired).
SDK_TOKEN_REQUIRED = (
    "This endpoint requires an API token. "
    "Please add an authorization header to your request with a valid token"
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
    (``flagadmin.flags.access.require``, 403 naming the permission, the environment where it
    is granted per environment, and the project), and
    :func:`require` lets it pass. ``project_permission`` is its name (the reference server's,
    e.g. ``CREATE_FEATURE``; None for seeing the project's flags).

    ``token_kinds``: the kinds of token (``store.tokens.KINDS``) the operation takes at all,
    :data:`ADMIN_API_KINDS` but for the SDKs' APIs; :func:`require` refuses any other kind
    with 403 :data:`WRONG_TOKEN_TYPE`.
    """

    value: str
    per_project: bool = False
    project_permission: str | None = None
    token_kinds: tuple[str, ...] = ADMIN_API_KINDS

    #: Any valid token of the admin API, admin or personal (spec 4.3, 4.4).
    ANY: ClassVar[Permission]
    #: Root role Admin: an admin API token, or a personal token of an Admin (spec 4.1, 4.5).
    ADMIN: ClassVar[Permission]
    #: A personal access token: the operation is about the calling user (spec 4.2).
    USER: ClassVar[Permission]
    #: A client (backend) token: the Client API (``/api/client``), which backend SDKs read.
    CLIENT: ClassVar[Permission]
    #: A frontend token: the Frontend API (``/api/frontend``).
    FRONTEND: ClassVar[Permission]
    #: A frontend or client token (OFREP, ``/ofrep/v1``).
    CLIENT_OR_FRONTEND: ClassVar[Permission]

    @property
    def for_sdks(self) -> bool:
        """True for the SDKs' APIs (the operation takes no admin or personal token)."""
        return not set(self.token_kinds) & set(ADMIN_API_KINDS)

    @classmethod
    def in_project(
        cls, name: str | None, project: str = "the path's project", environment: str | None = None
    ) -> Permission:
        """The permission ``name`` (None: seeing the project's flags) in ``project`` (words
        for where the project comes from), and in ``environment`` (words for where the
        environment comes from, for a permission granted per environment; None: not scoped).
        Held by root roles Admin and Editor (an admin API token acts as Admin) and by the
        project roles there that grant it (``flagadmin role list``); any role there sees the
        project's flags (spec 5.3)."""
        if name is None:
            return cls(
                f"a token that sees {project}: root role Admin or Editor (an admin API token acts as "
                "Admin), or any role in that project (a role that grants nothing included)",
                per_project=True,
            )
        where = f"in {environment} of {project}" if environment else f"in {project}"
        return cls(
            f"the {name} permission {where}: root role Admin or Editor (an admin API token acts as "
            "Admin), or a project role there that grants it (Owner grants every project permission; "
            "`flagadmin role list` shows what Member and custom roles grant)",
            per_project=True,
            project_permission=name,
        )


Permission.ANY = Permission("any valid API token")
Permission.ADMIN = Permission("the ADMIN permission")
Permission.USER = Permission("a personal access token")
Permission.CLIENT = Permission("a client (backend) API token", token_kinds=("client",))
Permission.FRONTEND = Permission("a frontend API token", token_kinds=("frontend",))
Permission.CLIENT_OR_FRONTEND = Permission(
    "a frontend or client (backend) API token", token_kinds=("client", "frontend")
)


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


def authenticate(conn: Connection, permission: Permission | None = None) -> Caller:
    """Return the :class:`Caller` of the current request.

    The token is looked up by its digest. A token found valid is kept in the app's ``callers``
    cache until the credentials version moves (a revocation, a new expiry, a role change,
    from any process) or its own expiry passes, so a revoked or expired token is refused by
    the very next request. A failure counts against the client address; a valid token is
    never throttled. ``permission``: what the operation needs (None: the one declared with
    the request's view, if any); on the SDKs' APIs a 401 says :data:`SDK_TOKEN_REQUIRED`.

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
    except AuthenticationRequired as exc:
        app_state.throttle.failed(request.remote_addr or "-")
        if (permission or _declared_permission()).for_sdks:
            raise AuthenticationRequired(SDK_TOKEN_REQUIRED, headers=exc.headers) from None
        raise
    if clock.monotonic() >= known.touch_due:
        known.touch_due = clock.monotonic() + tokens.LAST_USED_GRANULARITY_S
        app_state.token_uses.record(known.caller.token_id, clock.now_rfc3339())
    return known.caller


def _declared_permission() -> Permission:
    """The permission declared with the view of the current request
    (:func:`~flagadmin.web.operations.operation`), or :data:`Permission.ANY`."""
    view = current_app.view_functions.get(request.endpoint) if request.endpoint else None
    declared = getattr(view, "operation", None)
    return declared.permission if declared is not None else Permission.ANY


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


#: The methods that change something (RFC 9110 section 9.2.1: the methods that are not safe).
#: The reference server refuses POST, PUT and DELETE in maintenance mode; flagadmin refuses
#: PATCH as well, as a JSON Patch of a flag changes it as much as a PUT.
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})

#: Seconds a client is told to wait (``Retry-After``) when maintenance mode refuses a write.
#: The mode is a start-up setting, so it lasts at least until the next restart.
MAINTENANCE_RETRY_AFTER_S = 300

MAINTENANCE_MESSAGE = (
    "flagadmin is in maintenance mode, so it refuses every change and keeps answering reads. "
    "Retry once an operator has turned maintenance mode off "
    "(FLAGADMIN_MAINTENANCE_MODE=false, then a restart)."
)


def changes_nothing(view):
    """Mark ``view`` (a view function, decorated before :func:`~flagadmin.web.operations.operation`)
    as an operation that writes nothing although its method is POST (a check, such as
    ``POST /api/admin/features/validate``): maintenance mode lets it through. Returns ``view``."""
    view.changes_nothing = True
    return view


def refuse_writes_in_maintenance() -> None:
    """Refuse the current request when maintenance mode is on and it is a write: a method of
    :data:`WRITE_METHODS` on an operation not marked :func:`changes_nothing`. Reads (GET,
    HEAD, OPTIONS) and checks are answered as usual.

    SCIM (``/scim/v2``) is not refused: an identity provider's provisioning is not an edit
    by a person, and the reference server's maintenance mode covers its admin API only. The
    command line is not refused either: it is the operator's own tool.

    :raise Unavailable: 503, with ``Retry-After`` (:data:`MAINTENANCE_RETRY_AFTER_S`) and a
        message saying that maintenance mode is on and writes are refused.
    """
    if request.method not in WRITE_METHODS or not state().settings.maintenance_mode:
        return
    view = current_app.view_functions.get(request.endpoint) if request.endpoint else None
    if getattr(view, "changes_nothing", False):
        return
    raise Unavailable(MAINTENANCE_MESSAGE, retry_after_s=MAINTENANCE_RETRY_AFTER_S)


def require(caller: Caller, permission: Permission) -> None:
    """Check that the request may run now and that ``caller`` holds ``permission`` (a project
    permission passes: the domain checks it once it knows the project, see
    :class:`Permission`). Every declared operation calls it once the caller is authenticated.

    First the token's kind: an operation takes only the kinds of its
    :attr:`Permission.token_kinds` (a client token only the Client API, a frontend token only
    the Frontend API, admin and personal tokens only the admin API). Then maintenance mode,
    for the admin API only: the SDKs' traffic (metrics, registrations) is not an edit.

    :raise NoAccessError: the token is of a kind the operation does not take
        (:data:`WRONG_TOKEN_TYPE`), or the permission is missing; the message names it (spec
        5.3, 7).
    :raise Unavailable: a write in maintenance mode (:func:`refuse_writes_in_maintenance`).
    """
    if caller.kind not in permission.token_kinds:
        raise NoAccessError(WRONG_TOKEN_TYPE)
    if permission.for_sdks:
        return
    refuse_writes_in_maintenance()
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
