"""Changes to API tokens (spec 5), each with its event in the change's transaction (spec 2.3, 6).

An admin API token's changes are ``api-token-created`` / ``api-token-updated`` /
``api-token-deleted``; a personal access token's are ``pat-created`` / ``pat-deleted``. The
event's ``data`` (``preData`` for ``api-token-deleted``, as the reference server records it)
names the token: ``{id, name, kind, userId, username, createdAt, expiresAt}``, never the
token or its digest.
"""

from __future__ import annotations

from collections.abc import Mapping

from .. import events
from ..flags import limits as resource_limits
from ..store import Connection, tokens


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

    :raise refusals.Invalid: an admin token, and the admin tokens in use (neither revoked nor
        expired) reach the ``apiTokens`` limit (personal access tokens are not counted, spec
        8.4).
    """
    token = tokens.new_admin_token() if kind == "admin" else tokens.new_personal_token()
    with conn.write("api_tokens"):
        if kind == "admin":
            in_use = [t for t in tokens.list_tokens(conn) if t["kind"] == "admin" and t["status"] == "active"]
            resource_limits.refuse_past("apiTokens", len(in_use), limits, "admin API token")
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
            if described["kind"] == "admin":
                events.record(conn, "api-token-deleted", actor, pre_data=described)
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
