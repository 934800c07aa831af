"""Helpers shared by the tests: headers, a clock moved by hand, the command line as a process,
and a real ``flagadmin serve`` on 127.0.0.1 with a ``request()`` method."""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

from flagadmin.store import connect, scim_tokens
from flagadmin.timestamps import Clock

#: How to run this interpreter's ``flagadmin`` command line.
FLAGADMIN = [sys.executable, "-c", "from flagadmin.cli import main; main()"]


#: The engine the session runs on (``--engine``), set by ``conftest.pytest_configure`` before
#: any test module is imported.
ENGINE = "sqlite"


def examples(count: int) -> int:
    """How many examples a generated-input run (hypothesis, schemathesis) makes: ``count`` on
    SQLite; on PostgreSQL a quarter of it, at least 10. The input handling is the same on both
    engines and is searched in full on SQLite; on PostgreSQL the run looks for what the storage
    answers differently (a value past a column's range, found that way once)."""
    return count if ENGINE == "sqlite" else max(10, count // 4)


def auth(token: str) -> dict[str, str]:
    """The Authorization header for ``token``."""
    return {"Authorization": token}


def statements_of(conn, work) -> list[str]:
    """Run ``work()``; return the SQL statements it ran on ``conn`` (its trace), in order."""
    traced: list[str] = []
    conn.trace(traced.append)
    try:
        work()
    finally:
        conn.trace(None)
    return traced


def wait_until(check, timeout: float = 10.0, every: float = 0.02, explain=None):
    """Call ``check()`` every ``every`` seconds until it returns something truthy; return that.
    What a test waits on when another thread or process is doing the work: the condition
    itself, never a fixed sleep. ``timeout`` (s) only stops a wait that would never end; make
    it generous, since a slow machine only makes the wait longer.

    :raise AssertionError: ``check()`` stayed falsy for ``timeout`` seconds; its message ends
        with what ``explain()`` returns then, when given.
    """
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() >= deadline:
            said = "" if explain is None else f": {explain()!r}"
            raise AssertionError(f"not reached within {timeout} s{said}")
        time.sleep(every)


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def flagadmin(
    *args: str, timeout: float = 60, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """Run the ``flagadmin`` command line of this interpreter's installation."""
    return subprocess.run(
        [*FLAGADMIN, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


class ManualClock(Clock):
    """A clock that stands still until the test moves it with :meth:`advance`."""

    def __init__(self, start: datetime | None = None):
        self._now = start or datetime.now(UTC)
        self._monotonic = 1000.0

    def now(self) -> datetime:
        return self._now

    def time(self) -> float:
        return self._now.timestamp()

    def monotonic(self) -> float:
        return self._monotonic

    def advance(self, seconds: float) -> None:
        """Move both clocks ``seconds`` forward."""
        self._now += timedelta(seconds=seconds)
        self._monotonic += seconds


@dataclass
class Reply:
    """What a live server answered: status, headers (lower-case names) and body bytes."""

    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class LiveServer:
    """A ``flagadmin serve`` process on 127.0.0.1, started and stopped by the test."""

    def __init__(
        self,
        database: str | Path,
        env: dict[str, str] | None = None,
        threads: int = 8,
        args: tuple[str, ...] = (),
        log_dir: Path | None = None,
    ):
        """Serve ``database`` (a SQLite path or a PostgreSQL URL); the server's output goes to
        ``log_dir`` (default: the SQLite file's folder)."""
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        folder = log_dir if log_dir is not None else Path(database).parent
        self.log = folder / f"server-{self.port}.log"
        command = [
            *FLAGADMIN,
            "serve",
            "--db",
            str(database),
            "--port",
            str(self.port),
            "--threads",
            str(threads),
        ]
        self.process = subprocess.Popen(
            [*command, *args],
            env={**os.environ, **(env or {})},
            stdout=self.log.open("wb"),
            stderr=subprocess.STDOUT,
        )
        self.wait_until_up()

    def wait_until_up(self, timeout: float = 20) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited: {self.log.read_text()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("server did not start in time")

    def request(
        self,
        method: str,
        path: str,
        headers: dict[str, str] | None = None,
        body: bytes | None = None,
        timeout: float = 30,
    ) -> Reply:
        """Send one request on a new connection and read the whole answer."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            response = conn.getresponse()
            return Reply(response.status, {k.lower(): v for k, v in response.getheaders()}, response.read())
        finally:
            conn.close()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)


# --- looking into a database file, and loading a live server --------------------------------

#: Row counts of the demo dataset (seed/demo.json).
DEMO_COUNTS = {
    "users": 9,
    "projects": 4,
    "features": 40,
    "favorite_features": 17,
    "integrations": 6,
    "integration_events": 324,
}

GENERATE = "/api/admin/scim-settings/generate-new-token"
SCIM = "/scim/v2/ServiceProviderConfig"
READS = ("/api/admin/ui-config", "/api/admin/addons/1/events", "/api/admin/archive/features")


def table_names(conn) -> list[str]:
    """The tables of the database behind a store connection, either engine, sorted."""
    if conn.dialect == "postgresql":
        sql = "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
    else:
        sql = "SELECT name FROM sqlite_master WHERE type = 'table'"
    return sorted(conn.values(sql))


def table_counts(path: str | Path) -> dict[str, int]:
    """Row count of every table of the database at ``path`` (a SQLite file or a PostgreSQL URL)."""
    with connect(path) as conn:
        return {name: conn.value(f'SELECT count(*) FROM "{name}"') for name in table_names(conn)}


#: The views of the SCIM (SCIM); they read the columns users gained in schema version 3.
SCIM_VIEWS = (
    "project_roles",
    "direct_project_roles",
    "granted_project_roles",
    "user_root_roles",
    "group_granted_root_roles",
)


def users_as_in_version_2(conn: sqlite3.Connection) -> None:
    """Give ``users`` its schema version 2 shape (before SCIM): the same rows without
    the directory's columns and indexes. The views that read those columns go first; the
    directory's own tables stay (the upgrade creates them when missing)."""
    for view in SCIM_VIEWS:
        conn.execute(f"DROP VIEW IF EXISTS {view}")
    conn.executescript(
        "CREATE TABLE users_v2 (id INTEGER PRIMARY KEY, username TEXT NOT NULL UNIQUE, name TEXT,"
        " email TEXT, image_url TEXT,"
        " root_role TEXT NOT NULL CHECK (root_role IN ('Admin', 'Editor', 'Viewer')));"
        "INSERT INTO users_v2 SELECT id, username, name, email, image_url, root_role FROM users;"
        "DROP TABLE users;"
        "ALTER TABLE users_v2 RENAME TO users;"
        "CREATE INDEX users_root_role ON users (root_role);"
    )


#: Statements that give the integration event log its schema version 6 shape (before the
#: schema stored each row's 4.1 item): ``state_details``, ``event`` and ``details`` as text, taken from
#: the stored items, and no ``item``; by engine.
LOG_AS_IN_VERSION_6 = {
    "sqlite": [
        "CREATE TABLE integration_events_v6 (id INTEGER PRIMARY KEY,"
        " integration_id INTEGER NOT NULL REFERENCES integrations (id), seq INTEGER NOT NULL CHECK (seq > 0),"
        " created_at TEXT NOT NULL,"
        " state TEXT NOT NULL CHECK (state IN ('success', 'failed', 'successWithErrors')),"
        " state_details TEXT NOT NULL, event TEXT NOT NULL, details TEXT NOT NULL,"
        " UNIQUE (integration_id, seq))",
        "INSERT INTO integration_events_v6 SELECT id, integration_id, seq, created_at, state,"
        " json_extract(CAST(item AS TEXT), '$.stateDetails'), json_extract(CAST(item AS TEXT), '$.event'),"
        " json_extract(CAST(item AS TEXT), '$.details') FROM integration_events",
        "DROP TABLE integration_events",
        "ALTER TABLE integration_events_v6 RENAME TO integration_events",
    ],
    "postgresql": [
        "ALTER TABLE integration_events ADD COLUMN state_details TEXT, ADD COLUMN event TEXT,"
        " ADD COLUMN details TEXT",
        "UPDATE integration_events SET state_details = convert_from(item, 'UTF8')::json ->> 'stateDetails',"
        " event = (convert_from(item, 'UTF8')::json -> 'event')::text,"
        " details = (convert_from(item, 'UTF8')::json -> 'details')::text",
        "ALTER TABLE integration_events DROP COLUMN item, ALTER COLUMN state_details SET NOT NULL,"
        " ALTER COLUMN event SET NOT NULL, ALTER COLUMN details SET NOT NULL",
    ],
}


#: Statements that give a SQLite file's integration event log its schema version 7 shape
#: (before the log was clustered by integration): rowid ``id``, no ``log_key``, no
#: ``integration_logs``. PostgreSQL's version 7 log is its version 8 log.
LOG_AS_IN_VERSION_7 = [
    "CREATE TABLE integration_events_v7 (id INTEGER PRIMARY KEY,"
    " integration_id INTEGER NOT NULL REFERENCES integrations (id), seq INTEGER NOT NULL CHECK (seq > 0),"
    " created_at TEXT NOT NULL,"
    " state TEXT NOT NULL CHECK (state IN ('success', 'failed', 'successWithErrors')),"
    " item BLOB NOT NULL CHECK (typeof(item) = 'blob'), UNIQUE (integration_id, seq))",
    "INSERT INTO integration_events_v7 SELECT id, integration_id, seq, created_at, state, item"
    " FROM integration_events ORDER BY id",
    "DROP TABLE integration_events",
    "DROP TABLE integration_logs",
    "ALTER TABLE integration_events_v7 RENAME TO integration_events",
]


#: Statements that give a database the archive of schema version 8 and before, per engine:
#: no ``features.archived_item`` (so none of the triggers that write it, nor the view and the
#: function they read), and ``features_archived`` in place of ``features_archived_order``.
ARCHIVE_AS_IN_VERSION_8 = {
    "sqlite": [
        *(
            f"DROP TRIGGER IF EXISTS {trigger}"
            for trigger in (
                "features_insert_archived_item",
                "features_update_archived_item",
                "feature_environments_insert_archived_item",
                "feature_environments_update_archived_item",
                "feature_environments_delete_archived_item",
            )
        ),
        "DROP VIEW IF EXISTS archived_feature_json",
        "DROP INDEX IF EXISTS features_archived_order",
        "CREATE INDEX IF NOT EXISTS features_archived ON features (archived_at)"
        " WHERE archived_at IS NOT NULL",
        "ALTER TABLE features DROP COLUMN archived_item",
    ],
    "postgresql": [
        "DROP TRIGGER IF EXISTS features_insert_archived_item ON features",
        "DROP TRIGGER IF EXISTS features_update_archived_item ON features",
        *(
            f"DROP TRIGGER IF EXISTS feature_environments_{event}_archived_item ON feature_environments"
            for event in ("insert", "update", "delete")
        ),
        "DROP VIEW IF EXISTS archived_feature_json",
        "DROP FUNCTION IF EXISTS flagadmin_archived_item(features)",
        "DROP INDEX IF EXISTS features_archived_order",
        "CREATE INDEX IF NOT EXISTS features_archived ON features (archived_at)"
        " WHERE archived_at IS NOT NULL",
        "ALTER TABLE features DROP COLUMN archived_item",
    ],
}


def log_as_in_version_6(conn: sqlite3.Connection) -> None:
    """Give a SQLite file's ``integration_events`` its schema version 6 shape
    (:data:`LOG_AS_IN_VERSION_6`), and its archive that of version 8
    (:data:`ARCHIVE_AS_IN_VERSION_8`): what every file of version 6 or older has."""
    for statement in LOG_AS_IN_VERSION_6["sqlite"] + ARCHIVE_AS_IN_VERSION_8["sqlite"]:
        conn.execute(statement)
    conn.commit()


def fingerprint(path: str | Path) -> str:
    """SHA-256 of the database's contents: on SQLite its SQL dump (schema included), on
    PostgreSQL every row of every table in a fixed order. Equal fingerprints, equal contents."""
    from flagadmin.store import is_postgresql

    if not is_postgresql(path):
        conn = sqlite3.connect(path)
        try:
            return hashlib.sha256("\n".join(conn.iterdump()).encode()).hexdigest()
        finally:
            conn.close()
    digest = hashlib.sha256()
    with connect(path) as conn:
        for name in table_names(conn):
            rows = sorted(repr(sorted(row.items())) for row in conn.all(f'SELECT * FROM "{name}"'))
            digest.update(f"{name}\n".encode() + "\n".join(rows).encode())
    return digest.hexdigest()


def pragma(path: Path, name: str):
    conn = sqlite3.connect(path)
    try:
        rows = [r[0] for r in conn.execute(f"PRAGMA {name}")]
    finally:
        conn.close()
    return rows[0] if len(rows) == 1 else rows


def active_scim_tokens(path: Path) -> int:
    with connect(path) as conn:
        return scim_tokens.active_count(conn)


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
