"""The commit counter read from the wal-index header (store/engine.py's ``WalIndex``, issue 13):
a request whose answer is kept runs no SQL at all while nobody has committed, and still learns
of every commit at once, another process's included. Real files, a real second process."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from flagadmin.store import connect, settings
from flagadmin.store.engine import WalIndex


def commit_in_another_process(db_path: Path, sql: str) -> None:
    """Run ``sql`` and commit it from a separate Python process (its own SQLite, its own map
    of the -shm file)."""
    script = (
        "import sqlite3, sys\n"
        "c = sqlite3.connect(sys.argv[1])\nc.execute(sys.argv[2])\nc.commit()\nc.close()\n"
    )
    subprocess.run([sys.executable, "-c", script, str(db_path), sql], check=True, timeout=60)


def traced(conn, fn):
    """``fn()``, and the statements it ran on ``conn``."""
    statements: list[str] = []
    conn.trace(statements.append)
    try:
        fn()
    finally:
        conn.trace(None)
    return statements


def test_versions__kept__no_statement_until_another_process_commits(db_path):
    """The second reading of the versions runs no statement (no PRAGMA either); after another
    process bumps content_version, the next reading reads the row and has the new value."""
    with connect(db_path) as conn:
        first = settings.versions(conn)  # opens the index: a PRAGMA, then the row
        assert traced(conn, lambda: settings.versions(conn)) == []
        commit_in_another_process(
            db_path, "UPDATE settings SET value = value + 3 WHERE key = 'content_version'"
        )
        seen: list = []
        statements = traced(conn, lambda: seen.append(settings.versions(conn)))
        assert seen[0].content == first.content + 3
        assert any("FROM settings" in sql for sql in statements)
        assert traced(conn, lambda: settings.versions(conn)) == []


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


def header_file(tmp_path: Path, db_path: Path, change=None) -> WalIndex | None:
    """A WalIndex over a copy of ``db_path``'s -shm file, its first 96 bytes changed by
    ``change(bytearray)`` when given."""
    copy = tmp_path / "copy.db"
    shutil.copyfile(f"{db_path}-shm", f"{copy}-shm")
    if change is not None:
        data = bytearray(Path(f"{copy}-shm").read_bytes())
        change(data)
        Path(f"{copy}-shm").write_bytes(bytes(data))
    return WalIndex.open(str(copy))


def test_wal_index_header__only_a_whole_checked_header_is_trusted(db_path, tmp_path):
    """A copy of a real header is read as it is; copies that differ (a writer between them), a
    wrong checksum, an uninitialised header or an unknown version give None (the caller asks
    SQLite instead); no -shm file gives no index."""
    with connect(db_path) as conn:
        live = conn.commit_counter()
        whole = header_file(tmp_path, db_path)
        assert whole is not None and whole.header() == live
        whole.close()

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
            index = header_file(tmp_path, db_path, change)
            assert index is not None
            assert index.header() is None, change.__name__
            index.close()
    assert WalIndex.open(str(tmp_path / "none.db")) is None


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
