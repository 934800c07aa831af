"""Strategy types and a flag environment's strategies, on the reference server's paths and bodies
(Unleash 8.2.0).

- Strategy types: ``GET`` and ``POST /api/admin/strategies``, ``GET``, ``PUT`` and ``DELETE
  /api/admin/strategies/{name}``, ``POST /api/admin/strategies/{strategyName}/deprecate`` and
  ``/reactivate``; bodies ``createStrategySchema``, ``updateStrategySchema``; answers
  ``strategiesSchema``, ``strategySchema``. The rules are :mod:`flagadmin.rules.strategy_types`'.
- A flag environment's strategies under
  ``/api/admin/projects/{projectId}/features/{featureName}/environments/{environment}/strategies``:
  list, add, get, PUT, PATCH (JSON Patch, RFC 6902), DELETE, and ``set-sort-order``; bodies
  ``createFeatureStrategySchema``, ``updateFeatureStrategySchema``, ``patchesSchema``,
  ``setStrategySortOrderSchema``; answers ``featureStrategySchema``. The rules are
  :mod:`flagadmin.rules.strategies`' (constraints: :mod:`flagadmin.rules.constraints`).

A strategy body's ``parameters``, ``constraints``, ``variants`` and ``segments`` are taken as
JSON here and checked by the domain, whose 400 names the field at fault
(``constraints.0.values.2: ...``); members a body may hold beyond the reference schema's are
ignored, as the reference server ignores them.
"""

from __future__ import annotations

from flask import Blueprint
from marshmallow import EXCLUDE, Schema, fields, validate

from ..flags.names import NAME_MAX_LENGTH, NAME_PATTERN, NAME_RULE
from ..permissions.names import (
    CREATE_FEATURE_STRATEGY,
    CREATE_STRATEGY,
    DELETE_FEATURE_STRATEGY,
    DELETE_STRATEGY,
    UPDATE_FEATURE_STRATEGY,
    UPDATE_STRATEGY,
)
from ..records import WholeMatch
from ..rules import constraints as rule_constraints
from ..rules import strategies, strategy_types
from ..rules.variants import PAYLOAD_TYPES, WEIGHT_TYPES
from ..web.auth import Permission
from ..web.operations import PathParameter, operation
from ..web.state import state
from .features import FLAG_ENVIRONMENT, PatchOperationSchema, StrictBoolean

bp = Blueprint("strategies", __name__, url_prefix="/api/admin")

#: The section of the spec these operations belong to: other operations of the service (1),
#: here the rollout rules the reference server keeps on these paths.
SECTION = "1 (rollout rules, on the reference server's paths)"

TYPE_NAME = {"name": PathParameter("Name of the strategy type.")}
TYPE_NAME_TO_MARK = {"strategyName": PathParameter("Name of the strategy type.")}
STRATEGY = {
    **FLAG_ENVIRONMENT,
    "strategyId": PathParameter("Id of the strategy, a UUID.", {"type": "string", "format": "uuid"}),
}
STRATEGIES_PATH = "/projects/<projectId>/features/<featureName>/environments/<environment>/strategies"
#: Strategy ids are UUIDs: the converter keeps ``.../strategies/set-sort-order`` from naming one
#: (another id is a plain 404).
STRATEGY_PATH = STRATEGIES_PATH + "/<uuid:strategyId>"

_LOW, _HIGH = strategies.SORT_ORDER_RANGE


def _root_permission(name: str) -> Permission:
    """A root permission, which the domain checks (``flags.access.require`` with no project)."""
    return Permission(
        f"the {name} permission: root role Admin or Editor (an admin API token acts as Admin); no "
        "project role grants it",
        per_project=True,
        project_permission=name,
    )


def _strategy_permission(name: str | None) -> Permission:
    return Permission.in_project(name, environment="the path's environment" if name else None)


# --- strategy types: bodies and answers -----------------------------------------------------


class StrategyTypeParameterSchema(Schema):
    """A parameter a strategy type declares (an item of ``createStrategySchema.parameters``)."""

    name = fields.String(
        required=True, validate=validate.Length(min=1, max=strategy_types.PARAMETER_NAME_MAX_LENGTH)
    )
    type = fields.String(required=True, validate=validate.OneOf(strategy_types.PARAMETER_TYPES))
    description = fields.String(
        allow_none=True, validate=validate.Length(max=strategy_types.DESCRIPTION_MAX_LENGTH)
    )
    required = StrictBoolean(metadata={"description": "Whether a strategy must set it; default false."})


class CreateStrategyTypeSchema(Schema):
    """A custom strategy type (the reference server's ``createStrategySchema``)."""

    name = fields.String(
        required=True,
        validate=[validate.Length(min=1, max=NAME_MAX_LENGTH), WholeMatch(NAME_PATTERN, error=NAME_RULE)],
        metadata={"description": "Unique name, which " + NAME_RULE + ".", "example": "betaUsers"},
    )
    title = fields.String(allow_none=True, validate=validate.Length(max=strategy_types.TITLE_MAX_LENGTH))
    description = fields.String(
        allow_none=True, validate=validate.Length(max=strategy_types.DESCRIPTION_MAX_LENGTH)
    )
    editable = StrictBoolean(metadata={"description": "Accepted and not kept: a custom type is editable."})
    deprecated = StrictBoolean(metadata={"description": "Default false."})
    parameters = fields.List(
        fields.Nested(StrategyTypeParameterSchema),
        required=True,
        validate=validate.Length(max=strategy_types.MAX_PARAMETERS),
    )


class UpdateStrategyTypeSchema(Schema):
    """A custom strategy type's new parameters, and description and title when sent (the
    reference server's ``updateStrategySchema``; members left out keep their values)."""

    class Meta:
        # the reference's clients send the whole type back, name included
        unknown = EXCLUDE

    title = fields.String(allow_none=True, validate=validate.Length(max=strategy_types.TITLE_MAX_LENGTH))
    description = fields.String(
        allow_none=True, validate=validate.Length(max=strategy_types.DESCRIPTION_MAX_LENGTH)
    )
    parameters = fields.List(
        fields.Nested(StrategyTypeParameterSchema),
        required=True,
        validate=validate.Length(max=strategy_types.MAX_PARAMETERS),
    )


class StrategyTypeParameterAnswerSchema(Schema):
    """A parameter of a strategy type, as answered."""

    name = fields.String()
    type = fields.String()
    description = fields.String()
    required = fields.Boolean()


class StrategyTypeSchema(Schema):
    """One strategy type (the reference server's ``strategySchema``)."""

    title = fields.String(allow_none=True)
    name = fields.String(required=True)
    displayName = fields.String(required=True, allow_none=True)
    description = fields.String(required=True, allow_none=True)
    editable = fields.Boolean(required=True, metadata={"description": "False for the built-in types."})
    deprecated = fields.Boolean(required=True)
    parameters = fields.List(fields.Nested(StrategyTypeParameterAnswerSchema), required=True)


class StrategyTypesSchema(Schema):
    """Every strategy type (the reference server's ``strategiesSchema``)."""

    version = fields.Integer(required=True, validate=validate.OneOf([1]))
    strategies = fields.List(fields.Nested(StrategyTypeSchema), required=True)


# --- a flag's strategies: bodies and answers ------------------------------------------------


class StrategyConstraintSchema(Schema):
    """A constraint as stored and answered (the reference server's ``constraintSchema``)."""

    contextName = fields.String(required=True)
    operator = fields.String(required=True, validate=validate.OneOf(rule_constraints.OPERATORS))
    values = fields.List(
        fields.String(), metadata={"description": "List operators' values; [] for the others."}
    )
    value = fields.String(metadata={"description": "The value of NUM_*, DATE_*, SEMVER_* and REGEX."})
    inverted = fields.Boolean()
    caseInsensitive = fields.Boolean()


class StrategyVariantPayloadSchema(Schema):
    """A variant's payload."""

    type = fields.String(required=True, validate=validate.OneOf(PAYLOAD_TYPES))
    value = fields.String(required=True)


class FlagStrategyVariantSchema(Schema):
    """A strategy's variant (the reference server's ``strategyVariantSchema``)."""

    name = fields.String(required=True)
    weight = fields.Integer(required=True)
    weightType = fields.String(required=True, validate=validate.OneOf(WEIGHT_TYPES))
    stickiness = fields.String(required=True)
    payload = fields.Nested(StrategyVariantPayloadSchema)


class FlagStrategySchema(Schema):
    """One strategy of a flag environment (the reference server's ``featureStrategySchema``)."""

    id = fields.String(metadata={"description": "A UUID."})
    name = fields.String(required=True, metadata={"description": "The strategy type."})
    title = fields.String(allow_none=True)
    disabled = fields.Boolean(allow_none=True)
    featureName = fields.String()
    sortOrder = fields.Integer()
    segments = fields.List(fields.Integer(), metadata={"description": "Ids of the segments it uses."})
    constraints = fields.List(fields.Nested(StrategyConstraintSchema))
    variants = fields.List(fields.Nested(FlagStrategyVariantSchema))
    parameters = fields.Dict(keys=fields.String(), values=fields.String())


_CONSTRAINTS = (
    "Constraints (contextName, operator, values or value, inverted, caseInsensitive): every operator "
    "the reference accepts, checked as it checks them; 400 names the one at fault."
)


class CreateFlagStrategySchema(Schema):
    """A strategy to add (the reference server's ``createFeatureStrategySchema``)."""

    class Meta:
        unknown = EXCLUDE

    name = fields.String(
        required=True, metadata={"description": "A strategy type's name.", "example": "flexibleRollout"}
    )
    title = fields.String(allow_none=True)
    disabled = StrictBoolean(allow_none=True)
    sortOrder = fields.Integer(strict=True, validate=validate.Range(_LOW, _HIGH))
    constraints = fields.List(fields.Dict(), metadata={"description": _CONSTRAINTS})
    variants = fields.List(
        fields.Dict(), metadata={"description": "Strategy variants (strategyVariantSchema)."}
    )
    parameters = fields.Dict(
        metadata={
            "description": "Parameter name: string value. A flexibleRollout's rollout, stickiness and "
            "groupId default to 100, default and the flag's name.",
            "example": {"rollout": "25", "stickiness": "default", "groupId": "new-checkout"},
        }
    )
    segments = fields.List(fields.Raw(), metadata={"description": "Ids of segments to use."})


class UpdateFlagStrategySchema(CreateFlagStrategySchema):
    """A strategy's new state (the reference server's ``updateFeatureStrategySchema``): name,
    title, disabled, sortOrder, parameters and segments left out keep their values;
    constraints and variants left out become empty."""

    name = fields.String(metadata={"description": "A strategy type's name (changing it is deprecated)."})


class SortOrderSchema(Schema):
    """A strategy's new place (an item of ``setStrategySortOrderSchema``)."""

    id = fields.String(required=True)
    sortOrder = fields.Integer(required=True, strict=True, validate=validate.Range(_LOW, _HIGH))


# --- strategy types -------------------------------------------------------------------------


@operation(
    bp,
    "/strategies",
    section=SECTION,
    summary="List the strategy types",
    response=StrategyTypesSchema(),
)
def get_all_strategies(caller, conn):
    """Every strategy type: the built-ins every SDK evaluates (flexibleRollout, default,
    userWithId, gradualRolloutUserId, gradualRolloutSessionId, gradualRolloutRandom,
    remoteAddress, applicationHostname), then the custom ones, with their parameters."""
    return strategy_types.list_types(conn)


@operation(
    bp,
    "/strategies",
    method="POST",
    section=SECTION,
    summary="Create a custom strategy type",
    response=StrategyTypeSchema(),
    body=CreateStrategyTypeSchema(),
    status=201,
    permission=_root_permission(CREATE_STRATEGY),
    statuses=(409,),
)
def create_strategy(caller, conn, body):
    """Declare a custom strategy type with its parameters (each a string, percentage, list,
    number or boolean). A name taken by another type: 409. Records ``strategy-created``."""
    return strategy_types.create(conn, caller, body, state().clock)


@operation(
    bp,
    "/strategies/<name>",
    section=SECTION,
    summary="Get a strategy type",
    response=StrategyTypeSchema(),
    path=TYPE_NAME,
)
def get_strategy(caller, conn, name):
    """One strategy type; unknown: 404."""
    return strategy_types.get(conn, name)


@operation(
    bp,
    "/strategies/<name>",
    method="PUT",
    section=SECTION,
    summary="Update a custom strategy type",
    response=None,
    body=UpdateStrategyTypeSchema(),
    path=TYPE_NAME,
    permission=_root_permission(UPDATE_STRATEGY),
)
def update_strategy(caller, conn, name, body):
    """Replace a custom type's parameters (and its description and title when sent). A
    built-in type cannot be changed: 403. Records ``strategy-updated``."""
    strategy_types.update(conn, caller, name, body, state().clock)


@operation(
    bp,
    "/strategies/<name>",
    method="DELETE",
    section=SECTION,
    summary="Delete a custom strategy type",
    response=None,
    path=TYPE_NAME,
    permission=_root_permission(DELETE_STRATEGY),
    statuses=(409,),
)
def remove_strategy(caller, conn, name):
    """Delete a custom type. A built-in type cannot be deleted (403); one a flag's strategy
    uses neither (409 naming flags that use it). Records ``strategy-deleted``."""
    strategy_types.delete(conn, caller, name, state().clock)


@operation(
    bp,
    "/strategies/<strategyName>/deprecate",
    method="POST",
    section=SECTION,
    summary="Deprecate a strategy type",
    response=None,
    path=TYPE_NAME_TO_MARK,
    permission=_root_permission(UPDATE_STRATEGY),
)
def deprecate_strategy(caller, conn, strategyName):
    """Mark a strategy type, built-in or custom, deprecated (strategies of that type keep
    working). Records ``strategy-deprecated`` when it was not."""
    strategy_types.set_deprecated(conn, caller, strategyName, True, state().clock)


@operation(
    bp,
    "/strategies/<strategyName>/reactivate",
    method="POST",
    section=SECTION,
    summary="Reactivate a strategy type",
    response=None,
    path=TYPE_NAME_TO_MARK,
    permission=_root_permission(UPDATE_STRATEGY),
)
def reactivate_strategy(caller, conn, strategyName):
    """Take a strategy type's deprecation back. Records ``strategy-reactivated`` when it was
    deprecated."""
    strategy_types.set_deprecated(conn, caller, strategyName, False, state().clock)


# --- a flag environment's strategies --------------------------------------------------------


@operation(
    bp,
    STRATEGIES_PATH,
    section=SECTION,
    summary="List a flag's strategies in an environment",
    response=FlagStrategySchema(many=True),
    path=FLAG_ENVIRONMENT,
    permission=_strategy_permission(None),
)
def get_feature_strategies(caller, conn, projectId, featureName, environment):
    """The flag's strategies in the environment, in their order (sortOrder, then creation)."""
    return strategies.list_strategies(conn, caller, projectId, featureName, environment)


@operation(
    bp,
    STRATEGIES_PATH,
    method="POST",
    section=SECTION,
    summary="Add a strategy to a flag in an environment",
    response=FlagStrategySchema(),
    body=CreateFlagStrategySchema(),
    path=FLAG_ENVIRONMENT,
    permission=_strategy_permission(CREATE_FEATURE_STRATEGY),
    statuses=(409,),
)
def add_feature_strategy(caller, conn, projectId, featureName, environment, body):
    """Add a strategy (200 with its id, as the reference server answers). The type must
    exist; parameters are strings; constraints, variants and segments are checked as the
    reference checks them, and 400 names the field at fault. Past the
    ``featureEnvironmentStrategies`` resource limit: 400. Archived flag: 409. Records
    ``feature-strategy-add``."""
    app_state = state()
    return strategies.add(
        conn,
        caller,
        projectId,
        featureName,
        environment,
        body,
        app_state.clock,
        app_state.settings.resource_limits,
    )


@operation(
    bp,
    STRATEGY_PATH,
    section=SECTION,
    summary="Get a strategy of a flag",
    response=FlagStrategySchema(),
    path=STRATEGY,
    permission=_strategy_permission(None),
)
def get_feature_strategy(caller, conn, projectId, featureName, environment, strategyId):
    """One strategy of the flag in the environment; another flag's, or unknown: 404."""
    return strategies.get(conn, caller, projectId, featureName, environment, str(strategyId))


@operation(
    bp,
    STRATEGY_PATH,
    method="PUT",
    section=SECTION,
    summary="Replace a strategy of a flag",
    response=FlagStrategySchema(),
    body=UpdateFlagStrategySchema(),
    path=STRATEGY,
    permission=_strategy_permission(UPDATE_FEATURE_STRATEGY),
    statuses=(409,),
)
def update_feature_strategy(caller, conn, projectId, featureName, environment, strategyId, body):
    """Replace the strategy as the reference server does: name, title, disabled, sortOrder,
    parameters and segments left out keep their values; constraints and variants left out
    become empty. When no strategy is left enabled, the flag is switched off there. Records
    ``feature-strategy-update`` when anything changed."""
    app_state = state()
    return strategies.replace(
        conn,
        caller,
        projectId,
        featureName,
        environment,
        str(strategyId),
        body,
        app_state.clock,
        app_state.settings.resource_limits,
    )


@operation(
    bp,
    STRATEGY_PATH,
    method="PATCH",
    section=SECTION,
    summary="Patch a strategy of a flag (JSON Patch, RFC 6902)",
    response=FlagStrategySchema(),
    body=PatchOperationSchema(many=True),
    path=STRATEGY,
    permission=_strategy_permission(UPDATE_FEATURE_STRATEGY),
    statuses=(409,),
)
def patch_feature_strategy(caller, conn, projectId, featureName, environment, strategyId, body):
    """Apply a JSON Patch to the strategy as GET shows it, then store it as PUT does (id and
    featureName cannot change). A failed ``test``: 409, nothing changed."""
    operations = []
    for op in body:
        operation_ = {"op": op["op"], "path": op["path"]}
        if "from_" in op:
            operation_["from"] = op["from_"]
        if "value" in op:
            operation_["value"] = op["value"]
        operations.append(operation_)
    app_state = state()
    return strategies.patch(
        conn,
        caller,
        projectId,
        featureName,
        environment,
        str(strategyId),
        operations,
        app_state.clock,
        app_state.settings.resource_limits,
    )


@operation(
    bp,
    STRATEGY_PATH,
    method="DELETE",
    section=SECTION,
    summary="Remove a strategy from a flag",
    response=None,
    path=STRATEGY,
    permission=_strategy_permission(DELETE_FEATURE_STRATEGY),
    statuses=(409,),
)
def delete_feature_strategy(caller, conn, projectId, featureName, environment, strategyId):
    """Remove the strategy (200, no body). When no strategy is left enabled, the flag is
    switched off there. Records ``feature-strategy-remove``."""
    strategies.remove(conn, caller, projectId, featureName, environment, str(strategyId), state().clock)


@operation(
    bp,
    STRATEGIES_PATH + "/set-sort-order",
    method="POST",
    section=SECTION,
    summary="Set the order of a flag's strategies",
    response=None,
    body=SortOrderSchema(many=True),
    path=FLAG_ENVIRONMENT,
    permission=_strategy_permission(UPDATE_FEATURE_STRATEGY),
    statuses=(409,),
)
def set_strategy_sort_order(caller, conn, projectId, featureName, environment, body):
    """Give the strategies named their sortOrder (the others keep theirs); an id that is not
    one of the flag's strategies there: 400. Records ``strategy-order-changed`` when the
    order changed."""
    strategies.set_sort_order(conn, caller, projectId, featureName, environment, body, state().clock)
