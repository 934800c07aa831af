"""The applications SDKs make, as the admin API shows them (the reference server's
``/api/admin/metrics/applications``, ``/applications/{appName}`` and ``/unknown-flags``).

Answers in the reference's 8.2.0 shapes: the list in ``applicationsSchema`` (each item an
``applicationSchema``: name, strategies, the optional description, url, color and icon, and
usage by project); one application with its instances, seen flags and a link to itself, as
the reference answers it (beyond ``applicationSchema``, which its own answer does not keep
either: docs/client-api.md); unknown flags in ``unknownFlagsResponseSchema``. A caller who
does not see every project sees the usage and the seen flags of its own projects
(:mod:`flagadmin.store.applications`).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from .. import refusals
from ..store import applications as store
from ..timestamps import Clock, format_rfc3339
from .metrics import KEEP_UNKNOWN_FLAGS

#: At most this many unknown flag names in one answer (the reference's bound).
MAX_UNKNOWN_FLAGS = 1000

#: Applications in one page when the query names no limit (the reference's default).
DEFAULT_LIMIT = 1000


def _sees_all(caller: Any) -> bool:
    return bool(caller.sees_all_projects)


def _described(row: dict[str, Any]) -> dict[str, Any]:
    """The fields every shape of an application shares; the optional texts only when set."""
    item: dict[str, Any] = {"appName": row["app_name"]}
    for key in ("description", "url", "color", "icon"):
        if row[key] is not None:
            item[key] = row[key]
    item["strategies"] = row["strategies"]
    return item


def list_applications(
    conn: Any,
    caller: Any,
    *,
    query: str | None = None,
    sort_by: str = "appName",
    sort_order: str = "asc",
    offset: int = 0,
    limit: int = DEFAULT_LIMIT,
) -> dict[str, Any]:
    """``{"applications": [...], "total": n}``: one page of the applications whose name holds
    ``query`` (ASCII letters in any case), ordered by ``sort_by`` (``appName``, ``createdAt``,
    ``updatedAt``) in ``sort_order`` (``asc``, ``desc``); ``total`` counts every match. Each
    item: ``{appName, description?, url?, color?, icon?, strategies, usage: [{project,
    environments}]}``."""
    rows, total = store.list_applications(
        conn, query=query, sort_by=sort_by, descending=sort_order == "desc", offset=offset, limit=limit
    )
    usage = store.usage(
        conn, [row["app_name"] for row in rows], user_id=caller.user_id, sees_all=_sees_all(caller)
    )
    applications = []
    for row in rows:
        item = _described(row)
        by_project: dict[str, list[str]] = {}
        for project, environment in usage[row["app_name"]]:
            by_project.setdefault(project, []).append(environment)
        item["usage"] = [{"project": p, "environments": envs} for p, envs in by_project.items()]
        applications.append(item)
    return {"applications": applications, "total": total}


def get_application(conn: Any, caller: Any, app_name: str, base_uri_path: str = "") -> dict[str, Any]:
    """One application: ``{appName, createdAt, description?, url?, color?, icon?, strategies,
    instances: [{instanceId, sdkVersion, sdkType, clientIp, lastSeen, environment}],
    seenToggles: [{name, project, type, description, stale} or {name, notFound: true}],
    links: {self}}``; instances most recently seen first, flags by name.

    :raise refusals.NotFound: no application of that name.
    """
    row = store.get_application(conn, app_name)
    if row is None:
        raise refusals.NotFound(f"Could not find application with appName {app_name}")
    item = _described(row)
    item = {"appName": item.pop("appName"), "createdAt": row["created_at"], **item}
    item["instances"] = [
        {
            "instanceId": i["instance_id"],
            "sdkVersion": i["sdk_version"],
            "sdkType": i["sdk_type"],
            "clientIp": i["client_ip"],
            "lastSeen": i["last_seen"],
            "environment": i["environment"],
        }
        for i in store.instances(conn, app_name)
    ]
    seen = []
    for flag in store.seen_flags(conn, app_name, user_id=caller.user_id, sees_all=_sees_all(caller)):
        if flag["project"] is None:
            seen.append({"name": flag["name"], "notFound": True})
        else:
            seen.append(flag)
    item["seenToggles"] = seen
    item["links"] = {"self": f"{base_uri_path}/api/admin/metrics/applications/{quote(app_name, safe='')}"}
    return item


def unknown_flags(conn: Any, clock: Clock) -> dict[str, Any]:
    """``{"unknownFlags": [{name, lastSeenAt, reports: [{appName, environments: [{environment,
    seenAt}]}]}]}``: the names reported in the last day that are no flag, at most
    :data:`MAX_UNKNOWN_FLAGS`, by name."""
    since = format_rfc3339(clock.now() - KEEP_UNKNOWN_FLAGS)
    flags: dict[str, dict[str, Any]] = {}
    for row in store.unknown_flags(conn, since, MAX_UNKNOWN_FLAGS):
        flag = flags.setdefault(
            row["name"], {"name": row["name"], "lastSeenAt": row["last_seen_at"], "reports": []}
        )
        flag["lastSeenAt"] = max(flag["lastSeenAt"], row["last_seen_at"])
        reports = flag["reports"]
        if not reports or reports[-1]["appName"] != row["app_name"]:
            reports.append({"appName": row["app_name"], "environments": []})
        reports[-1]["environments"].append({"environment": row["environment"], "seenAt": row["last_seen_at"]})
    return {"unknownFlags": list(flags.values())}
