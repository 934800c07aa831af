"""Reading what SDKs reported: applications, their instances, usage and seen flags, and the
unknown flags (the tables "SDK traffic" of ``schema.sql``, written by
:mod:`flagadmin.store.client_metrics`).

A caller who does not see every project (spec 5.3: not an Admin or Editor) sees the usage and
the seen flags of the projects where it holds a role, and usage of every project (``*``).
"""

from __future__ import annotations

from typing import Any

import orjson

from .collation import BINARY, FOLD
from .engine import Connection
from .visibility import visible

#: The orders the list of applications takes (``sortBy``): its name and column.
SORT_COLUMNS = {"appName": "app_name", "createdAt": "created_at", "updatedAt": "updated_at"}

_APPLICATION_COLUMNS = (
    "app_name, created_at, updated_at, created_by, description, url, color, icon, strategies"
)


def _search(conn: Connection) -> str:
    if conn.dialect == "postgresql":
        return f"strpos({FOLD['postgresql'].format('app_name')}, :query) > 0"
    return f"instr({FOLD['sqlite'].format('app_name')}, :query) > 0"


def _decoded(row: dict[str, Any]) -> dict[str, Any]:
    row["strategies"] = orjson.loads(row["strategies"])
    return row


def list_applications(
    conn: Connection,
    *,
    query: str | None,
    sort_by: str,
    descending: bool,
    offset: int,
    limit: int,
) -> tuple[list[dict[str, Any]], int]:
    """One page of applications and how many match in all: rows of ``client_applications``
    (``strategies`` decoded) whose name holds ``query`` (ASCII case folded; None: all), ordered
    by ``sort_by`` (a key of :data:`SORT_COLUMNS`) then by name.

    :raise KeyError: ``sort_by`` is not a key of :data:`SORT_COLUMNS`.
    """
    where = _search(conn) if query else "1 = 1"
    params: dict[str, Any] = {"query": (query or "").lower(), "offset": offset, "limit": limit}
    column = SORT_COLUMNS[sort_by] + (BINARY[conn.dialect] if sort_by == "appName" else "")
    direction = " DESC" if descending else ""
    total = conn.value(f"SELECT count(*) FROM client_applications WHERE {where}", params)
    rows = conn.all(
        f"SELECT {_APPLICATION_COLUMNS} FROM client_applications WHERE {where}"
        f" ORDER BY {column}{direction}, app_name{BINARY[conn.dialect]}{direction}"
        " LIMIT :limit OFFSET :offset",
        params,
    )
    return [_decoded(row) for row in rows], total


def usage(
    conn: Connection, app_names: list[str], *, user_id: int | None, sees_all: bool
) -> dict[str, list[tuple[str, str]]]:
    """``{app name: [(project, environment), ...]}`` of ``app_names``, by project then
    environment (code point order), the projects limited to those the caller sees and ``*``."""
    found: dict[str, list[tuple[str, str]]] = {name: [] for name in app_names}
    if not app_names:
        return found
    binary = BINARY[conn.dialect]
    names = {f"n{i}": name for i, name in enumerate(app_names)}
    marks = ", ".join(f":{key}" for key in names)
    rows = conn.all(
        "SELECT app_name, project, environment FROM client_application_usage"
        f" WHERE app_name IN ({marks}) AND (project = '*' OR {visible('project', sees_all, conn.dialect)})"
        f" ORDER BY app_name{binary}, project{binary}, environment{binary}",
        {**names, "user_id": user_id},
    )
    for row in rows:
        found[row["app_name"]].append((row["project"], row["environment"]))
    return found


def get_application(conn: Connection, app_name: str) -> dict[str, Any] | None:
    """The row of application ``app_name`` (``strategies`` decoded), or None."""
    row = conn.one(f"SELECT {_APPLICATION_COLUMNS} FROM client_applications WHERE app_name = ?", [app_name])
    return None if row is None else _decoded(row)


def instances(conn: Connection, app_name: str) -> list[dict[str, Any]]:
    """The instances of application ``app_name``, most recently seen first: rows ``{instance_id,
    environment, sdk_version, sdk_type, client_ip, last_seen}``."""
    binary = BINARY[conn.dialect]
    return conn.all(
        "SELECT instance_id, environment, sdk_version, sdk_type, client_ip, last_seen FROM client_instances"
        f" WHERE app_name = ? ORDER BY last_seen DESC, instance_id{binary}, environment{binary}",
        [app_name],
    )


def seen_flags(
    conn: Connection, app_name: str, *, user_id: int | None, sees_all: bool
) -> list[dict[str, Any]]:
    """The flags application ``app_name`` has reported in the hourly counts kept, by name:
    rows ``{name, project, type, description, stale}`` for the flags that still exist (of the
    projects the caller sees), ``project`` None for one deleted since."""
    binary = BINARY[conn.dialect]
    rows = conn.all(
        "SELECT m.name, f.project_id AS project, f.type, f.description, f.stale FROM"
        " (SELECT DISTINCT feature_name AS name FROM client_metrics WHERE app_name = :app) m"
        " LEFT JOIN features f ON f.name = m.name"
        f" WHERE f.name IS NULL OR {visible('f.project_id', sees_all, conn.dialect)}"
        f" ORDER BY m.name{binary}",
        {"app": app_name, "user_id": user_id},
    )
    for row in rows:
        if row["stale"] is not None:
            row["stale"] = bool(row["stale"])
    return rows


def unknown_flags(conn: Connection, since: str, limit: int) -> list[dict[str, Any]]:
    """Unknown flag names reported since ``since`` (a stored timestamp), the first ``limit``
    names in code point order: rows ``{name, app_name, environment, last_seen_at}`` ordered by
    name, application, environment."""
    binary = BINARY[conn.dialect]
    return conn.all(
        "SELECT u.name, u.app_name, u.environment, u.last_seen_at FROM unknown_flags u"
        " JOIN (SELECT name FROM unknown_flags WHERE last_seen_at >= :since"
        f" GROUP BY name ORDER BY name{binary} LIMIT :limit) n ON n.name = u.name"
        f" WHERE u.last_seen_at >= :since ORDER BY u.name{binary}, u.app_name{binary}, u.environment{binary}",
        {"since": since, "limit": limit},
    )
