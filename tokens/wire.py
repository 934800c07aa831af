"""API tokens in the reference server's shape (``apiTokenSchema``): what ``/api/admin/api-tokens``
answers and what ``flagadmin create-token`` prints beside a new client or frontend token."""

from __future__ import annotations

from typing import Any

from ..store.tokens import ALL_PROJECTS


def api_token(row: dict[str, Any], secret: str | None = None) -> dict[str, Any]:
    """The reference server's ``apiTokenSchema`` of a stored token (``store.tokens.api_tokens``'
    row): ``tokenName``, ``type`` (as it was created: ``client``, ``backend``, ``frontend`` or
    ``admin``), ``environment`` (``*`` for an admin token), ``project`` (the projects joined
    by commas, ``*`` for every project), ``projects`` (``["*"]`` for every project),
    ``expiresAt``, ``createdAt``, ``seenAt`` (when last used), ``alias`` (always null) and
    ``secure`` (always true: flagadmin keeps only a digest, so a secret is shown once, when
    made). ``secret`` is there only when given: at creation."""
    projects = [ALL_PROJECTS] if row["projects"] is None else list(row["projects"])
    wire: dict[str, Any] = {} if secret is None else {"secret": secret}
    wire.update(
        tokenName=row["name"],
        type=row["type"],
        environment=row["environment"] or "*",
        project=",".join(projects),
        projects=projects,
        expiresAt=row["expires_at"],
        createdAt=row["created_at"],
        seenAt=row["last_used_at"],
        alias=None,
        secure=True,
    )
    return wire
