"""RFC 3339 timestamps as flagadmin stores and serves them, and the clock that tells the time.

One fixed format (``2026-11-22T00:13:28.676Z``: UTC, milliseconds, ``Z``) means text order is
time order, so SQL can sort and compare timestamps as plain text.

Everything that depends on the time (token expiry, the auth-failure window, potentially stale
flags, retries) asks a :class:`Clock`; each app holds one, so tests can give it another.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta


def format_rfc3339(moment: datetime) -> str:
    """Format an aware datetime as ``YYYY-MM-DDTHH:MM:SS.mmmZ`` in UTC.

    :raise ValueError: ``moment`` is naive (has no time zone).
    """
    if moment.tzinfo is None:
        raise ValueError("timestamp has no time zone")
    # isoformat ends in "+00:00" for UTC; it is several times faster than strftime
    return moment.astimezone(UTC).isoformat(timespec="milliseconds")[:-6] + "Z"


def parse_rfc3339(text: str) -> datetime:
    """Parse a stored timestamp (or any RFC 3339 one with a time zone) to an aware datetime.

    :raise ValueError: not RFC 3339, or without a time zone.
    """
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        raise ValueError(f"{text!r} has no time zone")
    return moment


class Clock:
    """The wall clock (for timestamps and expiry) and a monotonic one (for intervals).

    ``now()`` is an aware UTC datetime; ``time()`` the same moment in epoch seconds;
    ``monotonic()`` seconds that only go forward, for measuring intervals.
    """

    def now(self) -> datetime:
        """The current moment, UTC."""
        return datetime.now(UTC)

    def time(self) -> float:
        """The current moment, in seconds since the epoch."""
        return time.time()

    def monotonic(self) -> float:
        """Seconds of a clock that never goes back (its origin is arbitrary)."""
        return time.monotonic()

    def now_rfc3339(self, offset: timedelta = timedelta()) -> str:
        """The current moment (plus ``offset``) in the stored format."""
        return format_rfc3339(self.now() + offset)


#: The real clock, shared by everything that is not given another.
SYSTEM_CLOCK = Clock()


def now_rfc3339(offset: timedelta = timedelta()) -> str:
    """Return the current time of the system clock (plus ``offset``) in the stored format."""
    return SYSTEM_CLOCK.now_rfc3339(offset)
