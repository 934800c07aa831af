"""Feature flags as the API changes them: one flag, its environments, tags and
favorites, and the live flags of a project.

A flag is identified by its name across live and archived flags (``features.name`` is the
primary key). Every write here touches tables that move ``content_version``, so 4.2 and 4.4
answer from the new state on the very next request.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import orjson

from .engine import Connection

#: What makes a text ORDER BY bytewise, per dialect: SQLite compares text as bytes (BINARY);
#: PostgreSQL by the database's collation, which may be a language's ("B" after "a"), unless
#: told "C". Answers list flags, environments and tags in the same order on both engines.
BYTEWISE = {"sqlite": "", "postgresql": ' COLLATE "C"'}

#: A flag's creator's name as a flag shows it (spec 2.4's fallbacks), from the user row ``u``.
_CREATOR_NAME = "coalesce(nullif(u.name, ''), nullif(u.username, ''), u.email)"

#: The columns of one flag, with its creator's display fields, read from ``{flags}`` (the
#: table, or the new row of :data:`_INSERT_POSTGRESQL`).
_FLAG_COLUMNS = (
    "f.name, f.project_id, f.type, f.description, f.stale, f.impression_data, f.created_at,"
    f" f.created_by_user_id, f.archived_at, f.last_seen_at, {_CREATOR_NAME} AS creator_name,"
    " u.image_url AS creator_image_url"
)
_FLAG_FROM = f"SELECT {_FLAG_COLUMNS} FROM {{flags}} f LEFT JOIN users u ON u.id = f.created_by_user_id"
_FLAG = _FLAG_FROM.format(flags="features")

#: The type and order of an environment the install's table does not have (one a seed named
#: before that table existed): development, order 0.
_UNLISTED_TYPE, _UNLISTED_ORDER = "'development'", "0"

#: A flag's environments: those it has rows for, typed and ordered by the install's table.
_ENVIRONMENTS = (
    f"SELECT fe.feature_name, fe.name, coalesce(e.type, {_UNLISTED_TYPE}) AS type,"
    f" coalesce(e.sort_order, {_UNLISTED_ORDER}) AS sort_order, fe.enabled, fe.last_seen_at"
    " FROM feature_environments fe LEFT JOIN environments e ON e.name = fe.name"
)


def get(conn: Connection, name: str) -> dict[str, Any] | None:
    """The flag ``name`` (live or archived), or None.

    Keys: ``name, project_id, type, description, stale (0/1), impression_data (0/1),
    created_at, created_by_user_id, archived_at, last_seen_at, creator_name,
    creator_image_url``.
    """
    return conn.one(_FLAG + " WHERE f.name = ?", [name])


def live_count(conn: Connection, at_most: int) -> int:
    """How many live flags the install holds, in every project, counted up to ``at_most``
    (the ``featureFlags`` resource limit counts these: archived flags are not counted, spec
    8.4). Counting stops at the limit, so a create's check reads at most ``at_most`` rows
    however many flags there are."""
    return (
        conn.value(
            "SELECT count(*) FROM (SELECT 1 FROM features WHERE archived_at IS NULL LIMIT ?) AS live",
            [at_most],
        )
        or 0
    )


#: The flag named ``:name`` beside project ``:project_id``: one row when the project exists
#: (the flag's columns NULL when no flag has that name, wherever it is), none otherwise.
_FLAG_BESIDE_PROJECT = (
    f"SELECT p.id AS beside_project, {_FLAG_COLUMNS}{{extra}} FROM projects p"
    " LEFT JOIN features f ON f.name = :name LEFT JOIN users u ON u.id = f.created_by_user_id"
    " WHERE p.id = :project_id"
)

#: The flag's tags as events carry them (spec 2.3: ``[{"value", "type"}]``, by type then
#: value, bytewise), as one JSON text, per dialect: a column of the flag's own row.
_EVENT_TAGS = {
    "sqlite": (
        "(SELECT json_group_array(json_object('value', t.value, 'type', t.type))"
        " FROM (SELECT type, value FROM feature_tags WHERE feature_name = f.name ORDER BY type, value) t)"
    ),
    "postgresql": (
        "(SELECT CAST(coalesce(json_agg(json_build_object('value', t.value, 'type', t.type)"
        ' ORDER BY t.type COLLATE "C", t.value COLLATE "C"), \'[]\') AS TEXT)'
        " FROM feature_tags t WHERE t.feature_name = f.name)"
    ),
}

_FLAG_BESIDE_PROJECT_SQL = {
    (dialect, with_tags): _FLAG_BESIDE_PROJECT.format(extra=f", {tags} AS event_tags" if with_tags else "")
    for dialect, tags in _EVENT_TAGS.items()
    for with_tags in (False, True)
}


def get_beside_project(
    conn: Connection, project_id: str, name: str, *, event_tags: bool = False
) -> tuple[bool, dict[str, Any] | None]:
    """Whether project ``project_id`` exists, and the flag ``name`` (live or archived, in any
    project; None when there is none), in one statement: one round trip where a project check
    and a flag lookup took two. The flag's keys are :func:`get`'s; with ``event_tags``, also
    ``event_tags``, its tags as events carry them (``[{"value", "type"}]``, by type then
    value), read by the same statement instead of a second one (:func:`tags`)."""
    row = conn.one(
        _FLAG_BESIDE_PROJECT_SQL[conn.dialect, event_tags], {"project_id": project_id, "name": name}
    )
    if row is None:
        return False, None
    del row["beside_project"]
    if row["name"] is None:
        return True, None
    if event_tags:
        row["event_tags"] = orjson.loads(row["event_tags"])
    return True, row


def environments(conn: Connection, name: str) -> list[dict[str, Any]]:
    """The flag's environments by sort order then name: ``{feature_name, name, type,
    sort_order, enabled (0/1), last_seen_at}``."""
    return conn.all(
        _ENVIRONMENTS + f" WHERE fe.feature_name = ? ORDER BY sort_order, fe.name{BYTEWISE[conn.dialect]}",
        [name],
    )


def tags(conn: Connection, name: str) -> list[dict[str, str]]:
    """The flag's tags, by type then value: ``{"type", "value"}``."""
    bytewise = BYTEWISE[conn.dialect]
    return conn.all(
        "SELECT type, value FROM feature_tags WHERE feature_name = ?"
        f" ORDER BY type{bytewise}, value{bytewise}",
        [name],
    )


def is_favorite(conn: Connection, user_id: int | None, name: str) -> bool:
    """True when ``user_id`` has favorited the flag."""
    if user_id is None:
        return False
    return (
        conn.value("SELECT 1 FROM favorite_features WHERE user_id = ? AND feature_name = ?", [user_id, name])
        is not None
    )


#: The columns of a new flag, as :func:`insert` writes them (``stale`` starts false).
_NEW_FLAG = (
    "INSERT INTO features (name, project_id, type, description, stale, impression_data, created_at,"
    " created_by_user_id) VALUES (:name, :project_id, :type, :description, 0, :impression_data,"
    " :created_at, :created_by_user_id) ON CONFLICT (name) DO NOTHING"
)
#: The new flag's row in every environment of the install, disabled; the flag's name is read
#: from ``new_flag``.
_NEW_FLAG_ENVIRONMENTS = (
    "INSERT INTO feature_environments (feature_name, name, enabled) SELECT new_flag.name, env.name, 0"
    " FROM new_flag CROSS JOIN environments env"
)
#: SQLite: the new flag as :func:`get` reads it, given back by the insert itself (RETURNING; its
#: creator's display fields by subqueries, RETURNING names no other table); no row when the
#: name is taken.
_NEW_FLAG_SQLITE = (
    f"{_NEW_FLAG} RETURNING name, project_id, type, description, stale, impression_data, created_at,"
    " created_by_user_id, archived_at, last_seen_at,"
    f" (SELECT {_CREATOR_NAME} FROM users u WHERE u.id = created_by_user_id) AS creator_name,"
    " (SELECT u.image_url FROM users u WHERE u.id = created_by_user_id) AS creator_image_url"
)
#: SQLite: the flag's environments, after the flag, its name the parameter, given back as
#: :func:`environments` reads them (RETURNING gives rows in no set order: sorted by the caller).
_NEW_FLAG_ENVIRONMENTS_SQLITE = (
    f"WITH new_flag (name) AS (VALUES (:name)) {_NEW_FLAG_ENVIRONMENTS}"
    " RETURNING feature_name, name,"
    " coalesce((SELECT e.type FROM environments e WHERE e.name = feature_environments.name),"
    f"  {_UNLISTED_TYPE}) AS type,"
    " coalesce((SELECT e.sort_order FROM environments e WHERE e.name = feature_environments.name),"
    f"  {_UNLISTED_ORDER}) AS sort_order, enabled, last_seen_at"
)
#: PostgreSQL: the flag, its environments and the flag read back as :func:`get` reads it, in
#: one statement (data-modifying CTEs, the new row read from the first: one round trip
#: instead of three); no row at all when the name is taken.
_INSERT_POSTGRESQL = (
    f"WITH new_flag AS ({_NEW_FLAG} RETURNING *), environments_written AS ({_NEW_FLAG_ENVIRONMENTS})"
    f" {_FLAG_FROM.format(flags='new_flag')}"
)


def insert(
    conn: Connection,
    *,
    name: str,
    project_id: str,
    type: str,
    description: str | None,
    impression_data: bool,
    created_at: str,
    created_by_user_id: int | None,
    tags: list[dict[str, str]],
) -> tuple[dict[str, Any] | None, list[dict[str, Any]] | None]:
    """Add a live flag with every environment of the install (disabled) and its tags; call
    inside a write transaction. Return the new flag as :func:`get` gives it, or None (nothing
    written) when a flag, live or archived, already has that name; and its environments as
    :func:`environments` gives them, when the insert gave them back (SQLite), else None.

    On PostgreSQL the flag, its environments and the reading back are one statement; on
    SQLite two, each giving back what it wrote (RETURNING), so that nothing is read again.
    (Inside the write lock a statement costs little beyond its own work: bench/journal/,
    "Fewer statements inside the write lock".)
    """
    params = {
        "name": name,
        "project_id": project_id,
        "type": type,
        "description": description,
        "impression_data": int(impression_data),
        "created_at": created_at,
        "created_by_user_id": created_by_user_id,
    }
    written = None
    if conn.dialect == "postgresql":
        flag = conn.one(_INSERT_POSTGRESQL, params)
    else:
        flag = conn.one(_NEW_FLAG_SQLITE, params)
        if flag is not None:
            written = sorted(
                conn.all(_NEW_FLAG_ENVIRONMENTS_SQLITE, params),
                key=lambda row: (row["sort_order"], row["name"]),
            )
    if flag is not None and tags:
        conn.run_many(
            "INSERT INTO feature_tags (feature_name, type, value) VALUES (?, ?, ?)"
            " ON CONFLICT (feature_name, type, value) DO NOTHING",
            [(name, tag["type"], tag["value"]) for tag in tags],
        )
    return flag, written


def update_metadata(
    conn: Connection, name: str, *, type: str, description: str | None, stale: bool, impression_data: bool
) -> None:
    """Set the flag's changeable fields; call inside a write transaction."""
    conn.run(
        "UPDATE features SET type = ?, description = ?, stale = ?, impression_data = ? WHERE name = ?",
        [type, description, int(stale), int(impression_data), name],
    )


def set_enabled(conn: Connection, name: str, environment: str, enabled: bool) -> bool:
    """Switch the flag on or off in ``environment`` (adding the flag's row for an environment
    it did not have yet); True when that changed anything. Call inside a write transaction."""
    changed = conn.run(
        "UPDATE feature_environments SET enabled = ? WHERE feature_name = ? AND name = ? AND enabled <> ?",
        [int(enabled), name, environment, int(enabled)],
    )
    if changed:
        return True
    added = conn.run(
        "INSERT INTO feature_environments (feature_name, name, enabled) VALUES (?, ?, ?)"
        " ON CONFLICT (feature_name, name) DO NOTHING",
        [name, environment, int(enabled)],
    )
    return bool(added) and enabled


def archive(conn: Connection, name: str, now: str) -> None:
    """Archive the live flag ``name`` at ``now``; call inside a write transaction."""
    conn.run("UPDATE features SET archived_at = ? WHERE name = ? AND archived_at IS NULL", [now, name])


def revive(conn: Connection, name: str) -> None:
    """Bring the archived flag back: live, switched off everywhere, and present in every
    environment of the install (as the reference server revives). Call inside a write
    transaction."""
    conn.run("UPDATE features SET archived_at = NULL WHERE name = ?", [name])
    conn.run("UPDATE feature_environments SET enabled = 0 WHERE feature_name = ? AND enabled = 1", [name])
    conn.run(
        "INSERT INTO feature_environments (feature_name, name, enabled)"
        " SELECT ?, name, 0 FROM environments WHERE true ON CONFLICT (feature_name, name) DO NOTHING",
        [name],
    )


def delete(conn: Connection, name: str) -> None:
    """Remove the flag and everything that belongs to it (environments, tags, favorites, and
    its rules: strategies with their segment links, variants, dependencies); call inside a
    write transaction. Its name becomes free again."""
    conn.run(
        "DELETE FROM feature_strategy_segments WHERE strategy_id IN"
        " (SELECT id FROM feature_strategies WHERE feature_name = ?)",
        [name],
    )
    # a parent's children lose their dependency on it too (the dependencies' rules keep a flag
    # with children from being archived, so there should be none)
    conn.run("DELETE FROM feature_dependencies WHERE child = ? OR parent = ?", [name, name])
    for table, column in (
        ("feature_strategies", "feature_name"),
        ("feature_variants", "feature_name"),
        ("favorite_features", "feature_name"),
        ("feature_tags", "feature_name"),
        ("feature_environments", "feature_name"),
        ("features", "name"),
    ):
        conn.run(f"DELETE FROM {table} WHERE {column} = ?", [name])


def add_favorite(conn: Connection, user_id: int, name: str) -> bool:
    """Make the flag a favorite of ``user_id``; True unless it already was. Call inside a
    write transaction."""
    added = conn.run(
        "INSERT INTO favorite_features (user_id, feature_name) VALUES (?, ?)"
        " ON CONFLICT (user_id, feature_name) DO NOTHING",
        [user_id, name],
    )
    return bool(added)


def remove_favorite(conn: Connection, user_id: int, name: str) -> bool:
    """Take the flag from ``user_id``'s favorites; True when it was one. Call inside a write
    transaction."""
    removed = conn.run(
        "DELETE FROM favorite_features WHERE user_id = ? AND feature_name = ?", [user_id, name]
    )
    return removed > 0


def project_features(conn: Connection, project_id: str, user_id: int | None) -> list[dict[str, Any]]:
    """The live flags of a project, newest created first (then by name), each with its
    environments, tags and whether ``user_id`` favorited it.

    Items: the keys of :func:`get` plus ``environments`` (rows of :func:`environments`, each
    with ``variant_count``: the number of the flag's variants there), ``tags`` and ``favorite``
    (bool). Five queries, whatever the number of flags.
    """
    bytewise = BYTEWISE[conn.dialect]
    flags = conn.all(
        _FLAG
        + f" WHERE f.project_id = ? AND f.archived_at IS NULL ORDER BY f.created_at DESC, f.name{bytewise}",
        [project_id],
    )
    live = "SELECT name FROM features WHERE project_id = ? AND archived_at IS NULL"
    by_flag: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in conn.all(
        _ENVIRONMENTS + f" WHERE fe.feature_name IN ({live}) ORDER BY sort_order, fe.name{bytewise}",
        [project_id],
    ):
        by_flag[row["feature_name"]].append(row)
    variant_counts = {
        (row["feature_name"], row["environment"]): len(orjson.loads(row["variants"]))
        for row in conn.all(
            "SELECT feature_name, environment, variants FROM feature_variants"
            f" WHERE variants <> '[]' AND feature_name IN ({live})",
            [project_id],
        )
    }
    for rows in by_flag.values():
        for row in rows:
            row["variant_count"] = variant_counts.get((row["feature_name"], row["name"]), 0)
    tags_by_flag: dict[str, list[dict[str, str]]] = defaultdict(list)
    for row in conn.all(
        f"SELECT feature_name, type, value FROM feature_tags WHERE feature_name IN ({live})"
        f" ORDER BY type{bytewise}, value{bytewise}",
        [project_id],
    ):
        tags_by_flag[row["feature_name"]].append({"type": row["type"], "value": row["value"]})
    favorites = set(
        conn.values(
            f"SELECT feature_name FROM favorite_features WHERE user_id = ? AND feature_name IN ({live})",
            [user_id, project_id],
        )
    )
    for flag in flags:
        flag["environments"] = by_flag.get(flag["name"], [])
        flag["tags"] = tags_by_flag.get(flag["name"], [])
        flag["favorite"] = flag["name"] in favorites
    return flags
