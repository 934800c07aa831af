"""Flags change through the API (issue 10): the rules of names and permissions, each change
and the spec-6 event it records in its own transaction.

Who may do what (the reference server's permission names): root roles Admin and Editor may
change every project's flags; any other user may change the flags of a project where she
holds a role (``store.visibility.project_roles``); an admin API token acts as Admin.
Favorites are the calling user's own, on flags she can see. Everyone else gets 403 naming the
missing permission (spec 5.3, 7).

Every change runs in one write transaction with its event (``events.record``): the flag's
new state, the event and the deliveries it owes commit together or not at all. The tables
written move ``content_version``, so 4.2 and 4.4 answer from the new state at once.
"""

from __future__ import annotations

import re
from typing import Any

import jsonpatch
import jsonpointer

from .. import events
from ..events import Actor
from ..spec import FLAG_TYPES
from ..store import Connection
from ..store import environments as store_environments
from ..store import features as store_features
from ..store import projects as store_projects
from ..store.visibility import project_roles
from ..timestamps import Clock
from ..web.errors import BadDataError, ConflictError, NoAccessError, NotFoundError

#: The reference server's name rule: what ``encodeURIComponent`` leaves as it is (letters,
#: digits and ``- _ . ! ~ * ' ( )``), 1 to 100 characters; ``.`` and ``..`` are refused too,
#: since clients resolve them as path segments.
NAME_PATTERN = r"^(?!\.\.?$)[A-Za-z0-9_.!~*'()-]+$"
NAME_MAX_LENGTH = 100
NAME_RULE = (
    "must be URL-friendly: 1 to 100 of the letters A-Z and a-z, the digits 0-9 and - _ . ! ~ * ' ( ), "
    "and not . or .."
)
_NAME = re.compile(NAME_PATTERN)

#: The kinds of environment (the reference server's types).
ENVIRONMENT_TYPES: tuple[str, ...] = ("development", "test", "preproduction", "production")

#: The fields of a flag that PUT and PATCH may change (issue 10).
MUTABLE_FIELDS: tuple[str, ...] = ("description", "type", "stale", "impressionData")

#: Permission names, as the reference server names them (spec 7: a 403 names the one missing).
CREATE_FEATURE = "CREATE_FEATURE"
UPDATE_FEATURE = "UPDATE_FEATURE"
DELETE_FEATURE = "DELETE_FEATURE"
UPDATE_FEATURE_ENVIRONMENT = "UPDATE_FEATURE_ENVIRONMENT"

#: The transaction's lock name: every flag change serialises on it.
LOCK = "features"


def name_problem(name: Any) -> str | None:
    """Why ``name`` cannot name a flag, project or environment (a message starting with
    ``must``), or None when it can."""
    if not isinstance(name, str) or not name:
        return "must be a non-empty string"
    if len(name) > NAME_MAX_LENGTH:
        return f"must be at most {NAME_MAX_LENGTH} characters long (it has {len(name)})"
    if not _NAME.fullmatch(name) or name.endswith("\n"):
        return NAME_RULE
    return None


# --- who may do what ------------------------------------------------------------------------


def sees_project(conn: Connection, caller: Any, project_id: str) -> bool:
    """True when ``caller`` may see and change the flags of ``project_id``: root role Admin or
    Editor (an admin token acts as Admin), or any role in the project."""
    return caller.sees_all_projects or bool(project_roles(conn, caller.user_id, project_id))


def require(conn: Connection, caller: Any, project_id: str, permission: str | None) -> None:
    """Check that ``caller`` holds ``permission`` in ``project_id`` (None: may see its flags).

    :raise NoAccessError: she does not; the message names the permission and the project.
    """
    if sees_project(conn, caller, project_id):
        return
    how = (
        "root role Admin or Editor, or a role in the project "
        f"(an operator gives one with `flagadmin project role {project_id} USERNAME Member`)"
    )
    if permission is None:
        raise NoAccessError(f'You cannot see the flags of project "{project_id}": that needs {how}.')
    raise NoAccessError(
        "You don't have the required permissions to perform this operation. To perform this "
        f'action, you need the "{permission}" permission in project "{project_id}": {how}.'
    )


def project(conn: Connection, project_id: str) -> dict[str, Any]:
    """The project ``project_id``.

    :raise NotFoundError: there is none.
    """
    found = store_projects.get(conn, project_id)
    if found is None:
        raise no_project(project_id)
    return found


def no_project(project_id: str) -> NotFoundError:
    """The 404 of a path that names a project that does not exist."""
    return NotFoundError(f'There is no project "{project_id}".')


def flag_in_project(
    conn: Connection,
    caller: Any,
    project_id: str,
    name: str,
    permission: str | None,
    *,
    event_tags: bool = False,
) -> dict[str, Any]:
    """The flag ``name`` of project ``project_id`` (live or archived), once the project exists
    and ``caller`` holds ``permission`` in it. ``event_tags``: with its tags as events carry
    them under ``event_tags``, read by the same statement (for a write that records an event
    and leaves the tags as they are).

    :raise NotFoundError: no such project, or no such flag in it (the message says where the
        flag is when the caller can see that project).
    :raise NoAccessError: the caller lacks ``permission`` in the project.
    """
    project_found, flag = store_features.get_beside_project(conn, project_id, name, event_tags=event_tags)
    if not project_found:
        raise no_project(project_id)
    require(conn, caller, project_id, permission)
    if flag is None or flag["project_id"] != project_id:
        elsewhere = ""
        if flag is not None and sees_project(conn, caller, flag["project_id"]):
            elsewhere = f', but project "{flag["project_id"]}" has one'
        raise NotFoundError(f'There is no flag "{name}" in project "{project_id}"{elsewhere}.')
    return flag


def live_flag_in_project(
    conn: Connection, caller: Any, project_id: str, name: str, permission: str | None
) -> dict[str, Any]:
    """:func:`flag_in_project`, refusing an archived flag.

    :raise ConflictError: the flag is archived; the message says how to revive it.
    """
    flag = flag_in_project(conn, caller, project_id, name, permission)
    refuse_archived(flag)
    return flag


def refuse_archived(flag: dict[str, Any]) -> None:
    """:raise ConflictError: ``flag`` is archived; the message says how to revive it."""
    if flag["archived_at"] is not None:
        raise ConflictError(
            f'Flag "{flag["name"]}" is archived: revive it first with '
            f"POST /api/admin/archive/revive/{flag['name']}."
        )


def archived_flag(conn: Connection, caller: Any, name: str, permission: str) -> dict[str, Any]:
    """The flag ``name`` (for the archive's operations), once ``caller`` holds ``permission``
    in its project.

    :raise NotFoundError: no flag has that name.
    :raise NoAccessError: the caller lacks ``permission`` in the flag's project.
    """
    flag = store_features.get(conn, name)
    if flag is None:
        raise NotFoundError(f'There is no flag "{name}", live or archived.')
    require(conn, caller, flag["project_id"], permission)
    return flag


# --- wire shapes ----------------------------------------------------------------------------


def event_data(flag: dict[str, Any]) -> dict[str, Any]:
    """A flag as the reference server's feature events carry it (``data``/``preData``)."""
    data = {
        "name": flag["name"],
        "description": flag["description"],
        "type": flag["type"],
        "project": flag["project_id"],
        "stale": bool(flag["stale"]),
        "createdAt": flag["created_at"],
        "impressionData": bool(flag["impression_data"]),
        "archived": flag["archived_at"] is not None,
    }
    if flag["archived_at"] is not None:
        data["archivedAt"] = flag["archived_at"]
    return data


def _environment_wire(row: dict[str, Any], feature_name: str) -> dict[str, Any]:
    """A flag in one environment (``FlagEnvironmentSchema``'s keys, in its order)."""
    return {
        "name": row["name"],
        "featureName": feature_name,
        "environment": row["name"],
        "type": row["type"],
        "enabled": bool(row["enabled"]),
        "sortOrder": row["sort_order"],
        "lastSeenAt": row["last_seen_at"],
    }


def feature_wire(
    conn: Connection,
    flag: dict[str, Any],
    user_id: int | None,
    tags: list[dict[str, str]] | None = None,
    *,
    environments: list[dict[str, Any]] | None = None,
    favorite: bool | None = None,
) -> dict[str, Any]:
    """One flag in the reference server's ``featureSchema`` shape, as ``user_id`` sees it, its
    keys in the order of ``blueprints.features.FlagSchema`` (the views send it as it is).
    ``tags``, ``environments`` (as :mod:`flagadmin.store.features` gives them) and
    ``favorite``: when the caller has them at hand (it just wrote them); None: read."""
    name = flag["name"]
    wire: dict[str, Any] = {
        "name": name,
        "type": flag["type"],
        "description": flag["description"],
        "project": flag["project_id"],
        "archived": flag["archived_at"] is not None,
        "archivedAt": flag["archived_at"],
        "stale": bool(flag["stale"]),
        "favorite": store_features.is_favorite(conn, user_id, name) if favorite is None else favorite,
        "impressionData": bool(flag["impression_data"]),
        "createdAt": flag["created_at"],
    }
    if flag["created_by_user_id"] is not None:
        wire["createdBy"] = {
            "id": flag["created_by_user_id"],
            "name": flag["creator_name"] or "unknown",
            "imageUrl": flag["creator_image_url"] or "",
        }
    rows = store_features.environments(conn, name) if environments is None else environments
    wire["environments"] = [_environment_wire(row, name) for row in rows]
    wire["tags"] = store_features.tags(conn, name) if tags is None else tags
    return wire


def project_features(conn: Connection, caller: Any, project_id: str) -> dict[str, Any]:
    """The live flags of a project in the reference server's ``projectFeaturesSchema`` shape,
    keys in the order of ``blueprints.features.ProjectFlagsSchema`` (the view sends it as it is).

    :raise NotFoundError: no such project.
    :raise NoAccessError: the caller cannot see it.
    """
    project(conn, project_id)
    require(conn, caller, project_id, None)
    return {
        "version": 2,
        "features": [
            {
                "name": flag["name"],
                "type": flag["type"],
                "description": flag["description"],
                "stale": bool(flag["stale"]),
                "favorite": flag["favorite"],
                "impressionData": bool(flag["impression_data"]),
                "createdAt": flag["created_at"],
                "environments": [
                    {
                        "name": row["name"],
                        "type": row["type"],
                        "enabled": bool(row["enabled"]),
                        "sortOrder": row["sort_order"],
                        "variantCount": 0,
                        "lastSeenAt": row["last_seen_at"],
                    }
                    for row in flag["environments"]
                ],
                "tags": flag["tags"],
            }
            for flag in store_features.project_features(conn, project_id, caller.user_id)
        ],
    }


def get(conn: Connection, caller: Any, project_id: str, name: str) -> dict[str, Any]:
    """One live flag of a project (``featureSchema``).

    :raise NotFoundError: no such project, or no such live flag in it (an archived flag is
        read with 4.4).
    :raise NoAccessError: the caller cannot see the project.
    """
    flag = flag_in_project(conn, caller, project_id, name, None)
    if flag["archived_at"] is not None:
        raise NotFoundError(
            f'Flag "{name}" of project "{project_id}" is archived: GET /api/admin/archive/features '
            f"lists it, and POST /api/admin/archive/revive/{name} brings it back."
        )
    return feature_wire(conn, flag, caller.user_id)


# --- changes --------------------------------------------------------------------------------


def _taken(conn: Connection, name: str) -> str | None:
    """Why ``name`` is taken (a message for the ``name`` field), or None when it is free."""
    existing = store_features.get(conn, name)
    if existing is None:
        return None
    if existing["archived_at"] is not None:
        return (
            f'an archived flag is named "{name}": revive it (POST /api/admin/archive/revive/{name}), '
            f"delete it (DELETE /api/admin/archive/{name}), or choose another name"
        )
    where = existing["project_id"]
    return f'a flag named "{name}" already exists (in project "{where}"): choose another name'


#: Names no flag may take: ``/api/admin/archive/features`` is 4.4, not an archived flag.
RESERVED_NAMES = ("features",)


def _reserved(name: str) -> str | None:
    if name in RESERVED_NAMES:
        return (
            f'"{name}" is reserved (GET /api/admin/archive/{name} is the archive itself): choose another name'
        )
    return None


def validate_name(conn: Connection, name: str) -> None:
    """Check that ``name`` is valid and free (``POST /api/admin/features/validate``).

    :raise BadDataError: invalid or taken; the details name the ``name`` field.
    """
    _refuse_name(name_problem(name) or _reserved(name) or _taken(conn, name))


def _refuse_name(problem: str | None) -> None:
    """:raise BadDataError: ``problem`` (a message about the ``name`` field) is not None."""
    if problem:
        raise BadDataError(f"name: {problem}", details=[f"name: {problem}"])


def create(
    conn: Connection, caller: Any, project_id: str, body: dict[str, Any], clock: Clock
) -> dict[str, Any]:
    """Create a live flag in every environment of the install, disabled, created by the
    caller; record ``feature-created``. ``body``: ``name``, ``type`` (default release),
    ``description``, ``impressionData``, ``tags`` (loaded ``createFeatureSchema``).

    Returns the flag (``featureSchema``). Two creates of one name: the second finds it taken.

    :raise NotFoundError: no such project.
    :raise NoAccessError: the caller lacks CREATE_FEATURE in the project.
    :raise BadDataError: the name is invalid or taken (live or archived).
    """
    name = body["name"]
    with conn.write(LOCK):
        project(conn, project_id)
        require(conn, caller, project_id, CREATE_FEATURE)
        # as validate_name, but a taken name is found by the insert itself (one statement less)
        _refuse_name(name_problem(name) or _reserved(name))
        # in the order the store reads them back (by type, then value, code point by code point)
        tags = sorted(_unique_tags(body.get("tags") or []), key=lambda tag: (tag["type"], tag["value"]))
        flag, environments = store_features.insert(
            conn,
            name=name,
            project_id=project_id,
            type=body.get("type") or "release",
            description=body.get("description") or None,
            impression_data=bool(body.get("impressionData", False)),
            created_at=clock.now_rfc3339(),
            created_by_user_id=caller.user_id,
            tags=tags,
        )
        if flag is None:  # the name is taken (the lock keeps the flag that has it in place)
            _refuse_name(_taken(conn, name) or f'a flag named "{name}" already exists: choose another name')
        events.record(
            conn,
            "feature-created",
            Actor.of_caller(caller),
            project=project_id,
            feature_name=name,
            data=event_data(flag),
            tags=_as_event_tags(tags),
            clock=clock,
        )
        # a flag just created is nobody's favorite yet
        return feature_wire(conn, flag, caller.user_id, tags, environments=environments, favorite=False)


def _unique_tags(tags: list[dict[str, Any]]) -> list[dict[str, str]]:
    seen: dict[tuple[str, str], dict[str, str]] = {}
    for tag in tags:
        seen.setdefault((tag["type"], tag["value"]), {"type": tag["type"], "value": tag["value"]})
    return list(seen.values())


def _event_tags(conn: Connection, name: str) -> list[dict[str, str]]:
    """The flag's tags as events carry them (``[{value, type}]``)."""
    return _as_event_tags(store_features.tags(conn, name))


def _as_event_tags(tags: list[dict[str, str]]) -> list[dict[str, str]]:
    """``[{type, value}]`` (the store's shape) as events carry tags: ``[{value, type}]``."""
    return [{"value": tag["value"], "type": tag["type"]} for tag in tags]


def _check_metadata(values: dict[str, Any]) -> dict[str, Any]:
    """The changeable fields of ``values`` checked: ``{type, description, stale,
    impressionData}``.

    :raise BadDataError: a field holds a value it cannot take; the details name it.
    """
    problems = []
    if values.get("type") not in FLAG_TYPES:
        problems.append(f"type: must be one of {', '.join(FLAG_TYPES)}; got {values.get('type')!r}")
    if values.get("description") is not None and not isinstance(values["description"], str):
        problems.append("description: must be a string or null")
    for field in ("stale", "impressionData"):
        if not isinstance(values.get(field), bool):
            problems.append(f"{field}: must be true or false; got {values.get(field)!r}")
    if problems:
        raise BadDataError("Invalid flag: " + "; ".join(problems), details=problems)
    return {field: values.get(field) for field in MUTABLE_FIELDS}


def _change_metadata(
    conn: Connection, caller: Any, flag: dict[str, Any], new: dict[str, Any], clock: Clock
) -> dict[str, Any]:
    """Store the checked fields ``new`` of ``flag`` and record ``feature-metadata-updated``
    (and ``feature-stale-on``/``-off`` when ``stale`` changed); nothing when nothing changed.
    Call inside the write transaction."""
    name = flag["name"]
    description = new["description"] or None
    changed = (
        new["type"] != flag["type"]
        or description != flag["description"]
        or new["stale"] != bool(flag["stale"])
        or new["impressionData"] != bool(flag["impression_data"])
    )
    if changed:
        store_features.update_metadata(
            conn,
            name,
            type=new["type"],
            description=description,
            stale=new["stale"],
            impression_data=new["impressionData"],
        )
        updated = store_features.get(conn, name)
        actor = Actor.of_caller(caller)
        tags = _event_tags(conn, name)
        events.record(
            conn,
            "feature-metadata-updated",
            actor,
            project=flag["project_id"],
            feature_name=name,
            data=event_data(updated),
            pre_data=event_data(flag),
            tags=tags,
            clock=clock,
        )
        if new["stale"] != bool(flag["stale"]):
            events.record(
                conn,
                "feature-stale-on" if new["stale"] else "feature-stale-off",
                actor,
                project=flag["project_id"],
                feature_name=name,
                tags=tags,
                clock=clock,
            )
        flag = updated
    return feature_wire(conn, flag, caller.user_id)


def replace(
    conn: Connection, caller: Any, project_id: str, name: str, body: dict[str, Any], clock: Clock
) -> dict[str, Any]:
    """PUT: set the flag's ``description``, ``type``, ``stale`` and ``impressionData``; a
    field left out takes its value of a new flag (no description, release, false, false), as
    the reference server does. ``name`` and ``archived`` may be sent only with the flag's own
    values.

    :raise NotFoundError: no such project or flag in it.
    :raise NoAccessError: the caller lacks UPDATE_FEATURE.
    :raise ConflictError: the flag is archived.
    :raise BadDataError: ``name`` differs (a flag cannot be renamed) or ``archived`` is true.
    """
    problems = []
    if "name" in body and body["name"] != name:
        problems.append(f'name: a flag cannot be renamed; send "{name}" or leave it out')
    if body.get("archived"):
        problems.append(
            f"archived: archive a flag with DELETE /api/admin/projects/{project_id}/features/{name}"
        )
    if problems:
        raise BadDataError("Invalid flag: " + "; ".join(problems), details=problems)
    new = _check_metadata(
        {
            "type": body.get("type", "release"),
            "description": body.get("description"),
            "stale": body.get("stale", False),
            "impressionData": body.get("impressionData", False),
        }
    )
    with conn.write(LOCK):
        flag = live_flag_in_project(conn, caller, project_id, name, UPDATE_FEATURE)
        return _change_metadata(conn, caller, flag, new, clock)


def _field_of(pointer: str, where: str) -> str:
    """The top-level field a JSON Pointer (RFC 6901) names.

    :raise BadDataError: not a JSON Pointer, or the whole document.
    """
    try:
        parts = jsonpointer.JsonPointer(pointer).parts
    except jsonpointer.JsonPointerException as exc:
        raise BadDataError(
            f"{where}: {pointer!r} is not a JSON Pointer (RFC 6901): {exc}", details=[f"{where}: {exc}"]
        ) from exc
    if not parts:
        raise BadDataError(
            f"{where}: a patch may not replace the whole flag; name a field, e.g. /description",
            details=[f"{where}: names the whole flag"],
        )
    return parts[0]


def _check_operations(operations: list[dict[str, Any]]) -> None:
    """Refuse an operation that would write a field other than :data:`MUTABLE_FIELDS`.

    :raise BadDataError: the details name the operation and the read-only field.
    """
    writable = ", ".join(MUTABLE_FIELDS)
    for index, op in enumerate(operations):
        targets = []
        if op["op"] != "test":
            targets.append(("path", op["path"]))
        if op["op"] == "move":
            targets.append(("from", op["from"]))
        elif op["op"] in ("test", "copy"):
            _field_of(op.get("from", op["path"]), f"{index}.{'from' if op['op'] == 'copy' else 'path'}")
        for member, pointer in targets:
            field = _field_of(pointer, f"{index}.{member}")
            if field not in MUTABLE_FIELDS:
                message = f"{field}: is read-only; a patch may change only {writable}"
                raise BadDataError(
                    f"Operation {index} ({op['op']} {pointer}) changes a read-only field. {message}",
                    details=[message],
                )


def patch(
    conn: Connection,
    caller: Any,
    project_id: str,
    name: str,
    operations: list[dict[str, Any]],
    clock: Clock,
) -> dict[str, Any]:
    """PATCH: apply a JSON Patch (RFC 6902) to the flag as ``featureSchema`` shows it; only
    ``description``, ``type``, ``stale`` and ``impressionData`` may change. Records like
    :func:`replace`.

    :raise NotFoundError: no such project or flag in it.
    :raise NoAccessError: the caller lacks UPDATE_FEATURE.
    :raise ConflictError: the flag is archived, or a ``test`` operation failed.
    :raise BadDataError: a malformed patch, or one that writes a read-only field or leaves a
        field with a value it cannot take; the details name the field.
    """
    _check_operations(operations)
    with conn.write(LOCK):
        flag = live_flag_in_project(conn, caller, project_id, name, UPDATE_FEATURE)
        document = feature_wire(conn, flag, caller.user_id)
        try:
            patched = jsonpatch.JsonPatch(operations).apply(document)
        except jsonpatch.JsonPatchTestFailed as exc:
            raise ConflictError(f"A test operation of the patch failed, nothing was changed: {exc}") from exc
        except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException, TypeError, ValueError) as exc:
            raise BadDataError(f"The patch cannot be applied to flag {name!r}: {exc}") from exc
        if not isinstance(patched, dict):
            raise BadDataError("The patch must leave a flag (a JSON object).")
        for field in ("type", "stale", "impressionData"):
            if field not in patched:
                message = f"{field}: cannot be removed; replace it instead"
                raise BadDataError(message, details=[message])
        return _change_metadata(conn, caller, flag, _check_metadata(patched), clock)


def set_enabled(
    conn: Connection,
    caller: Any,
    project_id: str,
    name: str,
    environment: str,
    enabled: bool,
    clock: Clock,
) -> dict[str, Any]:
    """Switch a live flag on or off in ``environment``; record
    ``feature-environment-enabled``/``-disabled`` when that changed anything.

    :raise NotFoundError: no such project, flag in it, or environment in the install.
    :raise NoAccessError: the caller lacks UPDATE_FEATURE_ENVIRONMENT.
    :raise ConflictError: the flag is archived.
    """
    with conn.write(LOCK):
        flag = flag_in_project(conn, caller, project_id, name, UPDATE_FEATURE_ENVIRONMENT, event_tags=True)
        if store_environments.get(conn, environment) is None:
            known = ", ".join(env["name"] for env in store_environments.list_all(conn)) or "none yet"
            raise NotFoundError(
                f'There is no environment "{environment}" (the install has: {known}; an operator '
                "adds one with `flagadmin environment add NAME`)."
            )
        refuse_archived(flag)
        if store_features.set_enabled(conn, name, environment, enabled):
            events.record(
                conn,
                "feature-environment-enabled" if enabled else "feature-environment-disabled",
                Actor.of_caller(caller),
                project=project_id,
                environment=environment,
                feature_name=name,
                tags=flag["event_tags"],
                clock=clock,
            )
        return feature_wire(conn, flag, caller.user_id)


def archive(conn: Connection, caller: Any, project_id: str, name: str, clock: Clock) -> None:
    """Archive a live flag; record ``feature-archived``.

    :raise NotFoundError: no such project or flag in it.
    :raise NoAccessError: the caller lacks DELETE_FEATURE.
    :raise ConflictError: the flag is archived already.
    """
    with conn.write(LOCK):
        flag = flag_in_project(conn, caller, project_id, name, DELETE_FEATURE, event_tags=True)
        if flag["archived_at"] is not None:
            raise ConflictError(
                f'Flag "{name}" is archived already (since {flag["archived_at"]}). Revive it with '
                f"POST /api/admin/archive/revive/{name}, or delete it for good with "
                f"DELETE /api/admin/archive/{name}."
            )
        store_features.archive(conn, name, clock.now_rfc3339())
        events.record(
            conn,
            "feature-archived",
            Actor.of_caller(caller),
            project=project_id,
            feature_name=name,
            tags=flag["event_tags"],
            clock=clock,
        )


def revive(conn: Connection, caller: Any, name: str, clock: Clock) -> None:
    """Bring an archived flag back, switched off in every environment; record
    ``feature-revived``.

    :raise NotFoundError: no flag has that name.
    :raise NoAccessError: the caller lacks UPDATE_FEATURE in the flag's project.
    :raise ConflictError: the flag is live.
    """
    with conn.write(LOCK):
        flag = archived_flag(conn, caller, name, UPDATE_FEATURE)
        if flag["archived_at"] is None:
            raise ConflictError(
                f'Flag "{name}" is not archived, so there is nothing to revive: it is live in project '
                f'"{flag["project_id"]}" (archive it with DELETE /api/admin/projects/'
                f"{flag['project_id']}/features/{name})."
            )
        store_features.revive(conn, name)
        events.record(
            conn,
            "feature-revived",
            Actor.of_caller(caller),
            project=flag["project_id"],
            feature_name=name,
            tags=_event_tags(conn, name),
            clock=clock,
        )


def delete(conn: Connection, caller: Any, name: str, clock: Clock) -> None:
    """Delete an archived flag for good (its environments, tags and favorites with it);
    record ``feature-deleted`` with the flag as ``preData``. Its name becomes free.

    :raise NotFoundError: no flag has that name.
    :raise NoAccessError: the caller lacks DELETE_FEATURE in the flag's project.
    :raise ConflictError: the flag is live: it must be archived first.
    """
    with conn.write(LOCK):
        flag = archived_flag(conn, caller, name, DELETE_FEATURE)
        if flag["archived_at"] is None:
            raise ConflictError(
                f'Flag "{name}" is live: only an archived flag can be deleted. Archive it first with '
                f"DELETE /api/admin/projects/{flag['project_id']}/features/{name}."
            )
        tags = _event_tags(conn, name)
        store_features.delete(conn, name)
        events.record(
            conn,
            "feature-deleted",
            Actor.of_caller(caller),
            project=flag["project_id"],
            feature_name=name,
            pre_data=event_data(flag),
            tags=tags,
            clock=clock,
        )


def favorite(
    conn: Connection, caller: Any, project_id: str, name: str, favorited: bool, clock: Clock
) -> None:
    """Add the flag to the calling user's favorites, or take it out; record
    ``feature-favorited``/``-unfavorited`` (with no project, as the reference server does)
    when that changed anything.

    :raise NotFoundError: no such project or flag in it.
    :raise NoAccessError: the caller cannot see the project.
    """
    with conn.write(LOCK):
        flag_in_project(conn, caller, project_id, name, None)
        change = store_features.add_favorite if favorited else store_features.remove_favorite
        if change(conn, caller.user_id, name):
            events.record(
                conn,
                "feature-favorited" if favorited else "feature-unfavorited",
                Actor.of_caller(caller),
                feature_name=name,
                data={"feature": name},
                tags=_event_tags(conn, name),
                clock=clock,
            )
