"""API tokens (spec 5): admin tokens and personal access tokens, stored only as digests.

A token is looked up by the SHA-256 digest of what the client sent; the plain token is never
stored, compared or logged.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta
from typing import Any

import sqlite_utils

from ..timestamps import now_rfc3339
from .db import immediate

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
    db: sqlite_utils.Database,
    token: str,
    *,
    kind: str,
    user_id: int | None = None,
    name: str,
    expires_at: str | None = None,
) -> int:
    """Store the digest of ``token`` and return the new row id.

    ``kind`` is ``"admin"`` (``user_id`` None) or ``"personal"`` (``user_id`` set).

    :raise sqlite3.IntegrityError: the token is already stored, or kind and user disagree.
    """
    with immediate(db):
        cursor = db.execute(
            "INSERT INTO api_tokens (digest, kind, user_id, name, created_at, expires_at)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            [digest(token), kind, user_id, name, now_rfc3339(), expires_at],
        )
        return cursor.lastrowid


def ensure_admin_token(db: sqlite_utils.Database, token: str, *, name: str) -> bool:
    """Make sure ``token`` is a valid, unrevoked, unexpiring admin token. Idempotent.

    Returns True when a row was added or reinstated, False when it already was valid.
    """
    with immediate(db):
        row = db.execute(
            "SELECT id, kind, revoked_at, expires_at FROM api_tokens WHERE digest = ?",
            [digest(token)],
        ).fetchone()
        if row is None:
            db.execute(
                "INSERT INTO api_tokens (digest, kind, name, created_at) VALUES (?, 'admin', ?, ?)",
                [digest(token), name, now_rfc3339()],
            )
            return True
        if row[1] == "admin" and row[2] is None and row[3] is None:
            return False
        db.execute(
            "UPDATE api_tokens SET kind = 'admin', user_id = NULL, revoked_at = NULL,"
            " expires_at = NULL WHERE id = ?",
            [row[0]],
        )
        return True


def has_admin_token(db: sqlite_utils.Database) -> bool:
    """Return True when at least one usable admin token exists."""
    row = db.execute(
        "SELECT 1 FROM api_tokens WHERE kind = 'admin' AND revoked_at IS NULL"
        " AND (expires_at IS NULL OR expires_at > ?) LIMIT 1",
        [now_rfc3339()],
    ).fetchone()
    return row is not None


def find_caller(db: sqlite_utils.Database, token: str) -> dict[str, Any] | None:
    """Return the caller that ``token`` authenticates, or None.

    Shape: ``{"token_id": int, "kind": "admin"|"personal", "user_id": int|None,
    "root_role": "Admin"|"Editor"|"Viewer", "last_used_at": str|None, "expires_at":
    str|None}``. An admin token acts with root role Admin. Revoked and expired tokens
    authenticate nobody.
    """
    row = db.execute(
        "SELECT t.id, t.kind, t.user_id, COALESCE(u.root_role, 'Admin'), t.last_used_at, t.expires_at"
        " FROM api_tokens t LEFT JOIN users u ON u.id = t.user_id"
        " WHERE t.digest = ? AND t.revoked_at IS NULL"
        " AND (t.expires_at IS NULL OR t.expires_at > ?)"
        " AND (t.kind = 'admin' OR u.id IS NOT NULL)",
        [digest(token), now_rfc3339()],
    ).fetchone()
    if row is None:
        return None
    return {
        "token_id": row[0],
        "kind": row[1],
        "user_id": row[2],
        "root_role": row[3],
        "last_used_at": row[4],
        "expires_at": row[5],
    }


def change_counter(db: sqlite_utils.Database) -> int:
    """Return ``PRAGMA data_version``: it moves whenever another connection (another thread,
    or a command such as ``revoke-token``) commits. Equal values: nothing changed meanwhile."""
    return db.conn.execute("PRAGMA data_version").fetchone()[0]


def touch(db: sqlite_utils.Database, token_id: int, last_used_at: str | None) -> None:
    """Record that a token was used now, at most once per :data:`LAST_USED_GRANULARITY_S`.

    ``last_used_at`` is the value read with the token; when it is recent, nothing is written.
    """
    now = now_rfc3339()
    threshold = now_rfc3339(offset=-timedelta(seconds=LAST_USED_GRANULARITY_S))
    if last_used_at is not None and last_used_at > threshold:
        return
    with immediate(db):
        db.execute("UPDATE api_tokens SET last_used_at = ? WHERE id = ?", [now, token_id])


def list_tokens(db: sqlite_utils.Database) -> list[dict[str, Any]]:
    """Return every API token, oldest first, without its digest (spec 5: tokens stay secret).

    Each: ``{"id", "name", "kind", "username" (None for admin tokens), "created_at",
    "last_used_at", "expires_at", "revoked_at", "status"}``, where ``status`` is ``"active"``,
    ``"expired"`` or ``"revoked"``.
    """
    now = now_rfc3339()
    rows = db.execute(
        "SELECT t.id, t.name, t.kind, u.username, t.created_at, t.last_used_at, t.expires_at,"
        " t.revoked_at FROM api_tokens t LEFT JOIN users u ON u.id = t.user_id ORDER BY t.id"
    ).fetchall()
    keys = ("id", "name", "kind", "username", "created_at", "last_used_at", "expires_at", "revoked_at")
    tokens = [dict(zip(keys, row, strict=True)) for row in rows]
    for token in tokens:
        expired = token["expires_at"] is not None and token["expires_at"] <= now
        token["status"] = "revoked" if token["revoked_at"] else "expired" if expired else "active"
    return tokens


def revoke(db: sqlite_utils.Database, token_id: int) -> tuple[str, bool] | None:
    """Revoke the API token with id ``token_id``: it authenticates nobody from now on.

    Idempotent. Returns ``(revoked_at, newly)``: when it was revoked and whether this call did
    it (False: it already was). Returns None when no token has that id.
    """
    with immediate(db):
        cursor = db.execute(
            "UPDATE api_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
            [now_rfc3339(), token_id],
        )
        row = db.execute("SELECT revoked_at FROM api_tokens WHERE id = ?", [token_id]).fetchone()
    return None if row is None else (row[0], cursor.rowcount == 1)
