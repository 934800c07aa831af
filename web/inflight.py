"""Requests in progress, counted, so that background work in the same process can yield to them.

``flagadmin serve`` wraps its WSGI app in a :class:`RequestGauge`; the delivery threads
(:class:`flagadmin.integrations.worker.Worker`) ask it for room before each attempt
(:meth:`RequestGauge.wait_for_room`). There is room when no request has been in progress for a
moment (:data:`QUIET_S`), or when requests kept the server busy less than :data:`ROOM_SHARE` of
the last :data:`SHARE_WINDOW_S` or so: a burst that saturates the server keeps the CPU, and the
deliveries catch up after it; steady traffic that leaves the server idle most of the time (a
request every few milliseconds, so never a quiet moment) leaves the deliveries its idle time.

Before the busy share, room meant a quiet moment only: with a read every 5 ms and 20 flag
archives a second, five webhooks taking every event (100 deliveries a second to make, the
server's core mostly idle), the four delivery threads made 38.3 a second, one each per 0.1 s,
and the outbox grew without end (docs/architecture.md, "Delivery threads yield to requests").
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

#: How long no request must be in progress before background work counts it as a pause (s).
QUIET_S = 0.05
#: The span (s) over which the share of time with a request in progress is measured: it is
#: measured again once the last measurement is this old.
SHARE_WINDOW_S = 0.1
#: Below this share of time with a request in progress, the server has room for background
#: work even while requests arrive.
ROOM_SHARE = 0.5


class RequestGauge:
    """WSGI middleware counting the requests of ``app`` in progress: from the call until the
    server closes the answer's iterable (its last byte is out); and how much of the time at
    least one was (the busy share, for :meth:`wait_for_room`). Per request it takes one lock
    twice, and reads the clock once more only when the server was idle before it."""

    def __init__(self, app: Callable[..., Iterable[bytes]]):
        self.app = app
        self._in_progress = 0
        self._last_done = 0.0
        self._lock = threading.Lock()
        #: seconds with at least one request in progress, up to ``_busy_since`` when one is
        self._busy_total = 0.0
        self._busy_since = 0.0
        #: the last busy-share measurement: when (monotonic s), the busy total then, its share
        self._mark_at = time.monotonic()
        self._mark_busy = 0.0
        self._share = 0.0

    @property
    def in_progress(self) -> int:
        """Requests being answered right now."""
        return self._in_progress

    def __call__(self, environ: dict[str, Any], start_response: Callable) -> Iterable[bytes]:
        with self._lock:
            if self._in_progress == 0:
                self._busy_since = time.monotonic()
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
            self._last_done = now = time.monotonic()
            if self._in_progress == 0:
                self._busy_total += now - self._busy_since

    def busy_share(self) -> float:
        """The share (0 to 1) of time with at least one request in progress, over the span
        since the last measurement, measured again when that is at least
        :data:`SHARE_WINDOW_S` old (so over one window or a little more; over the whole idle
        spell before it, on the first call after one). 0 until the gauge's first window has
        passed: a server just started has room."""
        with self._lock:
            return self._share_at(time.monotonic())

    def _share_at(self, now: float) -> float:
        # holding self._lock
        if now - self._mark_at >= SHARE_WINDOW_S:
            busy = self._busy_total + (now - self._busy_since if self._in_progress else 0.0)
            self._share = min((busy - self._mark_busy) / (now - self._mark_at), 1.0)
            self._mark_at, self._mark_busy = now, busy
        return self._share

    def wait_for_room(self, timeout: float, quiet: float = QUIET_S, share: float = ROOM_SHARE) -> bool:
        """Wait until there is room for background work, at most ``timeout`` seconds; return
        True when it came. Room: no request in progress for ``quiet`` seconds (a client that
        sends its next request right after an answer is not a pause), or a :meth:`busy_share`
        below ``share``. It looks again every few tens of milliseconds rather than being woken
        by each answer, so that a busy server pays nothing per request for it."""
        deadline = time.monotonic() + timeout
        while True:
            now = time.monotonic()
            with self._lock:
                busy, calm = self._in_progress, now - self._last_done
                busy_share = self._share_at(now)
            if (not busy and calm >= quiet) or busy_share < share:
                return True
            if now >= deadline:
                return False
            pause = quiet - calm if not busy else SHARE_WINDOW_S / 2
            time.sleep(max(min(deadline - now, pause), 0.001))


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
