"""Spec 4.3: ``GET /api/admin/ui-config``, what the admin UI needs to start."""

from __future__ import annotations

import orjson
from flask import Blueprint, Response, current_app
from marshmallow import Schema, fields, validate
from werkzeug.http import generate_etag

from .. import __version__
from ..api import operation
from ..config import AUTHENTICATION_TYPES, DEFAULT_RESOURCE_LIMITS, POSITIVE_LIMITS

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
        name: fields.Integer(required=True, validate=validate.Range(min=1 if name in POSITIVE_LIMITS else 0))
        for name in DEFAULT_RESOURCE_LIMITS
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
            "current": {"oss": settings.git_revision or __version__, "enterprise": ""},
            "latest": {},
            "isLatest": True,
        },
        "instanceId": instance_id,
        "oidcConfiguredThroughEnv": False,
        "samlConfiguredThroughEnv": False,
        "serviceAIAvailable": False,
    }


#: Key of the app's precomputed answer: ``(body bytes, ETag)``.
ANSWER = "flagadmin.ui_config"


@operation(
    bp,
    "/ui-config",
    section="4.3",
    summary="Get UI configuration",
    response=UiConfigSchema(),
    statuses=(401,),
    conditional=True,
)
def get_ui_config(caller, db):
    """Version information, resource limits and instance settings. Any valid API token.

    The answer depends on start-up settings only, so it is built once per app.
    """
    body, etag = current_app.extensions[ANSWER]
    response = Response(body, mimetype="application/json")
    response.set_etag(etag)
    return response


def init_app(app) -> None:
    """Build ``app``'s ui-config answer once, through :class:`UiConfigSchema`."""
    record = ui_config(app.config["SETTINGS"], app.config["BASE_URI_PATH"], app.config["INSTANCE_ID"])
    body = orjson.dumps(UiConfigSchema().dump(record))
    app.extensions[ANSWER] = (body, generate_etag(body))
