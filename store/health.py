"""The database check behind ``GET /health``."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from .engine import StoreError, Unavailable, classify

#: Seconds a PostgreSQL health check waits for a connection.
CONNECT_TIMEOUT_S = 2


def check(target: str | Path) -> None:
    """Open the database on a fresh connection and run a cheap query.

    A fresh connection, not a pooled or a thread's long-lived one, so that a database that
    went away since start-up is seen as such: a SQLite file deleted, moved or corrupted
    (opened read-only, ``mode=ro``, which never creates a missing file), a PostgreSQL server
    stopped or unreachable.

    :raise flagadmin.store.StoreError: the database cannot be reached or read
        (:class:`Unavailable`), or is not a flagadmin database.
    """
    from . import is_postgresql

    if is_postgresql(target):
        _check_postgresql(str(target))
        return
    try:
        conn = sqlite3.connect(f"{Path(target).resolve().as_uri()}?mode=ro", uri=True, timeout=2)
        try:
            conn.execute("SELECT count(*) FROM settings").fetchone()
        finally:
            conn.close()
    except sqlite3.Error as exc:
        classified = classify(exc)
        raise (classified if isinstance(classified, StoreError) else Unavailable(str(exc))) from exc


def _check_postgresql(url: str) -> None:
    import psycopg

    try:
        with psycopg.connect(url, connect_timeout=CONNECT_TIMEOUT_S, autocommit=True) as conn:
            conn.execute("SELECT count(*) FROM settings").fetchone()
    except psycopg.Error as exc:
        raise Unavailable(str(exc)) from exc
