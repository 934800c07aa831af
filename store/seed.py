"""Writing validated seed documents (see ``seed_documents.py``) into the database.

The same SQL on both engines. Ids the documents give (users, integrations) are stored as given:
neither table has a sequence on PostgreSQL, and both engines give the next new user or
integration the largest id plus one, so a seed's ids never collide with later ones. The
integration log's rows take generated ids (an identity on PostgreSQL, the rowid on SQLite),
after every id given before.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

from ..timestamps import now_rfc3339
from . import environments as store_environments
from . import integration_events
from .engine import Connection


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
    """
    counts = dict.fromkeys(
        ("users", "projects", "features", "favorites", "integrations", "integrationEvents", "environments"), 0
    )
    for doc in documents:
        conn.run_many(
            "INSERT INTO users (id, username, name, email, image_url, root_role) VALUES (?, ?, ?, ?, ?, ?)",
            [
                (u["id"], u["username"], u.get("name"), u.get("email"), u.get("imageUrl"), u["rootRole"])
                for u in doc["users"]
            ],
        )
        conn.run_many(
            "INSERT INTO projects (id, name, description) VALUES (?, ?, ?)",
            [(p["id"], p["name"], p.get("description")) for p in doc["projects"]],
        )
        conn.run_many(
            "INSERT INTO project_members (project_id, user_id, role) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
            [(p["id"], m["userId"], m["role"]) for p in doc["projects"] for m in p["members"]],
        )
        # Issue 10: the install's environments, declared or named by a flag.
        conn.run_many(
            # a conflict is only with an environment a flag of an earlier document of this load
            # named: the declaration gives it its type and order
            "INSERT INTO environments (name, type, sort_order, created_at) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (name) DO UPDATE SET type = excluded.type, sort_order = excluded.sort_order",
            [(e["name"], e["type"], e["sortOrder"], now_rfc3339()) for e in doc["environments"]],
        )
        store_environments.insert_missing(
            conn, sorted({e["name"] for f in doc["features"] for e in f["environments"]}), now_rfc3339()
        )
        conn.run_many(
            "INSERT INTO features (name, project_id, type, description, stale, impression_data,"
            " created_at, created_by_user_id, archived_at, last_seen_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    f["name"],
                    f["project"],
                    f["type"],
                    f["description"] or None,
                    int(f["stale"]),
                    int(f["impressionData"]),
                    f["createdAt"],
                    f["createdByUserId"],
                    f["archivedAt"],
                    f["lastSeenAt"],
                )
                for f in doc["features"]
            ],
        )
        conn.run_many(
            "INSERT INTO feature_environments (feature_name, name, enabled, last_seen_at) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (feature_name, name) DO UPDATE SET enabled = excluded.enabled,"
            " last_seen_at = excluded.last_seen_at",
            [
                (f["name"], e["name"], int(e["enabled"]), e["lastSeenAt"])
                for f in doc["features"]
                for e in f["environments"]
            ],
        )
        conn.run_many(
            "INSERT INTO favorite_features (user_id, feature_name) VALUES (?, ?)",
            [(f["userId"], f["feature"]) for f in doc["favorites"]],
        )
        conn.run_many(
            "INSERT INTO integrations (id, provider, description, enabled, events, projects,"
            " environments, parameters) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    n["id"],
                    n["provider"],
                    n["description"],
                    int(n["enabled"]),
                    _json(n["events"]),
                    _json(n["projects"]),
                    _json(n["environments"]),
                    _json(n["parameters"]),
                )
                for n in doc["integrations"]
            ],
        )
        insert_integration_events(conn, doc["integrationEvents"])
        for key in counts:
            counts[key] += len(doc[key])
    return counts


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
    """Return True when no user, project, flag or integration is stored yet."""
    stored = conn.value(
        "SELECT (SELECT count(*) FROM users) + (SELECT count(*) FROM projects)"
        " + (SELECT count(*) FROM features) + (SELECT count(*) FROM integrations)"
    )
    return stored == 0
