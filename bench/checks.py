"""Measurements beside the load runs: the 4.4 baseline and the 4.2 query count."""

from __future__ import annotations

import os
import statistics
import time
from dataclasses import replace
from pathlib import Path

import orjson

from flagadmin.app import create_app
from flagadmin.config import settings_from_env
from flagadmin.store import archived_features, personal_dashboard
from flagadmin.store import db as store_db


def _timed(fn, repeats: int) -> tuple[float, object]:
    """Return (median seconds, last result) of ``repeats`` calls of ``fn``."""
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def archive_baseline(db_path: Path, repeats: int = 3) -> dict:
    """Time SQLite alone, then SQLite plus orjson, on the SELECT of store/archived_features.py.

    Runs pinned to the server's core, with the server stopped. ``sqlite_s``: the exact
    statement the store runs (captured with a trace callback), fetched in full. ``encoded_s``:
    the store function plus ``orjson.dumps`` of the same document the endpoint serves
    (environments passed through as JSON text). Returns seconds, row count and body size.
    """
    cpus = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {0})
    db = store_db.connect(db_path)
    try:
        statements: list[str] = []
        db.conn.set_trace_callback(statements.append)
        next(archived_features.archived_features(db, None, True), None)
        db.conn.set_trace_callback(None)
        sql = statements[-1]
        sqlite_s, rows = _timed(lambda: db.conn.execute(sql).fetchall(), repeats)

        def encode() -> bytes:
            features = [
                {**f, "environments": orjson.Fragment(f["environments"])}
                for f in archived_features.archived_features(db, None, True)
            ]
            return orjson.dumps({"version": 2, "features": features})

        encoded_s, body = _timed(encode, repeats)
    finally:
        db.close()
        os.sched_setaffinity(0, cpus)
    return {"rows": len(rows), "sqlite_s": sqlite_s, "encoded_s": encoded_s, "body_bytes": len(body)}


def dashboard_statements(db_path: Path, heavy_user_id: int, heavy_token: str) -> dict:
    """Count the SQL statements of the personal dashboard (4.2) for ``heavy``.

    ``store``: statements run by the four store functions the view calls. ``request``: every
    statement of one whole GET through the Flask app (authentication included), not counting
    the PRAGMAs that open each connection; it is the second of two GETs, so that the token's
    ``last_used_at`` write (at most once a minute) is not in it. Neither may depend on the
    size of the data.
    """
    db = store_db.connect(db_path)
    statements: list[str] = []
    try:
        db.conn.set_trace_callback(statements.append)
        personal_dashboard.admins(db)
        personal_dashboard.project_owners(db, heavy_user_id, False)
        personal_dashboard.projects(db, heavy_user_id)
        personal_dashboard.flags(db, heavy_user_id)
    finally:
        db.close()
    store_count = len(statements)

    settings = replace(settings_from_env({}), git_revision="bench")
    app = create_app({"DATABASE": str(db_path), "SETTINGS": settings})
    traced: list[str] = []
    connect = store_db.connect

    def traced_connect(path):
        opened = connect(path)
        opened.conn.set_trace_callback(traced.append)
        return opened

    client = app.test_client()
    headers = {"Authorization": heavy_token}
    client.get("/api/admin/personal-dashboard", headers=headers)
    store_db.connect = traced_connect
    try:
        response = client.get("/api/admin/personal-dashboard", headers=headers)
    finally:
        store_db.connect = connect
    if response.status_code != 200:
        raise RuntimeError(f"personal-dashboard answered {response.status_code}: {response.data[:200]}")
    return {"store": store_count, "request": len(traced), "statements": traced}
