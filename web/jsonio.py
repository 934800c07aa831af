"""JSON in and out with orjson: Flask's JSON provider and a response helper."""

from __future__ import annotations

from typing import Any

import orjson
from flask import Response
from flask.json.provider import JSONProvider

JSON_MIMETYPE = "application/json"


class OrjsonProvider(JSONProvider):
    """Flask JSON provider backed by orjson (compact output, UTF-8, RFC 8259)."""

    def dumps(self, obj: Any, **kwargs: Any) -> str:
        """Serialize ``obj`` to a JSON string."""
        return orjson.dumps(obj).decode()

    def loads(self, s: str | bytes, **kwargs: Any) -> Any:
        """Parse a JSON document."""
        return orjson.loads(s)


def json_response(data: Any, status: int = 200) -> Response:
    """Return ``data`` serialized with orjson as an ``application/json`` response."""
    return Response(orjson.dumps(data), status=status, mimetype=JSON_MIMETYPE)
