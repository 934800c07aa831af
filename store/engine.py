"""The engine layer: one connection object per database connection, which knows its dialect.

Every store function takes a :class:`Connection` and runs its SQL through it, and only
through it: :meth:`Connection.all`, :meth:`~Connection.one`, :meth:`~Connection.value`,
:meth:`~Connection.values`, :meth:`~Connection.column`, :meth:`~Connection.run` and
:meth:`~Connection.run_many`. Rows come back as dicts keyed by column name. Transactions that
write are opened with :meth:`Connection.write`. Errors of the engine are classified, by the
engine's own error names, into the store's exceptions (:mod:`flagadmin.store.errors`), and
commits are made durable by the group commit of :mod:`flagadmin.store.group_commit`.

SQL is written with ``?`` placeholders or ``:name`` parameters (SQLite's styles); an engine that
speaks another style converts them.

It is about 400 lines because the one writing connection and its durable commit belong with the
connection they swap into; errors and group commit live in ``errors.py`` and ``group_commit.py``.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from time import perf_counter
from typing import Any, ClassVar

import sqlite_utils

from .errors import Conflict, NotADatabase, StoreError, Unavailable, classify
from .group_commit import WalSync

__all__ = [
    "BUSY_TIMEOUT_MS",
    "STATEMENT_TIME",
    "Conflict",
    "Connection",
    "NotADatabase",
    "Params",
    "StoreError",
    "Unavailable",
    "WalSync",
    "classify",
    "connect",
]

#: Milliseconds a SQLite connection waits for another writer before it gives up.
BUSY_TIMEOUT_MS = 10_000

Params = Sequence[Any] | Mapping[str, Any]


#: Writers of this process queue here, in arrival order, before they ask SQLite for its write
#: lock: SQLite's busy handler would have them sleep and retry with growing pauses instead,
#: which under concurrent writes makes a few of them wait hundreds of milliseconds. Writers
#: of other processes (the command line) are still handled by the busy timeout.
_WRITERS = threading.RLock()

#: What :meth:`Connection._autocommit` gives a statement that owes no sync (inside a transaction).
_NO_SYNC = contextlib.nullcontext()


class StatementTime(threading.local):
    """``seconds``: the time (s) the current thread has spent in SQL since it started, on
    either engine: running statements (``BEGIN`` and ``COMMIT`` included), fetching their rows
    and, on SQLite, waiting for a write's commit to be on disk. It only grows: a reader takes
    the difference of two readings in the same thread (the database time of one request,
    ``web/telemetry.py``). The rows of :meth:`Connection.values` and ``stream`` read while an
    answer is being sent are not counted (their statement's first step is). About 0.3 µs a
    statement."""

    seconds = 0.0


#: The current thread's time in SQL (:class:`StatementTime`).
STATEMENT_TIME = StatementTime()


def timed(work: Callable[[], Any]) -> Any:
    """Return ``work()``, its time added to :data:`STATEMENT_TIME` (a fetch, a bulk statement)."""
    started = perf_counter()
    try:
        return work()
    finally:
        STATEMENT_TIME.seconds += perf_counter() - started


def _open(
    path: str, timeout_ms: int, *, group_commit: bool, any_thread: bool
) -> tuple[sqlite3.Connection, bool]:
    """A sqlite3 connection to ``path`` with flagadmin's settings (see :class:`Connection`), and
    whether its commits are synced by :class:`WalSync` (WAL mode and ``group_commit``).

    :raise NotADatabase: the file is not a SQLite database.
    :raise Unavailable: the file cannot be opened.
    """
    try:
        _create_owner_only(path)
        conn = sqlite3.connect(
            path, timeout=timeout_ms / 1000, isolation_level=None, check_same_thread=not any_thread
        )
    except sqlite3.Error as exc:
        raise classify(exc) from exc
    conn.row_factory = sqlite3.Row
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(timeout_ms)}")
        conn.execute("PRAGMA foreign_keys = ON")
        wal = group_commit and conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        conn.execute(f"PRAGMA synchronous = {'NORMAL' if wal else 'FULL'}")
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise NotADatabase(f"{path} is not a flagadmin database: {exc}") from exc
    return conn, wal


def _create_owner_only(path: str) -> None:
    """Create the database file ``path``, empty, readable and writable by its owner only (0600),
    if it does not exist: it holds webhook credentials. SQLite gives the ``-wal``, ``-shm`` and
    ``-journal`` files it makes beside a database the database's own mode, so they are
    owner-only too. An existing file keeps the mode its owner gave it (docs/operations.md).
    """
    if path in ("", ":memory:") or path.startswith("file:"):
        return
    # an existing file keeps its mode; a missing or unwritable folder is reported by
    # sqlite3.connect, as before
    with contextlib.suppress(OSError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))


class _Writer:
    """The one connection through which every :meth:`Connection.write` of this process writes
    to one WAL database, under :data:`_WRITERS`.

    SQLite empties a connection's whole page cache when it starts a read after *another*
    connection has committed. With each thread writing through its own connection, every
    write found its connection's cache emptied by the writes of the other threads and read
    each page it touched again from the file: about 75 ``pread`` calls for one flag archive
    at the reference size. Writing through one connection keeps its cache across writes (its
    own commits never empty it), so a write reads from the file only what another process or
    a statement outside :meth:`Connection.write` changed.

    Opened on the first write, shared by the connections of every thread to the same file
    with the same busy timeout (:meth:`of`), closed once none of them is left.
    """

    _all: ClassVar[weakref.WeakValueDictionary[tuple[str, int], _Writer]] = weakref.WeakValueDictionary()
    _all_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, path: str, timeout_ms: int):
        self.path = path
        self.timeout_ms = timeout_ms
        self._conn: sqlite3.Connection | None = None

    @classmethod
    def of(cls, path: str, timeout_ms: int) -> _Writer:
        """The writer of ``path`` for connections with ``timeout_ms``, made once."""
        key = (os.path.abspath(path), timeout_ms)
        with cls._all_lock:
            writer = cls._all.get(key)
            if writer is None:
                # the absolute path: the connection opens on the first write, maybe after a chdir
                writer = cls._all[key] = cls(*key)
            return writer

    def connection(self) -> sqlite3.Connection:
        """The sqlite3 connection, opened on first use (call it holding :data:`_WRITERS`).

        :raise NotADatabase: the file is not a SQLite database.
        :raise Unavailable: the file cannot be opened.
        """
        if self._conn is None:
            self._conn, _ = _open(self.path, self.timeout_ms, group_commit=True, any_thread=True)
        return self._conn

    def __del__(self) -> None:
        if self._conn is not None:
            self._conn.close()


class Connection:
    """One connection to a SQLite database (``dialect == "sqlite"``), for one thread.

    Opened with the settings every flagadmin connection uses: WAL journal (set once by the
    schema), foreign keys on, a busy timeout of :data:`BUSY_TIMEOUT_MS`, and durable commits:
    a write returns once it is on disk. On a WAL database that is ``synchronous=NORMAL`` plus
    the group commit of :class:`WalSync` (one fsync for the commits of several threads); on a
    file not (yet) in WAL mode, or with ``group_commit=False`` (``python -m bench group-commit``
    compares the two), ``synchronous=FULL``. It is used by one thread at a time: the thread that opened
    it, or (``handover=True``, a connection opened and warmed at start-up, see
    :func:`flagadmin.store.warm.warm`) the one thread it is handed to.
    """

    dialect = "sqlite"

    def __init__(
        self,
        path: str | Path,
        *,
        busy_timeout_ms: int | None = None,
        group_commit: bool = True,
        handover: bool = False,
    ):
        timeout_ms = BUSY_TIMEOUT_MS if busy_timeout_ms is None else busy_timeout_ms
        self.path = str(path)
        conn, wal = _open(self.path, timeout_ms, group_commit=group_commit, any_thread=handover)
        self._after_commit: list[Callable[[], None]] = []
        self._conn = conn
        self._trace: Callable[[str], object] | None = None
        #: The group commit of this database's WAL (None: not in WAL mode, FULL syncs itself).
        self._wal_sync = WalSync.of(self.path) if wal else None
        #: The process's one writing connection to this database (None: not in WAL mode,
        #: :meth:`write` writes through this connection), taken by :meth:`write`.
        self._writer = _Writer.of(self.path, timeout_ms) if wal else None
        self._closed = False

    # --- running SQL ----------------------------------------------------------------------

    def _execute(self, sql: str, params: Params = ()) -> sqlite3.Cursor:
        started = perf_counter()
        try:
            return self._conn.execute(sql, params)
        except sqlite3.Error as exc:
            raise classify(exc) from exc
        finally:
            STATEMENT_TIME.seconds += perf_counter() - started

    def all(self, sql: str, params: Params = ()) -> list[dict[str, Any]]:
        """Run a query; return every row as a dict keyed by column name."""
        return [dict(row) for row in timed(self._execute(sql, params).fetchall)]

    def one(self, sql: str, params: Params = ()) -> dict[str, Any] | None:
        """Run a query; return its first row as a dict, or None."""
        row = self._execute(sql, params).fetchone()
        return None if row is None else dict(row)

    def value(self, sql: str, params: Params = ()) -> Any:
        """Run a query of one column; return the value of its first row (None: no row)."""
        row = self._execute(sql, params).fetchone()
        return None if row is None else row[0]

    def values(self, sql: str, params: Params = ()) -> Iterator[Any]:
        """Run a query of one column; yield its values one row at a time (memory stays flat)."""
        cursor = self._execute(sql, params)
        cursor.row_factory = None  # plain tuples: no sqlite3.Row made per row (4.1: 50 a page)
        try:
            for (value,) in cursor:
                yield value
        except sqlite3.Error as exc:
            raise classify(exc) from exc

    def column(self, sql: str, params: Params = ()) -> list[Any]:
        """Run a query of one column; return its values as a list, fetched at once (a 4.1 page:
        no generator step per row, as :meth:`values` takes)."""
        cursor = self._execute(sql, params)
        cursor.row_factory = None
        try:
            return [value for (value,) in timed(cursor.fetchall)]
        except sqlite3.Error as exc:
            raise classify(exc) from exc

    def stream(self, sql: str, params: Params = ()) -> Iterator[Any]:
        """:meth:`values` for an answer sent while it is read (4.4's body): SQLite's cursor
        already reads each row only when it is asked for. See the PostgreSQL engine's
        ``stream`` for the one rule callers keep on both engines."""
        return self.values(sql, params)

    def run(self, sql: str, params: Params = ()) -> int:
        """Run a statement that changes data; return the number of rows it changed."""
        with self._autocommit():
            return self._execute(sql, params).rowcount

    def insert(self, sql: str, params: Params = ()) -> int:
        """Run an INSERT; return the new row's id."""
        with self._autocommit():
            return self._execute(sql, params).lastrowid

    def run_many(self, sql: str, rows: Iterable[Params]) -> None:
        """Run one statement once per parameter row (bulk inserts)."""
        with self._autocommit():
            try:
                timed(lambda: self._conn.executemany(sql, rows))
            except sqlite3.Error as exc:
                raise classify(exc) from exc

    def script(self, sql: str) -> None:
        """Run several statements separated by ``;`` (schema and migrations)."""
        with self._autocommit(always=True):
            try:
                timed(lambda: self._conn.executescript(sql))
            except sqlite3.Error as exc:
                raise classify(exc) from exc

    def _autocommit(self, *, always: bool = False) -> contextlib.AbstractContextManager[None]:
        """Around a statement that may write outside :meth:`write`: when it committed by
        itself (no transaction open before or after) and changed rows, return only once that
        commit is on disk, as :meth:`write` does. ``always``: whether or not rows changed
        (scripts: schema changes move no row count). Inside a transaction (every statement of
        a :meth:`write`) it costs a shared no-op context, nothing more."""
        if self._wal_sync is None or self._conn.in_transaction:
            return _NO_SYNC
        return self._synced_autocommit(always)

    @contextlib.contextmanager
    def _synced_autocommit(self, always: bool) -> Iterator[None]:
        changes = self._conn.total_changes
        yield
        if not self._conn.in_transaction and (always or self._conn.total_changes != changes):
            self._wal_sync.durable(self._wal_sync.written())

    # --- transactions ---------------------------------------------------------------------

    @property
    def in_transaction(self) -> bool:
        """True while a transaction is open on this connection."""
        return self._conn.in_transaction

    @contextlib.contextmanager
    def write(self, lock: str = "write") -> Iterator[Connection]:
        """Run the block in one transaction that takes the write lock first.

        On SQLite: ``BEGIN IMMEDIATE``, after this process's writers have queued on one lock,
        so that nothing can interleave between what the block reads and what it writes. On a
        WAL database the block's statements run on the process's one writing connection
        (:class:`_Writer`, whose page cache survives the writes), then this connection is
        itself again.
        ``lock`` names what the transaction serialises on (engines with finer locks use it).
        Commits on success, rolls back on any exception. Nested calls join the outer
        transaction. Returns once the commit is on disk (:class:`WalSync`: the fsync is taken
        after the write lock is released, shared with the commits of other threads), and only
        then runs the :meth:`after_commit` callbacks.

        :raise Unavailable: the database is locked or unwritable, or the commit could not be
            synced to disk.
        """
        if self._conn.in_transaction:
            yield self
            return
        if self._wal_sync is not None:
            self._wal_sync.check()
        with _WRITERS:
            own = self._conn
            if self._writer is not None:
                # the block's statements go to the process's writing connection, for this
                # transaction only
                self._conn = self._writer.connection()
                if self._trace is not None:
                    self._conn.set_trace_callback(self._trace)
            try:
                ticket = yield from self._transaction()
            finally:
                if self._trace is not None:
                    self._conn.set_trace_callback(None)
                self._conn = own
        callbacks, self._after_commit = self._after_commit, []
        if self._wal_sync is not None:
            timed(lambda: self._wal_sync.durable(ticket))
        for callback in callbacks:
            callback()

    def _transaction(self) -> Iterator[Connection]:
        """:meth:`write`'s transaction on ``self._conn``, holding :data:`_WRITERS`: the block
        runs at its ``yield``; returns the commit's :class:`WalSync` ticket (0: none)."""
        self._execute("BEGIN IMMEDIATE")
        try:
            yield self
        except BaseException:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            self._after_commit.clear()
            raise
        try:
            self._execute("COMMIT")
        except BaseException:
            self._after_commit.clear()
            if self._conn.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    self._conn.execute("ROLLBACK")
            raise
        return self._wal_sync.written() if self._wal_sync is not None else 0

    def after_commit(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` once the open write transaction has committed (never if it
        rolls back): for what must happen only after a change is durable, such as waking
        the delivery workers."""
        if not self._conn.in_transaction:
            raise RuntimeError("after_commit needs an open write transaction")
        self._after_commit.append(callback)

    def rollback(self) -> None:
        """Roll back the open transaction, if any (a failed request's leftovers)."""
        if self._conn.in_transaction:
            self._conn.execute("ROLLBACK")

    def table(self, name: str) -> sqlite_utils.db.Table:
        """sqlite-utils' handle on table ``name`` through the connection running this thread's
        statements (inside :meth:`write`, the writing one): for bulk loads (``insert_all``,
        ``upsert_all``). Its statements join the open transaction (sqlite-utils nests its own
        as savepoints) and are traced like any other; its errors are sqlite3's own (see
        :func:`~flagadmin.store.errors.classify`)."""
        return sqlite_utils.Database(self._conn, recursive_triggers=False, execute_plugins=False).table(name)

    def pragma(self, name: str) -> Any:
        """The value of ``PRAGMA name`` (schema version, journal mode...)."""
        return self.value(f"PRAGMA {name}")

    def trace(self, callback: Callable[[str], object] | None) -> None:
        """Call ``callback(sql)`` for every statement run from now on (None: stop), in
        :meth:`write`'s transactions too."""
        self._trace = callback
        self._conn.set_trace_callback(callback)

    def close(self) -> None:
        """Close the connection (the process's writing connection closes with the last one)."""
        if self._closed:
            return
        self._closed = True
        self._conn.close()
        self._writer = None

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def connect(
    path: str | Path, *, busy_timeout_ms: int | None = None, group_commit: bool = True, handover: bool = False
) -> Connection:
    """Open ``path`` (see :class:`Connection`). Does not create or upgrade the schema: call
    :func:`flagadmin.store.schema.ensure_schema` once per process first. ``group_commit=False``:
    each commit synced inside ``COMMIT`` (``synchronous=FULL``) instead of by :class:`WalSync`.
    ``handover=True``: the connection may be handed to another thread once (it is still used
    by one thread at a time).

    :raise NotADatabase: the file is not a SQLite database.
    :raise Unavailable: the file cannot be opened.
    """
    return Connection(path, busy_timeout_ms=busy_timeout_ms, group_commit=group_commit, handover=handover)
