"""Writing validated seed documents (see ``seed/documents.py``) into the database.

Bulk loads go through :func:`bulk`: sqlite-utils' ``insert_all``/``upsert_all`` on SQLite, the
equivalent ``INSERT ... ON CONFLICT`` on PostgreSQL; the rest is the same SQL on both engines.
Ids the documents give (users, integrations) are stored as given: neither table has a sequence
on PostgreSQL, and both engines give the next new user or integration the largest id plus one,
so a seed's ids never collide with later ones. The integration log's rows take generated ids
(an identity on PostgreSQL, the rowid on SQLite), after every id given before.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Any

import orjson

from ..timestamps import now_rfc3339
from . import environments as store_environments
from . import integration_events
from .engine import Connection
from .errors import classify


def existing_keys(conn: Connection) -> dict[str, set]:
    """Return the keys already stored, per kind: users, usernames, projects, features,
    integrations, favorites."""

    def column(sql: str) -> set:
        return set(conn.values(sql))

    return {
        "users": column("SELECT id FROM users"),
        "usernames": column("SELECT username FROM users"),
        "projects": column("SELECT id FROM projects"),
        "environments": column("SELECT name FROM environments"),
        "features": column("SELECT name FROM features"),
        "integrations": column("SELECT id FROM integrations"),
        "favorites": {
            (r["user_id"], r["feature_name"])
            for r in conn.all("SELECT user_id, feature_name FROM favorite_features")
        },
    }


def lock_also(conn: Connection, locks: Iterable[str]) -> None:
    """Serialise the open write transaction with the writers of each of ``locks`` too (see
    :meth:`flagadmin.store.engine.Connection.write`): on PostgreSQL, take their advisory
    transaction locks, in one order (by name) so that two such transactions cannot wait for
    each other; on SQLite nothing more is needed (one writer at a time).
    """
    if conn.dialect != "postgresql":
        return
    from .postgresql import advisory_key

    for lock in sorted(set(locks)):
        conn.value("SELECT pg_advisory_xact_lock(?)", [advisory_key(lock)])


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


def insert_documents(conn: Connection, documents: list[dict[str, list[dict]]]) -> dict[str, int]:
    """Insert validated documents, in order; call inside a transaction.

    Integration events get ids in load order, and each integration's ``seq`` continues from
    its highest stored one. Returns the number of records written per document key.

    :raise flagadmin.store.Conflict: a record already exists.
    """
    counts = dict.fromkeys(
        ("users", "projects", "features", "favorites", "integrations", "integrationEvents", "environments"), 0
    )
    for doc in documents:
        bulk(
            conn,
            "users",
            [
                {
                    "id": u["id"],
                    "username": u["username"],
                    "name": u.get("name"),
                    "email": u.get("email"),
                    "image_url": u.get("imageUrl"),
                    "root_role": u["rootRole"],
                }
                for u in doc["users"]
            ],
        )
        bulk(
            conn,
            "projects",
            [
                {"id": p["id"], "name": p["name"], "description": p.get("description")}
                for p in doc["projects"]
            ],
            # a stored project is declared again identically (checked before: see
            # stored_declarations), such as a new install's default
            ignore=True,
        )
        bulk(
            conn,
            "project_members",
            [
                {"project_id": p["id"], "user_id": m["userId"], "role": m["role"]}
                for p in doc["projects"]
                for m in p["members"]
            ],
            ignore=True,
        )
        # The install's environments, declared or named by a flag.
        conn.run_many(
            # a conflict is only with an environment a flag of an earlier document of this load
            # named: the declaration gives it its type and order (its created_at stays)
            "INSERT INTO environments (name, type, sort_order, created_at) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (name) DO UPDATE SET type = excluded.type, sort_order = excluded.sort_order",
            [(e["name"], e["type"], e["sortOrder"], now_rfc3339()) for e in doc["environments"]],
        )
        store_environments.insert_missing(
            conn, sorted({e["name"] for f in doc["features"] for e in f["environments"]}), now_rfc3339()
        )
        bulk(
            conn,
            "features",
            [
                {
                    "name": f["name"],
                    "project_id": f["project"],
                    "type": f["type"],
                    "description": f["description"] or None,
                    "stale": int(f["stale"]),
                    "impression_data": int(f["impressionData"]),
                    "created_at": f["createdAt"],
                    "created_by_user_id": f["createdByUserId"],
                    "archived_at": f["archivedAt"],
                    "last_seen_at": f["lastSeenAt"],
                }
                for f in doc["features"]
            ],
        )
        bulk(
            conn,
            "feature_environments",
            [
                {
                    "feature_name": f["name"],
                    "name": e["name"],
                    "enabled": int(e["enabled"]),
                    "last_seen_at": e["lastSeenAt"],
                }
                for f in doc["features"]
                for e in f["environments"]
            ],
            keys=("feature_name", "name"),
        )
        bulk(
            conn,
            "favorite_features",
            [{"user_id": f["userId"], "feature_name": f["feature"]} for f in doc["favorites"]],
        )
        bulk(
            conn,
            "integrations",
            [
                {
                    "id": n["id"],
                    "provider": n["provider"],
                    "description": n["description"],
                    "enabled": int(n["enabled"]),
                    "events": _json(n["events"]),
                    "projects": _json(n["projects"]),
                    "environments": _json(n["environments"]),
                    "parameters": _json(n["parameters"]),
                }
                for n in doc["integrations"]
            ],
        )
        insert_integration_events(conn, doc["integrationEvents"])
        for key in counts:
            counts[key] += len(doc[key])
    return counts


def bulk(
    conn: Connection,
    table: str,
    rows: list[dict[str, Any]],
    *,
    ignore: bool = False,
    keys: tuple[str, ...] = (),
) -> None:
    """Insert ``rows`` (dicts with the same keys: column names) into ``table``, inside the open
    transaction. ``ignore``: a row that conflicts with a stored one is skipped. ``keys``: a row
    whose ``keys`` are stored replaces that row's other columns (an upsert).

    On SQLite, sqlite-utils' ``insert_all``/``upsert_all`` (:meth:`Connection.table`), in
    batches of multi-row ``INSERT``; on PostgreSQL, one ``INSERT ... ON CONFLICT`` run once per
    row (``executemany``).

    :raise flagadmin.store.Conflict: a row conflicts with a stored one (neither ``ignore`` nor
        ``keys``).
    """
    if not rows:
        return
    if conn.dialect == "sqlite":
        try:
            if keys:
                conn.table(table).upsert_all(rows, pk=keys)
            else:
                conn.table(table).insert_all(rows, ignore=ignore)
        except sqlite3.Error as exc:
            raise classify(exc) from exc
        return
    columns = list(rows[0])
    sql = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
    if ignore:
        sql += " ON CONFLICT DO NOTHING"
    elif keys:
        updated = ", ".join(f"{c} = excluded.{c}" for c in columns if c not in keys)
        sql += f" ON CONFLICT ({', '.join(keys)}) DO UPDATE SET {updated}"
    conn.run_many(sql, [tuple(row.values()) for row in rows])


def insert_integration_events(conn: Connection, events: list[dict[str, Any]]) -> None:
    """Append integration events in the given order (oldest first); call inside a transaction.

    Items: ``{integrationId, createdAt, state, stateDetails, event (dict), details (dict)}``.
    They go through :func:`flagadmin.store.integration_events.append_many`, as every append to
    a log does: ``seq`` goes on from each log's head, and each row stores its 4.1 item.
    """
    integration_events.append_many(
        conn,
        [
            integration_events.Entry(
                integration_id=e["integrationId"],
                created_at=e["createdAt"],
                state=e["state"],
                state_details=e["stateDetails"],
                event=orjson.dumps(e["event"]),
                details=orjson.dumps(e["details"]),
            )
            for e in events
        ],
    )


def is_empty(conn: Connection) -> bool:
    """Return True when no user, flag or integration is stored yet, nor any project but a new
    install's ``default`` (see :data:`flagadmin.store.schema.NEW_INSTALL_PROJECT`)."""
    stored = conn.value(
        "SELECT (SELECT count(*) FROM users) + (SELECT count(*) FROM projects WHERE id <> 'default')"
        " + (SELECT count(*) FROM features) + (SELECT count(*) FROM integrations)"
    )
    return stored == 0


def stored_declarations(conn: Connection) -> dict[str, dict[Any, tuple]]:
    """What a seed declaration of a stored project or environment must repeat to be no conflict:
    ``{"projects": {id: (name, description)}, "environments": {name: (type, sort_order)}}``."""
    return {
        "projects": {
            r["id"]: (r["name"], r["description"])
            for r in conn.all("SELECT id, name, description FROM projects")
        },
        "environments": {
            r["name"]: (r["type"], r["sort_order"])
            for r in conn.all("SELECT name, type, sort_order FROM environments")
        },
    }
