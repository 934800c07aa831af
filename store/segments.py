"""Segments and the strategies that use them (tables ``segments`` and
``feature_strategy_segments``), both engines.

A segment row: ``{id, name, description, project_id, constraints, created_at, created_by}``;
``constraints`` is the stored compact JSON text (``rules.constraints.normalise``'s list), read
back as text: :func:`flagadmin.rules.segments.wire` parses it. Reads that answer the admin API
add ``used_in_features`` and ``used_in_projects``: the live flags (and their projects) whose
strategies use the segment.

For the strategies' code (``rules/strategies.py``), inside its write transaction:

- :func:`flagadmin.rules.segments.check_ids` first (the ids sent as a strategy's ``segments``:
  each must exist and be usable in the flag's project, at most ``strategySegments`` of them;
  400 naming the field otherwise, before anything is written);
- then :func:`set_strategy_segments` once the strategy's row exists (a strategy add or update;
  it replaces the strategy's whole list);
- :func:`delete_strategy_segments` before a strategy's row is deleted (the link references
  it), and :func:`delete_flag_strategy_segments` before a flag's strategies are;
- :func:`strategy_segment_ids` / :func:`segment_ids_by_strategy` to show a strategy's
  ``segments`` (ids, ascending).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .engine import Connection
from .features import BYTEWISE

#: A segment's own columns, from ``segments s``.
_COLUMNS = "s.id, s.name, s.description, s.project_id, s.constraints, s.created_at, s.created_by"

#: A segment with how many live flags, and projects, use it through their strategies.
_WITH_USE = (
    f"SELECT {_COLUMNS},"
    " (SELECT count(DISTINCT f.name) FROM feature_strategy_segments l"
    "  JOIN feature_strategies fs ON fs.id = l.strategy_id"
    "  JOIN features f ON f.name = fs.feature_name AND f.archived_at IS NULL"
    "  WHERE l.segment_id = s.id) AS used_in_features,"
    " (SELECT count(DISTINCT f.project_id) FROM feature_strategy_segments l"
    "  JOIN feature_strategies fs ON fs.id = l.strategy_id"
    "  JOIN features f ON f.name = fs.feature_name AND f.archived_at IS NULL"
    "  WHERE l.segment_id = s.id) AS used_in_projects"
    " FROM segments s"
)


def count(conn: Connection) -> int:
    """How many segments the install holds (the ``segments`` resource limit counts them)."""
    return conn.value("SELECT count(*) FROM segments") or 0


def get(conn: Connection, segment_id: int) -> dict[str, Any] | None:
    """The segment ``segment_id`` with ``used_in_features`` and ``used_in_projects``, or None."""
    return conn.one(_WITH_USE + " WHERE s.id = ?", [segment_id])


def all_segments(conn: Connection) -> list[dict[str, Any]]:
    """Every segment with its use (:func:`get`'s keys), by name (code point by code point), then
    id."""
    return conn.all(_WITH_USE + f" ORDER BY s.name{BYTEWISE[conn.dialect]}, s.id")


def name_taken(conn: Connection, name: str, *, other_than: int | None = None) -> bool:
    """True when a segment (other than ``other_than``) is called ``name`` (exactly: names
    differing by case are different)."""
    return (
        conn.value(
            "SELECT 1 FROM segments WHERE name = ? AND id <> ?",
            [name, -1 if other_than is None else other_than],
        )
        is not None
    )


def insert(
    conn: Connection,
    *,
    name: str,
    description: str | None,
    project_id: str | None,
    constraints: str,
    created_at: str,
    created_by: str | None,
) -> int:
    """Add a segment (``constraints``: compact JSON text); its new id. Call inside a write
    transaction.

    :raise flagadmin.store.Conflict: a segment is called ``name`` already.
    """
    return conn.insert(
        "INSERT INTO segments (name, description, project_id, constraints, created_at, created_by)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        [name, description, project_id, constraints, created_at, created_by],
    )


def update(
    conn: Connection,
    segment_id: int,
    *,
    name: str,
    description: str | None,
    project_id: str | None,
    constraints: str,
) -> None:
    """Replace the segment's name, description, project and constraints (its creation stays);
    call inside a write transaction."""
    conn.run(
        "UPDATE segments SET name = ?, description = ?, project_id = ?, constraints = ? WHERE id = ?",
        [name, description, project_id, constraints, segment_id],
    )


def delete(conn: Connection, segment_id: int) -> None:
    """Remove the segment (no strategy may use it: :func:`strategies_using` first); call inside
    a write transaction."""
    conn.run("DELETE FROM segments WHERE id = ?", [segment_id])


def strategies_using(conn: Connection, segment_id: int) -> list[dict[str, Any]]:
    """The strategies that use the segment, live and archived flags alike, by flag, environment
    and strategy id: ``{id, feature_name, project_id, environment, strategy_name, archived
    (0/1)}``."""
    bytewise = BYTEWISE[conn.dialect]
    return conn.all(
        "SELECT fs.id, fs.feature_name, f.project_id, fs.environment, fs.strategy_name,"
        " CASE WHEN f.archived_at IS NULL THEN 0 ELSE 1 END AS archived"
        " FROM feature_strategy_segments l JOIN feature_strategies fs ON fs.id = l.strategy_id"
        " JOIN features f ON f.name = fs.feature_name WHERE l.segment_id = ?"
        f" ORDER BY fs.feature_name{bytewise}, fs.environment{bytewise}, fs.id{bytewise}",
        [segment_id],
    )


def projects_of(conn: Connection, segment_ids: Iterable[int]) -> dict[int, str | None]:
    """``{id: project_id}`` (None: a global segment) of those of ``segment_ids`` that exist."""
    ids = sorted(set(segment_ids))
    if not ids:
        return {}
    marks = ", ".join("?" * len(ids))
    rows = conn.all(f"SELECT id, project_id FROM segments WHERE id IN ({marks})", ids)
    return {row["id"]: row["project_id"] for row in rows}


def set_strategy_segments(conn: Connection, strategy_id: str, segment_ids: Iterable[int]) -> None:
    """Make ``segment_ids`` the whole list of segments the strategy ``strategy_id`` uses
    (checked first with :func:`flagadmin.rules.segments.check_ids`; the strategy's row must
    exist). Call inside the strategy's write transaction."""
    conn.run("DELETE FROM feature_strategy_segments WHERE strategy_id = ?", [strategy_id])
    ids = sorted(set(segment_ids))
    if ids:
        conn.run_many(
            "INSERT INTO feature_strategy_segments (strategy_id, segment_id) VALUES (?, ?)",
            [(strategy_id, segment_id) for segment_id in ids],
        )


def delete_strategy_segments(conn: Connection, strategy_id: str) -> None:
    """Forget which segments the strategy uses (before its row is deleted); call inside a
    write transaction."""
    conn.run("DELETE FROM feature_strategy_segments WHERE strategy_id = ?", [strategy_id])


def delete_flag_strategy_segments(conn: Connection, feature_name: str) -> None:
    """Forget which segments the strategies of flag ``feature_name`` use (before they are
    deleted, as a flag deleted for good is); call inside a write transaction."""
    conn.run(
        "DELETE FROM feature_strategy_segments WHERE strategy_id IN"
        " (SELECT id FROM feature_strategies WHERE feature_name = ?)",
        [feature_name],
    )


def strategy_segment_ids(conn: Connection, strategy_id: str) -> list[int]:
    """The ids of the segments the strategy uses, ascending."""
    return conn.column(
        "SELECT segment_id FROM feature_strategy_segments WHERE strategy_id = ? ORDER BY segment_id",
        [strategy_id],
    )


def segment_ids_by_strategy(conn: Connection, feature_name: str) -> dict[str, list[int]]:
    """``{strategy id: [segment ids, ascending]}`` for every strategy of flag ``feature_name``
    that uses a segment (one statement for a whole flag's answer)."""
    rows = conn.all(
        "SELECT l.strategy_id, l.segment_id FROM feature_strategy_segments l"
        " JOIN feature_strategies fs ON fs.id = l.strategy_id WHERE fs.feature_name = ?"
        " ORDER BY l.strategy_id, l.segment_id",
        [feature_name],
    )
    found: dict[str, list[int]] = {}
    for row in rows:
        found.setdefault(row["strategy_id"], []).append(row["segment_id"])
    return found


def segments_of_strategy(conn: Connection, strategy_id: str) -> list[dict[str, Any]]:
    """The segments (with their use, :func:`get`'s keys) that strategy ``strategy_id`` uses, by
    id; none when there is no such strategy."""
    return conn.all(
        _WITH_USE + " WHERE s.id IN (SELECT segment_id FROM feature_strategy_segments WHERE strategy_id = ?)"
        " ORDER BY s.id",
        [strategy_id],
    )
