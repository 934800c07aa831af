"""API tokens (spec 5): admin tokens and personal access tokens, stored only as digests.

A token is looked up by the SHA-256 digest of what the client sent; the plain token is never
stored, compared or logged. Functions that depend on the time take ``now`` (a stored-format
timestamp) so that the caller's clock decides.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from ..timestamps import format_rfc3339, now_rfc3339, parse_rfc3339
from .engine import Connection

#: Seconds between two writes of a token's ``last_used_at``: reads stay reads.
LAST_USED_GRANULARITY_S = 60

ADMIN_PREFIX = "*:*."
PERSONAL_PREFIX = "user:"


def digest(token: str) -> str:
    """Return the hex SHA-256 digest of ``token`` (64 characters)."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def new_admin_token() -> str:
    """Return a fresh admin API token: ``*:*.`` plus 64 random hex characters."""
    return ADMIN_PREFIX + secrets.token_hex(32)


def new_personal_token() -> str:
    """Return a fresh personal access token: ``user:`` plus 56 random hex characters."""
    return PERSONAL_PREFIX + secrets.token_hex(28)


def insert_token(
    conn: Connection,
    token: str,
    *,
    kind: str,
    user_id: int | None = None,
    name: str,
    expires_at: str | None = None,
    now: str | None = None,
) -> int:
    """Store the digest of ``token`` and return the new row id.

    ``kind`` is ``"admin"`` (``user_id`` None) or ``"personal"`` (``user_id`` set).

    :raise flagadmin.store.Conflict: the token is already stored.
    :raise Exception: the engine's integrity error: kind and user disagree.
    """
    with conn.write("api_tokens"):
        return conn.insert(
            "INSERT INTO api_tokens (digest, kind, user_id, name, created_at, expires_at)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            [digest(token), kind, user_id, name, now or now_rfc3339(), expires_at],
        )


def ensure_admin_token(conn: Connection, token: str, *, name: str) -> bool:
    """Make sure ``token`` is a valid, unrevoked, unexpiring admin token. Idempotent.

    Returns True when a row was added or reinstated, False when it already was valid.
    """
    with conn.write("api_tokens"):
        row = conn.one(
            "SELECT id, kind, revoked_at, expires_at FROM api_tokens WHERE digest = ?", [digest(token)]
        )
        if row is None:
            conn.run(
                "INSERT INTO api_tokens (digest, kind, name, created_at) VALUES (?, 'admin', ?, ?)",
                [digest(token), name, now_rfc3339()],
            )
            return True
        if row["kind"] == "admin" and row["revoked_at"] is None and row["expires_at"] is None:
            return False
        conn.run(
            "UPDATE api_tokens SET kind = 'admin', user_id = NULL, revoked_at = NULL,"
            " expires_at = NULL WHERE id = ?",
            [row["id"]],
        )
        return True


def has_admin_token(conn: Connection) -> bool:
    """Return True when at least one usable admin token exists."""
    found = conn.value(
        "SELECT 1 FROM api_tokens WHERE kind = 'admin' AND revoked_at IS NULL"
        " AND (expires_at IS NULL OR expires_at > ?) LIMIT 1",
        [now_rfc3339()],
    )
    return found is not None


@dataclass(frozen=True)
class Caller:
    """Who a valid API token acts as (spec 5).

    ``token_id`` and ``kind`` (``"admin"`` or ``"personal"``) of the token; ``user_id`` of its
    user (None for an admin token); ``root_role`` (``Admin``, ``Editor`` or ``Viewer``; an
    admin token acts as Admin); ``username`` (None for an admin token); when the token was
    last used and when it expires (stored timestamps, or None).
    """

    token_id: int
    kind: str
    user_id: int | None
    root_role: str
    username: str | None = None
    last_used_at: str | None = None
    expires_at: str | None = None

    @property
    def sees_all_projects(self) -> bool:
        """True for Admins and Editors, who see every project."""
        return self.root_role in ("Admin", "Editor")

    @property
    def expires_epoch(self) -> float | None:
        """When the token stops working, in epoch seconds (None: never)."""
        return parse_rfc3339(self.expires_at).timestamp() if self.expires_at else None


def find_caller(conn: Connection, token: str, now: str) -> Caller | None:
    """Return the :class:`Caller` that ``token`` authenticates at ``now``, or None.

    Revoked tokens, tokens expired at ``now`` and personal tokens of removed, deactivated or
    deleted users (SCIM) authenticate nobody. A personal token's ``root_role`` is its
    user's effective one: the highest of its own and its SCIM groups' (``user_root_roles``).
    """
    row = conn.one(
        "SELECT t.id AS token_id, t.kind, t.user_id, COALESCE(r.root_role, 'Admin') AS root_role,"
        " u.username, t.last_used_at, t.expires_at"
        " FROM api_tokens t LEFT JOIN users u ON u.id = t.user_id"
        " LEFT JOIN user_root_roles r ON r.user_id = t.user_id"
        " WHERE t.digest = ? AND t.revoked_at IS NULL"
        " AND (t.expires_at IS NULL OR t.expires_at > ?)"
        " AND (t.kind = 'admin'"
        "   OR (u.id IS NOT NULL AND coalesce(u.active, 1) = 1 AND u.deleted_at IS NULL))",
        [digest(token), now],
    )
    return None if row is None else Caller(**row)


def use_is_due(last_used_at: str | None, now: str) -> bool:
    """True when a token last used at ``last_used_at`` (a stored timestamp, or None: never)
    should be recorded as used at ``now``: at most once per :data:`LAST_USED_GRANULARITY_S`."""
    threshold = format_rfc3339(parse_rfc3339(now) - timedelta(seconds=LAST_USED_GRANULARITY_S))
    return last_used_at is None or last_used_at <= threshold


def record_uses(conn: Connection, uses: dict[int, str]) -> None:
    """Record that each token of ``uses`` (token id -> stored timestamp) was last used then, in
    one write transaction; a token's later use already recorded is kept, a removed token is
    skipped."""
    if not uses:
        return
    with conn.write("api_tokens"):
        conn.run_many(
            "UPDATE api_tokens SET last_used_at = ?"
            " WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)",
            [(at, token_id, at) for token_id, at in sorted(uses.items())],
        )


def list_tokens(conn: Connection, now: str | None = None) -> list[dict[str, Any]]:
    """Return every API token, oldest first, without its digest (spec 5: tokens stay secret).

    Each: ``{"id", "name", "kind", "username" (None for admin tokens), "created_at",
    "last_used_at", "expires_at", "revoked_at", "status"}``, where ``status`` is ``"active"``,
    ``"expired"`` or ``"revoked"``.
    """
    now = now or now_rfc3339()
    tokens = conn.all(
        "SELECT t.id, t.name, t.kind, u.username, t.created_at, t.last_used_at, t.expires_at,"
        " t.revoked_at FROM api_tokens t LEFT JOIN users u ON u.id = t.user_id ORDER BY t.id"
    )
    for token in tokens:
        expired = token["expires_at"] is not None and token["expires_at"] <= now
        token["status"] = "revoked" if token["revoked_at"] else "expired" if expired else "active"
    return tokens


def revoke(conn: Connection, token_id: int) -> tuple[str, bool] | None:
    """Revoke the API token with id ``token_id``: it authenticates nobody from now on.

    Idempotent. Returns ``(revoked_at, newly)``: when it was revoked and whether this call did
    it (False: it already was). Returns None when no token has that id.
    """
    with conn.write("api_tokens"):
        changed = conn.run(
            "UPDATE api_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
            [now_rfc3339(), token_id],
        )
        revoked_at = conn.value("SELECT revoked_at FROM api_tokens WHERE id = ?", [token_id])
    return None if revoked_at is None else (revoked_at, changed == 1)


# --- tokens named in their events ---------------------------------------------------------


def describe(conn: Connection, token_id: int) -> dict[str, Any] | None:
    """What an event records of token ``token_id`` (never the token or its digest):
    ``{id, name, kind, userId, username, createdAt, expiresAt}``, or None."""
    return conn.one(
        'SELECT t.id, t.name, t.kind, t.user_id AS "userId", u.username, t.created_at AS "createdAt",'
        ' t.expires_at AS "expiresAt" FROM api_tokens t LEFT JOIN users u ON u.id = t.user_id'
        " WHERE t.id = ?",
        [token_id],
    )


def id_of(conn: Connection, token: str) -> int | None:
    """The id of the stored token ``token`` (found by its digest), or None."""
    return conn.value("SELECT id FROM api_tokens WHERE digest = ?", [digest(token)])
