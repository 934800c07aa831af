"""The personal dashboard (spec 4.2): four queries whatever the size of the data, on either
engine.

Roles are effective ones (SCIM groups included): project roles come from the ``project_roles`` view (direct
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
from .collation import BINARY
from .directory import DISPLAY_NAME
from .engine import Connection
from .visibility import DIALECTS, visible

#: The caller's projects (with a row per role: ``IN`` makes them distinct), as the CTE ``mine``.
_MY_PROJECTS = "SELECT project_id FROM project_roles WHERE user_id = :user_id"
#: (project, user) of every role in the caller's projects (``mine``), direct or through a
#: group. Each arm of ``project_roles`` is filtered on its own: SQLite pushes no
#: ``IN (subquery)`` into a UNION view, and the whole view would be read.
_ROLES_IN_MY_PROJECTS = (
    "SELECT project_id, user_id FROM direct_project_roles WHERE project_id IN (SELECT project_id FROM mine)"
    " UNION ALL SELECT project_id, user_id FROM granted_project_roles"
    " WHERE project_id IN (SELECT project_id FROM mine)"
)

#: An owner's name as 4.2 shows it: displayed name, else username, else email.
_OWNER_NAME = f"coalesce({DISPLAY_NAME}, nullif(u.username, ''), u.email)"


@functools.cache
def _projects_sql(dialect: str, types: int, permanent: int) -> str:
    """4.2's projects query for ``types`` flag types with a lifetime (parameters ``:type<i>``
    and ``:before<i>``: the moment before which a live flag of that type is potentially stale,
    computed by the caller) and ``permanent`` types without one (``:permanent<i>``). Per
    project: members, live flags, unhealthy ones, and per type with a lifetime the oldest
    healthy flag (the next one to become potentially stale). No date arithmetic in SQL: the
    same text on both engines but for the collation of names.

    Unhealthy is counted as live minus healthy: a healthy flag is one not stale and younger
    than its type's lifetime (a type without one: created after ``''``, so any). The healthy
    flags of a (project, type) are one range of ``features_project_health``, so the only pass
    over every live flag is their ``count(*)``; an expression per flag (a ``CASE`` over the
    types) cost more (bench/journal/).
    """
    thresholds = [f"(:type{i}, :before{i})" for i in range(types)]
    thresholds += [f"(:permanent{i}, '')" for i in range(permanent)]
    thresholds = thresholds or ["(NULL, NULL)"]  # no flag type at all: no flag is healthy
    nexts = "".join(
        f", min(CASE WHEN f.type = :type{i} THEN f.created_at END) AS next{i}" for i in range(types)
    )
    next_columns = "".join(f", healthy.next{i}" for i in range(types))
    return (
        f"WITH mine AS ({_MY_PROJECTS}),"
        f" thresholds (type, born_after) AS (VALUES {', '.join(thresholds)}),"
        " members AS (SELECT project_id, count(DISTINCT user_id) AS n"
        f"   FROM ({_ROLES_IN_MY_PROJECTS}) roles GROUP BY project_id),"
        " live AS (SELECT f.project_id, count(*) AS n FROM features f"
        "   WHERE f.archived_at IS NULL AND f.project_id IN (SELECT project_id FROM mine)"
        "   GROUP BY f.project_id),"
        f" healthy AS (SELECT f.project_id, count(*) AS n{nexts}"
        "   FROM thresholds t CROSS JOIN features f"
        "   WHERE f.project_id IN (SELECT project_id FROM mine) AND f.archived_at IS NULL AND f.type = t.type"
        "   AND f.created_at > t.born_after AND f.stale = 0 GROUP BY f.project_id)"
        ' SELECT p.id, p.name, coalesce(members.n, 0) AS "memberCount",'
        ' coalesce(live.n, 0) AS "featureCount",'
        f" coalesce(live.n, 0) - coalesce(healthy.n, 0) AS unhealthy{next_columns}"
        " FROM projects p JOIN members ON members.project_id = p.id"
        " LEFT JOIN live ON live.project_id = p.id"
        " LEFT JOIN healthy ON healthy.project_id = p.id"
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
        f"   WHERE role = 'Owner' AND {visible('project_id', sees_all, dialect)})"
        f" ORDER BY {_OWNER_NAME}{BINARY[dialect]}, u.id"
        for dialect in DIALECTS
        for sees_all in (False, True)
    },
}


def lifetimes(conn: Connection) -> dict[str, int | None]:
    """Days after which a live flag of each type is potentially stale (spec 4.2), None for the
    types that never are: ``{"release": 40, "experiment": 40, "operational": 7,
    "kill-switch": None, "permission": None}``: one statement, read at every call."""
    rows = conn.all("SELECT name, lifetime_days FROM feature_types")
    return {row["name"]: row["lifetime_days"] for row in rows}


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
    conn: Connection, user_id: int, now: str, lifetime_days: dict[str, int | None]
) -> tuple[list[dict[str, Any]], str | None]:
    """Projects where the user has any role, by name (by code point), with their counts and
    health at ``now`` (RFC 3339 UTC text); and the first moment after ``now`` at which a live
    flag of these projects becomes potentially stale (so some ``health`` changes), or None.

    Items: ``{"id", "name", "memberCount", "featureCount", "health"}``. ``memberCount``
    counts distinct users with a role; ``featureCount`` live flags; ``health`` is 100 minus
    the percentage (rounded half up) of live flags that are stale or potentially stale (at
    least their type's lifetime old, ``lifetime_days`` by type, every type: :func:`lifetimes`),
    100 for a project without flags. One query, answered from indexes (``features_project_health``,
    ``project_members_user``, ``users_inactive``, and for roles granted through groups
    ``directory_group_members_user``, ``group_project_roles``). Until the returned moment, and
    while the data is unchanged, the same answer holds.
    """
    types = sorted(name for name, days in lifetime_days.items() if days is not None)
    permanent = sorted(name for name, days in lifetime_days.items() if days is None)
    moment = parse_rfc3339(now)
    params: dict[str, Any] = {"user_id": user_id}
    for i, name in enumerate(types):
        params[f"type{i}"] = name
        params[f"before{i}"] = format_rfc3339(moment - timedelta(days=lifetime_days[name]))
    for i, name in enumerate(permanent):
        params[f"permanent{i}"] = name
    rows = conn.all(_projects_sql(conn.dialect, len(types), len(permanent)), params)
    oldest: list[str | None] = [None] * len(types)  # per type, its oldest healthy flag
    for row in rows:
        row["health"] = health(row["featureCount"], row.pop("unhealthy"))
        for i in range(len(types)):
            found = row.pop(f"next{i}")
            if found is not None and (oldest[i] is None or found < oldest[i]):
                oldest[i] = found  # one stored format: text order is time order
    upcoming = [
        format_rfc3339(parse_rfc3339(found) + timedelta(days=lifetime_days[name]))
        for name, found in zip(types, oldest, strict=True)
        if found is not None
    ]
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
