"""Changes to API tokens (spec 5), each with its event in the change's transaction (spec 2.3, 6).

An admin, client or frontend token's changes are ``api-token-created`` / ``api-token-updated``
/ ``api-token-deleted``; a personal access token's are ``pat-created`` / ``pat-deleted``. The
event's ``data`` (``preData`` for ``api-token-deleted``, as the reference server records it)
names the token: ``{id, name, kind, userId, username, createdAt, expiresAt}`` (a client or
frontend token's with ``tokenName``, ``type``, ``environment`` and ``projects``), never the
token or its digest.

Client and frontend tokens (:func:`create_api_token`) follow the reference server's rules: one
environment that exists (not ``*``), projects that exist (``["*"]``: every project); the
``apiTokens`` resource limit counts every admin, client and frontend token in use.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .. import events
from ..flags import limits as resource_limits
from ..refusals import Invalid
from ..store import Connection, environments, tokens
from ..store import projects as store_projects
from .wire import api_token


def create(
    conn: Connection,
    actor: events.Actor,
    *,
    kind: str,
    name: str,
    user_id: int | None = None,
    expires_at: str | None = None,
    limits: Mapping[str, int] | None = None,
) -> tuple[str, int]:
    """Create a token of ``kind`` (``admin``, or ``personal`` for ``user_id``) and record
    ``api-token-created`` or ``pat-created``; return ``(token, id)``. The token is shown once:
    only its digest is stored. ``limits``: the instance's resource limits (None:
    ``FLAGADMIN_RESOURCE_LIMITS``).

    :raise refusals.Invalid: an admin token, and the API tokens in use (admin, client and
        frontend tokens neither revoked nor expired) reach the ``apiTokens`` limit (personal
        access tokens are not counted, spec 8.4).
    """
    token = tokens.new_admin_token() if kind == "admin" else tokens.new_personal_token()
    with conn.write("api_tokens"):
        if kind == "admin":
            in_use = tokens.count_api_tokens_in_use(conn)
            resource_limits.refuse_past("apiTokens", in_use, limits, "admin API token")
        token_id = tokens.insert_token(
            conn, token, kind=kind, user_id=user_id, name=name, expires_at=expires_at
        )
        events.record(
            conn,
            "api-token-created" if kind == "admin" else "pat-created",
            actor,
            data=tokens.describe(conn, token_id),
        )
    return token, token_id


def revoke(conn: Connection, actor: events.Actor, token_id: int) -> tuple[str, bool] | None:
    """Revoke token ``token_id`` and record ``api-token-deleted`` or ``pat-deleted`` (nothing
    when it already was revoked). Return ``(revoked_at, newly)``, or None for an unknown id."""
    with conn.write("api_tokens"):
        result = tokens.revoke(conn, token_id)
        if result is not None and result[1]:
            described = tokens.describe(conn, token_id)
            if described["kind"] != "personal":
                environment = described.get("environment")
                events.record(conn, "api-token-deleted", actor, environment=environment, pre_data=described)
            else:
                events.record(conn, "pat-deleted", actor, data=described)
    return result


def ensure_admin(conn: Connection, actor: events.Actor, token: str, *, name: str) -> bool:
    """Make ``token`` a valid admin token (``FLAGADMIN_ADMIN_TOKEN``): ``api-token-created``
    when it was stored now, ``api-token-updated`` when a revoked or expiring one was made
    valid again, nothing when it already was. Return True when something changed."""
    with conn.write("api_tokens"):
        known = tokens.id_of(conn, token) is not None
        changed = tokens.ensure_admin_token(conn, token, name=name)
        if changed:
            events.record(
                conn,
                "api-token-updated" if known else "api-token-created",
                actor,
                data=tokens.describe(conn, tokens.id_of(conn, token)),
            )
    return changed


#: The longest token name taken (``tokenName``).
MAX_NAME_LENGTH = 255


def sdk_scope(
    conn: Connection, type: str, environment: str | None, projects: Sequence[str] | None
) -> tuple[str, str, tuple[str, ...] | None]:
    """Check what a new client or frontend token is for, by the reference server's rules, and
    return ``(type, environment, projects)``: the type in lower case (``client``, ``backend``
    or ``frontend``), and the projects without repeats in the order given (None: every
    project, given as None or ``["*"]``).

    :raise Invalid: 400 in the reference server's words: the type is none of those three
        (any case), the environment is missing, ``*`` or unknown (``Environment=x does not
        exist``), the projects are empty, mix ``*`` with others, or name one that does not
        exist (``Project=x does not exist``).
    """
    kind = tokens.TYPES.get(type.lower()) if isinstance(type, str) else None
    if kind not in tokens.SDK_KINDS:
        raise Invalid(
            f"{type!r} is not a type of API token made here: use client, backend (the newer name of "
            "client) or frontend, in any case; an admin token is made with `flagadmin create-token --admin`."
        )
    label = "Frontend" if kind == "frontend" else "Client"
    if environment == "*":
        raise Invalid(f"{label} token cannot be scoped to all environments")
    if not environment:
        raise Invalid(f"A {label.lower()} token needs an environment: one of the install's environments.")
    if environments.get(conn, environment) is None:
        raise Invalid(f"Environment={environment} does not exist")
    scoped: tuple[str, ...] | None = None
    if projects is not None and list(projects) != [tokens.ALL_PROJECTS]:
        scoped = tuple(dict.fromkeys(projects))
        if not scoped:
            raise Invalid('projects must name at least one project, or be ["*"] for every project.')
        if tokens.ALL_PROJECTS in scoped:
            raise Invalid('"*" (every project) stands alone in projects: give ["*"] or the projects\' ids.')
        missing = [p for p in scoped if not isinstance(p, str) or store_projects.get(conn, p) is None]
        if missing:
            raise Invalid(f"Project={','.join(missing)} does not exist")
    return type.lower(), environment, scoped


def create_api_token(
    conn: Connection,
    actor: events.Actor,
    *,
    type: str,
    name: str,
    environment: str | None,
    projects: Sequence[str] | None = None,
    expires_at: str | None = None,
    limits: Mapping[str, int] | None = None,
) -> tuple[str, dict[str, Any]]:
    """Create a client (``type`` ``client`` or ``backend``) or frontend token named ``name``
    for ``environment`` and ``projects`` (None or ``["*"]``: every project), expiring at
    ``expires_at`` (a stored timestamp; None: never); record ``api-token-created``. Returns
    ``(secret, token)``: the secret, shown once (only its digest is stored), and the token in
    the reference server's ``apiTokenSchema`` shape, ``secret`` included
    (:func:`flagadmin.tokens.wire.api_token`). ``limits``: the instance's resource limits
    (None: ``FLAGADMIN_RESOURCE_LIMITS``).

    :raise Invalid: the name is empty or longer than :data:`MAX_NAME_LENGTH`; the type or the
        scope is refused (:func:`sdk_scope`); the API tokens in use reach the ``apiTokens``
        limit.
    """
    if not isinstance(name, str) or not name.strip() or len(name) > MAX_NAME_LENGTH:
        raise Invalid(f"tokenName must be a name of 1 to {MAX_NAME_LENGTH} characters, not only spaces.")
    with conn.write("api_tokens"):
        type, environment, scoped = sdk_scope(conn, type, environment, projects)
        kind = tokens.TYPES[type]
        in_use = tokens.count_api_tokens_in_use(conn)
        resource_limits.refuse_past("apiTokens", in_use, limits, f"{kind} token")
        secret = tokens.new_sdk_token(environment, scoped)
        token_id = tokens.insert_token(
            conn,
            secret,
            kind=kind,
            type=type,
            name=name,
            expires_at=expires_at,
            environment=environment,
            projects=scoped,
        )
        events.record(
            conn,
            "api-token-created",
            actor,
            project=scoped[0] if scoped and len(scoped) == 1 else None,
            environment=environment,
            data=tokens.describe(conn, token_id),
        )
        row = tokens.api_token_by_digest(conn, tokens.digest(secret))
    return secret, api_token(row, secret)


def list_api_tokens(conn: Connection, project: str | None = None) -> list[dict[str, Any]]:
    """The admin, client and frontend tokens not revoked, in the reference server's shape,
    oldest first (never a secret: only digests are kept); with ``project``, the client and
    frontend tokens that name it (``store.tokens.api_tokens``)."""
    return [api_token(row) for row in tokens.api_tokens(conn, project)]


def update_api_token(conn: Connection, actor: events.Actor, secret: str, expires_at: str | None) -> bool:
    """Make the admin, client or frontend token whose secret is ``secret`` expire at
    ``expires_at`` (a stored timestamp); record ``api-token-updated`` with the token before
    and after. Returns False, changing nothing, when no such token is in use (as the reference
    server, which answers 200 all the same). A token already expired can be given a new
    expiry: it works again from the next request."""
    with conn.write("api_tokens"):
        row = tokens.api_token_by_digest(conn, tokens.digest(secret))
        if row is None:
            return False
        before = tokens.describe(conn, row["id"])
        tokens.set_expiry(conn, row["id"], expires_at)
        events.record(
            conn,
            "api-token-updated",
            actor,
            environment=row["environment"],
            data=tokens.describe(conn, row["id"]),
            pre_data=before,
        )
    return True


def delete_api_token(
    conn: Connection, actor: events.Actor, secret: str, *, project: str | None = None
) -> bool | None:
    """Revoke the admin, client or frontend token whose secret is ``secret`` (it authenticates
    nobody from the next request) and record ``api-token-deleted``. With ``project``, only a
    client or frontend token of that one project is deleted (the reference server's project
    tokens). Returns True when it was revoked, None when no such token is in use (nothing
    changed), False when ``project`` is given and the token reads other projects too (nothing
    changed)."""
    with conn.write("api_tokens"):
        row = tokens.api_token_by_digest(conn, tokens.digest(secret))
        if row is None:
            return None
        if project is not None and row["projects"] != [project]:
            return False
        revoke(conn, actor, row["id"])
    return True
