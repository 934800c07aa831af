"""Project roles and the permissions they grant (tables ``roles`` and ``role_permissions``,
schema version 11), and the one question permission checks ask: does a user hold a permission
in a project (and environment) through the roles she holds there.

A ``role_permissions`` row with ``environment`` ``''`` grants its permission in every
environment. The roles a user holds are read from the ``project_roles`` view (her own and her
SCIM groups'; none for a deactivated user), as :mod:`flagadmin.store.visibility` reads them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .engine import Connection
from .features import BYTEWISE

#: ``role_permissions.environment`` of a permission granted in every environment.
EVERY_ENVIRONMENT = ""


def holds(conn: Connection, user_id: int, project_id: str, permission: str, environment: str | None) -> bool:
    """Whether ``user_id`` holds ``permission`` in ``project_id`` through a role she holds there:
    granted in every environment, or in ``environment`` (None: only a grant in every environment
    counts)."""
    return bool(
        conn.value(
            "SELECT 1 FROM project_roles r JOIN role_permissions p ON p.role = r.role"
            " WHERE r.project_id = ? AND r.user_id = ? AND p.permission = ? AND p.environment IN ('', ?)"
            " LIMIT 1",
            [project_id, user_id, permission, environment or EVERY_ENVIRONMENT],
        )
    )


def names(conn: Connection) -> list[str]:
    """Every declared role's name, built-in ones first, then by code point."""
    return list(conn.values(f"SELECT name FROM roles ORDER BY built_in DESC, name{BYTEWISE[conn.dialect]}"))


def get(conn: Connection, name: str) -> dict[str, Any] | None:
    """The role ``name`` as ``{"name", "description", "built_in" (bool), "created_at",
    "permissions": [(permission, environment), ...]}`` (environment ``''``: every one), or None."""
    row = conn.one("SELECT name, description, built_in, created_at FROM roles WHERE name = ?", [name])
    if row is None:
        return None
    return {**row, "built_in": bool(row["built_in"]), "permissions": grants(conn, name)}


def grants(conn: Connection, name: str) -> list[tuple[str, str]]:
    """What role ``name`` grants: ``(permission, environment)`` pairs by permission, then
    environment (``''``, every environment, first)."""
    return [
        (r["permission"], r["environment"])
        for r in conn.all(
            "SELECT permission, environment FROM role_permissions WHERE role = ?"
            f" ORDER BY permission{BYTEWISE[conn.dialect]}, environment{BYTEWISE[conn.dialect]}",
            [name],
        )
    ]


def all_roles(conn: Connection) -> list[dict[str, Any]]:
    """Every declared role as :func:`get` returns it, in the order of :func:`names`."""
    rows = conn.all(
        "SELECT name, description, built_in, created_at FROM roles"
        f" ORDER BY built_in DESC, name{BYTEWISE[conn.dialect]}"
    )
    granted: dict[str, list[tuple[str, str]]] = {}
    for r in conn.all(
        "SELECT role, permission, environment FROM role_permissions"
        f" ORDER BY permission{BYTEWISE[conn.dialect]}, environment{BYTEWISE[conn.dialect]}"
    ):
        granted.setdefault(r["role"], []).append((r["permission"], r["environment"]))
    return [{**r, "built_in": bool(r["built_in"]), "permissions": granted.get(r["name"], [])} for r in rows]


def insert(
    conn: Connection,
    name: str,
    description: str | None,
    created_at: str,
    permissions: Iterable[tuple[str, str]],
    *,
    built_in: bool = False,
) -> None:
    """Declare the role ``name`` granting ``permissions`` (``(permission, environment)`` pairs,
    environment ``''`` for every one); call inside a write transaction.

    :raise flagadmin.store.Conflict: a role has that name.
    """
    conn.run(
        "INSERT INTO roles (name, description, built_in, created_at) VALUES (?, ?, ?, ?)",
        [name, description, int(built_in), created_at],
    )
    replace_grants(conn, name, permissions)


def replace_grants(conn: Connection, name: str, permissions: Iterable[tuple[str, str]]) -> None:
    """Make ``permissions`` all that role ``name`` grants; call inside a write transaction."""
    conn.run("DELETE FROM role_permissions WHERE role = ?", [name])
    conn.run_many(
        "INSERT INTO role_permissions (role, permission, environment) VALUES (?, ?, ?)",
        [(name, permission, environment) for permission, environment in sorted(set(permissions))],
    )


def set_description(conn: Connection, name: str, description: str | None) -> None:
    """Set role ``name``'s description; call inside a write transaction."""
    conn.run("UPDATE roles SET description = ? WHERE name = ?", [description, name])


def delete(conn: Connection, name: str) -> None:
    """Remove role ``name`` and what it grants; call inside a write transaction (the caller
    checks :func:`holders` first)."""
    conn.run("DELETE FROM role_permissions WHERE role = ?", [name])
    conn.run("DELETE FROM roles WHERE name = ?", [name])


def holders(conn: Connection, name: str) -> dict[str, list[tuple[str, str]]]:
    """Who holds role ``name``: ``{"users": [(username, project_id)], "groups": [(group name,
    project_id)]}``, each sorted (deactivated users and groups without members included: the
    rows are there)."""
    bytewise = BYTEWISE[conn.dialect]
    users = conn.all(
        "SELECT u.username, m.project_id FROM project_members m JOIN users u ON u.id = m.user_id"
        f" WHERE m.role = ? ORDER BY u.username{bytewise}, m.project_id{bytewise}",
        [name],
    )
    groups = conn.all(
        "SELECT group_name, project_id FROM group_project_roles"
        f" WHERE role = ? ORDER BY group_name{bytewise}, project_id{bytewise}",
        [name],
    )
    return {
        "users": [(r["username"], r["project_id"]) for r in users],
        "groups": [(r["group_name"], r["project_id"]) for r in groups],
    }


def undeclared_member_roles(conn: Connection) -> list[str]:
    """The role names ``project_members`` holds that no role declares (rows a seed document
    wrote), by code point."""
    return list(
        conn.values(
            "SELECT m.role FROM project_members m"
            " WHERE NOT EXISTS (SELECT 1 FROM roles r WHERE r.name = m.role)"
            f" GROUP BY m.role ORDER BY m.role{BYTEWISE[conn.dialect]}"
        )
    )
