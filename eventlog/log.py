"""The event log's three reads, as the reference server answers them (spec 2.3, 6).

- :func:`newest`: ``GET /api/admin/events`` (root role Admin): the newest
  :data:`NEWEST` events with the log's total, or with ``project`` that project's newest
  :data:`OF_ONE` (the reference's document says "all events"; its server sends the newest 50
  and the count, as here).
- :func:`of_flag`: ``GET /api/admin/events/{featureName}``: the flag's newest :data:`OF_ONE`
  events among those the caller sees, with their count.
- :func:`search`: ``GET /api/admin/search/events``: any filters of :mod:`.filters`, a page
  (``limit`` 1 to :data:`MAX_LIMIT`, default 50; ``offset``), ``total``; each event with the
  ``label`` and markdown ``summary`` the reference's search adds.

Who sees what (:func:`visibility`): root role Admin (an admin API token acts as Admin) every
event; Editors the events of every project; anyone else those of the projects where she holds
a role (``store.visibility``); the events of no project (a user provisioned, a token made) only
root role Admin, as the reference shows them.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import orjson

from ..refusals import Forbidden
from ..store import Connection, event_log
from ..store.event_log import Conditions, Visibility
from ..store.tokens import Caller
from . import filters as filters_module
from .filters import Filters

#: Events of ``GET /api/admin/events`` without ``project``, and its reference's number.
NEWEST = 100
#: Events of one project or one flag (the reference's server sends its newest 50).
OF_ONE = 50
#: ``limit`` of the search: default and largest (the reference's document).
DEFAULT_LIMIT = 50
MAX_LIMIT = 1000

#: The reference's ``groupType`` of a group of events written together.
GROUP_TYPE = "transaction"


def visibility(conn: Connection, caller: Caller) -> Visibility:
    """Which events ``caller`` sees (the module's docstring)."""
    if caller.root_role == "Admin":
        return event_log.EVERYTHING
    if caller.sees_all_projects:
        return Visibility(all_projects=True)
    return Visibility(projects=event_log.visible_projects(conn, caller.user_id))


def newest(conn: Connection, project: str | None = None) -> dict[str, Any]:
    """``GET /api/admin/events`` for root role Admin: ``{"version": 1, "events": [...],
    "totalEvents": n}``, the newest :data:`NEWEST` events of the log, or the newest
    :data:`OF_ONE` of ``project`` (an unknown project: none)."""
    if project:
        found = event_log.page(conn, Conditions(projects=(project,)), limit=OF_ONE)
    else:
        found = event_log.page(conn, Conditions(), limit=NEWEST)
    return {"version": 1, "events": [event(row) for row in found.rows], "totalEvents": found.total}


def of_flag(conn: Connection, caller: Caller, name: str) -> dict[str, Any]:
    """``GET /api/admin/events/{featureName}``: ``{"version": 1, "toggleName": name,
    "events": [...], "totalEvents": n}``, the newest :data:`OF_ONE` events of flag ``name``
    that ``caller`` sees (none for a flag that never was)."""
    found = event_log.page(conn, Conditions(features=(name,)), visibility(conn, caller), limit=OF_ONE)
    return {
        "version": 1,
        "toggleName": name,
        "events": [event(row) for row in found.rows],
        "totalEvents": found.total,
    }


def search(conn: Connection, caller: Caller, filters: Filters, *, limit: int, offset: int) -> dict[str, Any]:
    """``GET /api/admin/search/events``: ``{"events": [...], "total": n}``, the events that
    match ``filters`` among those ``caller`` sees, newest first, ``limit`` of them from
    ``offset`` (the caller checks both ranges); each event with ``label`` and ``summary``.

    :raise Invalid: a filter is malformed (:func:`.filters.conditions`).
    :raise Forbidden: ``project`` names only projects the caller does not see (the reference
        refuses such a search too; a search that names some she sees keeps those).
    """
    wanted = filters_module.conditions(filters)
    seen = visibility(conn, caller)
    if wanted.projects and seen.limited and not set(wanted.projects) & set(seen.projects):
        _refuse_unseen(wanted.projects)
    found = event_log.page(conn, wanted, seen, limit=limit, offset=offset)
    return {"events": [event(row, described=True) for row in found.rows], "total": found.total}


def _refuse_unseen(projects: tuple[str, ...]) -> None:
    """:raise Forbidden: naming ``projects``, none of which the caller sees."""
    named = ", ".join(orjson.dumps(p).decode() for p in projects[:5]) + (" ..." if len(projects) > 5 else "")
    raise Forbidden(
        f"You see the events of none of the projects the search names ({named}): a caller sees the"
        " events of the projects where she holds a role, and root roles Admin and Editor those of"
        " every project (an operator gives a role with `flagadmin project role PROJECT USERNAME"
        " Member`).",
    )


def event(row: dict[str, Any], *, described: bool = False) -> dict[str, Any]:
    """An ``events`` row (``store.event_log.COLUMNS``) as the reference's ``eventSchema``: the
    fields of spec 2.3, ``tags`` an empty list when none were recorded (as the reference
    sends them), ``groupType`` and ``groupId`` (a decimal string) for the events written since
    schema version 11, and with ``described``, ``label`` and ``summary``. The JSON columns are
    embedded as stored (``orjson.Fragment``), not decoded."""
    answer: dict[str, Any] = {
        "id": row["id"],
        "createdAt": row["created_at"],
        "type": row["type"],
        "createdBy": row["created_by"],
        "createdByUserId": row["created_by_user_id"],
        "environment": row["environment"],
        "project": row["project"],
        "featureName": row["feature_name"],
        "data": _fragment(row["data"]),
        "preData": _fragment(row["pre_data"]),
        "tags": _fragment(row["tags"]) if row["tags"] is not None else [],
    }
    if row["group_id"] is not None:
        answer["groupType"] = GROUP_TYPE
        answer["groupId"] = str(row["group_id"])
    if described:
        answer["label"] = label(row["type"])
        answer["summary"] = summary(row)
    return answer


def _fragment(text: str | bytes | None) -> orjson.Fragment | None:
    return None if text is None else orjson.Fragment(text)


#: Words of an event type said otherwise in a label.
_LABEL_WORDS = {
    "feature": "flag",
    "features": "flags",
    "api": "API",
    "pat": "PAT",
    "scim": "SCIM",
    "cdn": "CDN",
    "db": "database",
    "add": "added",
    "remove": "removed",
    "update": "updated",
}


@functools.lru_cache(maxsize=512)
def label(event_type: str) -> str:
    """A short name of an event type, in words: ``feature-strategy-add`` -> ``Flag strategy
    added``, ``api-token-created`` -> ``API token created``."""
    words = " ".join(_LABEL_WORDS.get(word, word) for word in event_type.split("-"))
    return words[:1].upper() + words[1:]


#: Characters that markdown reads as markup, escaped in the names a summary quotes.
_MARKDOWN = re.compile(r"([\\`*_\[\]<>#|])")


@functools.lru_cache(maxsize=8192)
def _bold(text: str) -> str:
    """``text`` in bold, its markdown markup escaped (names repeat from event to event: kept)."""
    return "**" + _MARKDOWN.sub(r"\\\1", text) + "**"


def summary(row: dict[str, Any]) -> str:
    """One markdown sentence saying who did what to which flag, project and environment:
    ``**alice**: Flag created, flag **checkout** in project **default**.`` Names are quoted with
    markdown's markup characters escaped."""
    where = []
    if row["feature_name"]:
        where.append(f"flag {_bold(row['feature_name'])}")
    if row["project"]:
        where.append(f"in project {_bold(row['project'])}")
    if row["environment"]:
        where.append(f"in environment {_bold(row['environment'])}")
    said = f"{_bold(row['created_by'])}: {label(row['type'])}"
    return f"{said}, {' '.join(where)}." if where else f"{said}."
