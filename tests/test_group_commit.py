"""Group commit on SQLite (store/engine.py's WalSync): a write returns only once an
fdatasync of the WAL that began after its COMMIT has returned, and concurrent writers share
those syncs. Real files, real threads, real fdatasync calls."""

from __future__ import annotations

import threading

import pytest

from flagadmin.store import connect
from flagadmin.store.errors import Unavailable
from flagadmin.store.group_commit import WalSync


@pytest.fixture()
def table(db_path):
    with connect(db_path) as conn:
        conn.run("CREATE TABLE IF NOT EXISTS gc_rows (id INTEGER PRIMARY KEY, writer INTEGER NOT NULL)")
    return db_path


def test_write__returns__its_commit_synced(table):
    """A write transaction returns after the sync that covers it: every commit noted so far
    is on disk, and at least one fdatasync ran for it."""
    sync = WalSync.of(str(table))
    with connect(table) as conn:
        before = sync.syncs
        with conn.write():
            conn.run("INSERT INTO gc_rows (writer) VALUES (0)")
        assert sync.syncs > before
        assert sync._synced == sync._written


def test_autocommit_statement__outside_a_transaction__synced_too(table):
    """A statement that commits by itself (no write() around it) is synced before it returns;
    a read is not (no commit, no sync)."""
    sync = WalSync.of(str(table))
    with connect(table) as conn:
        written = sync._written
        conn.run("INSERT INTO gc_rows (writer) VALUES (1)")
        assert sync._written == written + 1
        assert sync._synced == sync._written
        syncs = sync.syncs
        assert conn.value("SELECT count(*) FROM gc_rows") >= 1
        assert sync.syncs == syncs


def test_script__schema_change_outside_a_transaction__synced(table):
    """A script that changes only the schema (no row count moves) is synced too: schema
    upgrades run as scripts."""
    sync = WalSync.of(str(table))
    with connect(table) as conn:
        written = sync._written
        conn.script("CREATE TABLE gc_more (a INTEGER)")
        assert sync._written == written + 1
        assert sync._synced == sync._written


def test_concurrent_writers__share_syncs__every_row_kept(table):
    """8 threads x 40 commits: every row is there, every commit is synced once all returned,
    and the commits shared syncs (fewer fdatasync calls than commits)."""
    sync = WalSync.of(str(table))
    threads_n, per_thread = 8, 40
    errors: list[BaseException] = []
    start = threading.Barrier(threads_n)

    def writer(n: int) -> None:
        try:
            with connect(table) as conn:
                start.wait()
                for _ in range(per_thread):
                    with conn.write():
                        conn.run("INSERT INTO gc_rows (writer) VALUES (?)", [n])
        except BaseException as exc:
            errors.append(exc)

    syncs_before, written_before = sync.syncs, sync._written
    threads = [threading.Thread(target=writer, args=(n,)) for n in range(threads_n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors
    commits = sync._written - written_before
    assert commits == threads_n * per_thread
    assert sync._synced == sync._written
    assert 1 <= sync.syncs - syncs_before < commits
    with connect(table) as conn:
        rows = conn.all("SELECT writer, count(*) AS n FROM gc_rows GROUP BY writer")
    counts = {row["writer"]: row["n"] for row in rows}
    assert all(counts.get(n) == per_thread for n in range(threads_n))


def test_sync_fails__the_writer_is_told__later_writes_refused(tmp_path):
    """A sync that fails (here /dev/null, which cannot be synced: EINVAL) is reported to the
    writer it covered as Unavailable (HTTP 503), not swallowed; and, as PostgreSQL does after
    a failed fsync, later commits are refused too instead of trusting a second sync."""
    sync = WalSync("/dev/null")
    ticket = sync.written()
    with pytest.raises(Unavailable, match="could not be synced"):
        sync.durable(ticket)
    assert sync.syncs == 1
    with pytest.raises(Unavailable, match="refused until flagadmin restarts"):
        sync.check()
    later = sync.written()
    with pytest.raises(Unavailable):
        sync.durable(later)
    assert sync.syncs == 1  # not tried again
