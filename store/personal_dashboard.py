"""The personal dashboard (spec 4.2): four queries whatever the size of the data.

Roles are effective ones (issue 9): project roles come from the ``project_roles`` view (direct
and SCIM-group-granted, active users only), and a user is an admin when its own root role or
one of its groups' is Admin.
"""

from __future__ import annotations

from typing import Any

from .directory import DISPLAY_NAME
from .engine import Connection
from .visibility import visible


def flags(conn: Connection, user_id: int) -> list[dict[str, Any]]:
    """Live flags the user created or favorited, each once, newest created first.

    Items: ``{"name": str, "project": str, "type": str}``.
    """
    return conn.all(
        "SELECT name, project_id AS project, type FROM features"
        " WHERE archived_at IS NULL AND name IN ("
        "   SELECT name FROM features WHERE created_by_user_id = :user_id"
        "   UNION SELECT feature_name FROM favorite_features WHERE user_id = :user_id)"
        " ORDER BY created_at DESC, name",
        {"user_id": user_id},
    )


#: Per flag type, the moment before which a live flag of that type is potentially stale:
#: now minus the type's lifetime. Materialized once per query, so each flag costs a text
#: comparison (timestamps are RFC 3339 UTC text, so text order is time order).
_STALE_BEFORE = (
    "stale_before AS MATERIALIZED (SELECT name AS type,"
    " strftime('%Y-%m-%dT%H:%M:%fZ', :now, '-' || lifetime_days || ' days') AS moment"
    " FROM feature_types WHERE lifetime_days IS NOT NULL)"
)
_MY_PROJECTS = "SELECT project_id FROM project_roles WHERE user_id = :user_id"
#: (project, user) of every role in the caller's projects, direct or through a group. Each arm
#: of ``project_roles`` is filtered on its own: SQLite pushes no ``IN (subquery)`` into a
#: UNION view, and the whole view would be read.
_ROLES_IN_MY_PROJECTS = (
    f"SELECT project_id, user_id FROM direct_project_roles WHERE project_id IN ({_MY_PROJECTS})"
    f" UNION ALL SELECT project_id, user_id FROM granted_project_roles WHERE project_id IN ({_MY_PROJECTS})"
)


def projects(conn: Connection, user_id: int, now: str) -> list[dict[str, Any]]:
    """Projects where the user has any role, by name, with their counts and health at ``now``.

    Items: ``{"id", "name", "memberCount", "featureCount", "health"}``. ``memberCount``
    counts distinct users with a role; ``featureCount`` live flags; ``health`` is 100 minus
    the percentage (rounded half up) of live flags that are stale or potentially stale (at
    least their type's lifetime old), 100 for a project without flags. One query, answered
    from indexes (``features_project_health``, ``project_members_user``, and for roles granted
    through groups ``directory_group_members_user``, ``group_project_roles``).
    """
    rows = conn.all(
        f"WITH {_STALE_BEFORE},"
        f" members AS (SELECT project_id, count(DISTINCT user_id) AS n FROM ({_ROLES_IN_MY_PROJECTS})"
        "   GROUP BY project_id),"
        " live AS (SELECT f.project_id, count(*) AS n,"
        "   sum(f.stale OR f.created_at <= s.moment) AS unhealthy"
        "   FROM features f LEFT JOIN stale_before s ON s.type = f.type"
        f"   WHERE f.archived_at IS NULL AND f.project_id IN ({_MY_PROJECTS})"
        "   GROUP BY f.project_id)"
        " SELECT p.id, p.name, coalesce(members.n, 0) AS memberCount, coalesce(live.n, 0) AS featureCount,"
        " coalesce(live.unhealthy, 0) AS unhealthy"
        " FROM projects p JOIN members ON members.project_id = p.id"
        " LEFT JOIN live ON live.project_id = p.id"
        " ORDER BY p.name, p.id",
        {"user_id": user_id, "now": now},
    )
    for row in rows:
        row["health"] = health(row["featureCount"], row.pop("unhealthy"))
    return rows


def next_health_change(conn: Connection, user_id: int, now: str) -> str | None:
    """Return the first moment after ``now`` at which a live flag of the user's projects
    becomes potentially stale (so some ``health`` of :func:`projects` changes), or None.

    Until then, and while the data is unchanged, :func:`projects` gives the same answer.
    """
    return conn.value(
        f"WITH {_STALE_BEFORE}"
        " SELECT min(strftime('%Y-%m-%dT%H:%M:%fZ', f.created_at, '+' || t.lifetime_days || ' days'))"
        " FROM features f JOIN stale_before s ON s.type = f.type"
        " JOIN feature_types t ON t.name = f.type"
        f" WHERE f.archived_at IS NULL AND f.project_id IN ({_MY_PROJECTS})"
        " AND f.stale = 0 AND f.created_at > s.moment",
        {"user_id": user_id, "now": now},
    )


def health(live_flags: int, unhealthy_flags: int) -> int:
    """Return 100 minus the percentage of unhealthy flags, rounded half up; 100 without flags."""
    if live_flags == 0:
        return 100
    return 100 - (200 * unhealthy_flags + live_flags) // (2 * live_flags)


def admins(conn: Connection) -> list[dict[str, Any]]:
    """Active users whose effective root role is Admin (their own, or one of their SCIM
    groups'), by id: ``{"id", "name", "username", "imageUrl", "email"}``; ``name`` is the
    displayed name (:data:`~flagadmin.store.directory.DISPLAY_NAME`)."""
    return conn.all(
        f"SELECT u.id, {DISPLAY_NAME} AS name, u.username, u.image_url AS imageUrl, u.email FROM users u"
        " WHERE coalesce(u.active, 1) = 1 AND (u.root_role = 'Admin'"
        "   OR u.id IN (SELECT user_id FROM group_granted_root_roles WHERE root_role = 'Admin'))"
        " ORDER BY u.id"
    )


def project_owners(conn: Connection, user_id: int, sees_all: bool) -> list[dict[str, Any]]:
    """Owners of the projects the caller sees, each once, by displayed name.

    Items: ``{"ownerType": "user", "name": str, "imageUrl": str|None, "email": str|None}``;
    ``name`` is the displayed name (:data:`~flagadmin.store.directory.DISPLAY_NAME`), else the
    username, else the email. Owners by direct role or through a SCIM group count alike.
    """
    return conn.all(
        f"SELECT 'user' AS ownerType, coalesce({DISPLAY_NAME}, nullif(u.username, ''), u.email) AS name,"
        " u.image_url AS imageUrl, u.email FROM users u"
        " WHERE u.id IN (SELECT user_id FROM project_roles"
        f"   WHERE role = 'Owner' AND {visible('project_id')})"
        " ORDER BY name, u.id",
        {"user_id": user_id, "sees_all": int(sees_all)},
    )
