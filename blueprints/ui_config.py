"""Spec 4.3: ``GET /api/admin/ui-config``, what the admin UI needs to start, and ``POST
/api/admin/ui-config/cors``, which sets its ``frontendApiOrigins`` (the reference's)."""

from __future__ import annotations

import orjson
from flask import Blueprint
from marshmallow import RAISE, Schema, fields, validate
from werkzeug.http import generate_etag

from .. import __version__, revision
from ..events import Actor
from ..frontend import cors
from ..spec import AUTHENTICATION_TYPES, POSITIVE_RESOURCE_LIMITS, RESOURCE_LIMITS
from ..web.auth import Permission
from ..web.cache import Answer
from ..web.operations import operation
from ..web.state import state

bp = Blueprint("ui_config", __name__, url_prefix="/api/admin")


class VersionSchema(Schema):
    """Git revisions of the open-source and enterprise code (spec 2.5 versionInfo)."""

    oss = fields.String()
    enterprise = fields.String()


class VersionInfoSchema(Schema):
    """Current and latest versions (spec 2.5, 9.1)."""

    current = fields.Nested(VersionSchema, required=True)
    latest = fields.Nested(VersionSchema, required=True)
    isLatest = fields.Boolean(required=True)


ResourceLimitsSchema = Schema.from_dict(
    {
        name: fields.Integer(
            required=True, validate=validate.Range(min=1 if name in POSITIVE_RESOURCE_LIMITS else 0)
        )
        for name in RESOURCE_LIMITS
    },
    name="ResourceLimitsSchema",
)
ResourceLimitsSchema.__doc__ = "Resource limits of the instance (spec 2.5, 8.2)."


class UiConfigSchema(Schema):
    """The UI configuration (spec 2.5)."""

    slogan = fields.String()
    name = fields.String()
    version = fields.String(required=True)
    environment = fields.String()
    serviceUrl = fields.String(required=True)
    baseUriPath = fields.String(required=True)
    disablePasswordAuth = fields.Boolean()
    emailEnabled = fields.Boolean()
    maintenanceMode = fields.Boolean()
    segmentValuesLimit = fields.Integer(metadata={"deprecated": True})
    strategySegmentsLimit = fields.Integer(metadata={"deprecated": True})
    resourceLimits = fields.Nested(ResourceLimitsSchema)
    networkViewEnabled = fields.Boolean()
    frontendApiOrigins = fields.List(fields.String())
    flags = fields.Dict()
    links = fields.List(fields.Dict())
    authenticationType = fields.String(validate=validate.OneOf(AUTHENTICATION_TYPES))
    versionInfo = fields.Nested(VersionInfoSchema, required=True)
    instanceId = fields.String()
    oidcConfiguredThroughEnv = fields.Boolean()
    samlConfiguredThroughEnv = fields.Boolean()
    serviceAIAvailable = fields.Boolean()


def ui_config(settings, base_uri_path: str, instance_id: str, frontend_api_origins=None) -> dict:
    """Return the ui-config record for ``settings`` (a :class:`~flagadmin.config.Settings`);
    ``frontend_api_origins``: those set through ``POST /api/admin/ui-config/cors`` (None: the
    setting's)."""
    limits = dict(settings.resource_limits)
    if frontend_api_origins is None:
        frontend_api_origins = settings.frontend_api_origins
    return {
        "slogan": settings.slogan,
        "name": settings.name,
        "version": __version__,
        "environment": "Open Source",
        "serviceUrl": settings.service_url,
        "baseUriPath": base_uri_path,
        "disablePasswordAuth": False,
        "emailEnabled": settings.email_enabled,
        "maintenanceMode": settings.maintenance_mode,
        "segmentValuesLimit": limits["segmentValues"],
        "strategySegmentsLimit": limits["strategySegments"],
        "resourceLimits": limits,
        "networkViewEnabled": False,
        "frontendApiOrigins": list(frontend_api_origins),
        "flags": {},
        "links": [],
        "authenticationType": settings.authentication_type,
        "versionInfo": {
            "current": {"oss": settings.git_revision or revision.current(), "enterprise": ""},
            "latest": {},
            "isLatest": True,
        },
        "instanceId": instance_id,
        "oidcConfiguredThroughEnv": False,
        "samlConfiguredThroughEnv": False,
        "serviceAIAvailable": False,
    }


@operation(
    bp,
    "/ui-config",
    section="4.3",
    summary="Get UI configuration",
    response=UiConfigSchema(),
    conditional=True,
)
def get_ui_config(caller, conn):
    """Version information, resource limits and instance settings. Any valid API token.

    The answer depends on start-up settings and on the Frontend API's origins (set through
    POST /api/admin/ui-config/cors, read from the database each time), so it is built once
    per app and set of origins, through :class:`UiConfigSchema`.
    """
    app_state = state()
    origins = cors.stored_origins(conn)

    def build() -> Answer:
        record = ui_config(app_state.settings, app_state.base_uri_path, app_state.instance_id, origins)
        body = orjson.dumps(UiConfigSchema().dump(record))
        return Answer(body, generate_etag(body))

    return app_state.caches.fixed_answers.get_or_build(("ui-config", origins), build)


class SetCorsSchema(Schema):
    """The reference's ``setCorsSchema``."""

    class Meta:
        unknown = RAISE

    frontendApiOrigins = fields.Raw(
        required=True,
        metadata={
            "type": "array",
            # exactly what the check takes (frontend.cors.origin_problem matches this pattern)
            "items": {"type": "string", "pattern": cors.ORIGIN_PATTERN, "maxLength": cors.MAX_ORIGIN_LENGTH},
            "maxItems": cors.MAX_ORIGINS,
            "description": "Origins the Frontend API accepts requests from (scheme://host[:port]),"
            " or * for all.",
        },
    )


@operation(
    bp,
    "/ui-config/cors",
    method="POST",
    section="4.3",
    summary="Set the origins the Frontend API accepts requests from",
    response=None,
    body=SetCorsSchema(),
    permission=Permission.ADMIN,
    status=204,
)
def set_cors(caller, conn, body):
    """Set ui-config's frontendApiOrigins: the origins whose pages may call the Frontend API
    (CORS). Each is * (every origin) or an origin as a browser sends it (scheme, host, port
    only); an empty list allows every origin, as the reference's. Stored in the database (it
    overrides FLAGADMIN_FRONTEND_API_ORIGINS from then on, for every process) with the event
    setting-created or setting-updated; in force from the next request."""
    cors.set_origins(
        conn, Actor.of_caller(caller), body["frontendApiOrigins"], state().settings.frontend_api_origins
    )
