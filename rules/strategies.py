"""A flag environment's strategies, on the reference server's paths under
``/api/admin/projects/{projectId}/features/{featureName}/environments/{environment}/strategies``:
list, add, read one, replace (PUT), JSON Patch (RFC 6902), remove, and set their order.

A strategy is ``{id, name, title, disabled, sortOrder, parameters, constraints, segments,
variants}`` (``featureStrategySchema``; :func:`flagadmin.flags.wire.strategy_wire`). What a write
checks, as the reference server does:

- ``name`` is a strategy type that exists (``GET /api/admin/strategies``), deprecated or not;
- ``parameters`` is an object of strings; a flexibleRollout's ``rollout``, ``stickiness`` and
  ``groupId`` are filled in when left out or empty (100, ``default``, the flag's name); a
  parameter the type declares as a ``percentage`` holds a whole number from 0 to 100, a
  ``number`` a number, a ``boolean`` true or false (flagadmin's checks: the reference stores
  whatever it is sent, and SDKs then evaluate such a strategy as off);
- ``constraints``: :func:`flagadmin.rules.constraints.normalise`; ``variants``:
  :func:`flagadmin.rules.variants.normalise` (a strategy's); ``segments``:
  :func:`flagadmin.rules.segments.check_ids` (ids of segments usable in the flag's project);
- ``title`` a string of at most 100 characters or null, ``disabled`` true, false or null,
  ``sortOrder`` a whole number that fits in 32 bits (default: after the last);
- the resource limit ``featureEnvironmentStrategies`` on an add.

A PUT replaces the strategy as the reference server does: ``name``, ``title``, ``disabled``,
``sortOrder``, ``parameters`` and ``segments`` left out keep their values; ``constraints`` and
``variants`` left out become empty. A PATCH applies to the strategy as GET shows it, and stores
the result as a PUT would. When an update or a removal leaves the environment with no strategy
but disabled ones, the flag is switched off there (``feature-environment-disabled``), as the
reference server does; switching a flag on with none adds a flexibleRollout of 100 %
(:func:`flagadmin.flags.changes.set_enabled`).

Every change runs in the flag changes' write transaction (``flags.changes.LOCK``) with its
event (spec 2.3, 6): ``feature-strategy-add``, ``-update`` (``data`` and ``preData``: the
strategy after and before), ``-remove`` (``preData``), ``strategy-order-changed``
(``{strategyIds}`` in order). A flag that is archived is read, never changed (409). The
permissions are the reference's, per environment: CREATE_FEATURE_STRATEGY,
UPDATE_FEATURE_STRATEGY, DELETE_FEATURE_STRATEGY; reading takes any role in the project.

The module is longer than most (about 650 lines) because it holds the reference server's rules
of a strategy in one place, in three parts: looking up (80 lines), checking a body (130), and
the six changes with their events and the switch-off rule they share (330). The checks of
constraints, segments and variants it applies live in their own modules.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from typing import Any

import jsonpatch
import jsonpointer
import orjson

from .. import events
from ..events import Actor
from ..flags import limits as resource_limits
from ..flags.access import flag_in_project, refuse_archived
from ..flags.changes import LOCK
from ..flags.wire import flexible_rollout_parameters, strategy_wire
from ..permissions.names import CREATE_FEATURE_STRATEGY, DELETE_FEATURE_STRATEGY, UPDATE_FEATURE_STRATEGY
from ..records import as_json, json_kind
from ..refusals import Conflict, Invalid, NotFound
from ..store import Connection
from ..store import environments as store_environments
from ..store import features as store_features
from ..store import segments as store_segments
from ..store import strategies as store_strategies
from ..store.tokens import Caller
from ..timestamps import Clock
from . import constraints as rule_constraints
from . import segments as rule_segments
from . import variants as rule_variants

#: The longest title, and the longest parameter name, in characters; the most parameters.
TITLE_MAX_LENGTH = 100
PARAMETER_NAME_MAX_LENGTH = 100
MAX_PARAMETERS = 100
#: ``sortOrder`` is stored as a 32-bit integer (PostgreSQL's ``INTEGER``).
SORT_ORDER_RANGE = (-(2**31), 2**31 - 1)
#: A JSON Patch may not leave a strategy larger than this (bytes of compact JSON): a ``copy``
#: adds what it copies, and a body of them would otherwise grow one without end.
MAX_PATCHED_BYTES = 256 * 1024

#: The members of a strategy a body may hold (``updateFeatureStrategySchema``'s, and the two a
#: patched strategy keeps as they are).
MEMBERS = ("name", "title", "disabled", "sortOrder", "parameters", "constraints", "variants", "segments")
READ_ONLY = ("id", "featureName")

_WHOLE_PERCENT = re.compile(r"0|[1-9][0-9]?|100")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")


def _refuse(field: str, problem: str) -> None:
    raise Invalid(f"{field}: {problem}", details=[f"{field}: {problem}"])


# --- looking up ---------------------------------------------------------------------------------


def _refuse_unknown_environment(conn: Connection, environment: str) -> None:
    """:raise NotFound: ``environment`` is not one of the install's; the message lists them."""
    known = ", ".join(env["name"] for env in store_environments.list_all(conn)) or "none yet"
    raise NotFound(
        f'There is no environment "{environment}" (the install has: {known}; an operator adds one '
        "with `flagadmin environment add NAME`)."
    )


def _flag(
    conn: Connection,
    caller: Caller,
    project_id: str,
    name: str,
    environment: str,
    permission: str | None,
    *,
    check_environment: bool = True,
) -> dict[str, Any]:
    """The flag ``name`` of ``project_id`` (``store.features``' row with its ``event_tags``),
    once ``caller`` holds ``permission`` in ``environment`` and that environment exists
    (``check_environment``), in the reference server's order: project 404, 403, flag 404,
    environment 404."""
    flag = flag_in_project(
        conn, caller, project_id, name, permission, environment=environment, event_tags=permission is not None
    )
    if check_environment and store_environments.get(conn, environment) is None:
        _refuse_unknown_environment(conn, environment)
    return flag


def _strategy(conn: Connection, flag: dict[str, Any], environment: str, strategy_id: str) -> dict[str, Any]:
    """The strategy ``strategy_id`` of ``flag`` in ``environment`` (``store.strategies``' row,
    with its type's ``type_parameters``).

    :raise NotFound: the environment is not one of the install's (a strategy found there
        proves it is), or the flag has no such strategy there.
    """
    row = store_strategies.get(conn, strategy_id)
    if row is None or row["feature_name"] != flag["name"] or row["environment"] != environment:
        if store_environments.get(conn, environment) is None:
            _refuse_unknown_environment(conn, environment)
        raise NotFound(
            f'Flag "{flag["name"]}" has no strategy {as_json(strategy_id, 80)} in environment '
            f'"{environment}": '
            f"GET /api/admin/projects/{flag['project_id']}/features/{flag['name']}/environments/"
            f"{environment}/strategies lists its strategies."
        )
    return row


def list_strategies(
    conn: Connection, caller: Caller, project_id: str, name: str, environment: str
) -> list[dict[str, Any]]:
    """The strategies of the flag (live or archived) in ``environment``, in order
    (``featureStrategySchema`` each).

    :raise NotFound: no such project, flag in it, or environment.
    :raise Forbidden: the caller cannot see the project.
    """
    flag = _flag(conn, caller, project_id, name, environment, None)
    rows = store_strategies.of_environment(conn, flag["name"], environment)
    segments = store_segments.segment_ids_by_strategy(conn, flag["name"]) if rows else {}
    return [strategy_wire(row, segments.get(row["id"], [])) for row in rows]


def get(
    conn: Connection, caller: Caller, project_id: str, name: str, environment: str, strategy_id: str
) -> dict[str, Any]:
    """One strategy of the flag in ``environment`` (``featureStrategySchema``).

    :raise NotFound: no such project, flag in it, environment, or strategy of the flag there.
    :raise Forbidden: the caller cannot see the project.
    """
    flag = _flag(conn, caller, project_id, name, environment, None, check_environment=False)
    row = _strategy(conn, flag, environment, strategy_id)
    return strategy_wire(row, store_segments.strategy_segment_ids(conn, row["id"]))


# --- checking a body ----------------------------------------------------------------------------


def _text_or_none(value: Any, field: str, at_most: int) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        _refuse(field, f"must be a string or null; got {json_kind(value)}")
    if len(value) > at_most:
        _refuse(field, f"must be at most {at_most} characters long; it has {len(value)}")
    return value


def _sort_order(value: Any) -> int:
    low, high = SORT_ORDER_RANGE
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        _refuse("sortOrder", f"must be a whole number from {low} to {high}; got {json_kind(value)}")
    return value


def _parameters(
    value: Any, strategy_name: str, declared: list[dict[str, Any]], feature_name: str
) -> dict[str, str]:
    """``parameters`` checked (an object of strings; None: none), flexibleRollout's filled in.

    :raise Invalid: naming the parameter at fault (``parameters.rollout: ...``).
    """
    if value is None:
        value = {}
    if not isinstance(value, dict):
        _refuse("parameters", f"must be an object of parameter name: string value; got {json_kind(value)}")
    if len(value) > MAX_PARAMETERS:
        _refuse("parameters", f"may hold at most {MAX_PARAMETERS} parameters; it holds {len(value)}")
    for key, text in value.items():
        where = f"parameters.{key[:PARAMETER_NAME_MAX_LENGTH]}"
        if not 1 <= len(key) <= PARAMETER_NAME_MAX_LENGTH:
            _refuse(where, f"a parameter name is 1 to {PARAMETER_NAME_MAX_LENGTH} characters long")
        if not isinstance(text, str):
            _refuse(where, f'must be a string (every parameter is, e.g. "50"); got {json_kind(text)}')
    parameters = dict(value)
    if strategy_name == "flexibleRollout":
        parameters = flexible_rollout_parameters(parameters, feature_name)
    kinds = {p.get("name"): p.get("type") for p in declared if isinstance(p, dict)}
    if strategy_name == "flexibleRollout":
        kinds["rollout"] = "percentage"
    for key, kind in kinds.items():
        text = parameters.get(key)
        if not text:
            continue
        if kind == "percentage" and not _WHOLE_PERCENT.fullmatch(text):
            _refuse(
                f"parameters.{key}", f"must be a whole number from 0 to 100, as a string; got {as_json(text)}"
            )
        if kind == "number" and not _NUMBER.fullmatch(text):
            _refuse(f"parameters.{key}", f'must be a number, as a string (e.g. "42"); got {as_json(text)}')
        if kind == "boolean" and text not in ("true", "false"):
            _refuse(f"parameters.{key}", f'must be "true" or "false"; got {as_json(text)}')
    return parameters


def _checked(
    conn: Connection,
    flag: dict[str, Any],
    body: Mapping[str, Any],
    limits: Mapping[str, int] | None,
    *,
    before: dict[str, Any] | None = None,
    declared: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The fields to store for ``body`` (a create body; with ``before``, the strategy it
    replaces, a PUT's: see the module's docstring for what a field left out takes), checked:
    ``{strategy_name, title, disabled, sort_order (None: after the last), parameters,
    constraints, variants, segments (None: unchanged)}``. ``declared``: the parameters of the
    strategy type named, when the caller has read them (else they are read here).

    :raise Invalid: 400 naming the field at fault; nothing is written.
    """
    unknown = [key for key in body if key not in MEMBERS]
    if unknown:
        _refuse(unknown[0][:100], f"is unknown here (a strategy has {', '.join(MEMBERS)})")
    kept = before or {}
    strategy_name = body["name"] if "name" in body else kept.get("strategy_name")
    if not isinstance(strategy_name, str):
        _refuse(
            "name",
            f"must be the name of a strategy type, e.g. flexibleRollout; got {json_kind(strategy_name)}",
        )
    if declared is None and before is not None and strategy_name == before["strategy_name"]:
        declared = before.get("type_parameters")
    if declared is None:
        found = store_strategies.strategy_type(conn, strategy_name)
        declared = None if found is None else found["parameters"]
    if declared is None:
        _refuse(
            "name",
            f"there is no strategy type {as_json(strategy_name, 100)}: GET /api/admin/strategies lists them, "
            "and POST /api/admin/strategies declares a custom one",
        )
    title = _text_or_none(body["title"], "title", TITLE_MAX_LENGTH) if "title" in body else kept.get("title")
    disabled = body["disabled"] if "disabled" in body else bool(kept.get("disabled", False))
    if disabled is not None and not isinstance(disabled, bool):
        _refuse("disabled", f"must be true, false or null; got {json_kind(disabled)}")
    sort_order = (
        _sort_order(body["sortOrder"]) if body.get("sortOrder") is not None else kept.get("sort_order")
    )
    parameters = _parameters(
        body["parameters"] if "parameters" in body else kept.get("parameters"),
        strategy_name,
        declared,
        flag["name"],
    )
    constraints = rule_constraints.normalise(
        body.get("constraints"), limits, existing=kept.get("constraints") if before else None
    )
    variants = rule_variants.normalise(body.get("variants"), strategy=True)
    segments = body.get("segments")
    if segments is not None or not before:
        segments = rule_segments.check_ids(conn, segments, flag["project_id"], limits)
    return {
        "strategy_name": strategy_name,
        "title": title,
        "disabled": bool(disabled),
        "sort_order": sort_order,
        "parameters": parameters,
        "constraints": constraints,
        "variants": variants,
        "segments": segments,
    }


# --- changes ------------------------------------------------------------------------------------


def _record(
    conn: Connection,
    event_type: str,
    caller: Caller,
    flag: dict[str, Any],
    environment: str,
    clock: Clock,
    *,
    data: Any = None,
    pre_data: Any = None,
) -> None:
    events.record(
        conn,
        event_type,
        Actor.of_caller(caller),
        project=flag["project_id"],
        environment=environment,
        feature_name=flag["name"],
        data=data,
        pre_data=pre_data,
        tags=flag["event_tags"],
        clock=clock,
    )


def _after_last(next_sort_order: int) -> int:
    """The ``sortOrder`` of a strategy added without one: after the last, or beside it when the
    last already has the largest value a 32-bit ``sortOrder`` takes (ties are read by creation
    time)."""
    return min(next_sort_order, SORT_ORDER_RANGE[1])


def add(
    conn: Connection,
    caller: Caller,
    project_id: str,
    name: str,
    environment: str,
    body: Mapping[str, Any],
    clock: Clock,
    limits: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """Add a strategy (``createFeatureStrategySchema``, as parsed JSON) to the flag in
    ``environment``; record ``feature-strategy-add``. Returns it, with its new id (a UUID).
    ``limits``: the instance's resource limits (None: ``FLAGADMIN_RESOURCE_LIMITS``).

    :raise NotFound: no such project, flag in it, or environment.
    :raise Forbidden: the caller lacks CREATE_FEATURE_STRATEGY in ``environment``.
    :raise Conflict: the flag is archived.
    :raise Invalid: the body breaks a rule (see the module's docstring), or the flag has as
        many strategies there as ``featureEnvironmentStrategies`` allows.
    """
    with conn.write(LOCK):
        flag = _flag(
            conn, caller, project_id, name, environment, CREATE_FEATURE_STRATEGY, check_environment=False
        )
        strategy_name = body.get("name") if isinstance(body.get("name"), str) else None
        place = store_strategies.place(conn, flag["name"], environment, strategy_name)
        if not place["environment_found"]:
            _refuse_unknown_environment(conn, environment)
        refuse_archived(flag)
        checked = _checked(conn, flag, body, limits, declared=place["type_parameters"])
        resource_limits.refuse_past("featureEnvironmentStrategies", place["strategies"], limits, "strategy")
        if place["enabled"] is None:
            store_strategies.add_environment_row(conn, flag["name"], environment)
        row = store_strategies.insert(
            conn,
            id=str(uuid.uuid4()),
            feature_name=flag["name"],
            environment=environment,
            strategy_name=checked["strategy_name"],
            title=checked["title"],
            disabled=checked["disabled"],
            sort_order=_after_last(place["next_sort_order"])
            if checked["sort_order"] is None
            else checked["sort_order"],
            parameters=checked["parameters"],
            constraints=checked["constraints"],
            variants=checked["variants"],
            created_at=clock.now_rfc3339(),
            created_by_user_id=caller.user_id,
        )
        if checked["segments"]:
            store_segments.set_strategy_segments(conn, row["id"], checked["segments"])
        added = strategy_wire(row, checked["segments"])
        _record(conn, "feature-strategy-add", caller, flag, environment, clock, data=added)
        return added


def _switch_off_without_strategies(
    conn: Connection, caller: Caller, flag: dict[str, Any], environment: str, clock: Clock
) -> None:
    """Switch the flag off in ``environment`` when no strategy there is left enabled, and
    record ``feature-environment-disabled`` if it was on (the reference server's rule: a flag is
    on only where a strategy can turn it on)."""
    if store_strategies.has_enabled(conn, flag["name"], environment):
        return
    if store_features.set_enabled(conn, flag["name"], environment, False):
        _record(conn, "feature-environment-disabled", caller, flag, environment, clock)


def _replace(
    conn: Connection,
    caller: Caller,
    flag: dict[str, Any],
    environment: str,
    before: dict[str, Any],
    body: Mapping[str, Any],
    clock: Clock,
    limits: Mapping[str, int] | None,
) -> dict[str, Any]:
    """Store ``body`` over the strategy ``before`` (PUT's rules), record
    ``feature-strategy-update`` when that changed anything, and switch the flag off there if
    no strategy is left enabled. Call inside the write transaction."""
    segments_before = store_segments.strategy_segment_ids(conn, before["id"])
    checked = _checked(conn, flag, body, limits, before=before)
    store_strategies.update(
        conn,
        before["id"],
        strategy_name=checked["strategy_name"],
        title=checked["title"],
        disabled=checked["disabled"],
        sort_order=checked["sort_order"],
        parameters=checked["parameters"],
        constraints=checked["constraints"],
        variants=checked["variants"],
    )
    segments = segments_before
    if checked["segments"] is not None and checked["segments"] != segments_before:
        store_segments.set_strategy_segments(conn, before["id"], checked["segments"])
        segments = checked["segments"]
    after = {
        **before,
        "strategy_name": checked["strategy_name"],
        "title": checked["title"],
        "disabled": int(checked["disabled"]),
        "sort_order": checked["sort_order"],
        "parameters": checked["parameters"],
        "constraints": checked["constraints"],
        "variants": checked["variants"],
    }
    data = strategy_wire(after, segments)
    pre_data = strategy_wire(before, segments_before)
    _record(conn, "feature-strategy-update", caller, flag, environment, clock, data=data, pre_data=pre_data)
    if checked["disabled"]:  # (an enabled strategy keeps the flag's environment as it is)
        _switch_off_without_strategies(conn, caller, flag, environment, clock)
    return data


def replace(
    conn: Connection,
    caller: Caller,
    project_id: str,
    name: str,
    environment: str,
    strategy_id: str,
    body: Mapping[str, Any],
    clock: Clock,
    limits: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """PUT: replace the strategy with ``body`` (``updateFeatureStrategySchema``; see the
    module's docstring for the fields left out). Records ``feature-strategy-update`` when that
    changed anything. Returns the strategy.

    :raise NotFound: no such project, flag in it, environment, or strategy of the flag there.
    :raise Forbidden: the caller lacks UPDATE_FEATURE_STRATEGY in ``environment``.
    :raise Conflict: the flag is archived.
    :raise Invalid: the body breaks a rule (see the module's docstring).
    """
    with conn.write(LOCK):
        flag = _flag(
            conn, caller, project_id, name, environment, UPDATE_FEATURE_STRATEGY, check_environment=False
        )
        refuse_archived(flag)
        before = _strategy(conn, flag, environment, strategy_id)
        return _replace(conn, caller, flag, environment, before, body, clock, limits)


def patch(
    conn: Connection,
    caller: Caller,
    project_id: str,
    name: str,
    environment: str,
    strategy_id: str,
    operations: list[dict[str, Any]],
    clock: Clock,
    limits: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """PATCH: apply a JSON Patch (RFC 6902; ``operations``: ``{op, path[, from][, value]}``) to
    the strategy as GET shows it, and store the result as PUT does (``id`` and
    ``featureName`` cannot change). Records like :func:`replace`; returns the strategy.

    :raise NotFound: no such project, flag in it, environment, or strategy of the flag there.
    :raise Forbidden: the caller lacks UPDATE_FEATURE_STRATEGY in ``environment``.
    :raise Conflict: the flag is archived, or a ``test`` operation failed.
    :raise Invalid: a patch that cannot be applied, or whose result breaks a rule.
    """
    with conn.write(LOCK):
        flag = _flag(
            conn, caller, project_id, name, environment, UPDATE_FEATURE_STRATEGY, check_environment=False
        )
        refuse_archived(flag)
        before = _strategy(conn, flag, environment, strategy_id)
        document = strategy_wire(before, store_segments.strategy_segment_ids(conn, before["id"]))
        patched = _apply(document, operations)
        if not isinstance(patched, dict):
            raise Invalid("The patch must leave a strategy (a JSON object).")
        try:
            size = len(orjson.dumps(patched))
        except orjson.JSONEncodeError:
            size = MAX_PATCHED_BYTES + 1
        if size > MAX_PATCHED_BYTES:
            raise Invalid(
                f"The patch leaves a strategy of more than {MAX_PATCHED_BYTES // 1024} KiB of JSON (or "
                "nested too deep to write): nothing was changed."
            )
        for member in READ_ONLY:
            if member in patched and patched[member] != document[member]:
                _refuse(member, f"is read-only: the strategy's {member} stays {as_json(document[member])}")
        body = {key: value for key, value in patched.items() if key not in READ_ONLY}
        return _replace(conn, caller, flag, environment, before, body, clock, limits)


def _apply(document: dict[str, Any], operations: list[dict[str, Any]]) -> Any:
    """``document`` with ``operations`` applied one after another (RFC 6902 section 3: all or
    nothing; nothing is stored here).

    :raise Conflict: a ``test`` operation found another value (RFC 6902 section 4.6).
    :raise Invalid: an operation names a member the document does not have.
    """
    for index, op in enumerate(operations):
        where = f"Operation {index} ({op['op']} {as_json(op['path'], 80)})"
        try:
            document = jsonpatch.JsonPatch([op]).apply(document)
        except jsonpatch.JsonPatchTestFailed as exc:
            raise Conflict(
                f"{where} failed: the strategy does not hold that value. Nothing was changed."
            ) from exc
        except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException, TypeError, ValueError) as exc:
            message = f"{where} cannot be applied to the strategy as GET shows it. Nothing was changed."
            raise Invalid(message, details=[f"{index}.path: {message}"]) from exc
    return document


def remove(
    conn: Connection,
    caller: Caller,
    project_id: str,
    name: str,
    environment: str,
    strategy_id: str,
    clock: Clock,
) -> None:
    """Remove the strategy; record ``feature-strategy-remove`` (``preData``: the strategy).
    When no strategy is left enabled there, the flag is switched off there.

    :raise NotFound: no such project, flag in it, environment, or strategy of the flag there.
    :raise Forbidden: the caller lacks DELETE_FEATURE_STRATEGY in ``environment``.
    :raise Conflict: the flag is archived.
    """
    with conn.write(LOCK):
        flag = _flag(
            conn, caller, project_id, name, environment, DELETE_FEATURE_STRATEGY, check_environment=False
        )
        refuse_archived(flag)
        before = _strategy(conn, flag, environment, strategy_id)
        segments = store_segments.strategy_segment_ids(conn, before["id"])
        if segments:
            store_segments.delete_strategy_segments(conn, before["id"])
        store_strategies.delete(conn, before["id"])
        _record(
            conn,
            "feature-strategy-remove",
            caller,
            flag,
            environment,
            clock,
            pre_data=strategy_wire(before, segments),
        )
        if not before["disabled"]:  # (a disabled one never kept the flag on)
            _switch_off_without_strategies(conn, caller, flag, environment, clock)


def set_sort_order(
    conn: Connection,
    caller: Caller,
    project_id: str,
    name: str,
    environment: str,
    orders: list[dict[str, Any]],
    clock: Clock,
) -> None:
    """Give the strategies named in ``orders`` (``[{id, sortOrder}]``, loaded
    ``setStrategySortOrderSchema``) their sort order; the others keep theirs. Records
    ``strategy-order-changed`` (``{strategyIds}`` before and after, in order) when the order
    changed.

    :raise NotFound: no such project, flag in it, or environment.
    :raise Forbidden: the caller lacks UPDATE_FEATURE_STRATEGY in ``environment``.
    :raise Conflict: the flag is archived.
    :raise Invalid: an id that is not a strategy of the flag there, or one given twice.
    """
    with conn.write(LOCK):
        flag = _flag(conn, caller, project_id, name, environment, UPDATE_FEATURE_STRATEGY)
        refuse_archived(flag)
        rows = store_strategies.of_environment(conn, flag["name"], environment)
        known = {row["id"] for row in rows}
        seen: set[str] = set()
        for index, order in enumerate(orders):
            if order["id"] not in known:
                _refuse(
                    f"{index}.id",
                    f'flag "{flag["name"]}" has no strategy {as_json(order["id"], 80)} in environment '
                    f'"{environment}"',
                )
            if order["id"] in seen:
                _refuse(f"{index}.id", f"strategy {order['id']} is given twice")
            seen.add(order["id"])
            _sort_order(order["sortOrder"])
        store_strategies.set_sort_orders(conn, [(order["id"], order["sortOrder"]) for order in orders])
        before = [row["id"] for row in rows]
        after = [row["id"] for row in store_strategies.of_environment(conn, flag["name"], environment)]
        _record(
            conn,
            "strategy-order-changed",
            caller,
            flag,
            environment,
            clock,
            data={"strategyIds": after},
            pre_data={"strategyIds": before},
        )
