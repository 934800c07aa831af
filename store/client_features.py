"""What ``GET /api/client/features`` is made of: the live flags of one environment and their
rules (the reference server's Client API; spec 2.6 for the flag's own fields).

One statement reads everything an answer needs, so that the answer is one snapshot on both
engines (each PostgreSQL statement outside a write is its own transaction): the rules revision
it was read at, the flags, their enabled strategies, the segments those strategies use and the
segments themselves. Its branches are joined by ``UNION ALL`` into rows of one shape,
``kind`` saying which branch a row comes from. The JSON columns are returned as stored
(compact JSON text in the reference's wire shapes, ``schema.sql``'s "Rollout rules"); nothing
here parses them. Ordering is left to the caller (names by code point, which Python's sort is
on both engines whatever the database's collation).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .engine import Connection

#: The branches of the statement, by ``kind``.
REVISION, FEATURE, STRATEGY, LINK, SEGMENT = range(5)

# Every branch yields the same columns: kind; k, s (text keys); n (an integer key); a to g
# (text); x, y, z, w, v (integers), typed by the first branch (PostgreSQL types a UNION's columns
# from its branches, and a column of NULLs alone would be text).
_STATEMENT = """
WITH chosen AS (
    SELECT f.name, f.type, f.description, f.project_id, f.stale, f.impression_data
    FROM features f WHERE f.archived_at IS NULL{filters}
), rules AS (
    SELECT s.id, s.feature_name, s.strategy_name, s.sort_order, s.parameters, s.constraints, s.variants
    FROM feature_strategies s JOIN chosen c ON c.name = s.feature_name
    WHERE s.environment = :environment AND s.disabled = 0
), links AS (
    SELECT l.strategy_id, l.segment_id FROM feature_strategy_segments l JOIN rules r ON r.id = l.strategy_id
)
SELECT 0 AS kind, CAST(NULL AS TEXT) AS k, CAST(NULL AS TEXT) AS s, CAST(NULL AS BIGINT) AS n,
    (SELECT value FROM settings WHERE key = 'rules_version') AS a, CAST(NULL AS TEXT) AS b,
    CAST(NULL AS TEXT) AS c, CAST(NULL AS TEXT) AS d, CAST(NULL AS TEXT) AS e, CAST(NULL AS TEXT) AS g,
    CAST(NULL AS INTEGER) AS x, CAST(NULL AS INTEGER) AS y, CAST(NULL AS INTEGER) AS z,
    CAST(NULL AS INTEGER) AS w, CAST(NULL AS INTEGER) AS v
UNION ALL
SELECT 1, c.name, NULL, NULL, c.type, c.description, c.project_id, fv.variants, d.parent, d.variants,
    c.stale, c.impression_data, fe.enabled, d.enabled,
    (SELECT count(*) FROM feature_strategies o
     WHERE o.feature_name = c.name AND o.environment = :environment AND o.disabled = 1)
FROM chosen c
LEFT JOIN feature_environments fe ON fe.feature_name = c.name AND fe.name = :environment
LEFT JOIN feature_variants fv ON fv.feature_name = c.name AND fv.environment = :environment
LEFT JOIN feature_dependencies d ON d.child = c.name
UNION ALL
SELECT 2, r.feature_name, r.id, r.sort_order, r.strategy_name, r.parameters, r.constraints, r.variants,
    NULL, NULL, NULL, NULL, NULL, NULL, NULL
FROM rules r
UNION ALL
SELECT 3, l.strategy_id, NULL, l.segment_id, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
FROM links l
UNION ALL
SELECT 4, NULL, NULL, g.id, g.name, g.constraints, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
FROM segments g WHERE g.id IN (SELECT segment_id FROM links)
"""


@dataclass
class ClientRows:
    """The rows of one answer, unordered.

    ``revision``: the rules revision they were read at. ``features``: ``{name, type,
    description, project, stale, impression_data, enabled, variants (JSON text or None),
    parent, parent_enabled, parent_variants (JSON text or None), disabled_strategies (how many
    of its strategies in the environment are disabled)}`` (0/1 integers as stored;
    ``enabled`` None when the flag has no row for the environment, ``parent`` None without a
    dependency). ``strategies``: ``{id, feature, name, sort_order, parameters, constraints,
    variants}`` (JSON text), enabled ones of the environment only. ``links``: ``(strategy id,
    segment id)``. ``segments``: ``{id, name, constraints}`` of the segments those strategies
    use.
    """

    revision: int
    features: list[dict[str, Any]] = field(default_factory=list)
    strategies: list[dict[str, Any]] = field(default_factory=list)
    links: list[tuple[str, int]] = field(default_factory=list)
    segments: list[dict[str, Any]] = field(default_factory=list)


def client_rows(
    conn: Connection,
    environment: str,
    projects: Sequence[str] | None,
    *,
    name_prefix: str | None = None,
    tags: Sequence[tuple[str, str]] = (),
) -> ClientRows:
    """Read the live flags of ``environment`` with their rules, in one statement.

    ``projects``: the projects whose flags are read (None: every project; empty: none).
    ``name_prefix``: only flags whose name starts with it (compared exactly, case and all, on
    both engines). ``tags``: only flags carrying at least one of these ``(type, value)`` tags
    (none given: no tag filter). Archived flags are left out, and so are disabled strategies
    and strategies of other environments.
    """
    filters: list[str] = []
    params: dict[str, Any] = {"environment": environment}
    if projects is not None:
        if not projects:
            filters.append("1 = 0")
        else:
            names = []
            for i, project in enumerate(projects):
                params[f"p{i}"] = project
                names.append(f":p{i}")
            filters.append(f"f.project_id IN ({', '.join(names)})")
    if name_prefix:
        params["prefix"] = name_prefix
        filters.append("substr(f.name, 1, length(CAST(:prefix AS TEXT))) = CAST(:prefix AS TEXT)")
    if tags:
        pairs = []
        for i, (type_, value) in enumerate(tags):
            params[f"tt{i}"], params[f"tv{i}"] = type_, value
            pairs.append(f"(t.type = :tt{i} AND t.value = :tv{i})")
        filters.append(f"f.name IN (SELECT t.feature_name FROM feature_tags t WHERE {' OR '.join(pairs)})")
    sql = _STATEMENT.format(filters="".join(f" AND {condition}" for condition in filters))
    rows = ClientRows(revision=0)
    for row in conn.all(sql, params):
        kind = row["kind"]
        if kind == STRATEGY:
            rows.strategies.append(
                {
                    "id": row["s"],
                    "feature": row["k"],
                    "name": row["a"],
                    "sort_order": row["n"],
                    "parameters": row["b"],
                    "constraints": row["c"],
                    "variants": row["d"],
                }
            )
        elif kind == FEATURE:
            rows.features.append(
                {
                    "name": row["k"],
                    "type": row["a"],
                    "description": row["b"],
                    "project": row["c"],
                    "stale": row["x"],
                    "impression_data": row["y"],
                    "enabled": row["z"],
                    "variants": row["d"],
                    "parent": row["e"],
                    "parent_enabled": row["w"],
                    "parent_variants": row["g"],
                    "disabled_strategies": row["v"],
                }
            )
        elif kind == LINK:
            rows.links.append((row["k"], int(row["n"])))
        elif kind == SEGMENT:
            rows.segments.append({"id": int(row["n"]), "name": row["a"], "constraints": row["b"]})
        else:
            rows.revision = int(row["a"] or 0)
    return rows
