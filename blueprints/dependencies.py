"""Dependencies between flags on the reference server's paths and bodies (Unleash 8.2.0): ``POST``
and ``DELETE .../features/{child}/dependencies``, ``DELETE .../dependencies/{parent}``, the
parents a flag could have (``GET .../features/{child}/parents``), the variants a parent may
resolve to (``GET .../features/{parent}/parent-variants``) and whether any exist (``GET
/api/admin/projects/{projectId}/dependencies``). Body: ``createDependentFeatureSchema``. The
rules and events are :mod:`flagadmin.rules.dependencies`'.
"""

from __future__ import annotations

from flask import Blueprint
from marshmallow import Schema, fields, validate

from ..flags.names import NAME_MAX_LENGTH
from ..permissions.names import UPDATE_FEATURE_DEPENDENCY
from ..rules import dependencies
from ..web.auth import Permission
from ..web.operations import PathParameter, operation
from ..web.state import state
from .features import PROJECT, StrictBoolean

bp = Blueprint("dependencies", __name__, url_prefix="/api/admin")

#: The section of the spec these operations belong to: other operations of the service (1),
#: here the rollout rules the reference server keeps on these paths.
SECTION = "1 (rollout rules, on the reference server's paths)"

CHILD = {**PROJECT, "child": PathParameter("Name of the flag that depends on another (the child).")}
PARENT = {**PROJECT, "parent": PathParameter("Name of a flag others may depend on (the parent).")}
CHILD_AND_PARENT = {**CHILD, "parent": PathParameter("Name of the flag the child depends on.")}

CHANGE = Permission.in_project(UPDATE_FEATURE_DEPENDENCY)


class PlainAnswer(dict):
    """The OpenAPI schema (a plain dict) of an answer that is not an object (an array of
    names, a boolean), usable as an operation's ``response``: the view's value is sent as it
    is (:meth:`dump`)."""

    def dump(self, value):
        """``value`` unchanged: the view built it in its final shape."""
        return value


NAMES = PlainAnswer(type="array", items={"type": "string"})


class CreateDependentFeatureSchema(Schema):
    """The parent a flag depends on (the reference's ``createDependentFeatureSchema``)."""

    feature = fields.String(
        required=True,
        validate=validate.Length(min=1, max=NAME_MAX_LENGTH),
        metadata={"description": "Name of the parent: a live flag of the same project.", "example": "parent"},
    )
    enabled = StrictBoolean(
        metadata={"description": "true (default): the parent must be on; false: it must be off."}
    )
    variants = fields.List(
        fields.String(validate=validate.Length(min=1, max=NAME_MAX_LENGTH)),
        metadata={"description": "With enabled true: the parent must resolve to one of these variants."},
    )


class FlagDependencySchema(Schema):
    """A flag's dependency as ``GET`` of the flag shows it (the reference's
    ``dependentFeatureSchema``)."""

    feature = fields.String(required=True, metadata={"description": "Name of the parent flag."})
    enabled = fields.Boolean(metadata={"description": "false: the parent must be off."})
    variants = fields.List(fields.String(), metadata={"description": "Variants the parent must resolve to."})


@operation(
    bp,
    "/projects/<projectId>/features/<child>/dependencies",
    method="POST",
    section=SECTION,
    summary="Make a flag depend on a parent flag",
    response=None,
    body=CreateDependentFeatureSchema(),
    path=CHILD,
    permission=CHANGE,
    statuses=(409,),
)
def add_feature_dependency(caller, conn, projectId, child, body):
    """Make ``feature`` the parent of the flag (200, no body), replacing any parent it had: a
    flag has one parent, one level deep (a parent has no parent, a child no children), in the
    same project. 400 naming the field for the flag itself, an unknown or archived parent, or
    a chain; 409 for an archived child. Records ``feature-dependency-added``."""
    dependencies.add(conn, caller, projectId, child, body, state().clock)


@operation(
    bp,
    "/projects/<projectId>/features/<child>/dependencies",
    method="DELETE",
    section=SECTION,
    summary="Remove a flag's dependencies",
    response=None,
    path=CHILD,
    permission=CHANGE,
)
def delete_feature_dependencies(caller, conn, projectId, child):
    """Remove the flag's dependency, whichever its parent (200, no body). Records
    ``feature-dependencies-removed`` when it had one."""
    dependencies.remove_all(conn, caller, projectId, child, state().clock)


@operation(
    bp,
    "/projects/<projectId>/features/<child>/dependencies/<parent>",
    method="DELETE",
    section=SECTION,
    summary="Remove a flag's dependency on one parent",
    response=None,
    path=CHILD_AND_PARENT,
    permission=CHANGE,
)
def delete_feature_dependency(caller, conn, projectId, child, parent):
    """Remove the flag's dependency on ``parent`` (200, no body, whether or not it had it).
    Records ``feature-dependency-removed`` when it had it."""
    dependencies.remove(conn, caller, projectId, child, parent, state().clock)


@operation(
    bp,
    "/projects/<projectId>/features/<child>/parents",
    section=SECTION,
    summary="List the flags a flag could depend on",
    response=NAMES,
    path=CHILD,
    permission=Permission.in_project(None),
)
def list_parent_options(caller, conn, projectId, child):
    """The live flags of the project the flag could depend on (not itself, none that depends
    on another), by name."""
    return dependencies.possible_parents(conn, caller, projectId, child)


@operation(
    bp,
    "/projects/<projectId>/features/<parent>/parent-variants",
    section=SECTION,
    summary="List the variants a parent flag may resolve to",
    response=NAMES,
    path=PARENT,
    permission=Permission.in_project(None),
)
def list_parent_variant_options(caller, conn, projectId, parent):
    """The names of the flag's variants, of its strategies and of its environments, each once,
    sorted."""
    return dependencies.parent_variants(conn, caller, projectId, parent)


@operation(
    bp,
    "/projects/<projectId>/dependencies",
    section=SECTION,
    summary="Whether any flag depends on another",
    response=PlainAnswer(type="boolean"),
    path=PROJECT,
    permission=Permission.in_project(None),
)
def check_dependencies_exist(caller, conn, projectId):
    """true when some flag of the install depends on another (as the reference answers on
    this path), false otherwise."""
    return dependencies.any_exist(conn, caller, projectId)
