"""What backend SDKs report, on the reference server's paths: ``POST /api/client/register``,
``POST /api/client/metrics`` and Edge's ``POST /api/client/metrics/bulk``, each answered 202
(the Python SDK takes no other status for metrics) once the body is checked, the report only
noted in memory (:mod:`flagadmin.clients.metrics`; the writer thread writes it).

The bodies are the reference's ``clientApplicationSchema``, ``clientMetricsSchema`` and
``bulkMetricsSchema`` (8.2.0): fields beyond them (``connectionId``, ``impactMetrics``, ...)
are accepted and not kept, a body that fails them gets 400 naming each field. The environment
and projects come from the client token, never from the body.

:class:`ClientMetricsSchema` and :class:`ClientApplicationSchema` are what the Frontend API's
``/api/frontend/client/metrics`` and ``/register`` load too. A metrics body is checked on
every request of every SDK, so its flags are checked by :class:`Toggles` in one plain loop
rather than by a nested schema per flag (870 µs a body of 20 flags that way), and a body that
is plainly right is loaded without the schema's machinery (:meth:`_Sdk.load`).
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

from flask import Blueprint, request
from marshmallow import EXCLUDE, Schema, ValidationError, fields, validate

from ..records import json_kind
from ..web import telemetry
from ..web.auth import Permission
from ..web.operations import operation
from ..web.state import state

bp = Blueprint("client_metrics", __name__, url_prefix="/api/client")

SECTION = "Client API (the reference server's /api/client: SDK registrations and metrics)"

#: The largest count one report may give a flag or variant (the reference's integer columns).
MAX_COUNT = 2**31 - 1

#: Bodies up to this size (bytes): the Python SDK reports every flag it evaluated in one body,
#: about 60 bytes a flag.
MAX_BODY = 1024 * 1024
MAX_BULK_BODY = 4 * 1024 * 1024

_DATE_WORDS = "an RFC 3339 date-time or a UNIX timestamp in seconds"


def _count_problem(value: Any) -> str | None:
    """Why ``value`` is no count (a message), or None."""
    if type(value) is int:
        if 0 <= value <= MAX_COUNT:
            return None
    elif type(value) is float and value.is_integer() and 0 <= value <= MAX_COUNT:
        return None
    return f"must be a whole number from 0 to {MAX_COUNT}; got {json_kind(value)}"


class Count(fields.Integer):
    """A whole number from 0 to :data:`MAX_COUNT` (a JSON number without a fraction; not a
    string, not a boolean)."""

    def __init__(self, **kwargs: Any):
        metadata = {"minimum": 0, "maximum": MAX_COUNT, **kwargs.pop("metadata", {})}
        super().__init__(metadata=metadata, **kwargs)

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> int:
        problem = _count_problem(value)
        if problem:
            raise ValidationError(problem)
        return int(value)


class Seconds(fields.Float):
    """A finite number of at least 0 (a JSON number; not a string, not a boolean)."""

    def __init__(self, **kwargs: Any):
        super().__init__(metadata={"minimum": 0, **kwargs.pop("metadata", {})}, **kwargs)

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> float:
        if type(value) not in (int, float) or not math.isfinite(value) or value < 0:
            raise ValidationError(f"must be a number of at least 0; got {json_kind(value)}")
        return float(value)


#: The UNIX timestamps of the first and the last second a date may name (years 1 to 9999).
FIRST_SECOND, LAST_SECOND = -62135596800, 253402300799


class DateValue(fields.Field):
    """The reference's ``dateSchema``: an RFC 3339 date-time of the years 1 to 9999 in UTC (one
    without its time zone is read as UTC) or a UNIX timestamp in seconds; loads an aware
    datetime in UTC."""

    def __init__(self, **kwargs: Any):
        metadata = {
            "oneOf": [
                {"type": "string", "format": "date-time"},
                {"type": "number", "minimum": FIRST_SECOND, "maximum": LAST_SECOND},
            ],
            **kwargs.pop("metadata", {}),
        }
        super().__init__(metadata=metadata, **kwargs)

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> datetime:
        moment = _moment(value)
        if moment is None:
            raise ValidationError(f"must be {_DATE_WORDS}; got {json_kind(value)}")
        return moment


def _moment(value: Any) -> datetime | None:
    """``value`` as :class:`DateValue` loads it, or None when it does not load."""
    try:
        if type(value) is str:
            moment = datetime.fromisoformat(value.upper())  # RFC 3339 allows "t" and "z"
            return moment.astimezone(UTC) if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
        if type(value) in (int, float):
            return datetime.fromtimestamp(value, UTC)
    except (ValueError, OverflowError, OSError):
        pass
    return None


class ToggleSchema(Schema):
    """How often one flag was evaluated in the bucket (documentation of :class:`Toggles`;
    other properties are ignored)."""

    class Meta:
        unknown = EXCLUDE

    yes = Count(metadata={"description": "Times the flag was on."})
    no = Count(metadata={"description": "Times the flag was off."})
    variants = fields.Dict(
        keys=fields.String(),
        values=Count(),
        allow_none=True,
        metadata={"description": "Times each variant was returned, by name."},
    )


class Toggles(fields.Dict):
    """``{flag name: {yes, no, variants}}``, checked in one loop (see the module). Loads the
    same object, every count an ``int`` (``yes`` and ``no`` may be absent: 0)."""

    def __init__(self, **kwargs: Any):
        super().__init__(keys=fields.String(), values=fields.Nested(ToggleSchema), **kwargs)

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise ValidationError(f"must be an object of flag names; got {json_kind(value)}")
        errors = toggle_problems(value)
        if errors:
            raise ValidationError(errors)
        return value


def toggle_problems(toggles: dict[str, Any]) -> dict[str, Any]:
    """Check the counts of ``toggles`` (``{flag name: {yes, no, variants}}``), making every
    count an ``int`` (a whole number sent as ``2.0``); return the problems found, by flag (at
    most 20 flags'), as marshmallow's nested messages."""
    errors: dict[str, Any] = {}
    for name, toggle in toggles.items():
        if type(toggle) is dict:
            yes, no, variants = toggle.get("yes", 0), toggle.get("no", 0), toggle.get("variants")
            if (
                type(yes) is int
                and type(no) is int
                and 0 <= yes <= MAX_COUNT
                and 0 <= no <= MAX_COUNT
                and (variants is None or (type(variants) is dict and _plain_counts(variants)))
            ):
                continue
        problems = _toggle_problems(toggle)
        if problems:
            errors[name] = problems
            if len(errors) >= 20:
                break
    return errors


def _plain_counts(counts: dict[str, Any]) -> bool:
    return all(type(count) is int and 0 <= count <= MAX_COUNT for count in counts.values())


def _toggle_problems(toggle: Any) -> Any:
    """The problems of one flag's counts (its whole numbers sent as ``2.0`` made ``int``)."""
    if type(toggle) is not dict:
        return [f"must be an object {{yes, no, variants}}; got {json_kind(toggle)}"]
    problems: dict[str, Any] = {}
    for side in ("yes", "no"):
        if side in toggle:
            problem = _count_problem(toggle[side])
            if problem:
                problems[side] = [problem]
            else:
                toggle[side] = int(toggle[side])
    variants = toggle.get("variants")
    if variants is not None:
        if type(variants) is not dict:
            problems["variants"] = [f"must be an object of variant names, or null; got {json_kind(variants)}"]
        else:
            for variant, count in variants.items():
                problem = _count_problem(count)
                if problem:
                    problems.setdefault("variants", {})[variant] = [problem]
                else:
                    variants[variant] = int(count)
    return problems


def _optional_text(**kwargs: Any) -> fields.String:
    return fields.String(allow_none=True, **kwargs)


#: The optional texts of every report, with their longest length (None: any).
_TEXTS = (
    ("instanceId", None),
    ("sdkVersion", None),
    ("platformName", None),
    ("platformVersion", None),
    ("yggdrasilVersion", None),
    ("specVersion", None),
    ("sdkFlavor", 256),
    ("sdkFlavorVersion", 32),
)


def _quick_sdk(data: Any) -> dict[str, Any] | None:
    """The fields of :class:`_Sdk` loaded from ``data`` when each is plainly what it must be,
    else None."""
    if type(data) is not dict:
        return None
    app = data.get("appName")
    if type(app) is not str or not 0 < len(app) <= 255:
        return None
    loaded = {"appName": app}
    for key, longest in _TEXTS:
        if key in data:
            value = data[key]
            if value is not None and (
                type(value) is not str or (longest is not None and len(value) > longest)
            ):
                return None
            loaded[key] = value
    return loaded


class _Sdk(Schema):
    """What every report says of the SDK that sends it.

    Every SDK sends a report a minute or so, so :meth:`load` first tries :meth:`quick_load`, a
    plain check of the body that gives what marshmallow's load gives (``tests/
    test_client_metrics.py`` compares them), and falls back to marshmallow's load, with its
    messages, for a body it does not find plainly right. At 20 flags a metrics body took 190 to
    260 µs to load through the schema and 30 to 60 µs through :meth:`quick_load`, a registration
    110 to 160 against 8 (docs/architecture.md, "Kept").
    """

    class Meta:
        unknown = EXCLUDE

    def load(self, data: Any, *, many: bool | None = None, partial: Any = None, unknown: Any = None) -> Any:
        """``data`` loaded: by :meth:`quick_load` when it can, else by the schema."""
        if many is None and partial is None and unknown is None:
            loaded = self.quick_load(data)
            if loaded is not None:
                return loaded
        return super().load(data, many=many, partial=partial, unknown=unknown)

    def quick_load(self, data: Any) -> dict[str, Any] | None:
        """What the schema loads from ``data`` when ``data`` is plainly right, else None (the
        schema then loads it, or says why not)."""
        return None

    appName = fields.String(
        required=True,
        validate=validate.Length(1, 255),
        metadata={"description": "The application, the same across its restarts."},
    )
    instanceId = _optional_text(
        metadata={"description": "This instance of the application; `default` when not sent."}
    )
    sdkVersion = _optional_text(metadata={"description": "`<sdk name>:<version>`."})
    platformName = _optional_text()
    platformVersion = _optional_text()
    yggdrasilVersion = _optional_text()
    specVersion = _optional_text()
    sdkFlavor = _optional_text(validate=validate.Length(max=256))
    sdkFlavorVersion = _optional_text(validate=validate.Length(max=32))


class ClientApplicationSchema(_Sdk):
    """A registration: the reference's ``clientApplicationSchema``."""

    interval = Seconds(
        required=True, metadata={"description": "How often the SDK polls (the SDKs send seconds or ms)."}
    )
    started = DateValue(required=True, metadata={"description": "When the SDK started."})
    strategies = fields.List(
        fields.String(validate=validate.Length(max=255)),
        required=True,
        metadata={"description": "The strategies the SDK knows."},
    )

    def quick_load(self, data: Any) -> dict[str, Any] | None:
        loaded = _quick_sdk(data)
        if loaded is None:
            return None
        interval, started, strategies = (
            data.get("interval"),
            _moment(data.get("started")),
            data.get("strategies"),
        )
        if (
            type(interval) not in (int, float)
            or not math.isfinite(interval)
            or interval < 0
            or started is None
        ):
            return None
        if type(strategies) is not list or any(type(s) is not str or len(s) > 255 for s in strategies):
            return None
        loaded.update(interval=float(interval), started=started, strategies=strategies)
        return loaded


class BucketSchema(Schema):
    """One window of counts: ``start``, ``stop`` and the counts of each flag."""

    class Meta:
        unknown = EXCLUDE

    start = DateValue(
        required=True, metadata={"description": "The window's start; its hour keeps the counts."}
    )
    stop = DateValue(required=True)
    toggles = Toggles(required=True)


class NullableNested(fields.Nested):
    """A nested object that may also be null. Declared with ``allow_none`` and the metadata
    ``nullable_object``, the document says so as OpenAPI 3.0 does (``allOf`` of the object with
    ``nullable: true``, :func:`flagadmin.web.openapi.nullable_object`), not as apispec's ``anyOf``
    of the object and any object, which would say that ``{}`` will do."""

    def deserialize(self, value: Any, attr: str | None = None, data: Any = None, **kwargs: Any) -> Any:
        if value is None:
            return None
        return super().deserialize(value, attr, data, **kwargs)


class ClientMetricsSchema(_Sdk):
    """A metrics report: the reference's ``clientMetricsSchema``."""

    bucket = NullableNested(
        BucketSchema,
        allow_none=True,
        metadata={
            "description": "The counts; null or absent when the report carries only impact metrics.",
            "nullable_object": True,
        },
    )

    def quick_load(self, data: Any) -> dict[str, Any] | None:
        loaded = _quick_sdk(data)
        if loaded is None or "bucket" not in data:
            return loaded
        bucket = data["bucket"]
        if bucket is None:
            loaded["bucket"] = None
            return loaded
        if type(bucket) is not dict:
            return None
        start, stop, toggles = (
            _moment(bucket.get("start")),
            _moment(bucket.get("stop")),
            bucket.get("toggles"),
        )
        if start is None or stop is None or type(toggles) is not dict or toggle_problems(toggles):
            return None
        loaded["bucket"] = {"start": start, "stop": stop, "toggles": toggles}
        return loaded


class BulkRegistrationSchema(_Sdk):
    """A registration relayed by Edge: the reference's ``bulkRegistrationSchema``."""

    instanceId = fields.String(required=True)
    environment = fields.String(required=True)
    interval = Seconds(allow_none=True)
    started = DateValue(allow_none=True)
    strategies = fields.List(fields.String(validate=validate.Length(max=255)), allow_none=True)
    projects = fields.List(fields.String(), allow_none=True)
    sdkType = fields.String(allow_none=True, validate=validate.OneOf(("backend", "frontend")))


class BulkMetricSchema(Schema):
    """One flag's counts relayed by Edge: the reference's ``clientMetricsEnvSchema``."""

    class Meta:
        unknown = EXCLUDE

    featureName = fields.String(required=True, validate=validate.Length(1, 255))
    appName = fields.String(required=True, validate=validate.Length(1, 255))
    environment = fields.String(required=True)
    timestamp = DateValue(allow_none=True)
    yes = Count()
    no = Count()
    variants = fields.Dict(keys=fields.String(), values=Count(), allow_none=True)


class BulkMetricsSchema(Schema):
    """What Edge relays: the reference's ``bulkMetricsSchema``."""

    class Meta:
        unknown = EXCLUDE

    applications = fields.List(fields.Nested(BulkRegistrationSchema), required=True)
    metrics = fields.List(fields.Nested(BulkMetricSchema), required=True)


def _sdk_version() -> str | None:
    return request.headers.get("unleash-sdk") or None


@operation(
    bp,
    "/register",
    method="POST",
    section=SECTION,
    summary="Register an SDK instance",
    response=None,
    body=ClientApplicationSchema(),
    permission=Permission.CLIENT,
    status=202,
    tag="client",
)
def register(caller, conn, body):
    """An SDK says it started: its application (created on first sight, with the event
    application-created), the instance and the strategies it knows are recorded within
    FLAGADMIN_CLIENT_METRICS_FLUSH_INTERVAL seconds, in the token's environment."""
    state().client_metrics.record_registration(caller, body, request.remote_addr, "backend")
    telemetry.sdk_registration("client")


register.max_content_length = MAX_BODY


@operation(
    bp,
    "/metrics",
    method="POST",
    section=SECTION,
    summary="Report how often flags were evaluated",
    response=None,
    body=ClientMetricsSchema(),
    permission=Permission.CLIENT,
    status=202,
    tag="client",
)
def metrics(caller, conn, body):
    """An SDK's counts for one window: hourly counts per flag, the lastSeenAt of each flag
    counted and of its environment (the token's), unknown flag names and the instance, all
    written within FLAGADMIN_CLIENT_METRICS_FLUSH_INTERVAL seconds. The answer never waits for
    the write."""
    state().client_metrics.record_metrics(
        caller, body, request.remote_addr, "backend", sdk_version=_sdk_version()
    )
    telemetry.sdk_metrics_post("client")


metrics.max_content_length = MAX_BODY


@operation(
    bp,
    "/metrics/bulk",
    method="POST",
    section=SECTION,
    summary="Report registrations and counts relayed by Edge",
    response=None,
    body=BulkMetricsSchema(),
    permission=Permission.CLIENT,
    status=202,
    tag="client",
)
def bulk_metrics(caller, conn, body):
    """Registrations and per-flag counts that Unleash Edge gathered from its SDKs. Only those
    of the token's environment are kept (the others are left out, as the reference does)."""
    state().client_metrics.record_bulk(caller, body, request.remote_addr)
    telemetry.sdk_metrics_post("edge")


bulk_metrics.max_content_length = MAX_BULK_BODY
