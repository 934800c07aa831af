"""The floor of spec 4.1 at random offsets: what Flask can serve when a request does the page
query and nothing else.

    python bench/page_floor.py [--db bench/data/bench.db] [--integration 1] [--rounds 3]

Three servers, each in turn pinned to the server core and driven by ``random_offset.lua`` (a
random offset per request over the whole log, 8 connections) on the same file:

- ``ceiling``: the Flask ceiling of ceilings.py, answering one page's bytes to every request;
- ``floor``: a Flask route that runs the store's page query (``integration_events.page``, on a
  connection per thread) and joins the rows, with no authentication, no parameter validation,
  no cache and no headers beyond Flask's own: the least any 4.1 can do on this stack;
- ``flagadmin``: ``flagadmin serve``.

The database file is read through before each measurement that queries it (the page cache
keeps it then). Prints req/s and p50 of each per round, then the medians and the ratios floor ÷ ceiling,
flagadmin ÷ ceiling and flagadmin ÷ floor, all measured in the same run. The issue-13 target
for 4.1 at random offsets is flagadmin ÷ ceiling >= 0.5; floor ÷ ceiling says how much of that
the page query alone leaves.

It adds one admin API token (named "bench page floor") to the file, for the requests.
``--serve-floor PORT`` (used by the script itself) runs the floor server in the foreground.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
from pathlib import Path

import loadgen
import procs

from flagadmin.store import connect, tokens
from flagadmin.store import integration_events as store_log

BENCH = Path(__file__).resolve().parent
LIMIT = 50


def floor_app(db: str, integration: int):
    """A Flask app answering ``GET /api/admin/addons/<id>/events?offset=N`` with the page of
    ``integration`` at offset N (``LIMIT`` rows) as of the log's head at start-up: the page
    query and the join, nothing else."""
    from flask import Flask, Response, request

    with connect(db) as conn:
        head = store_log.head(conn, integration).head
    local = threading.local()
    app = Flask(__name__)

    @app.route("/api/admin/addons/<id>/events")
    def events(id: str) -> Response:
        conn = getattr(local, "conn", None)
        if conn is None:
            conn = local.conn = connect(db)
        items = store_log.page(conn, integration, head, LIMIT, int(request.args.get("offset", 0)))
        return Response(b'{"integrationEvents":[' + b",".join(items) + b"]}", mimetype="application/json")

    return app


def measure(wrk: str, server: procs.Server, path: str, env: dict, args, log: Path) -> dict:
    """Warm ``server`` with one page of ``path``, then drive it with random offsets; wrk's
    figures."""
    with server:
        status, _, _ = procs.fetch(server.port, f"{path}?limit={LIMIT}&offset=0", auth=env["BENCH_AUTH"])
        if status != 200:
            raise RuntimeError(f"warm-up answered {status}; see {server.log.name}")
        return loadgen.run_wrk(
            wrk,
            server.port,
            [path],
            duration=args.seconds,
            connections=args.connections,
            timeout=10,
            log=log,
            script=BENCH / "random_offset.lua",
            env=env,
        )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--db", default=str(BENCH / "data" / "bench.db"), help="SQLite file built by generate.py")
    p.add_argument("--integration", type=int, default=1)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=int, default=10, help="seconds of wrk per measurement")
    p.add_argument("--connections", type=int, default=8)
    p.add_argument("--threads", type=int, default=8, help="waitress threads of every server")
    p.add_argument("--serve-floor", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = p.parse_args()
    path = f"/api/admin/addons/{args.integration}/events"
    if args.serve_floor:
        from flagadmin.serving import serve

        serve(
            floor_app(args.db, args.integration), host=procs.HOST, port=args.serve_floor, threads=args.threads
        )
        return

    if not Path(args.db).is_file():
        sys.exit(f"{args.db} is missing: build it with python bench/generate.py --scale 1.0 --db {args.db}")
    wrk = loadgen.ensure_wrk()
    admin = tokens.new_admin_token()
    with connect(args.db) as conn:
        tokens.insert_token(conn, admin, kind="admin", name="bench page floor")
        bounds = store_log.head(conn, args.integration)
        if bounds is None or bounds.head - bounds.low + 1 < LIMIT:
            sys.exit(f"integration {args.integration} has no log of at least {LIMIT} rows in {args.db}")
    events = bounds.head - bounds.low + 1
    env = {"BENCH_AUTH": admin, "BENCH_INTEGRATION": str(args.integration), "BENCH_EVENTS": str(events)}
    work = Path(tempfile.mkdtemp(prefix="page-floor-"))
    log = work / "servers.log"
    wrk_log = work / "wrk.log"

    # the ceiling's bytes: a page from the middle of the log, as flagadmin answers it
    port = procs.free_port()
    with procs.Server(procs.flagadmin_command(args.db, port, args.threads), port, log) as server:
        status, body, _ = procs.fetch(server.port, f"{path}?limit={LIMIT}&offset={events // 2}", auth=admin)
    if status != 200:
        sys.exit(f"flagadmin answered {status} for the ceiling's page; see {log}")
    page = work / "page.json"
    page.write_bytes(body)

    def command(kind: str, port: int) -> list[str]:
        if kind == "ceiling":
            return procs.ceiling_command("flask", page, port, args.threads)
        if kind == "floor":
            return [
                sys.executable,
                str(Path(__file__).resolve()),
                "--db",
                args.db,
                "--integration",
                str(args.integration),
                "--threads",
                str(args.threads),
                "--serve-floor",
                str(port),
            ]
        return procs.flagadmin_command(args.db, port, args.threads)

    kinds = ("ceiling", "floor", "flagadmin")
    figures: dict[str, list[dict]] = {kind: [] for kind in kinds}
    print(
        f"4.1 at random offsets over {events:,} events of integration {args.integration},"
        f" pages of {len(body):,} B"
    )
    for r in range(1, args.rounds + 1):
        for kind in kinds:
            if kind != "ceiling":
                print(f"(read {args.db} in {procs.read_through(args.db):.1f} s)", flush=True)
            port = procs.free_port()
            found = measure(wrk, procs.Server(command(kind, port), port, log), path, env, args, wrk_log)
            if found["errors"]:
                sys.exit(f"{kind}: {found['errors']} errors; see {wrk_log}")
            figures[kind].append(found)
            print(
                f"round {r} {kind:9s} {found['rps']:8.1f} req/s  p50 {found['p50_us'] / 1000:6.2f} ms",
                flush=True,
            )
    rps = {kind: statistics.median(f["rps"] for f in figures[kind]) for kind in kinds}
    p50 = {kind: statistics.median(f["p50_us"] for f in figures[kind]) / 1000 for kind in kinds}
    print(f"medians of {args.rounds} rounds:")
    for kind in kinds:
        print(f"  {kind:9s} {rps[kind]:8.1f} req/s  p50 {p50[kind]:6.2f} ms")
    print(f"floor / ceiling:     {rps['floor'] / rps['ceiling']:.2f}")
    print(f"flagadmin / ceiling: {rps['flagadmin'] / rps['ceiling']:.2f}")
    print(f"flagadmin / floor:   {rps['flagadmin'] / rps['floor']:.2f}")
    print(f"logs: {work}")


if __name__ == "__main__":
    main()
