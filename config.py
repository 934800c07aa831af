"""Instance settings, read from ``FLAGADMIN_*`` environment variables (spec 2.5, 4.3).

Every variable is optional; :data:`ENVIRONMENT_VARIABLES` lists each with its default and
meaning, and the README repeats that table. Bad values are refused at start-up with a message
naming the variable, never at request time.
"""

from __future__ import annotations

import os
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
    ("FLAGADMIN_DATABASE", "./flagadmin.db", "SQLite database file used when --db is not given"),
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
