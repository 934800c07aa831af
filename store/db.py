"""Opening the SQLite database, applying ``schema.sql`` and upgrading old schemas.

Durability: the database runs in WAL mode with ``synchronous=FULL``, so a transaction that
has committed is on disk before the commit returns and survives a crash of the process or of
the machine (power loss included, as far as the disk honours fsync).
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import sqlite_utils

#: Version of the schema this code writes and reads, kept in ``PRAGMA user_version``.
SCHEMA_VERSION = 2

#: Upgrades from version N-1 to N, as SQL run before ``schema.sql`` (which then creates
#: whatever is missing). Index 0 upgrades 0 (a new, empty file) to 1 and is empty.
MIGRATIONS: tuple[str, ...] = (
    "",
    # 1 -> 2: features_project_health replaces features_project; schema.sql adds it, the
    # data_version row and its triggers.
    "DROP INDEX IF EXISTS features_project;",
)

#: Milliseconds a connection waits for another writer before it gives up.
BUSY_TIMEOUT_MS = 10_000


class SchemaError(Exception):
    """The database file cannot be used by this version (too new, or not a database)."""


def schema_sql() -> str:
    """Return the text of ``schema.sql`` as shipped with the package."""
    return resources.files("flagadmin").joinpath("schema.sql").read_text(encoding="utf-8")


def connect(path: str | Path) -> sqlite_utils.Database:
    """Open ``path`` with the connection settings every flagadmin connection uses.

    Does not create or upgrade the schema: call :func:`ensure_schema` once per process first.
    The returned object belongs to the calling thread.

    :raise SchemaError: the file is not a SQLite database.
    """
    conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=True)
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA synchronous = FULL")
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise SchemaError(f"{path} is not a flagadmin database: {exc}") from exc
    return sqlite_utils.Database(conn, recursive_triggers=False, execute_plugins=False)


#: Writers of this process queue here, in arrival order, before they ask SQLite for its write
#: lock: SQLite's busy handler would have them sleep and retry with growing pauses instead,
#: which under concurrent writes makes a few of them wait hundreds of milliseconds. Writers
#: of other processes (the command line) are still handled by the busy timeout.
_WRITERS = threading.RLock()


@contextlib.contextmanager
def immediate(db: sqlite_utils.Database) -> Iterator[sqlite_utils.Database]:
    """Run the block in one transaction that takes the write lock first (``BEGIN IMMEDIATE``).

    Use for writes that must win a race: the lock is taken before anything is read, so no other
    writer can interleave. Commits on success, rolls back on any exception.
    """
    with _WRITERS:
        db.conn.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            if db.conn.in_transaction:
                db.conn.execute("ROLLBACK")
            raise
        db.conn.execute("COMMIT")


def ensure_schema(path: str | Path) -> int:
    """Create the database at ``path`` if missing, or upgrade it to :data:`SCHEMA_VERSION`.

    The upgrade runs in one transaction: it all happens or none of it. A database written by a
    newer flagadmin is refused and left untouched. Returns the schema version found before.

    :raise SchemaError: the file is newer than this code, not a SQLite database, or the
        upgrade failed (and was rolled back).
    """
    db = connect(path)
    try:
        found = _user_version(db, path)
        if found > SCHEMA_VERSION:
            raise SchemaError(
                f"{path} has schema version {found}, newer than the {SCHEMA_VERSION} this "
                f"flagadmin understands: upgrade flagadmin, or use another --db. "
                f"The file was not changed."
            )
        db.conn.execute("PRAGMA journal_mode = WAL")
        if found < SCHEMA_VERSION:
            # A new file (version 0) gets schema.sql alone, which is the current schema: the
            # migrations change tables that do not exist yet.
            upgrade = "".join(MIGRATIONS[found:SCHEMA_VERSION]) if found else ""
            try:
                db.conn.executescript(
                    "BEGIN IMMEDIATE;\n"
                    + upgrade
                    + "\n"
                    + schema_sql()
                    + f"\nPRAGMA user_version = {SCHEMA_VERSION};\nCOMMIT;"
                )
            except BaseException as exc:
                if db.conn.in_transaction:
                    db.conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise SchemaError(
                        f"{path}: upgrading the schema from version {found} to {SCHEMA_VERSION} "
                        f"failed ({exc}); the upgrade was rolled back and the file was not changed."
                    ) from exc
                raise
        return found
    finally:
        db.close()


def _user_version(db: sqlite_utils.Database, path: str | Path) -> int:
    try:
        return db.conn.execute("PRAGMA user_version").fetchone()[0]
    except sqlite3.DatabaseError as exc:
        raise SchemaError(f"{path} is not a flagadmin database: {exc}") from exc
