"""SQLite against PostgreSQL, one process against two: ``python bench/run.py --db postgresql://...``.

Loads the reference database (``bench/data/bench.db``, built by generate.py when missing) into the
PostgreSQL database of ``--db`` when that one holds no flags yet, then measures every case of
run.py with wrk, in one run:

- ``sqlite``: one ``flagadmin serve`` on the SQLite file, pinned to core 0;
- ``postgresql``: one ``flagadmin serve`` on PostgreSQL, pinned to core 0;
- ``postgresql x2``: two ``flagadmin serve`` processes on PostgreSQL, pinned to cores 0 and 1,
  each driven by its own wrk with half the connections (the load balancer's share), figures
  summed (req/s) or merged (latency: the slower process's percentile).

wrk runs on core 1 (as in run.py); PostgreSQL is on the same machine, not pinned: with two
cores, "two processes" means two processes sharing the machine with PostgreSQL and wrk, which
the figures show. Ratios are to the SQLite figures of the same run. Then the soak: 64
connections across the two processes for ``--soak-duration`` s, twice, counting errors.
Results: ``<out>/engines.json`` and ``<out>/engines.md``.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import threading
import time
from pathlib import Path

import loadgen
import procs
import run

from flagadmin.store import connect, schema

#: Tables copied from SQLite to PostgreSQL, parents before children.
ORDER_FIRST = ("settings", "feature_types", "users", "projects", "environments", "integrations")


def table_order(sqlite_path: Path) -> list[str]:
    """The SQLite tables, each after the tables its foreign keys name."""
    conn = sqlite3.connect(sqlite_path)
    try:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        names = [n for n in names if not n.startswith("sqlite_")]
        parents = {n: {r[2] for r in conn.execute(f'PRAGMA foreign_key_list("{n}")')} for n in names}
    finally:
        conn.close()
    ordered: list[str] = [n for n in ORDER_FIRST if n in names]
    while len(ordered) < len(names):
        ready = [n for n in names if n not in ordered and parents[n] <= set(ordered) | {n}]
        if not ready:  # a cycle: take the rest as they come
            ready = [n for n in names if n not in ordered]
        ordered.extend(sorted(ready))
    return ordered


def load_postgresql(sqlite_path: Path, url: str) -> dict:
    """Copy every row of the SQLite database into the PostgreSQL one (schema created first),
    with COPY, foreign keys and triggers off during the copy (``session_replication_role``),
    then move the identity sequences past the copied ids. Returns rows per table and seconds."""
    import psycopg

    started = time.monotonic()
    schema.ensure_schema(url)
    counts: dict[str, int] = {}
    source = sqlite3.connect(sqlite_path)
    try:
        with psycopg.connect(url) as target:
            target.execute("SET session_replication_role = replica")
            for table in table_order(sqlite_path):
                columns = [r[1] for r in source.execute(f'PRAGMA table_info("{table}")')]
                wanted = {
                    r[0]
                    for r in target.execute(
                        "SELECT column_name FROM information_schema.columns WHERE table_name = %s", [table]
                    )
                }
                shared = [c for c in columns if c in wanted]
                if not shared:
                    continue
                target.execute(f'DELETE FROM "{table}"')
                names = ", ".join(f'"{c}"' for c in shared)
                rows = source.execute(f'SELECT {names} FROM "{table}"')
                n = 0
                with target.cursor().copy(f'COPY "{table}" ({names}) FROM STDIN') as copy:
                    for row in rows:
                        copy.write_row(row)
                        n += 1
                counts[table] = n
                print(f"  {table:<28} {n:>10,} rows", flush=True)
            target.execute(
                "INSERT INTO settings (key, value) VALUES ('schema_version', %s)"
                " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                [str(schema.SCHEMA_VERSION)],
            )
            for table, column in target.execute(
                "SELECT table_name, column_name FROM information_schema.columns"
                " WHERE is_identity = 'YES' AND table_schema = current_schema()"
            ).fetchall():
                target.execute(
                    f"SELECT setval(pg_get_serial_sequence('{table}', '{column}'),"
                    f" greatest((SELECT max({column}) FROM {table}), 1))"
                )
            target.execute("ANALYZE")
    finally:
        source.close()
    return {"rows": counts, "seconds": round(time.monotonic() - started, 1)}


def drive(
    bench: run.Bench,
    servers: list[procs.Server],
    case: run.Case,
    connections: int,
    duration: int | None = None,
    timeout: int | None = None,
) -> dict:
    """wrk against each server at once (``connections`` split between them) for ``duration`` s
    (default ``--duration``); combined figures."""
    auth = bench.tokens[case.token]
    for server in servers:
        procs.fetch(server.port, case.path, case.method, auth)
    share = max(1, connections // len(servers))
    results: list[dict] = [{} for _ in servers]

    def one(i: int) -> None:
        results[i] = loadgen.run_wrk(
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


def start(bench: run.Bench, db: str, cpus: list[str]) -> list[procs.Server]:
    """``flagadmin serve`` processes on ``db``, one per CPU of ``cpus``, each ready."""
    servers = []
    for cpu in cpus:
        port = procs.free_port()
        server = procs.Server(
            procs.flagadmin_command(db, port, bench.args.threads), port, bench.server_log, cpu=cpu
        )
        server.wait_ready()
        servers.append(server)
    return servers


def main(argv: list[str]) -> None:
    """Run the comparison (see the module's docstring)."""
    p = argparse.ArgumentParser(description="flagadmin on SQLite and on PostgreSQL, one and two processes")
    p.add_argument("--db", required=True, help="postgresql:// URL of the database to measure")
    p.add_argument("--sqlite", type=Path, default=run.BENCH / "data" / "bench.db")
    p.add_argument("--scale", type=float, default=1.0)
    p.add_argument("--out", type=Path, default=run.BENCH / "out")
    p.add_argument("--duration", type=int, default=10)
    p.add_argument("--connections", type=int, default=8)
    p.add_argument("--archive-connections", type=int, default=2)
    p.add_argument("--timeout", type=int, default=60)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--threads", type=int, default=8)
    p.add_argument("--soak-duration", type=int, default=30)
    p.add_argument("--soak-connections", type=int, default=64)
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    meta = run.ensure_database(args.sqlite, args.scale, False)
    schema.ensure_schema(args.db)
    with connect(args.db) as conn:
        flags = conn.value("SELECT count(*) FROM features")
    loaded = None
    if not flags:
        print(f"Loading {args.sqlite} into PostgreSQL ...", flush=True)
        loaded = load_postgresql(args.sqlite, args.db)
    bench_args = argparse.Namespace(**{**vars(args), "db": args.sqlite})
    bench = run.Bench(bench_args, meta, loadgen.ensure_wrk())
    all_cases = run.cases(meta, args.archive_connections)
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
        soak_case = run.Case("soak", all_cases[0].path, "admin")
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
    }
    (args.out / "engines.json").write_text(json.dumps(results, indent=2) + "\n")
    (args.out / "engines.md").write_text(markdown(results, [c.name for c in all_cases]))
    print((args.out / "engines.md").read_text())


def markdown(results: dict, names: list[str]) -> str:
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


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
