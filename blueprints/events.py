"""The system event log on the reference server's paths (spec 2.3, 6; Unleash 8.2.0):
``GET /api/admin/events``, ``GET /api/admin/events/{featureName}`` and
``GET /api/admin/search/events``. The domain is ``eventlog/``, the SQL ``store/event_log.py``.

Answers are written by orjson from the domain's dicts, the stored JSON of each event embedded as
it is (no marshmallow pass); the schemas below document them, and the tests check every answer
against the reference's ``eventsSchema``, ``featureEventsSchema`` and
``eventSearchResponseSchema``.
"""

from __future__ import annotations

from flask import Blueprint
from marshmallow import Schema, fields, validate

from ..eventlog import filters, log
from ..records import DecimalInteger, EventSchema
from ..refusals import Invalid
from ..web.auth import Permission
from ..web.jsonio import json_response
from ..web.operations import PathParameter, operation

bp = Blueprint("events", __name__, url_prefix="/api/admin")

SECTION = "2.3 (the system event log, on the reference server's paths)"
MAX_INT64 = 2**63 - 1


class LogEventSchema(EventSchema):
    """An event of the log (the reference's ``eventSchema``): spec 2.3's fields, ``tags`` a
    list (empty when none were recorded), ``groupType`` and ``groupId`` for the events of one
    write transaction, and in a search ``label`` and ``summary``."""

    groupType = fields.String(metadata={"description": "Always `transaction`: the events of one change."})
    groupId = fields.String(
        metadata={"description": "Shared by the events written in one transaction (decimal digits)."}
    )


class EventsSchema(Schema):
    """The newest events (the reference's ``eventsSchema``)."""

    version = fields.Integer(required=True, validate=validate.OneOf([1]))
    events = fields.List(fields.Nested(LogEventSchema), required=True)
    totalEvents = fields.Integer(metadata={"description": "How many events the log (or the project) has."})


class FeatureEventsSchema(Schema):
    """A flag's newest events (the reference's ``featureEventsSchema``)."""

    version = fields.Integer(validate=validate.OneOf([1]))
    toggleName = fields.String(metadata={"description": "The flag's name, as the path gives it."})
    events = fields.List(fields.Nested(LogEventSchema), required=True)
    totalEvents = fields.Integer(metadata={"description": "How many events of the flag the caller sees."})


class EventSearchResponseSchema(Schema):
    """A page of the search (the reference's ``eventSearchResponseSchema``)."""

    events = fields.List(fields.Nested(LogEventSchema), required=True)
    total = fields.Integer(
        required=True, metadata={"description": "How many events match, whatever the page."}
    )


class EventsQuerySchema(Schema):
    """``project`` of ``GET /api/admin/events``."""

    project = fields.String(
        metadata={
            "description": "The project whose newest 50 events to answer (an unknown project: none;"
            " empty: the whole log's newest 100)."
        }
    )


def _filter(pattern: str, description: str, example: str, **options) -> fields.String:
    """A search filter: checked by ``eventlog.filters`` (400 naming it), documented here."""
    return fields.String(
        metadata={"description": description, "pattern": pattern, "example": example}, **options
    )


class EventSearchQuerySchema(Schema):
    """The search's parameters, named and bounded as in the reference's document."""

    query = fields.String(
        validate=validate.Length(max=filters.MAX_QUERY),
        metadata={
            "description": "Text that the event's data, previous data or tags contain (ASCII letters"
            " in any case). It reads every event the other filters leave: combine it with them.",
            "example": "admin@example.com",
        },
    )
    id = _filter(filters.ID_PATTERN, "Event ids: IS or IS_ANY_OF.", "IS:123")
    groupId = _filter(
        filters.ID_PATTERN, "Transaction groups (an event's groupId): IS or IS_ANY_OF.", "IS:123"
    )
    feature = _filter(filters.TEXT_PATTERN, "Flag names: IS or IS_ANY_OF.", "IS:myfeature")
    project = _filter(
        filters.TEXT_PATTERN,
        "Projects: IS or IS_ANY_OF; the caller sees only the projects she may (403 if none of them).",
        "IS:default",
    )
    type = _filter(filters.TEXT_PATTERN, "Event types (spec 6): IS or IS_ANY_OF.", "IS:feature-created")
    createdBy = _filter(
        filters.USER_ID_PATTERN,
        "Ids of the users who made the events (-42: an admin API token): IS or IS_ANY_OF.",
        "IS:2",
    )
    environment = _filter(filters.TEXT_PATTERN, "Environments: IS or IS_ANY_OF.", "IS:production")
    from_ = _filter(
        filters.DATE_PATTERN,
        "The first day (UTC), included: IS:yyyy-MM-dd.",
        "IS:2024-01-01",
        data_key="from",
    )
    to = _filter(filters.DATE_PATTERN, "The last day (UTC), included: IS:yyyy-MM-dd.", "IS:2024-01-31")
    offset = DecimalInteger(
        load_default=0,
        validate=validate.Range(0, MAX_INT64),
        metadata={"description": "Events to skip.", "default": 0, "example": 50},
    )
    limit = DecimalInteger(
        load_default=log.DEFAULT_LIMIT,
        validate=validate.Range(1, log.MAX_LIMIT),
        metadata={
            "description": f"Events in a page, 1 to {log.MAX_LIMIT}.",
            "default": log.DEFAULT_LIMIT,
            "example": 50,
        },
    )


@operation(
    bp,
    "/events",
    section=SECTION,
    summary="The newest events of the log, or of one project",
    response=EventsSchema(),
    query=EventsQuerySchema(),
    permission=Permission.ADMIN,
    deprecated=True,
)
def get_events(caller, conn, project: str | None = None):
    """The newest 100 events of the whole log, or with ``project`` the newest 50 of that
    project, newest first, and ``totalEvents``, how many the log (or the project) has.
    Deprecated as in the reference (its search is ``/api/admin/search/events``)."""
    return json_response(log.newest(conn, project or None))


@operation(
    bp,
    "/events/<featureName>",
    section=SECTION,
    summary="The newest events of a flag",
    response=FeatureEventsSchema(),
    path={"featureName": PathParameter("Name of the flag (live, archived or deleted).")},
    deprecated=True,
)
def get_feature_events(caller, conn, featureName: str):
    """The newest 50 events of the flag ``featureName`` among those the caller sees (the
    events of the projects she sees), newest first, and ``totalEvents``, how many. A name that
    no event carries answers an empty list, as in the reference."""
    if "\x00" in featureName:
        raise Invalid("The flag name holds a NUL character, which no name can hold.")
    return json_response(log.of_flag(conn, caller, featureName))


@operation(
    bp,
    "/search/events",
    section=SECTION,
    summary="Search the event log",
    response=EventSearchResponseSchema(),
    query=EventSearchQuerySchema(),
    statuses=(403,),
)
def search_events(caller, conn, offset: int, limit: int, **given):
    """The events that match every filter given, among those the caller sees, newest first
    (``createdAt``, then ``id``): ``limit`` of them from ``offset``, and ``total``, how many
    match. Each filter is ``IS:value`` or ``IS_ANY_OF:value,value`` (``from`` and ``to``:
    ``IS:yyyy-MM-dd``, UTC days, both included); a malformed one is 400 naming it. Root role
    Admin sees every event, Editors those of every project, anyone else those of the projects
    where she holds a role; the events of no project only Admins."""
    wanted = filters.Filters(**given)
    return json_response(log.search(conn, caller, wanted, limit=limit, offset=offset))
