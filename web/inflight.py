"""Requests in progress, counted, so that background work in the same process can yield to them.

``flagadmin serve`` wraps its WSGI app in a :class:`RequestGauge`; the delivery threads
(:class:`flagadmin.delivery.Worker`) wait for a moment without requests (at most a few tens of
milliseconds) before each attempt, so that under a burst of API requests the requests keep the
CPU and the deliveries catch up in the gaps and after it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

#: How long no request must be in progress before background work counts it as a pause.
QUIET_S = 0.05


class RequestGauge:
    """WSGI middleware counting the requests of ``app`` in progress: from the call until the
    server closes the answer's iterable (its last byte is out)."""

    def __init__(self, app: Callable[..., Iterable[bytes]]):
        self.app = app
        self._in_progress = 0
        self._last_done = 0.0
        self._lock = threading.Lock()

    @property
    def in_progress(self) -> int:
        """Requests being answered right now."""
        return self._in_progress

    def __call__(self, environ: dict[str, Any], start_response: Callable) -> Iterable[bytes]:
        with self._lock:
            self._in_progress += 1
        try:
            answer = self.app(environ, start_response)
        except BaseException:
            self._done()
            raise
        return _Closing(answer, self._done)

    def _done(self) -> None:
        with self._lock:
            self._in_progress -= 1
            self._last_done = time.monotonic()

    def wait_idle(self, timeout: float, quiet: float = QUIET_S) -> bool:
        """Wait until no request has been in progress for ``quiet`` seconds (a client that
        sends its next request right after an answer is not a pause), at most ``timeout``
        seconds; return True when that came. It looks again every few milliseconds rather than
        being woken by each answer, so that a busy server pays nothing per request for it."""
        deadline = time.monotonic() + timeout
        while True:
            now = time.monotonic()
            with self._lock:
                busy, calm = self._in_progress, now - self._last_done
            if not busy and calm >= quiet:
                return True
            if now >= deadline:
                return False
            time.sleep(max(min(deadline - now, quiet - calm if not busy else quiet), 0.001))


class _Closing:
    """An answer's iterable that reports when the server closes it (once)."""

    def __init__(self, answer: Iterable[bytes], on_close: Callable[[], None]):
        self._answer = answer
        self._on_close = on_close
        self._closed = False

    def __iter__(self) -> Iterator[bytes]:
        return iter(self._answer)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            close = getattr(self._answer, "close", None)
            if close is not None:
                close()
        finally:
            self._on_close()
