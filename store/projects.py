"""Projects and the roles users hold in them (changed from the command line)."""

from __future__ import annotations

from typing import Any

from .engine import Connection
from .features import BYTEWISE


def get(conn: Connection, project_id: str) -> dict[str, Any] | None:
    """The project as ``{"id", "name", "description"}``, or None."""
    return conn.one("SELECT id, name, description FROM projects WHERE id = ?", [project_id])


def count(conn: Connection) -> int:
    """How many projects the install holds (the ``projects`` resource limit counts these)."""
    return conn.value("SELECT count(*) FROM projects") or 0


def insert(conn: Connection, project_id: str, name: str, description: str | None) -> None:
    """Add a project; call inside a write transaction.

    :raise flagadmin.store.Conflict: a project has that id.
    """
    conn.run("INSERT INTO projects (id, name, description) VALUES (?, ?, ?)", [project_id, name, description])


def update(conn: Connection, project_id: str, name: str, description: str | None) -> None:
    """Set the project's name and description; call inside a write transaction."""
    conn.run("UPDATE projects SET name = ?, description = ? WHERE id = ?", [name, description, project_id])


def flag_counts(conn: Connection, project_id: str) -> dict[str, int]:
    """How many flags the project holds: ``{"live": int, "archived": int}``."""
    row = conn.one(
        "SELECT count(*) - count(archived_at) AS live, count(archived_at) AS archived"
        " FROM features WHERE project_id = ?",
        [project_id],
    )
    return {"live": row["live"] or 0, "archived": row["archived"] or 0}


def delete(conn: Connection, project_id: str) -> None:
    """Remove a project without flags, its members' roles, the roles groups were mapped to in
    it (so that a later project of the same id starts with none) and its own segments (as the
    reference server's foreign key cascades; with its flags gone no strategy uses them); call
    inside a write transaction (the caller checks :func:`flag_counts` first)."""
    conn.run("DELETE FROM segments WHERE project_id = ?", [project_id])
    conn.run("DELETE FROM project_members WHERE project_id = ?", [project_id])
    conn.run("DELETE FROM group_project_roles WHERE project_id = ?", [project_id])
    conn.run("DELETE FROM projects WHERE id = ?", [project_id])


def member_roles(conn: Connection, project_id: str, user_id: int) -> list[str]:
    """The roles ``user_id`` holds directly in the project, sorted."""
    return list(
        conn.values(
            "SELECT role FROM project_members WHERE project_id = ? AND user_id = ?"
            f" ORDER BY role{BYTEWISE[conn.dialect]}",
            [project_id, user_id],
        )
    )


def set_role(conn: Connection, project_id: str, user_id: int, role: str) -> None:
    """Make ``role`` the only role of ``user_id`` in the project; call inside a write
    transaction."""
    conn.run(
        "DELETE FROM project_members WHERE project_id = ? AND user_id = ? AND role <> ?",
        [project_id, user_id, role],
    )
    conn.run(
        "INSERT INTO project_members (project_id, user_id, role) VALUES (?, ?, ?)"
        " ON CONFLICT (project_id, user_id, role) DO NOTHING",
        [project_id, user_id, role],
    )


def remove_role(conn: Connection, project_id: str, user_id: int, role: str) -> bool:
    """Take ``role`` in the project from ``user_id``; True when she held it. Call inside a
    write transaction."""
    removed = conn.run(
        "DELETE FROM project_members WHERE project_id = ? AND user_id = ? AND role = ?",
        [project_id, user_id, role],
    )
    return removed > 0


def find_user(conn: Connection, username: str) -> dict[str, Any] | None:
    """The user named ``username`` as ``{"id", "username", "email"}``, or None."""
    return conn.one("SELECT id, username, email FROM users WHERE username = ?", [username])
