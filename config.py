"""Instance settings, read from ``FLAGADMIN_*`` environment variables (spec 2.5, 4.3).

Every variable is optional; :data:`ENVIRONMENT_VARIABLES` lists each with its default and
meaning, and the README repeats that table. Bad values are refused at start-up with a message
naming the variable, never at request time.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

import limits
import orjson

from .spec import AUTHENTICATION_TYPES, POSITIVE_RESOURCE_LIMITS, RESOURCE_LIMITS

#: Resource limits served in ui-config (spec 2.5, 8.2) and their defaults (flagadmin's own:
#: the spec leaves them unsaid), in the spec's order.
DEFAULT_RESOURCE_LIMITS: dict[str, int] = dict(
    zip(
        RESOURCE_LIMITS,
        (1000, 5, 10, 5, 5, 25, 5, 5, 30, 250, 30, 50, 2000, 500, 300, 5000),
        strict=True,
    )
)

#: Failed authentications one client address may make in a moving window before it gets 429.
DEFAULT_AUTH_FAILURE_LIMIT = "30/minute"

#: (variable, default, meaning) for every setting; the README's table is this one.
ENVIRONMENT_VARIABLES: tuple[tuple[str, str, str], ...] = (
    (
        "FLAGADMIN_DATABASE",
        "./flagadmin.db",
        "the database when --db is not given: a SQLite file, or a postgresql:// URL",
    ),
    ("FLAGADMIN_ADMIN_TOKEN", "(unset)", "serve makes sure this exact admin API token is valid"),
    ("FLAGADMIN_SERVICE_URL", "http://127.0.0.1:4242", "ui-config serviceUrl: the URL users reach"),
    ("FLAGADMIN_NAME", "flagadmin", "ui-config name of this instance"),
    ("FLAGADMIN_SLOGAN", "Feature flags, administered.", "ui-config slogan"),
    (
        "FLAGADMIN_AUTH_TYPE",
        "open-source",
        "ui-config authenticationType: " + ", ".join(AUTHENTICATION_TYPES),
    ),
    ("FLAGADMIN_FRONTEND_API_ORIGINS", "*", "ui-config frontendApiOrigins, comma-separated"),
    ("FLAGADMIN_MAINTENANCE_MODE", "false", "ui-config maintenanceMode (true/false)"),
    ("FLAGADMIN_EMAIL_ENABLED", "false", "ui-config emailEnabled (true/false)"),
    (
        "FLAGADMIN_RESOURCE_LIMITS",
        "{}",
        'JSON object overriding ui-config resourceLimits, e.g. {"featureFlags": 10000}',
    ),
    (
        "FLAGADMIN_GIT_REVISION",
        "(the build's, else the checkout's, else the version)",
        "ui-config versionInfo.current.oss",
    ),
    (
        "FLAGADMIN_AUTH_FAILURE_LIMIT",
        DEFAULT_AUTH_FAILURE_LIMIT,
        "failed authentications allowed per client address (moving window) before 429, "
        "in limits notation: N/second, N/minute, N/hour or N/day",
    ),
    (
        "FLAGADMIN_CORS_ORIGINS",
        "(unset)",
        "origins allowed to call /api/admin/* from a browser (CORS), comma-separated; "
        "unset: no CORS headers at all",
    ),
)

# --- Integrations and webhook delivery (issue 8) ------------------------------------------

#: Default retry delays of a webhook delivery: its length is the number of retries.
DEFAULT_DELIVERY_RETRY_SCHEDULE = "5s,5m,30m,2h,5h,10h"

ENVIRONMENT_VARIABLES += (
    (
        "FLAGADMIN_INTEGRATIONS_ALLOW_PRIVATE",
        "false",
        "true: webhook URLs may point at private, loopback and other non-public addresses "
        "(on-prem receivers); false: they are refused when saved and when sent",
    ),
    (
        "FLAGADMIN_INTEGRATIONS_ALLOWED_HOSTS",
        "(unset)",
        "host names exempt from the non-public address check, comma-separated (exact names)",
    ),
    ("FLAGADMIN_DELIVERY_TIMEOUT", "10", "seconds one webhook attempt may take in total (0.1 to 300)"),
    (
        "FLAGADMIN_DELIVERY_RETRY_SCHEDULE",
        DEFAULT_DELIVERY_RETRY_SCHEDULE,
        "delays before each retry of a failed delivery (ms, s, m, h, d), comma-separated; "
        "its length is the number of retries, empty: no retries",
    ),
    ("FLAGADMIN_DELIVERY_WORKERS", "4", "delivery threads inside serve (0: serve delivers nothing)"),
    (
        "FLAGADMIN_DELIVERY_MAX_IN_FLIGHT",
        "1",
        "deliveries of one integration under way at once, retries waiting included (1: in order); "
        "an integration's maxInFlight overrides it",
    ),
    (
        "FLAGADMIN_DELIVERY_POLL_INTERVAL",
        "1",
        "seconds between two looks for due deliveries when nothing wakes the workers",
    ),
    (
        "FLAGADMIN_INTEGRATION_EVENTS_KEEP",
        "10000",
        "rows of the integration event log (4.1) kept per integration, newest first",
    ),
    (
        "FLAGADMIN_INTEGRATION_EVENTS_MAX_AGE",
        "P30D",
        "age (ISO 8601 duration) after which rows of the integration event log are deleted",
    ),
)

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


class SettingsError(ValueError):
    """An environment variable holds a value flagadmin cannot use; the message names it."""


@dataclass(frozen=True)
class Settings:
    """Instance settings: those served by ui-config (spec 2.5), the limit on failed
    authentications per client address and the origins allowed by CORS (empty: none)."""

    service_url: str = "http://127.0.0.1:4242"
    name: str = "flagadmin"
    slogan: str = "Feature flags, administered."
    authentication_type: str = "open-source"
    frontend_api_origins: tuple[str, ...] = ("*",)
    maintenance_mode: bool = False
    email_enabled: bool = False
    resource_limits: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_RESOURCE_LIMITS))
    git_revision: str | None = None
    auth_failure_limit: str = DEFAULT_AUTH_FAILURE_LIMIT
    cors_origins: tuple[str, ...] = ()
    # Integrations and webhook delivery (issue 8): durations in seconds.
    integrations_allow_private: bool = False
    integrations_allowed_hosts: tuple[str, ...] = ()
    delivery_timeout: float = 10.0
    delivery_retry_schedule: tuple[float, ...] = (5.0, 300.0, 1800.0, 7200.0, 18000.0, 36000.0)
    delivery_workers: int = 4
    delivery_max_in_flight: int = 1
    delivery_poll_interval: float = 1.0
    integration_events_keep: int = 10_000
    integration_events_max_age: float = 30 * 86400.0


def settings_from_env(environ: Mapping[str, str] | None = None) -> Settings:
    """Build :class:`Settings` from ``FLAGADMIN_*`` variables of ``environ`` (default: os.environ).

    :raise SettingsError: a variable holds an unusable value.
    """
    env = os.environ if environ is None else environ
    defaults = Settings()
    auth_type = env.get("FLAGADMIN_AUTH_TYPE", defaults.authentication_type)
    if auth_type not in AUTHENTICATION_TYPES:
        raise SettingsError(
            f"FLAGADMIN_AUTH_TYPE={auth_type!r}: use one of {', '.join(AUTHENTICATION_TYPES)}"
        )
    origins = env.get("FLAGADMIN_FRONTEND_API_ORIGINS")
    return Settings(
        service_url=env.get("FLAGADMIN_SERVICE_URL", defaults.service_url),
        name=env.get("FLAGADMIN_NAME", defaults.name),
        slogan=env.get("FLAGADMIN_SLOGAN", defaults.slogan),
        authentication_type=auth_type,
        frontend_api_origins=(
            defaults.frontend_api_origins
            if origins is None
            else tuple(o.strip() for o in origins.split(",") if o.strip())
        ),
        maintenance_mode=_boolean(env, "FLAGADMIN_MAINTENANCE_MODE", defaults.maintenance_mode),
        email_enabled=_boolean(env, "FLAGADMIN_EMAIL_ENABLED", defaults.email_enabled),
        resource_limits=_resource_limits(env.get("FLAGADMIN_RESOURCE_LIMITS")),
        git_revision=env.get("FLAGADMIN_GIT_REVISION") or None,
        auth_failure_limit=rate_limit(
            "FLAGADMIN_AUTH_FAILURE_LIMIT",
            env.get("FLAGADMIN_AUTH_FAILURE_LIMIT", DEFAULT_AUTH_FAILURE_LIMIT),
        ),
        cors_origins=_origins("FLAGADMIN_CORS_ORIGINS", env.get("FLAGADMIN_CORS_ORIGINS")),
        **_delivery_settings(env, defaults),
    )


def rate_limit(name: str, raw: str) -> str:
    """Return ``raw`` stripped once it parses as one limit in limits' notation ("30/minute").

    :raise SettingsError: it does not parse, or allows nothing; the message names ``name``.
    """
    try:
        (item,) = limits.parse_many(raw.strip())
    except ValueError as exc:
        raise SettingsError(
            f"{name}={raw!r}: use one limit like 30/minute (N per second, minute, hour or day)"
        ) from exc
    if item.amount < 1:
        raise SettingsError(f"{name}={raw!r}: the limit must allow at least 1")
    return raw.strip()


def _origins(name: str, raw: str | None) -> tuple[str, ...]:
    """Parse a comma-separated list of origins (``scheme://host[:port]``) or ``*``."""
    if raw is None:
        return ()
    origins = tuple(o.strip().rstrip("/") for o in raw.split(",") if o.strip())
    for origin in origins:
        scheme, sep, rest = origin.partition("://")
        if origin != "*" and (scheme not in ("http", "https") or not sep or not rest or "/" in rest):
            raise SettingsError(
                f"{name}: {origin!r} is not an origin; use * or scheme://host[:port], comma-separated"
            )
    return origins


def _boolean(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = env.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise SettingsError(f"{name}={raw!r}: use true or false")


def _resource_limits(raw: str | None) -> dict[str, int]:
    limits = dict(DEFAULT_RESOURCE_LIMITS)
    if raw is None or not raw.strip():
        return limits
    try:
        overrides = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise SettingsError(f"FLAGADMIN_RESOURCE_LIMITS is not JSON: {exc}") from exc
    if not isinstance(overrides, dict):
        raise SettingsError("FLAGADMIN_RESOURCE_LIMITS must be a JSON object of name: integer")
    for name, value in overrides.items():
        if name not in limits:
            raise SettingsError(
                f"FLAGADMIN_RESOURCE_LIMITS: unknown limit {name!r}; known: {', '.join(limits)}"
            )
        low = 1 if name in POSITIVE_RESOURCE_LIMITS else 0
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value < 2**31:
            raise SettingsError(f"FLAGADMIN_RESOURCE_LIMITS: {name} must be an integer >= {low}")
        limits[name] = value
    return limits


# --- Integrations and webhook delivery (issue 8) ------------------------------------------

_DURATION = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ms|s|m|h|d)?")
_DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, None: 1.0}
#: The longest single retry delay accepted (a week).
MAX_RETRY_DELAY_S = 7 * 86400.0
_HOST_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\]")


def _delivery_settings(env: Mapping[str, str], defaults: Settings) -> dict[str, object]:
    """The delivery fields of :class:`Settings` from ``FLAGADMIN_INTEGRATION*`` and
    ``FLAGADMIN_DELIVERY_*`` variables.

    :raise SettingsError: a variable holds an unusable value; the message names it.
    """
    return {
        "integrations_allow_private": _boolean(
            env, "FLAGADMIN_INTEGRATIONS_ALLOW_PRIVATE", defaults.integrations_allow_private
        ),
        "integrations_allowed_hosts": _hosts(
            "FLAGADMIN_INTEGRATIONS_ALLOWED_HOSTS", env.get("FLAGADMIN_INTEGRATIONS_ALLOWED_HOSTS")
        ),
        "delivery_timeout": _seconds(
            env, "FLAGADMIN_DELIVERY_TIMEOUT", defaults.delivery_timeout, low=0.1, high=300.0
        ),
        "delivery_retry_schedule": retry_schedule(
            "FLAGADMIN_DELIVERY_RETRY_SCHEDULE",
            env.get("FLAGADMIN_DELIVERY_RETRY_SCHEDULE", DEFAULT_DELIVERY_RETRY_SCHEDULE),
        ),
        "delivery_workers": _integer(env, "FLAGADMIN_DELIVERY_WORKERS", defaults.delivery_workers, 0, 64),
        "delivery_max_in_flight": _integer(
            env, "FLAGADMIN_DELIVERY_MAX_IN_FLIGHT", defaults.delivery_max_in_flight, 1, 100
        ),
        "delivery_poll_interval": _seconds(
            env, "FLAGADMIN_DELIVERY_POLL_INTERVAL", defaults.delivery_poll_interval, low=0.01, high=3600.0
        ),
        "integration_events_keep": _integer(
            env, "FLAGADMIN_INTEGRATION_EVENTS_KEEP", defaults.integration_events_keep, 1, 10**9
        ),
        "integration_events_max_age": iso_duration(
            "FLAGADMIN_INTEGRATION_EVENTS_MAX_AGE", env.get("FLAGADMIN_INTEGRATION_EVENTS_MAX_AGE")
        )
        if env.get("FLAGADMIN_INTEGRATION_EVENTS_MAX_AGE") is not None
        else defaults.integration_events_max_age,
    }


def retry_schedule(name: str, raw: str) -> tuple[float, ...]:
    """Parse a retry schedule such as ``5s,5m,30m,2h,5h,10h`` (units ms, s, m, h, d; a bare
    number is seconds) into delays in seconds; an empty text is no retries.

    :raise SettingsError: an entry is not a duration, or longer than a week; names ``name``.
    """
    delays = []
    for entry in (e.strip() for e in raw.split(",")):
        if not entry and not raw.strip():
            break
        match = _DURATION.fullmatch(entry.lower())
        if match is None:
            raise SettingsError(
                f"{name}={raw!r}: {entry!r} is not a duration; use numbers with a unit "
                "(ms, s, m, h, d), comma-separated, e.g. 5s,5m,30m,2h,5h,10h"
            )
        seconds = float(match.group(1)) * _DURATION_UNITS[match.group(2)]
        if seconds > MAX_RETRY_DELAY_S:
            raise SettingsError(f"{name}={raw!r}: {entry!r} is longer than a week")
        delays.append(seconds)
    if len(delays) > 50:
        raise SettingsError(f"{name}={raw!r}: at most 50 retries")
    return tuple(delays)


#: The longest duration :func:`iso_duration` returns: a thousand years (a retention age beyond
#: it keeps everything all the same, and stays a valid offset from today's date).
MAX_DURATION_S = 1000 * 365.2425 * 86400


def iso_duration(name: str, raw: str) -> float:
    """Parse an ISO 8601 duration (``P30D``, ``PT12H``, ``P2Y``) into seconds, at least one
    second and at most :data:`MAX_DURATION_S` (longer ones are taken as that). Years and months
    count their average length (365.2425 and 30.436875 days), whatever the calendar.

    :raise SettingsError: not a duration, or shorter than a second; the message names ``name``.
    """
    import isodate

    try:
        duration = isodate.parse_duration(raw.strip().upper())
        if isinstance(duration, isodate.Duration):
            months = float(duration.years) * 12 + float(duration.months)
            seconds = duration.tdelta.total_seconds() + months * (365.2425 / 12) * 86400
        else:
            seconds = duration.total_seconds()
    except (isodate.ISO8601Error, ValueError, OverflowError) as exc:
        raise SettingsError(
            f"{name}={raw!r}: use an ISO 8601 duration such as P30D (30 days) or PT12H (12 hours)"
        ) from exc
    if seconds < 1:
        raise SettingsError(f"{name}={raw!r}: the duration must be at least one second")
    return min(seconds, MAX_DURATION_S)


def _seconds(env: Mapping[str, str], name: str, default: float, *, low: float, high: float) -> float:
    raw = env.get(name)
    if raw is None:
        return default
    try:
        value = float(raw.strip())
    except ValueError:
        value = float("nan")
    if not low <= value <= high:
        raise SettingsError(f"{name}={raw!r}: use a number of seconds from {low:g} to {high:g}")
    return value


def _integer(env: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    raw = env.get(name)
    if raw is None:
        return default
    text = raw.strip()
    if not text.isdigit() or not low <= int(text) <= high:
        raise SettingsError(f"{name}={raw!r}: use a whole number from {low} to {high}")
    return int(text)


def _hosts(name: str, raw: str | None) -> tuple[str, ...]:
    """Comma-separated host names (or IP addresses), lower-cased."""
    if raw is None:
        return ()
    hosts = tuple(h.strip().lower() for h in raw.split(",") if h.strip())
    for host in hosts:
        if not _HOST_NAME.fullmatch(host):
            raise SettingsError(f"{name}: {host!r} is not a host name; give names like hooks.example.com")
    return hosts
