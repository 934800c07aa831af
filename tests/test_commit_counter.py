"""The commit counter read from the wal-index header (store/engine.py's ``WalIndex``, issue 13):
a request whose answer is kept runs no SQL at all while nobody has committed, and still learns
of every commit at once, another process's included. Real files, a real second process."""

from __future__ import annotations

import fcntl
import mmap
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from flagadmin.store import connect, settings
from flagadmin.store.engine import WalIndex

from helpers import statements_of


def commit_in_another_process(db_path: Path, sql: str) -> None:
    """Run ``sql`` and commit it from a separate Python process (its own SQLite, its own map
    of the -shm file)."""
    script = (
        "import sqlite3, sys\n"
        "c = sqlite3.connect(sys.argv[1])\nc.execute(sys.argv[2])\nc.commit()\nc.close()\n"
    )
    subprocess.run([sys.executable, "-c", script, str(db_path), sql], check=True, timeout=60)


def test_versions__kept__no_statement_until_another_process_commits(db_path):
    """The second reading of the versions runs no statement (no PRAGMA either); after another
    process bumps content_version, the next reading reads the row and has the new value."""
    with connect(db_path) as conn:
        first = settings.versions(conn)  # opens the index: a PRAGMA, then the row
        assert statements_of(conn, lambda: settings.versions(conn)) == []
        commit_in_another_process(
            db_path, "UPDATE settings SET value = value + 3 WHERE key = 'content_version'"
        )
        seen: list = []
        statements = statements_of(conn, lambda: seen.append(settings.versions(conn)))
        assert seen[0].content == first.content + 3
        assert any("FROM settings" in sql for sql in statements)
        assert statements_of(conn, lambda: settings.versions(conn)) == []


def test_commit_counter__moves_on_each_commit_of_anyone__else_stays(db_path):
    """Three commits by another process that leave the versions alone, one by this process's
    writer: the counter moves every time, and only then."""
    with connect(db_path) as conn:
        before = conn.commit_counter()
        assert isinstance(before, bytes)
        assert conn.commit_counter() == before
        for n in range(3):
            commit_in_another_process(
                db_path, f"INSERT INTO settings (key, value) VALUES ('probe-{n}', '{n}')"
            )
            after = conn.commit_counter()
            assert after != before
            before = after
        with conn.write():
            conn.run("INSERT INTO settings (key, value) VALUES ('probe-own', 'x')")
        assert conn.commit_counter() != before


def test_last_other_connection_closed__the_index_still_follows_commits(db_path):
    """Another connection of this process opens and closes (SQLite deletes the -shm file only
    when the last connection closes): this connection's index still sees the next commit."""
    with connect(db_path) as conn:
        other = connect(db_path)
        other.value("SELECT count(*) FROM settings")
        other.close()
        before = conn.commit_counter()
        commit_in_another_process(db_path, "INSERT INTO settings (key, value) VALUES ('probe-close', '1')")
        assert conn.commit_counter() != before


def header_of_copy(tmp_path: Path, db_path: Path, change=None) -> bytes | None:
    """What a WalIndex over a copy of ``db_path``'s -shm file reads (no SQLite connection has the
    copy, so its descriptor is closed at once), its first 96 bytes changed by
    ``change(bytearray)`` when given."""
    data = bytearray(Path(f"{db_path}-shm").read_bytes())
    if change is not None:
        change(data)
    copy = tmp_path / f"copy-{change.__name__ if change else 'whole'}.db-shm"
    copy.write_bytes(bytes(data))
    fd = os.open(copy, os.O_RDONLY)
    try:
        with mmap.mmap(fd, 96, access=mmap.ACCESS_READ) as mapped:
            return WalIndex(fd, mapped).header()
    finally:
        os.close(fd)


def test_wal_index_header__only_a_whole_checked_header_is_trusted(db_path, tmp_path):
    """A copy of a real header is read as it is; copies that differ (a writer between them), a
    wrong checksum, an uninitialised header or an unknown version give None (the caller asks
    SQLite instead); a database without a -shm file, or with no connection open, has no index."""
    with connect(db_path) as conn:
        live = conn.commit_counter()
        assert header_of_copy(tmp_path, db_path) == live

        def second_copy_differs(data):
            data[48 + 16] ^= 0xFF  # mxFrame of the second copy

        def both_mxframe_changed(data):
            data[16] ^= 0xFF
            data[48 + 16] ^= 0xFF  # equal copies, checksum no longer matches

        def not_initialised(data):
            data[12] = 0
            data[48 + 12] = 0

        def other_version(data):
            data[0] ^= 0x01
            data[48] ^= 0x01

        for change in (second_copy_differs, both_mxframe_changed, not_initialised, other_version):
            assert header_of_copy(tmp_path, db_path, change) is None, change.__name__
    assert WalIndex.of(str(db_path)) is None  # no connection of this process is open
    assert WalIndex.of(str(tmp_path / "none.db")) is None


#: The byte of the -shm file that SQLite's unix VFS locks to tell a first user from the others.
SQLITE_SHM_DMS = 128

#: A process that reads the versions (its connection opens the index), waits for a line, then
#: writes and reads again: with the index's descriptor closed too early, its locks on the -shm
#: file were gone, and the other process's first open truncated the file under it (SIGBUS).
VICTIM = """
import sys
from flagadmin.store import connect, settings
conn = connect(sys.argv[1])
before = settings.versions(conn).content
print("ready", flush=True)
sys.stdin.readline()
with conn.write():
    conn.run("UPDATE settings SET value = value + 1 WHERE key = 'content_version'")
print(settings.versions(conn).content - before, flush=True)
conn.close()
"""


def test_another_process_opens_the_database__this_ones_locks_hold__no_bus_error(db_path):
    """The index keeps its descriptor while the process has a connection: closing it would
    drop SQLite's POSIX locks on the -shm file, and the next process to open the database
    would take itself for the first and truncate the file under the first one's map."""
    victim = subprocess.Popen(
        [sys.executable, "-c", VICTIM, str(db_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert victim.stdout.readline().strip() == "ready"
        # SQLite's unix VFS: a process that has the -shm file open holds a read lock on its
        # byte 128 ("DMS"); the first to open it takes a write lock there and truncates the
        # file. The victim's read lock is still there:
        fd = os.open(f"{db_path}-shm", os.O_RDWR)
        try:
            with pytest.raises(OSError):
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, SQLITE_SHM_DMS, os.SEEK_SET)
        finally:
            os.close(fd)  # this process has no SQLite connection to the file: no lock to drop
        commit_in_another_process(db_path, "INSERT INTO settings (key, value) VALUES ('probe-open', '1')")
        out, _ = victim.communicate("go\n", timeout=60)
    finally:
        victim.kill()
    assert victim.returncode == 0
    assert out.strip() == "1"


def test_index_closed_with_the_last_connection__reopened_by_the_next(db_path):
    """The process's index goes with its last connection to the file (then no lock is left to
    drop) and comes back with the next connection's first reading."""
    first = connect(db_path)
    first.commit_counter()
    second = connect(db_path)
    assert WalIndex.of(str(db_path)) is not None
    first.close()
    assert WalIndex.of(str(db_path)) is not None  # second is open: the descriptor stays
    second.close()
    assert WalIndex.of(str(db_path)) is None
    with connect(db_path) as third:
        assert isinstance(third.commit_counter(), bytes)


def test_database_not_in_wal_mode__counter_from_sqlite__still_moves(tmp_path):
    """A file in rollback-journal mode has no wal-index: the counter is SQLite's data_version,
    and it moves when another connection commits."""
    path = tmp_path / "rollback.db"
    plain = sqlite3.connect(path)
    plain.execute("PRAGMA journal_mode = DELETE")
    plain.execute("CREATE TABLE t (a INTEGER)")
    plain.commit()
    with connect(path) as conn:
        before = conn.commit_counter()
        assert isinstance(before, int)
        assert conn.commit_counter() == before
        plain.execute("INSERT INTO t (a) VALUES (1)")
        plain.commit()
        assert conn.commit_counter() != before
    plain.close()


@pytest.fixture
def db_path(db_path):
    """The test database, its -shm file there (a first read made it)."""
    with connect(db_path) as conn:
        conn.value("SELECT count(*) FROM settings")
        assert Path(f"{db_path}-shm").exists()
    return db_path
