"""The resource limits flagadmin enforces (spec 2.5 ``resourceLimits``, 8.2 and 8.4), in its own
words.

ui-config shows every limit of ``FLAGADMIN_RESOURCE_LIMITS``; the four that count objects
flagadmin has are enforced when one more would be created, inside the creating write
transaction (so two creates at once cannot both pass the last free place):

==================  =====================================================================
limit               counted, and checked on
==================  =====================================================================
``featureFlags``    live flags of every project (archived ones are not counted, spec 8.4);
                    a flag create and a revive
``projects``        projects; ``flagadmin project create``
``environments``    the install's environments; ``flagadmin environment add``
``apiTokens``       admin, client and frontend API tokens neither revoked nor expired
                    (personal access tokens are not counted, spec 8.4);
                    ``POST /api/admin/api-tokens``, ``flagadmin create-token --admin``
``segments``        segments, global and of every project; ``POST /api/admin/segments``
``featureEnvironmentStrategies``
                    a flag's strategies in one environment; a strategy add
==================  =====================================================================

Per-object limits are checked where the object is written: ``segmentValues`` (the values of
one segment's constraints) and ``strategySegments`` (the segments one strategy uses) by
:mod:`flagadmin.rules.segments`; ``constraints`` (the constraints of one strategy or segment)
and ``constraintValues`` (the values of one constraint) by :mod:`flagadmin.rules.constraints`,
with :func:`over_problem`.

The other limits (action sets, signals) bound objects
flagadmin does not have: they are shown only. A create past a limit is refused with
:class:`~flagadmin.refusals.Invalid` (400) naming the limit, its value and how to raise it, as
the reference server refuses it (400, "Failed to create ...").
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from .. import config
from ..refusals import Invalid

#: What each enforced limit counts, in words for its message.
COUNTED: dict[str, str] = {
    "featureFlags": "live flags (archived flags are not counted)",
    "projects": "projects",
    "environments": "environments",
    "apiTokens": "admin, client and frontend API tokens in use (personal access tokens are not counted)",
    "segments": "segments (global and of every project)",
    "featureEnvironmentStrategies": "strategies of the flag in this environment",
}


def from_environment() -> Mapping[str, int]:
    """The limits of ``FLAGADMIN_RESOURCE_LIMITS`` in the process's environment, over the
    defaults (``config.DEFAULT_RESOURCE_LIMITS``): what the command line enforces, as it reads
    no other settings.

    :raise config.SettingsError: the variable holds an unusable value.
    """
    (setting,) = [s for s in config.SETTINGS if s.attribute == "resource_limits"]
    return setting.value(os.environ)


def limit_of(limit: str, limits: Mapping[str, int] | None) -> int:
    """The value of ``limit`` (a key of :data:`COUNTED`) in ``limits`` (None: read
    :func:`from_environment`)."""
    return (from_environment() if limits is None else limits)[limit]


def refuse_past(limit: str, existing: int, limits: Mapping[str, int] | None, what: str) -> None:
    """Refuse creating one more of what ``limit`` (a key of :data:`COUNTED`) counts when
    ``existing`` of them already reach it. ``limits``: the instance's limits (None: read
    :func:`from_environment`); ``what`` names the object being created ("flag").

    :raise Invalid: 400 naming the limit, its value, what it counts and how to raise it.
    """
    value = limit_of(limit, limits)
    if existing < value:
        return
    remedy = "Remove one first, or have" if existing else "Have"
    message = (
        f"Failed to create the {what}: the {limit} resource limit is {value}, and there are "
        f"at least {existing} {COUNTED[limit]}. {remedy} an operator raise the limit "
        f"(FLAGADMIN_RESOURCE_LIMITS='{{\"{limit}\": {max(value * 2, 1)}}}', then a restart)."
    )
    raise Invalid(message)


def over_problem(
    limit: str, count: int, limits: Mapping[str, int] | None, field: str, what: str
) -> str | None:
    """The problem (a message naming ``field``) when ``field`` holds ``count`` of ``what``
    (e.g. "constraints"), more than ``limit`` allows in one object; None when within it.
    ``limits``: the instance's resource limits (None: :func:`from_environment`)."""
    value = limit_of(limit, limits)
    if count <= value:
        return None
    return (
        f"{field}: holds {count} {what}, past the {limit} resource limit of {value}: send at most "
        f"{value}, or have an operator raise the limit (FLAGADMIN_RESOURCE_LIMITS="
        f"'{{\"{limit}\": {max(value * 2, count)}}}', then a restart)"
    )
