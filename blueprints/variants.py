"""A flag's variants per environment on the reference server's paths and bodies (Unleash 8.2.0):
``PUT .../features/{featureName}/variants-batch`` (``pushVariantsSchema``) and ``GET``,
``PUT`` (``variantsSchema``) and ``PATCH`` (``patchesSchema``, RFC 6902) ``.../environments/{env}/variants``;
answers ``featureVariantsSchema``. The rules (weights shared as the reference shares them, the
stored list sorted by name, payloads checked) and the events are
:mod:`flagadmin.rules.variants`'. :class:`FlagVariantSchema` is also the ``variants`` of a flag
environment in ``GET`` of a flag (``blueprints.features``).
"""

from __future__ import annotations

from flask import Blueprint
from marshmallow import Schema, fields, validate

from ..rules import variants
from ..web.auth import Permission
from ..web.operations import operation
from ..web.state import state
from .features import FLAG, FLAG_ENVIRONMENT, PatchOperationSchema

bp = Blueprint("variants", __name__, url_prefix="/api/admin")

#: The section of the spec these operations belong to: other operations of the service (1),
#: here the rollout rules the reference server keeps on these paths.
SECTION = "1 (rollout rules, on the reference server's paths)"

#: Who may change a flag's variants: per environment.
CHANGE = Permission.in_project(
    variants.PERMISSION,
    "the path's project, in each environment changed (a permission granted per environment)",
)


class VariantPayloadSchema(Schema):
    """What a variant carries (``{type, value}``)."""

    type = fields.String(required=True, validate=validate.OneOf(variants.PAYLOAD_TYPES))
    value = fields.String(
        required=True, metadata={"description": "A string; JSON text for json, a number for number."}
    )


class VariantOverrideSchema(Schema):
    """Users who always get the variant (the reference's ``overrideSchema``)."""

    contextName = fields.String(required=True, validate=validate.Length(min=1, max=100))
    values = fields.List(fields.String(), required=True)


class FlagVariantSchema(Schema):
    """One variant of a flag environment (the reference's ``variantSchema``)."""

    name = fields.String(
        required=True,
        validate=validate.Length(min=1, max=100),
        metadata={"description": "Unique in the list; URL-friendly as a flag name.", "example": "blue"},
    )
    weight = fields.Integer(
        required=True,
        strict=True,
        validate=validate.Range(min=0, max=variants.TOTAL_WEIGHT),
        metadata={"description": "Tenths of a percent; a variable variant's is computed on write."},
    )
    weightType = fields.String(
        validate=validate.OneOf(variants.WEIGHT_TYPES),
        metadata={"description": "fix keeps its weight; variable (default) shares what is left of 1000."},
    )
    stickiness = fields.String(
        validate=validate.Length(min=1, max=100), metadata={"description": "Default: default."}
    )
    payload = fields.Nested(VariantPayloadSchema, allow_none=True)
    overrides = fields.List(fields.Nested(VariantOverrideSchema), allow_none=True)


class PushVariantsSchema(Schema):
    """Variants to set in several environments (the reference's ``pushVariantsSchema``)."""

    variants = fields.List(fields.Nested(FlagVariantSchema), allow_none=True)
    environments = fields.List(
        fields.String(), metadata={"description": "Environments of the flag; at least one."}
    )


class FeatureVariantsSchema(Schema):
    """A flag's variants (the reference's ``featureVariantsSchema``)."""

    version = fields.Integer(required=True, metadata={"description": "Always 1."})
    variants = fields.List(fields.Nested(FlagVariantSchema), required=True)


@operation(
    bp,
    "/projects/<projectId>/features/<featureName>/variants-batch",
    method="PUT",
    section=SECTION,
    summary="Set a flag's variants in several environments",
    response=FeatureVariantsSchema(),
    body=PushVariantsSchema(),
    path=FLAG,
    permission=CHANGE,
    statuses=(409,),
)
def overwrite_feature_variants_on_environments(caller, conn, projectId, featureName, body):
    """Make ``variants`` the flag's variants in each of ``environments``: fix weights kept,
    variable ones sharing the rest of 1000 (the remainder, one by one, to the first variable
    variants sent), stored sorted by name. Answers the variants in the order sent, with their
    defaults and weights, as the reference does. 400 naming the field for no environment, an
    unknown one, or a variant that breaks a rule; 409 for an archived flag. Records
    ``feature-environment-variants-updated`` per environment changed."""
    return {
        "version": 1,
        "variants": variants.set_on_environments(
            conn,
            caller,
            projectId,
            featureName,
            body.get("variants"),
            body.get("environments"),
            state().clock,
        ),
    }


@operation(
    bp,
    "/projects/<projectId>/features/<featureName>/environments/<environment>/variants",
    section=SECTION,
    summary="Get a flag's variants in an environment",
    response=FeatureVariantsSchema(),
    path=FLAG_ENVIRONMENT,
    permission=Permission.in_project(None),
)
def get_environment_feature_variants(caller, conn, projectId, featureName, environment):
    """The flag's variants in the environment (``[]``: none), sorted by name."""
    return variants.of_environment(conn, caller, projectId, featureName, environment)


@operation(
    bp,
    "/projects/<projectId>/features/<featureName>/environments/<environment>/variants",
    method="PUT",
    section=SECTION,
    summary="Replace a flag's variants in an environment",
    response=FeatureVariantsSchema(),
    body=FlagVariantSchema(many=True),
    path=FLAG_ENVIRONMENT,
    permission=CHANGE,
    statuses=(409,),
)
def overwrite_environment_feature_variants(caller, conn, projectId, featureName, environment, body):
    """Replace the flag's variants in the environment, normalised as variants-batch does. As
    in the reference, environment variants are deprecated: 403 unless the flag already has
    variants in some environment (variants-batch sets them). Records
    ``feature-environment-variants-updated``."""
    return variants.replace_on_environment(
        conn, caller, projectId, featureName, environment, body, state().clock
    )


@operation(
    bp,
    "/projects/<projectId>/features/<featureName>/environments/<environment>/variants",
    method="PATCH",
    section=SECTION,
    summary="Patch a flag's variants in an environment (JSON Patch, RFC 6902)",
    response=FeatureVariantsSchema(),
    body=PatchOperationSchema(many=True),
    path=FLAG_ENVIRONMENT,
    permission=CHANGE,
    statuses=(409,),
)
def patch_environment_feature_variants(caller, conn, projectId, featureName, environment, body):
    """Apply a JSON Patch to the flag's variants in the environment (the stored list, sorted by
    name), then store the result as PUT does (same 403 when the flag has no environment
    variants). An operation that names nothing: 400; a failed ``test``: 409, nothing changed."""
    operations = []
    for op in body:
        operation_ = {"op": op["op"], "path": op["path"]}
        if "from_" in op:
            operation_["from"] = op["from_"]
        if "value" in op:
            operation_["value"] = op["value"]
        operations.append(operation_)
    return variants.patch_on_environment(
        conn, caller, projectId, featureName, environment, operations, state().clock
    )
