"""The system event log read back (spec 2.3, 6): a page of events and how many match, for
``GET /api/admin/events``, ``/api/admin/events/{featureName}`` and ``/api/admin/search/events``.

Order: newest first, by ``created_at`` then ``id`` (both descending), as the reference server
orders its log. Every filter has an index in that order (schema.sql's "system event log"
indexes), so a filter's page, a date range within it included, is one backward range of its
index. A page is read in two steps: its ids from the index alone (the skipped ``offset``
entries are index entries, no row is read for them), then its rows by id. The broad indexes
(the log's order, type, creator, environment) carry the project, so that the caller's
visibility is checked on the entry.

How many match (``total``), asked with every page:

- from ``event_counts`` (rows per project, type, environment and creator, kept by triggers in
  the transaction of every event; a few hundred rows to add at most): conditions on projects
  alone (none, a ``project`` filter, the caller's visibility), and for a caller who sees every
  event one ``type``, ``environment`` or ``createdBy`` condition alone (:func:`counted`);
- a first page shorter than ``limit`` tells its own;
- otherwise counted on the index of a condition, without reading the rows (SQLite's covering
  index, PostgreSQL's index-only scan): the cost grows with the events that match that
  condition, not with the log (docs/operations.md gives the figures); ``text`` (the free-text
  ``query``) reads every row the other conditions leave.

A page ``offset`` rows deep walks ``offset`` index entries; past the middle of the matches it
walks from the oldest end instead (the total is known first), so the last page costs what the
first does. A caller who sees some projects only is served by walking the log in order and
checking each entry's project, or, when her projects hold few of the log's events, by sorting
their entries of the project index (:func:`_by_project`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from .engine import Connection

#: The columns of a page's rows, in :func:`page`'s answer.
COLUMNS = (
    "id, created_at, type, created_by, created_by_user_id, environment, project, feature_name,"
    " data, pre_data, tags, group_id"
)

#: ``event_counts``' value for the events of no project (its key cannot be NULL).
NO_PROJECT = ""


@dataclass(frozen=True)
class Visibility:
    """Which events a caller sees: ``everything`` (root role Admin, an admin API token), else
    the events of every project but none of no project (``all_projects``: root role Editor),
    else the events of ``projects`` (those where she holds a role: :func:`visible_projects`)."""

    everything: bool = False
    all_projects: bool = False
    projects: tuple[str, ...] = ()

    @property
    def limited(self) -> bool:
        """True when only ``projects`` are seen."""
        return not self.everything and not self.all_projects


def visible_projects(conn: Connection, user_id: int | None) -> tuple[str, ...]:
    """The projects where ``user_id`` holds a role (``project_roles``: direct and through SCIM
    groups, active users only), read once per request so that the log's statements match a
    list (PostgreSQL looks a constant list up in a hash table, a subquery's array element by
    element)."""
    if user_id is None:
        return ()
    return tuple(conn.column("SELECT DISTINCT project_id FROM project_roles WHERE user_id = ?", [user_id]))


#: Root role Admin's view.
EVERYTHING = Visibility(everything=True)


@dataclass(frozen=True)
class Conditions:
    """What a search asks for, each tuple a set of values any of which matches (None: no
    condition; empty: nothing matches): event ids, transaction groups (``group_id``), flag
    names, projects, event types, creators' user ids (``created_by_user_id``), environments;
    ``since`` and ``before``
    bound ``created_at`` (``since <= created_at < before``, stored RFC 3339 text or a prefix of
    it such as ``2026-01-31``); ``text``: ASCII-folded text that ``data``, ``pre_data`` or
    ``tags`` (their JSON text, folded the same way) must contain."""

    ids: tuple[int, ...] | None = None
    groups: tuple[int, ...] | None = None
    features: tuple[str, ...] | None = None
    projects: tuple[str, ...] | None = None
    types: tuple[str, ...] | None = None
    creators: tuple[int, ...] | None = None
    environments: tuple[str, ...] | None = None
    since: str | None = None
    before: str | None = None
    text: str | None = None

    @property
    def projects_only(self) -> bool:
        """True when nothing but ``projects`` is asked (the totals ``event_counts`` answers)."""
        return (
            self.ids is None
            and self.groups is None
            and self.features is None
            and self.types is None
            and self.creators is None
            and self.environments is None
            and self.since is None
            and self.before is None
            and not self.text
        )


@dataclass(frozen=True)
class Page:
    """``rows`` (the ``events`` rows of the page, :data:`COLUMNS`, newest first) and ``total``
    (how many events match, whatever the page)."""

    rows: list[dict[str, Any]]
    total: int


#: Per dialect: ``column`` matches one of a list of text (``:name`` a JSON array of strings on
#: SQLite, an array on PostgreSQL) or integer values.
_ANY_TEXT = {
    "sqlite": "{column} IN (SELECT value FROM json_each(:{name}))",
    "postgresql": "{column} = ANY (CAST(:{name} AS TEXT[]))",
}
_ANY_INTEGER = {
    "sqlite": "{column} IN (SELECT value FROM json_each(:{name}))",
    "postgresql": "{column} = ANY (CAST(:{name} AS BIGINT[]))",
}
#: ``instr`` and ``strpos`` find the folded text as it is (no LIKE pattern: ``%`` and ``_``
#: mean themselves); ASCII folding on both engines (docs/architecture.md, per-dialect rules).
_CONTAINS = {
    "sqlite": "instr(lower({column}), :text) > 0",
    "postgresql": 'strpos(lower({column} COLLATE "C"), :text) > 0',
}


def _list(dialect: str, values: tuple) -> Any:
    """A list parameter of :data:`_ANY_TEXT` or :data:`_ANY_INTEGER`."""
    return list(values) if dialect == "postgresql" else orjson.dumps(list(values)).decode()


def _where(
    dialect: str,
    conditions: Conditions,
    visibility: Visibility,
    params: dict[str, Any],
    *,
    by_project: bool = True,
) -> list[str]:
    """The SQL conditions of a search (ANDed), filling ``params``. ``by_project`` False: on
    SQLite, a list of projects and the caller's visibility are checked on each row the other
    conditions (or the log's order) find, not read from the project index (``+project``: SQLite
    has no statistics to choose by, and that index read in order of project would have every
    visible event sorted)."""
    where: list[str] = []
    loose = "+project" if dialect == "sqlite" and not by_project else "project"

    def any_of(column: str, name: str, values: tuple, integers: bool = False) -> None:
        if not values:
            where.append("1 = 0")
            return
        if len(values) == 1:
            where.append(f"{column} = :{name}")
            params[name] = values[0]
            return
        where.append((_ANY_INTEGER if integers else _ANY_TEXT)[dialect].format(column=column, name=name))
        params[name] = _list(dialect, values)

    if conditions.ids is not None:
        any_of("id", "ids", conditions.ids, integers=True)
    if conditions.groups is not None:
        any_of("group_id", "groups", conditions.groups, integers=True)
    if conditions.features is not None:
        any_of("feature_name", "features", conditions.features)
    if conditions.projects is not None:
        any_of("project" if len(conditions.projects) == 1 else loose, "projects", conditions.projects)
    if conditions.types is not None:
        any_of("type", "types", conditions.types)
    if conditions.creators is not None:
        any_of("created_by_user_id", "creators", conditions.creators, integers=True)
    if conditions.environments is not None:
        any_of("environment", "environments", conditions.environments)
    if conditions.since is not None:
        where.append("created_at >= :since")
        params["since"] = conditions.since
    if conditions.before is not None:
        where.append("created_at < :before")
        params["before"] = conditions.before
    if conditions.text:
        params["text"] = conditions.text
        where.append(
            "(" + " OR ".join(_CONTAINS[dialect].format(column=c) for c in ("data", "pre_data", "tags")) + ")"
        )
    if visibility.all_projects and not visibility.everything:
        where.append(f"{loose} IS NOT NULL")
    elif visibility.limited:
        where.append(_ANY_TEXT[dialect].format(column=loose, name="visible"))
        params["visible"] = _list(dialect, visibility.projects)
    return where


def counted(conditions: Conditions, visibility: Visibility) -> str | None:
    """The dimension of ``event_counts`` that tells how many events match (``project`` for
    conditions on projects alone, whatever the caller sees; ``type``, ``environment`` or
    ``creator`` for that one condition alone when the caller sees every event), or None when
    they must be counted in the log."""
    given = {
        name
        for name in (
            "ids",
            "groups",
            "features",
            "projects",
            "types",
            "creators",
            "environments",
            "since",
            "before",
        )
        if getattr(conditions, name) is not None
    }
    if conditions.text:
        given.add("text")
    if given <= {"projects"}:
        return "project"
    if len(given) == 1 and visibility.everything:
        return {"types": "type", "environments": "environment", "creators": "creator"}.get(given.pop())
    return None


def _counted_total(conn: Connection, dimension: str, conditions: Conditions, visibility: Visibility) -> int:
    """How many events match, summed from ``event_counts`` rows of ``dimension``
    (:func:`counted`)."""
    params: dict[str, Any] = {"dimension": dimension, "none": NO_PROJECT}
    where = ["dimension = :dimension"]
    values = {
        "project": conditions.projects,
        "type": conditions.types,
        "environment": conditions.environments,
        "creator": None if conditions.creators is None else tuple(str(n) for n in conditions.creators),
    }[dimension]
    if values is not None:
        if not values:
            return 0
        where.append(_ANY_TEXT[conn.dialect].format(column="value", name="values"))
        params["values"] = _list(conn.dialect, values)
    if visibility.all_projects and not visibility.everything:
        where.append("value <> :none")
    elif visibility.limited:
        where.append(_ANY_TEXT[conn.dialect].format(column="value", name="visible"))
        params["visible"] = _list(conn.dialect, visibility.projects)
    return int(
        conn.value("SELECT coalesce(sum(events), 0) FROM event_counts WHERE " + " AND ".join(where), params)
    )


def count(conn: Connection, conditions: Conditions, visibility: Visibility = EVERYTHING) -> int:
    """How many events match ``conditions`` among those ``visibility`` shows (the module's
    docstring says what it costs)."""
    if visibility.limited and not visibility.projects:
        return 0
    dimension = counted(conditions, visibility)
    if dimension is not None:
        return _counted_total(conn, dimension, conditions, visibility)
    params: dict[str, Any] = {}
    where = _where(conn.dialect, conditions, visibility, params)
    return int(conn.value("SELECT count(*) FROM events WHERE " + " AND ".join(where), params))


def page(
    conn: Connection,
    conditions: Conditions,
    visibility: Visibility = EVERYTHING,
    *,
    limit: int,
    offset: int = 0,
) -> Page:
    """Up to ``limit`` events matching ``conditions`` among those ``visibility`` shows, newest
    first (``created_at``, then ``id``), skipping ``offset``, with how many match in all.

    ``limit`` >= 1 and ``offset`` >= 0 (the caller checks them). The rows are ``events`` rows
    of :data:`COLUMNS`, JSON columns as stored text.
    """
    if visibility.limited and not visibility.projects:
        return Page([], 0)
    # The total first when it is cheap (event_counts) or due anyway (a page past the first:
    # it tells the direction to walk); a first page may tell its own.
    total = count(conn, conditions, visibility) if counted(conditions, visibility) or offset else None
    if total is not None and offset >= total:
        return Page([], total)
    newest_first = total is None or offset + limit <= total - offset
    if newest_first:
        skip, order = offset, "DESC"
    else:
        # past the middle: the same rows, walked from the oldest end
        skip, order = max(total - offset - limit, 0), "ASC"
        limit = total - offset - skip
    params: dict[str, Any] = {"limit": limit, "offset": skip}
    by_project = (
        conn.dialect == "sqlite"
        and conditions.projects_only
        and _by_project(conn, conditions, visibility, total, skip + limit)
    )
    where = _where(conn.dialect, conditions, visibility, params, by_project=by_project)
    rows = conn.all(_page_sql(where, order), params)
    if not newest_first:
        rows.reverse()
    if total is None:
        total = len(rows) if len(rows) < limit else count(conn, conditions, visibility)
    return Page(rows, total)


#: About how many index entries walked in the log's order cost what one entry read from the
#: project index and sorted costs (the walk checks the project on the entry itself: the indexes
#: end in project; the sort keeps ``offset + limit`` entries). Measured on SQLite with a Viewer
#: of 200 of 1,000 projects, a million events: 0.7 against 1.3 ms at offset 0, 26 against 290
#: ms at 10,000, 854 against 2,967 ms at 80,000 (on a loaded machine).
SORT_COST = 8


def _by_project(
    conn: Connection, conditions: Conditions, visibility: Visibility, total: int, rows: int
) -> bool:
    """Whether a page of conditions on projects alone is read from the project index (every
    matching entry sorted by date) rather than by walking the log in order and checking each
    event's project: the walk reads about ``rows`` times the log's size over ``total`` events,
    the index ``total`` entries, each :data:`SORT_COST` times dearer. One project, or
    everything, is one range in order already. (SQLite only: PostgreSQL's planner chooses by
    its statistics.)"""
    several = conditions.projects is not None and len(conditions.projects) > 1
    if not (several or visibility.limited or (visibility.all_projects and not visibility.everything)):
        return True
    if conditions.projects is not None and len(conditions.projects) == 1:
        return True
    everything = _counted_total(conn, "project", Conditions(), EVERYTHING)
    return rows * everything > SORT_COST * total * total


def _page_sql(where: list[str], order: str) -> str:
    """A page's statement: the ids first, from the indexes alone (skipping ``offset`` reads no
    row), then their rows."""
    condition = (" WHERE " + " AND ".join(where)) if where else ""
    ordering = f"ORDER BY created_at {order}, id {order}"
    return (
        f"SELECT {COLUMNS} FROM events WHERE id IN"
        f" (SELECT id FROM events{condition} {ordering} LIMIT :limit OFFSET :offset) {ordering}"
    )
