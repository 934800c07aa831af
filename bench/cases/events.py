"""events: the system event log at a million events, on SQLite and on PostgreSQL.

What it measures, on a log of ``--events`` events (default 1,000,000; built once by direct SQL
inserts into ``bench/data/events-<N>.db``, and into ``--postgresql URL``'s database when given;
1,000 projects, 100,000 flags, 2,000 users, two years of events, a tenth of them of no project):

1. **Pages in process.** Each case's request through the Flask test client of one app (auth,
   the query, the JSON): the median, the fastest and the slowest of ``--repeats`` after one
   warm-up (on a machine shared with other work the fastest is the request's own cost), the
   ``total`` it answered. Cases: the newest page of the search and of ``/api/admin/events``,
   a deep page (offset N/2) and a page at 90 % of the log, filtered pages (a project, a flag,
   a common and a rare type, an environment, the admin API token's events, a month, a
   month within a project, a common type 100,000 deep, the free text), and the newest and a
   deep page of a Viewer with a role in 200 projects, of one with a role in 2, of an Editor.
2. **Pages over HTTP, pinned.** The newest page, the deep page and a filtered page (a common
   type) on ``flagadmin serve`` pinned to core 0, wrk on core 1, against a Flask route serving
   the same bytes in the same run (the suite's protocol, ``bench/README.md``); req/s, p50, p99,
   server CPU per request, medians of ``--rounds``.
3. **The write cost of the log's indexes.** ``--write-events`` events written into the
   million-event log with the log's indexes and ``event_counts`` triggers and without them
   (dropped inside the run's transaction, which rolls back), alternated in ``--pairs`` pairs,
   the process pinned to core 0: the storage's cost of an event's insert, and an event recorded
   through ``events.record`` (:func:`write_cost`); and a whole change, a flag create through the
   app, with and without them (:func:`change_cost`).

Usage (from the repository root)::

    python -m bench events                                        # SQLite, 1,000,000 events
    python -m bench events --postgresql 'postgresql://postgres:@/flagbench?host=/tmp/pg/data'
    python -m bench events --quick                                # 100,000 events, short runs

Results: ``<out>/events.json`` and ``<out>/events.md``.
This module is longer than 400 lines because it holds the log's generator for both engines, the
three kinds of measurement and their report.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson

from bench import lib
from flagadmin.app import create_app
from flagadmin.config import settings_from_env
from flagadmin.store import connect, schema, tokens

#: The log's shape (the defaults of a full run).
PROJECTS = 1_000
FLAGS = 100_000
USERS = 2_000
START = datetime(2024, 1, 1, tzinfo=UTC)
DAYS = 730
#: The Viewers: one with a role in 200 projects (a fifth of the log), one with a role in 2.
WIDE_PROJECTS, NARROW_PROJECTS = 200, 2

#: Event types by weight (out of 100), and which of them have an environment or no project.
TYPES = (
    ("feature-updated", 20),
    ("feature-strategy-update", 15),
    ("feature-environment-enabled", 10),
    ("feature-environment-disabled", 10),
    ("feature-created", 8),
    ("feature-strategy-add", 8),
    ("feature-metadata-updated", 6),
    ("feature-archived", 4),
    ("feature-tagged", 3),
    ("api-token-created", 3),
    ("user-created", 3),
    ("group-updated", 3),
    ("feature-stale-on", 2),
    ("project-updated", 2),
    ("feature-deleted", 2),
    ("feature-revived", 1),
)
WITH_ENVIRONMENT = {
    "feature-strategy-update",
    "feature-environment-enabled",
    "feature-environment-disabled",
    "feature-strategy-add",
}
OF_NO_PROJECT = {"api-token-created", "user-created", "group-updated"}
_CYCLE = [name for name, weight in TYPES for _ in range(weight)]

#: The log's indexes and counting triggers (schema.sql, store/schema.postgresql.sql), dropped for
#: the bulk load and for the write cost's runs without them.
INDEXES = (
    "events_created",
    "events_project",
    "events_feature",
    "events_type",
    "events_created_by",
    "events_environment",
    "events_group",
)
TRIGGERS = ("events_insert_count", "events_delete_count", "events_update_count")

COLUMNS = (
    "type, created_at, created_by, created_by_user_id, project, environment, feature_name,"
    " data, pre_data, tags, group_id"
)


def project_id(p: int) -> str:
    return f"project-{p:04d}"


def event_rows(n: int):
    """The log, oldest first: tuples of :data:`COLUMNS`. Event ``i`` is about flag ``i * 7919
    mod FLAGS`` (of project ``flag mod PROJECTS``); a fifth are the admin API token's (-42);
    events come in twos and threes written together (``group_id``)."""
    step_ms = DAYS * 86_400_000 // max(n, 1)
    for i in range(n):
        kind = _CYCLE[(i * 37) % len(_CYCLE)]
        flag = (i * 7919) % FLAGS
        at = (START + timedelta(milliseconds=i * step_ms)).isoformat(timespec="milliseconds")[:-6] + "Z"
        user = -42 if i % 5 == 0 else 1 + (i * 31) % USERS
        by = "admin" if user == -42 else f"user{user:05d}"
        group = i - i % 3 + 1
        if kind in OF_NO_PROJECT:
            data = orjson.dumps({"id": i, "name": f"thing-{i}", "email": f"{by}@example.com"}).decode()
            yield (kind, at, by, user, None, None, None, data, None, None, group)
            continue
        project = project_id(flag % PROJECTS)
        name = None if kind == "project-updated" else f"flag-{flag:06d}"
        environment = ("development", "production")[i % 2] if kind in WITH_ENVIRONMENT else None
        state = {
            "name": name,
            "description": "What the flag is for",
            "type": "release",
            "project": project,
            "stale": False,
            "impressionData": False,
            "enabled": i % 2 == 0,
            "createdAt": at,
        }
        data = orjson.dumps(state).decode()
        before = (
            orjson.dumps({**state, "enabled": i % 2 == 1}).decode() if kind == "feature-updated" else None
        )
        tags = '[{"type":"simple","value":"team-a"}]' if kind == "feature-tagged" else None
        yield (kind, at, by, user, project, environment, name, data, before, tags, group)


#: The other stream of the write cost: events over a working set of 100 flags of 10 projects by
#: 20 users (the log's own stream spreads them over 100,000 flags, 1,000 projects, 2,000 users).
LOCAL = {"flags": 100, "projects": 10, "users": 20}
SPREAD = {"flags": FLAGS, "projects": PROJECTS, "users": USERS}


def stream_rows(n: int, flags: int, projects: int, users: int) -> list[tuple]:
    """``n`` new events (tuples of :data:`COLUMNS`) of ``feature-updated``, written now, about
    ``flags`` flags of ``projects`` projects by ``users`` users, as the write cost's runs write
    them (:data:`_PG_INSERTS` writes the same on PostgreSQL)."""
    rows = []
    for i in range(1, n + 1):
        flag = (i * 7919) % flags
        project = project_id(flag % projects)
        user = 1 + (i * 31) % users
        data = '{"name":"flag","enabled":true}'
        environment = "production" if i % 2 == 0 else None
        created = "2026-06-01T00:00:00.000Z"
        rows.append(
            (
                "feature-updated",
                created,
                "bench",
                user,
                project,
                environment,
                f"flag-{flag:06d}",
                data,
                None,
                None,
                i,
            )
        )
    return rows


def _people(conn) -> dict:
    """Projects, the users the cases call as, their roles and tokens (store functions)."""
    with conn.write("bench"):
        for p in range(PROJECTS):
            conn.run("INSERT INTO projects (id, name) VALUES (?, ?)", [project_id(p), f"Project {p}"])
        for uid, name, role in (
            (1, "editor", "Editor"),
            (2, "wide", "Viewer"),
            (3, "narrow", "Viewer"),
        ):
            conn.run(
                "INSERT INTO users (id, username, email, root_role) VALUES (?, ?, ?, ?)",
                [uid, name, f"{name}@example.com", role],
            )
        for count, uid in ((WIDE_PROJECTS, 2), (NARROW_PROJECTS, 3)):
            for p in range(0, PROJECTS, PROJECTS // count):
                conn.run(
                    "INSERT INTO project_members (project_id, user_id, role) VALUES (?, ?, 'Member')",
                    [project_id(p), uid],
                )
    made = {"admin": tokens.new_admin_token()}
    tokens.insert_token(conn, made["admin"], kind="admin", name="bench admin")
    for uid, name in ((1, "editor"), (2, "wide"), (3, "narrow")):
        made[name] = tokens.new_personal_token()
        tokens.insert_token(conn, made[name], kind="personal", user_id=uid, name=f"bench {name}")
    return made


def build_sqlite(path: Path, n: int) -> dict:
    """The SQLite database at ``path``: the schema, the people, ``n`` events loaded with the
    log's indexes and triggers dropped, then made again by the schema file, as an upgrade
    makes them (``event_counts`` filled from the log)."""
    import sqlite3

    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    schema.ensure_schema(path)
    with connect(path) as conn:
        made = _people(conn)
    raw = sqlite3.connect(path, isolation_level=None)
    raw.execute("PRAGMA journal_mode = OFF")
    raw.execute("PRAGMA synchronous = OFF")
    raw.execute("PRAGMA cache_size = -262144")
    for name in INDEXES:
        raw.execute(f"DROP INDEX IF EXISTS {name}")
    for name in TRIGGERS:
        raw.execute(f"DROP TRIGGER IF EXISTS {name}")
    raw.execute("BEGIN")
    raw.executemany(f"INSERT INTO events ({COLUMNS}) VALUES ({', '.join('?' * 11)})", event_rows(n))
    raw.execute("DELETE FROM event_counts")
    started = time.monotonic()
    raw.executescript(schema.schema_sql())  # commits; makes the indexes, triggers and counts
    print(
        f"The log's indexes and counts made in {time.monotonic() - started:.1f} s (as an upgrade).",
        flush=True,
    )
    raw.execute("PRAGMA journal_mode = WAL")
    raw.close()
    return made


def build_postgresql(url: str, n: int) -> dict:
    """The same on PostgreSQL (``url`` names a database that exists), loaded with COPY, then
    ``VACUUM ANALYZE`` (as autovacuum would, so that index-only scans see the pages as visible)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as raw:
        raw.execute("DROP SCHEMA public CASCADE")
        raw.execute("CREATE SCHEMA public")
    schema.ensure_schema(url)
    with connect(url) as conn:
        made = _people(conn)
    with psycopg.connect(url, autocommit=True) as raw:
        for name in INDEXES:
            raw.execute(f"DROP INDEX IF EXISTS {name}")
        for name in TRIGGERS:
            raw.execute(f"DROP TRIGGER IF EXISTS {name} ON events")
        with raw.cursor().copy(f"COPY events ({COLUMNS}) FROM STDIN") as copy:
            for row in event_rows(n):
                copy.write_row(row)
        raw.execute("DELETE FROM event_counts")
        started = time.monotonic()
        raw.execute(schema.postgresql_schema_sql())
        print(
            f"The log's indexes and counts made in {time.monotonic() - started:.1f} s (as an upgrade).",
            flush=True,
        )
        raw.execute("VACUUM ANALYZE")
    return made


def ensure(target: str, n: int, rebuild: bool) -> dict:
    """Build ``target`` (a SQLite path or a PostgreSQL URL) with ``n`` events unless its JSON
    beside it (SQLite) or in its settings (PostgreSQL) says it holds them; return the tokens."""
    postgresql = target.startswith("postgresql")
    if not postgresql:
        meta = Path(target).with_suffix(".json")
        if not rebuild and Path(target).exists() and meta.exists():
            found = orjson.loads(meta.read_bytes())
            if found.get("events") == n:
                return found["tokens"]
    else:
        found = _postgresql_record(target)
        if not rebuild and found is not None and found.get("events") == n:
            return found["tokens"]
    print(
        f"Building a log of {n:,} events in {schema.redacted(target) if postgresql else target} ...",
        flush=True,
    )
    started = time.monotonic()
    made = build_postgresql(target, n) if postgresql else build_sqlite(Path(target), n)
    record = orjson.dumps({"events": n, "tokens": made}).decode()
    if postgresql:
        with connect(target) as conn, conn.write("bench"):
            conn.run("INSERT INTO settings (key, value) VALUES ('bench_events', ?)", [record])
    else:
        Path(target).with_suffix(".json").write_text(record)
    print(f"Built in {time.monotonic() - started:.0f} s.", flush=True)
    return made


def _postgresql_record(url: str) -> dict | None:
    """What an earlier build left in the database at ``url`` (None: none).

    :raise SystemExit: the database holds events this case did not write (a real install):
        a build would empty it.
    """
    import psycopg

    with psycopg.connect(url, autocommit=True) as raw:
        if not raw.execute("SELECT to_regclass('settings') IS NOT NULL").fetchone()[0]:
            return None
        row = raw.execute("SELECT value FROM settings WHERE key = 'bench_events'").fetchone()
        if row is None and raw.execute("SELECT EXISTS (SELECT 1 FROM projects)").fetchone()[0]:
            raise SystemExit(f"{schema.redacted(url)} holds a flagadmin install: give an empty database")
    return orjson.loads(row[0]) if row else None


@dataclass(frozen=True)
class Case:
    """A request measured: its name, path and the token it is made with."""

    name: str
    path: str
    token: str = "admin"


def cases(n: int) -> list[Case]:
    """The page cases (the module's docstring), scaled to a log of ``n`` events."""
    search = "/api/admin/search/events?limit=50"
    month = "from=IS:2025-03-01&to=IS:2025-03-31"
    return [
        Case("newest page", search),
        Case("/events (newest 100)", "/api/admin/events"),
        Case(f"deep page (offset {n // 2:,})", f"{search}&offset={n // 2}"),
        Case(f"page at 90 % (offset {n * 9 // 10:,})", f"{search}&offset={n * 9 // 10}"),
        Case("project", f"{search}&project=IS:{project_id(7)}"),
        Case("flag (/events/{name})", "/api/admin/events/flag-000123"),
        Case("type, 20 % of the log", f"{search}&type=IS:feature-updated"),
        Case("type, 1 %", f"{search}&type=IS:feature-revived"),
        Case("environment", f"{search}&environment=IS:production"),
        Case("createdBy admin token (20 %)", f"{search}&createdBy=IS:-42"),
        Case("a month", f"{search}&{month}"),
        Case("a month of one project", f"{search}&{month}&project=IS:{project_id(7)}"),
        Case("type 20 %, offset 100,000", f"{search}&type=IS:feature-updated&offset={min(100_000, n // 10)}"),
        Case("free text (one flag's name)", f"{search}&query=flag-000123"),
        Case("Viewer of 200 projects: newest", search, "wide"),
        Case("Viewer of 200 projects: deep", f"{search}&offset={n // 10}", "wide"),
        Case("Viewer of 2 projects: newest", search, "narrow"),
        Case("Editor: newest", search, "editor"),
        Case("Viewer: a flag's events", "/api/admin/events/flag-000007", "wide"),
    ]


#: The cases driven over HTTP under the pinned protocol.
HTTP_CASES = ("newest page", "deep page", "type, 20 % of the log")


def app_config(target: str) -> dict:
    return {"DATABASE": target, "SETTINGS": replace(settings_from_env({}), git_revision="bench")}


def in_process(target: str, made: dict, n: int, repeats: int) -> dict:
    """Each case through one app's test client: median and slowest ms of ``repeats`` after one
    warm-up, status, total, events in the page."""
    client = create_app(app_config(target)).test_client()
    results = {}
    for case in cases(n):
        headers = {"Authorization": made[case.token]}
        times, response = [], None
        for _ in range(repeats + 1):
            started = time.perf_counter()
            response = client.get(case.path, headers=headers)
            body = response.get_data()
            times.append(time.perf_counter() - started)
        document = orjson.loads(body)
        results[case.name] = {
            "path": case.path,
            "token": case.token,
            "status": response.status_code,
            "median_ms": 1000 * statistics.median(times[1:]),
            "min_ms": 1000 * min(times[1:]),
            "max_ms": 1000 * max(times[1:]),
            "total": document.get("total", document.get("totalEvents")),
            "events": len(document.get("events", [])),
        }
        print(
            f"{case.name:<40} {results[case.name]['median_ms']:8.2f} ms median"
            f" {results[case.name]['min_ms']:8.2f} min {results[case.name]['max_ms']:8.2f} max"
            f"  total {results[case.name]['total']}",
            flush=True,
        )
    return results


def over_http(args: argparse.Namespace, target: str, made: dict, n: int) -> dict:
    """:data:`HTTP_CASES` on a pinned ``flagadmin serve`` and on the Flask ceiling serving the
    same bytes, alternated, ``--rounds`` rounds; medians."""
    wrk = lib.ensure_wrk()
    chosen = [c for c in cases(n) if any(c.name.startswith(h) for h in HTTP_CASES)]
    log, wrk_log = args.out / "servers.log", args.out / "wrk.log"
    bodies = args.out / "bodies"
    bodies.mkdir(parents=True, exist_ok=True)

    def flagadmin() -> lib.Server:
        port = lib.free_port()
        return lib.Server(lib.flagadmin_command(target, port, args.threads), port, log)

    with flagadmin() as server:
        for case in chosen:
            status, body, _ = lib.fetch(server.port, case.path, auth=made[case.token])
            if status != 200:
                raise RuntimeError(f"{case.path}: {status} {body[:200]!r}")
            (bodies / f"{chosen.index(case)}.json").write_bytes(body)
    runs: dict[str, dict[str, list[dict]]] = {c.name: {"flagadmin": [], "flask": []} for c in chosen}
    for r in range(1, args.rounds + 1):
        for i, case in enumerate(chosen):
            for kind in ("flagadmin", "flask"):
                if kind == "flagadmin":
                    server = flagadmin()
                else:
                    port = lib.free_port()
                    command = lib.ceiling_command("flask", port, args.threads, body=bodies / f"{i}.json")
                    server = lib.Server(command, port, log)
                with server:
                    for _ in range(3):
                        lib.fetch(server.port, case.path, auth=made[case.token])
                    cpu = server.cpu_seconds()
                    figures = lib.run_wrk(
                        wrk,
                        server.port,
                        [case.path],
                        auth=made[case.token],
                        duration=args.duration,
                        connections=args.connections,
                        timeout=30,
                        log=wrk_log,
                    )
                    figures["cpu_us"] = (server.cpu_seconds() - cpu) / max(1, figures["requests"]) * 1e6
                runs[case.name][kind].append(figures)
                print(
                    f"round {r} {case.name:<32} {kind:<9} {figures['rps']:8.1f} req/s"
                    f"  p50 {figures['p50_us'] / 1000:7.2f} ms  p99 {figures['p99_us'] / 1000:7.2f} ms"
                    f"  cpu {figures['cpu_us']:7.0f} µs  errors {figures['errors']}",
                    flush=True,
                )
    keys = ("rps", "p50_us", "p99_us", "cpu_us", "errors")
    figures = {}
    for name, kinds in runs.items():
        figures[name] = {
            kind: {k: statistics.median(run[k] for run in kinds[kind]) for k in keys} for kind in kinds
        }
        figures[name]["ratio"] = figures[name]["flagadmin"]["rps"] / figures[name]["flask"]["rps"]
    return figures


#: PostgreSQL: inserts ``n`` events one statement each, as ``store.events.insert`` writes one,
#: inside the server (no round trip measured), and answers the milliseconds they took.
_PG_INSERTS = """
CREATE FUNCTION pg_temp.bench_inserts(n integer, flags integer, projects integer, users integer)
RETURNS double precision LANGUAGE plpgsql AS $$
DECLARE
    started timestamptz := clock_timestamp();
BEGIN
    FOR i IN 1..n LOOP
        INSERT INTO events (type, created_at, created_by, created_by_user_id, project, environment,
                            feature_name, data, pre_data, tags, group_id)
        VALUES ('feature-updated', '2026-06-01T00:00:00.000Z', 'bench', 1 + (i * 31) % users,
                'project-' || lpad(((i * 7919) % flags % projects)::text, 4, '0'),
                CASE WHEN i % 2 = 0 THEN 'production' END,
                'flag-' || lpad(((i * 7919) % flags)::text, 6, '0'), '{"name":"flag","enabled":true}',
                NULL, NULL, i);
    END LOOP;
    RETURN extract(epoch FROM clock_timestamp() - started) * 1000;
END $$;
"""


#: PostgreSQL: the same events, each in a transaction of its own committed inside the server (a
#: procedure), as changes write them: a counter row updated by every event of one transaction
#: would grow a chain of row versions that no change makes. Commits are not waited for
#: (``synchronous_commit`` off for the call): the disk's sync is not what is measured.
_PG_COMMITS = """
CREATE PROCEDURE pg_temp.bench_commits(n integer, flags integer, projects integer, users integer,
                                       INOUT ms double precision DEFAULT NULL) LANGUAGE plpgsql AS $$
DECLARE
    started timestamptz := clock_timestamp();
BEGIN
    FOR i IN 1..n LOOP
        INSERT INTO events (type, created_at, created_by, created_by_user_id, project, environment,
                            feature_name, data, pre_data, tags, group_id)
        VALUES ('feature-updated', '2026-06-01T00:00:00.000Z', 'bench', 1 + (i * 31) % users,
                'project-' || lpad(((i * 7919) % flags % projects)::text, 4, '0'),
                CASE WHEN i % 2 = 0 THEN 'production' END,
                'flag-' || lpad(((i * 7919) % flags)::text, 6, '0'), '{"name":"flag","enabled":true}',
                NULL, NULL, i);
        COMMIT;
    END LOOP;
    ms := extract(epoch FROM clock_timestamp() - started) * 1000;
END $$;
"""


def postgresql_write_cost(target: str, events: int, pairs: int) -> dict:
    """PostgreSQL's :func:`write_cost`: ``commit_us``, µs per event written in a transaction of
    its own inside the server (:data:`_PG_COMMITS`), spread over 100,000 flags and over a working
    set of 100, with the log's indexes and triggers and without them (dropped, committed, then
    made again by the schema file), in alternated pairs; the events written are deleted after
    each run and ``event_counts`` filled again from the log."""
    keys = ("commit_us", "commit_local_us")
    runs: dict[str, dict[str, list[float]]] = {
        kind: {key: [] for key in keys} for kind in ("with", "without")
    }
    with connect(target) as conn:
        conn.script(_PG_COMMITS + "SET synchronous_commit = off;")
        top = conn.value("SELECT max(id) FROM events")

        def one_run(kind: str) -> None:
            if kind == "without":
                with conn.write("bench"):
                    for name in INDEXES:
                        conn.run(f"DROP INDEX {name}")
                    for name in TRIGGERS:
                        conn.run(f"DROP TRIGGER {name} ON events")
            conn.run("CHECKPOINT")
            for key, spread in zip(keys, (SPREAD, LOCAL), strict=True):
                conn.value("CALL pg_temp.bench_commits(?, ?, ?, ?)", [WARM_UP, *spread.values()])
                took_ms = conn.value("CALL pg_temp.bench_commits(?, ?, ?, ?)", [events, *spread.values()])
                runs[kind][key].append(took_ms * 1000 / events)
            with conn.write("bench"):
                conn.run("DELETE FROM events WHERE id > ?", [top])
                conn.run("DELETE FROM event_counts")
            conn.script(schema.postgresql_schema_sql())
            conn.run("VACUUM events")

        for pair in range(pairs):
            for kind in ("with", "without") if pair % 2 == 0 else ("without", "with"):
                one_run(kind)
                print(
                    f"writes pair {pair + 1} {kind:<8} {runs[kind]['commit_us'][-1]:7.1f} µs an event"
                    f" committed (spread), {runs[kind]['commit_local_us'][-1]:7.1f} (a working set)",
                    flush=True,
                )
    return {
        "runs": runs,
        "median": {kind: {k: statistics.median(v) for k, v in runs[kind].items()} for kind in runs},
        "fastest": {kind: {k: min(v) for k, v in runs[kind].items()} for kind in runs},
        "ratio_with_over_without": {
            key: statistics.median(
                w / wo for w, wo in zip(runs["with"][key], runs["without"][key], strict=True)
            )
            for key in keys
        },
    }


def write_cost(target: str, events: int, pairs: int) -> dict:
    """What the log's indexes and ``event_counts`` triggers cost a write: µs per event inserted
    into the million-event log with them and without them, in alternated pairs.

    Each run is one transaction rolled back at its end, so that the log stays as it was: the
    run without drops the indexes and triggers inside it first (DDL is transactional on both
    engines), then writes :data:`WARM_UP` events untimed. Two measures per run: ``insert_us``,
    the storage's own cost of an event's insert (SQLite: the CPU time of one prepared statement
    per event, in process; PostgreSQL: one statement per event in a server-side loop, so that no
    round trip is timed), and ``record_us``, an event recorded
    through ``events.record`` (the real path, with its delivery matching and its group), which
    on PostgreSQL includes a round trip per statement.
    """
    from flagadmin import events as domain_events

    actor = domain_events.Actor("bench", 1)
    runs: dict[str, dict[str, list[float]]] = {
        kind: {"insert_us": [], "insert_local_us": [], "record_us": []} for kind in ("with", "without")
    }
    rows = {"insert_us": stream_rows(events, **SPREAD), "insert_local_us": stream_rows(events, **LOCAL)}
    with connect(target) as conn:
        postgresql = conn.dialect == "postgresql"
        if postgresql:
            conn.script(_PG_INSERTS)

        def one_run(kind: str) -> None:
            with contextlib.suppress(_RolledBack), conn.write("bench"):
                if kind == "without":
                    for name in INDEXES:
                        conn.run(f"DROP INDEX {name}")
                    for name in TRIGGERS:
                        conn.run(f"DROP TRIGGER {name}" + (" ON events" if postgresql else ""))
                insert = f"INSERT INTO events ({COLUMNS}) VALUES ({', '.join('?' * 11)})"
                for key, spread in (("insert_us", SPREAD), ("insert_local_us", LOCAL)):
                    if postgresql:
                        conn.value("SELECT pg_temp.bench_inserts(?, ?, ?, ?)", [WARM_UP, *spread.values()])
                        took_ms = conn.value(
                            "SELECT pg_temp.bench_inserts(?, ?, ?, ?)", [events, *spread.values()]
                        )
                        runs[kind][key].append(took_ms * 1000 / events)
                    else:
                        conn.run_many(insert, rows[key][:WARM_UP])
                        started = time.thread_time()
                        conn.run_many(insert, rows[key])
                        runs[kind][key].append((time.thread_time() - started) / events * 1e6)
                started = time.perf_counter()
                for row in rows["insert_local_us"]:
                    domain_events.record(
                        conn,
                        row[0],
                        actor,
                        project=row[4],
                        environment=row[5],
                        feature_name=row[6],
                        data=None,
                    )
                runs[kind]["record_us"].append((time.perf_counter() - started) / events * 1e6)
                raise _RolledBack

        for pair in range(pairs):
            for kind in ("with", "without") if pair % 2 == 0 else ("without", "with"):
                one_run(kind)
                print(
                    f"writes pair {pair + 1} {kind:<8} {runs[kind]['insert_us'][-1]:7.1f} µs an insert"
                    f" (spread), {runs[kind]['insert_local_us'][-1]:7.1f} (a working set),"
                    f" {runs[kind]['record_us'][-1]:7.1f} µs an events.record",
                    flush=True,
                )
    ratios = {
        key: statistics.median(w / wo for w, wo in zip(runs["with"][key], runs["without"][key], strict=True))
        for key in ("insert_us", "insert_local_us", "record_us")
    }
    return {
        "runs": runs,
        "median": {kind: {k: statistics.median(v) for k, v in runs[kind].items()} for kind in runs},
        "fastest": {kind: {k: min(v) for k, v in runs[kind].items()} for kind in runs},
        "ratio_with_over_without": ratios,
    }


def change_cost(target: str, made: dict, creates: int, pairs: int) -> dict:
    """What the log's indexes and triggers cost a change: the CPU time this process spends on a
    flag create (``POST /api/admin/projects/{id}/features``, one ``feature-created`` event)
    through one app's test client, ``creates`` a run, with the indexes and triggers and
    without them (dropped and made again between runs, committed), in alternated pairs. On
    SQLite that is the whole change's CPU (the commit's disk sync is waited for, not counted);
    on PostgreSQL the server's part is not in it, so the wall time is given beside it."""
    import itertools

    client = create_app(app_config(target)).test_client()
    headers = {"Authorization": made["admin"]}
    names = itertools.count()
    run = int(time.time())  # flag names new to the database at every run
    runs: dict[str, dict[str, list[float]]] = {
        kind: {"cpu_us": [], "wall_us": []} for kind in ("with", "without")
    }
    with connect(target) as conn:
        postgresql = conn.dialect == "postgresql"

        def settle() -> None:
            # a run must not pay for the WAL that the index builds and drops before it wrote
            if postgresql:
                conn.run("CHECKPOINT")
            else:
                conn.pragma("wal_checkpoint(TRUNCATE)")

        def create() -> tuple[float, float]:
            path = f"/api/admin/projects/{project_id(1)}/features"
            cpu, wall = time.thread_time(), time.perf_counter()
            response = client.post(path, json={"name": f"bench-{run}-{next(names)}"}, headers=headers)
            if response.status_code != 201:
                raise RuntimeError(f"flag create: {response.status_code} {response.get_data()[:200]!r}")
            return (time.thread_time() - cpu) * 1e6, (time.perf_counter() - wall) * 1e6

        for pair in range(pairs):
            for kind in ("with", "without") if pair % 2 == 0 else ("without", "with"):
                if kind == "without":
                    with conn.write("bench"):
                        for name in INDEXES:
                            conn.run(f"DROP INDEX {name}")
                        for name in TRIGGERS:
                            conn.run(f"DROP TRIGGER {name}" + (" ON events" if postgresql else ""))
                settle()
                for _ in range(WARM_UP // 10):
                    create()
                taken = [create() for _ in range(creates)]
                runs[kind]["cpu_us"].append(statistics.median(cpu for cpu, _ in taken))
                runs[kind]["wall_us"].append(statistics.median(wall for _, wall in taken))
                if kind == "without":
                    with conn.write("bench"):
                        conn.run("DELETE FROM event_counts")
                    conn.script(schema.postgresql_schema_sql() if postgresql else schema.schema_sql())
                print(
                    f"changes pair {pair + 1} {kind:<8} {runs[kind]['cpu_us'][-1]:8.0f} µs CPU a flag create"
                    f" (median), {runs[kind]['wall_us'][-1]:8.0f} µs wall",
                    flush=True,
                )
    return {
        "runs": runs,
        "median": {kind: {k: statistics.median(v) for k, v in runs[kind].items()} for kind in runs},
        "ratio_with_over_without": {
            key: statistics.median(
                w / wo for w, wo in zip(runs["with"][key], runs["without"][key], strict=True)
            )
            for key in ("cpu_us", "wall_us")
        },
    }


#: Events written, untimed, before each measurement (after the run's DROPs, if any).
WARM_UP = 200


class _RolledBack(Exception):
    """Ends a measured write transaction: it rolls back, leaving the log as it was."""


def markdown(results: dict) -> str:
    lines = ["# events", "", f"`{results['command']}`", "", lib.machine_line(results["machine"]), ""]
    for engine, figures in results["engines"].items():
        lines += [f"## {engine}: a log of {results['events']:,} events", ""]
        lines += lib.markdown_table(
            ["case", "median ms", "min ms", "max ms", "total", "events", "status"],
            [
                [
                    name,
                    f"{c['median_ms']:.2f}",
                    f"{c.get('min_ms', 0):.2f}",
                    f"{c['max_ms']:.2f}",
                    c["total"],
                    c["events"],
                    c["status"],
                ]
                for name, c in figures.get("pages", {}).items()
            ],
        )
        if figures.get("http"):
            lines += ["", "Over HTTP, pinned (medians of rounds; ratio: req/s ÷ the Flask ceiling's):", ""]
            lines += lib.markdown_table(
                ["case", "req/s", "Flask req/s", "ratio", "p50 ms", "p99 ms", "server CPU µs/req"],
                [
                    [
                        name,
                        f"{h['flagadmin']['rps']:.0f}",
                        f"{h['flask']['rps']:.0f}",
                        f"{h['ratio']:.2f}",
                        f"{h['flagadmin']['p50_us'] / 1000:.2f}",
                        f"{h['flagadmin']['p99_us'] / 1000:.2f}",
                        f"{h['flagadmin']['cpu_us']:.0f}",
                    ]
                    for name, h in figures["http"].items()
                ],
            )
        if figures.get("writes"):
            w, fast = figures["writes"]["median"], figures["writes"]["fastest"]
            ratio = figures["writes"]["ratio_with_over_without"]
            lines += [
                "",
                f"Write cost of the log's indexes and triggers ({results['write_events']} events a run,"
                f" {results['pairs']} alternated pairs), medians [fastest]:",
                "",
            ]
            lines += lib.markdown_table(
                ["µs an event", "with", "without", "with ÷ without (median of pairs)"],
                [
                    [
                        label,
                        f"{w['with'][key]:.1f} [{fast['with'][key]:.1f}]",
                        f"{w['without'][key]:.1f} [{fast['without'][key]:.1f}]",
                        f"x{ratio[key]:.2f}",
                    ]
                    for key, label in (
                        ("insert_us", "the insert alone, spread over 100,000 flags"),
                        ("insert_local_us", "the insert alone, a working set of 100 flags"),
                        ("record_us", "events.record (the working set)"),
                        ("commit_us", "an insert committed alone, spread over 100,000 flags"),
                        ("commit_local_us", "an insert committed alone, a working set of 100 flags"),
                    )
                    if key in w["with"]
                ],
            )
        if figures.get("changes"):
            c, ratio = figures["changes"]["median"], figures["changes"]["ratio_with_over_without"]
            lines += [
                "",
                f"A flag create through the app ({results['creates']} a run, {results['pairs']}"
                f" alternated pairs), medians: {c['with']['cpu_us']:.0f} µs of this process's CPU with"
                f" the log's indexes and triggers, {c['without']['cpu_us']:.0f} without"
                f" (x{ratio['cpu_us']:.2f} by pair); wall {c['with']['wall_us']:.0f} against"
                f" {c['without']['wall_us']:.0f} µs (x{ratio['wall_us']:.2f}).",
            ]
        lines.append("")
    lines.append(lib.code_line(results))
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> None:
    """Run the case (see the module's docstring)."""
    parser = argparse.ArgumentParser(
        prog="python -m bench events",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawTextHelpFormatter,
    )
    lib.add_common_options(parser, db=False, rounds=3, seconds=5)
    parser.add_argument("--events", type=int, default=1_000_000, help="events in the log (default 1000000)")
    parser.add_argument("--db", default=None, help="the SQLite file (default bench/data/events-N.db)")
    parser.add_argument("--postgresql", default=None, help="a PostgreSQL database URL to measure too")
    parser.add_argument("--no-sqlite", action="store_true", help="measure PostgreSQL only")
    parser.add_argument("--rebuild", action="store_true", help="build the log again")
    parser.add_argument("--repeats", type=int, default=20, help="requests per page case (default 20)")
    parser.add_argument("--threads", type=int, default=8, help="server threads (default 8)")
    parser.add_argument("--connections", type=int, default=8, help="wrk connections (default 8)")
    parser.add_argument("--write-events", type=int, default=2_000, help="events a write run records")
    parser.add_argument("--pairs", type=int, default=4, help="alternated write runs (default 4)")
    parser.add_argument("--creates", type=int, default=200, help="flag creates a change-cost run makes")
    parser.add_argument("--skip", default="", help="comma-separated: pages,http,writes,changes")
    args = parser.parse_args(argv)
    if args.quick:
        args.events, args.repeats, args.rounds, args.duration = 100_000, 5, 1, 2
        args.write_events, args.pairs, args.creates = 500, 2, 40
    skip = set(filter(None, args.skip.split(",")))
    tree = lib.measured_tree(args)
    os.sched_setaffinity(0, {int(lib.SERVER_CPU)})
    targets = []
    if not args.no_sqlite:
        targets.append(("SQLite", args.db or str(lib.DATA / f"events-{args.events}.db")))
    if args.postgresql:
        targets.append(("PostgreSQL", args.postgresql))
    results: dict = {
        **tree,
        "command": lib.command_line(),
        "machine": lib.machine(),
        "events": args.events,
        "write_events": args.write_events,
        "pairs": args.pairs,
        "creates": args.creates,
        "engines": {},
    }
    for engine, target in targets:
        made = ensure(target, args.events, args.rebuild)
        if not target.startswith("postgresql"):
            lib.read_through(target)
        figures: dict = {}
        if "pages" not in skip:
            figures["pages"] = in_process(target, made, args.events, args.repeats)
        if "http" not in skip:
            os.sched_setaffinity(0, set(range(os.cpu_count() or 1)))
            figures["http"] = over_http(args, target, made, args.events)
            os.sched_setaffinity(0, {int(lib.SERVER_CPU)})
        if "writes" not in skip:
            if target.startswith("postgresql"):
                figures["writes"] = postgresql_write_cost(target, args.write_events, args.pairs)
            else:
                figures["writes"] = write_cost(target, args.write_events, args.pairs)
        if "changes" not in skip:
            figures["changes"] = change_cost(target, made, args.creates, args.pairs)
        results["engines"][engine] = figures
    results["tree_digest_end"] = lib.code_digest(Path(results["tree"]))
    lib.write_results(args.out, "events", results, markdown(results))
