"""Who may read and change which flags, and the look-ups that check it before a change.

Permissions carry the reference server's names (a 403 names the one missing, spec 5.3, 7).
Root roles Admin and Editor hold every permission in every project (an admin API token acts as
Admin); any other user holds them in the projects where she has a role
(``store.visibility.project_roles``, given by ``flagadmin project role`` or by a SCIM group).
Everyone else is refused with :class:`~flagadmin.refusals.Forbidden`.

The look-ups refuse in the order the reference server answers: a project that does not exist
(404) before a permission the caller lacks (403), then a flag that is not in the project (404).
"""

from __future__ import annotations

from typing import Any

from ..refusals import Conflict, Forbidden, NotFound
from ..store import Connection
from ..store import features as store_features
from ..store import projects as store_projects
from ..store.tokens import Caller
from ..store.visibility import project_roles

#: Permission names, as the reference server names them (spec 7: a 403 names the one missing).
CREATE_FEATURE = "CREATE_FEATURE"
UPDATE_FEATURE = "UPDATE_FEATURE"
DELETE_FEATURE = "DELETE_FEATURE"
UPDATE_FEATURE_ENVIRONMENT = "UPDATE_FEATURE_ENVIRONMENT"


def sees_project(conn: Connection, caller: Caller, project_id: str) -> bool:
    """True when ``caller`` may see and change the flags of ``project_id``: root role Admin or
    Editor (an admin token acts as Admin), or any role in the project."""
    return caller.sees_all_projects or bool(project_roles(conn, caller.user_id, project_id))


def require(
    conn: Connection, caller: Caller, project_id: str, permission: str | None, environment: str | None = None
) -> None:
    """Check that ``caller`` holds ``permission`` in ``project_id`` (None: may see its flags),
    in ``environment`` for a permission granted per environment.

    :raise Forbidden: she does not; the message names the permission and the project.
    """
    if sees_project(conn, caller, project_id):
        return
    how = (
        "root role Admin or Editor, or a role in the project "
        f"(an operator gives one with `flagadmin project role {project_id} USERNAME Member`)"
    )
    if permission is None:
        raise Forbidden(
            f'You cannot see the flags of project "{project_id}": that needs {how}.', project=project_id
        )
    raise Forbidden(
        "You don't have the required permissions to perform this operation. To perform this "
        f'action, you need the "{permission}" permission in project "{project_id}": {how}.',
        permission=permission,
        project=project_id,
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
    event_tags: bool = False,
) -> dict[str, Any]:
    """The flag ``name`` of project ``project_id`` (live or archived; ``store.features``'
    row), once the project exists and ``caller`` holds ``permission`` in it. ``event_tags``:
    with its tags as events carry them under ``event_tags``, read by the same statement (for a
    write that records an event and leaves the tags as they are).

    :raise NotFound: no such project, or no such flag in it (the message says where the flag
        is when the caller can see that project).
    :raise Forbidden: the caller lacks ``permission`` in the project.
    """
    project_found, flag = store_features.get_beside_project(conn, project_id, name, event_tags=event_tags)
    if not project_found:
        raise no_project(project_id)
    require(conn, caller, project_id, permission)
    if flag is None or flag["project_id"] != project_id:
        elsewhere = ""
        if flag is not None and sees_project(conn, caller, flag["project_id"]):
            elsewhere = f', but project "{flag["project_id"]}" has one'
        raise NotFound(f'There is no flag "{name}" in project "{project_id}"{elsewhere}.')
    return flag


def live_flag_in_project(
    conn: Connection, caller: Caller, project_id: str, name: str, permission: str | None
) -> dict[str, Any]:
    """:func:`flag_in_project`, refusing an archived flag.

    :raise Conflict: the flag is archived; the message says how to revive it.
    """
    flag = flag_in_project(conn, caller, project_id, name, permission)
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
        project, and she cannot see that one, so the message does not name it (a flag's name
        is no secret: names are unique across projects, so a create finds it taken anyway).
    """
    flag = store_features.get(conn, name)
    if flag is None:
        raise NotFound(f'There is no flag "{name}", live or archived.')
    if not sees_project(conn, caller, flag["project_id"]):
        raise Forbidden(
            "You don't have the required permissions to perform this operation. To perform this "
            f'action, you need the "{permission}" permission in the project of flag "{name}": '
            "root role Admin or Editor, or a role in that project (an operator gives one with "
            "`flagadmin project role PROJECT USERNAME Member`).",
            permission=permission,
        )
    return flag
