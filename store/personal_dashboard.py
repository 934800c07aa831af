"""The personal dashboard (spec 4.2): four queries whatever the size of the data, on either
engine.

Roles are effective ones (issue 9): project roles come from the ``project_roles`` view (direct
and SCIM-group-granted, active users only), and a user is an admin when its own root role or
one of its groups' is Admin.

SQLite and PostgreSQL read the same SQL but for the order of names (by code point on both:
SQLite's BINARY collation, PostgreSQL's "C" whatever the database's locale), kept side by side
per dialect (``_SQL[name][conn.dialect]``). The date arithmetic of "potentially stale" is done
in Python, once per request: the query gets, per flag type, the moment before which a flag of
that type is potentially stale, and compares stored timestamps to it as text (one format, so
text order is time order). Booleans are 0/1 integers compared with ``= 1``, and camelCase
aliases are quoted (PostgreSQL folds unquoted ones to lower case).
"""

from __future__ import annotations

import functools
from datetime import timedelta
from typing import Any

from ..timestamps import format_rfc3339, parse_rfc3339
from .directory import BINARY, DISPLAY_NAME
from .engine import Connection
from .visibility import visible

DIALECTS = ("sqlite", "postgresql")

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


@functools.cache
def _projects_sql(dialect: str, types: int) -> str:
    """4.2's projects query for ``types`` flag types with a lifetime (parameters ``:type<i>``
    and ``:before<i>``: the moment before which a live flag of that type is potentially stale,
    computed by the caller). Per project: members, live flags, unhealthy ones (stale, or at
    least their type's lifetime old), and per type the oldest live flag that is neither yet
    (the next one to become potentially stale). No date arithmetic in SQL: the same text on
    both engines but for the collation of names."""
    unhealthy = " ".join(
        f"WHEN f.type = :type{i} AND f.created_at <= :before{i} THEN 1" for i in range(types)
    )
    nexts = "".join(
        f", min(CASE WHEN f.stale = 0 AND f.type = :type{i} AND f.created_at > :before{i}"
        f" THEN f.created_at END) AS next{i}"
        for i in range(types)
    )
    next_columns = "".join(f", live.next{i}" for i in range(types))
    return (
        "WITH members AS (SELECT project_id, count(DISTINCT user_id) AS n"
        f"   FROM ({_ROLES_IN_MY_PROJECTS}) roles GROUP BY project_id),"
        " live AS (SELECT f.project_id, count(*) AS n,"
        f"   sum(CASE WHEN f.stale = 1 THEN 1 {unhealthy} ELSE 0 END) AS unhealthy{nexts}"
        f"   FROM features f WHERE f.archived_at IS NULL AND f.project_id IN ({_MY_PROJECTS})"
        "   GROUP BY f.project_id)"
        ' SELECT p.id, p.name, coalesce(members.n, 0) AS "memberCount",'
        f' coalesce(live.n, 0) AS "featureCount", coalesce(live.unhealthy, 0) AS unhealthy{next_columns}'
        " FROM projects p JOIN members ON members.project_id = p.id"
        " LEFT JOIN live ON live.project_id = p.id"
        f" ORDER BY p.name{BINARY[dialect]}, p.id{BINARY[dialect]}"
    )


_SQL = {
    "flags": {
        # the two sources of a user's flags, each from its own index, then one order
        # (a UNION's own ORDER BY takes no COLLATE on PostgreSQL: the order is outside)
        dialect: "SELECT name, project, type, created_at FROM ("
        "SELECT name, project_id AS project, type, created_at FROM features"
        " WHERE created_by_user_id = :user_id AND archived_at IS NULL"
        " UNION SELECT f.name, f.project_id, f.type, f.created_at"
        " FROM favorite_features fav JOIN features f ON f.name = fav.feature_name"
        " WHERE fav.user_id = :user_id AND f.archived_at IS NULL) mine"
        f" ORDER BY created_at DESC, name{BINARY[dialect]}"
        for dialect in DIALECTS
    },
    "project_owners": {
        (dialect, sees_all): f"""SELECT 'user' AS "ownerType", {_OWNER_NAME} AS name,"""
        ' u.image_url AS "imageUrl", u.email FROM users u'
        " WHERE u.id IN (SELECT user_id FROM project_roles"
        f"   WHERE role = 'Owner' AND {visible('project_id', sees_all)})"
        f" ORDER BY {_OWNER_NAME}{BINARY[dialect]}, u.id"
        for dialect in DIALECTS
        for sees_all in (False, True)
    },
}


def lifetimes(conn: Connection) -> dict[str, int]:
    """Days after which a live flag of each type is potentially stale (spec 4.2), for the types
    that have a lifetime: ``{"release": 40, "experiment": 40, "operational": 7}``."""
    return {
        row["name"]: row["lifetime_days"]
        for row in conn.all("SELECT name, lifetime_days FROM feature_types WHERE lifetime_days IS NOT NULL")
    }


def flags(conn: Connection, user_id: int) -> list[dict[str, Any]]:
    """Live flags the user created or favorited, each once, newest created first (then by
    name, by code point).

    Items: ``{"name": str, "project": str, "type": str}``.
    """
    rows = conn.all(_SQL["flags"][conn.dialect], {"user_id": user_id})
    for row in rows:
        del row["created_at"]
    return rows


def projects(
    conn: Connection, user_id: int, now: str, lifetime_days: dict[str, int]
) -> tuple[list[dict[str, Any]], str | None]:
    """Projects where the user has any role, by name (by code point), with their counts and
    health at ``now`` (RFC 3339 UTC text); and the first moment after ``now`` at which a live
    flag of these projects becomes potentially stale (so some ``health`` changes), or None.

    Items: ``{"id", "name", "memberCount", "featureCount", "health"}``. ``memberCount``
    counts distinct users with a role; ``featureCount`` live flags; ``health`` is 100 minus
    the percentage (rounded half up) of live flags that are stale or potentially stale (at
    least their type's lifetime old, ``lifetime_days`` by type: :func:`lifetimes`), 100 for a
    project without flags. One query, answered from indexes (``features_project_health``,
    ``project_members_user``, and for roles granted through groups
    ``directory_group_members_user``, ``group_project_roles``). Until the returned moment, and
    while the data is unchanged, the same answer holds.
    """
    types = sorted(lifetime_days)
    moment = parse_rfc3339(now)
    params: dict[str, Any] = {"user_id": user_id}
    for i, name in enumerate(types):
        params[f"type{i}"] = name
        params[f"before{i}"] = format_rfc3339(moment - timedelta(days=lifetime_days[name]))
    rows = conn.all(_projects_sql(conn.dialect, len(types)), params)
    upcoming: list[str] = []
    for row in rows:
        row["health"] = health(row["featureCount"], row.pop("unhealthy"))
        for i, name in enumerate(types):
            oldest = row.pop(f"next{i}")
            if oldest is not None:
                upcoming.append(format_rfc3339(parse_rfc3339(oldest) + timedelta(days=lifetime_days[name])))
    return rows, min(upcoming) if upcoming else None


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
    return conn.all(_SQL["project_owners"][conn.dialect, sees_all], {"user_id": user_id})
