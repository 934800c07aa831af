"""sdk-writes: what SDKs report, under load, against a bare route answering 202.

    python -m bench sdk-writes [--rounds 3] [--seconds 10] [--connections 8] [--flags 20] [--quick]

What it measures, on a small database made for the run (the demo data, ``--flags`` live flags
in ``development``, a client token of every project in ``development``):

- ``POST /api/client/metrics``: the Python SDK's report of ``--flags`` flags (yes, no and a
  variant each, its metadata, a bucket of one minute), the same body every request;
- ``POST /api/client/register``: the Python SDK's registration;
- the ceilings, measured in the same run with the same request bodies: a Flask route and a bare
  WSGI callable answering 202 without a body, through ``flagadmin.serving.serve`` (flagadmin's
  waitress set-up), same threads, same core. The report gives flagadmin's req/s as a ratio to
  the Flask ceiling's (the line: 0.5), and the server CPU per request of each.

The flagadmin servers run with their default write interval
(``FLAGADMIN_CLIENT_METRICS_FLUSH_INTERVAL``, 2 s): the writer thread writes what the load
reported while it is measured, as it would in production. After the run, the case checks that
the counts were written (the sum of ``yes`` in ``client_metrics`` is positive).

Protocol: every measurement on a freshly started server pinned to core 0 (``taskset``), wrk
``-t1`` pinned to core 1, a few warm-up requests, then ``--seconds`` of load; each round runs
the four targets in turn; figures are medians over ``--rounds``. The tree measured is a
snapshot (``--tree``). Results: ``<out>/sdk-writes.{json,md}``; the database, bodies, wrk
script and logs in ``<out>/sdk-writes/``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import statistics
from pathlib import Path

from bench import lib

#: The line each ratio is held to (the issue's figures).
LINE = 0.5

METRICS = "/api/client/metrics"
REGISTER = "/api/client/register"

#: A wrk script posting one body (BENCH_BODY, a file) with ``Content-Type: application/json``,
#: on top of the suite's own (its method, token and paths, and the BENCH_JSON line at the end).
POST_SCRIPT = """dofile({wrk_lua!r})
local file = assert(io.open(os.getenv("BENCH_BODY"), "rb"))
wrk.body = file:read("*a")
file:close()
wrk.headers["Content-Type"] = "application/json"
"""


def prepare(folder: Path, flags: int) -> dict:
    """Make the run's database in ``folder`` (the demo data, ``flags`` flags in development, a
    client and an admin token); return ``{"db", "client_token", "admin_token", "flags"}``."""
    from flagadmin import events
    from flagadmin.app import create_app
    from flagadmin.seed.documents import demo_files, load_files
    from flagadmin.store import connect, schema
    from flagadmin.store import tokens as store_tokens
    from flagadmin.tokens import changes as token_changes

    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    db = folder / "sdk.db"
    schema.ensure_schema(str(db))
    names = [f"sdk-bench-{i:03d}" for i in range(flags)]
    with connect(str(db)) as conn:
        load_files(conn, demo_files())
        client_token, _ = token_changes.create_api_token(
            conn, events.COMMAND_LINE, type="client", name="bench", environment="development", projects=["*"]
        )
        admin_token = store_tokens.new_admin_token()
        store_tokens.insert_token(conn, admin_token, kind="admin", name="bench")
    client = create_app({"DATABASE": str(db)}).test_client()
    for name in names:
        response = client.post(
            "/api/admin/projects/default/features",
            json={"name": name},
            headers={"Authorization": admin_token},
        )
        if response.status_code != 201:
            raise RuntimeError(f"flag {name}: {response.status_code} {response.get_data(as_text=True)}")
    return {"db": str(db), "client_token": client_token, "admin_token": admin_token, "flags": names}


def bodies(folder: Path, flags: list[str]) -> dict[str, Path]:
    """Write the two request bodies (the Python SDK's, as seen on the wire); their paths."""
    metadata = {
        "appName": "bench-app",
        "instanceId": "bench-instance",
        "connectionId": "8a7f0b5e-1c2d-4e3f-9a8b-7c6d5e4f3a2b",
        "platformName": "CPython",
        "platformVersion": "3.11.7",
        "yggdrasilVersion": "0.17.0",
        "specVersion": "5.2.0",
    }
    metrics = {
        **metadata,
        "bucket": {
            "start": "2026-11-27T10:15:00.414771930Z",
            "stop": "2026-11-27T10:16:00.416001767Z",
            "toggles": {name: {"yes": 37, "no": 5, "variants": {"blue": 12}} for name in flags},
        },
    }
    register = {
        **metadata,
        "sdkVersion": "unleash-python-sdk:6.9.1",
        "strategies": ["default", "gradualRollout", "flexibleRollout"],
        "started": "2026-11-27T10:00:00.123456+00:00",
        "interval": 60,
    }
    paths = {METRICS: folder / "metrics.json", REGISTER: folder / "register.json"}
    paths[METRICS].write_bytes(json.dumps(metrics).encode())
    paths[REGISTER].write_bytes(json.dumps(register).encode())
    return paths


def ceiling_index(folder: Path) -> Path:
    """The ceilings' answers: 202 without a body to a POST of either path."""
    (folder / "empty").write_bytes(b"")
    entries = [
        {"method": "POST", "path": path, "query": None, "auth": None, "gzip": False, "status": 202,
         "headers": [], "body": "empty"}
        for path in (METRICS, REGISTER)
    ]  # fmt: skip
    index = folder / "ceiling-index.json"
    index.write_text(json.dumps(entries))
    return index


class Run:
    """What every measurement shares."""

    def __init__(self, args: argparse.Namespace, work: Path, state: dict, wrk: str) -> None:
        self.args = args
        self.work = work
        self.state = state
        self.wrk = wrk
        self.bodies = bodies(work, state["flags"])
        self.index = ceiling_index(work)
        self.script = work / "post.lua"
        self.script.write_text(POST_SCRIPT.format(wrk_lua=str(lib.LUA / "wrk.lua")))
        self.server_log = work / "servers.log"
        self.wrk_log = work / "wrk.log"

    def server(self, target: str) -> lib.Server:
        port = lib.free_port()
        if target == "flagadmin":
            command = lib.flagadmin_command(self.state["db"], port, self.args.threads)
        else:
            command = lib.ceiling_command(target, port, self.args.threads, index=self.index)
        return lib.Server(command, port, self.server_log)

    def measure(self, target: str, path: str) -> dict:
        """A fresh ``target`` server under wrk posting ``path``'s body; its figures."""
        token = self.state["client_token"]
        body = json.loads(self.bodies[path].read_bytes())
        with self.server(target) as server:
            client = lib.Client(server.port, token)
            try:
                for _ in range(5):
                    status = client.send("POST", path, body)[0]
                    if status != 202:
                        raise RuntimeError(f"{target}: POST {path} answered {status} while warming up")
            finally:
                client.close()
            cpu_before = server.cpu_seconds()
            figures = lib.run_wrk(
                self.wrk,
                server.port,
                [path],
                method="POST",
                auth=token,
                duration=self.args.duration,
                connections=self.args.connections,
                timeout=10,
                log=self.wrk_log,
                script=self.script,
                env={"BENCH_BODY": str(self.bodies[path])},
            )
            cpu = server.cpu_seconds() - cpu_before
        figures["cpu_us_per_request"] = cpu / max(figures["requests"], 1) * 1e6
        return figures


def written_yes(db: str) -> int:
    """The sum of ``yes`` the servers wrote (0: the reports were not written)."""
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT coalesce(sum(yes), 0) FROM client_metrics").fetchone()[0]


def main(argv: list[str]) -> None:
    """Run the case (see the module's docstring)."""
    p = argparse.ArgumentParser(prog="python -m bench sdk-writes", description=__doc__.splitlines()[0])
    lib.add_common_options(p, db=False)
    p.add_argument("--threads", type=int, default=8, help="server threads (default 8)")
    p.add_argument("--connections", type=int, default=8, help="wrk connections (default 8)")
    p.add_argument("--flags", type=int, default=20, help="flags in a metrics report (default 20)")
    args = p.parse_args(argv)
    if args.quick:
        args.rounds, args.duration = 1, 3
    tree = lib.measured_tree(args)
    machine = lib.machine()
    wrk = lib.ensure_wrk()
    machine["wrk"] = lib.wrk_version(wrk)
    work = args.out / "sdk-writes"
    run = Run(args, work, prepare(work, args.flags), wrk)
    targets = [
        ("metrics", "flagadmin", METRICS),
        ("register", "flagadmin", REGISTER),
        ("metrics: flask 202", "flask", METRICS),
        ("register: flask 202", "flask", REGISTER),
        ("metrics: wsgi 202", "wsgi", METRICS),
        ("register: wsgi 202", "wsgi", REGISTER),
    ]
    rounds: dict[str, list[dict]] = {name: [] for name, _, _ in targets}
    for r in range(1, args.rounds + 1):
        for name, target, path in targets:
            figures = run.measure(target, path)
            rounds[name].append(figures)
            print(
                f"round {r}: {name:20} {figures['rps']:8,.0f} req/s, p50 {figures['p50_us'] / 1000:.2f} ms,"
                f" {figures['cpu_us_per_request']:6.0f} µs CPU/req, {figures['errors']} errors",
                flush=True,
            )
    medians = {
        name: {
            key: statistics.median(f[key] for f in figures)
            for key in ("rps", "p50_us", "p99_us", "cpu_us_per_request", "errors")
        }
        for name, figures in rounds.items()
    }
    ratios = {
        name: medians[name]["rps"] / medians[f"{name}: flask 202"]["rps"] for name in ("metrics", "register")
    }
    yes = written_yes(run.state["db"])
    results = {
        **tree,
        "tree_digest_end": lib.code_digest(Path(tree["tree"])),
        "command": lib.command_line(),
        "machine": machine,
        "options": {k: str(v) for k, v in vars(args).items()},
        "rounds": rounds,
        "medians": medians,
        "ratios": ratios,
        "line": LINE,
        "written_yes": yes,
    }
    rows = [
        [
            name,
            f"{m['rps']:,.0f}",
            f"{m['p50_us'] / 1000:.2f}",
            f"{m['p99_us'] / 1000:.2f}",
            f"{m['cpu_us_per_request']:,.0f}",
            f"{m['errors']:.0f}",
        ]
        for name, m in medians.items()
    ]
    lines = [
        "# sdk-writes",
        "",
        f"`{results['command']}`",
        "",
        f"- Machine: {lib.machine_line(machine)}",
        lib.code_line(results),
        f"- {args.rounds} rounds of {args.duration} s, {args.connections} connections, {args.threads} server"
        f" threads; a metrics report of {args.flags} flags; medians over rounds",
        "",
        *lib.markdown_table(["target", "req/s", "p50 ms", "p99 ms", "server CPU µs/req", "errors"], rows),
        "",
        *[
            f"- {name}: {ratio:.2f} of the Flask route answering 202 (line {LINE}:"
            f" {'met' if ratio >= LINE else 'NOT met'})"
            for name, ratio in ratios.items()
        ],
        f"- Written by the servers' writer threads: {yes:,} yes counts in client_metrics"
        + ("" if yes > 0 else " (NOTHING WRITTEN: the reports were lost)"),
        "",
    ]
    lib.write_results(args.out, "sdk-writes", results, "\n".join(lines))
