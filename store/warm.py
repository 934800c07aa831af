"""Warming a connection before its first request.

A connection's first statements cost more than its later ones: the engine reads and parses the
schema, and each statement is compiled once and kept in the connection's statement cache (on
SQLite, Python's ``sqlite3`` cache; keyed by the SQL text). :func:`warm` does that work ahead
of traffic. With it and one request through the app first (``flagadmin serve``'s warm start),
the heavy caller's first 4.2 request on the reference data took 14.2 ms in-process instead of
20.5 (docs/architecture.md, "Warm start").
"""

from __future__ import annotations

from . import archived_features, integration_events, personal_dashboard, settings, tokens
from .engine import Connection

#: An id no row has (ids start at 1): every statement below runs, compiled, and matches nothing.
NO_ID = 0


def warm(conn: Connection, now: str) -> None:
    """Run the statements of the hot reads once on ``conn``, with ids that match no row: the
    token check and the versions (every operation), the 4.1 log bounds and page, the 4.2
    dashboard's queries, the 4.4 list and count. ``now`` is RFC 3339 UTC text (the dashboard's health
    is computed at a moment). Reads only: nothing is written, no cache outside ``conn``
    changes, no transaction is left open, and the data pages a real request reads are not
    preloaded.

    :raise flagadmin.store.StoreError: the database cannot be read.
    """
    settings.versions(conn)
    tokens.find_caller(conn, "", now)
    integration_events.head(conn, NO_ID)
    integration_events.page(conn, NO_ID, top=1, limit=1, offset=0)
    lifetimes = personal_dashboard.lifetimes(conn)
    personal_dashboard.projects(conn, NO_ID, now, lifetimes)
    personal_dashboard.flags(conn, NO_ID)
    personal_dashboard.project_owners(conn, NO_ID, sees_all=False)
    personal_dashboard.admins(conn)
    archived_features.count(conn, NO_ID, sees_all=False)
    for _ in archived_features.archived_features_json(conn, NO_ID, sees_all=False):
        pass
