"""The commit counter (``Connection.commit_counter``: SQLite's ``PRAGMA data_version``): a request
whose answer is kept runs one PRAGMA and nothing else while nobody has committed, and still
learns of every commit at once, another process's included. Real files, a real second process."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from flagadmin.store import connect, settings

from helpers import statements_of


def commit_in_another_process(db_path: Path, sql: str) -> None:
    """Run ``sql`` and commit it from a separate Python process (its own SQLite, its own map
    connection)."""
    script = (
        "import sqlite3, sys\n"
        "c = sqlite3.connect(sys.argv[1])\nc.execute(sys.argv[2])\nc.commit()\nc.close()\n"
    )
    subprocess.run([sys.executable, "-c", script, str(db_path), sql], check=True, timeout=60)


def test_versions__kept__the_pragma_alone_until_another_process_commits(db_path):
    """The second reading of the versions runs the PRAGMA alone; after another process bumps
    content_version, the next reading reads the row and has the new value."""
    kept = ["PRAGMA data_version"]
    with connect(db_path) as conn:
        first = settings.versions(conn)
        assert statements_of(conn, lambda: settings.versions(conn)) == kept
        commit_in_another_process(
            db_path, "UPDATE settings SET value = value + 3 WHERE key = 'content_version'"
        )
        seen: list = []
        statements = statements_of(conn, lambda: seen.append(settings.versions(conn)))
        assert seen[0].content == first.content + 3
        assert any("FROM settings" in sql for sql in statements)
        assert statements_of(conn, lambda: settings.versions(conn)) == kept


def test_commit_counter__moves_on_each_commit_of_anyone__else_stays(db_path):
    """Three commits by another process that leave the versions alone, one by this process's
    writer: the counter moves every time, and only then."""
    with connect(db_path) as conn:
        before = conn.commit_counter()
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


def test_last_other_connection_closed__the_counter_still_follows_commits(db_path):
    """Another connection of this process opens and closes: this connection's counter still
    moves with the next commit of another process."""
    with connect(db_path) as conn:
        other = connect(db_path)
        other.value("SELECT count(*) FROM settings")
        other.close()
        before = conn.commit_counter()
        commit_in_another_process(db_path, "INSERT INTO settings (key, value) VALUES ('probe-close', '1')")
        assert conn.commit_counter() != before


def test_database_not_in_wal_mode__counter_from_sqlite__still_moves(tmp_path):
    """A file in rollback-journal mode: the counter moves when another connection commits."""
    path = tmp_path / "rollback.db"
    plain = sqlite3.connect(path)
    plain.execute("PRAGMA journal_mode = DELETE")
    plain.execute("CREATE TABLE t (a INTEGER)")
    plain.commit()
    with connect(path) as conn:
        before = conn.commit_counter()
        assert conn.commit_counter() == before
        plain.execute("INSERT INTO t (a) VALUES (1)")
        plain.commit()
        assert conn.commit_counter() != before
    plain.close()


@pytest.fixture
def db_path(db_path):
    """The test database, in WAL mode (a first read made its -shm file)."""
    with connect(db_path) as conn:
        conn.value("SELECT count(*) FROM settings")
        assert Path(f"{db_path}-shm").exists()
    return db_path
