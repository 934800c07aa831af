"""Spec 4.1: ``GET /api/admin/addons/{id}/events``, the integration event log."""

from __future__ import annotations

import re
from threading import Lock

import orjson
from cachetools import LRUCache
from flask import Blueprint, Response, current_app
from marshmallow import INCLUDE, Schema, fields, validate

from .. import auth
from ..api import operation
from ..errors import NotFoundError
from ..event_types import EVENT_TYPES
from ..fields import DecimalInteger, Timestamp
from ..store import integration_events

bp = Blueprint("integration_events", __name__, url_prefix="/api/admin")

STATES = ("success", "failed", "successWithErrors")
MAX_LIMIT = 1000
MAX_INT64 = 2**63 - 1
_DECIMAL_ID = re.compile(r"[0-9]{1,18}")


class TagSchema(Schema):
    """A tag of an event (spec 2.3)."""

    type = fields.String()
    value = fields.String(required=True, validate=validate.Length(2, 50))


class EventSchema(Schema):
    """The system event an integration handled (spec 2.3).

    Kept exactly as it was loaded: keys beyond spec 2.3 are allowed and served unchanged.
    """

    class Meta:
        unknown = INCLUDE

    id = fields.Integer(required=True, validate=validate.Range(min=1))
    createdAt = Timestamp(required=True)
    type = fields.String(required=True, validate=validate.OneOf(EVENT_TYPES))
    createdBy = fields.String(required=True)
    createdByUserId = fields.Float(allow_none=True)
    environment = fields.String(allow_none=True)
    project = fields.String(allow_none=True)
    featureName = fields.String(allow_none=True)
    data = fields.Dict(allow_none=True)
    preData = fields.Dict(allow_none=True)
    tags = fields.List(fields.Nested(TagSchema), allow_none=True)
    label = fields.String(allow_none=True)
    summary = fields.String(allow_none=True)


class IntegrationEventSchema(Schema):
    """One handled event of an integration configuration (spec 2.2)."""

    id = fields.String(required=True, validate=validate.Regexp(r"^[0-9]+$"))
    integrationId = fields.Integer(required=True)
    createdAt = Timestamp(required=True)
    state = fields.String(required=True, validate=validate.OneOf(STATES))
    stateDetails = fields.String(required=True)
    event = fields.Nested(EventSchema, required=True)
    details = fields.Dict(required=True)


class IntegrationEventsSchema(Schema):
    """A page of the integration event log (spec 2.1)."""

    integrationEvents = fields.List(fields.Nested(IntegrationEventSchema), required=True)


class IntegrationEventsQuerySchema(Schema):
    """Pagination of spec 4.1 and 8.1: ``limit`` 1 to 1000 (default 50), ``offset`` >= 0."""

    limit = DecimalInteger(
        load_default=50,
        validate=validate.Range(1, MAX_LIMIT),
        metadata={"description": "Number of results in a page, 1 to 1000.", "default": 50},
    )
    offset = DecimalInteger(
        load_default=0,
        validate=validate.Range(0, MAX_INT64),
        metadata={"description": "Number of results to skip.", "default": 0},
    )


#: Pages kept per app, by (integration, head, limit, offset): at most this many body bytes.
PAGE_CACHE_BYTES = 16 * 1024 * 1024
PAGES = "flagadmin.integration_event_pages"


@operation(
    bp,
    "/addons/<id>/events",
    section="4.1",
    summary="List integration events of an integration configuration",
    response=IntegrationEventsSchema(),
    query=IntegrationEventsQuerySchema(),
    permission=auth.ADMIN,
    statuses=(400, 401, 403, 404),
)
def list_integration_events(caller, db, id: str, limit: int, offset: int):
    """The events that integration ``id`` handled, newest first, ``limit`` from ``offset``.

    Needs the ADMIN permission. An ``id`` that names no integration configuration, numeric
    or not, is 404 NotFoundError (spec 4.1, 7). Items are built in their wire shape (no
    marshmallow pass); :class:`IntegrationEventsSchema` documents them. The log only grows,
    so a page is kept by its log head: a page asked again before the next event arrives is
    answered with the same bytes.
    """
    top = integration_events.head(db, int(id)) if _DECIMAL_ID.fullmatch(id) else None
    if top is None:
        raise NotFoundError(
            f"No integration configuration has the id {id!r}: integration ids are decimal integers."
        )
    key = (int(id), top, limit, offset)
    pages, lock = current_app.extensions[PAGES]
    with lock:
        body = pages.get(key)
    if body is None:
        items = integration_events.page(db, int(id), top, limit, offset)
        for item in items:
            # Stored as compact JSON text exactly as loaded: embedded as it is, never re-encoded.
            item["event"] = orjson.Fragment(item["event"])
            item["details"] = orjson.Fragment(item["details"])
        body = orjson.dumps({"integrationEvents": items})
        with lock:
            pages[key] = body
    return Response(body, mimetype="application/json")


def init_app(app) -> None:
    """Give ``app`` its cache of integration event pages."""
    app.extensions[PAGES] = (LRUCache(maxsize=PAGE_CACHE_BYTES, getsizeof=len), Lock())
