"""API tokens (spec 5), stored only as digests: admin tokens and personal access tokens (the
admin API), client tokens (the Client API of backend SDKs) and frontend tokens (the Frontend
API), the last two scoped to one environment and some or all projects.

A token is looked up by the SHA-256 digest of what the client sent; the plain token is never
stored, compared or logged. Functions that depend on the time take ``now`` (a stored-format
timestamp) so that the caller's clock decides.

Secrets are made in the reference server's formats: ``*:*.<64 hex>`` for an admin token
(flagadmin's admin tokens have always been 32 random bytes), ``user:<56 hex>`` for a personal
access token, and ``<project>:<environment>.<56 hex>`` for a client or frontend token of one
project, ``*:<environment>.<56 hex>`` of every project and ``[]:<environment>.<56 hex>`` of
several (28 random bytes). The prefix only tells a person what the token is for: what it may
read is the stored row's.
"""

from __future__ import annotations

import hashlib
import json
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

#: The kinds of token (``api_tokens.kind``): the admin API's two and the SDKs' two.
KINDS = ("admin", "personal", "client", "frontend")
#: The kinds an SDK sends, each to its own API.
SDK_KINDS = ("client", "frontend")
#: The reference server's API token types (``apiTokenSchema.type``) and the kind each is:
#: ``backend`` is the newer name of ``client``, and is answered as it was created.
TYPES = {"client": "client", "backend": "client", "frontend": "frontend", "admin": "admin"}
#: Every project, in a token's ``projects`` as the reference server writes it.
ALL_PROJECTS = "*"


def digest(token: str) -> str:
    """Return the hex SHA-256 digest of ``token`` (64 characters)."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def new_admin_token() -> str:
    """Return a fresh admin API token: ``*:*.`` plus 64 random hex characters."""
    return ADMIN_PREFIX + secrets.token_hex(32)


def new_personal_token() -> str:
    """Return a fresh personal access token: ``user:`` plus 56 random hex characters."""
    return PERSONAL_PREFIX + secrets.token_hex(28)


def new_sdk_token(environment: str, projects: tuple[str, ...] | None) -> str:
    """Return a fresh client or frontend token for ``environment`` and ``projects`` (None:
    every project), in the reference server's format: ``<project>:<environment>.`` for one
    project, ``*:<environment>.`` for every project, ``[]:<environment>.`` for several, then
    56 random hex characters."""
    if projects is None:
        scope = ALL_PROJECTS
    elif len(projects) == 1:
        scope = projects[0]
    else:
        scope = "[]"
    return f"{scope}:{environment}." + secrets.token_hex(28)


def _projects_column(projects: tuple[str, ...] | list[str] | None) -> str | None:
    """``projects`` as stored: compact JSON text, or NULL for every project."""
    return None if projects is None else json.dumps(list(projects), separators=(",", ":"))


def _projects_of(column: str | None) -> tuple[str, ...] | None:
    """The stored ``projects`` column as a tuple (None: every project)."""
    return None if column is None else tuple(json.loads(column))


def insert_token(
    conn: Connection,
    token: str,
    *,
    kind: str,
    user_id: int | None = None,
    name: str,
    expires_at: str | None = None,
    now: str | None = None,
    type: str | None = None,
    environment: str | None = None,
    projects: tuple[str, ...] | list[str] | None = None,
) -> int:
    """Store the digest of ``token`` and return the new row id.

    ``kind`` is ``"admin"`` (``user_id`` None), ``"personal"`` (``user_id`` set), or
    ``"client"`` / ``"frontend"`` (``environment`` set; ``projects`` a list of project ids,
    None for every project). ``type`` is the reference server's name of the kind (default:
    the kind itself; ``"backend"`` for a client token made as one; None for a personal token).

    :raise flagadmin.store.Conflict: the token is already stored.
    :raise Exception: the engine's integrity error: kind, user, type and scope disagree.
    """
    if type is None and kind != "personal":
        type = kind
    with conn.write("api_tokens"):
        return conn.insert(
            "INSERT INTO api_tokens (digest, kind, user_id, name, created_at, expires_at, type,"
            " environment, projects) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                digest(token),
                kind,
                user_id,
                name,
                now or now_rfc3339(),
                expires_at,
                type,
                environment,
                _projects_column(projects),
            ],
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
                "INSERT INTO api_tokens (digest, kind, type, name, created_at)"
                " VALUES (?, 'admin', 'admin', ?, ?)",
                [digest(token), name, now_rfc3339()],
            )
            return True
        if row["kind"] == "admin" and row["revoked_at"] is None and row["expires_at"] is None:
            return False
        conn.run(
            "UPDATE api_tokens SET kind = 'admin', type = 'admin', user_id = NULL, environment = NULL,"
            " projects = NULL, revoked_at = NULL, expires_at = NULL WHERE id = ?",
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

    ``token_id`` and ``kind`` (``"admin"``, ``"personal"``, ``"client"`` or ``"frontend"``) of
    the token; ``user_id`` of its user (None but for a personal token); ``root_role``
    (``Admin``, ``Editor`` or ``Viewer``; an admin API token acts as Admin; a client or
    frontend token is answered only by its own API, and carries Viewer); ``username`` (None
    but for a personal token); when the token was last used and when it expires (stored
    timestamps, or None); ``environment``, the one environment a client or frontend token
    reads (None: every environment, the admin API's tokens); ``projects``, the projects it
    reads (None: every project).
    """

    token_id: int
    kind: str
    user_id: int | None
    root_role: str
    username: str | None = None
    last_used_at: str | None = None
    expires_at: str | None = None
    environment: str | None = None
    projects: tuple[str, ...] | None = None

    @property
    def sees_all_projects(self) -> bool:
        """True for Admins and Editors, who see every project."""
        return self.root_role in ("Admin", "Editor")

    @property
    def expires_epoch(self) -> float | None:
        """When the token stops working, in epoch seconds (None: never)."""
        return parse_rfc3339(self.expires_at).timestamp() if self.expires_at else None

    def reads_project(self, project_id: str) -> bool:
        """Whether a client or frontend token's scope takes in ``project_id`` (always True for
        a token of every project)."""
        return self.projects is None or project_id in self.projects


def find_caller(conn: Connection, token: str, now: str) -> Caller | None:
    """Return the :class:`Caller` that ``token`` authenticates at ``now``, or None.

    Revoked tokens, tokens expired at ``now`` and personal tokens of removed, deactivated or
    deleted users (SCIM) authenticate nobody. A personal token's ``root_role`` is its
    user's effective one: the highest of its own and its SCIM groups' (``user_root_roles``).
    """
    row = conn.one(
        "SELECT t.id AS token_id, t.kind, t.user_id,"
        " CASE t.kind WHEN 'personal' THEN r.root_role WHEN 'admin' THEN 'Admin' ELSE 'Viewer' END"
        " AS root_role, u.username, t.last_used_at, t.expires_at, t.environment, t.projects"
        " FROM api_tokens t LEFT JOIN users u ON u.id = t.user_id"
        " LEFT JOIN user_root_roles r ON r.user_id = t.user_id"
        " WHERE t.digest = ? AND t.revoked_at IS NULL"
        " AND (t.expires_at IS NULL OR t.expires_at > ?)"
        " AND (t.kind <> 'personal'"
        "   OR (u.id IS NOT NULL AND coalesce(u.active, 1) = 1 AND u.deleted_at IS NULL))",
        [digest(token), now],
    )
    if row is None:
        return None
    row["projects"] = _projects_of(row["projects"])
    return Caller(**row)


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

    Each: ``{"id", "name", "kind", "username" (None but for personal tokens), "created_at",
    "last_used_at", "expires_at", "revoked_at", "status", "scope"}``, where ``status`` is
    ``"active"``, ``"expired"`` or ``"revoked"`` and ``scope`` what the token reads, as its
    secret's prefix says it (``*:*`` for an admin token, ``default:development``,
    ``*:development`` or ``[]:development`` for a client or frontend one; None for a personal
    token).
    """
    now = now or now_rfc3339()
    tokens = conn.all(
        "SELECT t.id, t.name, t.kind, u.username, t.created_at, t.last_used_at, t.expires_at,"
        " t.revoked_at, t.environment, t.projects FROM api_tokens t LEFT JOIN users u ON u.id = t.user_id"
        " ORDER BY t.id"
    )
    for token in tokens:
        expired = token["expires_at"] is not None and token["expires_at"] <= now
        token["status"] = "revoked" if token["revoked_at"] else "expired" if expired else "active"
        token["scope"] = scope_of(token["kind"], token.pop("environment"), token.pop("projects"))
    return tokens


def scope_of(kind: str, environment: str | None, projects: str | None) -> str | None:
    """What a token of ``kind`` reads, as its secret's prefix says it (see :func:`list_tokens`);
    ``projects`` as stored (JSON text, or None for every project)."""
    if kind == "admin":
        return "*:*"
    if kind == "personal":
        return None
    listed = _projects_of(projects)
    first = ALL_PROJECTS if listed is None else listed[0] if len(listed) == 1 else "[]"
    return f"{first}:{environment}"


def api_tokens(conn: Connection, project: str | None = None) -> list[dict[str, Any]]:
    """The API tokens the admin API's ``/api/admin/api-tokens`` shows: every admin, client and
    frontend token not revoked (expired ones included, as the reference server keeps them),
    oldest first; with ``project``, only the client and frontend tokens that name it among
    their projects (not those of every project, as the reference server's project tokens).

    Each: ``{"id", "name", "type", "kind", "environment" (None for admin tokens), "projects"
    (a list, None for every project), "created_at", "expires_at", "last_used_at"}``.
    """
    rows = conn.all(
        "SELECT id, name, type, kind, environment, projects, created_at, expires_at, last_used_at"
        " FROM api_tokens WHERE kind <> 'personal' AND revoked_at IS NULL ORDER BY id"
    )
    for row in rows:
        listed = _projects_of(row["projects"])
        row["projects"] = None if listed is None else list(listed)
    if project is not None:
        rows = [row for row in rows if row["projects"] is not None and project in row["projects"]]
    return rows


def api_token_by_digest(conn: Connection, token_digest: str) -> dict[str, Any] | None:
    """The admin, client or frontend token whose secret has ``token_digest``, not revoked, in
    :func:`api_tokens`' shape; None when there is none (personal tokens are not API tokens)."""
    row = conn.one(
        "SELECT id, name, type, kind, environment, projects, created_at, expires_at, last_used_at"
        " FROM api_tokens WHERE digest = ? AND kind <> 'personal' AND revoked_at IS NULL",
        [token_digest],
    )
    if row is not None:
        listed = _projects_of(row["projects"])
        row["projects"] = None if listed is None else list(listed)
    return row


def count_api_tokens_in_use(conn: Connection, now: str | None = None) -> int:
    """How many admin, client and frontend tokens are neither revoked nor expired at ``now``
    (what the ``apiTokens`` resource limit counts; personal access tokens are not counted)."""
    return conn.value(
        "SELECT count(*) FROM api_tokens WHERE kind <> 'personal' AND revoked_at IS NULL"
        " AND (expires_at IS NULL OR expires_at > ?)",
        [now or now_rfc3339()],
    )


def set_expiry(conn: Connection, token_id: int, expires_at: str | None) -> bool:
    """Make token ``token_id`` (not revoked) expire at ``expires_at`` (a stored timestamp, or
    None: never). Returns whether the token was found; the credentials version moves with it,
    so every process sees the new expiry from its next request."""
    with conn.write("api_tokens"):
        changed = conn.run(
            "UPDATE api_tokens SET expires_at = ? WHERE id = ? AND revoked_at IS NULL",
            [expires_at, token_id],
        )
    return changed == 1


def set_projects(conn: Connection, token_id: int, projects: tuple[str, ...] | list[str]) -> None:
    """Make the client or frontend token ``token_id`` read ``projects`` (a non-empty list);
    the credentials version moves with it. Call inside a write transaction."""
    with conn.write("api_tokens"):
        conn.run("UPDATE api_tokens SET projects = ? WHERE id = ?", [_projects_column(projects), token_id])


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
    ``{id, name, kind, userId, username, createdAt, expiresAt}``, and for a client or frontend
    token also the reference server's ``tokenName``, ``type``, ``environment`` and ``projects``
    (``["*"]`` for every project); or None."""
    row = conn.one(
        'SELECT t.id, t.name, t.kind, t.user_id AS "userId", u.username, t.created_at AS "createdAt",'
        ' t.expires_at AS "expiresAt", t.type, t.environment, t.projects'
        " FROM api_tokens t LEFT JOIN users u ON u.id = t.user_id WHERE t.id = ?",
        [token_id],
    )
    if row is None:
        return None
    type_, environment, projects = row.pop("type"), row.pop("environment"), row.pop("projects")
    if row["kind"] in SDK_KINDS:
        listed = _projects_of(projects)
        row.update(
            tokenName=row["name"],
            type=type_,
            environment=environment,
            projects=[ALL_PROJECTS] if listed is None else list(listed),
        )
    return row


def id_of(conn: Connection, token: str) -> int | None:
    """The id of the stored token ``token`` (found by its digest), or None."""
    return conn.value("SELECT id FROM api_tokens WHERE digest = ?", [digest(token)])
