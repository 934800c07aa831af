"""The install's environments: where a flag can be switched on and off."""

from __future__ import annotations

from typing import Any

from .engine import Connection
from .features import BYTEWISE


def list_all(conn: Connection) -> list[dict[str, Any]]:
    """Every environment, by sort order then name: ``{"name", "type", "sortOrder"}``."""
    return conn.all(
        'SELECT name, type, sort_order AS "sortOrder" FROM environments'
        f" ORDER BY sort_order, name{BYTEWISE[conn.dialect]}"
    )


def get(conn: Connection, name: str) -> dict[str, Any] | None:
    """The environment ``name`` as ``{"name", "type", "sortOrder"}``, or None."""
    return conn.one('SELECT name, type, sort_order AS "sortOrder" FROM environments WHERE name = ?', [name])


def insert(conn: Connection, name: str, type: str, sort_order: int, now: str) -> bool:
    """Add the environment unless one of that name exists; call inside a write transaction.

    Returns True when it was added. Every live flag gets the new environment, disabled (as a
    flag created now would); archived flags get it when they are revived.
    """
    added = conn.run(
        "INSERT INTO environments (name, type, sort_order, created_at) VALUES (?, ?, ?, ?)"
        " ON CONFLICT (name) DO NOTHING",
        [name, type, sort_order, now],
    )
    if added:
        conn.run(
            "INSERT INTO feature_environments (feature_name, name, enabled)"
            " SELECT f.name, ?, 0 FROM features f WHERE f.archived_at IS NULL"
            " ON CONFLICT (feature_name, name) DO NOTHING",
            [name],
        )
    return bool(added)


def insert_missing(conn: Connection, names: list[str], now: str) -> None:
    """Add each of ``names`` not yet known, with the defaults (type development, sort order
    0); for seeds, whose flags name their environments. Call inside a write transaction."""
    conn.run_many(
        "INSERT INTO environments (name, created_at) VALUES (?, ?) ON CONFLICT (name) DO NOTHING",
        [(name, now) for name in names],
    )
