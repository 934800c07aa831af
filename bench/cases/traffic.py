"""traffic: performance under real traffic, against the ceilings answering the same bytes.

``python -m bench traffic`` (``writes`` and ``mixed`` run one phase of it) runs, on fresh
servers (flagadmin pinned to core 0, wrk ``-t1`` pinned to core 1, ``--seconds`` per measurement
after warm-up), each phase against flagadmin and against the Flask and WSGI ceilings
(:func:`lib.serve_ceiling` in ``--index`` mode: the answers flagadmin gave to the same requests,
chosen per request); the report gives flagadmin's figures as ratios to the Flask ceiling's:

- ``reads``, on the database as built (``--db``, untouched): 4.1 at a random offset per request
  over the whole log of integration 1 (``lua/random_offset.lua``); 4.2 for distinct users in
  rotation (``lua/rotate_tokens.lua``, the tokens of :func:`lib.ensure_user_tokens`); the first
  request of each user on a fresh server (each token once, one connection), after ``heavy``'s
  first request, the very first the server answers; token checks for the distinct users (4.3,
  whose answer is cached, with the tokens rotating); 4.4 on a small install of about 1,000
  archived flags (``--install-db``, scale 0.02), whole and gzip;
- on a working copy of each database (writes never touch the originals): ``mixed``, reads with
  writes and gzip (``lua/mixed.lua``); ``after-write``, 4.4 right after a write (archive or create
  a flag, then one whole 4.4; a sequential client), on the small install and at ``--db``'s size;
  ``writes`` (``lua/writes.lua``: flag create, flag archive, SCIM user create, SCIM group PATCH,
  SCIM token generation), each with 0, 1 and 5 enabled webhook configurations taking every event
  type and delivering to a receiver process, at ``--connections`` and at one connection (the
  latency of one write with nothing queued before it). Every load records the servers' CPU
  per request (``cpu_us`` in traffic.json).

A SQLite file is read through before each flagadmin server starts on it (:func:`lib.read_through`):
this VM drops its page cache within minutes, and a page that is not in it is a disk read.

With ``--db postgresql://...`` the same phases run on SQLite (``--sqlite``), on PostgreSQL with
one process and with two, with ratios to SQLite, and no ceilings; ``--setups`` picks some of the
three (``sqlite,postgresql,postgresql-x2``; the first is the base of the ratios).

With ``--reference http://127.0.0.1:PORT`` the writes phase also drives a running reference
server (started by hand on core 0) with the same script and loads (flag create and archive), in
turn with flagadmin in each round (:func:`reference_writes`).

Results: ``<out>/traffic.json`` (every figure of every round) and ``<out>/traffic.md``. This
module is longer than 400 lines because it holds five phases, their set-up of working copies
and receivers, and their report.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import secrets
import shutil
import statistics
import subprocess
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from bench import lib
from flagadmin.spec import EVENT_TYPES
from flagadmin.store import connect, is_postgresql, schema
from flagadmin.store import environments as store_environments
from flagadmin.store import integrations as store_integrations
from flagadmin.timestamps import now_rfc3339

DASHBOARD = "/api/admin/personal-dashboard"
UI_CONFIG = "/api/admin/ui-config"
ARCHIVE = "/api/admin/archive/features"
NEW_SCIM_TOKEN = "/api/admin/scim-settings/generate-new-token"
LIMIT = 50
#: The small install of the 4.4 target: scale 0.02 has 1,000 archived flags (about 400 KB).
INSTALL_SCALE = 0.02
#: Shares of the reads in the mixed case (percent), and of 4.1 reads on the first ten pages.
MIX_WEIGHTS = "4.3=45,4.2=30,4.1=20,4.4=5"
MIX_FIRST_PAGES = 50
#: The mixed case's second window on the same server (the first is ``mixed``).
MIX_SECOND = "mixed, second window"
WRITE_EVERY = 100
TOKEN_EVERY = 1000
#: The writes and how many enabled webhook configurations match each.
WRITE_KINDS = ("flag-create", "flag-archive", "scim-user-create", "scim-group-patch", "scim-token")
INTEGRATION_COUNTS = (0, 1, 5)
#: Project of the flags the writes create and archive (made in the working copies).
WRITE_PROJECT = "traffic"
#: The description of the receivers' webhook configurations (:func:`prepare_work`), then a number.
RECEIVER_DESCRIPTION = "traffic receiver"
#: Writes per second the supplies (flags to archive, group members to add) are sized for.
SUPPLY_RATE = 4000
#: Writes of each kind made on a fresh server before the measured runs.
WRITE_WARM_UP = 50
SETUP_COLUMNS = ("flagadmin", "flask", "wsgi")
#: The writes of ``--reference``: the two whose target rates are "ten times the reference
#: server" of, on paths both servers share (the reference's open-source edition has no SCIM).
REFERENCE_KINDS = ("flag-create", "flag-archive")
#: Description of the webhook configurations the runs make on the reference server: a run finds
#: its own by it, and touches no others.
REFERENCE_ADDON = "flagadmin bench/traffic.py receiver"
#: Seconds a change of the reference server's webhook configurations takes to be seen: it keeps
#: its list of enabled ones for a minute before reading it again (no event on a change clears it).
REFERENCE_ADDON_CACHE_S = 61
#: Archives per second the reference's supplies are sized for: they are made through its own
#: create path, at its create rate (77 to 109 a second here), so they are sized near what it
#: archives (151 to 198 a second here, 2026-11-27; bench/RESULTS.md, thirteenth section). A run
#: that outpaces its supply shows 404s in the errors column.
REFERENCE_SUPPLY_RATE = 400


# --- loads and how they run ------------------------------------------------------------------


@dataclass
class Load:
    """One wrk run: a script of bench/, its environment, connections, the URL wrk is given, and
    ``once``: the number of responses after which the script stops wrk (then ``duration`` is a
    bound), or None for a timed run."""

    name: str
    script: str
    env: dict[str, str]
    connections: int
    path: str
    once: int | None = None
    method: str = "GET"
    duration: int | None = None  # None: --duration
    split: bool = True  # False: only the first process is driven (one token, once)
    #: Environment made just before the run, over ``env`` (a SCIM token: every 4.5 of an
    #: earlier run on the same server revoked the one before).
    fresh_env: Callable[[], dict[str, str]] | None = None


@dataclass
class Case:
    """Loads run in order on the same fresh server(s), after ``warm`` requests (method, path,
    Authorization). ``database``: ``main`` or ``install``, as built or (``work``) a working
    copy."""

    name: str
    database: str
    loads: list[Load]
    warm: list[tuple[str, str, str]] = field(default_factory=list)
    work: bool = False


@dataclass
class Setup:
    """What serves a case: flagadmin on ``target`` (a SQLite path or a PostgreSQL URL) with one
    process per CPU of ``cpus``, or a ceiling (``flask``/``wsgi``) answering from an index."""

    label: str
    kind: str  # flagadmin, flask, wsgi, reference (--reference: the writes phase only)
    cpus: tuple[str, ...] = ("0",)


@dataclass
class Remote:
    """A server this run does not start (``--reference``): wrk and the clients reach it on
    127.0.0.1 at ``port``, as they reach the servers they start."""

    port: int


def loopback_port(url: str) -> int:
    """The port of an ``http://127.0.0.1:PORT`` (or ``localhost``) URL.

    :raise ValueError: another scheme or host, or no port: the benchmarks' load never leaves
        the machine.
    """
    parts = urlsplit(url)
    if parts.scheme != "http" or parts.hostname not in ("127.0.0.1", "localhost") or not parts.port:
        raise ValueError(f"{url!r}: give http://127.0.0.1:PORT (the load stays on this machine)")
    return parts.port


#: The setups of a run with a postgresql:// ``--db`` (``--setups``), by their option names.
ENGINE_SETUPS = {
    "sqlite": Setup("sqlite", "flagadmin"),
    "postgresql": Setup("postgresql", "flagadmin"),
    "postgresql-x2": Setup("postgresql x2", "flagadmin", ("0", "1")),
}


def _engine(setup: Setup) -> str:
    """The engine a setup's flagadmin runs on (a ceiling's: ``"sqlite"``, whose files it reads)."""
    return "postgresql" if setup.label.startswith("postgresql") else "sqlite"


class Traffic:
    """The run's shared state: options, databases, tokens, wrk, the receiver, logs."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.out: Path = args.out
        self.wrk = lib.ensure_wrk()
        self.server_log = self.out / "traffic-servers.log"
        self.wrk_log = self.out / "traffic-wrk.log"
        self.files = self.out / "traffic-files"
        self.files.mkdir(parents=True, exist_ok=True)
        self.receiver_port = lib.free_port()
        self.meta: dict[str, dict] = {}
        self.users: dict[str, list[dict]] = {}
        #: --reference's server, and how many webhook configurations of this run it has
        #: (None: not yet looked at)
        self.reference = Remote(loopback_port(args.reference)) if args.reference else None
        self.reference_integrations: int | None = None

    # servers

    def flagadmin(self, target: str, cpus: tuple[str, ...]) -> list[lib.Server]:
        """Fresh ``flagadmin serve`` processes on ``target``, one per CPU, each listening."""
        servers = []
        if not target.startswith("postgresql"):
            lib.read_through(target)  # the VM drops its page cache within minutes
        try:
            for cpu in cpus:
                port = lib.free_port()
                command = lib.flagadmin_command(target, port, self.args.threads)
                server = lib.Server(command, port, self.server_log, cpu=cpu)
                servers.append(server)
                server.wait_ready()
        except BaseException:
            for server in servers:
                server.stop()
            raise
        return servers

    def ceiling(self, mode: str, index: Path) -> lib.Server:
        """A fresh ceiling server answering from ``index``."""
        port = lib.free_port()
        command = lib.ceiling_command(mode, port, self.args.threads, index=index)
        server = lib.Server(command, port, self.server_log)
        try:
            server.wait_ready()
        except BaseException:
            server.stop()
            raise
        return server

    @contextmanager
    def serving(self, setup: Setup, target: str, index: Path | None):
        """The servers of ``setup`` (stopped on exit)."""
        servers = (
            self.flagadmin(target, setup.cpus)
            if setup.kind == "flagadmin"
            else [self.ceiling(setup.kind, index)]
        )
        try:
            yield servers
        finally:
            for server in servers:
                server.stop()

    # wrk

    def drive(self, servers: list[lib.Server], load: Load) -> dict:
        """wrk on ``load`` against each server at once, connections split between them (each
        wrk is told its part); figures summed (req/s, requests, errors) or the slower
        process's (latency percentiles)."""
        servers = servers if load.split else servers[:1]
        parts = len(servers)
        # each token once: part i takes items i, i + n, ... (a part with none is not driven)
        shares = [len(range(i, load.once, parts)) if load.once else 0 for i in range(parts)]
        if load.once:
            servers = [s for s, share in zip(servers, shares, strict=True) if share]
        results: list[dict] = [{} for _ in servers]
        failures: list[BaseException] = []
        env = {**load.env, **(load.fresh_env() if load.fresh_env else {})}

        def one(i: int) -> None:
            try:
                results[i] = lib.run_wrk(
                    self.wrk,
                    servers[i].port,
                    [load.path],
                    method=load.method,
                    duration=self.args.once_bound if load.once else (load.duration or self.args.duration),
                    connections=max(1, load.connections // parts),
                    timeout=self.args.timeout,
                    log=self.wrk_log,
                    script=lib.LUA / load.script,
                    env={
                        **env,
                        "BENCH_PART": f"{i} {parts}",
                        "BENCH_ONCE": str(shares[i]),
                    },
                    stop_marker="BENCH_STOP" if load.once else None,
                )
            except BaseException as exc:  # reported below, after the other wrk ended
                failures.append(exc)

        local = [s for s in servers if isinstance(s, lib.Server)]  # not a running reference
        cpu_before = sum(s.cpu_seconds() for s in local)
        threads = [threading.Thread(target=one, args=(i,)) for i in range(len(servers))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if failures:
            raise failures[0]
        cpu = sum(s.cpu_seconds() for s in local) - cpu_before
        if len(results) == 1:
            merged = results[0]
        else:
            merged = {k: sum(r[k] for r in results) for k in ("requests", "rps", "errors", "status", "bytes")}
            merged.update({k: max(r[k] for r in results) for k in ("p50_us", "p90_us", "p99_us", "max_us")})
            merged["per_process_rps"] = [r["rps"] for r in results]
        if local and merged["requests"]:
            # the servers' CPU (every thread, user + system) per request, µs, warm-up excluded
            merged["cpu_us"] = cpu / merged["requests"] * 1e6
        return merged

    def measure(self, case: Case, setup: Setup, target: str, index: Path | None) -> dict:
        """Run ``case`` on fresh servers of ``setup``: warm-up, then each load; figures by load."""
        figures = {}
        with self.serving(setup, target, index) as servers:
            for method, path, auth in case.warm:
                for server in servers:
                    lib.fetch(server.port, path, method, auth)
            for load in case.loads:
                figures[load.name] = self.drive(servers, load)
                if setup.kind == "flagadmin":
                    figures[load.name]["peak_rss_kb"] = max(s.memory()["VmHWM"] for s in servers)
        return figures

    # the receiver of webhook deliveries

    @contextmanager
    def receiver(self):
        """A webhook receiver (answers 200 at once, :func:`lib.serve_receiver`), pinned to wrk's
        core."""
        proc = subprocess.Popen(["taskset", "-c", lib.WRK_CPU, *lib.receiver_command(self.receiver_port)])
        try:
            yield proc
        finally:
            proc.terminate()
            proc.wait(10)


# --- files the scripts read --------------------------------------------------------------------


def write_lines(path: Path, lines: list) -> str:
    """Write ``lines`` one per line; return the path as text (for a script's environment)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{line}\n" for line in lines))
    return str(path)


def tag() -> str:
    """A short name part unique to this run (new flags, users and groups never collide)."""
    return secrets.token_hex(3)


# --- answers for the ceilings ------------------------------------------------------------------


class Index:
    """Answers for a keyed ceiling (:func:`lib.serve_ceiling` ``--index``), fetched from flagadmin."""

    def __init__(self, folder: Path) -> None:
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        self.folder = folder
        self.entries: list[dict] = []

    def fetch(
        self,
        port: int,
        method: str,
        path: str,
        auth: str,
        *,
        gzip: bool = False,
        body: object = None,
        key_query: bool = True,
        key_auth: bool = True,
        expect: tuple[int, ...] = (200,),
    ) -> bytes:
        """Make the request on flagadmin and keep its answer for the same request; with
        ``key_query``/``key_auth`` False the answer serves any query string / token."""
        headers = {"Accept": "application/json", "Authorization": auth}
        if gzip:
            headers["Accept-Encoding"] = "gzip"
        client = lib.Client(port, auth)
        try:
            status, got, payload, _ = client.send(method, path, body, headers)
        finally:
            client.close()
        if status not in expect:
            raise RuntimeError(f"{method} {path} answered {status}: {payload[:300]!r}")
        route, _, query = path.partition("?")
        name = f"{len(self.entries)}.body"
        (self.folder / name).write_bytes(payload)
        kept = [("Content-Type", got.get("content-type", "application/json"))]
        if "content-encoding" in got:
            kept.append(("Content-Encoding", got["content-encoding"]))
        self.entries.append(
            {
                "method": method,
                "path": route,
                "query": query if key_query else None,
                "auth": auth if key_auth else None,
                "gzip": gzip,
                "status": status,
                "headers": kept,
                "body": name,
            }
        )
        return payload

    def save(self) -> Path:
        """Write the index file; return its path."""
        path = self.folder / "index.json"
        path.write_text(json.dumps(self.entries))
        return path

    def sizes(self) -> list[int]:
        """Body sizes of the entries, in order."""
        return [(self.folder / e["body"]).stat().st_size for e in self.entries]


# --- preparing databases -----------------------------------------------------------------------


def copy_database(source: str, dest: str) -> None:
    """Make ``dest`` a copy of ``source``: a SQLite file copied after a checkpoint, or a
    PostgreSQL database created from ``source`` as its template (no session may be open on
    it; the role needs CREATEDB)."""
    if is_postgresql(source):
        import psycopg

        admin = with_database(source, "postgres")
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{database_name(dest)}"')
            conn.execute(f'CREATE DATABASE "{database_name(dest)}" TEMPLATE "{database_name(source)}"')
        return
    with connect(source) as conn:
        conn.pragma("wal_checkpoint(TRUNCATE)")
    for suffix in ("", "-wal", "-shm"):
        Path(f"{dest}{suffix}").unlink(missing_ok=True)
    Path(dest).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, dest)


def database_name(url: str) -> str:
    """The database named by a PostgreSQL URL."""
    return urlsplit(url).path.lstrip("/")


def with_database(url: str, name: str) -> str:
    """``url`` naming database ``name`` instead."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path="/" + name))


def prepare_work(target: str, receiver_port: int) -> list[int]:
    """Ready a working copy for the mixed case and the writes: the install's environments
    (lib.py writes flags' environments only), the project the writes use, the built
    webhook configurations pointed at the receiver, and five more (disabled) taking every
    event type, whose ids are returned: the writes enable 0, 1 or 5 of them."""
    url = json.dumps({"url": f"http://{lib.HOST}:{receiver_port}/hook", "contentType": "application/json"})
    with connect(target) as conn, conn.write("integrations"):
        names = list(conn.values("SELECT DISTINCT name FROM feature_environments ORDER BY name"))
        store_environments.insert_missing(conn, names, now_rfc3339())
        if not conn.value("SELECT count(*) FROM projects WHERE id = ?", [WRITE_PROJECT]):
            conn.run(
                "INSERT INTO projects (id, name, description) VALUES (?, ?, ?)",
                [WRITE_PROJECT, "Traffic", "Flags written by bench/traffic.py"],
            )
        conn.run("UPDATE integrations SET parameters = ?", [url])
        ids = []
        for n in range(max(INTEGRATION_COUNTS)):
            config = {
                "provider": "webhook",
                "description": f"{RECEIVER_DESCRIPTION} {n}",
                "enabled": False,
                "events": list(EVENT_TYPES),
                "parameters": {"url": f"http://{lib.HOST}:{receiver_port}/traffic/{n}"},
            }
            ids.append(store_integrations.insert(conn, config, created_at=now_rfc3339()))
    return ids


def receiver_ids(target: str) -> list[int]:
    """The ids of the receivers' webhook configurations that :func:`prepare_work` added to
    ``target``, in order."""
    with connect(target) as conn:
        sql = "SELECT id FROM integrations WHERE description LIKE ? ORDER BY id"
        return list(conn.values(sql, [RECEIVER_DESCRIPTION + " %"]))


def enable_receivers(target: str, ids: list[int], count: int) -> None:
    """Enable the first ``count`` of the receiver configurations ``ids``, disable the rest."""
    with connect(target) as conn, conn.write():
        for i, number in enumerate(ids):
            conn.run("UPDATE integrations SET enabled = ? WHERE id = ?", [int(i < count), number])


def add_supply(target: str, prefix: str, count: int) -> None:
    """``count`` live flags ``<prefix>-0`` ... in :data:`WRITE_PROJECT`, each with the two
    environments of the built data, for the archive writes (bulk SQL, server stopped)."""
    created = now_rfc3339()
    with connect(target) as conn, conn.write():
        conn.run_many(
            "INSERT INTO features (name, project_id, type, description, created_at) VALUES (?, ?, ?, ?, ?)",
            [(f"{prefix}-{i}", WRITE_PROJECT, "release", "to archive", created) for i in range(count)],
        )
        conn.run_many(
            "INSERT INTO feature_environments (feature_name, name, enabled) VALUES (?, ?, ?)",
            [(f"{prefix}-{i}", env, i % 2) for i in range(count) for env in lib.ENVIRONMENTS],
        )


def remove_supply(target: str, prefix: str) -> int:
    """Delete the flags of a supply that are still live (none was archived: no event names
    them); return how many."""
    pattern = prefix + "-%"
    with connect(target) as conn, conn.write():
        conn.run(
            "DELETE FROM feature_environments WHERE feature_name IN (SELECT name FROM features"
            " WHERE project_id = ? AND name LIKE ? AND archived_at IS NULL)",
            [WRITE_PROJECT, pattern],
        )
        return conn.run(
            "DELETE FROM features WHERE project_id = ? AND name LIKE ? AND archived_at IS NULL",
            [WRITE_PROJECT, pattern],
        )


def unfinished_deliveries(target: str) -> int:
    """Deliveries still pending or in flight."""
    with connect(target) as conn:
        return conn.value(
            "SELECT count(*) FROM integration_deliveries WHERE state IN ('pending', 'in_flight')"
        )


def cancel_deliveries(target: str) -> int:
    """Cancel what the outbox still holds (server stopped), so that no case inherits another's
    deliveries; return how many."""
    with connect(target) as conn, conn.write():
        return conn.run(
            "UPDATE integration_deliveries SET state = 'cancelled', lease_until = NULL, claim = NULL,"
            " finished_at = ? WHERE state IN ('pending', 'in_flight')",
            [now_rfc3339()],
        )


def ensure_tokens_in(target: str, users: list[dict]) -> None:
    """Store the users' tokens in ``target`` (a PostgreSQL copy loaded before they were made)."""
    from flagadmin.store import tokens

    with connect(target) as conn:
        wanted = {tokens.digest(u["token"]): u for u in users}
        have = set(conn.values("SELECT digest FROM api_tokens WHERE name = 'bench traffic'"))
        with conn.write("api_tokens"):
            for found, user in wanted.items():
                if found not in have:
                    tokens.insert_token(
                        conn, user["token"], kind="personal", user_id=user["user_id"], name="bench traffic"
                    )


# --- the cases -----------------------------------------------------------------------------


def read_cases(t: Traffic) -> list[Case]:
    """The reads that get no help from repetition, on the databases as built."""
    meta, users = t.meta["main"], t.users["main"]
    admin, heavy = meta["admin_token"], meta["heavy_token"]
    tokens = write_lines(t.files / "user-tokens.txt", [u["token"] for u in users])
    events = meta["events_per_integration"]["1"]
    c = t.args.connections
    rotate = "rotate_tokens.lua"
    install = t.meta["install"]["admin_token"]
    install_tokens = write_lines(t.files / "install-admin-token.txt", [install])
    return [
        Case(
            "4.1 random offset",
            "main",
            [
                Load(
                    "4.1 random",
                    "random_offset.lua",
                    {"BENCH_AUTH": admin, "BENCH_INTEGRATION": "1", "BENCH_EVENTS": str(events)},
                    c,
                    "/api/admin/addons/1/events",
                )
            ],
            warm=[("GET", "/api/admin/addons/1/events?limit=50&offset=0", admin)] * 2,
        ),
        Case(
            "4.2 distinct users",
            "main",
            [Load("4.2 users", rotate, {"BENCH_PATH": DASHBOARD, "BENCH_TOKENS": tokens}, c, DASHBOARD)],
            warm=[("GET", UI_CONFIG, admin)] * 2,
        ),
        Case(
            "4.2 first request",
            "main",
            [
                Load(
                    "heavy first",
                    rotate,
                    {"BENCH_PATH": DASHBOARD, "BENCH_TOKENS": write_lines(t.files / "heavy.txt", [heavy])},
                    1,
                    DASHBOARD,
                    once=1,
                    split=False,
                ),
                Load(
                    "users first",
                    rotate,
                    {"BENCH_PATH": DASHBOARD, "BENCH_TOKENS": tokens},
                    1,
                    DASHBOARD,
                    once=len(users),
                ),
            ],
        ),
        Case(
            "4.3 distinct tokens",
            "main",
            [Load("4.3 tokens", rotate, {"BENCH_PATH": UI_CONFIG, "BENCH_TOKENS": tokens}, c, UI_CONFIG)],
            warm=[("GET", UI_CONFIG, admin)] * 2,
        ),
        Case(
            "4.4 install",
            "install",
            [
                Load(
                    "4.4 install", rotate, {"BENCH_PATH": ARCHIVE, "BENCH_TOKENS": install_tokens}, c, ARCHIVE
                )
            ],
            warm=[("GET", ARCHIVE, install)] * 2,
        ),
        Case(
            "4.4 install gzip",
            "install",
            [
                Load(
                    "4.4 install gzip",
                    rotate,
                    {"BENCH_PATH": ARCHIVE, "BENCH_TOKENS": install_tokens, "BENCH_GZIP": "1"},
                    c,
                    ARCHIVE,
                )
            ],
            warm=[("GET", ARCHIVE, install)] * 2,
        ),
    ]


def read_index(t: Traffic, case: Case, port: int) -> Index:
    """The ceiling's answers for a read case: the same bytes for the same requests (4.1: one
    page from the middle of the log answers every offset; pages differ in content, not size)."""
    meta, users = t.meta[case.database], t.users["main"]
    index = Index(t.files / "index" / case.name.replace(" ", "-"))
    if case.name.startswith("4.1"):
        middle = meta["events_per_integration"]["1"] // 2 // LIMIT * LIMIT
        path = f"/api/admin/addons/1/events?limit={LIMIT}&offset={middle}"
        index.fetch(port, "GET", path, meta["admin_token"], key_query=False, key_auth=False)
    elif case.name.startswith("4.2"):
        for user in users:
            index.fetch(port, "GET", DASHBOARD, user["token"])
        index.fetch(port, "GET", DASHBOARD, meta["heavy_token"])
    elif case.name.startswith("4.3"):
        index.fetch(port, "GET", UI_CONFIG, meta["admin_token"], key_auth=False)
    else:
        index.fetch(port, "GET", ARCHIVE, meta["admin_token"], gzip="gzip" in case.name, key_auth=False)
    return index


def scim_users(port: int, token: str, run_tag: str, count: int = 5) -> list[str]:
    """Create ``count`` SCIM users through ``/scim/v2/Users``; return their SCIM ids."""
    ids = []
    client = lib.Client(port, f"Bearer {token}")
    try:
        for n in range(count):
            body = {
                "schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"],
                "userName": f"mix-{run_tag}-{n}",
                "name": {"givenName": "Mix", "familyName": f"User {n}"},
                "emails": [{"primary": True, "value": f"mix-{run_tag}-{n}@example.com", "type": "work"}],
                "active": True,
            }
            status, _, payload, _ = client.send("POST", "/scim/v2/Users", body)
            if status != 201:
                raise RuntimeError(f"SCIM user create answered {status}: {payload[:300]!r}")
            ids.append(json.loads(payload)["id"])
    finally:
        client.close()
    return ids


def new_scim_token(target: str) -> str:
    """A new SCIM token stored in ``target`` directly (spec 4.5's effect; no server needed)."""
    from flagadmin.store import scim_tokens

    with connect(target) as conn:
        return scim_tokens.generate(conn)


def mixed_targets(target: str) -> list[dict]:
    """The flags the mixed case updates: ten live flags of the built data (the last by name:
    the 4.4-after-a-write measurement archives the first ones)."""
    with connect(target) as conn:
        return conn.all(
            "SELECT project_id, name FROM features WHERE archived_at IS NULL AND project_id <> ?"
            " ORDER BY name DESC LIMIT 10",
            [WRITE_PROJECT],
        )


def mixed_index(t: Traffic, port: int, admin: str, flags: list[dict], users: list[str]) -> Index:
    """The ceiling's answers to the mixed case, fetched from flagadmin at ``port`` with gzip
    accepted: a 4.1 page (for every offset), ui-config, each user's dashboard, each viewer's
    4.4, a 4.5, and one answer of each write target (ten flags, the SCIM users, the test)."""
    meta, everyone = t.meta["main"], t.users["main"]
    index = Index(t.files / "index" / "mixed")
    middle = meta["events_per_integration"]["1"] // 2 // LIMIT * LIMIT
    page = f"/api/admin/addons/1/events?limit={LIMIT}&offset={middle}"
    index.fetch(port, "GET", page, admin, gzip=True, key_query=False, key_auth=False)
    index.fetch(port, "GET", UI_CONFIG, admin, gzip=True, key_auth=False)
    for user in everyone:
        index.fetch(port, "GET", DASHBOARD, user["token"], gzip=True)
    for user in viewers(everyone):
        index.fetch(port, "GET", ARCHIVE, user["token"], gzip=True)
    scim = json.loads(index.fetch(port, "POST", NEW_SCIM_TOKEN, admin, gzip=True, key_auth=False))["token"]
    for flag in flags:
        index.fetch(
            port,
            "PATCH",
            f"/api/admin/projects/{flag['project_id']}/features/{flag['name']}",
            admin,
            gzip=True,
            body=[{"op": "replace", "path": "/description", "value": f"mix index {tag()}"}],
            key_auth=False,
        )
    for number in users:
        index.fetch(
            port,
            "PATCH",
            f"/scim/v2/Users/{number}",
            f"Bearer {scim}",
            gzip=True,
            body={
                "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
                "Operations": [{"op": "replace", "path": "displayName", "value": f"Mix index {tag()}"}],
            },
            key_auth=False,
            expect=(200, 204),
        )
    index.fetch(port, "POST", "/api/admin/addons/1/test", admin, gzip=True, key_auth=False)
    return index


def viewers(users: list[dict]) -> list[dict]:
    """The users of root role Viewer (all of them if there is none)."""
    return [u for u in users if u["root_role"] == "Viewer"] or users


def mixed_load(t: Traffic, flags: list[dict], users_file: str) -> Load:
    """The mixed case's load (its SCIM token and tag are set per run)."""
    meta, everyone = t.meta["main"], t.users["main"]
    env = {
        "BENCH_AUTH": meta["admin_token"],
        "BENCH_TOKENS": write_lines(t.files / "user-tokens.txt", [u["token"] for u in everyone]),
        "BENCH_VIEWER_TOKENS": write_lines(
            t.files / "viewer-tokens.txt", [u["token"] for u in viewers(everyone)]
        ),
        "BENCH_INTEGRATION": "1",
        "BENCH_EVENTS": str(meta["events_per_integration"]["1"]),
        "BENCH_FIRST_PAGES": str(MIX_FIRST_PAGES),
        "BENCH_WEIGHTS": MIX_WEIGHTS,
        "BENCH_WRITE_EVERY": str(WRITE_EVERY),
        "BENCH_TOKEN_EVERY": str(TOKEN_EVERY),
        "BENCH_FLAGS": write_lines(
            t.files / "mix-flags.txt", [f"{f['project_id']}/{f['name']}" for f in flags]
        ),
        "BENCH_SCIM_USERS": users_file,
        "BENCH_TEST_INTEGRATION": "1",
        "BENCH_GZIP": "1",
    }
    return Load("mixed", "mixed.lua", env, t.args.connections, UI_CONFIG)


def procs_json(port: int, method: str, path: str, auth: str) -> dict:
    """One request (lib.fetch); its JSON answer.

    :raise RuntimeError: a status other than 200.
    """
    status, body, _ = lib.fetch(port, path, method, auth)
    if status != 200:
        raise RuntimeError(f"{method} {path} answered {status}: {body[:300]!r}")
    return json.loads(body)


# --- phases --------------------------------------------------------------------------------


def reads(t: Traffic, setups: list[Setup], targets: dict[str, str]) -> dict:
    """Every read case on every setup, ``--rounds`` times; figures by case, setup, round."""
    cases = read_cases(t)
    indexes: dict[str, Path] = {}
    first = setups[0].label
    if any(s.kind != "flagadmin" for s in setups):
        for case in cases:
            with t.serving(Setup("index", "flagadmin"), targets[f"{first}:{case.database}"], None) as (
                server,
            ):
                index = read_index(t, case, server.port)
            indexes[case.name] = index.save()
    runs: dict = {c.name: {s.label: [] for s in setups} for c in cases}
    for r in range(1, t.args.rounds + 1):
        for case in cases:
            for setup in setups:
                target = targets[f"{setup.label}:{case.database}"] if setup.kind == "flagadmin" else ""
                figures = t.measure(case, setup, target, indexes.get(case.name))
                runs[case.name][setup.label].append(figures)
                show(r, t.args.rounds, case.name, setup.label, figures)
    return {"cases": [case_info(c) for c in cases], "runs": runs, "body_bytes": body_bytes(indexes)}


def body_bytes(indexes: dict[str, Path]) -> dict[str, dict]:
    """Per case: the count, median and largest size of the ceiling's bodies."""
    out = {}
    for name, path in indexes.items():
        sizes = [(path.parent / e["body"]).stat().st_size for e in json.loads(path.read_text())]
        out[name] = {"answers": len(sizes), "median": statistics.median(sizes), "max": max(sizes)}
    return out


def case_info(case: Case) -> dict:
    """What a case is, for the JSON results."""
    return {
        "name": case.name,
        "database": case.database,
        "work_copy": case.work,
        "loads": [
            {
                "name": load.name,
                "script": load.script,
                "connections": load.connections,
                "once": load.once,
                "env": {k: v for k, v in load.env.items() if "TOKEN" not in k and k != "BENCH_AUTH"},
            }
            for load in case.loads
        ],
    }


def show(r: int, rounds: int, case: str, label: str, figures: dict) -> None:
    """One progress line per load."""
    for name, f in figures.items():
        print(
            f"round {r}/{rounds} {case:<22} {label:<16} {name:<18} {f['rps']:9.1f} req/s"
            f"  p50 {f['p50_us'] / 1000:8.2f} ms  p99 {f['p99_us'] / 1000:8.2f} ms  errors {f['errors']}",
            flush=True,
        )


def mixed_window_env(setup: Setup, target: str, r: int) -> dict[str, str]:
    """The environment of one window of the mixed case made when it starts: a run tag, and a
    new SCIM token written to ``target`` (the ceilings take any)."""
    token = new_scim_token(target) if setup.kind == "flagadmin" else "ceiling"
    return {"BENCH_TAG": f"{tag()}-{r}", "BENCH_SCIM_TOKEN": token}


def mixed(t: Traffic, setups: list[Setup], targets: dict[str, str]) -> dict:
    """The mixed case, ``--rounds`` times on every setup (working copies): on each fresh server,
    two windows of ``--duration`` s one after the other, ``mixed`` (the server's first
    traffic: each user's first 4.2 and each Viewer's first 4.4 are built in it) and
    :data:`MIX_SECOND` (the same traffic continued: answers built in the first window and not
    touched by its writes are kept). Before the rounds, on each engine's copy: five SCIM users
    to PATCH; on the first, the ceiling's answers."""
    admin = t.meta["main"]["admin_token"]
    flagadmins = [s for s in setups if s.kind == "flagadmin"]
    flags = mixed_targets(targets[f"{flagadmins[0].label}:work-main"])
    users_files: dict[str, str] = {}
    saved = None
    sizes: list[int] = []
    for setup in flagadmins:
        target = targets[f"{setup.label}:work-main"]
        if target in users_files:
            continue
        with t.serving(Setup("set-up", "flagadmin"), target, None) as (server,):
            made = scim_users(server.port, new_scim_token(target), tag())
            if saved is None and len(flagadmins) < len(setups):
                index = mixed_index(t, server.port, admin, flags, made)
                saved, sizes = index.save(), index.sizes()
        users_files[target] = write_lines(t.files / f"mix-scim-users-{len(users_files)}.txt", made)
    runs: dict = {s.label: [] for s in setups}
    for r in range(1, t.args.rounds + 1):
        for setup in setups:
            target = targets.get(f"{setup.label}:work-main", "")
            load = mixed_load(t, flags, users_files.get(target) or next(iter(users_files.values())))
            # each window starts with a SCIM token of its own (the script follows the 4.5s it
            # sends, and the first window's 4.5s revoked the token it started with)
            load.fresh_env = partial(mixed_window_env, setup, target, r)
            second = replace(load, name=MIX_SECOND)
            case = Case("mixed", "main", [load, second], warm=[("GET", UI_CONFIG, admin)] * 2, work=True)
            figures = t.measure(case, setup, target, saved)
            runs[setup.label].append(figures)
            show(r, t.args.rounds, "mixed", setup.label, figures)
            if setup.kind == "flagadmin":
                cancel_deliveries(target)
    return {
        "case": case_info(case),
        "runs": runs,
        "answers": len(sizes),
        "body_bytes_median": statistics.median(sizes) if sizes else None,
        "weights": MIX_WEIGHTS,
        "first_pages_percent": MIX_FIRST_PAGES,
        "write_every": WRITE_EVERY,
        "token_every": TOKEN_EVERY,
    }


def after_write(t: Traffic, label: str, target: str, database: str, cpus: tuple[str, ...]) -> dict:
    """4.4 right after a write, with a sequential client pinned to wrk's core on one
    keep-alive connection: ``--after-write-rounds`` times, archive a live flag then fetch 4.4
    whole (admin token), create a flag then fetch it, and fetch it with nothing written; then
    the same bytes from the Flask ceiling, as many times. Milliseconds to the last byte."""
    admin = t.meta[database]["admin_token"]
    rounds = t.args.after_write_rounds
    with connect(target) as conn:
        live = conn.all(
            "SELECT project_id, name FROM features WHERE archived_at IS NULL AND project_id <> ?"
            " ORDER BY name LIMIT ?",
            [WRITE_PROJECT, rounds],
        )
    timings: dict[str, list[float]] = {"after archive": [], "after create": [], "nothing written": []}
    body = b""
    cpus_before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {int(lib.WRK_CPU)})
    try:
        with t.serving(Setup(label, "flagadmin", cpus[:1]), target, None) as (server,):
            client = lib.Client(server.port, admin)
            try:
                for _ in range(2):
                    client.send("GET", ARCHIVE)
                for flag in live:
                    feature = f"/api/admin/projects/{flag['project_id']}/features"
                    status, _, payload, _ = client.send("DELETE", f"{feature}/{flag['name']}")
                    if status != 202:
                        raise RuntimeError(f"archive answered {status}: {payload[:300]!r}")
                    status, _, body, took = client.send("GET", ARCHIVE)
                    timings["after archive"].append(took)
                    status, _, payload, _ = client.send(
                        "POST", feature, {"name": f"aw-{tag()}", "type": "release"}
                    )
                    if status != 201:
                        raise RuntimeError(f"create answered {status}: {payload[:300]!r}")
                    timings["after create"].append(client.send("GET", ARCHIVE)[3])
                    timings["nothing written"].append(client.send("GET", ARCHIVE)[3])
            finally:
                client.close()
        index = Index(t.files / "index" / f"after-write-{database}")
        (index.folder / "0.body").write_bytes(body)
        index.entries.append(
            {
                "method": "GET",
                "path": ARCHIVE,
                "query": None,
                "auth": None,
                "gzip": False,
                "status": 200,
                "headers": [["Content-Type", "application/json"]],
                "body": "0.body",
            }
        )
        ceiling = []
        if t.args.ceilings:
            with t.serving(Setup("flask", "flask"), "", index.save()) as (server,):
                client = lib.Client(server.port, admin)
                try:
                    client.send("GET", ARCHIVE)
                    ceiling = [client.send("GET", ARCHIVE)[3] for _ in range(len(live))]
                finally:
                    client.close()
    finally:
        os.sched_setaffinity(0, cpus_before)
    result = {k: ms(v) for k, v in timings.items()}
    result["flask ceiling"] = ms(ceiling)
    result["body_bytes"] = len(body)
    result["rounds"] = len(live)
    return result


def ms(values: list[float]) -> dict:
    """p50, p99 (nearest rank) and count of durations in seconds, as milliseconds."""
    if not values:
        return {"n": 0}
    ordered = sorted(values)
    return {
        "n": len(values),
        "p50": round(statistics.median(ordered) * 1000, 3),
        "p99": round(ordered[min(len(ordered) - 1, math.ceil(0.99 * len(ordered)) - 1)] * 1000, 3),
    }


def write_load(
    t: Traffic,
    kind: str,
    run_tag: str,
    connections: int,
    duration: int,
    auth: str,
    target: str,
    port: int,
    once: int | None = None,
) -> tuple[Load, str | None]:
    """The wrk load of one write ``kind`` for ``duration`` s (or ``once`` writes) and, for the
    archive, the prefix of its supply of flags (added now, server running: bulk SQL in its own
    transaction)."""
    env = {"BENCH_KIND": kind, "BENCH_TAG": f"w{run_tag}", "BENCH_PROJECT": WRITE_PROJECT, "BENCH_AUTH": auth}
    supply = None
    wanted = once or SUPPLY_RATE * duration
    if kind == "flag-archive":
        supply = f"s{run_tag}"
        # wrk calls request() once before the run to check it: that name is never sent
        add_supply(target, supply, wanted + 10)
        env["BENCH_SUPPLY_PREFIX"] = supply
    if kind.startswith("scim-"):
        scim = procs_json(port, "POST", NEW_SCIM_TOKEN, t.meta["main"]["admin_token"])["token"]
        if kind != "scim-token":
            env["BENCH_AUTH"] = f"Bearer {scim}"
    if kind == "scim-group-patch":
        with connect(target) as conn:
            ids = list(conn.values("SELECT id FROM users WHERE deleted_at IS NULL ORDER BY id"))
        groups = []
        needed = math.ceil(wanted / max(1, len(ids)))
        client = lib.Client(port, env["BENCH_AUTH"])
        try:
            for g in range(max(1, needed)):
                body = {
                    "schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"],
                    "displayName": f"g{run_tag}-{g}",
                }
                status, _, payload, _ = client.send("POST", "/scim/v2/Groups", body)
                if status != 201:
                    raise RuntimeError(f"SCIM group create answered {status}: {payload[:300]!r}")
                groups.append(json.loads(payload)["id"])
        finally:
            client.close()
        env["BENCH_USERS"] = write_lines(t.files / f"group-users-{run_tag}.txt", ids)
        env["BENCH_GROUPS"] = write_lines(t.files / f"groups-{run_tag}.txt", groups)
    path = {
        "flag-create": f"/api/admin/projects/{WRITE_PROJECT}/features",
        "flag-archive": f"/api/admin/projects/{WRITE_PROJECT}/features",
        "scim-user-create": "/scim/v2/Users",
        "scim-group-patch": "/scim/v2/Groups",
        "scim-token": NEW_SCIM_TOKEN,
    }[kind]
    return Load(
        kind, "writes.lua", env, connections, path, once=once, method="POST", duration=duration
    ), supply


def drain(t: Traffic, target: str) -> float:
    """Wait until the outbox of ``target`` is empty, at most ``--drain-timeout`` s; the wait."""
    started = time.monotonic()
    while unfinished_deliveries(target) and time.monotonic() - started < t.args.drain_timeout:
        time.sleep(0.2)
    return round(time.monotonic() - started, 2)


def write_loads(t: Traffic) -> tuple[tuple[str, int, int, int | None], ...]:
    """The loads of each write case, in order, on one server: (label, connections, seconds,
    writes or None): :data:`WRITE_WARM_UP` writes, then one connection for
    ``--latency-duration`` s, then ``--connections`` for ``--duration`` s."""
    return (
        ("warm-up", 1, 1, WRITE_WARM_UP),
        ("one connection", 1, t.args.latency_duration, None),
        ("load", t.args.connections, t.args.duration, None),
    )


def flagadmin_writes(
    t: Traffic, setup: Setup, target: str, receivers: list[int], kind: str, count: int, r: int
) -> dict:
    """One write case on a fresh flagadmin server of ``setup`` with ``count`` of ``receivers``
    enabled: :func:`write_loads`, each followed by the wait for the outbox to empty (bounded
    by ``--drain-timeout``; what is left is cancelled once the server has stopped)."""
    admin = t.meta["main"]["admin_token"]
    enable_receivers(target, receivers, count)
    figures: dict = {}
    supplies = []
    with t.serving(setup, target, None) as servers:
        for server in servers:
            lib.fetch(server.port, UI_CONFIG, "GET", admin)
        for label, connections, duration, once in write_loads(t):
            load, supply = write_load(
                t, kind, f"{tag()}{r}", connections, duration, admin, target, servers[0].port, once
            )
            supplies.append(supply)
            figures[label] = t.drive(servers, load)
            # the next run starts with an empty outbox (bounded wait), so that the
            # one-connection latency does not share the core with a backlog
            figures[f"{label} drain_s"] = drain(t, target)
        figures["drain_s"] = figures.pop("load drain_s")
        del figures["warm-up"]
    figures["cancelled"] = cancel_deliveries(target)
    for supply in supplies:
        if supply:
            remove_supply(target, supply)
    return figures


def reference_call(t: Traffic, method: str, path: str, body: dict | None = None) -> dict | None:
    """One request to ``--reference`` with its admin token; the JSON answer (None if empty).

    :raise RuntimeError: a status other than 2xx (its body says why).
    """
    client = lib.Client(t.reference.port, t.args.reference_token)
    try:
        status, _, payload, _ = client.send(method, path, body)
    finally:
        client.close()
    if not 200 <= status < 300:
        raise RuntimeError(f"the reference server answered {method} {path} with {status}: {payload[:300]!r}")
    return json.loads(payload) if payload.strip() else None


def configure_reference(t: Traffic, count: int) -> None:
    """Exactly ``count`` of this run's webhook configurations enabled on the reference server
    (:data:`REFERENCE_ADDON`; made when missing, never deleted: it would go on delivering for
    a deleted one until its cache expires, and the log row of such a delivery fails its
    foreign key), each taking every event type its webhook provider offers and delivering to
    this run's receiver (core 1), as flagadmin's take every event type. After a change, waits
    :data:`REFERENCE_ADDON_CACHE_S` s: the reference reads its configurations once a minute."""
    if t.reference_integrations == count:
        return
    found = reference_call(t, "GET", "/api/admin/addons")
    ours = [a for a in found["addons"] if a.get("description") == REFERENCE_ADDON]
    ours.sort(key=lambda a: a["id"])
    events = next(p["events"] for p in found["providers"] if p["name"] == "webhook")

    def body(i: int, enabled: bool) -> dict:
        return lib.addon_body(
            t.receiver_port, REFERENCE_ADDON, enabled=enabled, events=events, path=f"/reference/{i}"
        )

    changed = False
    for i in range(len(ours), count):
        ours.append(reference_call(t, "POST", "/api/admin/addons", body(i, True)))
        changed = True
    for i, addon in enumerate(ours):
        # each one is rewritten, for this run's receiver port: one enabled before or after
        # changes what the reference does once its cache expires
        reference_call(t, "PUT", f"/api/admin/addons/{addon['id']}", body(i, i < count))
        changed = changed or addon["enabled"] or i < count
    t.reference_integrations = count
    if changed:
        print(f"Reference: {count} webhook configurations; waiting out its cache ...", flush=True)
        time.sleep(REFERENCE_ADDON_CACHE_S)


def reference_supply(t: Traffic, name: str, count: int) -> str:
    """At least ``count`` live flags made through the reference server's own create path
    (``writes.lua``'s flag-create at ``--connections``, stopped after ``count`` answers): the
    archive writes' supply. Returns the prefix that ``writes.lua`` archives them by.

    :raise RuntimeError: a create was refused (above the reference's limit of flags?).
    """
    env = {
        "BENCH_KIND": "flag-create",
        "BENCH_TAG": name,
        "BENCH_PROJECT": t.args.reference_project,
        "BENCH_AUTH": t.args.reference_token,
    }
    path = f"/api/admin/projects/{t.args.reference_project}/features"
    load = Load("supply", "writes.lua", env, t.args.connections, path, once=count, method="POST")
    made = t.drive([t.reference], load)
    if made["errors"]:
        raise RuntimeError(
            f"{made['errors']} of the reference server's creates for a supply failed (a limit of"
            f" flags?); see {t.wrk_log}"
        )
    return f"{name}-0"  # writes.lua names part 0's flags <tag>-0-<m>, m from 1 (as it archives)


def reference_writes(t: Traffic, kind: str, count: int, r: int) -> dict:
    """One write case on ``--reference`` (a running server, not restarted) with ``count``
    webhook configurations (:func:`configure_reference`): the loads of :func:`write_loads` in
    ``--reference-project``, archives from supplies made through its own create path
    (:func:`reference_supply`, sized for :data:`REFERENCE_SUPPLY_RATE`). Its deliveries are its
    own affair: no outbox to wait for."""
    configure_reference(t, count)
    path = f"/api/admin/projects/{t.args.reference_project}/features"
    figures: dict = {}
    for label, connections, duration, once in write_loads(t):
        env = {
            "BENCH_KIND": kind,
            "BENCH_TAG": f"w{tag()}{r}",
            "BENCH_PROJECT": t.args.reference_project,
            "BENCH_AUTH": t.args.reference_token,
        }
        if kind == "flag-archive":
            wanted = (once or REFERENCE_SUPPLY_RATE * duration) + 10
            env["BENCH_SUPPLY_PREFIX"] = reference_supply(t, f"s{tag()}{r}", wanted)
        load = Load(kind, "writes.lua", env, connections, path, once=once, method="POST", duration=duration)
        figures[label] = t.drive([t.reference], load)
    del figures["warm-up"]
    figures["drain_s"] = None
    figures["cancelled"] = 0
    return figures


def writes(t: Traffic, setups: list[Setup], targets: dict[str, str], receivers: dict[str, list[int]]) -> dict:
    """Each write kind with 0, 1 and 5 matching configurations, on every flagadmin setup
    (:func:`flagadmin_writes`) and, with ``--reference``, on the reference server
    (:func:`reference_writes`, :data:`REFERENCE_KINDS` only), round after round: the servers
    measured in turn, so that each round's figures share the VM's speed of the moment."""
    runs: dict = {}
    for r in range(1, t.args.rounds + 1):
        # counts outside kinds: the reference's configurations change once per count
        for count in t.args.integrations:
            for kind in t.args.write_kinds:
                for setup in setups:
                    if setup.kind == "flagadmin":
                        target = targets[f"{setup.label}:work-main"]
                        figures = flagadmin_writes(t, setup, target, receivers[setup.label], kind, count, r)
                    elif setup.kind == "reference" and kind in REFERENCE_KINDS:
                        figures = reference_writes(t, kind, count, r)
                    else:
                        continue
                    key = f"{kind} x{count}"
                    runs.setdefault(key, {}).setdefault(setup.label, []).append(figures)
                    show(
                        r,
                        t.args.rounds,
                        key,
                        setup.label,
                        {k: v for k, v in figures.items() if isinstance(v, dict)},
                    )
    return {"runs": runs, "kinds": list(t.args.write_kinds), "integrations": list(t.args.integrations)}


# --- the command ---------------------------------------------------------------------------


def parse_args(argv: list[str]) -> argparse.Namespace:
    """The command line (see the module's docstring)."""
    p = argparse.ArgumentParser(prog="python -m bench traffic", description=__doc__.splitlines()[0])
    lib.add_common_options(p)
    p.add_argument(
        "--sqlite", type=Path, default=None, help="with a postgresql:// --db: the SQLite file to compare"
    )
    p.add_argument("--scale", type=float, default=1.0, help="scale used when --db (or --sqlite) is built")
    p.add_argument("--install-db", type=Path, default=lib.DATA / f"bench-{INSTALL_SCALE}.db")
    p.add_argument("--work", type=Path, default=lib.DATA / "traffic", help="folder of the working copies")
    p.add_argument("--latency-duration", type=int, default=5, help="seconds of the one-connection writes")
    p.add_argument("--once-bound", type=int, default=600, help="upper bound (s) of a first-requests run")
    p.add_argument("--connections", type=int, default=8)
    p.add_argument("--timeout", type=int, default=60, help="wrk request timeout (s)")
    p.add_argument("--threads", type=int, default=8, help="waitress threads of every server")
    p.add_argument("--users", type=int, default=lib.USER_TOKENS, help="distinct users (tokens)")
    p.add_argument("--ceilings", default="flask,wsgi", help="ceilings to compare with (comma-separated; '')")
    p.add_argument("--after-write-rounds", type=int, default=10)
    p.add_argument("--drain-timeout", type=float, default=120, help="seconds to wait for the outbox")
    p.add_argument(
        "--phases", default="reads,mixed,after-write,writes", help="phases to run (comma-separated)"
    )
    p.add_argument(
        "--write-kinds",
        default=",".join(WRITE_KINDS),
        help=f"the writes phase's kinds (comma-separated, of {', '.join(WRITE_KINDS)})",
    )
    p.add_argument(
        "--integrations",
        default=",".join(map(str, INTEGRATION_COUNTS)),
        help="the writes phase's counts of matching configurations (comma-separated, "
        f"at most {max(INTEGRATION_COUNTS)})",
    )
    p.add_argument(
        "--setups",
        default=",".join(ENGINE_SETUPS),
        help="with a postgresql:// --db, the setups to run (comma-separated, of "
        f"{', '.join(ENGINE_SETUPS)}; the first is the base of the ratios)",
    )
    p.add_argument(
        "--reference",
        metavar="URL",
        default=None,
        help="a running reference server (http://127.0.0.1:PORT, started on core 0 with its"
        " database): the writes phase measures its flag creates and archives too, for the ratio"
        " of the target write rates (ten times the reference's, measured the same way)",
    )
    p.add_argument(
        "--reference-token",
        default=os.environ.get("BENCH_REFERENCE_TOKEN"),
        help="an admin API token of --reference (default: $BENCH_REFERENCE_TOKEN)",
    )
    p.add_argument("--reference-project", default="default", help="--reference's project of the writes")
    args = p.parse_args(argv)
    if args.quick:
        if args.db == p.get_default("db"):
            args.db = str(args.install_db)
        if is_postgresql(args.db) and args.sqlite is None:
            args.sqlite = args.install_db
        args.duration, args.latency_duration, args.rounds = 2, 1, 1
        args.after_write_rounds, args.ceilings, args.drain_timeout = 3, "flask", 3
    args.ceilings = [c for c in args.ceilings.split(",") if c]
    args.phases = [p for p in args.phases.split(",") if p]
    args.setups = [k for k in args.setups.split(",") if k]
    if not args.setups or set(args.setups) - set(ENGINE_SETUPS):
        p.error(f"--setups: one or more of {', '.join(ENGINE_SETUPS)}")
    args.write_kinds = [k for k in args.write_kinds.split(",") if k]
    unknown = sorted(set(args.write_kinds) - set(WRITE_KINDS))
    if unknown:
        p.error(f"--write-kinds: unknown {', '.join(unknown)} (known: {', '.join(WRITE_KINDS)})")
    try:
        args.integrations = [int(n) for n in args.integrations.split(",") if n]
    except ValueError:
        p.error("--integrations: comma-separated whole numbers")
    if any(not 0 <= n <= max(INTEGRATION_COUNTS) for n in args.integrations):
        p.error(f"--integrations: each count from 0 to {max(INTEGRATION_COUNTS)}")
    if args.reference:
        try:
            loopback_port(args.reference)
        except ValueError as exc:
            p.error(f"--reference: {exc}")
        if not args.reference_token:
            p.error("--reference needs --reference-token (or $BENCH_REFERENCE_TOKEN): an admin API token")
    return args


def main(argv: list[str]) -> None:
    """Run the phases and write ``<out>/traffic.json`` and ``traffic.md``; the tree measured is
    a snapshot (:func:`lib.measured_tree`)."""
    args = parse_args(argv)
    tree = lib.measured_tree(args)
    os.environ["FLAGADMIN_INTEGRATIONS_ALLOWED_HOSTS"] = lib.HOST
    started = time.monotonic()
    t = Traffic(args)
    for log in (t.server_log, t.wrk_log):
        log.unlink(missing_ok=True)

    postgresql = is_postgresql(args.db)
    sqlite_main = Path(args.db) if not postgresql else args.sqlite or lib.DATA / "bench.db"
    t.meta["install"] = lib.ensure_database(args.install_db, INSTALL_SCALE, False)
    t.meta["main"] = lib.ensure_database(sqlite_main, args.scale, False)  # --quick: the same file
    t.users["main"] = lib.ensure_user_tokens(sqlite_main, args.users)
    work = args.work
    same = sqlite_main.resolve() == args.install_db.resolve()  # --quick: one small database
    targets = {
        "sqlite:main": str(sqlite_main),
        "sqlite:install": str(args.install_db),
        "sqlite:work-main": str(work / "main.db"),
        "sqlite:work-install": str(work / ("main.db" if same else "install.db")),
    }
    if postgresql:
        targets.update(postgresql_targets(args.db, sqlite_main, args.install_db, t.users["main"]))
        for label in ("postgresql", "postgresql x2"):
            for key in ("main", "install", "work-main", "work-install"):
                targets[f"{label}:{key}"] = targets[f"postgresql:{key}"]
        setups = [ENGINE_SETUPS[name] for name in args.setups]
    else:
        setups = [Setup("flagadmin", "flagadmin")] + [Setup(c, c) for c in args.ceilings]
        targets.update({k.replace("sqlite:", "flagadmin:"): v for k, v in targets.items()})

    results: dict = {
        "command": lib.command_line(),
        **tree,
        "machine": {**lib.machine(), "wrk": lib.wrk_version(t.wrk)},
        "options": {k: str(v) for k, v in vars(args).items()},
        "data": {
            k: {m: v for m, v in meta.items() if not m.endswith("_token")} for k, meta in t.meta.items()
        },
        "users": {
            "count": len(t.users["main"]),
            "roles": {
                r: sum(u["root_role"] == r for u in t.users["main"]) for r in ("Admin", "Editor", "Viewer")
            },
        },
        "setups": [s.label for s in setups],
        "engines": postgresql,
    }
    if t.reference:
        # what it says of itself (4.3's version fields), so that a report names what it measured
        found = reference_call(t, "GET", UI_CONFIG)
        results["reference"] = {
            "url": args.reference,
            "project": args.reference_project,
            "version": found.get("version"),
        }
    with t.receiver():
        if "reads" in args.phases:
            results["reads"] = reads(t, setups, targets)
        if {"mixed", "after-write", "writes"} & set(args.phases):
            # the engines of the setups that run (a working copy is made of each one's databases)
            engines = [e for e in ("sqlite", "postgresql") if any(_engine(s) == e for s in setups)]
            receivers = {}
            for engine in engines:
                receivers[engine] = []
                for key in ("main", "install"):
                    work_copy = targets[f"{engine}:work-{key}"]
                    if key == "install" and work_copy == targets[f"{engine}:work-main"]:
                        continue
                    print(f"Copying the {engine} {key} database to its working copy ...", flush=True)
                    copy_database(targets[f"{engine}:{key}"], work_copy)
                    made = prepare_work(work_copy, t.receiver_port)
                    receivers[engine] = receivers[engine] or made
            receivers = {s.label: receivers[_engine(s)] for s in setups if s.kind == "flagadmin"}
            if "mixed" in args.phases:
                results["mixed"] = mixed(t, setups, targets)
            if "after-write" in args.phases:
                results["after_write"] = {}
                for setup in setups:
                    if setup.kind != "flagadmin" or len(setup.cpus) > 1:
                        continue  # one client, one process: "postgresql x2" would repeat "postgresql"
                    for database in ("install", "main"):
                        key = f"{setup.label}:work-{database}"
                        if database == "main" and same:
                            continue
                        found = after_write(t, setup.label, targets[key], database, setup.cpus)
                        results["after_write"][f"{setup.label} {database}"] = found
                        print(f"4.4 after a write, {setup.label} {database}: {found}", flush=True)
            if "writes" in args.phases:
                reference = [Setup("reference", "reference")] if t.reference else []
                results["writes"] = writes(t, setups + reference, targets, receivers)
    results["run_py_4_5"] = run_py_token_figures(args.out / "reads.json")
    results["seconds"] = round(time.monotonic() - started)
    results["tree_digest_end"] = lib.code_digest(Path(tree["tree"]))
    lib.write_results(args.out, "traffic", results, markdown(results))


def run_py_token_figures(path: Path) -> dict | None:
    """The reads case's 4.5 figures (median p50 and p99 over rounds, ms; its date) from its results
    in the same folder, if any: the "today" of the SCIM token generation target."""
    if not path.exists():
        return None
    found = json.loads(path.read_text())
    runs = found.get("runs", {}).get("4.5", {}).get("flagadmin")
    if not runs:
        return None
    return {
        "p50": statistics.median(r["p50_us"] for r in runs) / 1000,
        "p99": statistics.median(r["p99_us"] for r in runs) / 1000,
        "rps": statistics.median(r["rps"] for r in runs),
        "date": found.get("machine", {}).get("date"),
        "code_digest": found.get("code_digest"),
    }


def postgresql_targets(url: str, sqlite_main: Path, install: Path, users: list[dict]) -> dict[str, str]:
    """The PostgreSQL databases of an engines run: ``url`` (loaded from ``sqlite_main`` when it
    holds no flags, as the reads case does), ``<name>_install`` (created and loaded from the
    install's SQLite file when missing), and the names of their working copies."""
    import psycopg

    name = database_name(url)
    found = {
        "postgresql:main": url,
        "postgresql:install": with_database(url, f"{name}_install"),
        "postgresql:work-main": with_database(url, f"{name}_work"),
        "postgresql:work-install": with_database(url, f"{name}_install_work"),
    }
    with psycopg.connect(with_database(url, "postgres"), autocommit=True) as conn:
        if not conn.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", [database_name(found["postgresql:install"])]
        ).fetchone():
            conn.execute(f'CREATE DATABASE "{database_name(found["postgresql:install"])}"')
    for key, source in (("postgresql:main", sqlite_main), ("postgresql:install", install)):
        schema.ensure_schema(found[key])
        with connect(found[key]) as conn:
            flags = conn.value("SELECT count(*) FROM features")
        if not flags:
            print(f"Loading {source} into {database_name(found[key])} ...", flush=True)
            lib.load_postgresql(source, found[key])
    ensure_tokens_in(found["postgresql:main"], users)
    return found


# --- the report ---------------------------------------------------------------------------------


#: Write kinds that record an event (SCIM token generation records none: no configuration
#: can match it, whatever it takes).
EVENT_WRITES = ("flag-create", "flag-archive", "scim-user-create", "scim-group-patch")
#: Writes per second at 0 integrations that the targets ask for (ten times the reference server).
WRITE_RATES = {"flag-create": 1000, "flag-archive": 1750}


def median(runs: list[dict], load: str, key: str) -> float:
    """Median of ``key`` of ``load`` over rounds (``runs``: one dict of loads per round)."""
    return statistics.median(r[load][key] for r in runs)


#: The mixed case's windows on one server, as this case names them (results of runs before
#: the second window have only the first).
MIX_WINDOWS = ("mixed", "mixed, second window")


def _windows(mixed: dict, setups) -> list[str]:
    """The mixed case's windows (:data:`MIX_WINDOWS`) that every round of ``setups`` measured."""
    return [w for w in MIX_WINDOWS if all(w in run for s in setups for run in mixed["runs"][s])]


def figures(runs: list[dict], load: str) -> dict:
    """Medians of one load over rounds: req/s, p50 and p99 (ms); errors summed."""
    return {
        "rps": median(runs, load, "rps"),
        "p50": median(runs, load, "p50_us") / 1000,
        "p99": median(runs, load, "p99_us") / 1000,
        "errors": sum(r[load]["errors"] for r in runs),
    }


def _table(header: list[str], rows: list[list]) -> list[str]:
    return lib.markdown_table(header, rows)


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b else "-"


def _head(results: dict) -> list[str]:
    m, o = results["machine"], results["options"]
    main, install = results["data"]["main"], results["data"]["install"]
    users = results["users"]
    return [
        "# flagadmin under real traffic",
        "",
        f"- Date: {m['date']}; whole run {results['seconds']} s",
        f"- Command: `{results['command']}`",
        lib.code_line(results),
        f"- Machine: nproc {m['nproc']}, {m['cpu']}, {m['memory_gib']} GiB; Linux {m['kernel']}; "
        f"Python {m['python']}, SQLite {m['sqlite']}, {m['wrk']}{lib.speed_note(m)}",
        f"- Data: scale {main['scale']} ({main['users']:,} users, {main['projects']:,} projects, "
        f"{main['flags']:,} flags, {main['integration_events']:,} integration events, "
        f"{main['events_per_integration']['1']:,} in integration 1); the small install: scale "
        f"{install['scale']} ({install['archived_flags']:,} archived flags)",
        f"- Distinct users: {users['count']:,} personal tokens of project members "
        f"({', '.join(f'{n} {r}' for r, n in users['roles'].items())})",
        f"- Method: fresh server(s) per measurement, flagadmin pinned to core 0 ({o['threads']} "
        f"threads), wrk -t1 on core 1, {o['connections']} connections, {o['duration']} s after "
        f"warm-up; {o['rounds']} round(s); figures are medians over rounds, errors are summed "
        "(connect, read, write, non-2xx, timeouts).",
        *_reference_line(results),
    ]


def _reference_line(results: dict) -> list[str]:
    """The head's line on ``--reference``, when the run measured it."""
    ref = results.get("reference")
    if not ref:
        return []
    return [
        f"- Reference server: version {ref['version']} at {ref['url']} (project `{ref['project']}`), "
        "running before the run and not restarted by it; its writes measured by the same wrk "
        "script, connections and durations as flagadmin's, in turn with them in each round"
    ]


def _reads(results: dict) -> list[str]:
    reads = results.get("reads")
    if not reads:
        return []
    setups = results["setups"]
    lines = ["", "## Reads with no help from repetition", ""]
    rows = []
    engines = results["engines"]
    for case in reads["cases"]:
        if case["name"] == "4.2 first request":
            continue
        runs = reads["runs"][case["name"]]
        for load in case["loads"]:
            f = {s: figures(runs[s], load["name"]) for s in setups}
            first = f[setups[0]]
            row = [load["name"], f"{first['rps']:,.1f}", f"{first['p50']:.2f}", f"{first['p99']:.2f}"]
            if engines:
                for s in setups[1:]:
                    row += [f"{f[s]['rps']:,.1f}", _ratio(f[s]["rps"], first["rps"])]
            else:
                for s in setups[1:]:
                    row += [f"{f[s]['rps']:,.1f}", _ratio(first["rps"], f[s]["rps"])]
            sizes = reads["body_bytes"].get(case["name"])
            row += [sum(x["errors"] for x in f.values()), f"{sizes['median']:,.0f}" if sizes else "-"]
            rows.append(row)
    header = ["case", f"{setups[0]} req/s", "p50 ms", "p99 ms"]
    for s in setups[1:]:
        header += [f"{s} req/s", f"÷ {setups[0]}" if engines else f"÷ {s}"]
    lines += _table([*header, "errors (all)", "median body bytes"], rows)
    first = reads["runs"].get("4.2 first request")
    if first:
        lines += [
            "",
            "First request of each user on a fresh server (one connection, each token once; "
            "`heavy` first, the very first request the server answers):",
            "",
        ]
        rows = []
        for load in ("users first", "heavy first"):
            f = {s: figures(first[s], load) for s in setups}
            row = [load, f"{f[setups[0]]['p50']:.2f}", f"{f[setups[0]]['p99']:.2f}"]
            for s in setups[1:]:
                a, b = (f[s]["p50"], f[setups[0]]["p50"]) if engines else (f[setups[0]]["p50"], f[s]["p50"])
                row += [f"{f[s]['p50']:.2f}", f"{a / b:.1f}x"]
            rows.append(row)
        header = ["requests", f"{setups[0]} p50 ms", "p99 ms"]
        for s in setups[1:]:
            header += [f"{s} p50 ms", f"p50 ÷ {setups[0]}" if engines else f"{setups[0]} p50 ÷ {s}"]
        lines += _table(header, rows)
    return lines


def _mixed(results: dict) -> list[str]:
    mixed = results.get("mixed")
    if not mixed:
        return []
    setups = list(mixed["runs"])
    windows = _windows(mixed, setups)
    lines = [
        "",
        "## Mixed case",
        "",
        f"Reads {mixed['weights']} (percent of the reads; 4.1: {mixed['first_pages_percent']} % on the "
        f"first ten pages, the rest uniform over the log), one 4.5 every {mixed['token_every']} requests, "
        f"one write every {mixed['write_every']} (flag update, SCIM user PATCH, test delivery in turn), "
        f"Accept-Encoding: gzip on every request."
        + (
            " Each fresh server gets two windows of the same traffic, one after the other: the first"
            " is its first traffic (every user's first 4.2 and every Viewer's first 4.4 are built in"
            " it), the second keeps what the first built and its writes did not touch."
            if len(windows) > 1
            else ""
        )
        + (
            f" The ceilings answer {mixed['answers']:,} recorded answers"
            f" (median {mixed['body_bytes_median']:,.0f} bytes)."
            if mixed["answers"]
            else ""
        ),
        "",
    ]
    first = setups[0]
    rows = []
    for window in windows:
        f = {s: figures(mixed["runs"][s], window) for s in setups}
        rows += [
            [
                window,
                s,
                f"{f[s]['rps']:,.1f}",
                f"{f[s]['p50']:.2f}",
                f"{f[s]['p99']:.2f}",
                f[s]["errors"],
                _ratio(f[first]["rps"], f[s]["rps"])
                if not results["engines"]
                else _ratio(f[s]["rps"], f[first]["rps"]),
            ]
            for s in setups
        ]
    lines += _table(
        [
            "window",
            "setup",
            "req/s",
            "p50 ms",
            "p99 ms",
            "errors",
            f"ratio ({first} ÷ it)" if not results["engines"] else f"÷ {first}",
        ],
        rows,
    )
    return lines


def _after_write(results: dict) -> list[str]:
    after = results.get("after_write")
    if not after:
        return []
    lines = [
        "",
        "## 4.4 right after a write",
        "",
        "One keep-alive client on core 1, admin token, whole body; p50 (p99) ms over the rounds.",
        "",
    ]
    rows = []
    for name, a in after.items():
        cells = []
        for key in ("after archive", "after create", "nothing written", "flask ceiling"):
            x = a.get(key, {})
            cells.append(f"{x['p50']:.2f} ({x['p99']:.2f})" if x.get("n") else "-")
        rows.append([name, f"{a['body_bytes']:,}", a["rounds"], *cells])
    lines += _table(
        [
            "database",
            "body bytes",
            "rounds",
            "after archiving a flag",
            "after creating a flag",
            "nothing written",
            "Flask ceiling, same bytes",
        ],
        rows,
    )
    return lines


def _writes(results: dict) -> list[str]:
    writes = results.get("writes")
    if not writes:
        return []
    lines = [
        "",
        "## Writes",
        "",
        "Each kind with 0, 1 and 5 enabled webhook configurations that take every event type "
        "(delivering to a receiver process on core 1): wrk with the connections of the other cases, "
        "then with one connection (the latency of one write with nothing queued: an upper bound of "
        "its transaction), then the wait for the outbox to empty. SCIM token generation records no "
        "event, so no configuration matches it.",
        "",
    ]
    if results.get("reference"):
        lines += [
            "The reference server's rows: its own webhook configurations, taking every event type "
            "its webhook provider offers, delivering to the same receiver; its archives take "
            "flags made through its own create path before each load. Its deliveries are its own "
            "affair (no outbox to wait for).",
            "",
        ]
    rows = []
    cases = {key: (kind, int(count)) for key in writes["runs"] for kind, count in [key.rsplit(" x", 1)]}
    # kinds in the run's order, then counts (the runs go count by count: see traffic.writes)
    for key in sorted(cases, key=lambda k: (writes["kinds"].index(cases[k][0]), cases[k][1])):
        (kind, count), by_setup = cases[key], writes["runs"][key]
        for setup, runs in by_setup.items():
            load = figures(runs, "load")
            one = figures(runs, "one connection")
            base = writes["runs"].get(f"{kind} x0", {}).get(setup)
            base_rps = figures(base, "load")["rps"] if base else 0
            reference = by_setup.get("reference") if setup != "reference" else None
            drains = [r["drain_s"] for r in runs if r["drain_s"] is not None]
            rows.append(
                [
                    kind,
                    count,
                    setup,
                    f"{load['rps']:,.1f}",
                    f"{load['p50']:.2f}",
                    f"{load['p99']:.2f}",
                    f"{one['p50']:.2f}",
                    f"{one['p99']:.2f}",
                    load["errors"] + one["errors"],
                    f"{statistics.median(drains):.1f}" if drains else "-",
                    sum(r["cancelled"] for r in runs),
                    _ratio(load["rps"], base_rps),
                    _ratio(load["rps"], figures(reference, "load")["rps"]) if reference else "-",
                ]
            )
    lines += _table(
        [
            "write",
            "integrations",
            "setup",
            "req/s",
            "p50 ms",
            "p99 ms",
            "1-conn p50 ms",
            "1-conn p99 ms",
            "errors",
            "outbox emptied in s",
            "deliveries cancelled",
            "req/s ÷ 0 integrations",
            "req/s ÷ reference",
        ],
        rows,
    )
    return lines


def verdicts(results: dict) -> list[tuple[str, bool | None, str]]:
    """(target, met or None when not measured, figures) for the real-traffic targets; SQLite runs
    only. The reads and the mixed case are judged when the Flask ceiling ran; the writes
    whenever they ran, and against ``--reference`` when it ran."""
    if results["engines"]:
        return []
    out: list[tuple[str, bool | None, str]] = []
    flask = "flask" in results["setups"]  # the reads and the mixed case compare with it
    reads = results.get("reads", {}).get("runs", {}) if flask else {}

    def rps_ratio(case: str, load: str) -> float:
        return figures(reads[case]["flagadmin"], load)["rps"] / figures(reads[case]["flask"], load)["rps"]

    if reads:
        r = rps_ratio("4.1 random offset", "4.1 random")
        out.append(("4.1 at random offsets: at least 0.5 of the Flask ceiling", r >= 0.5, f"{r:.2f}"))
        r = rps_ratio("4.2 distinct users", "4.2 users")
        out.append(("4.2 for distinct users: at least 0.5 of the Flask ceiling", r >= 0.5, f"{r:.2f}"))
        first = reads["4.2 first request"]
        for load, bound, label in (("users first", 3, "a user's"), ("heavy first", 10, "heavy's")):
            x = figures(first["flagadmin"], load)["p50"] / figures(first["flask"], load)["p50"]
            out.append(
                (f"4.2, {label} first request: p50 within {bound}x the ceiling's", x <= bound, f"{x:.1f}x")
            )
        r = rps_ratio("4.4 install", "4.4 install")
        g = rps_ratio("4.4 install gzip", "4.4 install gzip")
        out.append(
            (
                "4.4 at about 1,000 archived flags: at least 0.5 of the Flask ceiling",
                r >= 0.5,
                f"{r:.2f} (gzip {g:.2f})",
            )
        )
    mixed = results.get("mixed") if flask else None
    if mixed:
        for window in _windows(mixed, ("flagadmin", "flask")):
            f, c = figures(mixed["runs"]["flagadmin"], window), figures(mixed["runs"]["flask"], window)
            r = f["rps"] / c["rps"]
            ok = r >= 0.5 and f["errors"] == 0
            out.append(
                (
                    f"mixed case ({'first' if window == 'mixed' else 'second'} window):"
                    " at least 0.5 of the Flask ceiling, 0 errors",
                    ok,
                    f"{r:.2f}, {f['errors']} errors",
                )
            )
    writes = results.get("writes", {}).get("runs", {})
    if writes:
        slow = {
            k: figures(writes[f"{k} x5"]["flagadmin"], "one connection")["p50"]
            for k in EVENT_WRITES
            if f"{k} x5" in writes
        }
        if slow:
            out.append(
                (
                    "writes with 5 matching integrations: p50 under 5 ms (one connection)",
                    all(v < 5 for v in slow.values()),
                    ", ".join(f"{k} {v:.2f} ms" for k, v in slow.items()),
                )
            )
        for kind, rate in WRITE_RATES.items():
            if f"{kind} x0" not in writes or f"{kind} x5" not in writes:
                continue  # not measured in this run (--write-kinds, --integrations)
            zero = figures(writes[f"{kind} x0"]["flagadmin"], "load")["rps"]
            five = figures(writes[f"{kind} x5"]["flagadmin"], "load")["rps"]
            out.append(
                (
                    f"{kind}: at least {rate:,}/s, and with 5 matching integrations 0.8 of that",
                    zero >= rate and five >= 0.8 * zero,
                    f"{zero:,.0f}/s, with 5: {five:,.0f}/s ({five / zero:.2f})",
                )
            )
        for kind in WRITE_RATES:
            ref = writes.get(f"{kind} x0", {}).get("reference")
            if not ref:
                continue
            zero = figures(writes[f"{kind} x0"]["flagadmin"], "load")["rps"]
            theirs = figures(ref, "load")["rps"]
            more = []
            for n in (1, 5):
                with_n = writes.get(f"{kind} x{n}", {}).get("reference")
                if with_n:
                    more.append(f"with {n}: {figures(with_n, 'load')['rps'] / theirs:.2f} of that")
            out.append(
                (
                    f"{kind}: ten times the reference server measured the same way, in the same run",
                    zero >= 10 * theirs,
                    f"{zero / theirs:.1f}x: {zero:,.0f}/s against {theirs:,.1f}/s"
                    + (f" (the reference {', '.join(more)})" if more else ""),
                )
            )
        before = results.get("run_py_4_5")
        if "scim-token x0" in writes:
            token = figures(writes["scim-token x0"]["flagadmin"], "load")
            out.append(
                (
                    "SCIM token generation p99 no worse than today (the reads case's 4.5 in the same folder)",
                    None if before is None else token["p99"] <= before["p99"] * 1.1,
                    f"p99 {token['p99']:.2f} ms at {token['rps']:,.0f}/s"
                    + (
                        ""
                        if before is None
                        else f"; reads' 4.5 of {before['date']} (code {before['code_digest']}): p99 "
                        f"{before['p99']:.2f} ms at {before['rps']:,.0f}/s, 10 % allowed for noise"
                    ),
                )
            )
    return out


def markdown(results: dict) -> str:
    """The whole report."""
    lines = _head(results) + _reads(results) + _mixed(results) + _after_write(results) + _writes(results)
    found = verdicts(results)
    if found:
        lines += ["", "## Targets", ""]
        for target, ok, why in found:
            state = "measured" if ok is None else "met" if ok else "**MISSED**"
            lines.append(f"- {state}: {target} ({why})")
    return "\n".join(lines) + "\n"
