"""Crash safety and durability, tried by breaking things: SIGKILL under write load, a seed load
killed halfway, schema upgrades that succeed and that fail, and online backups under load.

The server runs as a real ``flagadmin serve`` process on 127.0.0.1 where it matters. Every loop
is bounded in count and in time.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import shutil
import sqlite3
import struct
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import pytest

from flagadmin.store import db as store_db
from flagadmin.store import scim_tokens
from flagadmin.store.backup import backup
from flagadmin.store.tokens import digest, new_admin_token

from helpers import LiveServer

GENERATE = "/api/admin/scim-settings/generate-new-token"
SCIM = "/scim/v2/ServiceProviderConfig"
READS = ("/api/admin/ui-config", "/api/admin/addons/1/events", "/api/admin/archive/features")

#: Row counts of the demo dataset (seed/demo.json).
DEMO_COUNTS = {
    "users": 9,
    "projects": 4,
    "features": 40,
    "favorite_features": 17,
    "integrations": 6,
    "integration_events": 324,
}


# --- helpers ------------------------------------------------------------------------------


def flagadmin(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """Run the ``flagadmin`` command line of this interpreter's installation."""
    return subprocess.run(
        [sys.executable, "-c", "from flagadmin.app import main; main()", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def table_counts(path: Path) -> dict[str, int]:
    """Row count of every table of the database at ``path``."""
    conn = sqlite3.connect(path)
    try:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {name: conn.execute(f'SELECT count(*) FROM "{name}"').fetchone()[0] for name in sorted(names)}
    finally:
        conn.close()


def fingerprint(path: Path) -> str:
    """SHA-256 of the SQL dump of the database: equal fingerprints, equal contents."""
    conn = sqlite3.connect(path)
    try:
        return hashlib.sha256("\n".join(conn.iterdump()).encode()).hexdigest()
    finally:
        conn.close()


def pragma(path: Path, name: str):
    conn = sqlite3.connect(path)
    try:
        rows = [r[0] for r in conn.execute(f"PRAGMA {name}")]
    finally:
        conn.close()
    return rows[0] if len(rows) == 1 else rows


def active_scim_tokens(path: Path) -> int:
    conn = store_db.connect(path)
    try:
        return scim_tokens.active_count(conn)
    finally:
        conn.close()


def status_of(port: int, method: str, path: str, headers: dict[str, str]) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request(method, path, headers=headers)
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


@dataclass
class Load:
    """Clients generating SCIM tokens and reading, on keep-alive connections, until stopped.

    ``received`` holds ``(sent_tick, received_tick, token)`` per 200 of a generation, the ticks
    taken from one counter under one lock just before the request is sent and just after its
    answer is read: ``a`` was received before ``b`` was sent iff ``a[1] < b[0]``.
    """

    port: int
    admin: str
    generators: int = 8
    readers: int = 4
    max_requests_per_client: int = 2000
    seconds: float = 20.0
    received: list[tuple[int, int, str]] = field(default_factory=list)
    read_statuses: list[int] = field(default_factory=list)
    generate_statuses: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.lock = threading.Lock()
        self.tick = 0
        self.stop = threading.Event()
        self.deadline = time.monotonic() + self.seconds
        self.threads = [
            threading.Thread(target=self._client, args=(i < self.generators, i), daemon=True)
            for i in range(self.generators + self.readers)
        ]
        for thread in self.threads:
            thread.start()

    def _next_tick(self) -> int:
        with self.lock:
            self.tick += 1
            return self.tick

    def _client(self, generator: bool, index: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        headers = {"Authorization": self.admin}
        try:
            for n in range(self.max_requests_per_client):
                if self.stop.is_set() or time.monotonic() > self.deadline:
                    return
                method, path = ("POST", GENERATE) if generator else ("GET", READS[(index + n) % len(READS)])
                sent = self._next_tick()
                try:
                    conn.request(method, path, headers=headers)
                    response = conn.getresponse()
                    body = response.read()
                except (OSError, http.client.HTTPException):
                    return  # the server is gone (killed): this client stops
                received = self._next_tick()
                with self.lock:
                    if generator:
                        self.generate_statuses.append(response.status)
                        if response.status == 200:
                            self.received.append((sent, received, orjson.loads(body)["token"]))
                    else:
                        self.read_statuses.append(response.status)
        finally:
            conn.close()

    def wait_for(self, generations: int, timeout: float, reads: int = 0) -> None:
        """Wait until this many generations and reads were answered, or ``timeout`` s."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and (
            len(self.received) < generations or len(self.read_statuses) < reads
        ):
            time.sleep(0.01)

    def finish(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(15)
        assert not any(t.is_alive() for t in self.threads), "a client did not stop"


# --- 1. SIGKILL while writing -------------------------------------------------------------


def test_sigkill__during_scim_generations_and_reads__integrity_ok_and_only_the_newest_token_accepted(
    live_server, db_path
):
    """Spec 4.5 and 3: generating a SCIM token revokes every earlier one, and a generation
    that answered 200 is durable (README "Storage and durability"), even when the process is
    SIGKILLed in the middle of concurrent generations.

    The order checked is the real-time one: a token whose 200 was read before another
    generation was even sent must be revoked. (Two generations in flight at once may commit
    in one order and reach their clients in the other, so "every token but the last received"
    is not a promise any server can keep; "at most one accepted" and "superseded ones
    rejected" are.)
    """
    # Given: a server under 8 clients generating SCIM tokens and 4 reading 4.1, 4.3, 4.4
    admin = new_admin_token()
    server = live_server(env={"FLAGADMIN_ADMIN_TOKEN": admin})
    load = Load(server.port, admin)
    load.wait_for(generations=60, reads=30, timeout=15)
    # When: the server is killed with SIGKILL in the middle of it, then restarted
    server.process.kill()
    server.process.wait(10)
    load.finish()
    restarted = live_server(env={"FLAGADMIN_ADMIN_TOKEN": admin})
    # Then: everything answered before the kill was a 200
    assert len(load.received) >= 20 and len(load.read_statuses) >= 10, "too little load before the kill"
    assert set(load.generate_statuses) == {200} and set(load.read_statuses) == {200}
    # the database is sound, with exactly one active SCIM token
    assert pragma(db_path, "integrity_check") == "ok"
    assert active_scim_tokens(db_path) == 1
    # every token that reached its client is stored (a 200 is durable)
    conn = sqlite3.connect(db_path)
    stored = {row[0] for row in conn.execute("SELECT digest FROM scim_tokens")}
    conn.close()
    assert {digest(token) for _, _, token in load.received} <= stored
    # at most one received token is accepted, and never one superseded by a later generation
    accepted = {
        token
        for _, _, token in load.received
        if status_of(restarted.port, "GET", SCIM, {"Authorization": f"Bearer {token}"}) == 200
    }
    assert len(accepted) <= 1
    newest_sent = max(sent for sent, _, _ in load.received)
    superseded = {token for _, received, token in load.received if received < newest_sent}
    assert not accepted & superseded
    assert len(superseded) >= len(load.received) - load.generators


# --- 2. A seed load killed halfway --------------------------------------------------------


def wal_frames(wal: Path) -> tuple[int, int]:
    """Return (frames, commit frames) of the WAL file: a commit frame ends a transaction."""
    with wal.open("rb") as f:
        header = f.read(32)
        if len(header) < 32:
            return 0, 0
        page_size = struct.unpack(">I", header[8:12])[0]
        salts = header[16:24]
        frames = commits = 0
        while True:
            frame = f.read(24)
            if len(frame) < 24 or frame[8:16] != salts:
                return frames, commits
            frames += 1
            commits += struct.unpack(">I", frame[4:8])[0] != 0
            f.seek(page_size, os.SEEK_CUR)


def big_seed_document(path: Path, events: int, detail_bytes: int) -> None:
    """A valid seed document of ``events`` integration events of integration 1 of the demo."""
    pad = "x" * detail_bytes
    document = {
        "integrationEvents": [
            {
                "integrationId": 1,
                "createdAt": "2026-11-22T01:00:00.000Z",
                "state": "success",
                "stateDetails": f"delivered {i}",
                "event": {
                    "id": 100_000 + i,
                    "createdAt": "2026-11-22T01:00:00.000Z",
                    "type": "feature-updated",
                    "createdBy": "robustness-test",
                },
                "details": {"n": i, "body": pad},
            }
            for i in range(events)
        ]
    }
    path.write_bytes(orjson.dumps(document))


def test_seed__sigkill_halfway_through_the_write__database_as_before(db_path, tmp_path):
    """README "Seed documents": one seed call is one transaction. A load killed in the middle of
    its write leaves the database exactly as it was."""
    # Given: the demo database, and a valid seed document of about 120 MB
    big = tmp_path / "big.json"
    big_seed_document(big, events=6000, detail_bytes=20_000)
    counts, before = table_counts(db_path), fingerprint(db_path)
    wal = Path(f"{db_path}-wal")
    # When: `flagadmin seed` is SIGKILLed once its transaction has written 24 MB to the WAL
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from flagadmin.app import main; main()",
            "seed",
            str(big),
            "--db",
            str(db_path),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 60
    while process.poll() is None and time.monotonic() < deadline:
        if wal.exists() and wal.stat().st_size >= 24 * 1024 * 1024:
            process.kill()
            break
        time.sleep(0.002)
    output = process.communicate(timeout=30)[0].decode()
    # Then: the kill landed mid-write: before seed finished, after its transaction had written
    # frames to the WAL (so the document had passed validation, which comes before any write)
    assert process.returncode == -9 and "Loaded" not in output, f"seed finished before the kill: {output}"
    frames, commits = wal_frames(wal)
    assert frames > 0, "the kill came before the write began"
    # and no frame of the WAL commits a transaction: nothing of the load was committed
    assert commits == 0, f"{commits} commit frames among {frames}: part of the load was committed"
    # and the database is sound and exactly as before
    assert pragma(db_path, "integrity_check") == "ok"
    assert table_counts(db_path) == counts
    assert fingerprint(db_path) == before


def test_connect__every_connection__wal_and_synchronous_full(db_path):
    """README "Storage and durability": what makes a 200 durable beyond a process crash (which
    the SIGKILL tests above cover) is WAL plus synchronous=FULL on every connection."""
    db = store_db.connect(db_path)
    try:
        assert db.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert db.conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    finally:
        db.close()


# --- 3. Schema versions -------------------------------------------------------------------


ADD_NICKNAME = "ALTER TABLE users ADD COLUMN nickname TEXT;\nUPDATE users SET nickname = 'n-' || username;\n"


def columns(path: Path, table: str) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        return [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
    finally:
        conn.close()


CURRENT = store_db.SCHEMA_VERSION
NEXT = CURRENT + 1


def test_ensure_schema__migration_to_next_version_succeeds__upgraded_and_data_intact(db_path, monkeypatch):
    # Given: a database at the current version with the demo data, and code one version ahead
    counts = table_counts(db_path)
    monkeypatch.setattr(store_db, "SCHEMA_VERSION", NEXT)
    monkeypatch.setattr(store_db, "MIGRATIONS", (*store_db.MIGRATIONS, ADD_NICKNAME))
    # When
    found = store_db.ensure_schema(db_path)
    # Then: upgraded, the migration's change is there, and nothing else changed
    assert found == CURRENT
    assert pragma(db_path, "user_version") == NEXT
    assert "nickname" in columns(db_path, "users")
    conn = sqlite3.connect(db_path)
    assert conn.execute("SELECT nickname FROM users WHERE username = 'alice'").fetchone() == ("n-alice",)
    conn.close()
    assert table_counts(db_path) == counts
    assert pragma(db_path, "integrity_check") == "ok"
    # and a second run is harmless
    assert store_db.ensure_schema(db_path) == NEXT


def test_ensure_schema__migration_fails_halfway__old_version_and_nothing_of_it_left(db_path, monkeypatch):
    """The upgrade runs in one transaction: the statements that succeeded before the failing
    one are rolled back with it."""
    # Given: a migration whose fourth statement fails, after a CREATE, an ALTER and an UPDATE
    before = fingerprint(db_path)
    monkeypatch.setattr(store_db, "SCHEMA_VERSION", NEXT)
    monkeypatch.setattr(
        store_db,
        "MIGRATIONS",
        (
            *store_db.MIGRATIONS,
            "CREATE TABLE audit_log (id INTEGER PRIMARY KEY);\n"
            + ADD_NICKNAME
            + "INSERT INTO nowhere VALUES (1);",
        ),
    )
    # When / Then: refused with a message that says the file was not changed
    with pytest.raises(
        store_db.SchemaError, match=rf"from version {CURRENT} to {NEXT} failed \(no such table: nowhere\)"
    ):
        store_db.ensure_schema(db_path)
    assert pragma(db_path, "user_version") == CURRENT
    assert "audit_log" not in table_counts(db_path)
    assert "nickname" not in columns(db_path, "users")
    assert fingerprint(db_path) == before
    assert pragma(db_path, "integrity_check") == "ok"


def test_init_db__migration_fails__clean_message_nonzero_exit(invoke, db_path, monkeypatch):
    # Given
    monkeypatch.setattr(store_db, "SCHEMA_VERSION", NEXT)
    monkeypatch.setattr(
        store_db, "MIGRATIONS", (*store_db.MIGRATIONS, "ALTER TABLE nowhere ADD COLUMN x TEXT;")
    )
    # When
    result = invoke("init-db", db=str(db_path))
    # Then: a message, not a traceback
    assert result.exit_code == 1
    assert "failed (no such table: nowhere)" in result.output
    assert "not changed" in result.output
    assert "Traceback" not in result.output
    assert pragma(db_path, "user_version") == CURRENT


def test_ensure_schema__new_file__gets_schema_sql_without_migrations(tmp_path, monkeypatch):
    """A new database is created from schema.sql, the current schema; the migrations, which
    change existing tables, are for existing databases only."""
    # Given: code one version ahead whose migration alters a table
    monkeypatch.setattr(store_db, "SCHEMA_VERSION", NEXT)
    monkeypatch.setattr(store_db, "MIGRATIONS", (*store_db.MIGRATIONS, ADD_NICKNAME))
    path = tmp_path / "new.db"
    # When
    found = store_db.ensure_schema(path)
    # Then
    assert found == 0
    assert pragma(path, "user_version") == NEXT
    assert "users" in table_counts(path)


def test_ensure_schema__version_1_database__upgraded_to_data_version_triggers(db_path):
    """The real 1 -> 2 upgrade: features_project_health replaces features_project, and the
    data_version row and its triggers appear, in one transaction, data intact."""
    # Given: the demo database taken back to version 1's shape
    conn = sqlite3.connect(db_path)
    for (trigger,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall():
        conn.execute(f"DROP TRIGGER {trigger}")
    conn.executescript(
        "DROP INDEX features_project_health;"
        "CREATE INDEX features_project ON features (project_id, archived_at);"
        "DELETE FROM settings WHERE key = 'data_version';"
        "PRAGMA user_version = 1;"
    )
    conn.close()
    counts = table_counts(db_path)
    # When
    found = store_db.ensure_schema(db_path)
    # Then
    assert found == 1
    assert pragma(db_path, "user_version") == CURRENT
    conn = sqlite3.connect(db_path)
    indexes = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    triggers = conn.execute("SELECT count(*) FROM sqlite_master WHERE type = 'trigger'").fetchone()[0]
    version = conn.execute("SELECT value FROM settings WHERE key = 'data_version'").fetchone()[0]
    conn.execute("UPDATE features SET stale = 1 WHERE name = 'dark-mode'")
    bumped = conn.execute("SELECT value FROM settings WHERE key = 'data_version'").fetchone()[0]
    conn.rollback()
    conn.close()
    assert "features_project_health" in indexes and "features_project" not in indexes
    assert triggers == 18
    assert int(bumped) == int(version) + 1
    assert table_counts(db_path) == {**counts, "settings": counts["settings"] + 1}


def test_serve__newer_database__exits_nonzero_with_message_and_file_untouched(db_path):
    # Given: a database written by a newer flagadmin
    conn = sqlite3.connect(db_path)
    conn.execute(f"PRAGMA user_version = {store_db.SCHEMA_VERSION + 1}")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    before = db_path.read_bytes()
    # When
    result = flagadmin("serve", "--db", str(db_path), "--port", "0", timeout=30)
    # Then
    assert result.returncode != 0
    assert "newer" in result.stderr and "not changed" in result.stderr
    assert "Traceback" not in result.stderr
    assert db_path.read_bytes() == before


# --- 4. Online backup ---------------------------------------------------------------------


def test_backup__while_the_server_writes_and_reads__consistent_copy_that_serves(
    live_server, db_path, tmp_path, make_token
):
    """`flagadmin backup` under write load (SCIM generations, spec 4.5) and reads; the copies
    are consistent, and a copy serves all five operations (spec 4.1 to 4.5)."""
    # Given: a personal token for 4.2, and a server under generation and read load
    alice = make_token(user="alice")
    admin = new_admin_token()
    server = live_server(env={"FLAGADMIN_ADMIN_TOKEN": admin})
    load = Load(server.port, admin, generators=4, readers=2, seconds=30)
    load.wait_for(generations=10, reads=10, timeout=15)
    # When: three backups are taken while the load runs
    copies = []
    try:
        for i in range(3):
            before = len(load.received)
            copy = tmp_path / "backups" / f"copy-{i}.db"
            copy.parent.mkdir(exist_ok=True)
            result = flagadmin("backup", str(copy), "--db", str(db_path))
            assert result.returncode == 0, result.stderr
            assert f"Backed up {db_path} to {copy}" in result.stdout
            copies.append(copy)
            load.wait_for(generations=before + 5, timeout=10)  # writes went on around each one
    finally:
        load.finish()
    assert set(load.generate_statuses) == {200} and set(load.read_statuses) == {200}
    # Then: each copy is a single, sound file with one active SCIM token and the demo data
    for copy in copies:
        assert not Path(f"{copy}-wal").exists()
        assert pragma(copy, "integrity_check") == "ok"
        assert pragma(copy, "user_version") == store_db.SCHEMA_VERSION
        assert active_scim_tokens(copy) == 1
        counts = table_counts(copy)
        assert {name: counts[name] for name in DEMO_COUNTS} == DEMO_COUNTS
    # and the last one, restored by serving it, answers the five operations
    restored = LiveServer(copies[-1], env={"FLAGADMIN_ADMIN_TOKEN": admin})
    try:
        as_admin, as_alice = {"Authorization": admin}, {"Authorization": f"Bearer {alice}"}
        assert status_of(restored.port, "GET", "/api/admin/addons/1/events?limit=5", as_admin) == 200
        assert status_of(restored.port, "GET", "/api/admin/personal-dashboard", as_alice) == 200
        assert status_of(restored.port, "GET", "/api/admin/ui-config", as_admin) == 200
        assert status_of(restored.port, "GET", "/api/admin/archive/features", as_admin) == 200
        conn = http.client.HTTPConnection("127.0.0.1", restored.port, timeout=10)
        conn.request("POST", GENERATE, headers=as_admin)
        response = conn.getresponse()
        token = orjson.loads(response.read())["token"]
        conn.close()
        assert response.status == 200
        assert status_of(restored.port, "GET", SCIM, {"Authorization": f"Bearer {token}"}) == 200
    finally:
        restored.stop()


def test_backup__uncommitted_write_in_progress__not_waited_for_and_not_copied(db_path, tmp_path):
    """The copy is the last committed state: a writer holding the write lock neither blocks
    the backup nor leaks its uncommitted rows into it."""
    # Given: a writer in the middle of a transaction
    writer = sqlite3.connect(db_path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("INSERT INTO users (id, username, root_role) VALUES (999, 'uncommitted', 'Viewer')")
    try:
        # When
        started = time.monotonic()
        result = backup(db_path, tmp_path / "copy.db")
        elapsed = time.monotonic() - started
    finally:
        writer.execute("COMMIT")
        writer.close()
    # Then
    assert elapsed < 2
    assert result.schema_version == store_db.SCHEMA_VERSION
    assert table_counts(tmp_path / "copy.db")["users"] == DEMO_COUNTS["users"]
    assert table_counts(db_path)["users"] == DEMO_COUNTS["users"] + 1


def test_backup__existing_destination__refused_unless_force(invoke, db_path, tmp_path):
    # Given: a file where the backup should go
    existing = tmp_path / "existing.db"
    existing.write_bytes(b"keep me")
    # When / Then: refused, the file kept
    refused = invoke("backup", str(existing), db=str(db_path))
    assert refused.exit_code == 1
    assert "already exists" in refused.output and "--force" in refused.output
    assert existing.read_bytes() == b"keep me"
    # When / Then: with --force, replaced by a full copy
    forced = invoke("backup", str(existing), "--force", db=str(db_path))
    assert forced.exit_code == 0, forced.output
    assert table_counts(existing)["users"] == DEMO_COUNTS["users"]
    assert not list(tmp_path.glob(".existing.db.*.tmp"))


def test_backup__missing_database__refused_and_not_created(invoke, tmp_path):
    missing = tmp_path / "missing.db"
    result = invoke("backup", str(tmp_path / "copy.db"), db=str(missing))
    assert result.exit_code == 1
    assert "does not exist" in result.output
    assert not missing.exists()
    assert not (tmp_path / "copy.db").exists()


def test_backup__restore_by_copying_over_a_stopped_database__served_again(db_path, tmp_path):
    """The README's restore steps: stop the server, remove the database's -wal and -shm, copy
    the backup over the database file, start the server."""
    # Given: a backup, then a change made after it
    copy = tmp_path / "copy.db"
    backup(db_path, copy)
    conn = sqlite3.connect(db_path)
    conn.execute("DELETE FROM favorite_features")
    conn.commit()
    conn.close()
    # When: restored as the README says
    for suffix in ("-wal", "-shm"):
        Path(f"{db_path}{suffix}").unlink(missing_ok=True)
    shutil.copyfile(copy, db_path)
    # Then: the data is back, and the server serves it
    assert table_counts(db_path)["favorite_features"] == DEMO_COUNTS["favorite_features"]
    admin = new_admin_token()
    server = LiveServer(db_path, env={"FLAGADMIN_ADMIN_TOKEN": admin})
    try:
        assert status_of(server.port, "GET", "/api/admin/ui-config", {"Authorization": admin}) == 200
    finally:
        server.stop()
