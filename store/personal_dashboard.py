"""The personal dashboard (spec 4.2): four queries whatever the size of the data, on either
engine.

Roles are effective ones (issue 9): project roles come from the ``project_roles`` view (direct
and SCIM-group-granted, active users only), and a user is an admin when its own root role or
one of its groups' is Admin.

SQLite and PostgreSQL read the same SQL but for two things, kept side by side per dialect
(``_SQL[name][conn.dialect]``): the date arithmetic of "potentially stale" (SQLite's
``strftime``, PostgreSQL's ``timestamptz`` and ``interval``; both give RFC 3339 UTC text with
milliseconds, the stored format) and the order of names (by code point on both: SQLite's BINARY
collation, PostgreSQL's "C" whatever the database's locale). Booleans are 0/1 integers compared
with ``= 1``, and camelCase aliases are quoted (PostgreSQL folds unquoted ones to lower case).
"""

from __future__ import annotations

from typing import Any

from .directory import BINARY, DISPLAY_NAME
from .engine import Connection
from .visibility import visible

DIALECTS = ("sqlite", "postgresql")

#: The stored timestamp format, in each dialect's formatting function.
_RFC3339 = {"sqlite": "'%Y-%m-%dT%H:%M:%fZ'", "postgresql": """'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'"""}


def _plus_days(dialect: str, moment: str, days: str, sign: str) -> str:
    """SQL of the RFC 3339 UTC text of ``moment`` (SQL of RFC 3339 text) ``sign`` (``+`` or
    ``-``) ``days`` (SQL of an integer) days, with milliseconds, as stored."""
    if dialect == "sqlite":
        return f"strftime({_RFC3339['sqlite']}, {moment}, '{sign}' || {days} || ' days')"
    return (
        f"to_char(CAST({moment} AS timestamptz) AT TIME ZONE 'UTC' {sign} {days} * INTERVAL '1 day',"
        f" {_RFC3339['postgresql']})"
    )


#: Per flag type, the moment before which a live flag of that type is potentially stale:
#: now minus the type's lifetime. Materialized once per query, so each flag costs a text
#: comparison (timestamps are RFC 3339 UTC text of one format, so text order is time order).
_STALE_BEFORE = {
    dialect: "stale_before AS MATERIALIZED (SELECT name AS type,"
    f" {_plus_days(dialect, ':now', 'lifetime_days', '-')} AS moment"
    " FROM feature_types WHERE lifetime_days IS NOT NULL)"
    for dialect in DIALECTS
}
_MY_PROJECTS = "SELECT project_id FROM project_roles WHERE user_id = :user_id"
#: (project, user) of every role in the caller's projects, direct or through a group. Each arm
#: of ``project_roles`` is filtered on its own: SQLite pushes no ``IN (subquery)`` into a
#: UNION view, and the whole view would be read.
_ROLES_IN_MY_PROJECTS = (
    f"SELECT project_id, user_id FROM direct_project_roles WHERE project_id IN ({_MY_PROJECTS})"
    f" UNION ALL SELECT project_id, user_id FROM granted_project_roles WHERE project_id IN ({_MY_PROJECTS})"
)

#: An owner's name as 4.2 shows it: displayed name, else username, else email.
_OWNER_NAME = f"coalesce({DISPLAY_NAME}, nullif(u.username, ''), u.email)"

_SQL = {
    "flags": {
        dialect: "SELECT name, project_id AS project, type FROM features"
        " WHERE archived_at IS NULL AND name IN ("
        "   SELECT name FROM features WHERE created_by_user_id = :user_id"
        "   UNION SELECT feature_name FROM favorite_features WHERE user_id = :user_id)"
        f" ORDER BY created_at DESC, name{BINARY[dialect]}"
        for dialect in DIALECTS
    },
    "projects": {
        dialect: f"WITH {_STALE_BEFORE[dialect]},"
        f" members AS (SELECT project_id, count(DISTINCT user_id) AS n FROM ({_ROLES_IN_MY_PROJECTS}) roles"
        "   GROUP BY project_id),"
        " live AS (SELECT f.project_id, count(*) AS n,"
        "   sum(CASE WHEN f.stale = 1 OR f.created_at <= s.moment THEN 1 ELSE 0 END) AS unhealthy"
        "   FROM features f LEFT JOIN stale_before s ON s.type = f.type"
        f"   WHERE f.archived_at IS NULL AND f.project_id IN ({_MY_PROJECTS})"
        "   GROUP BY f.project_id)"
        ' SELECT p.id, p.name, coalesce(members.n, 0) AS "memberCount",'
        ' coalesce(live.n, 0) AS "featureCount", coalesce(live.unhealthy, 0) AS unhealthy'
        " FROM projects p JOIN members ON members.project_id = p.id"
        " LEFT JOIN live ON live.project_id = p.id"
        f" ORDER BY p.name{BINARY[dialect]}, p.id{BINARY[dialect]}"
        for dialect in DIALECTS
    },
    "next_health_change": {
        # the earliest moment (min of text: one format, so text order is time order)
        dialect: f"WITH {_STALE_BEFORE[dialect]}"
        f" SELECT min({_plus_days(dialect, 'f.created_at', 't.lifetime_days', '+')})"
        " FROM features f JOIN stale_before s ON s.type = f.type"
        " JOIN feature_types t ON t.name = f.type"
        f" WHERE f.archived_at IS NULL AND f.project_id IN ({_MY_PROJECTS})"
        " AND f.stale = 0 AND f.created_at > s.moment"
        for dialect in DIALECTS
    },
    "project_owners": {
        dialect: f"""SELECT 'user' AS "ownerType", {_OWNER_NAME} AS name,"""
        ' u.image_url AS "imageUrl", u.email FROM users u'
        " WHERE u.id IN (SELECT user_id FROM project_roles"
        f"   WHERE role = 'Owner' AND {visible('project_id')})"
        f" ORDER BY {_OWNER_NAME}{BINARY[dialect]}, u.id"
        for dialect in DIALECTS
    },
}


def flags(conn: Connection, user_id: int) -> list[dict[str, Any]]:
    """Live flags the user created or favorited, each once, newest created first (then by
    name, by code point).

    Items: ``{"name": str, "project": str, "type": str}``.
    """
    return conn.all(_SQL["flags"][conn.dialect], {"user_id": user_id})


def projects(conn: Connection, user_id: int, now: str) -> list[dict[str, Any]]:
    """Projects where the user has any role, by name (by code point), with their counts and
    health at ``now`` (RFC 3339 UTC text).

    Items: ``{"id", "name", "memberCount", "featureCount", "health"}``. ``memberCount``
    counts distinct users with a role; ``featureCount`` live flags; ``health`` is 100 minus
    the percentage (rounded half up) of live flags that are stale or potentially stale (at
    least their type's lifetime old), 100 for a project without flags. One query, answered
    from indexes (``features_project_health``, ``project_members_user``, and for roles granted
    through groups ``directory_group_members_user``, ``group_project_roles``).
    """
    rows = conn.all(_SQL["projects"][conn.dialect], {"user_id": user_id, "now": now})
    for row in rows:
        row["health"] = health(row["featureCount"], row.pop("unhealthy"))
    return rows


def next_health_change(conn: Connection, user_id: int, now: str) -> str | None:
    """Return the first moment after ``now`` at which a live flag of the user's projects
    becomes potentially stale (so some ``health`` of :func:`projects` changes), as RFC 3339
    UTC text with milliseconds, or None.

    Until then, and while the data is unchanged, :func:`projects` gives the same answer.
    """
    return conn.value(_SQL["next_health_change"][conn.dialect], {"user_id": user_id, "now": now})


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
        f'SELECT u.id, {DISPLAY_NAME} AS name, u.username, u.image_url AS "imageUrl", u.email FROM users u'
        " WHERE coalesce(u.active, 1) = 1 AND (u.root_role = 'Admin'"
        "   OR u.id IN (SELECT user_id FROM group_granted_root_roles WHERE root_role = 'Admin'))"
        " ORDER BY u.id"
    )


def project_owners(conn: Connection, user_id: int, sees_all: bool) -> list[dict[str, Any]]:
    """Owners of the projects the caller sees, each once, by displayed name (by code point).

    Items: ``{"ownerType": "user", "name": str, "imageUrl": str|None, "email": str|None}``;
    ``name`` is the displayed name (:data:`~flagadmin.store.directory.DISPLAY_NAME`), else the
    username, else the email. Owners by direct role or through a SCIM group count alike.
    """
    return conn.all(_SQL["project_owners"][conn.dialect], {"user_id": user_id, "sees_all": int(sees_all)})
