"""Record schemas shared by the API and the seed format: the event of spec 2.3 and the
integration event of spec 2.2.

The API serves these records (4.1) and the seed format loads them (``seed_documents.py``); both
validate them with the schemas here, so the two cannot disagree on what an event is.
"""

from __future__ import annotations

from marshmallow import INCLUDE, Schema, fields, validate

from .spec import EVENT_TYPES, INTEGRATION_EVENT_STATES, TAG_VALUE_LENGTH
from .web.fields import Timestamp


class TagSchema(Schema):
    """A tag of an event (spec 2.3): ``value`` of 2 to 50 characters, an optional ``type``."""

    type = fields.String()
    value = fields.String(required=True, validate=validate.Length(*TAG_VALUE_LENGTH))


class EventSchema(Schema):
    """A system event (spec 2.3).

    Kept exactly as it was recorded or loaded: keys beyond spec 2.3 are allowed and served
    unchanged.
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
    state = fields.String(required=True, validate=validate.OneOf(INTEGRATION_EVENT_STATES))
    stateDetails = fields.String(required=True)
    event = fields.Nested(EventSchema, required=True)
    details = fields.Dict(required=True)
