"""marshmallow fields shared by the record schemas and the query schemas."""

from __future__ import annotations

import re
from typing import Any, ClassVar

from marshmallow import ValidationError, fields

from ..timestamps import format_rfc3339

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
