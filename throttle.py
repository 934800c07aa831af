"""Slowing down repeated authentication failures from one client address (spec 5.2, 7).

Each app keeps an in-memory moving window per client address (``REMOTE_ADDR``) with the
``limits`` library. Only failures are counted and only failures are refused: the token is
always checked first, so a request with a valid token is never throttled, and a failure over
the limit is answered 429 ``TooManyRequestsError`` with ``Retry-After`` instead of 401.
"""

from __future__ import annotations

import math
import time

import limits
from flask import Flask, current_app, request
from limits.storage import MemoryStorage
from limits.strategies import MovingWindowRateLimiter

from .config import rate_limit
from .errors import TooManyRequestsError

EXTENSION = "flagadmin.auth_failures"


class AuthFailureThrottle:
    """Counts authentication failures per client address against one limit ("30/minute")."""

    def __init__(self, limit: str):
        (self.item,) = limits.parse_many(limit)
        self.limiter = MovingWindowRateLimiter(MemoryStorage())

    def failed(self, address: str) -> int | None:
        """Count one failure of ``address``; return None while under the limit, else the
        seconds until the oldest failure in the window expires (at least 1)."""
        if self.limiter.hit(self.item, address):
            return None
        reset_at, _ = self.limiter.get_window_stats(self.item, address)
        return max(1, math.ceil(reset_at - time.time()))


def count_failure() -> None:
    """Count a failed authentication of the current request's client address.

    :raise TooManyRequestsError: the address is over the limit; ``Retry-After`` says when
        its next attempt will be counted again.
    """
    throttle: AuthFailureThrottle = current_app.extensions[EXTENSION]
    retry_after = throttle.failed(request.remote_addr or "-")
    if retry_after is not None:
        raise TooManyRequestsError(
            "Too many failed authentications from your address. Check the API token in the "
            f"Authorization header, then retry in {retry_after} seconds.",
            headers={"Retry-After": str(retry_after)},
        )


def init_app(app: Flask) -> None:
    """Give ``app`` its own throttle, from ``SETTINGS.auth_failure_limit``.

    :raise flagadmin.config.SettingsError: the limit is not in limits' notation.
    """
    limit = rate_limit("FLAGADMIN_AUTH_FAILURE_LIMIT", app.config["SETTINGS"].auth_failure_limit)
    app.extensions[EXTENSION] = AuthFailureThrottle(limit)
