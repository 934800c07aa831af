"""Slowing down repeated authentication failures from one client address (spec 5.2, 7).

Each app keeps, in memory, a moving window of failures per client address (``REMOTE_ADDR``).
Only failures are counted and only failures are refused: the token is always checked first,
so a request with a valid token is never throttled, and a failure over the limit is answered
429 ``TooManyRequestsError`` with ``Retry-After`` instead of 401.

The limit comes parsed from :mod:`flagadmin.config` (``FLAGADMIN_AUTH_FAILURE_LIMIT``,
``30/minute``); the window is kept here, on the app's :class:`~flagadmin.timestamps.Clock`,
so that it can be tested without waiting.
"""

from __future__ import annotations

import math
import threading
from collections import deque

from ..config import RateLimit
from ..timestamps import Clock
from .errors import TooManyRequestsError

#: Addresses remembered at most; the least recently failing ones are forgotten first.
MAX_ADDRESSES = 100_000


class AuthFailureThrottle:
    """Counts authentication failures per client address against one limit (``RateLimit(30,
    60.0)``: at most 30 failures in any 60 seconds), on ``clock``'s monotonic time."""

    def __init__(self, limit: RateLimit, clock: Clock):
        self.amount: int = limit.amount
        self.window_s: float = limit.window_s
        self.clock = clock
        self._failures: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def failed(self, address: str) -> None:
        """Count one failure of ``address``.

        :raise TooManyRequestsError: ``address`` already failed ``amount`` times within the
            window; ``Retry-After`` says in how many seconds (at least 1) its oldest failure
            leaves the window. A refused attempt is not counted.
        """
        now = self.clock.monotonic()
        with self._lock:
            times = self._failures.pop(address, None) or deque()
            self._failures[address] = times  # most recently failing last
            while times and times[0] <= now - self.window_s:
                times.popleft()
            if len(times) >= self.amount:
                retry_after = max(1, math.ceil(times[0] + self.window_s - now))
            else:
                times.append(now)
                retry_after = None
            while len(self._failures) > MAX_ADDRESSES:
                del self._failures[next(iter(self._failures))]
        if retry_after is not None:
            raise TooManyRequestsError(
                "Too many failed authentications from your address. Check the API token in the "
                f"Authorization header, then retry in {retry_after} seconds.",
                headers={"Retry-After": str(retry_after)},
            )
