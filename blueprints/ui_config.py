"""Spec 4.3: ``GET /api/admin/ui-config``, what the admin UI needs to start."""

from __future__ import annotations

import orjson
from flask import Blueprint
from marshmallow import Schema, fields, validate
from werkzeug.http import generate_etag

from .. import __version__, revision
from ..spec import AUTHENTICATION_TYPES, POSITIVE_RESOURCE_LIMITS, RESOURCE_LIMITS
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


def ui_config(settings, base_uri_path: str, instance_id: str) -> dict:
    """Return the ui-config record for ``settings`` (a :class:`~flagadmin.config.Settings`)."""
    limits = dict(settings.resource_limits)
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
        "frontendApiOrigins": list(settings.frontend_api_origins),
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

    The answer depends on start-up settings only, so it is built once per app, through
    :class:`UiConfigSchema`.
    """
    app_state = state()

    def build() -> Answer:
        record = ui_config(app_state.settings, app_state.base_uri_path, app_state.instance_id)
        body = orjson.dumps(UiConfigSchema().dump(record))
        return Answer(body, generate_etag(body))

    return app_state.caches.fixed_answers.get_or_build("ui-config", build)
