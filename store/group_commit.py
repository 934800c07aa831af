"""Group commit of a SQLite database in WAL mode (:class:`WalSync`).

Measured with ``python -m bench group-commit`` (``bench/group_commit.py`` before the bench
package; ``docs/architecture.md`` gives the command and the figures): with one ``fsync`` inside
every ``COMMIT`` (``synchronous=FULL``), flag writes queue behind the disk while they hold
SQLite's one write lock.
"""

from __future__ import annotations

import os
import threading
from typing import ClassVar

from .errors import Unavailable


class WalSync:
    """Group commit of one SQLite database in WAL mode: the fsync that makes commits durable,
    taken once for every commit written before it, outside the write lock.

    With ``synchronous=FULL`` SQLite syncs the WAL inside ``COMMIT``, while it holds the
    database's one write lock, so writes queue behind one fsync each (0.37 ms on the
    reference VM: flag creates stopped near one every 1.1 ms). Here connections run with
    ``synchronous=NORMAL`` (SQLite still syncs the WAL's header and around checkpoints, so the
    file is always consistent) and :meth:`Connection.write` calls :meth:`durable` after the
    ``COMMIT`` and after the write lock is released: the caller returns, and its after-commit
    callbacks run, only once an ``fdatasync`` of the WAL file that began after its commit has
    returned, which is what ``FULL`` gives. While one thread syncs, the next writers commit;
    the next sync covers all of them.

    Other connections can read a commit a fraction of a millisecond before it is on disk
    (never before its transaction is whole); only a crash of the machine in that window can
    take back what they read. The process's own answers about a write are never sent before.

    One instance per WAL file (see :meth:`of`), shared by the connections of every thread.
    """

    _all: ClassVar[dict[str, WalSync]] = {}
    _all_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, wal_path: str):
        self.wal_path = wal_path
        self._cond = threading.Condition(threading.Lock())
        self._written = 0  # commits noted by written()
        self._synced = 0  # every commit up to this one is on disk
        self._broken: OSError | None = None  # a sync failed: nothing more is trusted
        self._syncing = False
        #: fdatasync calls made (tests and benchmarks read it: fewer than commits = grouped).
        self.syncs = 0

    @classmethod
    def of(cls, database_path: str) -> WalSync:
        """The instance of the WAL file of ``database_path`` (``<path>-wal``), made once."""
        wal_path = os.path.abspath(database_path) + "-wal"
        with cls._all_lock:
            sync = cls._all.get(wal_path)
            if sync is None:
                sync = cls._all[wal_path] = cls(wal_path)
            return sync

    def written(self) -> int:
        """Note one commit, just written (call it before releasing the write lock, so that
        tickets follow commit order); return its ticket for :meth:`durable`."""
        with self._cond:
            self._written += 1
            return self._written

    def durable(self, ticket: int) -> None:
        """Return once the commit of ``ticket`` is on disk: wait for a sync in progress that
        covers it, or run one that covers it and every commit noted before.

        :raise Unavailable: a sync of this WAL has failed (now or earlier): the change is
            committed but may not survive a crash of the machine (HTTP 503). As PostgreSQL
            does after a failed fsync, nothing is trusted to be on disk any more: every later
            write is refused (:meth:`check`) until the process restarts.
        """
        with self._cond:
            while self._synced < ticket:
                self._raise_if_broken()
                if self._syncing:
                    self._cond.wait()
                    continue
                self._syncing = True
                through = self._written
                self._cond.release()
                error = None
                try:
                    self._sync()
                except OSError as exc:
                    error = exc
                finally:
                    self._cond.acquire()
                    self._syncing = False
                    self.syncs += 1
                    if error is None:
                        self._synced = max(self._synced, through)
                    else:
                        self._broken = error
                    self._cond.notify_all()
            self._raise_if_broken()

    def check(self) -> None:
        """Raise :class:`Unavailable` when a sync of this WAL has failed (see :meth:`durable`):
        a write about to start is refused before it changes anything."""
        with self._cond:
            self._raise_if_broken()

    def _raise_if_broken(self) -> None:
        if self._broken is not None:
            raise Unavailable(
                f"the database's log could not be synced to disk ({self._broken}): writes are refused"
                " until flagadmin restarts; check the disk first"
            )

    def _sync(self) -> None:
        try:
            fd = os.open(self.wal_path, os.O_RDONLY)
        except FileNotFoundError:
            # no WAL file: the last connection checkpointed it into the database (synced) and
            # removed it, so there is nothing left to sync
            return
        try:
            os.fdatasync(fd)
        finally:
            os.close(fd)
