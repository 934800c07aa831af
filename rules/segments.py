"""Segments: named lists of constraints that strategies share, global or of one project, on the
reference server's ``/api/admin/segments`` (Unleash 8.2.0's ``upsertSegmentSchema``,
``adminSegmentSchema``, ``segmentsSchema``, ``segmentStrategiesSchema``).

Rules, as the reference's:

- a name is 1 to 100 characters and unique among segments (409 when taken);
- ``project``: the segment's project (only strategies of that project's flags may use it), or
  none (any flag may); a PUT without it makes the segment global; a project segment used by
  strategies of other projects cannot be moved there (400 naming them);
- ``constraints``: checked and stored by ``rules.constraints.normalise`` (every operator's
  rules, the ``constraints`` and ``constraintValues`` limits); their values count against the
  ``segmentValues`` limit, and the segments of the install against ``segments``;
- a segment a strategy uses cannot be deleted (409 naming the flags that use it);
- a strategy uses at most ``strategySegments`` segments (:func:`check_ids`).

Who may change one: a global segment needs CREATE_SEGMENT, UPDATE_SEGMENT or DELETE_SEGMENT,
which root roles Admin and Editor hold (an admin token acts as Admin); a project segment also
UPDATE_PROJECT_SEGMENT in its project. Anyone sees the global segments and those of the
projects she sees. Each change records ``segment-created``, ``-updated`` or ``-deleted``
(``data``/``preData``: the segment) in its transaction (spec 2.3, 6).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import orjson

from .. import events
from ..events import Actor
from ..flags import access
from ..flags import limits as resource_limits
from ..flags.changes import LOCK
from ..permissions.names import CREATE_SEGMENT, DELETE_SEGMENT, UPDATE_PROJECT_SEGMENT, UPDATE_SEGMENT
from ..records import json_kind
from ..refusals import Conflict, Forbidden, Invalid, NotFound
from ..store import Connection
from ..store import projects as store_projects
from ..store import segments as store_segments
from ..store.tokens import Caller
from ..timestamps import Clock
from . import constraints as rule_constraints

#: A segment's name and description are at most this long.
NAME_MAX_LENGTH = 100
DESCRIPTION_MAX_LENGTH = 1000

#: The largest id a path may name (a 64-bit integer).
MAX_ID = 2**63 - 1
_DECIMAL = re.compile(r"[0-9]{1,19}")


def _refuse(field: str, problem: str) -> None:
    raise Invalid(f"{field}: {problem}", details=[f"{field}: {problem}"])


def segment_id(text: str | int) -> int:
    """The segment id that path text ``text`` names (the route's digits, as text or int).

    :raise NotFound: it names none (not a decimal integer from 1 to 2^63-1)."""
    if isinstance(text, int) and 0 < text <= MAX_ID:
        return text
    if isinstance(text, str) and _DECIMAL.fullmatch(text) and 0 < int(text) <= MAX_ID:
        return int(text)
    raise NotFound(f"There is no segment {str(text)[:100]}: a segment id is a decimal integer from 1.")


def wire(row: Mapping[str, Any], *, use: bool = True) -> dict[str, Any]:
    """A segment (``store.segments``' row) as the reference's ``adminSegmentSchema``: ``{id,
    name, description, project?, constraints, createdBy, createdAt[, usedInFeatures,
    usedInProjects]}`` (``project`` left out for a global segment, as the reference does;
    ``use``: with the counts of live flags and projects whose strategies use it)."""
    shape: dict[str, Any] = {"id": row["id"], "name": row["name"], "description": row["description"]}
    if row["project_id"] is not None:
        shape["project"] = row["project_id"]
    shape["constraints"] = orjson.loads(row["constraints"])
    shape["createdBy"] = row["created_by"]
    shape["createdAt"] = row["created_at"]
    if use:
        shape["usedInFeatures"] = row["used_in_features"] or 0
        shape["usedInProjects"] = row["used_in_projects"] or 0
    return shape


def _sees(conn: Connection, caller: Caller, row: Mapping[str, Any]) -> bool:
    return row["project_id"] is None or access.sees_project(conn, caller, row["project_id"])


def _found(conn: Connection, caller: Caller, segment: int) -> dict[str, Any]:
    """The segment ``segment`` when the caller may see it.

    :raise NotFound: there is none, or it is of a project the caller does not see."""
    row = store_segments.get(conn, segment)
    if row is None or not _sees(conn, caller, row):
        raise NotFound(f"There is no segment {segment}: GET /api/admin/segments lists them.")
    return row


def _require(conn: Connection, caller: Caller, permission: str, project_id: str | None) -> None:
    """Check that ``caller`` may change a segment of ``project_id`` (None: a global one):
    ``permission`` (a root permission of Admins and Editors), or UPDATE_PROJECT_SEGMENT in the
    segment's project.

    :raise Forbidden: she may not; the message names the permission."""
    if caller.sees_all_projects:
        return
    if project_id is not None:
        access.require(conn, caller, project_id, UPDATE_PROJECT_SEGMENT)
        return
    raise Forbidden(
        "You don't have the required permissions to perform this operation. To perform this "
        f'action, you need the "{permission}" permission: root role Admin or Editor (a global segment '
        "is for every project; a project segment needs UPDATE_PROJECT_SEGMENT in its project).",
        permission=permission,
    )


def list_segments(conn: Connection, caller: Caller) -> dict[str, Any]:
    """``segmentsSchema``: the global segments and those of the projects the caller sees, by
    name, each with its use."""
    rows = store_segments.all_segments(conn)
    return {"segments": [wire(row) for row in rows if _sees(conn, caller, row)]}


def get(conn: Connection, caller: Caller, text_id: str | int) -> dict[str, Any]:
    """One segment (``adminSegmentSchema``) by the id of its path.

    :raise NotFound: none the caller sees has that id."""
    return wire(_found(conn, caller, segment_id(text_id)))


def of_strategy(conn: Connection, caller: Caller, strategy_id: str) -> dict[str, Any]:
    """``segmentsSchema``: the segments strategy ``strategy_id`` uses that the caller sees, by
    id (none for an unknown strategy, as the reference answers)."""
    rows = store_segments.segments_of_strategy(conn, strategy_id[:100])
    return {"segments": [wire(row) for row in rows if _sees(conn, caller, row)]}


def strategies(conn: Connection, caller: Caller, text_id: str | int) -> dict[str, Any]:
    """``segmentStrategiesSchema``: the strategies that use the segment, of the projects the
    caller sees (``changeRequestStrategies`` always empty: flagadmin has no change requests).

    :raise NotFound: no segment the caller sees has that id."""
    row = _found(conn, caller, segment_id(text_id))
    using = [
        {
            "id": strategy["id"],
            "featureName": strategy["feature_name"],
            "projectId": strategy["project_id"],
            "environment": strategy["environment"],
            "strategyName": strategy["strategy_name"],
        }
        for strategy in store_segments.strategies_using(conn, row["id"])
        if access.sees_project(conn, caller, strategy["project_id"])
    ]
    return {"strategies": using, "changeRequestStrategies": []}


def _checked(
    conn: Connection,
    body: Mapping[str, Any],
    limits: Mapping[str, int] | None,
    existing: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A create's or update's body (``upsertSegmentSchema``, loaded) checked:
    ``{name, description, project_id, constraints (JSON text)}``.

    :raise Invalid: a field breaks a rule (an unknown project, a constraint, the
        ``segmentValues`` limit); the message names the field."""
    name = body["name"]
    if not isinstance(name, str) or not name.strip() or len(name) > NAME_MAX_LENGTH:
        _refuse("name", f"must be 1 to {NAME_MAX_LENGTH} characters, not only spaces; got {json_kind(name)}")
    project_id = body.get("project") or None
    if project_id is not None and store_projects.get(conn, project_id) is None:
        _refuse("project", f'there is no project "{project_id[:100]}": leave it out for a global segment')
    stored = rule_constraints.normalise(body["constraints"], limits, existing=existing)
    values = sum(len(constraint.get("values") or []) for constraint in stored)
    allowed = resource_limits.limit_of("segmentValues", limits)
    if values > allowed:
        _refuse(
            "constraints",
            f"Segments may not have more than {allowed} values (the segmentValues resource limit); "
            f"these constraints hold {values}",
        )
    return {
        "name": name,
        "description": body.get("description") or None,
        "project_id": project_id,
        "constraints": orjson.dumps(stored).decode(),
    }


def _refuse_taken(conn: Connection, name: str, other_than: int | None = None) -> None:
    if store_segments.name_taken(conn, name, other_than=other_than):
        raise Conflict(f'A segment is called "{name}" already: segment names are unique. Choose another.')


def validate_name(conn: Connection, name: str) -> None:
    """Check that no segment is called ``name`` (``POST /api/admin/segments/validate``).

    :raise Conflict: one is."""
    _refuse_taken(conn, name)


def create(
    conn: Connection,
    caller: Caller,
    body: Mapping[str, Any],
    clock: Clock,
    limits: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """Create a segment from ``body`` (``upsertSegmentSchema``, loaded); its
    ``adminSegmentSchema``. Records ``segment-created``.

    :raise Forbidden: the caller may not create it (see the module's docstring).
    :raise Invalid: a field breaks a rule, or the segments reach the ``segments`` limit.
    :raise Conflict: the name is taken.
    """
    with conn.write(LOCK):
        checked = _checked(conn, body, limits)
        _require(conn, caller, CREATE_SEGMENT, checked["project_id"])
        resource_limits.refuse_past("segments", store_segments.count(conn), limits, "segment")
        _refuse_taken(conn, checked["name"])
        actor = Actor.of_caller(caller)
        new_id = store_segments.insert(conn, **checked, created_at=clock.now_rfc3339(), created_by=actor.name)
        row = store_segments.get(conn, new_id)
        events.record(
            conn,
            "segment-created",
            actor,
            project=row["project_id"],
            data=wire(row, use=False),
            clock=clock,
        )
    return wire(row)


def update(
    conn: Connection,
    caller: Caller,
    text_id: str | int,
    body: Mapping[str, Any],
    clock: Clock,
    limits: Mapping[str, int] | None = None,
) -> None:
    """Replace the segment's name, description, project and constraints with ``body``
    (``upsertSegmentSchema``, loaded; no ``project``: global). Records ``segment-updated``
    when something changed.

    :raise NotFound: no segment the caller sees has that id.
    :raise Forbidden: the caller may not change it, or move it to that project.
    :raise Invalid: a field breaks a rule, or strategies of another project use it and it
        would become a segment of ``project``.
    :raise Conflict: the new name is taken.
    """
    segment = segment_id(text_id)
    with conn.write(LOCK):
        before = _found(conn, caller, segment)
        _require(conn, caller, UPDATE_SEGMENT, before["project_id"])
        checked = _checked(conn, body, limits, orjson.loads(before["constraints"]))
        if checked["project_id"] != before["project_id"]:
            _require(conn, caller, UPDATE_SEGMENT, checked["project_id"])
        if checked["name"] != before["name"]:
            _refuse_taken(conn, checked["name"], other_than=segment)
        if checked["project_id"] is not None:
            elsewhere = sorted(
                {
                    strategy["project_id"]
                    for strategy in store_segments.strategies_using(conn, segment)
                    if strategy["project_id"] != checked["project_id"]
                }
            )
            if elsewhere:
                _refuse(
                    "project",
                    "Invalid project. Segment is being used by strategies in other projects: "
                    + ", ".join(elsewhere),
                )
        store_segments.update(conn, segment, **checked)
        after = store_segments.get(conn, segment)
        events.record(
            conn,
            "segment-updated",
            Actor.of_caller(caller),
            project=after["project_id"],
            data=wire(after, use=False),
            pre_data=wire(before, use=False),
            clock=clock,
        )


def delete(conn: Connection, caller: Caller, text_id: str | int, clock: Clock) -> None:
    """Delete the segment. Records ``segment-deleted`` (``preData``: the segment).

    :raise NotFound: no segment the caller sees has that id.
    :raise Forbidden: the caller may not delete it.
    :raise Conflict: strategies use it; the message names their flags and environments.
    """
    segment = segment_id(text_id)
    with conn.write(LOCK):
        before = _found(conn, caller, segment)
        _require(conn, caller, DELETE_SEGMENT, before["project_id"])
        using = store_segments.strategies_using(conn, segment)
        if using:
            where = sorted({f'"{s["feature_name"]}" ({s["environment"]})' for s in using})
            shown = ", ".join(where[:10]) + (f" and {len(where) - 10} more" if len(where) > 10 else "")
            raise Conflict(
                f'Segment "{before["name"]}" is in use by the strategies of {shown}: remove it from '
                f"those strategies first (GET /api/admin/segments/{segment}/strategies lists them)."
            )
        store_segments.delete(conn, segment)
        events.record(
            conn,
            "segment-deleted",
            Actor.of_caller(caller),
            project=before["project_id"],
            pre_data=wire(before, use=False),
            clock=clock,
        )


def check_ids(
    conn: Connection,
    ids: Any,
    project_id: str,
    limits: Mapping[str, int] | None = None,
    *,
    field: str = "segments",
) -> list[int]:
    """The segment ids a strategy of a flag of ``project_id`` is to use (a strategy body's
    ``segments``, as sent: a JSON array of ids, or None for none), checked; ascending, each
    once. Call inside the strategy's write transaction, before anything is written, then store
    them with :func:`flagadmin.store.segments.set_strategy_segments` once the strategy's row
    exists. ``limits``: the instance's resource limits (None: ``FLAGADMIN_RESOURCE_LIMITS``).

    :raise Invalid: 400 naming ``field`` (``segments.1: there is no segment 42``): not an
        array of positive integers, an id given twice, more than ``strategySegments`` ids, an
        id of no segment, or a segment of another project.
    """
    if ids is None:
        return []
    if not isinstance(ids, list):
        _refuse(field, f"must be an array of segment ids; got {json_kind(ids)}")
    allowed = resource_limits.limit_of("strategySegments", limits)
    if len(ids) > allowed:
        _refuse(
            field,
            f"Strategies may not have more than {allowed} segments (the strategySegments resource "
            f"limit); got {len(ids)}",
        )
    seen: set[int] = set()
    for i, value in enumerate(ids):
        if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_ID:
            _refuse(f"{field}.{i}", f"must be a segment id, a positive whole number; got {json_kind(value)}")
        if value in seen:
            _refuse(f"{field}.{i}", f"segment {value} is given twice")
        seen.add(value)
    projects = store_segments.projects_of(conn, seen)
    for i, value in enumerate(ids):
        if value not in projects:
            _refuse(f"{field}.{i}", f"there is no segment {value}: GET /api/admin/segments lists them")
        if projects[value] is not None and projects[value] != project_id:
            _refuse(
                f"{field}.{i}",
                f'segment {value} belongs to project "{projects[value]}": only the strategies of that '
                f'project\'s flags may use it, and this flag is of project "{project_id}"',
            )
    return sorted(seen)
