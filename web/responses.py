"""Answering without a view's data: 304s, bodiless successes and ready answers.

Conditional answers (RFC 9110 section 13: ``If-None-Match`` against an ETag) and the answers
kept whole in a cache (:class:`~flagadmin.web.cache.Answer`, sent as their bytes or their gzip
made once) are built here, for the operations and for the views that answer by themselves.
"""

from __future__ import annotations

from flask import Response, request

from .cache import Answer, SplicedAnswer
from .headers import COMPRESSION, NegotiatedResponse
from .jsonio import JSON_MIMETYPE


def if_none_match(etag: str) -> str | None:
    """The ETag to answer 304 with when the request's ``If-None-Match`` names ``etag`` (or
    ``etag`` of its gzip variant, as compression names it: ``"<etag>:gzip"``), else None."""
    sent = request.if_none_match
    if not sent:
        return None
    if sent.star_tag or sent.contains_weak(etag):
        return etag
    gzipped = f"{etag}:gzip"
    return gzipped if sent.contains_weak(gzipped) else None


def not_modified(etag: str) -> Response:
    """A 304 answer carrying ``etag``, with no body (varying on ``Accept-Encoding``, as the
    200 it stands for)."""
    response = NegotiatedResponse(status=304)
    response.set_etag(etag)
    return response


#: Answers of at least this many bytes are sent gzipped to clients that accept it: the bound of
#: every other compressed response (``web/headers.py``).
GZIP_MIN_BYTES = COMPRESSION["COMPRESS_MIN_SIZE"]


def accepts_gzip() -> bool:
    """True when the request's ``Accept-Encoding`` takes gzip (RFC 9110 section 12.5.3)."""
    if "gzip" not in request.environ.get("HTTP_ACCEPT_ENCODING", ""):
        return False
    return request.accept_encodings.quality("gzip") > 0


def empty_response(status: int) -> Response:
    """A success with no body (an archive's 202, a 204): no ``Content-Type``, as there is no
    content to type (RFC 9110 section 8.3), ``Content-Length: 0``, and nothing to compress."""
    response = NegotiatedResponse(status=status)
    del response.headers["Content-Type"]
    return response


def answer_response(answer: Answer | SplicedAnswer, status: int = 200) -> Response:
    """The response of a ready :class:`Answer`: 304 when the request's ``If-None-Match``
    names its ETag, else its bytes (with its ETag), gzipped when the client accepts it and the
    body is large enough: the answer's own gzip, made once (``"<etag>:gzip"`` names that
    representation, as for every other compressed response)."""
    if answer.etag is not None:
        matched = if_none_match(answer.etag)
        if matched is not None:
            return not_modified(matched)
    if answer.length >= GZIP_MIN_BYTES and accepts_gzip():
        response = NegotiatedResponse(answer.gzipped(), status=status, mimetype=JSON_MIMETYPE)
        response.headers["Content-Encoding"] = "gzip"
        if answer.etag is not None:
            response.set_etag(f"{answer.etag}:gzip")
        return response
    response = NegotiatedResponse(answer.body, status=status, mimetype=JSON_MIMETYPE)
    if answer.etag is not None:
        response.set_etag(answer.etag)
    return response
