"""The flagadmin benchmark suite: one command, figures in bench/out/.

``python bench/run.py`` builds bench/data/bench.db at reference size if it is missing, then, in
one run: counts the SQL statements of 4.2 at scale 0.1 and 1.0; drives every case with wrk
against ``flagadmin serve`` and against two ceilings serving the same bytes, alternating over
rounds; times 4.4 against a SQLite+orjson baseline and measures its memory growth; soaks the
server with 64 connections twice. It writes bench/out/results.json and bench/out/results.md.
See bench/README.md.
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import json
import os
import platform
import shlex
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import checks
import generate
import loadgen
import procs
import report

import flagadmin

BENCH = Path(__file__).resolve().parent
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
    """The cases for the database described by ``meta`` (generate.py's JSON)."""
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


def ensure_database(db: Path, scale: float, regenerate: bool) -> dict:
    """Build ``db`` at ``scale`` unless it (and its JSON) exist; return its JSON."""
    meta_file = generate.meta_path(db)
    if regenerate or not db.exists() or not meta_file.exists():
        print(f"Building {db} at scale {scale} ...", flush=True)
        meta = generate.build(db, scale)
        meta_file.write_text(json.dumps(meta, indent=2) + "\n")
        print(f"Built in {meta['seconds']} s.", flush=True)
    return json.loads(meta_file.read_text())


#: Set in the environment of the process that measures a snapshot (see :func:`main`).
SNAPSHOT_ENV = "FLAGADMIN_BENCH_SNAPSHOT"
#: What a snapshot of flagadmin's source leaves out (names matched at every depth): a virtual
#: environment inside the checkout is not source (copying it made each snapshot about 300 MB).
NOT_SOURCE = (
    ".git",
    ".venv",
    ".ci",
    "bench",
    "tests",
    "build",
    "dist",
    "*.egg-info",
    ".*_cache",
    "__pycache__",
    "*.db*",
)


def code_digest(root: Path) -> str:
    """SHA-256 (first 12 hex digits) of the ``.py`` and ``.sql`` files of flagadmin's source
    at ``root`` (the package directory), less what a snapshot leaves out (:data:`NOT_SOURCE`,
    at every depth, as :func:`snapshot` does): a snapshot and the tree it was taken from have
    the same digest."""
    h = hashlib.sha256()
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not _not_source(d)]
        found.extend(
            Path(folder, name) for name in files if name.endswith((".py", ".sql")) and not _not_source(name)
        )
    for path in sorted(found):
        h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:12]


def _not_source(name: str) -> bool:
    return any(fnmatch.fnmatch(name, pattern) for pattern in NOT_SOURCE)


def snapshot(source: Path, dest: Path) -> Path:
    """Copy flagadmin's source (the package directory ``source``) to ``dest/flagadmin``,
    replacing an earlier copy, and return ``dest``: the directory to put on PYTHONPATH."""
    shutil.rmtree(dest / "flagadmin", ignore_errors=True)
    shutil.copytree(source, dest / "flagadmin", ignore=shutil.ignore_patterns(*NOT_SOURCE))
    return dest


def python_step_ns(iterations: int = 1_000_000, rounds: int = 10) -> float:
    """How fast this machine runs Python: nanoseconds per step of a plain loop (``s += i`` on
    locals), the best of ``rounds`` loops of ``iterations`` steps (about half a second).

    A yardstick printed with every report, so that absolute figures taken on VMs of different
    speeds can be told apart. On the VM of bench/RESULTS.md's twelfth section, where a kept 4.3
    took 153 µs of CPU in process against 61 to 78 µs on the VMs before it: 35.3 to 39.0 ns in
    six measurements (best of 3 x 2,000,000 steps instead: 35 to 66 ns). It is taken once, before
    the run: a VM that slows down during a run is not seen in it."""
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        total = 0
        for i in range(iterations):
            total += i
        best = min(best, time.perf_counter() - started)
    return round(best / iterations * 1e9, 1)


def machine() -> dict:
    """Describe this machine and the software under test (``python_step_ns``: see
    :func:`python_step_ns`)."""
    model = next(
        (line.split(":", 1)[1].strip() for line in _output(["lscpu"]).splitlines() if "Model name" in line),
        "?",
    )
    mem_kb = next(
        int(line.split()[1])
        for line in Path("/proc/meminfo").read_text().splitlines()
        if line.startswith("MemTotal")
    )
    return {
        "nproc": _output(["nproc"]).strip(),
        "cpu": model,
        "memory_gib": round(mem_kb / 2**20, 1),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "python_step_ns": python_step_ns(),
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }


def _output(command: list[str]) -> str:
    return subprocess.run(command, capture_output=True, text=True, check=False).stdout


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

    def flagadmin(self) -> procs.Server:
        """Start a fresh flagadmin server on the database."""
        port = procs.free_port()
        command = procs.flagadmin_command(self.args.db, port, self.args.threads)
        return procs.Server(command, port, self.server_log)

    def ceiling(self, mode: str, body: Path) -> procs.Server:
        """Start a fresh ceiling server answering ``body``."""
        port = procs.free_port()
        return procs.Server(procs.ceiling_command(mode, body, port, self.args.threads), port, self.server_log)

    def bodies(self, all_cases: list[Case]) -> dict[str, Path]:
        """Fetch each case's response once from flagadmin; save it for the ceilings."""
        folder = self.out / "bodies"
        folder.mkdir(parents=True, exist_ok=True)
        paths = {}
        with self.flagadmin() as server:
            for case in all_cases:
                status, body, _ = procs.fetch(server.port, case.path, case.method, self.tokens[case.token])
                if status != 200:
                    raise RuntimeError(
                        f"{case.name}: {case.method} {case.path} answered {status}: {body[:300]}"
                    )
                paths[case.name] = folder / f"{case.slug}.json"
                paths[case.name].write_bytes(body)
        return paths

    def load(self, server: procs.Server, case: Case) -> dict:
        """Time the case's first request on ``server`` (fresh: nothing cached), warm it up, drive it
        with wrk, add its peak memory and, when wrk saw non-2xx answers, one answer as a sample."""
        auth = self.tokens[case.token]
        first_s = procs.fetch(server.port, case.path, case.method, auth)[2]
        for _ in range(0 if case.name == "4.4" else 2):
            procs.fetch(server.port, case.path, case.method, auth)
        figures = loadgen.run_wrk(
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
        figures["peak_rss_kb"] = server.memory()["VmHWM"]
        figures["first_ms"] = first_s * 1000
        if figures["status"]:
            status, body, _ = procs.fetch(server.port, case.path, case.method, auth)
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
            status, body, first_s = procs.fetch(server.port, case.path, auth=auth)
            after = server.memory()
            times = [procs.fetch(server.port, case.path, auth=auth)[2] for _ in range(repeats)]
        baseline = checks.archive_baseline(self.args.db, auth)
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
            procs.fetch(server.port, paths[0], auth=self.tokens["admin"])
            result["before"] = server.memory()
            for _ in range(2):
                figures = loadgen.run_wrk(
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
        info = info or ensure_database(db, 0.1, False)
        counts[str(scale)] = checks.dashboard_statements(db, info["heavy_token"])
        print(f"4.2 statements at scale {scale}: {counts[str(scale)]['count']}", flush=True)
    return counts


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line of run.py."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--db",
        type=Path,
        default=BENCH / "data" / "bench.db",
        help="the SQLite database; a postgresql:// URL compares the engines instead (engines.py)",
    )
    p.add_argument("--scale", type=float, default=1.0, help="scale used when the database is built")
    p.add_argument("--regenerate", action="store_true", help="rebuild the database first")
    p.add_argument("--out", type=Path, default=BENCH / "out")
    p.add_argument("--duration", type=int, default=10, help="seconds of wrk per case and server")
    p.add_argument("--connections", type=int, default=8, help="wrk connections per case")
    p.add_argument("--archive-connections", type=int, default=2, help="wrk connections for 4.4")
    p.add_argument("--timeout", type=int, default=60, help="wrk request timeout (s) for the cases")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=8, help="waitress threads of every server")
    p.add_argument("--soak-duration", type=int, default=30)
    p.add_argument("--soak-connections", type=int, default=64)
    p.add_argument("--soak-timeout", type=int, default=5, help="wrk request timeout (s) in the soak")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    """Run the whole suite and write bench/out/results.{json,md}.

    The suite measures one version of flagadmin even when its working tree is edited during
    the run: the first process copies the source to ``<out>/src`` and runs itself again with
    that copy first on PYTHONPATH, which every server it starts inherits.
    """
    argv = sys.argv[1:] if argv is None else argv
    if "--traffic" in argv:
        import traffic  # issue 13: real traffic (its own snapshot, options and report)

        traffic.main([a for a in argv if a != "--traffic"])
        return
    if any(a.startswith(("postgresql://", "postgres://")) for a in argv):
        import engines  # SQLite against PostgreSQL, one process against two

        engines.main(argv)
        return
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    source = Path(flagadmin.__file__).resolve().parent
    if SNAPSHOT_ENV not in os.environ:
        root = snapshot(source, args.out.resolve() / "src")
        path = os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH")) if p)
        env = dict(os.environ, PYTHONPATH=path, **{SNAPSHOT_ENV: str(source)})
        os.execve(sys.executable, [sys.executable, str(Path(__file__).resolve()), *argv], env)
    tree = Path(os.environ[SNAPSHOT_ENV])
    for log in ("servers.log", "wrk.log"):
        (args.out / log).unlink(missing_ok=True)
    started = time.monotonic()
    meta = ensure_database(args.db, args.scale, args.regenerate)
    wrk = loadgen.ensure_wrk()
    bench = Bench(args, meta, wrk)
    all_cases = cases(meta, args.archive_connections)

    results = {
        "code_digest": code_digest(source),
        "tree_digest_start": code_digest(tree),
        "command": shlex.join([Path(sys.executable).name, *sys.argv]),
        "machine": {**machine(), "wrk": loadgen.wrk_version(wrk)},
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
    results["tree_digest_end"] = code_digest(tree)

    (args.out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    markdown = report.markdown(results)
    (args.out / "results.md").write_text(markdown)
    print("\n" + markdown)


if __name__ == "__main__":
    main()
