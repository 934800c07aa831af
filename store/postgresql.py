"""The PostgreSQL engine: the same :class:`~flagadmin.store.engine.Connection` interface on psycopg 3.

Store functions write SQL with SQLite's ``?`` and ``:name`` placeholders; this engine turns them
into psycopg's ``%s`` and ``%(name)s`` (and a literal ``%`` into ``%%``), once per statement
text. Where the two engines' SQL differs, the store keeps one variant per dialect side by side
and picks by ``conn.dialect``.

Write transactions (:meth:`PostgresConnection.write`) first take a transaction-scoped advisory
lock named after what they serialise on, so that writers that must not interleave (two SCIM
token rotations, two claims of the same delivery) queue on the lock rather than fail on a
unique violation. Errors are classified by SQLSTATE: a lost or refused connection, a pool that
gave none in time, a serialization failure or a deadlock become
:class:`~flagadmin.store.engine.Unavailable` (retry later), a unique violation
:class:`~flagadmin.store.engine.Conflict`.

It is over 400 lines because it is the whole PostgreSQL side of :mod:`flagadmin.store.engine`:
the pool, the connection, its placeholders and its errors, kept in one place.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import re
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import Any, ClassVar

from .engine import STATEMENT_TIME, Conflict, Params, StoreError, Unavailable, timed

#: Seconds a request waits for a pooled connection before it is answered 503.
POOL_TIMEOUT_S = 5.0

#: Milliseconds after which a statement is cancelled (a runaway query must not hold a
#: connection forever), and after which a transaction left idle is ended by the server.
STATEMENT_TIMEOUT_MS = 30_000
IDLE_IN_TRANSACTION_TIMEOUT_MS = 60_000

#: Milliseconds a statement waits for a lock another transaction holds (a writer of the same
#: advisory lock, a row being changed) before it gives up and the request is answered 503 with
#: Retry-After, as SQLite's busy timeout does.
LOCK_TIMEOUT_MS = 10_000

#: Seconds a pooled connection may have been back in the pool and still be lent without the
#: pool's check (an empty query, one round trip): one that waited longer is checked first, so
#: that a connection the server dropped while it sat idle (a restart, an idle timeout) is
#: replaced rather than failing a request. One given back sooner is lent as it is; if the
#: server went away in that moment the request is answered 503 and the pool drops it.
CHECK_AFTER_IDLE_S = 1.0

#: Rows a streamed answer (:meth:`PostgresConnection.stream`) receives from the server at once.
STREAM_CHUNK_ROWS = 500

_TOKEN = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|::|:([A-Za-z_][A-Za-z0-9_]*)|\?|%")


@functools.lru_cache(maxsize=4096)
def convert_placeholders(sql: str) -> str:
    """``?`` -> ``%s``, ``:name`` -> ``%(name)s``, ``%`` -> ``%%``, outside quoted text and
    leaving PostgreSQL's ``::`` casts alone."""

    def replace(match: re.Match) -> str:
        text = match.group(0)
        if text == "?":
            return "%s"
        if text == "%":
            return "%%"
        if match.group(1):
            return f"%({match.group(1)})s"
        # a quoted literal or identifier (psycopg reads % even there), or a :: cast
        return text.replace("%", "%%")

    return _TOKEN.sub(replace, sql)


@functools.lru_cache(maxsize=64)
def advisory_key(name: str) -> int:
    """A stable signed 64-bit key for ``pg_advisory_xact_lock`` from a lock name."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


def classify(exc: Exception) -> Exception:
    """Return the store exception that a psycopg error stands for, or ``exc``."""
    import psycopg
    from psycopg import errors

    if isinstance(exc, errors.UniqueViolation):
        return Conflict(str(exc))
    if isinstance(
        exc,
        errors.SerializationFailure
        | errors.DeadlockDetected
        | errors.LockNotAvailable
        | errors.QueryCanceled
        | errors.AdminShutdown
        | errors.CannotConnectNow,
    ):
        return Unavailable(str(exc))
    if isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
        return Unavailable(str(exc))
    from psycopg_pool import PoolTimeout

    if isinstance(exc, PoolTimeout):
        return Unavailable(str(exc))
    return exc


class PostgresConnection:
    """One PostgreSQL connection (``dialect == "postgresql"``), borrowed from a pool (or opened
    alone), with the interface of :class:`~flagadmin.store.engine.Connection`.

    Statements outside :meth:`write` run in autocommit mode, each its own transaction.
    :meth:`close` gives the connection back to its pool (after rolling back anything left open).
    """

    dialect = "postgresql"

    def __init__(self, raw: Any, release: Callable[[Any], None] | None = None):
        self._raw = raw
        self._release = release
        self._in_write = False
        self._after_commit: list[Callable[[], None]] = []
        self._trace: Callable[[str], None] | None = None

    # --- running SQL ----------------------------------------------------------------------

    def _execute(self, sql: str, params: Params = ()):
        text = convert_placeholders(sql)
        if self._trace is not None:
            self._trace(self._traced(text, params))
        started = time.perf_counter()
        try:
            return self._raw.execute(text, params if params else None)
        except Exception as exc:  # psycopg's errors, classified
            classified = classify(exc)
            if classified is exc:
                raise
            raise classified from exc
        finally:
            STATEMENT_TIME.seconds += time.perf_counter() - started

    def all(self, sql: str, params: Params = ()) -> list[dict[str, Any]]:
        """Run a query; return every row as a dict keyed by column name."""
        return self._execute(sql, params).fetchall()

    def one(self, sql: str, params: Params = ()) -> dict[str, Any] | None:
        """Run a query; return its first row as a dict, or None."""
        return self._execute(sql, params).fetchone()

    def value(self, sql: str, params: Params = ()) -> Any:
        """Run a query of one column; return the value of its first row (None: no row)."""
        row = self._execute(sql, params).fetchone()
        return None if row is None else next(iter(row.values()))

    def values(self, sql: str, params: Params = ()) -> Iterator[Any]:
        """Run a query of one column; yield its values (fetched in batches of 500)."""
        cursor = self._execute(sql, params)
        while True:
            rows = cursor.fetchmany(500)
            if not rows:
                return
            for row in rows:
                yield next(iter(row.values()))

    def column(self, sql: str, params: Params = ()) -> list[Any]:
        """Run a query of one column; return its values as a list."""
        return [next(iter(row.values())) for row in self._execute(sql, params).fetchall()]

    def stream(self, sql: str, params: Params = ()) -> Iterator[Any]:
        """Run a query of one column; yield its values as the server sends them, a chunk of
        :data:`STREAM_CHUNK_ROWS` rows at a time (one row at a time with a libpq older than 17),
        so that memory stays flat however long the answer (:meth:`values` receives the whole
        result first: psycopg's client-side cursors do).

        One statement, so one snapshot, as on SQLite. Until the iterator is exhausted or
        closed the connection runs nothing else: run no other statement on it meanwhile
        (psycopg would wait for the stream, in the same thread, for ever).
        """
        import psycopg

        text = convert_placeholders(sql)
        if self._trace is not None:
            self._trace(self._traced(text, params))
        size = STREAM_CHUNK_ROWS if psycopg.pq.version() >= 170000 else 1
        cursor = self._raw.cursor()
        try:
            for row in cursor.stream(text, params if params else None, size=size):
                yield next(iter(row.values()))
        except Exception as exc:  # psycopg's errors, classified
            classified = classify(exc)
            if classified is exc:
                raise
            raise classified from exc
        finally:
            cursor.close()

    def run(self, sql: str, params: Params = ()) -> int:
        """Run a statement that changes data; return the number of rows it changed."""
        return self._execute(sql, params).rowcount

    def insert(self, sql: str, params: Params = ()) -> int:
        """Run an INSERT into a table whose key is ``id``; return the new row's id."""
        if "RETURNING" not in sql.upper():
            sql = f"{sql} RETURNING id"
        return self.value(sql, params)

    def run_many(self, sql: str, rows: Iterable[Params]) -> None:
        """Run one statement once per parameter row (bulk inserts)."""
        rows = list(rows)
        if not rows:
            return
        try:
            with self._raw.cursor() as cursor:
                timed(lambda: cursor.executemany(convert_placeholders(sql), rows))
        except Exception as exc:
            classified = classify(exc)
            if classified is exc:
                raise
            raise classified from exc

    def script(self, sql: str) -> None:
        """Run several statements at once (schema and migrations); no placeholders."""
        try:
            timed(lambda: self._raw.execute(sql))
        except Exception as exc:
            classified = classify(exc)
            if classified is exc:
                raise
            raise classified from exc

    # --- transactions ---------------------------------------------------------------------

    @property
    def in_transaction(self) -> bool:
        """True while a transaction is open on this connection."""
        from psycopg.pq import TransactionStatus

        return self._raw.info.transaction_status != TransactionStatus.IDLE

    @contextlib.contextmanager
    def write(self, lock: str = "write") -> Iterator[PostgresConnection]:
        """Run the block in one transaction, serialised with every other writer of ``lock``
        (in every process) by ``pg_advisory_xact_lock``. Commits on success, rolls back on any
        exception; nested calls join the outer transaction."""
        if self._in_write:
            yield self
            return
        self._in_write = True
        try:
            try:
                # one round trip: the key is an integer of ours, written as a literal
                self._execute(f"BEGIN; SELECT pg_advisory_xact_lock({advisory_key(lock)})")
                yield self
            except BaseException:
                self._after_commit.clear()
                with contextlib.suppress(Exception):
                    self._raw.execute("ROLLBACK")
                raise
            self._execute("COMMIT")
        finally:
            self._in_write = False
        callbacks, self._after_commit = self._after_commit, []
        for callback in callbacks:
            callback()

    def after_commit(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` once the open write transaction has committed."""
        if not self._in_write:
            raise RuntimeError("after_commit needs an open write transaction")
        self._after_commit.append(callback)

    def rollback(self) -> None:
        """Roll back the open transaction, if any."""
        if self.in_transaction:
            with contextlib.suppress(Exception):
                self._raw.execute("ROLLBACK")

    def trace(self, callback: Callable[[str], None] | None) -> None:
        """Call ``callback(sql)`` for every statement run from now on (None: stop), with its
        parameters merged in, as SQLite's trace shows them (what the server is sent)."""
        self._trace = callback

    def _traced(self, text: str, params: Params) -> str:
        if not params:
            return text
        from psycopg import ClientCursor

        with ClientCursor(self._raw) as cursor:
            return cursor.mogrify(text, params)

    def close(self) -> None:
        """Give the connection back to its pool (or close it when it has none)."""
        raw, self._raw = self._raw, None
        if raw is None:
            return
        if self._release is not None:
            self._release(raw)
        else:
            raw.close()

    def __enter__(self) -> PostgresConnection:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _configure(raw: Any) -> None:
    """Settings of every pooled connection: autocommit, named rows, timeouts, UTC."""
    from psycopg.rows import dict_row

    raw.autocommit = True
    raw.row_factory = dict_row
    raw.execute(
        f"SET statement_timeout = {STATEMENT_TIMEOUT_MS}; SET lock_timeout = {LOCK_TIMEOUT_MS};"
        f" SET idle_in_transaction_session_timeout = {IDLE_IN_TRANSACTION_TIMEOUT_MS};"
        " SET TIME ZONE 'UTC'"
    )


class PostgresDatabase:
    """A PostgreSQL database reached at ``url``, with a connection pool for this process.

    ``max_size`` connections at most (one per server thread plus the delivery workers);
    :meth:`connect` borrows one, waiting at most :data:`POOL_TIMEOUT_S` seconds. The pool opens
    at the first :meth:`connect` and, once :meth:`close` has closed it, never again.
    """

    dialect = "postgresql"

    #: Every pool of this process, so that all can be closed at once (:meth:`close_all`).
    _open: ClassVar[weakref.WeakSet[PostgresDatabase]] = weakref.WeakSet()

    def __init__(self, url: str, *, min_size: int = 1, max_size: int = 10):
        self.url = url
        self.min_size, self.max_size = min_size, max_size
        self._pool = None
        self._closed = False
        self._lock = threading.Lock()
        #: When each connection was last given back (time.monotonic()), for :meth:`_check`.
        self._given_back: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()
        PostgresDatabase._open.add(self)

    @classmethod
    def close_all(cls) -> None:
        """Close every pool of this process (at exit, or between tests)."""
        for database in list(cls._open):
            database.close()

    def _get_pool(self):
        with self._lock:
            if self._closed:
                raise Unavailable("the database's connection pool is closed: its application has stopped")
            if self._pool is None:
                from psycopg_pool import ConnectionPool

                self._pool = ConnectionPool(
                    self.url,
                    min_size=self.min_size,
                    max_size=self.max_size,
                    configure=_configure,
                    check=self._check,
                    open=True,
                    timeout=POOL_TIMEOUT_S,
                    name="flagadmin",
                )
            return self._pool

    def _check(self, raw: Any) -> None:
        """The pool's check of a connection it is about to lend: none for one given back less
        than :data:`CHECK_AFTER_IDLE_S` ago, psycopg_pool's own (an empty query) otherwise.

        :raise psycopg.OperationalError: the connection is broken (the pool replaces it).
        """
        from psycopg_pool import ConnectionPool

        given_back = self._given_back.get(raw)
        if given_back is not None and time.monotonic() - given_back < CHECK_AFTER_IDLE_S:
            return
        ConnectionPool.check_connection(raw)

    def _give_back(self, pool: Any, raw: Any) -> None:
        self._given_back[raw] = time.monotonic()
        pool.putconn(raw)

    def connect(self) -> PostgresConnection:
        """Borrow a connection; :meth:`PostgresConnection.close` gives it back.

        :raise Unavailable: no connection could be had in time (the server is down or every
            connection is busy).
        """
        pool = self._get_pool()
        try:
            raw = pool.getconn()
        except Exception as exc:
            classified = classify(exc)
            raise (classified if isinstance(classified, StoreError) else Unavailable(str(exc))) from exc
        return PostgresConnection(raw, functools.partial(self._give_back, pool))

    def close(self) -> None:
        """Close the pool and every connection in it, for good: a later :meth:`connect` raises
        :class:`Unavailable` instead of opening a new pool. Work that outlives its application
        (a timer's batch of token uses, due a second after the last request) would otherwise
        open a pool that nothing closes once this object is collected: its worker threads
        reconnecting, for minutes, to a database that may be gone."""
        with self._lock:
            self._closed = True
            if self._pool is not None:
                self._pool.close()
                self._pool = None


def connect_once(url: str) -> PostgresConnection:
    """Open one connection outside any pool (the command line, schema upgrades).

    :raise Unavailable: the server cannot be reached.
    """
    import psycopg

    try:
        raw = psycopg.connect(url)
        _configure(raw)
    except Exception as exc:
        classified = classify(exc)
        raise (classified if isinstance(classified, StoreError) else Unavailable(str(exc))) from exc
    return PostgresConnection(raw)
