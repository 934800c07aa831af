"""A flag's dependency on its parent flag (table ``feature_dependencies``), both engines.

One row per child (a flag has at most one parent): ``{child, parent, enabled (0/1), variants}``,
``variants`` the compact JSON text of the parent's variant names the child needs, or NULL for
none (always NULL when ``enabled`` is 0: the parent must then be off). Answers show NULL as
``[]``, as the reference server does.
"""

from __future__ import annotations

from typing import Any

import orjson

from .engine import Connection
from .features import BYTEWISE


def _dependency(row: dict[str, Any]) -> dict[str, Any]:
    """A row as the reference shows a dependency: ``{feature, enabled, variants}``."""
    return {
        "feature": row["parent"],
        "enabled": bool(row["enabled"]),
        "variants": orjson.loads(row["variants"]) if row["variants"] else [],
    }


def parent_of(conn: Connection, child: str) -> dict[str, Any] | None:
    """The dependency of flag ``child`` (``{feature, enabled, variants}``), or None."""
    row = conn.one("SELECT parent, enabled, variants FROM feature_dependencies WHERE child = ?", [child])
    return None if row is None else _dependency(row)


def children_of(conn: Connection, parent: str) -> list[str]:
    """The flags that depend on ``parent``, by name (code point by code point)."""
    return conn.column(
        f"SELECT child FROM feature_dependencies WHERE parent = ? ORDER BY child{BYTEWISE[conn.dialect]}",
        [parent],
    )


def of_flag(conn: Connection, name: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The flag's dependencies (``[{feature, enabled, variants}]``: none or one) and its
    children (names, code point by code point), in one statement."""
    rows = conn.all(
        "SELECT child, parent, enabled, variants FROM feature_dependencies WHERE child = ? OR parent = ?",
        [name, name],
    )
    parents = [_dependency(row) for row in rows if row["child"] == name]
    children = sorted((row["child"] for row in rows if row["parent"] == name), key=lambda n: n.encode())
    return parents, children


def upsert(conn: Connection, child: str, parent: str, enabled: bool, variants: list[str] | None) -> None:
    """Make ``parent`` the one parent of ``child`` (replacing any other), with ``enabled`` and
    ``variants`` (None or empty: none); call inside a write transaction."""
    conn.run("DELETE FROM feature_dependencies WHERE child = ?", [child])
    conn.run(
        "INSERT INTO feature_dependencies (child, parent, enabled, variants) VALUES (?, ?, ?, ?)",
        [child, parent, int(enabled), orjson.dumps(variants).decode() if variants else None],
    )


def delete(conn: Connection, child: str, parent: str) -> bool:
    """Remove the dependency of ``child`` on ``parent``; True when there was one. Call inside a
    write transaction."""
    return conn.run("DELETE FROM feature_dependencies WHERE child = ? AND parent = ?", [child, parent]) > 0


def delete_of_child(conn: Connection, child: str) -> bool:
    """Remove every dependency of ``child``; True when there was one. Call inside a write
    transaction."""
    return conn.run("DELETE FROM feature_dependencies WHERE child = ?", [child]) > 0


def delete_flag(conn: Connection, name: str) -> None:
    """Remove the rows that name flag ``name``, as child or parent (before the flag is deleted
    for good); call inside a write transaction."""
    conn.run("DELETE FROM feature_dependencies WHERE child = ? OR parent = ?", [name, name])


def live_children_of(conn: Connection, parent: str) -> list[str]:
    """The live flags that depend on ``parent``, by name (what stops it being archived)."""
    return conn.column(
        "SELECT d.child FROM feature_dependencies d JOIN features f ON f.name = d.child"
        f" WHERE d.parent = ? AND f.archived_at IS NULL ORDER BY d.child{BYTEWISE[conn.dialect]}",
        [parent],
    )


def possible_parents(conn: Connection, child: str, project_id: str) -> list[str]:
    """The live flags of ``project_id`` that ``child`` could depend on: not itself, and without
    a parent of their own; by name (code point by code point)."""
    return conn.column(
        "SELECT f.name FROM features f WHERE f.project_id = ? AND f.name <> ? AND f.archived_at IS NULL"
        " AND NOT EXISTS (SELECT 1 FROM feature_dependencies d WHERE d.child = f.name)"
        f" ORDER BY f.name{BYTEWISE[conn.dialect]}",
        [project_id, child],
    )


def parent_variant_names(conn: Connection, parent: str) -> list[str]:
    """The names of the variants flag ``parent`` may resolve to: those of its strategies' and
    of its environments' variants, each once, sorted (code point by code point)."""
    texts = conn.column("SELECT variants FROM feature_strategies WHERE feature_name = ?", [parent])
    texts += conn.column("SELECT variants FROM feature_variants WHERE feature_name = ?", [parent])
    names = {
        variant["name"]
        for text in texts
        for variant in (orjson.loads(text) if text else [])
        if isinstance(variant, dict) and isinstance(variant.get("name"), str)
    }
    return sorted(names, key=lambda n: n.encode("utf-16-be"))


def any_exist(conn: Connection) -> bool:
    """True when some flag of the install depends on another."""
    return conn.value("SELECT 1 FROM feature_dependencies LIMIT 1") is not None
