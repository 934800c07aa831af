"""The applications SDKs make, on the reference server's admin paths:
``GET /api/admin/metrics/applications``, ``GET /api/admin/metrics/applications/{appName}`` and
``GET /api/admin/metrics/unknown-flags`` (:mod:`flagadmin.clients.applications` builds them).

Any token of the admin API reads them; a caller who does not see every project sees the usage
and the seen flags of its own projects. What they show is written by the writer of SDK reports,
within ``FLAGADMIN_CLIENT_METRICS_FLUSH_INTERVAL`` seconds of the report.
"""

from __future__ import annotations

from flask import Blueprint
from marshmallow import Schema, fields, validate

from ..clients import applications
from ..records import DecimalInteger, Timestamp
from ..store.applications import SORT_COLUMNS
from ..web.operations import PathParameter, operation
from ..web.state import state

bp = Blueprint("applications", __name__, url_prefix="/api/admin/metrics")

SECTION = "Applications (the reference server's /api/admin/metrics: what SDKs report)"

MAX_LIMIT = 1000
MAX_INT64 = 2**63 - 1


class ApplicationUsageSchema(Schema):
    """A project an application reads (``*``: every project) and in which environments."""

    project = fields.String(required=True)
    environments = fields.List(fields.String(), required=True)


class ApplicationSchema(Schema):
    """An application of the list: the reference's ``applicationSchema``."""

    appName = fields.String(required=True)
    description = fields.String()
    url = fields.String()
    color = fields.String()
    icon = fields.String()
    strategies = fields.List(fields.String(), metadata={"description": "The strategies its SDKs know."})
    usage = fields.List(fields.Nested(ApplicationUsageSchema))


class ApplicationsSchema(Schema):
    """A page of applications and how many match in all: the reference's ``applicationsSchema``."""

    applications = fields.List(fields.Nested(ApplicationSchema), required=True)
    total = fields.Integer(required=True)


class ApplicationsQuerySchema(Schema):
    """Search, order and pagination of the applications (the reference's parameters)."""

    query = fields.String(
        validate=validate.Length(max=255),
        metadata={"description": "Only applications whose name holds this text (ASCII letters in any case)."},
    )
    sortBy = fields.String(
        load_default="appName",
        validate=validate.OneOf(tuple(SORT_COLUMNS)),
        metadata={"description": "appName (the default), createdAt or updatedAt; then by name."},
    )
    sortOrder = fields.String(load_default="asc", validate=validate.OneOf(("asc", "desc")))
    offset = DecimalInteger(load_default=0, validate=validate.Range(0, MAX_INT64))
    limit = DecimalInteger(
        load_default=applications.DEFAULT_LIMIT,
        validate=validate.Range(1, MAX_LIMIT),
        metadata={"description": "Applications in a page, 1 to 1000 (default 1000)."},
    )


class InstanceSchema(Schema):
    """An instance of an application's SDK, in one environment."""

    instanceId = fields.String(required=True)
    sdkVersion = fields.String(allow_none=True)
    sdkType = fields.String(allow_none=True, metadata={"description": "backend or frontend."})
    clientIp = fields.String(allow_none=True)
    lastSeen = Timestamp(required=True)
    environment = fields.String(required=True)


class SeenFlagSchema(Schema):
    """A flag the application reported: the flag, or its name and ``notFound`` once deleted."""

    name = fields.String(required=True)
    project = fields.String()
    type = fields.String()
    description = fields.String(allow_none=True)
    stale = fields.Boolean()
    notFound = fields.Boolean()


class ApplicationLinksSchema(Schema):
    """Where the application is read."""

    self = fields.String(required=True)


class ApplicationDetailSchema(Schema):
    """One application, as the reference answers it: ``applicationSchema``'s fields with its
    instances, the flags it reported and a link to itself."""

    appName = fields.String(required=True)
    createdAt = Timestamp(required=True)
    description = fields.String()
    url = fields.String()
    color = fields.String()
    icon = fields.String()
    strategies = fields.List(fields.String(), required=True)
    instances = fields.List(fields.Nested(InstanceSchema), required=True)
    seenToggles = fields.List(fields.Nested(SeenFlagSchema), required=True)
    links = fields.Nested(ApplicationLinksSchema, required=True)


class UnknownFlagEnvironmentSchema(Schema):
    environment = fields.String(required=True)
    seenAt = Timestamp(required=True)


class UnknownFlagReportSchema(Schema):
    appName = fields.String(required=True)
    environments = fields.List(fields.Nested(UnknownFlagEnvironmentSchema), required=True)


class UnknownFlagSchema(Schema):
    """A name reported in metrics that is no flag."""

    name = fields.String(required=True)
    lastSeenAt = Timestamp(required=True)
    reports = fields.List(fields.Nested(UnknownFlagReportSchema))


class UnknownFlagsSchema(Schema):
    """The reference's ``unknownFlagsResponseSchema``."""

    unknownFlags = fields.List(fields.Nested(UnknownFlagSchema), required=True)


@operation(
    bp,
    "/applications",
    section=SECTION,
    summary="Get all applications",
    response=ApplicationsSchema(),
    query=ApplicationsQuerySchema(),
)
def get_applications(caller, conn, **query):
    """The applications that SDKs registered or reported metrics for, with the projects and
    environments each reads (its tokens')."""
    return applications.list_applications(
        conn,
        caller,
        query=query.get("query"),
        sort_by=query["sortBy"],
        sort_order=query["sortOrder"],
        offset=query["offset"],
        limit=query["limit"],
    )


@operation(
    bp,
    "/applications/<path:appName>",
    section=SECTION,
    summary="Get application data",
    response=ApplicationDetailSchema(),
    path={"appName": PathParameter("The application's name (appName of its SDKs).")},
)
def get_application(caller, conn, appName):
    """One application: its strategies, its instances (most recently seen first) and the flags
    it reported in the last two days. 404 when no SDK reported it."""
    return applications.get_application(conn, caller, appName, state().base_uri_path)


@operation(
    bp,
    "/unknown-flags",
    section=SECTION,
    summary="Get unknown flags",
    response=UnknownFlagsSchema(),
)
def get_unknown_flags(caller, conn):
    """Names that SDKs reported in metrics in the last day and that are no flag, by name, at
    most 1,000, with the applications and environments that reported each."""
    return applications.unknown_flags(conn, state().clock)
