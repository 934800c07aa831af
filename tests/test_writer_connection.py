"""The process's one writing connection on SQLite (store/engine.py's ``_Writer``):
every :meth:`Connection.write` of every thread runs its statements on one connection, whose page
cache survives the writes (SQLite empties a connection's cache whenever another connection has
committed), and each thread's own connection is itself again once the write is over. Real
files, real threads."""

from __future__ import annotations

import gc
import os
import sqlite3
import threading

import pytest

from flagadmin.store import connect, settings
from flagadmin.store.engine import _Writer

#: How many TEMP tables named writer_probe the connection that runs it has.
PROBE_TABLES = "SELECT count(*) FROM temp.sqlite_master WHERE name = 'writer_probe'"


def in_thread(fn):
    """Run ``fn()`` in a new thread; return what it returned (or raise what it raised)."""
    out: dict = {}

    def run():
        try:
            out["value"] = fn()
        except BaseException as exc:  # re-raised in the caller's thread
            out["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(30)
    assert not thread.is_alive()
    if "error" in out:
        raise out["error"]
    return out.get("value")


def test_writes_of_two_threads__run_on_one_connection(db_path):
    """A TEMP table belongs to one SQLite connection: one made in a write of one thread's
    connection is there in a write of another thread's connection, and is not on either
    thread's own connection."""
    with connect(db_path) as first:
        with first.write():
            first.run("CREATE TEMP TABLE writer_probe (a INTEGER)")
        try:

            def other():
                with connect(db_path) as second:
                    with second.write():
                        second.run("INSERT INTO temp.writer_probe (a) VALUES (1)")
                        inside = second.value("SELECT count(*) FROM temp.writer_probe")
                    return inside, second.value(PROBE_TABLES)

            assert in_thread(other) == (1, 0)
            assert first.value(PROBE_TABLES) == 0
        finally:
            with first.write():
                first.run("DROP TABLE temp.writer_probe")


def test_write__then_a_read_on_the_same_connection__sees_it(db_path):
    """What a write committed is what the thread's own connection reads next, and what
    another thread's connection reads."""
    with connect(db_path) as conn:
        with conn.write():
            conn.run("INSERT INTO settings (key, value) VALUES ('writer-probe', 'probe-1')")
        assert conn.value("SELECT value FROM settings WHERE key = 'writer-probe'") == "probe-1"

        def read():
            with connect(db_path) as other:
                return other.value("SELECT value FROM settings WHERE key = 'writer-probe'")

        assert in_thread(read) == "probe-1"


def test_versions_inside_a_write__another_connections_commit_seen(db_path):
    """A reading of the versions inside a write (on the process's writing connection) and after
    it (on the thread's own) both see a change committed meanwhile by another connection (a
    plain ``sqlite3`` one, as another process's would be)."""
    with connect(db_path) as conn:
        before = settings.versions(conn)
        outsider = sqlite3.connect(db_path)
        try:
            outsider.execute("UPDATE settings SET value = value + 5 WHERE key = 'content_version'")
            outsider.commit()
        finally:
            outsider.close()
        with conn.write():
            inside = settings.versions(conn)
        assert inside.content == before.content + 5
        assert settings.versions(conn).content == before.content + 5


def test_failed_write__rolled_back__the_connection_reads_and_writes_again(db_path):
    """A write whose block raises changes nothing; the same connection then reads (on its
    own connection) and writes (on the writing one) as before."""
    with connect(db_path) as conn:
        version = settings.versions(conn).content
        with pytest.raises(RuntimeError), conn.write():
            conn.run("UPDATE settings SET value = value + 1 WHERE key = 'content_version'")
            raise RuntimeError("the block fails")
        assert not conn.in_transaction
        assert settings.versions(conn).content == version
        with conn.write():
            conn.run("UPDATE settings SET value = value + 1 WHERE key = 'content_version'")
        assert settings.versions(conn).content == version + 1


def test_last_connection_closed__the_writing_connection_goes_too(db_path):
    """The writing connection lives as long as a connection to its file: a closed and
    dropped last connection leaves no file handle open behind it."""
    conn = connect(db_path)
    with conn.write():
        conn.run("UPDATE settings SET value = value WHERE key = 'content_version'")
    writers = [w for (path, _), w in _Writer._all.items() if path == os.path.abspath(db_path)]
    assert len(writers) == 1
    conn.close()
    del conn, writers
    gc.collect()
    assert not [key for key in _Writer._all if key[0] == os.path.abspath(db_path)]


def test_table_bulk_load_inside_a_write__joins_its_transaction__rolled_back_with_it(db_path):
    """``Connection.table`` (sqlite-utils, the seeds' bulk loads) inside :meth:`write` writes
    through the writing connection, in the open transaction: a failure later in the block takes
    the bulk load back too (sqlite-utils nests its own transaction as a savepoint)."""
    with connect(db_path) as conn:
        with pytest.raises(RuntimeError), conn.write():
            conn.table("settings").insert_all([{"key": f"bulk-{i}", "value": str(i)} for i in range(3)])
            assert conn.value("SELECT count(*) FROM settings WHERE key LIKE 'bulk-%'") == 3
            raise RuntimeError("the rest of the write fails")
        assert conn.value("SELECT count(*) FROM settings WHERE key LIKE 'bulk-%'") == 0
        with conn.write():
            conn.table("settings").insert_all([{"key": "bulk-kept", "value": "1"}])
        assert conn.value("SELECT count(*) FROM settings WHERE key LIKE 'bulk-%'") == 1
