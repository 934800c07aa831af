"""Dependencies between flags, as the reference server has them (Unleash 8.2.0's
``createDependentFeatureSchema``, ``dependentFeatureSchema``): a child flag is evaluated only
when its parent is on (``enabled``, default true; with ``variants``, only when the parent
resolves to one of them), or only when its parent is off (``enabled: false``, stored without
variants).

Rules, as the reference's: a flag has at most one parent (a second POST replaces the first),
one level only (a parent cannot have a parent, a child cannot be a parent; so no cycle can
form), the parent is a live flag of the same project, never the flag itself. Each is a 400
naming the field, with nothing stored (the reference answers some of them 403). Changing a
flag's dependencies needs UPDATE_FEATURE_DEPENDENCY in its project; each change records
``feature-dependency-added``, ``feature-dependency-removed`` or ``feature-dependencies-removed``
in its transaction (spec 2.3, 6).

For the flag's own life (``flags/changes.py``): :func:`refuse_archiving_a_parent` before a
flag is archived (a flag live children depend on cannot be), :func:`forget_on_archive` when
it is (its own dependency goes, as the reference removes it), and
``store.dependencies.delete_flag`` before a flag is deleted for good.
"""

from __future__ import annotations

from typing import Any

from .. import events
from ..events import Actor
from ..flags import access
from ..flags.changes import LOCK
from ..flags.names import name_problem
from ..permissions.names import UPDATE_FEATURE_DEPENDENCY
from ..records import as_json, json_kind
from ..refusals import Conflict, Invalid
from ..store import Connection
from ..store import dependencies as store_dependencies
from ..store import features as store_features
from ..store.tokens import Caller
from ..timestamps import Clock

#: The most variant names a dependency may list (a parent has at most as many variants).
MAX_VARIANTS = 1000


def _refuse(field: str, problem: str) -> None:
    raise Invalid(f"{field}: {problem}", details=[f"{field}: {problem}"])


def _variants(value: Any) -> list[str] | None:
    """A dependency's ``variants`` (as sent) checked: names of the parent's variants."""
    if value is None:
        return None
    if not isinstance(value, list):
        _refuse("variants", f"must be an array of variant names; got {json_kind(value)}")
    if len(value) > MAX_VARIANTS:
        _refuse("variants", f"must list at most {MAX_VARIANTS} variant names (it lists {len(value)})")
    for i, name in enumerate(value):
        problem = name_problem(name)
        if problem:
            _refuse(f"variants.{i}", problem)
    return list(dict.fromkeys(value))


def add(
    conn: Connection, caller: Caller, project_id: str, child: str, body: dict[str, Any], clock: Clock
) -> None:
    """Make ``body["feature"]`` the parent of flag ``child`` (``createDependentFeatureSchema``,
    loaded: ``feature``, ``enabled`` default true, ``variants``), replacing any parent it had.
    Records ``feature-dependency-added`` (``data``: the dependency; ``preData``: the one it
    replaced) unless nothing changed.

    :raise NotFound: no such project, or no flag ``child`` in it.
    :raise Forbidden: the caller lacks UPDATE_FEATURE_DEPENDENCY in the project.
    :raise Conflict: ``child`` is archived.
    :raise Invalid: the flag itself, a parent that is not a live flag of the project, a parent
        with a parent, a child with children, or bad ``variants``; nothing is stored.
    """
    parent = body["feature"]
    enabled = body.get("enabled", True)
    if not isinstance(enabled, bool):
        _refuse("enabled", f"must be true or false; got {json_kind(enabled)}")
    variants = _variants(body.get("variants"))
    if parent == child:
        _refuse("feature", "A feature flag cannot depend on itself.")
    with conn.write(LOCK):
        flag = access.flag_in_project(conn, caller, project_id, child, UPDATE_FEATURE_DEPENDENCY)
        access.refuse_archived(flag)
        if store_dependencies.children_of(conn, child):
            _refuse(
                "feature",
                f'Transitive dependency detected. Cannot add a dependency to "{child}": other flags depend '
                "on it, and a parent cannot have a parent",
            )
        found = store_features.get(conn, parent) if isinstance(parent, str) else None
        if found is None or found["archived_at"] is not None:
            _refuse("feature", f"No active feature {as_json(parent)} exists: the parent must be a live flag")
        if store_dependencies.parent_of(conn, parent) is not None:
            _refuse(
                "feature",
                f'Transitive dependency detected. Cannot add a dependency to "{parent}", which depends on '
                "a parent itself: dependencies are one level deep",
            )
        if found["project_id"] != project_id:
            _refuse("feature", "Parent and child features should be in the same project")
        stored_variants = variants if enabled else None
        before = store_dependencies.parent_of(conn, child)
        store_dependencies.upsert(conn, child, parent, enabled, stored_variants)
        after = store_dependencies.parent_of(conn, child)
        data: dict[str, Any] = {"feature": parent, "enabled": enabled}
        if stored_variants is not None:
            data["variants"] = stored_variants
        if before == after:
            return
        events.record(
            conn,
            "feature-dependency-added",
            Actor.of_caller(caller),
            project=project_id,
            feature_name=child,
            data=data,
            clock=clock,
        )


def remove(conn: Connection, caller: Caller, project_id: str, child: str, parent: str, clock: Clock) -> None:
    """Remove the dependency of flag ``child`` on ``parent``. Records
    ``feature-dependency-removed`` (``data``: ``{feature: parent}``) when there was one;
    nothing otherwise (200 all the same, as the reference).

    :raise NotFound: no such project, or no flag ``child`` in it.
    :raise Forbidden: the caller lacks UPDATE_FEATURE_DEPENDENCY in the project.
    """
    with conn.write(LOCK):
        access.flag_in_project(conn, caller, project_id, child, UPDATE_FEATURE_DEPENDENCY)
        if store_dependencies.delete(conn, child, parent):
            events.record(
                conn,
                "feature-dependency-removed",
                Actor.of_caller(caller),
                project=project_id,
                feature_name=child,
                data={"feature": parent},
                clock=clock,
            )


def remove_all(conn: Connection, caller: Caller, project_id: str, child: str, clock: Clock) -> None:
    """Remove every dependency of flag ``child``. Records ``feature-dependencies-removed`` when
    there was one.

    :raise NotFound: no such project, or no flag ``child`` in it.
    :raise Forbidden: the caller lacks UPDATE_FEATURE_DEPENDENCY in the project.
    """
    with conn.write(LOCK):
        access.flag_in_project(conn, caller, project_id, child, UPDATE_FEATURE_DEPENDENCY)
        if store_dependencies.delete_of_child(conn, child):
            events.record(
                conn,
                "feature-dependencies-removed",
                Actor.of_caller(caller),
                project=project_id,
                feature_name=child,
                clock=clock,
            )


def possible_parents(conn: Connection, caller: Caller, project_id: str, child: str) -> list[str]:
    """``parentFeatureOptionsSchema``: the live flags of the project ``child`` could depend on
    (not itself, none with a parent of its own), by name.

    :raise NotFound: no such project, or no flag ``child`` in it.
    :raise Forbidden: the caller cannot see the project.
    """
    access.flag_in_project(conn, caller, project_id, child, None)
    return store_dependencies.possible_parents(conn, child, project_id)


def parent_variants(conn: Connection, caller: Caller, project_id: str, parent: str) -> list[str]:
    """``parentVariantOptionsSchema``: the names of the variants flag ``parent`` may resolve to
    (its strategies' and its environments'), each once, sorted.

    :raise NotFound: no such project, or no flag ``parent`` in it.
    :raise Forbidden: the caller cannot see the project.
    """
    access.flag_in_project(conn, caller, project_id, parent, None)
    return store_dependencies.parent_variant_names(conn, parent)


def any_exist(conn: Connection, caller: Caller, project_id: str) -> bool:
    """``dependenciesExistSchema``: whether any flag of the install depends on another (the
    reference's answer on a project's path).

    :raise NotFound: no such project.
    :raise Forbidden: the caller cannot see the project.
    """
    access.project(conn, project_id)
    access.require(conn, caller, project_id, None)
    return store_dependencies.any_exist(conn)


def refuse_archiving_a_parent(conn: Connection, name: str) -> None:
    """Refuse archiving (or deleting) flag ``name`` while live flags depend on it; call inside
    the archive's write transaction, before anything is written.

    :raise Conflict: live flags depend on it; the message names them and what to do."""
    children = store_dependencies.live_children_of(conn, name)
    if children:
        shown = ", ".join(f'"{child}"' for child in children[:10])
        more = f" and {len(children) - 10} more" if len(children) > 10 else ""
        raise Conflict(
            f'You can not archive/delete flag "{name}" since other flags depend on it: {shown}{more}. '
            "Remove their dependencies first (DELETE .../features/{child}/dependencies)."
        )


def forget_on_archive(conn: Connection, actor: Actor, project_id: str, name: str, clock: Clock) -> None:
    """Remove the dependency of flag ``name`` as it is archived, recording
    ``feature-dependencies-removed`` when it had one (as the reference does); call inside the
    archive's write transaction."""
    if store_dependencies.delete_of_child(conn, name):
        events.record(
            conn,
            "feature-dependencies-removed",
            actor,
            project=project_id,
            feature_name=name,
            clock=clock,
        )
