"""Constraints: the conditions on the context that a strategy (or a segment) adds, checked as the
reference server checks them (Unleash 8.2.0's ``constraintSchema``) and stored in its wire shape.

A constraint is ``{contextName, operator, values, value, inverted, caseInsensitive}``:

==============================================  ==========================================
operator                                        takes
==============================================  ==========================================
``IN NOT_IN STR_STARTS_WITH STR_ENDS_WITH       ``values``: at least one string of 1 to 100
STR_CONTAINS``                                  characters
``NUM_EQ NUM_GT NUM_GTE NUM_LT NUM_LTE``        ``value``: a number, written as a string
``DATE_AFTER DATE_BEFORE``                      ``value``: an RFC 3339 date-time with a zone
``SEMVER_EQ SEMVER_GT SEMVER_GTE SEMVER_LT      ``value``: a strict semantic version (2.0.0:
SEMVER_LTE``                                    no ``v`` before it)
``REGEX``                                       ``value``: a pattern RE2 compiles (no
                                                look-around, no back-reference); never
                                                ``inverted``
==============================================  ==========================================

Every ``value`` is 1 to 100 characters. ``inverted`` and ``caseInsensitive`` are true or false
(default false). ``contextName`` is any name of 1 to 100 characters: context fields need not be
declared. The stored constraint always has ``values`` (a list; ``[]`` for the single-value
operators, whose SDKs read ``value``) and has ``value`` only for a single-value operator: a
``value`` sent with a list operator, or ``values`` with a single-value one, is checked and not
kept, so that what SDKs receive has one meaning.

The resource limits ``constraints`` (constraints in one strategy or segment) and
``constraintValues`` (values in one constraint) bound what is stored (``FLAGADMIN_RESOURCE_LIMITS``;
ui-config shows them); as the reference server does, a list already stored past a limit that has
since been lowered may be stored again as long as it does not grow.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import re2

from ..flags.limits import over_problem
from ..records import as_json, json_kind
from ..refusals import Invalid

LIST_OPERATORS: tuple[str, ...] = ("IN", "NOT_IN", "STR_STARTS_WITH", "STR_ENDS_WITH", "STR_CONTAINS")
NUMBER_OPERATORS: tuple[str, ...] = ("NUM_EQ", "NUM_GT", "NUM_GTE", "NUM_LT", "NUM_LTE")
DATE_OPERATORS: tuple[str, ...] = ("DATE_AFTER", "DATE_BEFORE")
SEMVER_OPERATORS: tuple[str, ...] = ("SEMVER_EQ", "SEMVER_GT", "SEMVER_GTE", "SEMVER_LT", "SEMVER_LTE")
#: Every operator the reference server accepts, in its document's order of kinds (no
#: ``IN_CIDR``: SDKs evaluate it, the reference server does not store it).
OPERATORS: tuple[str, ...] = (
    *LIST_OPERATORS,
    *NUMBER_OPERATORS,
    *DATE_OPERATORS,
    *SEMVER_OPERATORS,
    "REGEX",
)
#: The operators that read ``value`` rather than ``values``.
SINGLE_VALUE_OPERATORS = frozenset((*NUMBER_OPERATORS, *DATE_OPERATORS, *SEMVER_OPERATORS, "REGEX"))

#: The members a constraint may have (the reference schema has ``additionalProperties: false``).
MEMBERS: tuple[str, ...] = ("contextName", "operator", "values", "value", "inverted", "caseInsensitive")

#: The length of a context name, of each of ``values`` and of ``value``, in characters.
LENGTH = (1, 100)

#: A number as JSON writes one (what the SDKs parse): no sign but ``-``, no blank, no ``_``.
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
#: RFC 3339 section 5.6's date-time: a full date, ``T`` (or ``t``), a time, a zone.
_DATE_TIME = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?(?:[Zz]|[+-][0-9]{2}:[0-9]{2})"
)
#: A version as Semantic Versioning 2.0.0's grammar has it (major.minor.patch, numbers without a
#: leading zero, then an optional pre-release and build), strict: no ``v``, no ``=``, no blank.
_SEMVER = re.compile(
    r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)"
    r"(?:-((?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)(?:\.(?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*))*))?"
    r"(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?"
)

_RE2_OPTIONS = re2.Options()
# a pattern that does not compile is the caller's mistake, answered with 400: not a server log line
_RE2_OPTIONS.log_errors = False


def normalise(
    constraints: Any,
    limits: Mapping[str, int] | None,
    *,
    field: str = "constraints",
    existing: list[dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """``constraints`` (a request's list, as parsed from JSON; None: none) checked and in the
    stored shape: ``[{contextName, operator, values, value?, inverted, caseInsensitive}]``,
    in the order given. ``limits``: the instance's resource limits (None:
    ``FLAGADMIN_RESOURCE_LIMITS``); ``field`` names the list in messages (``constraints``);
    ``existing``: the list stored before (an update), so that a list past a lowered limit may
    be stored again as long as it does not grow.

    :raise Invalid: 400; one detail per problem, each naming its field
        (``constraints.2.values.0: ...``), nothing stored.
    """
    if constraints is None:
        return []
    if not isinstance(constraints, list):
        problem = f"{field}: must be an array of constraint objects; got {json_kind(constraints)}"
        raise Invalid(problem, details=[problem])
    existing = existing or []
    problems: list[str] = []
    if len(constraints) > len(existing):
        problem = over_problem("constraints", len(constraints), limits, field, "constraints")
        if problem:
            raise Invalid(problem, details=[problem])
    same_length = len(constraints) == len(existing)
    stored = []
    for index, constraint in enumerate(constraints):
        before = existing[index] if same_length else None
        checked = _constraint(constraint, f"{field}.{index}", limits, before, problems)
        if checked is not None:
            stored.append(checked)
    if problems:
        raise Invalid(f"Invalid {field}: " + "; ".join(problems[:5]), details=problems)
    return stored


def _constraint(
    constraint: Any,
    where: str,
    limits: Mapping[str, int] | None,
    before: dict[str, Any] | None,
    problems: list[str],
) -> dict[str, Any] | None:
    """One constraint checked and stored, or None with its problems added to ``problems``."""
    if not isinstance(constraint, dict):
        problems.append(f"{where}: must be a constraint object; got {json_kind(constraint)}")
        return None
    count = len(problems)
    unknown = [key for key in constraint if key not in MEMBERS]
    if unknown:
        problems.append(
            f"{where}.{unknown[0][:100]}: is unknown here (a constraint has {', '.join(MEMBERS)})"
        )
    context_name = constraint.get("contextName")
    if context_name is None:
        problems.append(f"{where}.contextName: is required: the name of a context field, e.g. userId")
    else:
        _text(context_name, f"{where}.contextName", problems)
    operator = constraint.get("operator")
    if operator not in OPERATORS:
        sent = "it is missing" if operator is None else f"got {json_kind(operator)}"
        problems.append(f"{where}.operator: must be one of {', '.join(OPERATORS)}; {sent}")
        operator = None  # (whatever was sent, maybe not even hashable)
    flags = {}
    for name in ("inverted", "caseInsensitive"):
        flag = constraint.get(name, False)
        if not isinstance(flag, bool):
            problems.append(f"{where}.{name}: must be true or false; got {json_kind(flag)}")
        flags[name] = flag is True
    values = _values(constraint.get("values"), f"{where}.values", limits, before, problems)
    value = constraint.get("value")
    if operator in SINGLE_VALUE_OPERATORS:
        _single_value(operator, value, where, flags["inverted"], problems)
    elif operator in LIST_OPERATORS:
        if value is not None and not isinstance(value, str):
            problems.append(f"{where}.value: must be a string; got {json_kind(value)}")
        if values is not None and not values:
            problems.append(
                f"{where}.values: {operator} needs at least one value (strings of {LENGTH[0]} to "
                f"{LENGTH[1]} characters)"
            )
    if len(problems) > count:
        return None
    stored: dict[str, Any] = {"contextName": context_name, "operator": operator}
    if operator in SINGLE_VALUE_OPERATORS:
        stored["values"] = []
        stored["value"] = value
    else:
        stored["values"] = values
    stored["inverted"] = flags["inverted"]
    stored["caseInsensitive"] = flags["caseInsensitive"]
    return stored


def _text(value: Any, where: str, problems: list[str]) -> bool:
    """Whether ``value`` is a string of :data:`LENGTH` characters (else a problem is added)."""
    low, high = LENGTH
    if not isinstance(value, str):
        problems.append(f"{where}: must be a string of {low} to {high} characters; got {json_kind(value)}")
        return False
    if not low <= len(value) <= high:
        problems.append(f"{where}: must be {low} to {high} characters long; it has {len(value)}")
        return False
    return True


def _values(
    values: Any,
    where: str,
    limits: Mapping[str, int] | None,
    before: dict[str, Any] | None,
    problems: list[str],
) -> list[str] | None:
    """``values`` checked (None, or absent: ``[]``); None when it is not a list of strings of
    the right length, with its problems added."""
    if values is None:
        return []
    if not isinstance(values, list):
        problems.append(f"{where}: must be an array of strings; got {json_kind(values)}")
        return None
    kept_before = len(before.get("values") or []) if isinstance(before, dict) else 0
    if len(values) > kept_before:
        problem = over_problem("constraintValues", len(values), limits, where, "values")
        if problem:
            problems.append(problem)
            return None
    count = len(problems)
    for index, value in enumerate(values):
        _text(value, f"{where}.{index}", problems)
        if len(problems) - count >= 5:
            break
    return values if len(problems) == count else None


def _single_value(operator: str, value: Any, where: str, inverted: bool, problems: list[str]) -> None:
    """Check the ``value`` of a single-value ``operator`` (adding its problems)."""
    field = f"{where}.value"
    kind = (
        'a number written as a string, e.g. "42" or "1.5"'
        if operator in NUMBER_OPERATORS
        else 'an RFC 3339 date-time with a time zone, e.g. "2026-01-31T12:00:00Z"'
        if operator in DATE_OPERATORS
        else 'a semantic version, e.g. "2.0.0" or "1.4.0-beta.1"'
        if operator in SEMVER_OPERATORS
        else 'a regular expression RE2 compiles, e.g. "^app-[0-9]+$"'
    )
    if value is None:
        problems.append(f"{field}: is required: {operator} compares with one value, {kind}")
        return
    if not _text(value, field, problems):
        return
    if operator in NUMBER_OPERATORS:
        if not _NUMBER.fullmatch(value):
            problems.append(f"{field}: must be {kind}; got {as_json(value)}")
    elif operator in DATE_OPERATORS:
        if not _is_date_time(value):
            problems.append(f"{field}: must be {kind}; got {as_json(value)}")
    elif operator in SEMVER_OPERATORS:
        if not _SEMVER.fullmatch(value):
            hint = " (no v before it)" if value[:1] in ("v", "V", "=") else ""
            problems.append(
                f'{field}: must be a strict semantic version{hint}, e.g. "2.0.0"; got {as_json(value)}'
            )
    else:
        if inverted:
            problems.append(
                f"{where}.inverted: a REGEX constraint cannot be inverted (as in the reference server); "
                "write the pattern that matches what you want instead"
            )
        error = _re2_error(value)
        if error:
            problems.append(
                f"{field}: RE2 cannot compile {as_json(value)}: {error} (RE2 has no look-around and "
                "no back-reference)"
            )


def _is_date_time(value: str) -> bool:
    """Whether ``value`` is an RFC 3339 date-time with a zone, and a real moment."""
    if not _DATE_TIME.fullmatch(value):
        return False
    try:
        datetime.fromisoformat(value.upper().replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def _re2_error(pattern: str) -> str | None:
    """Why RE2 cannot compile ``pattern`` (its own words), or None when it can."""
    try:
        re2.compile(pattern, options=_RE2_OPTIONS)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        return reason.decode("utf-8", "replace") if isinstance(reason, bytes) else str(reason)
    return None
