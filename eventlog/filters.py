"""The search's filters in the reference server's syntax, read into store conditions.

A filter is ``OPERATOR:values``: ``IS:value`` or ``IS_ANY_OF:a,b,c`` (as the reference, both
take a comma-separated list, and ``IS`` with several values matches any of them); the dates
``from`` and ``to`` are ``IS:yyyy-MM-dd`` (UTC days, both included). Each pattern below is the
one the OpenAPI document gives for its parameter, and what is accepted is exactly what matches
it: anything else is refused with 400 naming the parameter and what it takes. A value that
names nothing (an unknown flag, project, type or id) matches no event, as in the reference.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..records import as_json
from ..refusals import Invalid
from ..store.event_log import Conditions

#: The operators of the search's filters (the reference's parameter patterns name these two).
OPERATORS = ("IS", "IS_ANY_OF")

#: Values one filter takes at most.
MAX_VALUES = 1000

#: Characters of the free-text ``query`` at most.
MAX_QUERY = 200

#: Filters of text values (flag names, projects, types, environments): values without commas.
TEXT_PATTERN = r"^(IS|IS_ANY_OF):[^,]+(,[^,]+){0,999}$"
#: Filters of ids (events, groups): decimal integers.
ID_PATTERN = r"^(IS|IS_ANY_OF):[0-9]+(,[0-9]+){0,999}$"
#: ``createdBy``: user ids, decimal integers (negative for an admin API token's -42 and
#: flagadmin's own -1337, as the reference records them).
USER_ID_PATTERN = r"^(IS|IS_ANY_OF):-?[0-9]+(,-?[0-9]+){0,999}$"
#: ``from`` and ``to``: ``IS:`` and a calendar date (leap days only in leap years).
DATE_PATTERN = (
    r"^IS:([0-9]{4}-((0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01])|(0[469]|11)-(0[1-9]|[12][0-9]|30)"
    r"|02-(0[1-9]|1[0-9]|2[0-8]))|([0-9]{2}(0[48]|[2468][048]|[13579][26])"
    r"|(0[48]|[2468][048]|[13579][26])00)-02-29)$"
)

_TEXT, _ID, _USER_ID, _DATE = (
    re.compile(p) for p in (TEXT_PATTERN, ID_PATTERN, USER_ID_PATTERN, DATE_PATTERN)
)
_OPERATOR = re.compile(r"^([^:,]{1,40}):")

#: The largest id a store column holds; a larger one names no event.
MAX_ID = 2**63 - 1

#: ``to``'s last day: no day after it to bound by.
_LAST_DAY = "9999-12-31"


@dataclass(frozen=True)
class Filters:
    """The search's parameters as the query string gives them (None: not given)."""

    query: str | None = None
    id: str | None = None
    groupId: str | None = None
    feature: str | None = None
    project: str | None = None
    type: str | None = None
    createdBy: str | None = None
    environment: str | None = None
    from_: str | None = None
    to: str | None = None


def conditions(filters: Filters) -> Conditions:
    """The store conditions of ``filters``.

    :raise Invalid: a filter's operator is not ``IS`` or ``IS_ANY_OF``, a value is empty or
        not of the filter's kind, a filter has more than :data:`MAX_VALUES` values, a date is
        not a day of the calendar, ``query`` is longer than :data:`MAX_QUERY` or holds a NUL
        character; every problem is listed.
    """
    problems: list[str] = []

    def values(name: str, text: str | None, pattern: re.Pattern, kind: str) -> tuple[str, ...] | None:
        if text is None:
            return None
        if "\x00" in text:
            problems.append(f"{name}: holds a NUL character, which no value can hold.")
            return None
        if _DATE is not pattern:
            operator = _OPERATOR.match(text)
            if operator is None or operator.group(1) not in OPERATORS:
                said = f"operator {as_json(operator.group(1))}" if operator else "no operator"
                problems.append(
                    f"{name}: {said}; write IS:value or IS_ANY_OF:value,value,... "
                    f"(the operators are {', '.join(OPERATORS)}), with {kind}."
                )
                return None
        if pattern.fullmatch(text) is None:
            problems.append(f"{name}: {as_json(text)} is not {kind_of(name, kind)}.")
            return None
        return tuple(text.split(":", 1)[1].split(","))

    def kind_of(name: str, kind: str) -> str:
        if name in ("from", "to"):
            return "IS: and a day of the calendar, yyyy-MM-dd (e.g. IS:2026-01-31)"
        return f"IS:value or IS_ANY_OF:value,value,... with {kind}, at most {MAX_VALUES} values"

    ids = values("id", filters.id, _ID, "event ids (decimal integers)")
    groups = values("groupId", filters.groupId, _ID, "group ids (decimal integers)")
    features = values("feature", filters.feature, _TEXT, "flag names (no commas, none empty)")
    projects = values("project", filters.project, _TEXT, "project ids (no commas, none empty)")
    types = values("type", filters.type, _TEXT, "event types (no commas, none empty)")
    creators = values("createdBy", filters.createdBy, _USER_ID, "user ids (decimal integers)")
    environments = values(
        "environment", filters.environment, _TEXT, "environment names (no commas, none empty)"
    )
    since = values("from", filters.from_, _DATE, "a day")
    until = values("to", filters.to, _DATE, "a day")
    text = filters.query
    if text is not None and len(text) > MAX_QUERY:
        problems.append(f"query: {len(text)} characters; it takes at most {MAX_QUERY}.")
    elif text is not None and "\x00" in text:
        problems.append("query: holds a NUL character, which no text can hold.")
    if problems:
        raise Invalid("Invalid search: " + " ".join(problems), details=problems)
    return Conditions(
        ids=_numbers(ids),
        groups=_numbers(groups),
        features=features,
        projects=projects,
        types=types,
        creators=_numbers(creators),
        environments=environments,
        since=since[0] if since else None,
        before=_day_after(until[0]) if until and until[0] != _LAST_DAY else None,
        text=text.lower() if text else None,
    )


def _numbers(values: tuple[str, ...] | None) -> tuple[int, ...] | None:
    """Decimal texts as integers; one too large for a store column is left out (it names no
    row; a filter left with none matches nothing)."""
    if values is None:
        return None
    return tuple(n for n in (int(v) for v in values) if -MAX_ID <= n <= MAX_ID)


def _day_after(day: str) -> str:
    """The day after ``day`` (``yyyy-MM-dd``, a day of the calendar before 9999-12-31)."""
    year, month, date = (int(part) for part in day.split("-"))
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    last = (31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)[month - 1]
    if date < last:
        date += 1
    elif month < 12:
        month, date = month + 1, 1
    else:
        year, month, date = year + 1, 1, 1
    return f"{year:04d}-{month:02d}-{date:02d}"
