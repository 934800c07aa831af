"""RFC 3339 timestamps as flagadmin stores and serves them: UTC, milliseconds, ``Z``.

One fixed format (``2026-11-22T00:13:28.676Z``) means text order is time order, so SQL can
sort and compare timestamps as plain text.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


def format_rfc3339(moment: datetime) -> str:
    """Format an aware datetime as ``YYYY-MM-DDTHH:MM:SS.mmmZ`` in UTC.

    :raise ValueError: ``moment`` is naive (has no time zone).
    """
    if moment.tzinfo is None:
        raise ValueError("timestamp has no time zone")
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def now_rfc3339(offset: timedelta = timedelta()) -> str:
    """Return the current time (plus ``offset``) in the stored format."""
    return format_rfc3339(datetime.now(UTC) + offset)
