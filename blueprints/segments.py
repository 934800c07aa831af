"""Segments on the reference server's paths and bodies (Unleash 8.2.0): ``GET`` and ``POST
/api/admin/segments``, ``GET``, ``PUT`` and ``DELETE /api/admin/segments/{id}``, the strategies
that use one (``GET /api/admin/segments/{id}/strategies``), the segments of a strategy (``GET
/api/admin/segments/strategies/{strategyId}``) and the name check (``POST
/api/admin/segments/validate``). Bodies: ``upsertSegmentSchema``, ``nameSchema``; answers:
``adminSegmentSchema``, ``segmentsSchema``, ``segmentStrategiesSchema``. The rules and events
are :mod:`flagadmin.rules.segments`'.
"""

from __future__ import annotations

from flask import Blueprint
from marshmallow import Schema, fields, validate

from ..permissions.names import CREATE_SEGMENT, DELETE_SEGMENT, UPDATE_SEGMENT
from ..records import Timestamp
from ..rules import segments
from ..web.auth import Permission, changes_nothing
from ..web.operations import PathParameter, operation
from ..web.state import state

bp = Blueprint("segments", __name__, url_prefix="/api/admin")

#: The section of the spec these operations belong to: other operations of the service (1),
#: here the rollout rules the reference server keeps on these paths.
SECTION = "1 (rollout rules, on the reference server's paths)"

SEGMENT_ID = {
    "id": PathParameter("Id of the segment, a decimal integer.", {"type": "string", "pattern": "^[0-9]+$"})
}

CONSTRAINTS_DESCRIPTION = (
    "The constraints that make up the segment (the reference's constraintSchema: contextName, "
    "operator, values or value, inverted, caseInsensitive), checked as a strategy's are."
)


def _segment_permission(name: str) -> Permission:
    return Permission(
        f"the {name} permission (root role Admin or Editor; an admin API token acts as Admin), or "
        "UPDATE_PROJECT_SEGMENT in the segment's project for a project segment",
        per_project=True,
        project_permission=name,
    )


# --- bodies ---------------------------------------------------------------------------------


class UpsertSegmentSchema(Schema):
    """A segment to create, or the whole of one to replace (the reference's
    ``upsertSegmentSchema``)."""

    name = fields.String(
        required=True,
        validate=validate.Length(min=1, max=segments.NAME_MAX_LENGTH),
        metadata={"description": "Unique segment name.", "example": "beta-users"},
    )
    description = fields.String(
        allow_none=True, validate=validate.Length(max=segments.DESCRIPTION_MAX_LENGTH)
    )
    project = fields.String(
        allow_none=True,
        metadata={"description": "The project whose flags alone may use it; none: a global segment."},
    )
    constraints = fields.List(fields.Dict(), required=True, metadata={"description": CONSTRAINTS_DESCRIPTION})


class NameSchema(Schema):
    """A name to check (the reference's ``nameSchema``)."""

    name = fields.String(required=True, validate=validate.Length(min=1, max=segments.NAME_MAX_LENGTH))


# --- answers --------------------------------------------------------------------------------


class AdminSegmentSchema(Schema):
    """One segment (the reference's ``adminSegmentSchema``)."""

    id = fields.Integer(required=True)
    name = fields.String(required=True)
    description = fields.String(allow_none=True)
    project = fields.String(allow_none=True, metadata={"description": "Left out for a global segment."})
    constraints = fields.List(fields.Dict(), required=True)
    createdBy = fields.String(allow_none=True)
    createdAt = Timestamp(required=True)
    usedInFeatures = fields.Integer(metadata={"description": "Live flags whose strategies use it."})
    usedInProjects = fields.Integer(metadata={"description": "Projects of those flags."})


class SegmentsSchema(Schema):
    """The segments the caller sees (the reference's ``segmentsSchema``)."""

    segments = fields.List(fields.Nested(AdminSegmentSchema), required=True)


class SegmentStrategySchema(Schema):
    """A strategy that uses a segment."""

    id = fields.String(required=True)
    featureName = fields.String(required=True)
    projectId = fields.String(required=True)
    environment = fields.String(required=True)
    strategyName = fields.String(required=True)


class SegmentStrategiesSchema(Schema):
    """The strategies that use a segment (the reference's ``segmentStrategiesSchema``)."""

    strategies = fields.List(fields.Nested(SegmentStrategySchema), required=True)
    changeRequestStrategies = fields.List(
        fields.Nested(SegmentStrategySchema), metadata={"description": "Always empty."}
    )


# --- operations -----------------------------------------------------------------------------


@operation(
    bp,
    "/segments",
    section=SECTION,
    summary="List segments",
    response=SegmentsSchema(),
)
def get_segments(caller, conn):
    """The global segments and those of the projects the caller sees, by name, each with how
    many live flags (and projects) use it."""
    return segments.list_segments(conn, caller)


@operation(
    bp,
    "/segments",
    method="POST",
    section=SECTION,
    summary="Create a segment",
    response=AdminSegmentSchema(),
    body=UpsertSegmentSchema(),
    status=201,
    permission=_segment_permission(CREATE_SEGMENT),
    statuses=(409,),
)
def create_segment(caller, conn, body):
    """Create a segment, global or of ``project``. 400 naming the field for a bad constraint,
    an unknown project or past the ``segments`` or ``segmentValues`` resource limit; 409 when
    the name is taken. Records ``segment-created``."""
    app_state = state()
    return segments.create(conn, caller, body, app_state.clock, app_state.settings.resource_limits)


@operation(
    bp,
    "/segments/validate",
    method="POST",
    section=SECTION,
    summary="Check that a segment name is free",
    response=None,
    body=NameSchema(),
    status=204,
    statuses=(409,),
)
@changes_nothing
def validate_segment(caller, conn, body):
    """204 when no segment has the name; 409 when one has."""
    segments.validate_name(conn, body["name"])


@operation(
    bp,
    "/segments/<int:id>",
    section=SECTION,
    summary="Get a segment",
    response=AdminSegmentSchema(),
    path=SEGMENT_ID,
)
def get_segment(caller, conn, id: int):
    """One segment; 404 when none the caller sees has the id."""
    return segments.get(conn, caller, id)


@operation(
    bp,
    "/segments/<int:id>",
    method="PUT",
    section=SECTION,
    summary="Replace a segment",
    response=None,
    body=UpsertSegmentSchema(),
    path=SEGMENT_ID,
    status=204,
    permission=_segment_permission(UPDATE_SEGMENT),
    statuses=(409,),
)
def update_segment(caller, conn, id: int, body):
    """Replace the segment's name, description, project (left out: global) and constraints
    (204, no body). 400 as a create; 400 too when strategies of another project use it and it
    would become a segment of ``project``; 409 when the new name is taken. Records
    ``segment-updated`` when something changed."""
    app_state = state()
    segments.update(conn, caller, id, body, app_state.clock, app_state.settings.resource_limits)


@operation(
    bp,
    "/segments/<int:id>",
    method="DELETE",
    section=SECTION,
    summary="Delete a segment",
    response=None,
    path=SEGMENT_ID,
    status=204,
    permission=_segment_permission(DELETE_SEGMENT),
    statuses=(409,),
)
def delete_segment(caller, conn, id: int):
    """Delete the segment (204, no body). 409 naming the flags whose strategies use it; 404
    for an unknown id (the reference answers 204). Records ``segment-deleted``."""
    segments.delete(conn, caller, id, state().clock)


@operation(
    bp,
    "/segments/<int:id>/strategies",
    section=SECTION,
    summary="List the strategies that use a segment",
    response=SegmentStrategiesSchema(),
    path=SEGMENT_ID,
)
def get_segment_strategies(caller, conn, id: int):
    """The strategies that use the segment, in the projects the caller sees, by flag and
    environment."""
    return segments.strategies(conn, caller, id)


@operation(
    bp,
    "/segments/strategies/<strategyId>",
    section=SECTION,
    summary="List the segments a strategy uses",
    response=SegmentsSchema(),
    path={"strategyId": PathParameter("Id of a flag's strategy (a UUID).")},
)
def get_strategy_segments(caller, conn, strategyId: str):
    """The segments the strategy uses, by id (none for an unknown strategy, as the
    reference answers)."""
    return segments.of_strategy(conn, caller, strategyId)
