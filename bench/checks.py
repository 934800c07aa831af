"""Measurements beside the load runs: the 4.4 baseline and the 4.2 statement count."""

from __future__ import annotations

import os
import statistics
import time
from dataclasses import replace
from pathlib import Path

import orjson

from flagadmin.app import create_app
from flagadmin.config import settings_from_env
from flagadmin.store import connect
from flagadmin.web.database import connection

DASHBOARD = "/api/admin/personal-dashboard"
ARCHIVE = "/api/admin/archive/features"


def _timed(fn, repeats: int) -> tuple[float, object]:
    """Return (median seconds, last result) of ``repeats`` calls of ``fn``."""
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def traced_request(db_path: Path, token: str, path: str) -> tuple[int, bytes, list[str]]:
    """Make one GET through a freshly created Flask app (nothing cached, its connection opened
    for this request) and return (status, body, SQL statements it ran).

    Statements are traced from the connection's creation on, so the PRAGMAs that configure it
    are not counted. A request through another app first records the token's use, so that the
    traced one does not include the ``last_used_at`` write (made at most once a minute).
    """
    config = {"DATABASE": str(db_path), "SETTINGS": replace(settings_from_env({}), git_revision="bench")}
    headers = {"Authorization": token}
    create_app(config).test_client().get(path, headers=headers).get_data()
    app = create_app(config)
    traced: list[str] = []
    with app.app_context():
        conn = connection()  # this thread's connection, opened (and configured) now
    conn.trace(traced.append)
    try:
        response = app.test_client().get(path, headers=headers)
        body = response.get_data()
    finally:
        conn.trace(None)
    return response.status_code, body, traced


def dashboard_statements(db_path: Path, heavy_token: str) -> dict:
    """Count the SQL statements of one whole personal dashboard (4.2) request for ``heavy``
    (see :func:`traced_request`). The count must not depend on the size of the data."""
    status, body, statements = traced_request(db_path, heavy_token, DASHBOARD)
    if status != 200:
        raise RuntimeError(f"personal-dashboard answered {status}: {body[:200]}")
    return {"count": len(statements), "statements": statements}


def archive_baseline(db_path: Path, admin_token: str, repeats: int = 3) -> dict:
    """Time SQLite alone, then SQLite plus orjson, on the SELECT that 4.4 runs.

    The SELECT is taken from one traced 4.4 request (the longest statement reading
    ``features``), so it is exactly the store's, whatever its Python interface. Then, pinned to
    the server's core with the server stopped: ``sqlite_s``, the statement fetched in full;
    ``encoded_s``, fetched and encoded with ``orjson.dumps`` as ``{"version": 2, "features":
    [...]}`` (a row that is one JSON text goes in as ``orjson.Fragment``, other rows as arrays).
    Returns seconds, row count and body size.
    """
    status, body, statements = traced_request(db_path, admin_token, ARCHIVE)
    if status != 200:
        raise RuntimeError(f"archive/features answered {status}: {body[:200]}")
    sql = max((s for s in statements if "features" in s), key=len)
    cpus = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {0})
    db = connect(db_path)
    try:
        sqlite_s, rows = _timed(lambda: list(db.values(sql)), repeats)

        def encode() -> bytes:
            return orjson.dumps({"version": 2, "features": [orjson.Fragment(r) for r in db.values(sql)]})

        encoded_s, encoded = _timed(encode, repeats)
    finally:
        db.close()
        os.sched_setaffinity(0, cpus)
    return {"rows": len(rows), "sqlite_s": sqlite_s, "encoded_s": encoded_s, "body_bytes": len(encoded)}
