"""The database check behind ``GET /health``."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from .engine import StoreError, Unavailable, classify


def check(path: str | Path) -> None:
    """Open the database file read-only on a fresh connection and run a cheap query.

    A fresh connection, not a thread's long-lived one, so that a file that was deleted, moved
    or corrupted since start-up is seen as such; ``mode=ro`` never creates a missing file.

    :raise flagadmin.store.StoreError: the file cannot be opened or read (:class:`Unavailable`),
        or is not a flagadmin database.
    """
    try:
        conn = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True, timeout=2)
        try:
            conn.execute("SELECT count(*) FROM settings").fetchone()
        finally:
            conn.close()
    except sqlite3.Error as exc:
        classified = classify(exc)
        raise (classified if isinstance(classified, StoreError) else Unavailable(str(exc))) from exc
