"""Commits of others are seen at once: every reading of the version counters
(``settings.versions``) reads their row, so the next reading after a commit of another
connection or process shows it, whatever the journal mode. (The file keeps its name from the
commit counter, ``PRAGMA data_version``, that a removed per-connection memo used to decide
whether to read the row again.) Real files, a real second process."""

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


BUMP = "UPDATE settings SET value = value + {n} WHERE key = '{key}'"


def test_versions__each_reading_reads_the_row__another_process_commit_seen_next(db_path):
    """Every reading of the versions runs one statement, the version row's, and nothing else;
    after another process bumps content_version, the very next reading has the new value."""
    with connect(db_path) as conn:
        first = settings.versions(conn)
        statements = statements_of(conn, lambda: settings.versions(conn))
        assert len(statements) == 1 and "FROM settings" in statements[0], statements
        commit_in_another_process(db_path, BUMP.format(n=3, key="content_version"))
        assert settings.versions(conn) == settings.Versions(first.content + 3, first.credentials, first.rules)


def test_versions__each_commit_of_another_process_or_this_one__seen_by_the_next_reading(db_path):
    """Three commits by another process, one to each counter in turn, then one by this
    process's writer: each is seen by the reading that follows it."""
    with connect(db_path) as conn:
        before = settings.versions(conn)
        for n, key in enumerate(["credentials_version", "content_version", "credentials_version"], 1):
            commit_in_another_process(db_path, BUMP.format(n=n, key=key))
            after = settings.versions(conn)
            moved = after.content - before.content, after.credentials - before.credentials
            assert moved == ((0, n) if key == "credentials_version" else (n, 0))
            before = after
        with conn.write():
            conn.run(BUMP.format(n=7, key="credentials_version"))
        assert settings.versions(conn).credentials == before.credentials + 7


def test_last_other_connection_closed__a_commit_of_another_process_still_seen(db_path):
    """Another connection of this process opens and closes: the next commit of another
    process is still seen by this connection's next reading."""
    with connect(db_path) as conn:
        other = connect(db_path)
        other.value("SELECT count(*) FROM settings")
        other.close()
        before = settings.versions(conn)
        commit_in_another_process(db_path, BUMP.format(n=1, key="credentials_version"))
        assert settings.versions(conn).credentials == before.credentials + 1


def test_database_not_in_wal_mode__another_connections_commit_seen(tmp_path):
    """A file in rollback-journal mode: a commit of another connection is seen by the next
    reading."""
    path = tmp_path / "rollback.db"
    plain = sqlite3.connect(path)
    plain.execute("PRAGMA journal_mode = DELETE")
    plain.execute("CREATE TABLE settings (key TEXT PRIMARY KEY, value)")
    plain.execute("INSERT INTO settings VALUES ('content_version', 1), ('credentials_version', 1)")
    plain.commit()
    with connect(path) as conn:
        assert settings.versions(conn) == settings.Versions(1, 1)
        plain.execute(BUMP.format(n=1, key="content_version"))
        plain.commit()
        assert settings.versions(conn) == settings.Versions(2, 1)
    plain.close()


@pytest.fixture
def db_path(db_path):
    """The test database, in WAL mode (a first read made its -shm file)."""
    with connect(db_path) as conn:
        conn.value("SELECT count(*) FROM settings")
        assert Path(f"{db_path}-shm").exists()
    return db_path
