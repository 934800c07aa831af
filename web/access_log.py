"""An optional access log: one line per request, never a header, a body or a token.

Line: ``<client> "<METHOD> <path>?<query>" <status> <bytes>B <milliseconds>ms``, where
``<bytes>`` counts the body bytes that went on the wire (after compression, streamed bodies
included) and the time runs until the last of them was handed to the server. It wraps the
WSGI app, outside everything Flask does. A client that puts a token in the path or the query by
mistake does not get it logged: :func:`redact_tokens` hides anything shaped like one of
flagadmin's tokens.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterable, Iterator

log = logging.getLogger("flagadmin.access")

#: What a token looks like inside a URL: the hex of an API token (however its prefix was
#: encoded) or a SCIM token.
_TOKEN_SHAPED = re.compile(r"[0-9A-Fa-f]{32,}|scim_[A-Za-z0-9_-]{16,}")


def redact_tokens(text: str) -> str:
    """Return ``text`` with every token-shaped run replaced by ``[redacted]``."""
    return _TOKEN_SHAPED.sub("[redacted]", text)


class AccessLog:
    """WSGI middleware logging one line per request to the ``flagadmin.access`` logger."""

    def __init__(self, wsgi_app: Callable):
        self.wsgi_app = wsgi_app

    def __call__(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        started = time.perf_counter()
        status: list[str] = []

        def recording_start_response(status_line: str, headers: list, exc_info=None):
            status[:] = [status_line.split(" ", 1)[0]]
            return start_response(status_line, headers, exc_info)

        body = self.wsgi_app(environ, recording_start_response)
        return self._counted(environ, body, status, started)

    def _counted(
        self, environ: dict, body: Iterable[bytes], status: list[str], started: float
    ) -> Iterator[bytes]:
        sent = 0
        try:
            for chunk in body:
                sent += len(chunk)
                yield chunk
        finally:
            close = getattr(body, "close", None)
            if close is not None:
                close()
            query = environ.get("QUERY_STRING", "")
            path = environ.get("SCRIPT_NAME", "") + environ.get("PATH_INFO", "")
            target = redact_tokens(path + (f"?{query}" if query else ""))
            log.info(
                '%s "%s %s" %s %dB %.1fms',
                environ.get("REMOTE_ADDR", "-"),
                environ.get("REQUEST_METHOD", "-"),
                target,
                status[0] if status else "-",
                sent,
                (time.perf_counter() - started) * 1000,
            )
