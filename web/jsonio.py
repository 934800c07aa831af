"""JSON responses made with orjson (:func:`json_response`). Every answer of the API goes through
it or through a kept answer's bytes; request bodies are parsed with orjson by
``web.operations``. Flask's own JSON provider is left as it is: nothing uses it."""

from __future__ import annotations

from typing import Any

import orjson
from flask import Response

from .headers import COMPRESSION, NegotiatedResponse

JSON_MIMETYPE = "application/json"

#: Bodies shorter than this are never compressed (flask-compress's bound, ``web/headers.py``).
_UNCOMPRESSED_BELOW = COMPRESSION["COMPRESS_MIN_SIZE"]


def json_response(data: Any, status: int = 200) -> Response:
    """Return ``data`` serialized with orjson as an ``application/json`` response.

    A body under the gzip bound (1 KiB) is sent as it is to every client, so it is a
    :class:`~flagadmin.web.headers.NegotiatedResponse` (varying on ``Accept-Encoding`` as every
    answer does) that the compression hook passes by: a flag's answer, an error. A larger one
    is left to the hook, which gzips it for the clients that accept it.
    """
    body = orjson.dumps(data)
    if len(body) < _UNCOMPRESSED_BELOW:
        return NegotiatedResponse(body, status=status, mimetype=JSON_MIMETYPE)
    return Response(body, status=status, mimetype=JSON_MIMETYPE)
