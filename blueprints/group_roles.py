"""The roles SCIM groups grant, ADMIN only: ``GET /api/admin/group-roles``,
``PUT``/``DELETE /api/admin/group-roles/root-role``, ``POST``/``DELETE
/api/admin/group-roles/project-roles``.

flagadmin owns these mappings, never the directory: an identity provider decides who is in
which group (SCIM, ``/scim/v2/Groups``), flagadmin decides what a group grants, by the group's
displayName (any case; the group may not exist yet). The same mappings are set with
``flagadmin group-role`` on the command line. Admin API tokens stay the way in when the
directory is wrong. The mappings' refusals (:mod:`flagadmin.directory.role_mappings`: 400 for
a name or role it cannot take, 404 for an unknown project) are answered by the admin API's
error envelope, as every refusal is.
"""

from __future__ import annotations

from flask import Blueprint
from marshmallow import Schema, fields, validate

from ..directory import role_mappings
from ..directory.protocol import MAX_STRING
from ..events import Actor
from ..spec import ROOT_ROLES
from ..web.auth import Permission
from ..web.operations import operation
from ..web.state import state

bp = Blueprint("group_roles", __name__, url_prefix="/api/admin")

#: Beside spec 4.5 (the SCIM token): what the groups SCIM provisions grant.
SECTION = "4.5 (the roles SCIM groups grant)"


#: A name that is not blank and holds no NUL (the rule of ``flagadmin.directory.role_mappings``).
_NAME = validate.Regexp(
    role_mappings.NAME_PATTERN, error="Must hold a character that is not white space, and no NUL."
)


def _group() -> fields.String:
    return fields.String(
        required=True,
        validate=[validate.Length(min=1, max=MAX_STRING), _NAME],
        metadata={"description": "The group's SCIM displayName (any case).", "example": "Flag admins"},
    )


def _root_role(**kwargs) -> fields.String:
    return fields.String(
        validate=validate.OneOf(ROOT_ROLES),  # worded by records.validation_messages
        metadata={"description": "A root role the group's members get at least."},
        **kwargs,
    )


def _project() -> fields.String:
    return fields.String(
        required=True,
        validate=validate.Length(min=1, max=MAX_STRING),
        metadata={"description": "Id of a project."},
    )


def _role() -> fields.String:
    return fields.String(
        required=True,
        validate=[validate.Length(min=1, max=role_mappings.MAX_ROLE_LENGTH), _NAME],
        metadata={"description": "Owner, Member or a custom role's name.", "example": "Owner"},
    )


class ProjectRolesSchema(Schema):
    """The roles a group grants in one project."""

    project = fields.String(required=True)
    roles = fields.List(fields.String(), required=True)


class GroupRolesSchema(Schema):
    """What one group grants."""

    group = fields.String(required=True, metadata={"description": "The group's displayName."})
    rootRole = fields.String(required=True, allow_none=True)
    projects = fields.List(fields.Nested(ProjectRolesSchema), required=True)
    scimGroupId = fields.String(
        required=True,
        allow_none=True,
        metadata={"description": "The SCIM group's id; null: not created yet."},
    )
    members = fields.Integer(required=True, metadata={"description": "Members of the SCIM group."})


class GroupRolesListSchema(Schema):
    """Every group role mapping, by group name."""

    groupRoles = fields.List(fields.Nested(GroupRolesSchema), required=True)


class GroupRolesQuerySchema(Schema):
    """Which mapping to read."""

    group = fields.String(validate=[validate.Length(min=1, max=MAX_STRING), _NAME])


class RootRoleSchema(Schema):
    """A root role a group grants."""

    group = _group()
    rootRole = _root_role(required=True)


class RootRoleQuerySchema(Schema):
    """The root role to take back (absent: whichever the group grants)."""

    group = _group()
    rootRole = _root_role()


class ProjectRoleSchema(Schema):
    """A role a group grants in a project."""

    group = _group()
    project = _project()
    role = _role()


@operation(
    bp,
    "/group-roles",
    section=SECTION,
    summary="List what SCIM groups grant",
    response=GroupRolesListSchema(),
    query=GroupRolesQuerySchema(),
    permission=Permission.ADMIN,
)
def list_group_roles(caller, conn, group: str | None = None):
    """Every group role mapping (or the one of ``group``, any case): the root role and the
    project roles the members of each group get."""
    return {"groupRoles": role_mappings.group_roles(conn, group)}


@operation(
    bp,
    "/group-roles/root-role",
    method="PUT",
    section=SECTION,
    summary="Make a SCIM group grant a root role",
    response=GroupRolesSchema(),
    body=RootRoleSchema(),
    permission=Permission.ADMIN,
)
def put_root_role(caller, conn, body):
    """Make the members of ``group`` (the group may not exist yet) get at least ``rootRole``:
    a user's root role is the highest of its own and its groups'. Replaces the root role the
    group granted. Returns what the group grants. Recorded as ``group-updated``."""
    return role_mappings.set_group_root_role(
        conn, body["group"], body["rootRole"], Actor.of_caller(caller), state().clock
    )


@operation(
    bp,
    "/group-roles/root-role",
    method="DELETE",
    section=SECTION,
    summary="Take back the root role a SCIM group grants",
    response=GroupRolesSchema(),
    query=RootRoleQuerySchema(),
    permission=Permission.ADMIN,
)
def delete_root_role(caller, conn, group: str, rootRole: str | None = None):
    """Take back the root role ``group`` grants (only if it is ``rootRole``, when given).
    Idempotent. Returns what the group grants. Recorded as ``group-updated``."""
    actor, clock = Actor.of_caller(caller), state().clock
    if rootRole is None:
        return role_mappings.set_group_root_role(conn, group, None, actor, clock)
    return role_mappings.remove_group_root_role(conn, group, rootRole, actor, clock)


@operation(
    bp,
    "/group-roles/project-roles",
    method="POST",
    section=SECTION,
    summary="Make a SCIM group grant a role in a project",
    response=GroupRolesSchema(),
    body=ProjectRoleSchema(),
    permission=Permission.ADMIN,
    statuses=(404,),
)
def post_project_role(caller, conn, body):
    """Make the members of ``group`` (the group may not exist yet) hold ``role`` (Owner, Member
    or a custom role) in ``project``, as if given to each of them. Idempotent. Returns what the
    group grants. Recorded as ``project-access-group-roles-updated``. 404: no such project."""
    return role_mappings.change_group_project_role(
        conn,
        body["group"],
        body["project"],
        body["role"],
        remove=False,
        actor=Actor.of_caller(caller),
        clock=state().clock,
    )


@operation(
    bp,
    "/group-roles/project-roles",
    method="DELETE",
    section=SECTION,
    summary="Take back a role a SCIM group grants in a project",
    response=GroupRolesSchema(),
    query=ProjectRoleSchema(),
    permission=Permission.ADMIN,
    statuses=(404,),
)
def delete_project_role(caller, conn, group: str, project: str, role: str):
    """Take back ``role`` in ``project`` from ``group``. Idempotent. Returns what the group
    grants. Recorded as ``project-access-group-roles-updated`` (``...-deleted`` when the group
    is left with no role in the project). 404: no such project."""
    return role_mappings.change_group_project_role(
        conn,
        group,
        project,
        role,
        remove=True,
        actor=Actor.of_caller(caller),
        clock=state().clock,
    )
