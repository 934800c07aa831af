"""Record schemas shared by the API and the seed format: the event of spec 2.3 and the
integration event of spec 2.2.

The API serves these records (4.1) and the seed format loads them (``seed/documents.py``); both
validate them with the schemas here, so the two cannot disagree on what an event is. The
marshmallow fields they share with the query schemas (:class:`Timestamp`,
:class:`DecimalInteger`) and :func:`validation_messages` live here too.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from marshmallow import INCLUDE, Schema, ValidationError, fields, validate

from .spec import EVENT_TYPES, INTEGRATION_EVENT_STATES, TAG_VALUE_LENGTH
from .timestamps import format_rfc3339

_DECIMAL = re.compile(r"[0-9]{1,19}")


class Timestamp(fields.AwareDateTime):
    """An RFC 3339 date-time (OpenAPI ``string``/``date-time``).

    Loading accepts any RFC 3339 timestamp with a time zone and returns it normalized to the
    stored form (UTC, milliseconds, ``Z``); dumping passes stored strings through unchanged.
    """

    def _serialize(self, value: Any, attr: str | None, obj: Any, **kwargs: Any) -> Any:
        if value is None or isinstance(value, str):
            return value
        return format_rfc3339(value)

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> str:
        return format_rfc3339(super()._deserialize(value, attr, data, **kwargs))


class DecimalInteger(fields.Integer):
    """A query-string integer written in plain decimal digits (OpenAPI ``integer``).

    ``"10"`` loads; ``"1e3"``, ``"0x10"``, ``" 10"``, ``"+1"``, ``"1_000"``, ``""`` and numbers
    of more than 19 digits are refused with a message that says what is expected.
    """

    default_error_messages: ClassVar[dict[str, str]] = {
        "invalid": "Must be a whole number written in decimal digits."
    }

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> int:
        if not isinstance(value, str) or not _DECIMAL.fullmatch(value):
            raise self.make_error("invalid")
        return int(value)


class WholeMatch(validate.Regexp):
    """marshmallow's :class:`~marshmallow.validate.Regexp` matched against the whole value
    (``re.fullmatch``), so that a pattern's ``$`` means the end of the value as it does in the
    OpenAPI document's (ECMAScript) patterns: Python's ``re.match`` lets a value with one
    trailing newline through ``^...$``. The document prints the pattern unchanged.

    :raise marshmallow.ValidationError: the value does not match as a whole.
    """

    def __call__(self, value: Any) -> Any:
        if not isinstance(value, str) or self.regex.fullmatch(value) is None:
            raise ValidationError(self._format_error(value))
        return value


def validation_messages(error: ValidationError) -> list[str]:
    """Flatten marshmallow's nested error messages into ``"field: message"`` strings."""
    out: list[str] = []

    def walk(prefix: str, node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                walk(f"{prefix}.{key}" if prefix else str(key), value)
        elif isinstance(node, list):
            for item in node:
                walk(prefix, item)
        else:
            out.append(f"{prefix}: {node}" if prefix else str(node))

    walk("", error.messages)
    return out


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

    id = fields.String(required=True, validate=WholeMatch(r"^[0-9]+$"))
    integrationId = fields.Integer(required=True)
    createdAt = Timestamp(required=True)
    state = fields.String(required=True, validate=validate.OneOf(INTEGRATION_EVENT_STATES))
    stateDetails = fields.String(required=True)
    event = fields.Nested(EventSchema, required=True)
    details = fields.Dict(required=True)
