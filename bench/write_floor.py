"""The floor of flag writes (issue 13's create and archive targets): what this stack serves when
a request does flagadmin's write and nothing else.

    python bench/write_floor.py [--db bench/data/traffic/main.db] [--kinds flag-archive,flag-create]
        [--rounds 3]

Three servers per kind, each in turn pinned to the server core and driven by ``writes.lua``
(8 connections, 10 s; the archives each take a fresh supply of live flags) on the same file:

- ``ceiling``: the Flask ceiling of ceilings.py, answering flagadmin's bytes for the write (an
  archive's empty 202 body, a create's flag) to every request: Flask, Werkzeug and waitress,
  no database;
- ``floor``: a Flask route that calls flagadmin's own write (``features.archive`` or
  ``features.create``: the permission check, the flag's rows, the ``feature-*`` event and its
  outbox rows in one transaction, made durable as every write is) for a caller found once, on
  a connection per thread; no authentication, no validation of the body, no per-request hooks
  or caches, no error handling beyond Flask's own: flagadmin's write with nothing around it;
- ``flagadmin``: ``flagadmin serve``.

All three go through ``flagadmin.serving.serve`` (the waitress set-up of ``flagadmin serve``)
with the same threads. Prints per round req/s, p50 and the server's CPU per request (user +
system, all threads, from ``/proc``), then the medians and the ratios floor ÷ ceiling and
flagadmin ÷ floor, all measured in the same run. Issue 13 sets the writes' targets as ten times
the reference server measured the same way (``traffic.py --reference``): flagadmin ÷ floor says
how far any work on flagadmin's web layer alone could take a write towards them.

The file is the working copy that ``traffic.py`` prepares (its ``traffic`` project and its
receivers' webhook configurations, all disabled here: the "0 integrations" case). It adds one
admin API token (named "bench write floor") to it; the flags written stay in it as
``traffic.py``'s do, and the supplies' flags left live are removed.
``--serve-floor PORT`` (used by the script itself) runs the floor server in the foreground.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import loadgen
import procs
import traffic
from flags import Client

from flagadmin.store import connect, tokens

BENCH = Path(__file__).resolve().parent
KINDS = ("flag-archive", "flag-create")
#: The flags of the project ``writes.lua`` writes to.
FLAGS_PATH = f"/api/admin/projects/{traffic.WRITE_PROJECT}/features"


def floor_app(db: str, token: str):
    """A Flask app answering the two flag writes of ``writes.lua`` in ``traffic.WRITE_PROJECT``
    with flagadmin's own write functions, as the admin ``token``'s caller (found once), and
    nothing else: ``DELETE .../features/<name>`` archives (202, no body), ``POST .../features``
    creates from the JSON body (201, the flag)."""
    import orjson
    from flask import Flask, Response, request

    from flagadmin import features
    from flagadmin.timestamps import Clock

    clock = Clock()
    with connect(db) as conn:
        caller = tokens.find_caller(conn, token, clock.now_rfc3339())
    if caller is None:
        raise SystemExit(f"the token given is not an API token of {db}")
    local = threading.local()
    app = Flask(__name__)

    def connection():
        conn = getattr(local, "conn", None)
        if conn is None:
            conn = local.conn = connect(db)
        return conn

    @app.delete("/api/admin/projects/<project>/features/<name>")
    def archive(project: str, name: str) -> Response:
        features.archive(connection(), caller, project, name, clock)
        return Response(status=202)

    @app.post("/api/admin/projects/<project>/features")
    def create(project: str) -> Response:
        flag = features.create(connection(), caller, project, request.get_json(), clock)
        return Response(orjson.dumps(flag), status=201, mimetype="application/json")

    return app


def ceiling_body(db: str, port: int, admin: str, kind: str) -> bytes:
    """flagadmin's answer to one ``kind`` write (made now, through the server at ``port``)."""
    name = f"floor-{time.time_ns()}"
    client = Client(port, admin)
    try:
        if kind == "flag-archive":
            traffic.add_supply(db, name, 1)
            status, _, body, _ = client.send("DELETE", f"{FLAGS_PATH}/{name}-0")
        else:
            status, _, body, _ = client.send("POST", FLAGS_PATH, {"name": name, "type": "release"})
    finally:
        client.close()
    if status not in (201, 202):
        raise SystemExit(f"flagadmin answered {status} to a {kind}: {body[:300]!r}")
    return body


def measure(wrk: str, server: procs.Server, kind: str, db: str, admin: str, args, log: Path) -> dict:
    """Drive ``server`` with ``kind`` writes (an archive load takes a supply of flags, made
    first and removed after); wrk's figures plus ``cpu_us``, the server's CPU per request."""
    run_tag = f"f{time.time_ns()}"
    env = {
        "BENCH_KIND": kind,
        "BENCH_TAG": run_tag,
        "BENCH_PROJECT": traffic.WRITE_PROJECT,
        "BENCH_AUTH": admin,
    }
    if kind == "flag-archive":
        # sized as traffic.py sizes its supplies: more than any server archives in the run
        traffic.add_supply(db, run_tag, traffic.SUPPLY_RATE * args.seconds + 10)
        env["BENCH_SUPPLY_PREFIX"] = run_tag
    try:
        with server:
            before = server.cpu_seconds()
            found = loadgen.run_wrk(
                wrk,
                server.port,
                [FLAGS_PATH],
                duration=args.seconds,
                connections=args.connections,
                timeout=10,
                log=log,
                script=BENCH / "writes.lua",
                env=env,
            )
            found["cpu_us"] = (server.cpu_seconds() - before) / max(1, found["requests"]) * 1e6
    finally:
        if kind == "flag-archive":
            traffic.remove_supply(db, run_tag)
    return found


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_db = str(BENCH / "data" / "traffic" / "main.db")
    p.add_argument("--db", default=default_db, help="a working copy prepared by traffic.py")
    p.add_argument("--kinds", default=",".join(KINDS), help="comma-separated, of: " + ", ".join(KINDS))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=int, default=10, help="seconds of wrk per measurement")
    p.add_argument("--connections", type=int, default=8)
    p.add_argument("--threads", type=int, default=8, help="waitress threads of every server")
    p.add_argument("--serve-floor", type=int, metavar="PORT", help=argparse.SUPPRESS)
    p.add_argument("--token", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.serve_floor:
        from flagadmin.serving import serve

        serve(floor_app(args.db, args.token), host=procs.HOST, port=args.serve_floor, threads=args.threads)
        return

    kinds = [k for k in args.kinds.split(",") if k]
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown or not kinds:
        sys.exit(f"--kinds takes {', '.join(KINDS)}, not {', '.join(unknown) or 'nothing'}")
    if not Path(args.db).is_file():
        sys.exit(f"{args.db} is missing: run python bench/traffic.py --phases writes once, which prepares it")
    with connect(args.db) as conn:
        if not conn.value("SELECT count(*) FROM projects WHERE id = ?", [traffic.WRITE_PROJECT]):
            sys.exit(f"{args.db} has no project {traffic.WRITE_PROJECT!r}: not a copy traffic.py prepared")
        admin = tokens.new_admin_token()
        tokens.insert_token(conn, admin, kind="admin", name="bench write floor")
    traffic.enable_receivers(args.db, traffic.receiver_ids(args.db), 0)
    wrk = loadgen.ensure_wrk()
    work = Path(tempfile.mkdtemp(prefix="write-floor-"))
    log = work / "servers.log"
    wrk_log = work / "wrk.log"

    port = procs.free_port()
    with procs.Server(procs.flagadmin_command(args.db, port, args.threads), port, log) as server:
        bodies = {kind: work / f"{kind}.json" for kind in kinds}
        for kind, path in bodies.items():
            path.write_bytes(ceiling_body(args.db, server.port, admin, kind))

    def command(setup: str, kind: str, port: int) -> list[str]:
        if setup == "ceiling":
            return procs.ceiling_command("flask", bodies[kind], port, args.threads)
        if setup == "floor":
            script = [sys.executable, str(Path(__file__).resolve()), "--db", args.db, "--token", admin]
            return [*script, "--threads", str(args.threads), "--serve-floor", str(port)]
        return procs.flagadmin_command(args.db, port, args.threads)

    setups = ("ceiling", "floor", "flagadmin")
    figures = {(kind, setup): [] for kind in kinds for setup in setups}
    print(f"flag writes on {args.db}, {args.connections} connections, {args.seconds} s each, 0 integrations")
    for r in range(1, args.rounds + 1):
        for kind in kinds:
            for setup in setups:
                port = procs.free_port()
                server = procs.Server(command(setup, kind, port), port, log)
                found = measure(wrk, server, kind, args.db, admin, args, wrk_log)
                if found["errors"]:
                    sys.exit(f"{kind} on {setup}: {found['errors']} errors; see {wrk_log} and {log}")
                figures[kind, setup].append(found)
                print(
                    f"round {r} {kind:12s} {setup:9s} {found['rps']:8.1f} req/s"
                    f"  p50 {found['p50_us'] / 1000:5.2f} ms  server CPU {found['cpu_us']:5.0f} µs a request",
                    flush=True,
                )
    print(f"medians of {args.rounds} rounds:")
    for kind in kinds:
        rps = {s: statistics.median(f["rps"] for f in figures[kind, s]) for s in setups}
        cpu = {s: statistics.median(f["cpu_us"] for f in figures[kind, s]) for s in setups}
        for setup in setups:
            print(f"  {kind:12s} {setup:9s} {rps[setup]:8.1f} req/s  server CPU {cpu[setup]:5.0f} µs each")
        print(f"  {kind:12s} floor / ceiling:   {rps['floor'] / rps['ceiling']:.2f}")
        print(f"  {kind:12s} flagadmin / floor: {rps['flagadmin'] / rps['floor']:.2f}")
    print(f"logs: {work}")


if __name__ == "__main__":
    main()
