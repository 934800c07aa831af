"""Spec 4.4: ``GET /api/admin/archive/features``, archived feature flags (deprecated)."""

from __future__ import annotations

from flask import Blueprint
from marshmallow import Schema, fields

from ..api import operation
from ..fields import RawJSONList, Timestamp
from ..store import archived_features

bp = Blueprint("archived_features", __name__, url_prefix="/api/admin")

#: Version of the feature schema served (spec 2.6, 9.2).
FEATURE_SCHEMA_VERSION = 2


class FeatureEnvironmentSchema(Schema):
    """An environment of an archived flag (spec 2.6, deprecated)."""

    name = fields.String(required=True)
    lastSeenAt = Timestamp(required=True, allow_none=True)
    enabled = fields.Boolean(required=True)


class ArchivedFeatureSchema(Schema):
    """An archived feature flag (spec 2.6)."""

    name = fields.String(required=True)
    type = fields.String()
    description = fields.String(allow_none=True)
    project = fields.String(required=True, metadata={"description": "Id of the owning project."})
    stale = fields.Boolean()
    impressionData = fields.Boolean()
    createdAt = Timestamp()
    archivedAt = Timestamp()
    lastSeenAt = Timestamp(allow_none=True, metadata={"deprecated": True})
    environments = RawJSONList(fields.Nested(FeatureEnvironmentSchema), metadata={"deprecated": True})


class ArchivedFeaturesSchema(Schema):
    """Archived features (spec 2.6)."""

    version = fields.Integer(required=True)
    features = fields.List(fields.Nested(ArchivedFeatureSchema), required=True)


@operation(
    bp,
    "/archive/features",
    section="4.4",
    summary="Get archived features (deprecated)",
    response=ArchivedFeaturesSchema(),
    statuses=(401,),
    deprecated=True,
)
def get_archived_features(caller, db):
    """Archived flags of the projects the caller sees, most recently archived first.

    Deprecated (spec 4.4, 9.3) and still served. Any valid API token.
    """
    features = list(archived_features.archived_features(db, caller.user_id, caller.sees_all_projects))
    return {"version": FEATURE_SCHEMA_VERSION, "features": features}
