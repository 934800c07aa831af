"""Before and after, in alternated pairs: what each speed mechanism removed (or kept) buys.

    python bench/probes/clarity_debt.py --db bench.db --tree before=DIR --tree after=DIR \\
        --cases ui-config,dashboard,create,archive,viewer-archive [--pairs 3] [--seconds 5]

Each ``DIR`` holds the package to measure under the name ``flagadmin`` (a symlink to a
``git worktree`` of a commit will do): it goes first on the servers' ``PYTHONPATH``. ``--db`` is
a database built by the old harness (``bench/generate.py --scale S --db PATH``, which writes
``PATH.json`` with the admin and ``heavy`` tokens and ``PATH.users.json`` with 1,000 users'
tokens beside it); every tree gets its own copy of it, made once at the start (a tree may
upgrade its schema).

Every measurement starts a fresh ``flagadmin serve --threads 8`` pinned to core 0 (``taskset``);
the load (wrk ``-t1``, this script) runs on core 1. Cases:

- ``ui-config``: ``GET /api/admin/ui-config`` with the admin token (spec 4.3, answered from
  the kept answer: what is left is the token check and the hooks);
- ``dashboard``: ``GET /api/admin/personal-dashboard`` with ``heavy``'s token (4.2, kept);
- ``events``: ``GET /api/admin/addons/1/events?limit=50&offset=0`` with the admin token (4.1's
  first page, kept);
- ``create``: flag creates, ``POST /api/admin/projects/probe/features`` (201);
- ``archive``: flag archives, ``DELETE .../features/<name>`` of live flags inserted before;
- ``viewer-archive``: on one fresh server, each Viewer's first ``GET /api/admin/archive/features``
  (4.4, built for that caller: nothing kept yet), one keep-alive connection, one request each.

wrk cases: a 1 s warm-up, then ``--seconds`` of load with 8 connections. Figures: req/s and the
server's CPU (user + system, every thread, from ``/proc``) per request; for ``viewer-archive``,
the median time of one request seen by the client and the server CPU per request. Each pair runs
the trees in turn, the order swapped from one pair to the next; the summary gives per tree the
median and the range over pairs, and the median of the per-pair ratios (each tree ÷ the first).
Every server's output goes to ``--out``/servers.log, wrk's reports to ``--out``/wrk.log.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import shutil
import socket
import sqlite3
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
HOST = "127.0.0.1"
SERVER_CPU = "0"
LOAD_CPU = "1"
PROJECT = "probe"
FLAGS = f"/api/admin/projects/{PROJECT}/features"
WRK_CASES = {
    "ui-config": ("get", "/api/admin/ui-config", "admin"),
    "dashboard": ("get", "/api/admin/personal-dashboard", "heavy"),
    "events": ("get", "/api/admin/addons/1/events?limit=50&offset=0", "admin"),
    "create": ("create", FLAGS, "admin"),
    "archive": ("archive", FLAGS, "admin"),
}
CASES = (*WRK_CASES, "viewer-archive")
#: Live flags inserted before an archive load: more than any tree archives in the run.
ARCHIVE_RATE = 4000
#: The environments every generated flag has.
ENVIRONMENTS = ("development", "production")


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


class Server:
    """``flagadmin serve`` of one tree on ``db``, pinned to :data:`SERVER_CPU`."""

    def __init__(self, tree: Path, db: Path, log: Path):
        self.port = free_port()
        env = {
            **os.environ,
            "PYTHONPATH": str(tree),
            "PYTHONUNBUFFERED": "1",
            "FLAGADMIN_INTEGRATION_EVENTS_KEEP": "1000000000",
            "FLAGADMIN_INTEGRATION_EVENTS_MAX_AGE": "P36500D",
        }
        command = [sys.executable, "-m", "flagadmin", "serve", "--db", str(db), "--port", str(self.port)]
        self.log = log.open("ab")
        self.proc = subprocess.Popen(
            ["taskset", "-c", SERVER_CPU, *command, "--threads", "8"],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd="/",
        )
        deadline = time.monotonic() + 60
        while True:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"server of {tree} did not start; see {log}")
            try:
                socket.create_connection((HOST, self.port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def wrk(port: int, kind: str, path: str, auth: str, tag: str, seconds: int, log: Path) -> dict:
    env = {**os.environ, "PROBE_KIND": kind, "PROBE_PATH": path, "PROBE_AUTH": auth, "PROBE_TAG": tag}
    command = ["taskset", "-c", LOAD_CPU, "wrk", "-t1", "-c8", f"-d{seconds}s", "--latency"]
    command += ["-s", str(HERE / "clarity.lua"), f"http://{HOST}:{port}{path}"]
    out = subprocess.run(command, capture_output=True, text=True, env=env, check=True).stdout
    with log.open("a") as f:
        f.write(f"$ {kind} {path} {tag}\n{out}\n")
    figures = {"requests": 0, "errors": 0}
    for line in out.splitlines():
        words = line.split()
        if "requests in" in line:
            figures["requests"] = int(words[0])
        elif line.startswith("Requests/sec:"):
            figures["rps"] = float(words[1])
        elif line.startswith("Non-2xx") or line.startswith("Socket errors"):
            figures["errors"] += sum(int(w.strip(",")) for w in words if w.strip(",").isdigit())
        elif words[:1] == ["50%"]:
            figures["p50"] = words[1]
    return figures


def prepare(source: Path, dest: Path, sql: str = "") -> None:
    """A copy of ``source`` with the probe's project, made once per tree, then ``sql`` run on it
    (``--sql``: what a tree's code expects of its database, e.g. triggers dropped)."""
    with sqlite3.connect(source) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    shutil.copyfile(source, dest)
    with sqlite3.connect(dest) as conn:
        conn.execute("INSERT OR IGNORE INTO projects (id, name) VALUES (?, ?)", [PROJECT, PROJECT])
        conn.executescript(sql)


def add_supply(db: Path, prefix: str, count: int) -> None:
    """``count`` live flags ``<prefix>-0`` ... in :data:`PROJECT` (server stopped)."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    with sqlite3.connect(db) as conn:
        conn.executemany(
            "INSERT INTO features (name, project_id, type, description, created_at) VALUES (?, ?, ?, ?, ?)",
            [(f"{prefix}-{i}", PROJECT, "release", "to archive", now) for i in range(count)],
        )
        conn.executemany(
            "INSERT INTO feature_environments (feature_name, name, enabled) VALUES (?, ?, ?)",
            [(f"{prefix}-{i}", env, i % 2) for i in range(count) for env in ENVIRONMENTS],
        )


def run_wrk_case(case: str, tree: Path, db: Path, tokens: dict, seconds: int, out: Path) -> dict:
    kind, path, who = WRK_CASES[case]
    tag = f"p{time.time_ns()}"
    if kind == "archive":
        add_supply(db, tag + "w", ARCHIVE_RATE * 2)
        add_supply(db, tag, ARCHIVE_RATE * (seconds + 1))
    server = Server(tree, db, out / "servers.log")
    try:
        wrk(server.port, kind, path, tokens[who], tag + "w", 1, out / "wrk.log")  # warm-up
        before = server.cpu_seconds()
        found = wrk(server.port, kind, path, tokens[who], tag, seconds, out / "wrk.log")
        found["cpu_us"] = (server.cpu_seconds() - before) / max(1, found["requests"]) * 1e6
    finally:
        server.stop()
    return found


def run_viewer_archive(tree: Path, db: Path, viewers: list[str], out: Path) -> dict:
    server = Server(tree, db, out / "servers.log")
    try:
        conn = http.client.HTTPConnection(HOST, server.port, timeout=60)
        conn.request("GET", "/health")
        conn.getresponse().read()
        times = []
        before = server.cpu_seconds()
        for token in viewers:
            start = time.perf_counter()
            conn.request("GET", "/api/admin/archive/features", headers={"Authorization": token})
            response = conn.getresponse()
            body = response.read()
            times.append(time.perf_counter() - start)
            if response.status != 200:
                raise RuntimeError(f"4.4 answered {response.status}: {body[:200]!r}")
        cpu = server.cpu_seconds() - before
        conn.close()
    finally:
        server.stop()
    return {
        "requests": len(viewers),
        "ms": statistics.median(times) * 1000,
        "cpu_us": cpu / len(viewers) * 1e6,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--db", required=True, type=Path)
    p.add_argument("--tree", action="append", required=True, help="name=DIR (DIR/flagadmin is the package)")
    p.add_argument("--sql", action="append", default=[], help="name=FILE: SQL run on that tree's copy")
    p.add_argument("--cases", default=",".join(CASES))
    p.add_argument("--pairs", type=int, default=3)
    p.add_argument("--seconds", type=int, default=5)
    p.add_argument("--viewers", type=int, default=200, help="Viewers in viewer-archive")
    p.add_argument("--work", type=Path, default=Path("/tmp/clarity-probe"))
    args = p.parse_args()
    os.sched_setaffinity(0, {int(LOAD_CPU)})
    trees = dict(t.split("=", 1) for t in args.tree)
    cases = [c for c in args.cases.split(",") if c]
    unknown = set(cases) - set(CASES)
    if unknown:
        sys.exit(f"unknown cases {sorted(unknown)}; known: {', '.join(CASES)}")
    meta = json.loads(args.db.with_suffix(".json").read_text())
    tokens = {"admin": meta["admin_token"], "heavy": meta["heavy_token"]}
    users = json.loads(args.db.with_suffix(".users.json").read_text())
    viewers = [u["token"] for u in users if u["root_role"] == "Viewer"][: args.viewers]
    args.work.mkdir(parents=True, exist_ok=True)
    sql = {name: Path(path).read_text() for name, path in (s.split("=", 1) for s in args.sql)}
    dbs = {}
    for name in trees:
        dbs[name] = args.work / f"{name}.db"
        prepare(args.db, dbs[name], sql.get(name, ""))
    print(
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.node()}, {os.cpu_count()} cores,"
        f" Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}; db {args.db}"
        f" ({meta.get('scale')}); {args.pairs} pairs, {args.seconds} s each",
        flush=True,
    )
    results: dict[tuple[str, str], list[dict]] = {(c, t): [] for c in cases for t in trees}
    names = list(trees)
    for pair in range(args.pairs):
        order = names if pair % 2 == 0 else names[::-1]
        for case in cases:
            for name in order:
                tree = Path(trees[name])
                if case == "viewer-archive":
                    found = run_viewer_archive(tree, dbs[name], viewers, args.work)
                    line = f"{found['ms']:7.2f} ms"
                else:
                    found = run_wrk_case(case, tree, dbs[name], tokens, args.seconds, args.work)
                    line = f"{found['rps']:8.1f} req/s p50 {found.get('p50')} errors {found['errors']}"
                results[case, name].append(found)
                print(
                    f"pair {pair + 1} {case:14s} {name:10s} {line}  CPU {found['cpu_us']:6.0f} µs/req",
                    flush=True,
                )
    print("medians [range] over pairs; ratio: median of the per-pair ratios to the first tree")
    first = names[0]
    for case in cases:
        main_key = "ms" if case == "viewer-archive" else "rps"
        for name in names:
            runs = results[case, name]
            values = [r[main_key] for r in runs]
            cpu = [r["cpu_us"] for r in runs]
            ratio = statistics.median(
                r[main_key] / b[main_key] for r, b in zip(runs, results[case, first], strict=True)
            )
            cpu_ratio = statistics.median(
                r["cpu_us"] / b["cpu_us"] for r, b in zip(runs, results[case, first], strict=True)
            )
            unit = "ms" if main_key == "ms" else "req/s"
            spread = f"[{min(values):.1f}-{max(values):.1f}]"
            cpu_spread = f"[{min(cpu):.0f}-{max(cpu):.0f}]"
            print(
                f"  {case:14s} {name:10s} {statistics.median(values):8.1f} {unit} {spread} x{ratio:.3f}"
                f"   CPU {statistics.median(cpu):6.0f} µs/req {cpu_spread} x{cpu_ratio:.3f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
