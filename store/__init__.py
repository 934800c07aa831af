"""The store layer: every SQL statement of flagadmin lives in this package.

Functions take a connection (:class:`~flagadmin.store.engine.Connection` on SQLite,
:class:`~flagadmin.store.postgresql.PostgresConnection` on PostgreSQL; both know their
``dialect``) as first argument and return named rows: dicts keyed by field name, or small
dataclasses. Nothing here knows about HTTP. Errors of either engine come out as
:class:`Unavailable` (retry later) or :class:`Conflict` (a uniqueness rule was broken).

A database is named by a *target*: a file path (SQLite, the embedded default) or a
``postgresql://`` URL (:func:`is_postgresql`).
"""

from __future__ import annotations

from pathlib import Path

from . import engine
from .engine import Connection
from .errors import Conflict, NotADatabase, StoreError, Unavailable

__all__ = [
    "Conflict",
    "Connection",
    "NotADatabase",
    "StoreError",
    "Unavailable",
    "connect",
    "dialect_of",
    "is_postgresql",
]

#: URL schemes that select PostgreSQL.
POSTGRESQL_SCHEMES = ("postgresql://", "postgres://")


def is_postgresql(target: str | Path) -> bool:
    """True when ``target`` is a PostgreSQL URL rather than a SQLite file path."""
    return isinstance(target, str) and target.startswith(POSTGRESQL_SCHEMES)


def dialect_of(target: str | Path) -> str:
    """``"postgresql"`` or ``"sqlite"``: the engine ``target`` names."""
    return "postgresql" if is_postgresql(target) else "sqlite"


def connect(target: str | Path, *, busy_timeout_ms: int | None = None):
    """Open one connection to ``target`` (a SQLite path, or a PostgreSQL URL: a connection of
    its own, outside any pool). Does not create or upgrade the schema
    (:func:`flagadmin.store.schema.ensure_schema` does, once per process).

    :raise NotADatabase: the file is not a SQLite database.
    :raise Unavailable: the database cannot be reached or opened.
    """
    if is_postgresql(target):
        from .postgresql import connect_once

        return connect_once(str(target))
    return engine.connect(target, busy_timeout_ms=busy_timeout_ms)
