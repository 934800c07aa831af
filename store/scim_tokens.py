"""SCIM tokens (spec 4.5): generating one revokes every earlier one, atomically."""

from __future__ import annotations

import secrets

from ..timestamps import now_rfc3339
from .engine import Connection
from .tokens import digest

SCIM_PREFIX = "scim_"


def generate(conn: Connection) -> str:
    """Revoke every active SCIM token, store a new one, and return it (shown only now).

    One write transaction that takes the write lock before anything is read, so concurrent
    calls serialize and exactly one token is active after all of them. The token is ``scim_``
    plus 32 random bytes, URL-safe base64; only its SHA-256 digest is stored.
    """
    token = SCIM_PREFIX + secrets.token_urlsafe(32)
    now = now_rfc3339()
    with conn.write("scim_tokens"):
        conn.run("UPDATE scim_tokens SET revoked_at = ? WHERE revoked_at IS NULL", [now])
        conn.run("INSERT INTO scim_tokens (digest, created_at) VALUES (?, ?)", [digest(token), now])
    return token


def is_active(conn: Connection, token: str) -> bool:
    """Return True when ``token`` is the current (unrevoked) SCIM token."""
    found = conn.value("SELECT 1 FROM scim_tokens WHERE digest = ? AND revoked_at IS NULL", [digest(token)])
    return found is not None


def active_count(conn: Connection) -> int:
    """Return how many SCIM tokens are active (0 or 1, by the schema)."""
    return conn.value("SELECT count(*) FROM scim_tokens WHERE revoked_at IS NULL")
