"""A live flag's description, type, stale and impressionData changed through the reference
server's ``PUT`` (``updateFeatureSchema``) and ``PATCH`` (JSON Patch, RFC 6902) on
``/api/admin/projects/{projectId}/features/{featureName}``.

Both check the new values the same way and record the same events, in the change's write
transaction (spec 2.3, 6): ``feature-metadata-updated`` with the flag before and after, then
``feature-stale-on`` or ``-off`` when ``stale`` changed; nothing when nothing changed. The other
fields are read-only: a flag keeps its name and its project, and is archived with DELETE.
"""

from __future__ import annotations

from typing import Any

import jsonpatch
import jsonpointer

from .. import events
from ..events import Actor
from ..records import as_json, json_kind
from ..refusals import Conflict, Invalid
from ..spec import FLAG_TYPES
from ..store import Connection
from ..store import features as store_features
from ..store.tokens import Caller
from ..timestamps import Clock
from .access import UPDATE_FEATURE, live_flag_in_project
from .changes import LOCK
from .wire import event_data, event_tags, feature_wire

#: The fields of a flag that PUT and PATCH may change.
MUTABLE_FIELDS: tuple[str, ...] = ("description", "type", "stale", "impressionData")


def _check_metadata(values: dict[str, Any]) -> dict[str, Any]:
    """The changeable fields of ``values`` checked: ``{type, description, stale,
    impressionData}``.

    :raise Invalid: a field holds a value it cannot take; the details name it.
    """
    problems = []
    if values.get("type") not in FLAG_TYPES:
        problems.append(f"type: must be one of {', '.join(FLAG_TYPES)}; got {json_kind(values.get('type'))}")
    if values.get("description") is not None and not isinstance(values["description"], str):
        problems.append(f"description: must be a string or null; got {json_kind(values['description'])}")
    for field in ("stale", "impressionData"):
        if not isinstance(values.get(field), bool):
            problems.append(f"{field}: must be true or false; got {json_kind(values.get(field))}")
    if problems:
        raise Invalid("Invalid flag: " + "; ".join(problems), details=problems)
    return {field: values.get(field) for field in MUTABLE_FIELDS}


def _change_metadata(
    conn: Connection, caller: Caller, flag: dict[str, Any], new: dict[str, Any], clock: Clock
) -> dict[str, Any]:
    """Store the checked fields ``new`` of ``flag`` and record ``feature-metadata-updated``
    (and ``feature-stale-on``/``-off`` when ``stale`` changed); nothing when nothing changed.
    Returns the flag (``featureSchema``). Call inside the write transaction."""
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
        tags = event_tags(conn, name)
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
    conn: Connection, caller: Caller, project_id: str, name: str, body: dict[str, Any], clock: Clock
) -> dict[str, Any]:
    """PUT: set the flag's ``description``, ``type``, ``stale`` and ``impressionData``; a
    field left out takes its value of a new flag (no description, release, false, false), as
    the reference server does. ``name`` and ``archived`` may be sent only with the flag's own
    values. Returns the flag (``featureSchema``).

    :raise NotFound: no such project or flag in it.
    :raise Forbidden: the caller lacks UPDATE_FEATURE.
    :raise Conflict: the flag is archived.
    :raise Invalid: ``name`` differs (a flag cannot be renamed) or ``archived`` is true.
    """
    problems = []
    if "name" in body and body["name"] != name:
        problems.append(f'name: a flag cannot be renamed; send "{name}" or leave it out')
    if body.get("archived"):
        problems.append(
            f"archived: archive a flag with DELETE /api/admin/projects/{project_id}/features/{name}"
        )
    if problems:
        raise Invalid("Invalid flag: " + "; ".join(problems), details=problems)
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

    :raise Invalid: not a JSON Pointer, or the whole document.
    """
    try:
        parts = jsonpointer.JsonPointer(pointer).parts
    except jsonpointer.JsonPointerException as exc:
        message = (
            f"{where}: {as_json(pointer)} is not a JSON Pointer (RFC 6901): it must start with / "
            "(e.g. /description), and a ~ in it must be followed by 0 or 1"
        )
        raise Invalid(message, details=[message]) from exc
    if not parts:
        raise Invalid(
            f"{where}: a patch may not replace the whole flag; name a field, e.g. /description",
            details=[f"{where}: names the whole flag"],
        )
    return parts[0]


def _check_operations(operations: list[dict[str, Any]]) -> None:
    """Refuse an operation that would write a field other than :data:`MUTABLE_FIELDS`.

    :raise Invalid: the details name the operation and the read-only field.
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
                raise Invalid(
                    f"Operation {index} ({op['op']} {pointer}) changes a read-only field. {message}",
                    details=[message],
                )


def patch(
    conn: Connection,
    caller: Caller,
    project_id: str,
    name: str,
    operations: list[dict[str, Any]],
    clock: Clock,
) -> dict[str, Any]:
    """PATCH: apply a JSON Patch (RFC 6902; ``operations``: ``{op, path[, from][, value]}``)
    to the flag as ``featureSchema`` shows it; only ``description``, ``type``, ``stale`` and
    ``impressionData`` may change. Records like :func:`replace`; returns the flag.

    :raise NotFound: no such project or flag in it.
    :raise Forbidden: the caller lacks UPDATE_FEATURE.
    :raise Conflict: the flag is archived, or a ``test`` operation failed.
    :raise Invalid: a malformed patch, or one that writes a read-only field or leaves a
        field with a value it cannot take; the details name the field.
    """
    _check_operations(operations)
    with conn.write(LOCK):
        flag = live_flag_in_project(conn, caller, project_id, name, UPDATE_FEATURE)
        patched = _apply(feature_wire(conn, flag, caller.user_id), operations, name)
        if not isinstance(patched, dict):
            raise Invalid("The patch must leave a flag (a JSON object).")
        for field in ("type", "stale", "impressionData"):
            if field not in patched:
                message = f"{field}: cannot be removed; replace it instead"
                raise Invalid(message, details=[message])
        return _change_metadata(conn, caller, flag, _check_metadata(patched), clock)


def _apply(document: dict[str, Any], operations: list[dict[str, Any]], name: str) -> Any:
    """``document`` (the flag as GET shows it) with ``operations`` applied one after another
    (RFC 6902 section 3: all or nothing; nothing is stored here).

    :raise Conflict: a ``test`` operation found another value (RFC 6902 section 4.6).
    :raise Invalid: an operation names a member the document does not have (or an array
        index out of range); the message names the operation and the pointer, never the
        library's text or the flag's Python form.
    """
    for index, op in enumerate(operations):
        where = f"Operation {index} ({op['op']} {op['path']})"
        try:
            document = jsonpatch.JsonPatch([op]).apply(document)
        except jsonpatch.JsonPatchTestFailed as exc:
            found = _value_at(document, op["path"])
            actual = "it is absent" if found is _ABSENT else f"it is {as_json(found)}"
            raise Conflict(
                f'{where} failed: {op["path"]} of flag "{name}" is not {as_json(op.get("value"))}, '
                f"{actual}. Nothing was changed."
            ) from exc
        except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException, TypeError, ValueError) as exc:
            pointer = op.get("from", op["path"]) if op["op"] in ("copy", "move") else op["path"]
            message = (
                f'{where} cannot be applied: flag "{name}" has no member at {pointer} '
                f"(its members: {', '.join(document) if isinstance(document, dict) else 'none'}). "
                "Nothing was changed."
            )
            raise Invalid(message, details=[f"{index}.path: {message}"]) from exc
    return document


_ABSENT = object()


def _value_at(document: Any, pointer: str) -> Any:
    """The value ``pointer`` names in ``document``, or :data:`_ABSENT`."""
    try:
        return jsonpointer.resolve_pointer(document, pointer)
    except (jsonpointer.JsonPointerException, TypeError, ValueError):
        return _ABSENT
