"""An optional access log: one line per request, never a header, a body or a token.

Line: ``<client> "<METHOD> <path>?<query>" <status> <bytes>B <milliseconds>ms``. A client that
puts a token in the path or the query by mistake does not get it logged: :func:`redact_tokens`
hides anything shaped like one of flagadmin's tokens.
"""

from __future__ import annotations

import logging
import re
import time

from flask import Flask, Response, g, request

log = logging.getLogger("flagadmin.access")

#: What a token looks like inside a URL: the hex of an API token (however its prefix was
#: encoded) or a SCIM token.
_TOKEN_SHAPED = re.compile(r"[0-9A-Fa-f]{32,}|scim_[A-Za-z0-9_-]{16,}")


def redact_tokens(text: str) -> str:
    """Return ``text`` with every token-shaped run replaced by ``[redacted]``."""
    return _TOKEN_SHAPED.sub("[redacted]", text)


def _start() -> None:
    g.access_log_start = time.perf_counter()


def _line(response: Response) -> Response:
    elapsed = (time.perf_counter() - g.pop("access_log_start", time.perf_counter())) * 1000
    query = request.query_string.decode("latin-1")
    target = redact_tokens(request.path + (f"?{query}" if query else ""))
    log.info(
        '%s "%s %s" %s %sB %.1fms',
        request.remote_addr,
        request.method,
        target,
        response.status_code,
        response.calculate_content_length() if not response.is_streamed else "-",
        elapsed,
    )
    return response


def init_app(app: Flask) -> None:
    """Log every request of ``app`` when its config ``ACCESS_LOG`` is true."""
    if app.config.get("ACCESS_LOG"):
        app.before_request(_start)
        app.after_request(_line)
