"""Spec 4.1: ``GET /api/admin/addons/{id}/events``, the integration event log."""

from __future__ import annotations

import re

from flask import Blueprint
from marshmallow import Schema, fields, validate

from ..records import DecimalInteger, IntegrationEventSchema, as_json
from ..store import integration_events
from ..web.auth import Permission
from ..web.cache import Answer
from ..web.errors import NotFoundError
from ..web.operations import PathParameter, operation
from ..web.state import state

bp = Blueprint("integration_events", __name__, url_prefix="/api/admin")

MAX_LIMIT = 1000
MAX_INT64 = 2**63 - 1
_DECIMAL_ID = re.compile(r"[0-9]{1,19}")

#: The path parameter ``id`` of 4.1 (and of the integration configuration routes).
INTEGRATION_ID = PathParameter(
    "Id of the integration configuration, a decimal integer.",
    {"type": "string", "pattern": "^[0-9]+$"},
)


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


def integration_id(text: str) -> int | None:
    """The integration id that path text ``text`` names (decimal, 1 to 2^63-1), or None."""
    if not _DECIMAL_ID.fullmatch(text):
        return None
    value = int(text)
    return value if 0 < value <= MAX_INT64 else None


@operation(
    bp,
    "/addons/<id>/events",
    section="4.1",
    summary="List integration events of an integration configuration",
    response=IntegrationEventsSchema(),
    query=IntegrationEventsQuerySchema(),
    permission=Permission.ADMIN,
    path={"id": INTEGRATION_ID},
    links={
        "EventsOfTheSameIntegration": {
            "operationId": "list_integration_events",
            "parameters": {"id": "$response.body#/integrationEvents/0/integrationId"},
            "description": "The log of the integration that handled the first listed event.",
        }
    },
)
def list_integration_events(caller, conn, id: str, limit: int, offset: int):
    """The events that integration ``id`` handled, newest first, ``limit`` from ``offset``.

    An ``id`` that names no integration configuration, numeric
    or not, is 404 NotFoundError (spec 4.1, 7). Items are built in their wire shape (no
    marshmallow pass); :class:`IntegrationEventsSchema` documents them. Rows are only added at
    the head of the log and deleted (retention) at its low end, so a page is kept by the log's
    head and low-water mark: a page asked again before the log changes is answered with the
    same bytes, and never holds a deleted row.
    """
    number = integration_id(id)
    bounds = None if number is None else integration_events.head(conn, number)
    if bounds is None:
        raise NotFoundError(
            f"No integration configuration has the id {as_json(id)}: integration ids are decimal integers."
        )

    def build() -> Answer:
        # Items come from the store in their wire bytes: the page is a join, never a re-encoding.
        items = integration_events.page(conn, number, bounds.head, limit, offset)
        return Answer(b'{"integrationEvents":[' + b",".join(items) + b"]}")

    pages = state().caches.integration_event_pages
    return pages.get_or_build((number, bounds.head, bounds.low, limit, offset), build)
