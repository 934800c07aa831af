"""Projects, the roles users hold in them, and the install's environments, as the command line
changes them, each change with its event (spec 2.3, 6) in its own transaction.

The API does not change projects (as in the reference server's open-source build): an
operator does, with ``flagadmin project ...`` and ``flagadmin environment add``. The functions
take the :class:`~flagadmin.events.Actor` that makes the change (``events.COMMAND_LINE`` for
the command line, ``events.SCIM_CLIENT`` for group mappings), so every door records the same
events. A change refused raises one of :mod:`flagadmin.refusals` (its message says why and what
to do) and writes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import events
from ..events import Actor
from ..permissions import roles as permission_roles
from ..records import as_json
from ..refusals import Conflict, Invalid, NotFound
from ..store import Connection
from ..store import environments as store_environments
from ..store import projects as store_projects
from ..store import tokens as store_tokens
from ..timestamps import SYSTEM_CLOCK, Clock
from ..tokens import changes as token_changes
from . import limits as resource_limits
from .changes import LOCK as FEATURES_LOCK
from .names import ENVIRONMENT_TYPES, name_problem

#: The transaction's lock name for project, role and environment changes: the flags' own, as
#: these read and write what flag changes do (a project's flags before it is deleted, every
#: live flag when an environment is added, the roles behind permissions): on PostgreSQL they
#: serialise as SQLite's one writer serialises everything.
LOCK = FEATURES_LOCK

#: Stands for "leave as it is" where None is a value (a description removed).
UNCHANGED: Any = object()


def _project_data(project: dict[str, Any]) -> dict[str, Any]:
    return {"id": project["id"], "name": project["name"], "description": project["description"]}


def _existing(conn: Connection, project_id: str) -> dict[str, Any]:
    project = store_projects.get(conn, project_id)
    if project is None:
        raise NotFound(f'There is no project "{project_id}".')
    return project


def create(
    conn: Connection,
    actor: Actor,
    project_id: str,
    name: str | None = None,
    description: str | None = None,
    clock: Clock = SYSTEM_CLOCK,
    limits: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """Create a project (``name`` defaults to its id); record ``project-created`` with the
    project as ``data``. Returns ``{"id", "name", "description"}``. ``limits``: the
    instance's resource limits (None: ``FLAGADMIN_RESOURCE_LIMITS``).

    :raise Invalid: the id is not URL-friendly, or the projects reach the ``projects`` limit.
    :raise Conflict: a project has it.
    """
    problem = name_problem(project_id)
    if problem:
        raise Invalid(f"The project id {problem}.")
    with conn.write(LOCK):
        if store_projects.get(conn, project_id) is not None:
            raise Conflict(
                f'A project "{project_id}" exists already; change it with `flagadmin project update`.'
            )
        resource_limits.refuse_past("projects", store_projects.count(conn), limits, "project")
        store_projects.insert(conn, project_id, name or project_id, description or None)
        project = _project_data(_existing(conn, project_id))
        events.record(conn, "project-created", actor, project=project_id, data=project, clock=clock)
    return project


def update(
    conn: Connection,
    actor: Actor,
    project_id: str,
    name: str | None = None,
    description: Any = UNCHANGED,
    clock: Clock = SYSTEM_CLOCK,
) -> bool:
    """Change a project's name and/or description (None or ``""`` removes it); record
    ``project-updated`` with ``data`` and ``preData``. Returns False when nothing changed.

    :raise NotFound: no such project.
    :raise Invalid: an empty name.
    """
    if name is not None and not name.strip():
        raise Invalid("A project's name cannot be empty.")
    with conn.write(LOCK):
        before = _project_data(_existing(conn, project_id))
        after = {
            **before,
            "name": before["name"] if name is None else name,
            "description": before["description"] if description is UNCHANGED else (description or None),
        }
        if after == before:
            return False
        store_projects.update(conn, project_id, after["name"], after["description"])
        events.record(
            conn, "project-updated", actor, project=project_id, data=after, pre_data=before, clock=clock
        )
    return True


def delete(conn: Connection, actor: Actor, project_id: str, clock: Clock = SYSTEM_CLOCK) -> None:
    """Delete a project that holds no flag, live or archived, its members' roles and its
    segments; record ``project-deleted``. As on the reference server, the client and frontend
    tokens of this one project are deleted with it (``api-token-deleted`` each: a later project
    of the same id is not theirs to read), and those of several projects read the others only.

    :raise NotFound: no such project.
    :raise Conflict: it still holds flags (the message says how many and how to remove them).
    """
    with conn.write(LOCK):
        _existing(conn, project_id)
        counts = store_projects.flag_counts(conn, project_id)
        if counts["live"] or counts["archived"]:
            raise Conflict(
                f'Project "{project_id}" still holds {counts["live"]} live and {counts["archived"]} '
                "archived flags, and a project is deleted only when it holds none: archive each live "
                f"flag (DELETE /api/admin/projects/{project_id}/features/NAME), then delete each "
                "archived one (DELETE /api/admin/archive/NAME). Nothing was changed."
            )
        for token in store_tokens.api_tokens(conn, project=project_id):
            if token["projects"] == [project_id]:
                token_changes.revoke(conn, actor, token["id"])
            else:
                store_tokens.set_projects(
                    conn, token["id"], [p for p in token["projects"] if p != project_id]
                )
        store_projects.delete(conn, project_id)
        events.record(conn, "project-deleted", actor, project=project_id, clock=clock)


def _member(conn: Connection, project_id: str, username: str) -> tuple[dict[str, Any], dict[str, Any]]:
    project = _existing(conn, project_id)
    user = store_projects.find_user(conn, username)
    if user is None:
        raise NotFound(f"No user has the username {as_json(username)}.")
    return project, user


def _role_data(user: dict[str, Any], role: str) -> dict[str, Any]:
    return {"userId": user["id"], "username": user["username"], "email": user["email"], "roleName": role}


def set_role(
    conn: Connection, actor: Actor, project_id: str, username: str, role: str, clock: Clock = SYSTEM_CLOCK
) -> str:
    """Make ``role`` (``Owner``, ``Member`` or a declared custom role's name) the user's only
    role in the project. Records ``project-user-added`` when she had none there,
    ``project-user-role-changed`` (``preData.roleName``: her earlier roles, comma-separated)
    when she had others. Returns ``"added"``, ``"changed"`` or ``"unchanged"``.

    :raise NotFound: no such project or user.
    :raise Invalid: an empty role, or one not declared (the message lists the declared roles).
    """
    role = role.strip()
    if not role:
        raise Invalid("A role name cannot be empty.")
    with conn.write(LOCK):
        _, user = _member(conn, project_id, username)
        permission_roles.require_declared(conn, role)
        before = store_projects.member_roles(conn, project_id, user["id"])
        if before == [role]:
            return "unchanged"
        store_projects.set_role(conn, project_id, user["id"], role)
        if not before:
            events.record(
                conn,
                "project-user-added",
                actor,
                project=project_id,
                data=_role_data(user, role),
                clock=clock,
            )
            return "added"
        events.record(
            conn,
            "project-user-role-changed",
            actor,
            project=project_id,
            data=_role_data(user, role),
            pre_data=_role_data(user, ", ".join(before)),
            clock=clock,
        )
        return "changed"


def remove_role(
    conn: Connection, actor: Actor, project_id: str, username: str, role: str, clock: Clock = SYSTEM_CLOCK
) -> None:
    """Take ``role`` in the project from the user; record ``project-user-removed`` with the
    role she lost as ``preData``.

    :raise NotFound: no such project or user, or she does not hold that role there (the
        message lists the roles she holds).
    """
    with conn.write(LOCK):
        _, user = _member(conn, project_id, username)
        if not store_projects.remove_role(conn, project_id, user["id"], role):
            held = ", ".join(store_projects.member_roles(conn, project_id, user["id"])) or "none"
            raise NotFound(
                f'{username} does not hold the role "{role}" in project "{project_id}" (her roles there: '
                f"{held}). Nothing was changed."
            )
        events.record(
            conn,
            "project-user-removed",
            actor,
            project=project_id,
            pre_data=_role_data(user, role),
            clock=clock,
        )


def add_environment(
    conn: Connection,
    actor: Actor,
    name: str,
    type: str = "development",
    sort_order: int = 0,
    clock: Clock = SYSTEM_CLOCK,
    limits: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """Add an environment to the install: every live flag gets it, switched off (archived
    flags when revived). Records ``environment-created`` with the environment as ``data``.
    Returns ``{"name", "type", "sortOrder"}``. ``limits``: the instance's resource limits
    (None: ``FLAGADMIN_RESOURCE_LIMITS``).

    :raise Invalid: the name is not URL-friendly, the type unknown, or the environments reach
        the ``environments`` limit.
    :raise Conflict: it exists already.
    """
    problem = name_problem(name)
    if problem:
        raise Invalid(f"The environment name {problem}.")
    if type not in ENVIRONMENT_TYPES:
        raise Invalid(
            f"The environment type must be one of {', '.join(ENVIRONMENT_TYPES)}; got {as_json(type)}."
        )
    with conn.write(LOCK):
        if store_environments.get(conn, name) is None:
            existing = len(store_environments.list_all(conn))
            resource_limits.refuse_past("environments", existing, limits, "environment")
        if not store_environments.insert(conn, name, type, sort_order, clock.now_rfc3339()):
            raise Conflict(f'The environment "{name}" exists already.')
        environment = store_environments.get(conn, name)
        events.record(
            conn,
            "environment-created",
            actor,
            environment=name,
            data={**environment, "enabled": True, "protected": False},
            clock=clock,
        )
    return environment
