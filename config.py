"""Instance settings, read from ``FLAGADMIN_*`` environment variables (spec 2.5, 4.3).

Each setting is declared once, as one :class:`Setting` in :data:`SETTINGS`: its variable, its
default (as text, read exactly as the variable would be), how its text is parsed, and what it
means. :class:`Settings`, :func:`settings_from_env` and the table of ``docs/settings.md``
(:func:`settings_table`; ``python -m flagadmin.config --write docs/settings.md`` rewrites it)
are all built from that list. Every variable is optional. Bad values are refused at start-up
with a :class:`SettingsError` naming the variable, never at request time.

The module is longer than most (about 600 lines) because it is the one place settings live:
the parsers, then the declarations (half the file, one :class:`Setting` each), then what is
built from them. Splitting it would put a setting's parser and its declaration apart.
"""

from __future__ import annotations

import dataclasses
import os
import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

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

#: The database when neither ``--db`` nor ``FLAGADMIN_DATABASE`` names one: a SQLite file in
#: the working folder.
DEFAULT_DATABASE = "flagadmin.db"

#: The longest single retry delay accepted (a week).
MAX_RETRY_DELAY_S = 7 * 86400.0

#: The longest duration :func:`iso_duration` returns: a thousand years (a retention age beyond
#: it keeps everything all the same, and stays a valid offset from today's date).
MAX_DURATION_S = 1000 * 365.2425 * 86400


class SettingsError(ValueError):
    """An environment variable holds a value flagadmin cannot use; the message names it."""


# --- Parsers: (variable, text) -> value; each raises SettingsError naming the variable --------

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def _text(name: str, raw: str) -> str:
    return raw


def _text_or_none(name: str, raw: str) -> str | None:
    return raw or None


def _boolean(name: str, raw: str) -> bool:
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise SettingsError(f"{name}={raw!r}: use true or false")


def _authentication_type(name: str, raw: str) -> str:
    if raw not in AUTHENTICATION_TYPES:
        raise SettingsError(f"{name}={raw!r}: use one of {', '.join(AUTHENTICATION_TYPES)}")
    return raw


def _comma_list(name: str, raw: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in raw.split(",") if item.strip())


def _origins(name: str, raw: str) -> tuple[str, ...]:
    """A comma-separated list of origins (``scheme://host[:port]``) or ``*``."""
    origins = tuple(o.strip().rstrip("/") for o in raw.split(",") if o.strip())
    for origin in origins:
        scheme, sep, rest = origin.partition("://")
        if origin != "*" and (scheme not in ("http", "https") or not sep or not rest or "/" in rest):
            raise SettingsError(
                f"{name}: {origin!r} is not an origin; use * or scheme://host[:port], comma-separated"
            )
    return origins


_HOST_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\]")


def _hosts(name: str, raw: str) -> tuple[str, ...]:
    """Comma-separated host names (or IP addresses), lower-cased."""
    hosts = tuple(h.strip().lower() for h in raw.split(",") if h.strip())
    for host in hosts:
        if not _HOST_NAME.fullmatch(host):
            raise SettingsError(f"{name}: {host!r} is not a host name; give names like hooks.example.com")
    return hosts


def _listen_address(name: str, raw: str) -> tuple[str, int] | None:
    """``host:port`` (an IPv6 address in brackets: ``[::1]:9100``) as ``(host, port)``; empty: None."""
    text = raw.strip()
    if not text:
        return None
    host, _, port = text.rpartition(":")
    if not (port.isdigit() and 1 <= int(port) <= 65535 and _HOST_NAME.fullmatch(host)):
        raise SettingsError(f"{name}={raw!r}: use host:port, e.g. 127.0.0.1:9100 or [::1]:9100")
    return host.removeprefix("[").removesuffix("]"), int(port)


def _resource_limits(name: str, raw: str) -> dict[str, int]:
    """A JSON object of limit name: integer, laid over :data:`DEFAULT_RESOURCE_LIMITS`."""
    limits = dict(DEFAULT_RESOURCE_LIMITS)
    if not raw.strip():
        return limits
    try:
        overrides = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise SettingsError(f"{name} is not JSON: {exc}") from exc
    if not isinstance(overrides, dict):
        raise SettingsError(f"{name} must be a JSON object of name: integer")
    for limit, value in overrides.items():
        if limit not in limits:
            raise SettingsError(f"{name}: unknown limit {limit!r}; known: {', '.join(limits)}")
        low = 1 if limit in POSITIVE_RESOURCE_LIMITS else 0
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value < 2**31:
            raise SettingsError(f"{name}: {limit} must be an integer >= {low}")
        limits[limit] = value
    return limits


def _seconds(low: float, high: float) -> Callable[[str, str], float]:
    """A parser of a number of seconds from ``low`` to ``high``."""

    def parse(name: str, raw: str) -> float:
        try:
            value = float(raw.strip())
        except ValueError:
            value = float("nan")
        if not low <= value <= high:
            raise SettingsError(f"{name}={raw!r}: use a number of seconds from {low:g} to {high:g}")
        return value

    return parse


def _integer(low: int, high: int) -> Callable[[str, str], int]:
    """A parser of a whole number from ``low`` to ``high``."""

    def parse(name: str, raw: str) -> int:
        text = raw.strip()
        if not text.isdigit() or not low <= int(text) <= high:
            raise SettingsError(f"{name}={raw!r}: use a whole number from {low} to {high}")
        return int(text)

    return parse


class RateLimit(NamedTuple):
    """At most ``amount`` events in any ``window_s`` seconds."""

    amount: int
    window_s: float


_RATE = re.compile(r"\s*([0-9]+)\s*(?:/|\s*per\s*)\s*([0-9]+)?\s*([a-z]+)\s*", re.IGNORECASE)
_RATE_WINDOWS_S = {"second": 1, "minute": 60, "hour": 3600, "day": 86400, "month": 30 * 86400}
_RATE_WINDOWS_S["year"] = 12 * _RATE_WINDOWS_S["month"]


def parse_rate_limit(name: str, raw: str) -> RateLimit:
    """Parse one limit such as ``30/minute``, ``30 per minute`` or ``5/2 hours`` (units second,
    minute, hour, day, month of 30 days, year of 360 days; plurals too).

    :raise SettingsError: it does not parse, or allows nothing; the message names ``name``.
    """
    match = _RATE.fullmatch(raw)
    unit = match.group(3).lower() if match else ""
    if unit not in _RATE_WINDOWS_S and unit.endswith("s"):
        unit = unit[:-1]
    if match is None or unit not in _RATE_WINDOWS_S:
        raise SettingsError(
            f"{name}={raw!r}: use one limit like 30/minute (N per second, minute, hour or day)"
        )
    amount, multiples = int(match.group(1)), int(match.group(2) or 0) or 1
    if amount < 1:
        raise SettingsError(f"{name}={raw!r}: the limit must allow at least 1")
    return RateLimit(amount, float(_RATE_WINDOWS_S[unit] * multiples))


def rate_limit(name: str, raw: str) -> str:
    """Return ``raw`` stripped once it parses as one limit (:func:`parse_rate_limit`).

    :raise SettingsError: it does not parse, or allows nothing; the message names ``name``.
    """
    parse_rate_limit(name, raw)
    return raw.strip()


_DURATION = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ms|s|m|h|d)?")
_DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, None: 1.0}


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


def iso_duration(name: str, raw: str) -> float:
    """Parse an ISO 8601 duration (``P30D``, ``PT12H``, ``P2Y``) into seconds, at least one
    second and at most :data:`MAX_DURATION_S` (longer ones are taken as that). Years and months
    count their average length (365.2425 and 30.436875 days), whatever the calendar.

    The whole text is the duration: a space or line break anywhere (a value that only looks
    valid, such as ``"P30D\n"``) is refused, as is anything isodate's own pattern (whose ``$``
    lets a trailing newline through) would read past.

    :raise SettingsError: not a duration, or shorter than a second; the message names ``name``.
    """
    import isodate

    accepted = "use an ISO 8601 duration such as P30D (30 days) or PT12H (12 hours)"
    if any(c.isspace() or not c.isprintable() for c in raw):
        raise SettingsError(f"{name}={raw!r}: {accepted}, with no spaces or line breaks")
    try:
        duration = isodate.parse_duration(raw.upper())
        if isinstance(duration, isodate.Duration):
            months = float(duration.years) * 12 + float(duration.months)
            seconds = duration.tdelta.total_seconds() + months * (365.2425 / 12) * 86400
        else:
            seconds = duration.total_seconds()
    except (isodate.ISO8601Error, ValueError, OverflowError) as exc:
        raise SettingsError(f"{name}={raw!r}: {accepted}") from exc
    if seconds < 1:
        raise SettingsError(f"{name}={raw!r}: the duration must be at least one second")
    return min(seconds, MAX_DURATION_S)


# --- The declarations ---------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Setting:
    """One ``FLAGADMIN_*`` variable.

    ``default`` is the text the variable is read as when it is not set ("" reads as unset: every
    setting whose default is "" behaves the same unset and empty). ``parse(variable, text)``
    turns a text into the value, or raises :class:`SettingsError` naming the variable.
    ``attribute`` is the :class:`Settings` field that holds the value, of type ``type``; None
    for a variable that the command line reads itself. ``shown`` replaces the default in the
    table when the text alone would not say what happens.
    """

    variable: str
    default: str
    parse: Callable[[str, str], Any]
    help: str
    attribute: str | None = None
    type: Any = str
    shown: str | None = None

    def value(self, environ: Mapping[str, str]) -> Any:
        """This setting's value in ``environ`` (its default when the variable is not set).

        :raise SettingsError: the variable holds an unusable value.
        """
        raw = environ.get(self.variable)
        return self.parse(self.variable, self.default if raw is None else raw)


#: Every setting, in the order of the documentation's table.
SETTINGS: tuple[Setting, ...] = (
    Setting(
        "FLAGADMIN_DATABASE",
        DEFAULT_DATABASE,
        _text,
        "the database when --db is not given: a SQLite file (relative to the working folder), "
        "or a postgresql:// URL",
    ),
    Setting(
        "FLAGADMIN_ADMIN_TOKEN",
        "",
        _text,
        "serve makes sure this exact admin API token is valid",
    ),
    Setting(
        "FLAGADMIN_CONNECTION_LIMIT",
        "500",
        _integer(10, 900),
        "open connections serve holds at once, idle keep-alive ones included; past it, new ones "
        "wait in the listen backlog until one closes (10 to 900: waitress watches them with "
        "select, below descriptor 1024)",
        "connection_limit",
        int,
    ),
    Setting(
        "FLAGADMIN_CONNECTION_IDLE_TIMEOUT",
        "60",
        _seconds(1.0, 86400.0),
        "seconds serve keeps a connection that sends nothing (idle keep-alive, or a request "
        "arriving too slowly) before closing it (1 to 86400)",
        "connection_idle_timeout",
        float,
    ),
    Setting(
        "FLAGADMIN_LISTEN_BACKLOG",
        "1024",
        _integer(1, 65535),
        "connections the system queues for serve before it accepts them (listen backlog; the "
        "system may cap it, net.core.somaxconn)",
        "listen_backlog",
        int,
    ),
    Setting(
        "FLAGADMIN_SERVICE_URL",
        "http://127.0.0.1:4242",
        _text,
        "the URL users reach: ui-config serviceUrl, and the base of SCIM locations (meta.location, $ref)",
        "service_url",
    ),
    Setting("FLAGADMIN_NAME", "flagadmin", _text, "ui-config name of this instance", "name"),
    Setting("FLAGADMIN_SLOGAN", "Feature flags, administered.", _text, "ui-config slogan", "slogan"),
    Setting(
        "FLAGADMIN_AUTH_TYPE",
        "open-source",
        _authentication_type,
        "ui-config authenticationType: " + ", ".join(AUTHENTICATION_TYPES),
        "authentication_type",
    ),
    Setting(
        "FLAGADMIN_FRONTEND_API_ORIGINS",
        "*",
        _comma_list,
        "ui-config frontendApiOrigins, comma-separated",
        "frontend_api_origins",
        tuple[str, ...],
    ),
    Setting(
        "FLAGADMIN_MAINTENANCE_MODE",
        "false",
        _boolean,
        "true: the admin API refuses every change with 503 and keeps answering reads"
        " (ui-config maintenanceMode)",
        "maintenance_mode",
        bool,
    ),
    Setting(
        "FLAGADMIN_EMAIL_ENABLED",
        "false",
        _boolean,
        "ui-config emailEnabled (true/false)",
        "email_enabled",
        bool,
    ),
    Setting(
        "FLAGADMIN_RESOURCE_LIMITS",
        "{}",
        _resource_limits,
        'JSON object overriding ui-config resourceLimits, e.g. {"featureFlags": 10000};'
        " featureFlags, projects, environments, apiTokens, segments and the limits of rollout rules are"
        " enforced, actionSet* and signal* only shown",
        "resource_limits",
        Mapping[str, int],
    ),
    Setting(
        "FLAGADMIN_GIT_REVISION",
        "",
        _text_or_none,
        "ui-config versionInfo.current.oss",
        "git_revision",
        str | None,
        shown="(the build's, else the checkout's, else the version)",
    ),
    Setting(
        "FLAGADMIN_AUTH_FAILURE_LIMIT",
        "30/minute",
        rate_limit,
        "failed authentications allowed per client address (moving window) before 429: "
        "N/second, N/minute, N/hour or N/day",
        "auth_failure_limit",
    ),
    Setting(
        "FLAGADMIN_CORS_ORIGINS",
        "",
        _origins,
        "origins allowed to call /api/admin/* from a browser (CORS), comma-separated; "
        "unset: no CORS headers at all",
        "cors_origins",
        tuple[str, ...],
    ),
    Setting(
        "FLAGADMIN_PROMETHEUS",
        "true",
        _boolean,
        "true: serve Prometheus metrics at /internal-backstage/prometheus (no token, as the "
        "reference server); false: that path answers 404 and requests are not timed",
        "prometheus",
        bool,
    ),
    Setting(
        "FLAGADMIN_PROMETHEUS_ADDRESS",
        "",
        _listen_address,
        "host:port on which to serve the Prometheus metrics instead of the main port (at any "
        "path), e.g. 127.0.0.1:9100; the main port then answers 404 there",
        "prometheus_address",
        tuple[str, int] | None,
    ),
    Setting(
        "FLAGADMIN_INTEGRATIONS_ALLOW_PRIVATE",
        "false",
        _boolean,
        "true: webhook URLs may point at private, loopback and other non-public addresses "
        "(on-prem receivers); false: they are refused when saved and when sent",
        "integrations_allow_private",
        bool,
    ),
    Setting(
        "FLAGADMIN_INTEGRATIONS_ALLOWED_HOSTS",
        "",
        _hosts,
        "host names exempt from the non-public address check, comma-separated (exact names)",
        "integrations_allowed_hosts",
        tuple[str, ...],
    ),
    Setting(
        "FLAGADMIN_DELIVERY_TIMEOUT",
        "10",
        _seconds(0.1, 300.0),
        "seconds one webhook attempt may take in total (0.1 to 300)",
        "delivery_timeout",
        float,
    ),
    Setting(
        "FLAGADMIN_DELIVERY_RETRY_SCHEDULE",
        "5s,5m,30m,2h,5h,10h",
        retry_schedule,
        "delays before each retry of a failed delivery (ms, s, m, h, d), comma-separated; "
        "its length is the number of retries, empty: no retries",
        "delivery_retry_schedule",
        tuple[float, ...],
    ),
    Setting(
        "FLAGADMIN_DELIVERY_WORKERS",
        "4",
        _integer(0, 64),
        "delivery threads inside serve (0: serve delivers nothing; at most 64)",
        "delivery_workers",
        int,
    ),
    Setting(
        "FLAGADMIN_DELIVERY_MAX_IN_FLIGHT",
        "1",
        _integer(1, 100),
        "deliveries of one integration under way at once, retries waiting included (1: in order; "
        "at most 100); an integration's maxInFlight overrides it",
        "delivery_max_in_flight",
        int,
    ),
    Setting(
        "FLAGADMIN_DELIVERY_POLL_INTERVAL",
        "1",
        _seconds(0.01, 3600.0),
        "seconds between two looks for due deliveries when nothing wakes the workers (0.01 to 3600)",
        "delivery_poll_interval",
        float,
    ),
    Setting(
        "FLAGADMIN_INTEGRATION_EVENTS_KEEP",
        "10000",
        _integer(1, 10**9),
        "rows of the integration event log (4.1) kept per integration, newest first",
        "integration_events_keep",
        int,
    ),
    Setting(
        "FLAGADMIN_INTEGRATION_EVENTS_MAX_AGE",
        "P30D",
        iso_duration,
        "age (ISO 8601 duration) after which rows of the integration event log are deleted",
        "integration_events_max_age",
        float,
    ),
    Setting(
        "FLAGADMIN_CLIENT_METRICS_FLUSH_INTERVAL",
        "2",
        _seconds(0.05, 300.0),
        "seconds between two writes of what SDKs reported (metrics, registrations, lastSeenAt), "
        "gathered in memory meanwhile (0.05 to 300)",
        "client_metrics_flush_interval",
        float,
    ),
)


def _settings_field(setting: Setting) -> tuple[str, Any, dataclasses.Field]:
    default = setting.parse(setting.variable, setting.default)
    if isinstance(default, dict):  # a mutable default: each Settings gets its own copy
        return setting.attribute, setting.type, dataclasses.field(default_factory=lambda: dict(default))
    return setting.attribute, setting.type, dataclasses.field(default=default)


def _auth_failures(self: Settings) -> RateLimit:
    """``auth_failure_limit`` parsed: how many failures in how many seconds.

    :raise SettingsError: the limit does not parse (a ``Settings`` built by hand).
    """
    return parse_rate_limit("FLAGADMIN_AUTH_FAILURE_LIMIT", self.auth_failure_limit)


#: Instance settings: one frozen field per :class:`Setting` of :data:`SETTINGS` that has an
#: ``attribute``, defaulting to its parsed default (those served by ui-config, spec 2.5; the
#: limit on failed authentications; CORS origins; webhook delivery, durations in seconds).
Settings = dataclasses.make_dataclass(
    "Settings",
    [_settings_field(s) for s in SETTINGS if s.attribute],
    frozen=True,
    namespace={
        "__doc__": "Instance settings: a field per attribute of config.SETTINGS (see there).",
        "__module__": __name__,
        "auth_failures": property(_auth_failures),
    },
)


def settings_from_env(environ: Mapping[str, str] | None = None) -> Settings:
    """Build :class:`Settings` from ``FLAGADMIN_*`` variables of ``environ`` (default: os.environ).

    :raise SettingsError: a variable holds an unusable value.
    """
    env = os.environ if environ is None else environ
    return Settings(**{s.attribute: s.value(env) for s in SETTINGS if s.attribute})


# --- The documentation's table ------------------------------------------------------------

TABLE_START = "<!-- settings table: generated by `python -m flagadmin.config`; do not edit by hand -->"
TABLE_END = "<!-- end of the settings table -->"


def settings_table() -> str:
    """The Markdown table of every setting (variable, default, meaning), as docs/settings.md
    holds it between :data:`TABLE_START` and :data:`TABLE_END`; ends with a newline."""
    rows = ["| variable | default | meaning |", "|---|---|---|"]
    for s in SETTINGS:
        default = s.shown or (f"`{s.default}`" if s.default else "(unset)")
        rows.append(f"| `{s.variable}` | {default} | {s.help.replace('|', '/')} |")
    return "\n".join(rows) + "\n"


def rewrite_table(text: str) -> str:
    """``text`` (a Markdown page) with what lies between the table's markers replaced by
    :func:`settings_table`.

    :raise ValueError: the markers are missing.
    """
    head, start, rest = text.partition(TABLE_START + "\n")
    _, end, tail = rest.partition(TABLE_END)
    if not start or not end:
        raise ValueError(f"the page lacks the lines {TABLE_START!r} and {TABLE_END!r}")
    return head + start + settings_table() + end + tail


def main(argv: list[str]) -> int:
    """``python -m flagadmin.config``: print the table; ``--write PAGE``: rewrite it in PAGE."""
    if argv[:1] == ["--write"] and len(argv) == 2:
        page = Path(argv[1])
        page.write_text(rewrite_table(page.read_text(encoding="utf-8")), encoding="utf-8")
        return 0
    if argv:
        print("usage: python -m flagadmin.config [--write docs/settings.md]", file=sys.stderr)
        return 2
    sys.stdout.write(settings_table())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
