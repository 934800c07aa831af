"""A project's flags through the API, on the reference server's own paths and bodies: list,
create, read, update (PUT, and JSON Patch per RFC 6902), switch on and off per environment,
archive, favorite; and the name check. The rules and the events are in ``flagadmin.flags``
(``reads``, ``changes``, ``updates``; who may do what in ``access``, the answers' shapes in
``wire``); the bodies are the reference server's ``createFeatureSchema``,
``updateFeatureSchema``, ``patchesSchema``, ``validateFeatureSchema``, ``featureSchema`` and
``projectFeaturesSchema``. Each operation declares the project permission it needs
(:meth:`Permission.in_project`); the domain checks it, as only it knows the flag's project.

It is over 400 lines because it declares the eleven flag operations with the reference
server's request and response schemas they must match; every view is a few lines.
"""

from __future__ import annotations

from typing import Any, ClassVar

from flask import Blueprint
from marshmallow import EXCLUDE, Schema, ValidationError, fields, validate, validates_schema

from ..flags import access, changes, reads, updates
from ..flags.names import NAME_MAX_LENGTH, NAME_PATTERN, NAME_RULE
from ..records import Timestamp, WholeMatch
from ..spec import FLAG_TYPES
from ..web.auth import Permission, changes_nothing
from ..web.operations import PathParameter, operation
from ..web.state import state

bp = Blueprint("features", __name__, url_prefix="/api/admin")

#: The section of the spec these operations belong to: "other operations of the service" (1),
#: here the flag changes the reference server makes on these paths.
SECTION = "1 (flag changes, on the reference server's paths)"

PROJECT = {"projectId": PathParameter("Id of the project.")}
FLAG = {**PROJECT, "featureName": PathParameter("Name of the flag.")}
FLAG_ENVIRONMENT = {**FLAG, "environment": PathParameter("Name of an environment of the install.")}


class StrictBoolean(fields.Boolean):
    """A JSON ``true`` or ``false`` and nothing else (no ``"true"``, ``1`` or ``"yes"``)."""

    #: marshmallow's own text, which records.validation_messages says as "must be true or
    #: false; got ..." with what was sent.
    default_error_messages: ClassVar[dict[str, str]] = {"invalid": "Not a valid boolean."}

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> bool:
        if not isinstance(value, bool):
            raise self.make_error("invalid")
        return value


def _flag_name(**kwargs: Any) -> fields.String:
    return fields.String(
        validate=[
            validate.Length(min=1, max=NAME_MAX_LENGTH),
            WholeMatch(NAME_PATTERN, error=NAME_RULE),
        ],
        metadata={"description": "Unique flag name: " + NAME_RULE + ".", "example": "new-checkout"},
        **kwargs,
    )


#: marshmallow's message for it reads "type: must be one of ...; got ..." (records.validation_messages).
_FLAG_TYPE = validate.OneOf(FLAG_TYPES)


# --- request bodies -------------------------------------------------------------------------


class TagBodySchema(Schema):
    """A tag given to a new flag (the reference server's ``tagSchema``)."""

    type = fields.String(required=True, validate=validate.Length(min=2, max=50))
    value = fields.String(required=True, validate=validate.Length(min=2, max=50))
    color = fields.String(
        allow_none=True,
        validate=WholeMatch(
            r"^#[0-9A-Fa-f]{6}$", error="must be a color: # and six hexadecimal digits, e.g. #1a2b3c"
        ),
        metadata={"description": "Accepted and not kept (the color belongs to the tag type)."},
    )


class CreateFlagSchema(Schema):
    """A new flag (the reference server's ``createFeatureSchema``; ``sunset`` is not one of
    flagadmin's five types)."""

    name = _flag_name(required=True)
    type = fields.String(validate=_FLAG_TYPE, metadata={"description": "Flag type; default release."})
    description = fields.String(allow_none=True)
    impressionData = StrictBoolean()
    tags = fields.List(fields.Nested(TagBodySchema))


class UpdateFlagSchema(Schema):
    """PUT body (the reference server's ``updateFeatureSchema``): a field left out takes the
    value of a new flag. ``name`` and ``archived`` may only repeat the flag's own values."""

    name = fields.String(metadata={"description": "The flag's own name; a flag cannot be renamed."})
    description = fields.String(allow_none=True)
    type = fields.String(validate=_FLAG_TYPE)
    stale = StrictBoolean()
    archived = StrictBoolean(metadata={"description": "false only: archive with DELETE."})
    impressionData = StrictBoolean()


class PatchOperationSchema(Schema):
    """One JSON Patch operation (RFC 6902; the reference server's ``patchSchema``). Members
    other than these are ignored, as RFC 6902 section 4 says."""

    class Meta:
        unknown = EXCLUDE

    OPERATIONS = ("add", "remove", "replace", "copy", "move", "test")

    op = fields.String(required=True, validate=validate.OneOf(OPERATIONS))
    path = fields.String(required=True, metadata={"description": "JSON Pointer, e.g. /description."})
    from_ = fields.String(data_key="from", metadata={"description": "Source of copy and move."})
    value = fields.Raw(allow_none=True, metadata={"description": "Value of add, replace and test."})

    @validates_schema
    def _members_of_the_operation(self, data: dict, **kwargs: Any) -> None:
        if data.get("op") in ("add", "replace", "test") and "value" not in data:
            raise ValidationError(f'is required: a "{data["op"]}" operation needs a value', "value")
        if data.get("op") in ("copy", "move") and "from_" not in data:
            raise ValidationError(
                f'is required: a "{data["op"]}" operation needs from, the JSON Pointer of its source', "from"
            )


class ValidateFlagNameSchema(Schema):
    """A name to check (the reference server's ``validateFeatureSchema``)."""

    name = _flag_name(required=True)
    projectId = fields.String(
        allow_none=True, metadata={"description": "Accepted; flagadmin has no per-project name patterns."}
    )


# --- responses ------------------------------------------------------------------------------


class FlagEnvironmentSchema(Schema):
    """A flag in one environment (the reference server's ``featureEnvironmentSchema``)."""

    name = fields.String(required=True)
    featureName = fields.String()
    environment = fields.String()
    type = fields.String()
    enabled = fields.Boolean(required=True)
    sortOrder = fields.Integer()
    lastSeenAt = Timestamp(allow_none=True)
    # by name: the schema is blueprints/strategies.py's, which imports this module
    strategies = fields.List(
        fields.Nested("FlagStrategySchema"), metadata={"description": "The strategies there, in order."}
    )
    # by name: the schema is blueprints/variants.py's, which imports this module
    variants = fields.List(
        fields.Nested("FlagVariantSchema"), metadata={"description": "The flag's variants there, by name."}
    )


class FlagTagSchema(Schema):
    """A tag of a flag."""

    type = fields.String(required=True)
    value = fields.String(required=True)


class FlagCreatorSchema(Schema):
    """Who created the flag."""

    id = fields.Integer(required=True)
    name = fields.String(required=True)
    imageUrl = fields.String(required=True)


class FlagSchema(Schema):
    """One flag (the reference server's ``featureSchema``)."""

    name = fields.String(required=True)
    type = fields.String()
    description = fields.String(allow_none=True)
    project = fields.String()
    archived = fields.Boolean()
    archivedAt = Timestamp(allow_none=True)
    stale = fields.Boolean()
    favorite = fields.Boolean(metadata={"description": "The calling user has favorited the flag."})
    impressionData = fields.Boolean()
    createdAt = Timestamp(allow_none=True)
    createdBy = fields.Nested(FlagCreatorSchema)
    environments = fields.List(fields.Nested(FlagEnvironmentSchema))
    tags = fields.List(fields.Nested(FlagTagSchema), allow_none=True)
    # by name: the schema is blueprints/dependencies.py's, which imports this module
    dependencies = fields.List(
        fields.Nested("FlagDependencySchema"), metadata={"description": "Its parent (none or one)."}
    )
    children = fields.List(fields.String(), metadata={"description": "The flags that depend on it, by name."})


class ProjectFlagEnvironmentSchema(Schema):
    """A flag of a project list in one environment (``projectFeatureEnvironmentSchema``)."""

    name = fields.String(required=True)
    type = fields.String(required=True)
    enabled = fields.Boolean(required=True)
    sortOrder = fields.Integer(required=True)
    variantCount = fields.Integer(required=True)
    lastSeenAt = Timestamp(required=True, allow_none=True)


class ProjectFlagSchema(Schema):
    """A live flag of a project list (the reference server's ``projectFeatureSchema``)."""

    name = fields.String(required=True)
    type = fields.String(required=True)
    description = fields.String(required=True, allow_none=True)
    stale = fields.Boolean(required=True)
    favorite = fields.Boolean(required=True)
    impressionData = fields.Boolean(required=True)
    createdAt = Timestamp(required=True)
    environments = fields.List(fields.Nested(ProjectFlagEnvironmentSchema), required=True)
    tags = fields.List(fields.Nested(FlagTagSchema), allow_none=True)


class ProjectFlagsSchema(Schema):
    """The live flags of a project (the reference server's ``projectFeaturesSchema``)."""

    version = fields.Integer(required=True)
    features = fields.List(fields.Nested(ProjectFlagSchema), required=True)


# --- links for clients that follow them (and schemathesis's stateful phase) -----------------


def _link(operation_id: str, *, project: bool = True, name: str = "$response.body#/name") -> dict:
    parameters = {"featureName": name}
    if project:
        parameters["projectId"] = "$request.path.projectId"
    return {"operationId": operation_id, "parameters": parameters}


def _flag_links(name: str) -> dict[str, dict]:
    """Links from an answer naming a live flag to what can be done with it next."""
    return {
        "GetFeature": _link("get_feature", name=name),
        "UpdateFeature": _link("update_feature", name=name),
        "PatchFeature": _link("patch_feature", name=name),
        "ArchiveFeature": _link("archive_feature", name=name),
        "AddFavoriteFeature": _link("add_favorite_feature", name=name),
    }


# --- operations -----------------------------------------------------------------------------


@operation(
    bp,
    "/projects/<projectId>/features",
    section=SECTION,
    summary="List a project's live flags",
    response=ProjectFlagsSchema(),
    path=PROJECT,
    permission=Permission.in_project(None),
)
def get_features(caller, conn, projectId):
    """The live flags of the project, newest created first, with their environments, tags
    and whether the caller favorited each."""
    return reads.project_features(conn, caller, projectId)


@operation(
    bp,
    "/projects/<projectId>/features",
    method="POST",
    section=SECTION,
    summary="Create a flag",
    response=FlagSchema(),
    body=CreateFlagSchema(),
    path=PROJECT,
    status=201,
    permission=Permission.in_project(access.CREATE_FEATURE),
    links={
        **_flag_links("$response.body#/name"),
        "ToggleFeatureEnvironmentOn": {
            "operationId": "toggle_feature_environment_on",
            "parameters": {
                "projectId": "$request.path.projectId",
                "featureName": "$response.body#/name",
                "environment": "$response.body#/environments/0/name",
            },
        },
    },
)
def create_feature(caller, conn, projectId, body):
    """Create a flag in the project: in every environment of the install, switched off,
    created by the caller (so it shows in her personal dashboard, 4.2). A name taken by a live
    or an archived flag, an invalid name or an unknown type is refused with 400 naming the
    field. Past the ``featureFlags`` resource limit (live flags of every project): 400 naming
    the limit and its value. Records ``feature-created``."""
    app_state = state()
    return changes.create(conn, caller, projectId, body, app_state.clock, app_state.settings.resource_limits)


@operation(
    bp,
    "/projects/<projectId>/features/<featureName>",
    section=SECTION,
    summary="Get a flag",
    response=FlagSchema(),
    path=FLAG,
    permission=Permission.in_project(None),
)
def get_feature(caller, conn, projectId, featureName):
    """One live flag of the project; an archived flag is 404 here (4.4 lists it)."""
    return reads.get(conn, caller, projectId, featureName)


@operation(
    bp,
    "/projects/<projectId>/features/<featureName>",
    method="PUT",
    section=SECTION,
    summary="Update a flag",
    response=FlagSchema(),
    body=UpdateFlagSchema(),
    path=FLAG,
    permission=Permission.in_project(access.UPDATE_FEATURE),
    statuses=(409,),
    links=_flag_links("$request.path.featureName"),
)
def update_feature(caller, conn, projectId, featureName, body):
    """Set the flag's description, type, stale and impressionData (a field left out takes
    the value of a new flag). Records ``feature-metadata-updated``, then ``feature-stale-on``
    or ``-off`` when stale changed; nothing when nothing changed. An archived flag is 409:
    revive it first."""
    return updates.replace(conn, caller, projectId, featureName, body, state().clock)


@operation(
    bp,
    "/projects/<projectId>/features/<featureName>",
    method="PATCH",
    section=SECTION,
    summary="Patch a flag (JSON Patch, RFC 6902)",
    response=FlagSchema(),
    body=PatchOperationSchema(many=True),
    path=FLAG,
    permission=Permission.in_project(access.UPDATE_FEATURE),
    statuses=(409,),
    links=_flag_links("$request.path.featureName"),
)
def patch_feature(caller, conn, projectId, featureName, body):
    """Apply a JSON Patch (RFC 6902) to the flag as GET shows it. Only /description, /type,
    /stale and /impressionData may change (400 names any other field); a failed ``test`` is
    409 and changes nothing. Records as PUT does."""
    operations = []
    for op in body:
        operation_ = {"op": op["op"], "path": op["path"]}
        if "from_" in op:
            operation_["from"] = op["from_"]
        if "value" in op:
            operation_["value"] = op["value"]
        operations.append(operation_)
    return updates.patch(conn, caller, projectId, featureName, operations, state().clock)


def _toggle(caller, conn, projectId, featureName, environment, enabled: bool):
    flag = changes.set_enabled(conn, caller, projectId, featureName, environment, enabled, state().clock)
    return flag


@operation(
    bp,
    "/projects/<projectId>/features/<featureName>/environments/<environment>/on",
    method="POST",
    section=SECTION,
    summary="Switch a flag on in an environment",
    response=FlagSchema(),
    path=FLAG_ENVIRONMENT,
    permission=Permission.in_project(access.UPDATE_FEATURE_ENVIRONMENT, environment="the path's environment"),
    statuses=(409,),
)
def toggle_feature_environment_on(caller, conn, projectId, featureName, environment):
    """Switch the flag on in the environment (4.4's ``environments[].enabled`` shows it once
    archived). Records ``feature-environment-enabled`` when it was off. Unknown environment:
    404; archived flag: 409."""
    return _toggle(caller, conn, projectId, featureName, environment, True)


@operation(
    bp,
    "/projects/<projectId>/features/<featureName>/environments/<environment>/off",
    method="POST",
    section=SECTION,
    summary="Switch a flag off in an environment",
    response=FlagSchema(),
    path=FLAG_ENVIRONMENT,
    permission=Permission.in_project(access.UPDATE_FEATURE_ENVIRONMENT, environment="the path's environment"),
    statuses=(409,),
)
def toggle_feature_environment_off(caller, conn, projectId, featureName, environment):
    """Switch the flag off in the environment. Records ``feature-environment-disabled`` when
    it was on. Unknown environment: 404; archived flag: 409."""
    return _toggle(caller, conn, projectId, featureName, environment, False)


@operation(
    bp,
    "/projects/<projectId>/features/<featureName>",
    method="DELETE",
    section=SECTION,
    summary="Archive a flag",
    response=None,
    path=FLAG,
    status=202,
    permission=Permission.in_project(access.DELETE_FEATURE),
    statuses=(409,),
    links={
        "ReviveFeature": _link("revive_feature", project=False, name="$request.path.featureName"),
        "DeleteFeature": _link("delete_feature", project=False, name="$request.path.featureName"),
    },
)
def archive_feature(caller, conn, projectId, featureName):
    """Archive the live flag (202, no body): it leaves the project's list and the personal
    dashboard, and appears in 4.4. Archiving an archived flag is 409, with what to do
    instead. Records ``feature-archived``."""
    changes.archive(conn, caller, projectId, featureName, state().clock)


@operation(
    bp,
    "/projects/<projectId>/features/<featureName>/favorites",
    method="POST",
    section=SECTION,
    summary="Favorite a flag",
    response=None,
    path=FLAG,
    permission=Permission.USER,
)
def add_favorite_feature(caller, conn, projectId, featureName):
    """Add the flag to the calling user's favorites (her personal dashboard lists it, 4.2).
    The flag must be in a project she can see (root role Admin or Editor, or any role in the
    project). Records ``feature-favorited`` the first time; favoriting again changes
    nothing."""
    changes.favorite(conn, caller, projectId, featureName, True, state().clock)


@operation(
    bp,
    "/projects/<projectId>/features/<featureName>/favorites",
    method="DELETE",
    section=SECTION,
    summary="Unfavorite a flag",
    response=None,
    path=FLAG,
    permission=Permission.USER,
)
def remove_favorite_feature(caller, conn, projectId, featureName):
    """Take the flag out of the calling user's favorites. Records ``feature-unfavorited``
    when it was one. The flag must be in a project she can see."""
    changes.favorite(conn, caller, projectId, featureName, False, state().clock)


@operation(
    bp,
    "/features/validate",
    method="POST",
    section=SECTION,
    summary="Check that a flag name is valid and free",
    response=None,
    body=ValidateFlagNameSchema(),
)
@changes_nothing
def validate_feature(caller, conn, body):
    """200 (no body) when the name is valid and no flag, live or archived, has it; else 400
    naming the ``name`` field and saying why."""
    changes.validate_name(conn, body["name"])
