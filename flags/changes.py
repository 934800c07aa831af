"""A flag's life through the reference server's paths: create (and check a name), switch an
environment on or off, archive, revive, delete for good, favorite. Changing a flag's
description, type, stale and impressionData (PUT, JSON Patch) is :mod:`flagadmin.flags.updates`.

Every change runs in one write transaction (:data:`LOCK`) with the event it records
(``events.record``, spec 2.3, 6): the flag's new state, the event and the deliveries it owes
commit together or not at all. The tables written move ``content_version``, so 4.2 and 4.4
answer from the new state at once. Who may make each change is :mod:`flagadmin.flags.access`'s
rule; a refusal is one of :mod:`flagadmin.refusals`, and nothing is written.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from .. import events
from ..events import Actor
from ..permissions.names import CREATE_FEATURE_STRATEGY
from ..refusals import Conflict, Invalid, NotFound
from ..store import Connection
from ..store import environments as store_environments
from ..store import features as store_features
from ..store import strategies as store_strategies
from ..store.tokens import Caller
from ..timestamps import Clock
from . import limits as resource_limits
from .access import (
    CREATE_FEATURE,
    DELETE_FEATURE,
    UPDATE_FEATURE,
    UPDATE_FEATURE_ENVIRONMENT,
    archived_flag,
    flag_in_project,
    project,
    refuse_archived,
    require,
)
from .names import name_problem, reserved_problem
from .wire import (
    as_event_tags,
    event_data,
    event_tags,
    feature_wire,
    flexible_rollout_parameters,
    strategy_wire,
)

#: The transaction's lock name: every flag change serialises on it (and so do the project,
#: role and environment changes of :mod:`flagadmin.flags.projects`, and a seed load).
LOCK = "features"


def _taken(conn: Connection, name: str) -> str | None:
    """Why ``name`` is taken (a message for the ``name`` field), or None when it is free.

    The message is the same whoever asks and wherever the flag is: it never names the flag's
    project nor says whether the flag is live or archived, so a caller learns nothing of a
    project she cannot see beyond "the name is taken" (flag names are unique across all
    projects, as in the reference server)."""
    if store_features.get(conn, name) is None:
        return None
    return _taken_message(name)


def _taken_message(name: str) -> str:
    """The message of a taken flag name: the same for a live or an archived flag, in a project
    the caller sees or not."""
    return (
        f'a flag named "{name}" already exists, live or archived (flag names are unique across all '
        "projects): choose another name. If it is an archived flag of a project you can see, "
        f"revive it (POST /api/admin/archive/revive/{name}) or delete it for good "
        f"(DELETE /api/admin/archive/{name}) first"
    )


def _refuse_name(problem: str | None) -> None:
    """:raise Invalid: ``problem`` (a message about the ``name`` field) is not None."""
    if problem:
        raise Invalid(f"name: {problem}", details=[f"name: {problem}"])


def validate_name(conn: Connection, name: str) -> None:
    """Check that ``name`` is valid and free (``POST /api/admin/features/validate``).

    :raise Invalid: invalid, reserved or taken (live or archived); the details name the
        ``name`` field.
    """
    _refuse_name(name_problem(name) or reserved_problem(name) or _taken(conn, name))


def create(
    conn: Connection,
    caller: Caller,
    project_id: str,
    body: dict[str, Any],
    clock: Clock,
    limits: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """Create a live flag in every environment of the install, disabled, created by the
    caller; record ``feature-created``. ``body``: ``name``, ``type`` (default release),
    ``description``, ``impressionData``, ``tags`` (loaded ``createFeatureSchema``).

    Returns the flag (``featureSchema``). Two creates of one name: the second finds it taken.
    ``limits``: the instance's resource limits (None: ``FLAGADMIN_RESOURCE_LIMITS``).

    :raise NotFound: no such project.
    :raise Forbidden: the caller lacks CREATE_FEATURE in the project.
    :raise Invalid: the name is invalid or taken (live or archived), or the live flags reach
        the ``featureFlags`` limit.
    """
    name = body["name"]
    with conn.write(LOCK):
        project(conn, project_id)
        require(conn, caller, project_id, CREATE_FEATURE)
        # as validate_name, but a taken name is found by the insert itself (one statement less)
        _refuse_name(name_problem(name) or reserved_problem(name))
        live = store_features.live_count(conn, at_most=resource_limits.limit_of("featureFlags", limits))
        resource_limits.refuse_past("featureFlags", live, limits, "flag")
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
            _refuse_name(_taken_message(name))
        events.record(
            conn,
            "feature-created",
            Actor.of_caller(caller),
            project=project_id,
            feature_name=name,
            data=event_data(flag),
            tags=as_event_tags(tags),
            clock=clock,
        )
        # a flag just created is nobody's favorite yet, and has no strategy
        return feature_wire(
            conn, flag, caller.user_id, tags, environments=environments, favorite=False, strategies={}
        )


def _unique_tags(tags: list[dict[str, Any]]) -> list[dict[str, str]]:
    """``tags`` (``{type, value[, color]}``) as ``{type, value}``, each pair once, first kept."""
    seen: dict[tuple[str, str], dict[str, str]] = {}
    for tag in tags:
        seen.setdefault((tag["type"], tag["value"]), {"type": tag["type"], "value": tag["value"]})
    return list(seen.values())


def set_enabled(
    conn: Connection,
    caller: Caller,
    project_id: str,
    name: str,
    environment: str,
    enabled: bool,
    clock: Clock,
) -> dict[str, Any]:
    """Switch a live flag on or off in ``environment``; record
    ``feature-environment-enabled``/``-disabled`` when that changed anything. Switched on with
    no strategy there but disabled ones, the flag gets a flexibleRollout of 100 % first
    (``feature-strategy-add``), as the reference server does. Returns the flag
    (``featureSchema``).

    :raise NotFound: no such project, flag in it, or environment in the install.
    :raise Forbidden: the caller lacks UPDATE_FEATURE_ENVIRONMENT in ``environment``, or (to
        switch on a flag that needs that first strategy) CREATE_FEATURE_STRATEGY there.
    :raise Conflict: the flag is archived.
    """
    with conn.write(LOCK):
        flag = flag_in_project(
            conn,
            caller,
            project_id,
            name,
            UPDATE_FEATURE_ENVIRONMENT,
            environment=environment,
            event_tags=True,
        )
        if store_environments.get(conn, environment) is None:
            known = ", ".join(env["name"] for env in store_environments.list_all(conn)) or "none yet"
            raise NotFound(
                f'There is no environment "{environment}" (the install has: {known}; an operator '
                "adds one with `flagadmin environment add NAME`)."
            )
        refuse_archived(flag)
        if enabled and not store_strategies.has_enabled(conn, name, environment):
            _add_first_strategy(conn, caller, flag, environment, clock)
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


def _add_first_strategy(
    conn: Connection, caller: Caller, flag: dict[str, Any], environment: str, clock: Clock
) -> None:
    """Give ``flag`` (with its ``event_tags``) a flexibleRollout of 100 % in ``environment``,
    last in order, and record ``feature-strategy-add``: what the reference server does when a
    flag with no strategy there (or only disabled ones) is switched on. Call inside the switch's
    write transaction.

    :raise Forbidden: the caller lacks CREATE_FEATURE_STRATEGY in ``environment``.
    """
    name, project_id = flag["name"], flag["project_id"]
    require(conn, caller, project_id, CREATE_FEATURE_STRATEGY, environment)
    place = store_strategies.place(conn, name, environment, None)
    row = store_strategies.insert(
        conn,
        id=str(uuid.uuid4()),
        feature_name=name,
        environment=environment,
        strategy_name="flexibleRollout",
        title=None,
        disabled=False,
        sort_order=place["next_sort_order"],
        parameters=flexible_rollout_parameters({}, name),
        constraints=[],
        variants=[],
        created_at=clock.now_rfc3339(),
        created_by_user_id=caller.user_id,
    )
    events.record(
        conn,
        "feature-strategy-add",
        Actor.of_caller(caller),
        project=project_id,
        environment=environment,
        feature_name=name,
        data=strategy_wire(row, []),
        tags=flag["event_tags"],
        clock=clock,
    )


def archive(conn: Connection, caller: Caller, project_id: str, name: str, clock: Clock) -> None:
    """Archive a live flag; record ``feature-archived``.

    A flag that live flags depend on is not archived; an archived flag's own dependency is
    removed, with ``feature-dependencies-removed`` (as the reference does).

    :raise NotFound: no such project or flag in it.
    :raise Forbidden: the caller lacks DELETE_FEATURE.
    :raise Conflict: the flag is archived already, or live flags depend on it (named).
    """
    # rules.dependencies builds on this module (its writes take LOCK): imported here, not above
    from ..rules import dependencies as rule_dependencies

    with conn.write(LOCK):
        flag = flag_in_project(conn, caller, project_id, name, DELETE_FEATURE, event_tags=True)
        if flag["archived_at"] is not None:
            raise Conflict(
                f'Flag "{name}" is archived already (since {flag["archived_at"]}). Revive it with '
                f"POST /api/admin/archive/revive/{name}, or delete it for good with "
                f"DELETE /api/admin/archive/{name}."
            )
        rule_dependencies.refuse_archiving_a_parent(conn, name)
        rule_dependencies.forget_on_archive(conn, Actor.of_caller(caller), project_id, name, clock)
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


def revive(
    conn: Connection, caller: Caller, name: str, clock: Clock, limits: Mapping[str, int] | None = None
) -> None:
    """Bring an archived flag back, switched off in every environment; record
    ``feature-revived``. ``limits``: the instance's resource limits (None:
    ``FLAGADMIN_RESOURCE_LIMITS``).

    :raise NotFound: no flag has that name.
    :raise Forbidden: the caller lacks UPDATE_FEATURE in the flag's project.
    :raise Conflict: the flag is live.
    :raise Invalid: the live flags reach the ``featureFlags`` limit.
    """
    with conn.write(LOCK):
        flag = archived_flag(conn, caller, name, UPDATE_FEATURE)
        if flag["archived_at"] is None:
            raise Conflict(
                f'Flag "{name}" is not archived, so there is nothing to revive: it is live in project '
                f'"{flag["project_id"]}" (archive it with DELETE /api/admin/projects/'
                f"{flag['project_id']}/features/{name})."
            )
        live = store_features.live_count(conn, at_most=resource_limits.limit_of("featureFlags", limits))
        resource_limits.refuse_past("featureFlags", live, limits, "flag")
        store_features.revive(conn, name)
        events.record(
            conn,
            "feature-revived",
            Actor.of_caller(caller),
            project=flag["project_id"],
            feature_name=name,
            tags=event_tags(conn, name),
            clock=clock,
        )


def delete(conn: Connection, caller: Caller, name: str, clock: Clock) -> None:
    """Delete an archived flag for good (its environments, tags and favorites with it);
    record ``feature-deleted`` with the flag as ``preData``. Its name becomes free.

    :raise NotFound: no flag has that name.
    :raise Forbidden: the caller lacks DELETE_FEATURE in the flag's project.
    :raise Conflict: the flag is live: it must be archived first.
    """
    with conn.write(LOCK):
        flag = archived_flag(conn, caller, name, DELETE_FEATURE)
        if flag["archived_at"] is None:
            raise Conflict(
                f'Flag "{name}" is live: only an archived flag can be deleted. Archive it first with '
                f"DELETE /api/admin/projects/{flag['project_id']}/features/{name}."
            )
        tags = event_tags(conn, name)
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
    conn: Connection, caller: Caller, project_id: str, name: str, favorited: bool, clock: Clock
) -> None:
    """Add the flag to the calling user's favorites, or take it out; record
    ``feature-favorited``/``-unfavorited`` (with no project, as the reference server does)
    when that changed anything. The caller is a user (a personal access token: the view
    declares it).

    :raise NotFound: no such project or flag in it.
    :raise Forbidden: the caller cannot see the project (any role there may favorite, a
        read-only one included: a favorite is the caller's own, as in the reference server).
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
                tags=event_tags(conn, name),
                clock=clock,
            )
