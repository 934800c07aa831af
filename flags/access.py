"""Who may read and change which flags, and the look-ups that check it before a change.

Permissions carry the reference server's names (:mod:`flagadmin.permissions.names`; a 403
names the one missing and, for one granted per environment, the environment: spec 5.3, 7).
Root roles Admin and Editor hold every permission in every project and environment (an admin
API token acts as Admin). Anyone else holds a permission in a project through the roles she
holds there (``project_roles``: given by ``flagadmin project role`` or by a SCIM group): Owner,
Member or a custom role, each granting what :mod:`flagadmin.permissions.roles` says. Any role
lets her see the project's flags, a role that grants nothing included (read-only). Everyone
else is refused with :class:`~flagadmin.refusals.Forbidden`.

The look-ups refuse in the order the reference server answers: a project that does not exist
(404) before a permission the caller lacks (403), then a flag that is not in the project (404).
"""

from __future__ import annotations

from typing import Any

from ..permissions import roles as permission_roles
from ..permissions.names import (
    CREATE_FEATURE,
    DELETE_FEATURE,
    ENVIRONMENT_PERMISSIONS,
    PROJECT_PERMISSIONS,
    UPDATE_FEATURE,
    UPDATE_FEATURE_ENVIRONMENT,
)
from ..refusals import Conflict, Forbidden, NotFound
from ..store import Connection
from ..store import features as store_features
from ..store import projects as store_projects
from ..store import roles as store_roles
from ..store.tokens import Caller
from ..store.visibility import project_roles

__all__ = [
    "CREATE_FEATURE",
    "DELETE_FEATURE",
    "UPDATE_FEATURE",
    "UPDATE_FEATURE_ENVIRONMENT",
    "archived_flag",
    "flag_in_project",
    "holds",
    "live_flag_in_project",
    "no_project",
    "project",
    "refuse_archived",
    "require",
    "sees_project",
]


def sees_project(conn: Connection, caller: Caller, project_id: str) -> bool:
    """True when ``caller`` may see the flags of ``project_id``: root role Admin or Editor (an
    admin token acts as Admin), or any role in the project (one that grants nothing included)."""
    return caller.sees_all_projects or bool(project_roles(conn, caller.user_id, project_id))


def holds(
    conn: Connection, caller: Caller, project_id: str | None, permission: str, environment: str | None = None
) -> bool:
    """Whether ``caller`` holds ``permission`` in ``project_id`` (None: a root permission, held
    by root roles only), in ``environment`` for a permission granted per environment (None
    there: only a grant in every environment counts)."""
    if caller.sees_all_projects:
        return True
    if project_id is None or caller.user_id is None or permission not in PROJECT_PERMISSIONS:
        return False
    scoped = environment if permission in ENVIRONMENT_PERMISSIONS else None
    return store_roles.holds(conn, caller.user_id, project_id, permission, scoped)


def require(
    conn: Connection,
    caller: Caller,
    project_id: str | None,
    permission: str | None,
    environment: str | None = None,
) -> None:
    """Check that ``caller`` holds ``permission`` in ``project_id`` (permission None: may see
    its flags; project None: a root permission such as CREATE_SEGMENT, held by root roles
    Admin and Editor only), in ``environment`` for a permission granted per environment
    (:data:`~flagadmin.permissions.names.ENVIRONMENT_PERMISSIONS`; ignored for the others;
    None for one of them: only a grant in every environment counts).

    :raise Forbidden: she does not; the message names the permission, the environment where it
        is scoped and the project, and says how an operator grants it.
    """
    if permission is None:
        if project_id is not None and sees_project(conn, caller, project_id):
            return
        raise Forbidden(
            f'You cannot see the flags of project "{project_id}": that needs root role Admin or Editor, '
            "or a role in the project (an operator gives one with "
            f"`flagadmin project role {project_id} USERNAME ROLE`; `flagadmin role list` shows the roles).",
            project=project_id,
        )
    if holds(conn, caller, project_id, permission, environment):
        return
    scoped = environment if permission in ENVIRONMENT_PERMISSIONS else None
    raise Forbidden(
        missing_permission(conn, caller, project_id, permission, scoped),
        permission=permission,
        project=project_id,
        environment=scoped,
    )


def missing_permission(
    conn: Connection,
    caller: Caller,
    project_id: str | None,
    permission: str,
    environment: str | None,
    *,
    where: str | None = None,
) -> str:
    """The message of a refusal for lack of ``permission`` in ``project_id`` (None: a root
    permission) and ``environment`` (None: not scoped): what is needed, the caller's roles there,
    and how an operator grants it. ``where`` replaces the words naming the project."""
    place = where or f'project "{project_id}"'
    in_environment = f' in the "{environment}" environment of' if environment else " in"
    start = (
        "You don't have the required permissions to perform this operation. To perform this action, "
        f'you need the "{permission}" permission'
    )
    if project_id is None and where is None:
        return f"{start}: root roles Admin and Editor hold it, and no project role grants it."
    held = sorted(project_roles(conn, caller.user_id, project_id)) if project_id is not None else []
    yours = f" Your roles there ({', '.join(held)}) do not grant it." if held else ""
    built_in = permission_roles.grantors(permission)
    grantors = f"; the project roles {' and '.join(built_in)} grant it" if built_in else ""
    scoped = f"{permission}:{environment}" if environment else permission
    project_arg = project_id if project_id is not None else "PROJECT"
    return (
        f"{start}{in_environment} {place}.{yours} Root roles Admin and Editor hold it{grantors}. "
        f"An operator gives a role with `flagadmin project role {project_arg} USERNAME ROLE`, and "
        f"declares one that grants it with `flagadmin role create NAME --permission {scoped}`."
    )


def project(conn: Connection, project_id: str) -> dict[str, Any]:
    """The project ``project_id`` (``store.projects.get``'s row).

    :raise NotFound: there is none.
    """
    found = store_projects.get(conn, project_id)
    if found is None:
        raise no_project(project_id)
    return found


def no_project(project_id: str) -> NotFound:
    """The refusal of a path that names a project that does not exist (404)."""
    return NotFound(f'There is no project "{project_id}".')


def flag_in_project(
    conn: Connection,
    caller: Caller,
    project_id: str,
    name: str,
    permission: str | None,
    *,
    environment: str | None = None,
    event_tags: bool = False,
) -> dict[str, Any]:
    """The flag ``name`` of project ``project_id`` (live or archived; ``store.features``'
    row), once the project exists and ``caller`` holds ``permission`` in it (in ``environment``
    for a permission granted per environment, see :func:`require`). ``event_tags``:
    with its tags as events carry them under ``event_tags``, read by the same statement (for a
    write that records an event and leaves the tags as they are).

    :raise NotFound: no such project, or no such flag in it (the message says where the flag
        is when the caller can see that project).
    :raise Forbidden: the caller lacks ``permission`` in the project.
    """
    project_found, flag = store_features.get_beside_project(conn, project_id, name, event_tags=event_tags)
    if not project_found:
        raise no_project(project_id)
    require(conn, caller, project_id, permission, environment)
    if flag is None or flag["project_id"] != project_id:
        elsewhere = ""
        if flag is not None and sees_project(conn, caller, flag["project_id"]):
            elsewhere = f', but project "{flag["project_id"]}" has one'
        raise NotFound(f'There is no flag "{name}" in project "{project_id}"{elsewhere}.')
    return flag


def live_flag_in_project(
    conn: Connection,
    caller: Caller,
    project_id: str,
    name: str,
    permission: str | None,
    *,
    environment: str | None = None,
) -> dict[str, Any]:
    """:func:`flag_in_project`, refusing an archived flag.

    :raise Conflict: the flag is archived; the message says how to revive it.
    """
    flag = flag_in_project(conn, caller, project_id, name, permission, environment=environment)
    refuse_archived(flag)
    return flag


def refuse_archived(flag: dict[str, Any]) -> None:
    """:raise Conflict: ``flag`` is archived; the message says how to revive it."""
    if flag["archived_at"] is not None:
        raise Conflict(
            f'Flag "{flag["name"]}" is archived: revive it first with '
            f"POST /api/admin/archive/revive/{flag['name']}."
        )


def archived_flag(conn: Connection, caller: Caller, name: str, permission: str) -> dict[str, Any]:
    """The flag ``name``, live or archived (for the archive's operations, whose paths name no
    project), once ``caller`` holds ``permission`` in its project.

    :raise NotFound: no flag has that name.
    :raise Forbidden: the caller lacks ``permission`` in the flag's project. The path names no
        project: the message names it only to a caller who sees it (a flag's name is no
        secret: names are unique across projects, so a create finds it taken anyway).
    """
    flag = store_features.get(conn, name)
    if flag is None:
        raise NotFound(f'There is no flag "{name}", live or archived.')
    project_id = flag["project_id"]
    if holds(conn, caller, project_id, permission):
        return flag
    seen = sees_project(conn, caller, project_id)
    where = (
        f'project "{project_id}" (the project of flag "{name}")' if seen else f'the project of flag "{name}"'
    )
    raise Forbidden(
        missing_permission(
            conn,
            caller,
            project_id if seen else None,
            permission,
            None,
            where=where,
        ),
        permission=permission,
        project=project_id if seen else None,
    )
