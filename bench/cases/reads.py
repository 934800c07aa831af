"""reads: the five operations of the spec (4.1-4.5) under load, against their ceilings.

What it measures, on the generated database (``python -m bench data``; built when missing):

- req/s, p50, p99, peak memory (VmHWM) and the first request's time of each operation:
  4.1 (a page of an integration's event log at offset 0, deep and at the last page), 4.2 (the
  personal dashboard of ``heavy``, a Viewer in 200 projects), 4.3 (ui-config), 4.4 (every archived
  flag, 50,000 at reference size), 4.5 (a new SCIM token);
- the ceilings, measured in the same run: the same response bytes, fetched once from flagadmin,
  served by one Flask route and by a bare WSGI callable through ``flagadmin.serving.serve``
  (flagadmin's own waitress set-up) with the same threads on the same core. The report gives
  flagadmin's req/s as a ratio to the Flask ceiling's (the targets: 4.3 and 4.1@0 at least 0.7);
- 4.2's SQL statement count at scale 0.1 and at the database's scale (they must be equal);
- 4.4's whole response against SQLite alone plus ``orjson.dumps`` of the same rows (the
  ceiling of 4.4: at most 2x), and its memory growth;
- a soak: 64 connections for 30 s, twice, errors and memory growth.

Protocol: every measurement on a freshly started server, pinned to core 0 (``taskset``), wrk
``-t1`` pinned to core 1, a few warm-up requests, then ``--seconds`` of load; each round runs every
operation on flagadmin, the Flask ceiling and the WSGI ceiling in turn; figures are medians over
``--rounds``. The tree measured is a snapshot (``--tree``, default this checkout).

With ``--db postgresql://...`` it compares the engines instead: every operation on SQLite
(``--sqlite``), on PostgreSQL with one ``flagadmin serve`` and with two (one per core, each
driven by its own wrk with half the connections), ratios to SQLite, no ceilings; the SQLite
database is loaded into the PostgreSQL one first when that one holds no flags.

Results: ``<out>/reads.json`` and ``<out>/reads.md`` (``engines.json``/``engines.md``).
This module is longer than 400 lines because it holds the case, its report and the engine
comparison that reuses its servers and operations.
"""

from __future__ import annotations

import argparse
import os
import statistics
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path

import orjson

from bench import lib
from flagadmin.app import create_app
from flagadmin.config import settings_from_env
from flagadmin.store import connect, schema
from flagadmin.web.database import connection

#: Page size of the 4.1 cases.
LIMIT = 50
#: The offset the 4.1 "deep" case aims at, at reference size (scaled with the data).
DEEP_OFFSET = 500_000


@dataclass(frozen=True)
class Case:
    """One operation request measured under load."""

    name: str
    path: str
    token: str  # "admin" or "heavy"
    method: str = "GET"
    connections: int | None = None  # None: the --connections value

    @property
    def slug(self) -> str:
        """The case name as a file name."""
        return self.name.replace(".", "_").replace("@", "_at_")


def cases(meta: dict, archive_connections: int) -> list[Case]:
    """The cases for the database described by ``meta`` (lib.py's JSON)."""
    events = meta["events_per_integration"]["1"]
    deep = min(round(DEEP_OFFSET * meta["scale"]), events - LIMIT)
    last = events - LIMIT
    page = "/api/admin/addons/1/events?limit={}&offset={}"
    return [
        Case("4.1@0", page.format(LIMIT, 0), "admin"),
        Case(f"4.1@{deep}", page.format(LIMIT, deep), "admin"),
        Case(f"4.1@last({last})", page.format(LIMIT, last), "admin"),
        Case("4.2", "/api/admin/personal-dashboard", "heavy"),
        Case("4.3", "/api/admin/ui-config", "admin"),
        Case("4.4", "/api/admin/archive/features", "admin", connections=archive_connections),
        Case("4.5", "/api/admin/scim-settings/generate-new-token", "admin", method="POST"),
    ]


class Bench:
    """What every measurement shares: the database, tokens, wrk and the options."""

    def __init__(self, args: argparse.Namespace, meta: dict, wrk: str) -> None:
        self.args = args
        self.meta = meta
        self.wrk = wrk
        self.out: Path = args.out
        self.tokens = {"admin": meta["admin_token"], "heavy": meta["heavy_token"]}
        self.server_log = self.out / "servers.log"
        self.wrk_log = self.out / "wrk.log"

    def flagadmin(self) -> lib.Server:
        """Start a fresh flagadmin server on the database."""
        port = lib.free_port()
        command = lib.flagadmin_command(self.args.db, port, self.args.threads)
        return lib.Server(command, port, self.server_log)

    def ceiling(self, mode: str, body: Path) -> lib.Server:
        """Start a fresh ceiling server answering ``body``."""
        port = lib.free_port()
        return lib.Server(
            lib.ceiling_command(mode, port, self.args.threads, body=body), port, self.server_log
        )

    def bodies(self, all_cases: list[Case]) -> dict[str, Path]:
        """Fetch each case's response once from flagadmin; save it for the ceilings."""
        folder = self.out / "bodies"
        folder.mkdir(parents=True, exist_ok=True)
        paths = {}
        with self.flagadmin() as server:
            for case in all_cases:
                status, body, _ = lib.fetch(server.port, case.path, case.method, self.tokens[case.token])
                if status != 200:
                    raise RuntimeError(
                        f"{case.name}: {case.method} {case.path} answered {status}: {body[:300]}"
                    )
                paths[case.name] = folder / f"{case.slug}.json"
                paths[case.name].write_bytes(body)
        return paths

    def load(self, server: lib.Server, case: Case) -> dict:
        """Time the case's first request on ``server`` (fresh: nothing cached), warm it up, drive it
        with wrk, add its peak memory and, when wrk saw non-2xx answers, one answer as a sample."""
        auth = self.tokens[case.token]
        first_s = lib.fetch(server.port, case.path, case.method, auth)[2]
        for _ in range(0 if case.name == "4.4" else 2):
            lib.fetch(server.port, case.path, case.method, auth)
        cpu_before = server.cpu_seconds()
        figures = lib.run_wrk(
            self.wrk,
            server.port,
            [case.path],
            method=case.method,
            auth=auth,
            duration=self.args.duration,
            connections=case.connections or self.args.connections,
            timeout=self.args.timeout,
            log=self.wrk_log,
        )
        # the server's CPU (every thread, user + system) per request, µs, warm-up excluded
        figures["cpu_us"] = (server.cpu_seconds() - cpu_before) / max(1, figures["requests"]) * 1e6
        figures["peak_rss_kb"] = server.memory()["VmHWM"]
        figures["first_ms"] = first_s * 1000
        if figures["status"]:
            status, body, _ = lib.fetch(server.port, case.path, case.method, auth)
            figures["error_sample"] = f"after the run: {status} {body[:200]!r}"
        return figures

    def rounds(self, all_cases: list[Case], bodies: dict[str, Path]) -> dict:
        """Run every case on flagadmin and both ceilings, alternating, ``--rounds`` times."""
        runs: dict[str, dict[str, list[dict]]] = {
            c.name: {"flagadmin": [], "flask": [], "wsgi": []} for c in all_cases
        }
        for r in range(1, self.args.rounds + 1):
            for case in all_cases:
                for target in ("flagadmin", "flask", "wsgi"):
                    server = (
                        self.flagadmin() if target == "flagadmin" else self.ceiling(target, bodies[case.name])
                    )
                    with server:
                        figures = self.load(server, case)
                    runs[case.name][target].append(figures)
                    print(
                        f"round {r}/{self.args.rounds} {case.name:<16} {target:<9}"
                        f" {figures['rps']:9.1f} req/s  p50 {figures['p50_us'] / 1000:8.2f} ms"
                        f"  p99 {figures['p99_us'] / 1000:8.2f} ms"
                        f"  peak {figures['peak_rss_kb'] / 1024:6.1f} MiB  errors {figures['errors']}",
                        flush=True,
                    )
        return runs

    def archive(self, case: Case, repeats: int = 5) -> dict:
        """4.4 on a fresh server: VmHWM before and after the first request, then timed repeats;
        and the SQLite(+orjson) baseline with the server stopped."""
        auth = self.tokens[case.token]
        with self.flagadmin() as server:
            before = server.memory()
            status, body, first_s = lib.fetch(server.port, case.path, auth=auth)
            after = server.memory()
            times = [lib.fetch(server.port, case.path, auth=auth)[2] for _ in range(repeats)]
        baseline = archive_baseline(self.args.db, auth)
        whole = statistics.median(times)
        return {
            "status": status,
            "body_bytes": len(body),
            "first_s": first_s,
            "whole_s": whole,
            "whole_runs_s": times,
            "hwm_before_kb": before["VmHWM"],
            "hwm_after_kb": after["VmHWM"],
            "growth_kb": after["VmHWM"] - before["VmHWM"],
            **{f"baseline_{k}": v for k, v in baseline.items()},
            "ratio": whole / baseline["encoded_s"],
        }

    def soak(self, paths: list[str]) -> dict:
        """Two runs of ``--soak-connections`` connections for ``--soak-duration`` s on ``paths``
        against one fresh server; memory before and after each run."""
        result: dict = {"paths": paths, "runs": []}
        with self.flagadmin() as server:
            lib.fetch(server.port, paths[0], auth=self.tokens["admin"])
            result["before"] = server.memory()
            for _ in range(2):
                figures = lib.run_wrk(
                    self.wrk,
                    server.port,
                    paths,
                    auth=self.tokens["admin"],
                    duration=self.args.soak_duration,
                    connections=self.args.soak_connections,
                    timeout=self.args.soak_timeout,
                    log=self.wrk_log,
                )
                figures["after"] = server.memory()
                result["runs"].append(figures)
                print(
                    f"soak {figures['requests']} requests, {figures['rps']:.1f} req/s,"
                    f" errors {figures['errors']} (status {figures['status']}, timeout {figures['timeout']}),"
                    f" RSS {figures['after']}",
                    flush=True,
                )
        return result


def query_counts(args: argparse.Namespace, meta: dict) -> dict:
    """4.2's statement counts on a scale-0.1 database (built if missing) and on the main one."""
    small = args.db.with_name("bench-0.1.db")
    counts = {}
    for scale, db, info in ((0.1, small, None), (meta["scale"], args.db, meta)):
        info = info or lib.ensure_database(db, 0.1, False)
        counts[str(scale)] = dashboard_statements(db, info["heavy_token"])
        print(f"4.2 statements at scale {scale}: {counts[str(scale)]['count']}", flush=True)
    return counts


def parse_args(argv: list[str]) -> argparse.Namespace:
    """The command line (``python -m bench reads --help``)."""
    p = argparse.ArgumentParser(prog="python -m bench reads", description=__doc__.splitlines()[0])
    lib.add_common_options(p)
    p.add_argument("--sqlite", type=Path, default=lib.DEFAULT_DB, help="with a postgresql:// --db: SQLite")
    p.add_argument("--scale", type=float, default=1.0, help="scale used when the database is built")
    p.add_argument("--regenerate", action="store_true", help="rebuild the database first")
    p.add_argument("--connections", type=int, default=8, help="wrk connections per case")
    p.add_argument("--archive-connections", type=int, default=2, help="wrk connections for 4.4")
    p.add_argument("--timeout", type=int, default=60, help="wrk request timeout (s) for the cases")
    p.add_argument("--threads", type=int, default=8, help="waitress threads of every server")
    p.add_argument("--soak-duration", type=int, default=30)
    p.add_argument("--soak-connections", type=int, default=64)
    p.add_argument("--soak-timeout", type=int, default=5, help="wrk request timeout (s) in the soak")
    args = p.parse_args(argv)
    if args.quick:  # about a minute: the scale-0.1 database, 2 s a measurement, one round
        if args.db == p.get_default("db"):
            args.db, args.scale = str(lib.DATA / "bench-0.1.db"), 0.1
        args.duration, args.rounds, args.soak_duration = 2, 1, 3
    return args


def main(argv: list[str]) -> None:
    """Run the case (see the module's docstring); write ``<out>/reads.{json,md}``."""
    args = parse_args(argv)
    tree = lib.measured_tree(args)
    if args.db.startswith(("postgresql://", "postgres://")):
        engines_main(args, tree)
        return
    args.db = Path(args.db)
    for log in ("servers.log", "wrk.log"):
        (args.out / log).unlink(missing_ok=True)
    started = time.monotonic()
    meta = lib.ensure_database(args.db, args.scale, args.regenerate)
    wrk = lib.ensure_wrk()
    bench = Bench(args, meta, wrk)
    all_cases = cases(meta, args.archive_connections)

    results = {
        **tree,
        "command": lib.command_line(),
        "machine": {**lib.machine(), "wrk": lib.wrk_version(wrk)},
        "options": {k: str(v) for k, v in vars(args).items()},
        "data": {k: v for k, v in meta.items() if not k.endswith("_token")},
        "cases": [
            {
                "name": c.name,
                "method": c.method,
                "path": c.path,
                "token": c.token,
                "connections": c.connections or args.connections,
            }
            for c in all_cases
        ],
    }
    results["query_counts"] = query_counts(args, meta)
    bodies = bench.bodies(all_cases)
    results["body_bytes"] = {name: path.stat().st_size for name, path in bodies.items()}
    results["runs"] = bench.rounds(all_cases, bodies)
    results["archive"] = bench.archive(next(c for c in all_cases if c.name == "4.4"))
    print(
        f"4.4 whole response {results['archive']['whole_s']:.3f} s, baseline "
        f"{results['archive']['baseline_encoded_s']:.3f} s, growth {results['archive']['growth_kb']} kB",
        flush=True,
    )
    results["soak"] = bench.soak([all_cases[0].path, next(c.path for c in all_cases if c.name == "4.3")])
    results["seconds"] = round(time.monotonic() - started)
    results["tree_digest_end"] = lib.code_digest(Path(tree["tree"]))
    lib.write_results(args.out, "reads", results, markdown(results))


# --- beside the load: the 4.4 baseline and the 4.2 statement count ---

DASHBOARD = "/api/admin/personal-dashboard"
ARCHIVE = "/api/admin/archive/features"


def _timed(fn, repeats: int) -> tuple[float, object]:
    """Return (median seconds, last result) of ``repeats`` calls of ``fn``."""
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def traced_request(db_path: Path, token: str, path: str) -> tuple[int, bytes, list[str]]:
    """Make one GET through a freshly created Flask app (nothing cached, its connection opened
    for this request) and return (status, body, SQL statements it ran).

    Statements are traced from the connection's creation on, so the PRAGMAs that configure it
    are not counted. A request through another app first records the token's use, so that the
    traced one does not include the ``last_used_at`` write (made at most once a minute).
    """
    config = {"DATABASE": str(db_path), "SETTINGS": replace(settings_from_env({}), git_revision="bench")}
    headers = {"Authorization": token}
    create_app(config).test_client().get(path, headers=headers).get_data()
    app = create_app(config)
    traced: list[str] = []
    with app.app_context():
        conn = connection()  # this thread's connection, opened (and configured) now
    conn.trace(traced.append)
    try:
        response = app.test_client().get(path, headers=headers)
        body = response.get_data()
    finally:
        conn.trace(None)
    return response.status_code, body, traced


def dashboard_statements(db_path: Path, heavy_token: str) -> dict:
    """Count the SQL statements of one whole personal dashboard (4.2) request for ``heavy``
    (see :func:`traced_request`). The count must not depend on the size of the data."""
    status, body, statements = traced_request(db_path, heavy_token, DASHBOARD)
    if status != 200:
        raise RuntimeError(f"personal-dashboard answered {status}: {body[:200]}")
    return {"count": len(statements), "statements": statements}


def archive_baseline(db_path: Path, admin_token: str, repeats: int = 3) -> dict:
    """Time SQLite alone, then SQLite plus orjson, on the SELECT that 4.4 runs.

    The SELECT is taken from one traced 4.4 request (the longest statement reading
    ``features``), so it is exactly the store's, whatever its Python interface. Then, pinned to
    the server's core with the server stopped: ``sqlite_s``, the statement fetched in full;
    ``encoded_s``, fetched and encoded with ``orjson.dumps`` as ``{"version": 2, "features":
    [...]}`` (a row that is one JSON text goes in as ``orjson.Fragment``, other rows as arrays).
    Returns seconds, row count and body size.
    """
    status, body, statements = traced_request(db_path, admin_token, ARCHIVE)
    if status != 200:
        raise RuntimeError(f"archive/features answered {status}: {body[:200]}")
    sql = max((s for s in statements if "features" in s), key=len)
    cpus = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {0})
    db = connect(db_path)
    try:
        sqlite_s, rows = _timed(lambda: list(db.values(sql)), repeats)

        def encode() -> bytes:
            return orjson.dumps({"version": 2, "features": [orjson.Fragment(r) for r in db.values(sql)]})

        encoded_s, encoded = _timed(encode, repeats)
    finally:
        db.close()
        os.sched_setaffinity(0, cpus)
    return {"rows": len(rows), "sqlite_s": sqlite_s, "encoded_s": encoded_s, "body_bytes": len(encoded)}


# --- the report ---

TARGETS = (
    "4.3 and 4.1@0 reach at least 0.7 of the Flask ceiling's req/s",
    "4.1 p50 at the deep offset and at the last page within 3x that at offset 0",
    "4.2 p50 within 5x the Flask ceiling's p50",
    "4.4 whole response within 2x the SQLite+orjson baseline; memory growth under 100 MB",
    "soak: no errors, no memory growth from run 1 to run 2 (under 5 MiB)",
)


def medians(runs: list[dict]) -> dict:
    """Median req/s, latencies and request count over rounds; peak RSS is the maximum."""
    return {
        "rps": statistics.median(r["rps"] for r in runs),
        "p50_ms": statistics.median(r["p50_us"] for r in runs) / 1000,
        "p99_ms": statistics.median(r["p99_us"] for r in runs) / 1000,
        "requests": statistics.median(r["requests"] for r in runs),
        "peak_mib": max(r["peak_rss_kb"] for r in runs) / 1024,
        "errors": sum(r["errors"] for r in runs),
        "first_ms": statistics.median(r["first_ms"] for r in runs),
        "cpu_us": statistics.median(r.get("cpu_us", 0) for r in runs),
    }


def summary(results: dict) -> dict[str, dict[str, dict]]:
    """Medians per case and target (flagadmin, flask, wsgi)."""
    return {
        case: {t: medians(runs) for t, runs in targets.items()} for case, targets in results["runs"].items()
    }


def verdicts(results: dict) -> list[tuple[str, bool, str]]:
    """(target, met, the figures that decide it) for every target of the brief."""
    s = summary(results)
    names = list(s)
    at0, deep, last = names[0], names[1], names[2]
    out = []
    r43 = s["4.3"]["flagadmin"]["rps"] / s["4.3"]["flask"]["rps"]
    r41 = s[at0]["flagadmin"]["rps"] / s[at0]["flask"]["rps"]
    out.append((TARGETS[0], r43 >= 0.7 and r41 >= 0.7, f"4.3: {r43:.2f}, 4.1@0: {r41:.2f}"))
    p0 = s[at0]["flagadmin"]["p50_ms"]
    rd, rl = s[deep]["flagadmin"]["p50_ms"] / p0, s[last]["flagadmin"]["p50_ms"] / p0
    out.append((TARGETS[1], rd <= 3 and rl <= 3, f"{deep}: {rd:.2f}x, {last}: {rl:.2f}x"))
    r42 = s["4.2"]["flagadmin"]["p50_ms"] / s["4.2"]["flask"]["p50_ms"]
    out.append((TARGETS[2], r42 <= 5, f"{r42:.1f}x"))
    a = results["archive"]
    growth_mb = a["growth_kb"] * 1024 / 1e6
    out.append((TARGETS[3], a["ratio"] <= 2 and growth_mb < 100, f"{a['ratio']:.2f}x, {growth_mb:.0f} MB"))
    runs = results["soak"]["runs"]
    errors = sum(r["errors"] for r in runs)
    grown = (runs[1]["after"]["VmRSS"] - runs[0]["after"]["VmRSS"]) / 1024
    out.append(
        (TARGETS[4], errors == 0 and grown < 5, f"{errors} errors, RSS run 2 - run 1: {grown:+.1f} MiB")
    )
    return out


def _table(header: list[str], rows: list[list]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return lines


def markdown(results: dict) -> str:
    """The report: machine, data, method, the tables and the target verdicts."""
    m, d, o, s = results["machine"], results["data"], results["options"], summary(results)
    lines = [
        "# flagadmin benchmark results",
        "",
        f"- Date: {m['date']}; whole run {results['seconds']} s",
        f"- Command: `{results['command']}`",
        lib.code_line(results),
        f"- Machine: nproc {m['nproc']}, {m['cpu']}, {m['memory_gib']} GiB; Linux {m['kernel']}; "
        f"Python {m['python']}, SQLite {m['sqlite']}, {m['wrk']}{lib.speed_note(m)}",
        f"- Data (scale {d['scale']}): {d['users']:,} users, {d['projects']:,} projects, "
        f"{d['flags']:,} flags ({d['archived_flags']:,} archived), {d['integration_events']:,} "
        f"integration events ({d['events_per_integration']['1']:,} in integration 1); caller `heavy`: "
        f"root role {d['heavy_root_role']}, member of {d['heavy_projects']} projects, created "
        f"{d['heavy_created_flags']} flags; database {d['bytes'] / 2**20:,.0f} MiB, "
        f"built in {d['seconds']} s",
        f"- Method: each server started fresh per measurement, pinned to core 0 (waitress, "
        f"{o['threads']} threads); wrk -t1 pinned to core 1, {o['connections']} connections "
        f"({o['archive_connections']} for 4.4), {o['duration']} s per measurement, after warm-up "
        f"requests; {o['rounds']} rounds, each running every case on flagadmin, the Flask ceiling and "
        f"the WSGI ceiling in turn; figures are medians over rounds (peak RSS: the highest VmHWM).",
        "",
        "## Operations",
        "",
    ]
    rows = []
    for c in results["cases"]:
        f = s[c["name"]]["flagadmin"]
        rows.append(
            [
                c["name"],
                f"`{c['method']} {c['path']}`",
                c["connections"],
                f"{f['rps']:,.1f}",
                f"{f['p50_ms']:.2f}",
                f"{f['p99_ms']:.2f}",
                f"{results['body_bytes'][c['name']]:,}",
                f"{f['peak_mib']:.0f}",
                f"{f['first_ms']:.1f}",
                f"{f['cpu_us']:.0f}",
                f["errors"],
            ]
        )
    lines += _table(
        [
            "case",
            "request",
            "conns",
            "req/s",
            "p50 ms",
            "p99 ms",
            "body bytes",
            "peak RSS MiB",
            "first ms",
            "server CPU µs/req",
            "errors",
        ],
        rows,
    )
    lines += [
        "",
        "first ms: the first request on a freshly started server (nothing cached, no connection "
        "open), median over rounds; server CPU: user + system of every thread over the load, per "
        "request; errors: connect, read, write, non-2xx and timeouts, all rounds.",
    ]
    for name, targets in results["runs"].items():
        for i, r in enumerate(targets["flagadmin"]):
            if "error_sample" in r:
                lines.append(f"- {name}, round {i + 1}: {r['status']} non-2xx answers; {r['error_sample']}")
    lines += ["", "## Against the ceilings (same bytes, same waitress, same cores)", ""]
    rows = []
    for c in results["cases"]:
        f, fl, w = (s[c["name"]][t] for t in ("flagadmin", "flask", "wsgi"))
        rows.append(
            [
                c["name"],
                f"{fl['rps']:,.1f}",
                f"{fl['p50_ms']:.2f}",
                f"{w['rps']:,.1f}",
                f"{w['p50_ms']:.2f}",
                f"{f['rps'] / fl['rps']:.2f}",
                f"{f['rps'] / w['rps']:.2f}",
                f"{f['p50_ms'] / fl['p50_ms']:.1f}",
                f"{f['p50_ms'] / w['p50_ms']:.1f}",
            ]
        )
    lines += _table(
        [
            "case",
            "Flask req/s",
            "Flask p50 ms",
            "WSGI req/s",
            "WSGI p50 ms",
            "req/s ÷ Flask",
            "req/s ÷ WSGI",
            "p50 x Flask",
            "p50 x WSGI",
        ],
        rows,
    )
    lines += ["", "flagadmin req/s per round:", ""]
    rows = [
        [name, *(f"{r['rps']:,.1f}" for r in targets["flagadmin"])]
        for name, targets in results["runs"].items()
    ]
    lines += _table(["case", *(f"round {i + 1}" for i in range(int(o["rounds"])))], rows)

    a = results["archive"]
    lines += [
        "",
        "## 4.4 against SQLite + orjson",
        "",
        *_table(
            ["measure", "value"],
            [
                ["whole 4.4 response (http.client, median of 5)", f"{a['whole_s']:.3f} s"],
                ["first 4.4 response on a fresh server", f"{a['first_s']:.3f} s"],
                [
                    f"SQLite alone: the SELECT of 4.4, {a['baseline_rows']:,} rows fetched",
                    f"{a['baseline_sqlite_s']:.3f} s",
                ],
                ["SQLite + orjson.dumps of the rows as one document", f"{a['baseline_encoded_s']:.3f} s"],
                ["ratio whole response ÷ SQLite+orjson", f"{a['ratio']:.2f}"],
                ["body bytes (server / baseline)", f"{a['body_bytes']:,} / {a['baseline_body_bytes']:,}"],
                [
                    "VmHWM before → after one request (fresh server)",
                    f"{a['hwm_before_kb'] / 1024:.1f} → {a['hwm_after_kb'] / 1024:.1f} MiB "
                    f"(+{a['growth_kb'] * 1024 / 1e6:.0f} MB)",
                ],
            ],
        ),
    ]
    soak = results["soak"]
    lines += [
        "",
        f"## Soak: {o['soak_connections']} connections, {o['soak_duration']} s, twice, on one server",
        "",
        f"Requests alternate between `{soak['paths'][0]}` and `{soak['paths'][1]}` (admin token); wrk "
        f"timeout {o['soak_timeout']} s. Before: VmRSS {soak['before']['VmRSS'] / 1024:.1f} MiB, "
        f"VmHWM {soak['before']['VmHWM'] / 1024:.1f} MiB.",
        "",
    ]
    rows = [
        [
            i + 1,
            f"{r['requests']:,}",
            f"{r['rps']:,.1f}",
            f"{r['p50_us'] / 1000:.2f}",
            f"{r['p99_us'] / 1000:.2f}",
            f"{r['connect']}/{r['read']}/{r['write']}/{r['status']}/{r['timeout']}",
            f"{r['after']['VmRSS'] / 1024:.1f}",
            f"{r['after']['VmHWM'] / 1024:.1f}",
        ]
        for i, r in enumerate(soak["runs"])
    ]
    lines += _table(
        [
            "run",
            "requests",
            "req/s",
            "p50 ms",
            "p99 ms",
            "errors connect/read/write/non-2xx/timeout",
            "VmRSS after MiB",
            "VmHWM after MiB",
        ],
        rows,
    )
    lines += ["", "## 4.2 statement count for heavy", ""]
    rows = [[scale, q["count"]] for scale, q in results["query_counts"].items()]
    lines += _table(["scale", "SQL statements of one request (fresh app, nothing cached)"], rows)
    lines += ["", "## Targets", ""]
    lines += [f"- {'met' if ok else '**MISSED**'}: {target} ({why})" for target, ok, why in verdicts(results)]
    return "\n".join(lines) + "\n"


# --- SQLite against PostgreSQL, one process against two ---


def drive(
    bench: Bench,
    servers: list[lib.Server],
    case: Case,
    connections: int,
    duration: int | None = None,
    timeout: int | None = None,
) -> dict:
    """wrk against each server at once (``connections`` split between them) for ``duration`` s
    (default ``--duration``); combined figures."""
    auth = bench.tokens[case.token]
    for server in servers:
        lib.fetch(server.port, case.path, case.method, auth)
    share = max(1, connections // len(servers))
    results: list[dict] = [{} for _ in servers]

    def one(i: int) -> None:
        results[i] = lib.run_wrk(
            bench.wrk,
            servers[i].port,
            [case.path],
            method=case.method,
            auth=auth,
            duration=duration or bench.args.duration,
            connections=share,
            timeout=timeout or bench.args.timeout,
            log=bench.wrk_log,
        )

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(servers))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {
        "rps": sum(r["rps"] for r in results),
        "p50_us": max(r["p50_us"] for r in results),
        "p99_us": max(r["p99_us"] for r in results),
        "errors": sum(r["errors"] for r in results),
        "per_process_rps": [r["rps"] for r in results],
    }


def start(bench: Bench, db: str, cpus: list[str]) -> list[lib.Server]:
    """``flagadmin serve`` processes on ``db``, one per CPU of ``cpus``, each ready."""
    servers = []
    for cpu in cpus:
        port = lib.free_port()
        server = lib.Server(
            lib.flagadmin_command(db, port, bench.args.threads), port, bench.server_log, cpu=cpu
        )
        server.wait_ready()
        servers.append(server)
    return servers


def engines_main(args: argparse.Namespace, tree: dict) -> None:
    """The engine comparison (see the module's docstring); ``<out>/engines.{json,md}``."""
    args.out.mkdir(parents=True, exist_ok=True)
    meta = lib.ensure_database(args.sqlite, args.scale, False)
    schema.ensure_schema(args.db)
    with connect(args.db) as conn:
        flags = conn.value("SELECT count(*) FROM features")
    loaded = None
    if not flags:
        print(f"Loading {args.sqlite} into PostgreSQL ...", flush=True)
        loaded = lib.load_postgresql(args.sqlite, args.db)
    bench_args = argparse.Namespace(**{**vars(args), "db": args.sqlite})
    bench = Bench(bench_args, meta, lib.ensure_wrk())
    all_cases = cases(meta, args.archive_connections)
    setups = {
        "sqlite": (str(args.sqlite), ["0"]),
        "postgresql": (args.db, ["0"]),
        "postgresql x2": (args.db, ["0", "1"]),
    }
    figures: dict[str, dict[str, list[dict]]] = {c.name: {s: [] for s in setups} for c in all_cases}
    for r in range(1, args.rounds + 1):
        for case in all_cases:
            for setup, (db, cpus) in setups.items():
                servers = start(bench, db, cpus)
                try:
                    result = drive(bench, servers, case, case.connections or args.connections)
                finally:
                    for server in servers:
                        server.stop()
                figures[case.name][setup].append(result)
                print(
                    f"round {r}/{args.rounds} {case.name:<16} {setup:<14} {result['rps']:9.1f} req/s"
                    f"  p50 {result['p50_us'] / 1000:8.2f} ms  errors {result['errors']}",
                    flush=True,
                )
    soak = []
    servers = start(bench, args.db, ["0", "1"])
    try:
        soak_case = Case("soak", all_cases[0].path, "admin")
        for _ in range(2):
            soak.append(
                drive(bench, servers, soak_case, args.soak_connections, args.soak_duration, timeout=5)
            )
            print(
                f"soak across two processes: {soak[-1]['rps']:.1f} req/s, errors {soak[-1]['errors']}",
                flush=True,
            )
    finally:
        for server in servers:
            server.stop()
    results = {
        "load": loaded,
        "runs": figures,
        "soak": soak,
        "options": {k: str(v) for k, v in vars(args).items()},
        **tree,
        "command": lib.command_line(),
        "machine": lib.machine(),
    }
    markdown = f"`{results['command']}`\n\n{lib.machine_line(results['machine'])}\n\n"
    lib.write_results(
        args.out, "engines", results, markdown + engines_markdown(results, [c.name for c in all_cases])
    )


def engines_markdown(results: dict, names: list[str]) -> str:
    """The comparison as a Markdown table: medians over rounds, ratios to SQLite."""

    def median(name: str, setup: str, key: str) -> float:
        return statistics.median(f[key] for f in results["runs"][name][setup])

    lines = [
        "| case | SQLite req/s | PostgreSQL req/s | ratio | PostgreSQL x2 req/s | ratio"
        " | p50 ms SQLite / PG / PG x2 | errors |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name in names:
        s, p, p2 = (median(name, k, "rps") for k in ("sqlite", "postgresql", "postgresql x2"))
        p50 = " / ".join(
            f"{median(name, k, 'p50_us') / 1000:.2f}" for k in ("sqlite", "postgresql", "postgresql x2")
        )
        errors = sum(f["errors"] for setup in results["runs"][name].values() for f in setup)
        lines.append(
            f"| {name} | {s:,.1f} | {p:,.1f} | {p / s:.2f} | {p2:,.1f} | {p2 / s:.2f} | {p50} | {errors} |"
        )
    soak = results["soak"]
    lines.append("")
    lines.append(
        "Soak across two processes: "
        + ", ".join(f"{run_['rps']:.1f} req/s with {run_['errors']} errors" for run_ in soak)
        + "."
    )
    return "\n".join(lines) + "\n"
