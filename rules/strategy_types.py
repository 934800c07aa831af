"""Strategy types on the reference server's paths (``/api/admin/strategies``): the built-in
types every SDK evaluates, and custom types declared with their parameters.

The built-ins (``flexibleRollout``, ``default``, ``userWithId``, ``gradualRolloutUserId``,
``gradualRolloutSessionId``, ``gradualRolloutRandom``, ``remoteAddress``,
``applicationHostname``) are rows of the schema itself: they cannot be changed or deleted (403,
as the reference server refuses an edit of a type that is not ``editable``), only deprecated and
reactivated. A custom type has a URL-friendly name (the flag name rule), a title, a description
and parameters ``[{name, type, description, required}]`` (``type`` one of
:data:`PARAMETER_TYPES`); one that a flag's strategy uses cannot be deleted (409 naming flags).
A deprecated type stays usable, as in the reference server: deprecation only marks it.

Reading the types takes any token of the admin API; changing them takes the root permissions
CREATE_STRATEGY, UPDATE_STRATEGY and DELETE_STRATEGY (root roles Admin and Editor; no project
role grants them). Each change records its event in its write transaction (spec 2.3, 6):
``strategy-created``, ``-updated``, ``-deleted``, ``-deprecated``, ``-reactivated``.
"""

from __future__ import annotations

from typing import Any

from .. import events
from ..events import Actor
from ..flags.access import require
from ..flags.changes import LOCK
from ..flags.names import name_problem
from ..permissions.names import CREATE_STRATEGY, DELETE_STRATEGY, UPDATE_STRATEGY
from ..refusals import Conflict, Forbidden, Invalid, NotFound
from ..store import Connection
from ..store import strategies as store_strategies
from ..store.tokens import Caller
from ..timestamps import Clock

#: The kinds of parameter a type declares (the reference's ``createStrategySchema``).
PARAMETER_TYPES: tuple[str, ...] = ("string", "percentage", "list", "number", "boolean")

#: What the built-in types are called in a UI (``displayName``); a custom type shows its title.
BUILT_IN_DISPLAY_NAMES: dict[str, str] = {
    "flexibleRollout": "Gradual rollout",
    "default": "Standard",
    "userWithId": "User IDs",
    "gradualRolloutUserId": "Gradual rollout by user id",
    "gradualRolloutSessionId": "Gradual rollout by session id",
    "gradualRolloutRandom": "Random rollout",
    "remoteAddress": "IPs",
    "applicationHostname": "Hosts",
}

#: The longest title, description (of a type or a parameter) and parameter name, in characters,
#: and the most parameters a type may declare.
TITLE_MAX_LENGTH = 100
DESCRIPTION_MAX_LENGTH = 1000
PARAMETER_NAME_MAX_LENGTH = 100
MAX_PARAMETERS = 100


def wire(row: dict[str, Any]) -> dict[str, Any]:
    """A strategy type (``store.strategies``' row) as the reference server's ``strategySchema``."""
    built_in = bool(row["built_in"])
    return {
        "title": row["title"],
        "name": row["name"],
        "displayName": BUILT_IN_DISPLAY_NAMES.get(row["name"]) if built_in else row["title"],
        "description": row["description"],
        "editable": not built_in,
        "deprecated": bool(row["deprecated"]),
        "parameters": row["parameters"],
    }


def list_types(conn: Connection) -> dict[str, Any]:
    """Every strategy type, built-ins first (``strategiesSchema``: ``{version: 1, strategies}``)."""
    return {"version": 1, "strategies": [wire(row) for row in store_strategies.strategy_types(conn)]}


def _found(conn: Connection, name: str) -> dict[str, Any]:
    """The type ``name``'s row.

    :raise NotFound: there is none.
    """
    row = store_strategies.strategy_type(conn, name)
    if row is None:
        raise NotFound(f'There is no strategy type "{name}": GET /api/admin/strategies lists them.')
    return row


def get(conn: Connection, name: str) -> dict[str, Any]:
    """The strategy type ``name`` (``strategySchema``).

    :raise NotFound: there is none.
    """
    return wire(_found(conn, name))


def _refuse(field: str, problem: str) -> None:
    raise Invalid(f"{field}: {problem}", details=[f"{field}: {problem}"])


def _parameters(parameters: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A type's parameters (loaded by the view's schema: ``{name, type[, description][,
    required]}``), in the stored shape ``{name, type, description, required}``, in the order
    sent (a name given twice is kept twice, as the reference server keeps it).

    :raise Invalid: more than :data:`MAX_PARAMETERS`.
    """
    if len(parameters) > MAX_PARAMETERS:
        _refuse("parameters", f"may hold at most {MAX_PARAMETERS} parameters; it holds {len(parameters)}")
    stored = []
    for parameter in parameters:
        stored.append(
            {
                "name": parameter["name"],
                "type": parameter["type"],
                "description": parameter.get("description") or "",
                "required": bool(parameter.get("required", False)),
            }
        )
    return stored


def _editable(row: dict[str, Any], doing: str) -> None:
    """:raise Forbidden: ``row`` is a built-in type, which cannot be changed or deleted."""
    if row["built_in"]:
        raise Forbidden(
            f'Strategy type "{row["name"]}" is built in (every SDK evaluates it as it is), so it cannot be '
            f"{doing}; declare a custom type with POST /api/admin/strategies instead. A built-in "
            "type can be deprecated (POST /api/admin/strategies/NAME/deprecate)."
        )


def create(conn: Connection, caller: Caller, body: dict[str, Any], clock: Clock) -> dict[str, Any]:
    """Declare a custom strategy type; record ``strategy-created``. ``body``: ``name``,
    ``parameters`` and optionally ``title``, ``description``, ``deprecated`` (``editable`` is
    accepted and not kept: a custom type is always editable). Returns it (``strategySchema``).

    :raise Forbidden: the caller lacks CREATE_STRATEGY (root roles Admin and Editor hold it).
    :raise Invalid: the name is not URL-friendly, or there are too many parameters.
    :raise Conflict: a type, built-in or custom, has that name.
    """
    name = body["name"]
    with conn.write(LOCK):
        require(conn, caller, None, CREATE_STRATEGY)
        problem = name_problem(name)
        if problem:
            _refuse("name", problem)
        parameters = _parameters(body["parameters"])
        added = store_strategies.insert_strategy_type(
            conn,
            name=name,
            title=body.get("title") or None,
            description=body.get("description") or None,
            parameters=parameters,
            deprecated=bool(body.get("deprecated", False)),
            created_at=clock.now_rfc3339(),
        )
        if not added:
            raise Conflict(
                f'A strategy type named "{name}" already exists: choose another name, or change that one '
                f"with PUT /api/admin/strategies/{name}."
            )
        created = wire(_found(conn, name))
        events.record(conn, "strategy-created", Actor.of_caller(caller), data=created, clock=clock)
        return created


def update(conn: Connection, caller: Caller, name: str, body: dict[str, Any], clock: Clock) -> None:
    """Replace a custom type's ``parameters`` and, when sent, its ``description`` and
    ``title`` (left out: unchanged, as the reference server does); record
    ``strategy-updated`` when that changed anything. Strategies already using the type keep
    their parameters.

    :raise Forbidden: the caller lacks UPDATE_STRATEGY, or the type is built in.
    :raise NotFound: there is no such type.
    :raise Invalid: there are too many parameters.
    """
    with conn.write(LOCK):
        require(conn, caller, None, UPDATE_STRATEGY)
        row = _found(conn, name)
        _editable(row, "changed")
        parameters = _parameters(body["parameters"])
        store_strategies.update_strategy_type(
            conn,
            name,
            title=(body.get("title") or None) if "title" in body else row["title"],
            description=(body.get("description") or None) if "description" in body else row["description"],
            parameters=parameters,
        )
        events.record(
            conn,
            "strategy-updated",
            Actor.of_caller(caller),
            data=wire(_found(conn, name)),
            pre_data=wire(row),
            clock=clock,
        )


def delete(conn: Connection, caller: Caller, name: str, clock: Clock) -> None:
    """Delete a custom type no strategy uses; record ``strategy-deleted`` (``data``: its name,
    as the reference server's; ``preData``: the type).

    :raise Forbidden: the caller lacks DELETE_STRATEGY, or the type is built in.
    :raise NotFound: there is no such type.
    :raise Conflict: a flag's strategy uses it; the message names flags that do.
    """
    with conn.write(LOCK):
        require(conn, caller, None, DELETE_STRATEGY)
        row = _found(conn, name)
        _editable(row, "deleted")
        using = store_strategies.flags_using_type(conn, name)
        if using:
            flags = ", ".join(f'"{flag}"' for flag in using)
            raise Conflict(
                f'Strategy type "{name}" is in use (by the strategies of {flags}'
                f"{' and maybe more' if len(using) == 5 else ''}): remove those strategies first, or "
                f"deprecate the type (POST /api/admin/strategies/{name}/deprecate)."
            )
        store_strategies.delete_strategy_type(conn, name)
        events.record(
            conn,
            "strategy-deleted",
            Actor.of_caller(caller),
            data={"name": name},
            pre_data=wire(row),
            clock=clock,
        )


def set_deprecated(conn: Connection, caller: Caller, name: str, deprecated: bool, clock: Clock) -> None:
    """Deprecate the type ``name`` (built-in or custom), or reactivate it; record
    ``strategy-deprecated``/``-reactivated`` when that changed anything.

    :raise Forbidden: the caller lacks UPDATE_STRATEGY.
    :raise NotFound: there is no such type.
    """
    with conn.write(LOCK):
        require(conn, caller, None, UPDATE_STRATEGY)
        row = _found(conn, name)
        if store_strategies.set_strategy_type_deprecated(conn, name, deprecated):
            events.record(
                conn,
                "strategy-deprecated" if deprecated else "strategy-reactivated",
                Actor.of_caller(caller),
                data={**wire(row), "deprecated": deprecated},
                pre_data=wire(row),
                clock=clock,
            )
