"""Record schemas shared by the API and the seed format: the event of spec 2.3 and the
integration event of spec 2.2.

The API serves these records (4.1) and the seed format loads them (``seed/documents.py``); both
validate them with the schemas here, so the two cannot disagree on what an event is. The
marshmallow fields they share with the query schemas (:class:`Timestamp`,
:class:`DecimalInteger`, :class:`WholeMatch`) live here too, and so does
:func:`validation_messages`, the one place where marshmallow's refusals of every body, query and
seed document become flagadmin's words (what was wrong, what is accepted, what was sent, quoted
as JSON by :func:`as_json`), so no schema needs messages of its own.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

import orjson
from marshmallow import INCLUDE, Schema, ValidationError, fields, validate

from .spec import EVENT_TYPES, INTEGRATION_EVENT_STATES, TAG_VALUE_LENGTH
from .timestamps import format_rfc3339

_DECIMAL = re.compile(r"[0-9]{1,19}")
_DECIMAL_MESSAGE = "Not a valid decimal integer."


class Timestamp(fields.AwareDateTime):
    """An RFC 3339 date-time (OpenAPI ``string``/``date-time``).

    Loading accepts any RFC 3339 timestamp with a time zone and returns it normalized to the
    stored form (UTC, milliseconds, ``Z``); dumping passes stored strings through unchanged.

    :raise marshmallow.ValidationError: not such a timestamp, or one whose moment in UTC falls
        outside the years 1 to 9999 (``0001-01-01T00:00:00+01:00``).
    """

    default_error_messages: ClassVar[dict[str, str]] = {
        "out_of_range": "Not a timestamp of the years 1 to 9999 once in UTC."
    }

    def _serialize(self, value: Any, attr: str | None, obj: Any, **kwargs: Any) -> Any:
        if value is None or isinstance(value, str):
            return value
        return format_rfc3339(value)

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> str:
        moment = super()._deserialize(value, attr, data, **kwargs)
        try:
            return format_rfc3339(moment)
        except OverflowError:
            raise self.make_error("out_of_range") from None


class DecimalInteger(fields.Integer):
    """A query-string integer written in plain decimal digits (OpenAPI ``integer``).

    ``"10"`` loads; ``"1e3"``, ``"0x10"``, ``" 10"``, ``"+1"``, ``"1_000"``, ``""`` and numbers
    of more than 19 digits are refused with a message that says what is expected.
    """

    #: Said as "must be a whole number written in decimal digits, e.g. 10; got ..." by
    #: :func:`validation_messages`.
    default_error_messages: ClassVar[dict[str, str]] = {"invalid": _DECIMAL_MESSAGE}

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


def as_json(value: Any, at_most: int = 60) -> str:
    """``value`` written as JSON for a message (``"text"``, ``true``, ``null``, ``{"a": 1}``),
    cut to ``at_most`` characters with ``…``: a message quotes what the caller sent in the
    caller's own notation, never as a Python repr (``'text'``, ``True``, ``None``)."""
    try:
        text = orjson.dumps(value).decode()
    except TypeError:
        text = orjson.dumps(str(value)).decode()
    return text if len(text) <= at_most else text[: at_most - 1] + "…"


def json_kind(value: Any) -> str:
    """What JSON value ``value`` is, in words: ``a string``, ``a number``, ``true``,
    ``false``, ``null``, ``an array``, ``an object``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return f"the number {as_json(value)}"
    if isinstance(value, str):
        return f"the string {as_json(value)}"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


#: A field's kind of value in words, by marshmallow field class (the first that matches).
_ACCEPTS: tuple[tuple[type, str], ...] = (
    (fields.Boolean, "true or false"),
    (fields.Integer, "a whole number"),
    (fields.Number, "a number"),
    (fields.DateTime, "an RFC 3339 date-time with a time zone, e.g. 2026-01-31T12:00:00Z"),
    (fields.String, "a string"),
    (fields.List, "an array"),
    (fields.Tuple, "an array"),
    (fields.Nested, "an object"),
    (fields.Mapping, "an object"),
)

#: marshmallow's own messages for a value of the wrong kind (its fields' ``invalid`` and
#: ``type`` messages), each said as "must be <what is accepted>; got <what was sent>".
_WRONG_KIND: dict[str, str] = {
    "Not a valid string.": "a string",
    "Not a valid integer.": "a whole number",
    _DECIMAL_MESSAGE: "a whole number written in decimal digits (at most 19), e.g. 10",
    "Not a valid number.": "a number",
    "Not a valid boolean.": "true or false",
    "Not a valid list.": "an array",
    "Not a valid tuple.": "an array",
    "Not a valid mapping type.": "an object",
    "Invalid type.": "an object",
    "Not a valid datetime.": "an RFC 3339 date-time with a time zone, e.g. 2026-01-31T12:00:00Z",
    "Not a valid aware datetime.": "an RFC 3339 date-time with a time zone, e.g. 2026-01-31T12:00:00Z",
    "Not a valid email address.": "an email address",
    "Not a valid URL.": "an absolute URL, e.g. https://example.com/hook",
    "Not a valid UUID.": "a UUID",
}

#: marshmallow's messages that carry their numbers, in flagadmin's words.
_WITH_NUMBERS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"Length must be between (\d+) and (\d+)\."), "must be {0} to {1} {unit} long"),
    (re.compile(r"Longer than maximum length (\d+)\."), "must be at most {0} {unit} long"),
    (re.compile(r"Shorter than minimum length (\d+)\."), "must be at least {0} {unit} long"),
    (re.compile(r"Length must be (\d+)\."), "must be exactly {0} {unit} long"),
    (
        re.compile(r"Must be greater than or equal to (\S+) and less than or equal to (\S+)\."),
        "must be from {0} to {1}",
    ),
    (re.compile(r"Must be greater than or equal to (\S+)\."), "must be at least {0}"),
    (re.compile(r"Must be less than or equal to (\S+)\."), "must be at most {0}"),
    (re.compile(r"Must be greater than (\S+)\."), "must be more than {0}"),
    (re.compile(r"Must be less than (\S+)\."), "must be less than {0}"),
    (re.compile(r"Must be one of: (.*)\.", re.DOTALL), "must be one of {0}"),
)

#: marshmallow's message of a value not among a field's choices.
_ONE_OF = re.compile(r"Must be one of: (.*)\.", re.DOTALL)

#: A message lists a field's choices when there are fewer than this many (a flag's types, the
#: operations of a JSON Patch); past it, it points at the OpenAPI document (the event types).
MAX_CHOICES_SHOWN = 12

#: The path marshmallow gives an error of the value as a whole (not of one of its fields).
_WHOLE = "_schema"

_NOT_SENT = object()


def validation_messages(error: ValidationError, schema: Schema | None = None) -> list[str]:
    """Flatten marshmallow's nested error messages into ``"field: message"`` strings, each in
    flagadmin's words: what was wrong and what is accepted, never marshmallow's own text.

    ``error.data`` (the input the schema was given) supplies what was sent ("got an object");
    ``schema`` (the schema that raised, optional) supplies what each field accepts (for a null
    where a value is needed) and the fields of a body that holds an unknown one. A message a
    field or validator states itself passes unchanged (flagadmin writes those).
    """
    out: list[str] = []

    def walk(path: list[str], node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                walk([*path, str(key)], value)
        elif isinstance(node, list):
            for item in node:
                walk(path, item)
        else:
            where = [part for part in path if part != _WHOLE]
            text = _in_our_words(str(node), where, path[-1:] == [_WHOLE], error, schema)
            out.append(f"{'.'.join(where)}: {text}" if where else text)

    walk([], error.messages)
    return out


def _in_our_words(
    message: str, path: list[str], whole: bool, error: ValidationError, schema: Schema | None
) -> str:
    """``message`` (marshmallow's, about the value at ``path``; ``whole``: about that value as
    a whole rather than one of its fields) in flagadmin's words."""
    sent = _sent_at(error.data, path)
    got = "" if sent is _NOT_SENT else f"; got {json_kind(sent)}"
    field = _field_at(schema, path)
    if message in _WRONG_KIND:
        accepted = _WRONG_KIND[message]
        if isinstance(field, fields.Nested) and field.many:
            accepted = "an array of objects"
        return f"must be {accepted}{got}"
    if message == "Invalid input type.":
        loader = _schema_at(schema, path)
        what = "an array of objects" if loader is not None and loader.many else "a JSON object"
        return f"must be {what}{got}" if path else f"The body must be {what}{got}."
    if message == "Missing data for required field.":
        return f"is required: send {_accepts(field)}" if field is not None else "is required"
    if message == "Field may not be null.":
        return f"may not be null: send {_accepts(field)}" if field is not None else "may not be null"
    if message == "Unknown field.":
        known = _known_fields(_schema_at(schema, path[:-1]))
        return f"is unknown here (the known ones: {', '.join(known)})" if known else "is unknown here"
    if message == "String does not match expected pattern.":
        rule = field.metadata.get("description") if field is not None else None
        rule = f": {rule.rstrip('.')}" if rule else " (its pattern is in /docs/openapi.json)"
        return f"does not have the form this field takes{rule}{got}"
    if message == "Invalid value.":
        return f"is not a value this field takes{got}"
    if message == "Special numeric values (nan or infinity) are not permitted.":
        return "must be a finite number"
    if message == "Number too large.":
        return f"is too large a number{got}"
    choices = _ONE_OF.fullmatch(message)
    if choices and choices.group(1).count(", ") >= MAX_CHOICES_SHOWN:
        count = choices.group(1).count(", ") + 1
        return f"must be one of the {count} values this field lists in /docs/openapi.json{got}"
    for pattern, words in _WITH_NUMBERS:
        match = pattern.fullmatch(message)
        if match:
            unit = "items" if isinstance(sent, list | dict) else "characters"
            return words.format(*match.groups(), unit=unit) + got
    return message


def _sent_at(data: Any, path: list[str]) -> Any:
    """The value at ``path`` (keys and list indexes as text) of the input ``data``, or
    :data:`_NOT_SENT` when there is none."""
    node = data
    for part in path:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return _NOT_SENT
    return node


def _step(node: Any, part: str) -> Any:
    """The schema or field that loads the member ``part`` of what ``node`` (a schema or a
    field) loads, with a nested field's schema in place of the field; None when unknown."""
    if isinstance(node, Schema):
        node = (type(node)() if part.isdigit() else None) if node.many else node.fields.get(part)
    elif isinstance(node, fields.List) and part.isdigit():
        node = node.inner
    else:
        return None
    return node.schema if isinstance(node, fields.Nested) else node


def _schema_at(schema: Schema | None, path: list[str]) -> Schema | None:
    """The (nested) schema that loads the value at ``path`` of ``schema``'s input, or None."""
    node: Any = schema
    for part in path:
        node = _step(node, part)
    if isinstance(node, fields.Nested):
        node = node.schema
    return node if isinstance(node, Schema) else None


def _field_at(schema: Schema | None, path: list[str]) -> fields.Field | None:
    """The field that loads the value at ``path`` of ``schema``'s input, or None."""
    if not path:
        return None
    parent: Any = schema
    for part in path[:-1]:
        parent = _step(parent, part)
    if isinstance(parent, Schema) and not parent.many:
        return parent.fields.get(path[-1])
    if isinstance(parent, fields.List) and path[-1].isdigit():
        return parent.inner
    return None


def _accepts(field: fields.Field) -> str:
    """What kind of value ``field`` takes, in words."""
    for kind, words in _ACCEPTS:
        if isinstance(field, kind):
            return words
    return "a value"


def _known_fields(schema: Schema | None) -> list[str]:
    """The field names of ``schema``'s input (their ``data_key``), or [] when not known."""
    if schema is None:
        return []
    return [f.data_key or name for name, f in schema.fields.items() if not f.dump_only]


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
