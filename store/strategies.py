"""Strategy types and a flag environment's strategies (tables ``strategy_types`` and
``feature_strategies``), both engines.

A strategy type row: ``{name, title, description, parameters, built_in (0/1), deprecated (0/1),
sort_order, created_at}``, ``parameters`` parsed (``[{name, type, description, required}]``).
The built-in types are rows of the schema files themselves (``schema.sql``,
``schema.postgresql.sql``), written by every schema upgrade that finds them missing.

A flag strategy row: ``{id, feature_name, environment, strategy_name, title, disabled (0/1),
sort_order, parameters, constraints, variants, created_at, created_by_user_id}``, its JSON
columns parsed (``parameters`` a dict of strings, ``constraints`` and ``variants`` lists in the
reference's wire shapes, normalised by :mod:`flagadmin.rules` before they are written). A flag
environment's strategies are read in ``sort_order``, then creation, then id. The segments a
strategy uses are :mod:`flagadmin.store.segments`' (``feature_strategy_segments``).

Every write here is called inside the change's write transaction.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

from .engine import Connection
from .features import BYTEWISE


def _json(value: Any) -> str:
    """``value`` as the compact JSON text the JSON columns hold."""
    return orjson.dumps(value).decode()


# --- strategy types -------------------------------------------------------------------------

_TYPE_COLUMNS = "name, title, description, parameters, built_in, deprecated, sort_order, created_at"


def _type_row(row: dict[str, Any] | None) -> dict[str, Any] | None:
    if row is not None:
        row["parameters"] = orjson.loads(row["parameters"])
    return row


def strategy_types(conn: Connection) -> list[dict[str, Any]]:
    """Every strategy type, built-in and custom, by ``sort_order`` then name (code point by
    code point)."""
    rows = conn.all(
        f"SELECT {_TYPE_COLUMNS} FROM strategy_types ORDER BY sort_order, name{BYTEWISE[conn.dialect]}"
    )
    return [_type_row(row) for row in rows]


def strategy_type(conn: Connection, name: str) -> dict[str, Any] | None:
    """The strategy type ``name``, or None."""
    return _type_row(conn.one(f"SELECT {_TYPE_COLUMNS} FROM strategy_types WHERE name = ?", [name]))


#: Custom types are listed after the built-ins (0 to 7).
CUSTOM_SORT_ORDER = 100


def insert_strategy_type(
    conn: Connection,
    *,
    name: str,
    title: str | None,
    description: str | None,
    parameters: list[dict[str, Any]],
    deprecated: bool,
    created_at: str,
) -> bool:
    """Add the custom strategy type ``name``; False (nothing written) when a type has that name."""
    added = conn.run(
        "INSERT INTO strategy_types (name, title, description, parameters, built_in, deprecated, sort_order,"
        " created_at) VALUES (?, ?, ?, ?, 0, ?, ?, ?) ON CONFLICT (name) DO NOTHING",
        [name, title, description, _json(parameters), int(deprecated), CUSTOM_SORT_ORDER, created_at],
    )
    return bool(added)


def update_strategy_type(
    conn: Connection,
    name: str,
    *,
    title: str | None,
    description: str | None,
    parameters: list[dict[str, Any]],
) -> None:
    """Set the custom strategy type's title, description and parameters."""
    conn.run(
        "UPDATE strategy_types SET title = ?, description = ?, parameters = ?"
        " WHERE name = ? AND built_in = 0",
        [title, description, _json(parameters), name],
    )


def set_strategy_type_deprecated(conn: Connection, name: str, deprecated: bool) -> bool:
    """Mark the strategy type deprecated or not; True when that changed anything."""
    changed = conn.run(
        "UPDATE strategy_types SET deprecated = ? WHERE name = ? AND deprecated <> ?",
        [int(deprecated), name, int(deprecated)],
    )
    return changed > 0


def delete_strategy_type(conn: Connection, name: str) -> None:
    """Remove the custom strategy type ``name`` (a built-in one stays)."""
    conn.run("DELETE FROM strategy_types WHERE name = ? AND built_in = 0", [name])


def flags_using_type(conn: Connection, name: str, at_most: int = 5) -> list[str]:
    """Up to ``at_most`` names of flags (live or archived) with a strategy of type ``name``, by
    name (code point by code point)."""
    return conn.column(
        "SELECT feature_name FROM feature_strategies WHERE strategy_name = ? GROUP BY feature_name"
        f" ORDER BY feature_name{BYTEWISE[conn.dialect]} LIMIT ?",
        [name, at_most],
    )


# --- a flag environment's strategies ----------------------------------------------------------

_COLUMNS = (
    "id, feature_name, environment, strategy_name, title, disabled, sort_order, parameters, constraints,"
    " variants, created_at, created_by_user_id"
)
_ORDER = "sort_order, created_at, id"


def _row(row: dict[str, Any] | None) -> dict[str, Any] | None:
    if row is not None:
        row["parameters"] = orjson.loads(row["parameters"])
        row["constraints"] = orjson.loads(row["constraints"])
        row["variants"] = orjson.loads(row["variants"])
    return row


_WITH_TYPE = (
    "SELECT fs.id, fs.feature_name, fs.environment, fs.strategy_name, fs.title, fs.disabled, fs.sort_order,"
    " fs.parameters, fs.constraints, fs.variants, fs.created_at, fs.created_by_user_id,"
    " st.parameters AS type_parameters"
    " FROM feature_strategies fs LEFT JOIN strategy_types st ON st.name = fs.strategy_name WHERE fs.id = ?"
)


def get(conn: Connection, strategy_id: str) -> dict[str, Any] | None:
    """The flag strategy ``strategy_id``, or None; with ``type_parameters``, the parameters its
    strategy type declares (parsed; None when the type is gone), read by the same statement."""
    row = _row(conn.one(_WITH_TYPE, [strategy_id]))
    if row is not None and row["type_parameters"] is not None:
        row["type_parameters"] = orjson.loads(row["type_parameters"])
    return row


def of_environment(conn: Connection, feature_name: str, environment: str) -> list[dict[str, Any]]:
    """The strategies of flag ``feature_name`` in ``environment``, in order."""
    rows = conn.all(
        f"SELECT {_COLUMNS} FROM feature_strategies WHERE feature_name = ? AND environment = ?"
        f" ORDER BY {_ORDER}",
        [feature_name, environment],
    )
    return [_row(row) for row in rows]


def of_flag(conn: Connection, feature_name: str) -> dict[str, list[dict[str, Any]]]:
    """``{environment: [strategies in order]}`` for every environment where flag
    ``feature_name`` has a strategy (one statement)."""
    found: dict[str, list[dict[str, Any]]] = {}
    for row in conn.all(
        f"SELECT {_COLUMNS} FROM feature_strategies WHERE feature_name = ? ORDER BY environment, {_ORDER}",
        [feature_name],
    ):
        found.setdefault(row["environment"], []).append(_row(row))
    return found


#: What a strategy add reads of its flag environment, in one statement: whether the
#: environment exists in the install, whether the flag has its row there (and is on), how many
#: strategies the flag has there and the next sort order, and the strategy type's parameters
#: (NULL: no such type).
_PLACE = (
    "SELECT (SELECT count(*) FROM environments WHERE name = :environment) AS environment_found,"
    " (SELECT enabled FROM feature_environments WHERE feature_name = :feature AND name = :environment)"
    "  AS enabled,"
    " (SELECT count(*) FROM feature_strategies WHERE feature_name = :feature AND environment = :environment)"
    "  AS strategies,"
    " (SELECT max(sort_order) FROM feature_strategies WHERE feature_name = :feature"
    "  AND environment = :environment) AS max_sort_order,"
    " (SELECT parameters FROM strategy_types WHERE name = :strategy) AS type_parameters"
)


def place(conn: Connection, feature_name: str, environment: str, strategy_name: str | None) -> dict[str, Any]:
    """Where a strategy of type ``strategy_name`` would go, in one statement:
    ``{environment_found (bool), enabled (0/1, None when the flag has no row for the
    environment), strategies (count), next_sort_order, type_parameters (the type's declared
    parameters, parsed; None when there is no such type)}``."""
    row = conn.one(
        _PLACE, {"feature": feature_name, "environment": environment, "strategy": strategy_name or ""}
    )
    assert row is not None
    highest = row.pop("max_sort_order")
    row["next_sort_order"] = 0 if highest is None else highest + 1
    row["environment_found"] = bool(row["environment_found"])
    if row["type_parameters"] is not None:
        row["type_parameters"] = orjson.loads(row["type_parameters"])
    return row


def insert(
    conn: Connection,
    *,
    id: str,
    feature_name: str,
    environment: str,
    strategy_name: str,
    title: str | None,
    disabled: bool,
    sort_order: int,
    parameters: dict[str, str],
    constraints: list[dict[str, Any]],
    variants: list[dict[str, Any]],
    created_at: str,
    created_by_user_id: int | None,
) -> dict[str, Any]:
    """Add a strategy to the flag's environment; returns its row as :func:`get` gives it."""
    row = {
        "id": id,
        "feature_name": feature_name,
        "environment": environment,
        "strategy_name": strategy_name,
        "title": title,
        "disabled": int(disabled),
        "sort_order": sort_order,
        "parameters": _json(parameters),
        "constraints": _json(constraints),
        "variants": _json(variants),
        "created_at": created_at,
        "created_by_user_id": created_by_user_id,
    }
    conn.run(
        f"INSERT INTO feature_strategies ({_COLUMNS}) VALUES (:id, :feature_name, :environment,"
        " :strategy_name, :title, :disabled, :sort_order, :parameters, :constraints, :variants, :created_at,"
        " :created_by_user_id)",
        row,
    )
    row.update(parameters=parameters, constraints=constraints, variants=variants)
    return row


def update(
    conn: Connection,
    strategy_id: str,
    *,
    strategy_name: str,
    title: str | None,
    disabled: bool,
    sort_order: int,
    parameters: dict[str, str],
    constraints: list[dict[str, Any]],
    variants: list[dict[str, Any]],
) -> None:
    """Set every changeable field of the strategy ``strategy_id``."""
    conn.run(
        "UPDATE feature_strategies SET strategy_name = ?, title = ?, disabled = ?, sort_order = ?,"
        " parameters = ?, constraints = ?, variants = ? WHERE id = ?",
        [
            strategy_name,
            title,
            int(disabled),
            sort_order,
            _json(parameters),
            _json(constraints),
            _json(variants),
            strategy_id,
        ],
    )


def set_sort_orders(conn: Connection, orders: Iterable[tuple[str, int]]) -> None:
    """Give each strategy of ``orders`` (``(id, sort_order)``) its sort order."""
    conn.run_many("UPDATE feature_strategies SET sort_order = ? WHERE id = ?", [(o, i) for i, o in orders])


def delete(conn: Connection, strategy_id: str) -> None:
    """Remove the strategy (its segment links go first:
    :func:`flagadmin.store.segments.delete_strategy_segments`)."""
    conn.run("DELETE FROM feature_strategies WHERE id = ?", [strategy_id])


def has_enabled(conn: Connection, feature_name: str, environment: str) -> bool:
    """Whether the flag has a strategy in ``environment`` that is not disabled."""
    found = conn.value(
        "SELECT 1 FROM feature_strategies WHERE feature_name = ? AND environment = ? AND disabled = 0"
        " LIMIT 1",
        [feature_name, environment],
    )
    return found is not None


def add_environment_row(conn: Connection, feature_name: str, environment: str) -> None:
    """Give the flag its (disabled) row in ``environment`` when it has none yet (an environment
    added to the install after the flag was created)."""
    conn.run(
        "INSERT INTO feature_environments (feature_name, name, enabled) VALUES (?, ?, 0)"
        " ON CONFLICT (feature_name, name) DO NOTHING",
        [feature_name, environment],
    )
