"""The roles SCIM groups grant in flagadmin: its own role mappings, never the identity
provider's (spec 4.5, the roles SCIM groups grant; the admin API's ``/api/admin/group-roles``
and ``flagadmin group-role``). RFC 7643 and RFC 7644 leave what a group means to the service
provider; no SCIM request reads or changes these.

A mapping names a group by its displayName (any case) and may name a group that SCIM has not
created yet; it outlives the group. A group grants its members at least a root role (their
effective root role is the highest of their own and their groups') and roles in projects, as
if given to each of them. Root role mappings are recorded as ``group-updated``, project role
mappings as ``project-access-group-roles-updated`` (``...-deleted`` when the group is left
with no role in the project). Refusals: :class:`MappingError` (400) and
:class:`UnknownProject` (404), both :mod:`flagadmin.refusals`.
"""

from __future__ import annotations

import re
from typing import Any

from .. import events
from ..permissions import roles as permission_roles
from ..refusals import Invalid, NotFound
from ..spec import ROOT_ROLES
from ..store import Connection
from ..store import directory as store
from ..store.scim_filter import group_scim_id
from ..timestamps import Clock
from .protocol import MAX_STRING, quoted


class MappingError(Invalid):
    """400: a role mapping cannot be made as asked (a blank group name, an unknown root role,
    a role name too long); the message says why."""


class UnknownProject(NotFound):
    """404: the mapping names a project that does not exist."""


#: Characters of a custom project role name at most.
MAX_ROLE_LENGTH = 100


#: A group name or a role: at least one character that is not (ASCII) white space, no NUL.
#: The same pattern is the admin API's (``blueprints/group_roles.py``); it reads the same in
#: Python and in the ECMA dialect of OpenAPI.
NAME_PATTERN = "^[^\\x00]*[^\\x00\\t\\n\\v\\f\\r ][^\\x00]*$"


def _group_name(group: str) -> str:
    """``group`` checked as a group's name.

    :raise MappingError: it is empty, blank, holds NUL or is too long.
    """
    name = group or ""
    if not re.fullmatch(NAME_PATTERN, name):
        raise MappingError("Name the group by its displayName; it must not be empty or blank, or hold NUL.")
    if len(name) > MAX_STRING:
        raise MappingError(f"A group name has at most {MAX_STRING} characters.")
    return name


def mapping_document(mapping: dict[str, Any]) -> dict[str, Any]:
    """A group's role mapping in the admin API's shape: ``{"group", "rootRole", "projects":
    [{"project", "roles"}], "scimGroupId", "members"}``."""
    return {
        "group": mapping["group"],
        "rootRole": mapping["root_role"],
        "projects": [{"project": project, "roles": roles} for project, roles in mapping["projects"].items()],
        "scimGroupId": None if mapping["group_id"] is None else group_scim_id(mapping["group_id"]),
        "members": mapping["members"],
    }


def group_roles(conn: Connection, group: str | None = None) -> list[dict[str, Any]]:
    """Every group role mapping (or the one of ``group``), by group name folded, each as
    :func:`mapping_document` shapes it.

    :raise MappingError: ``group`` is no group name.
    """
    return [
        mapping_document(m)
        for m in store.group_role_mappings(conn, None if group is None else _group_name(group))
    ]


def unmapped(group: str) -> dict[str, Any]:
    """The mapping of a group that grants nothing (and that SCIM has not created)."""
    return {"group": group, "rootRole": None, "projects": [], "scimGroupId": None, "members": 0}


def _mapping_of(conn: Connection, group: str) -> dict[str, Any]:
    """The mapping of ``group``, also when it grants nothing."""
    found = store.group_role_mappings(conn, group)
    return mapping_document(found[0]) if found else unmapped(group)


def set_group_root_role(
    conn: Connection, group: str, root_role: str | None, actor: events.Actor, clock: Clock
) -> dict[str, Any]:
    """Make the members of ``group`` (its displayName, any case; the group may not exist yet)
    have at least ``root_role`` (None: take the mapping back). Records ``group-updated``.
    Returns the group's mapping.

    :raise MappingError: an empty group name or a root role that is not Admin, Editor or Viewer.
    """
    name = _group_name(group)
    if root_role is not None and root_role not in ROOT_ROLES:
        raise MappingError(f"{quoted(str(root_role))} is not a root role: use {', '.join(ROOT_ROLES)}.")
    with conn.write("directory"):
        before = store.root_role_of_group(conn, name)
        store.set_root_role_of_group(conn, name, root_role)
        events.record(
            conn,
            "group-updated",
            actor,
            data={"name": name, "rootRole": root_role},
            pre_data={"name": name, "rootRole": before},
            clock=clock,
        )
        return _mapping_of(conn, name)


def remove_group_root_role(
    conn: Connection, group: str, root_role: str, actor: events.Actor, clock: Clock
) -> dict[str, Any]:
    """Take back the mapping of ``group`` to ``root_role``; nothing changes when the group
    grants another root role, or none. Returns the group's mapping.

    :raise MappingError: an empty group name.
    """
    name = _group_name(group)
    with conn.write("directory"):
        if store.root_role_of_group(conn, name) == root_role:
            return set_group_root_role(conn, name, None, actor, clock)
        return _mapping_of(conn, name)


def change_group_project_role(
    conn: Connection, group: str, project: str, role: str, *, remove: bool, actor: events.Actor, clock: Clock
) -> dict[str, Any]:
    """Make ``group`` grant ``role`` (``Owner``, ``Member`` or a declared custom role,
    ``flagadmin role list``) in ``project`` to its members, or take it back (``remove``: any
    name it grants). Records ``project-access-group-roles-updated`` (``...-deleted`` when no
    role is left). Returns the group's mapping.

    :raise UnknownProject: no project has the id ``project``.
    :raise MappingError: an empty group name or role.
    :raise flagadmin.refusals.Invalid: a role to give that is not declared (the message lists
        the declared roles).
    """
    name = _group_name(group)
    role = role or ""
    if not re.fullmatch(NAME_PATTERN, role) or len(role) > MAX_ROLE_LENGTH:
        raise MappingError(
            f"A role is Owner, Member or a custom role's name (1 to {MAX_ROLE_LENGTH} characters)."
        )
    with conn.write("directory"):
        if not store.project_exists(conn, project):
            raise UnknownProject(f"No project has the id {quoted(str(project))}.")
        if not remove:
            permission_roles.require_declared(conn, role)
        before = store.project_roles_of_group(conn, name, project)
        if remove:
            store.remove_project_role_of_group(conn, name, project, role)
        else:
            store.add_project_role_of_group(conn, name, project, role)
        after = store.project_roles_of_group(conn, name, project)
        kind = "project-access-group-roles-deleted" if not after else "project-access-group-roles-updated"
        if after != before:
            events.record(
                conn,
                kind,
                actor,
                project=project,
                data={"groupName": name, "roles": after},
                pre_data={"groupName": name, "roles": before},
                clock=clock,
            )
        return _mapping_of(conn, name)
