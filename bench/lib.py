"""The helpers of the benchmark suite, in one module: every case imports this and nothing else
of ``bench`` (``python -m bench list`` names the cases).

It holds, in this order: paths and cores; server processes pinned with ``taskset`` and their
memory and CPU from ``/proc``; wrk (Debian's package, installed when missing) pinned to the
other core; the ceiling servers (Flask and bare WSGI answering flagadmin's own bytes through
``flagadmin.serving.serve``); the protocol (the snapshot of the tree under test, its digest, the
machine line, the results files, the comparison of two trees in alternated pairs); small
statistics; an HTTP client and a webhook receiver; and the generated database.

It is about 1,400 lines, over the 600 a helpers module should stay under, because the suite keeps
its helpers in one module (so that no case imports another and no helper module imports a case)
and each section is what one or more cases need: servers and wrk about 300 lines, the ceilings
about 170, the protocol and the comparison of two trees about 350, PostgreSQL loading about 100,
the client and receiver about 100, and the generated database about 330 (its rows' shapes are
data description). Its sections import nothing from each other beyond these helpers.
"""

from __future__ import annotations

import fnmatch
import hashlib
import http.client
import json
import os
import platform
import random
import shlex
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

if TYPE_CHECKING:
    from flask import Flask

# --- paths and cores ---------------------------------------------------------------------------

#: This folder, the repository root (flagadmin's package directory) and the suite's folders.
BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
LUA = BENCH / "lua"
DATA = BENCH / "data"
OUT = BENCH / "out"
#: The reference-size database (built by :func:`ensure_database` when missing).
DEFAULT_DB = DATA / "bench.db"


def bench_command(case: str) -> list[str]:
    """The command that runs ``case`` of this suite in a child process (``python -m bench
    CASE``); the child is started with the repository root as its working directory."""
    return [sys.executable, "-m", "bench", case]


# --- servers -----------------------------------------------------------------------------------

HOST = "127.0.0.1"
#: Core of the server under test; wrk gets the other one.
SERVER_CPU = "0"
#: Settings of every server started here, unless the environment sets them. Retention of the
#: integration event logs (4.1): none. The generated logs are fixed data (600,000 events in integration
#: 1 at reference size, spread over the 30 days before the build), and the default retention
#: (10,000 rows, 30 days) would delete most of them at the first sweep of a server's delivery
#: workers, and the rest as the database ages. Databases built now carry the same on each
#: generated configuration (generate.KEEP_ALL); this covers those built before.
#: The reference-size database holds 50,000 live flags, past the default ``featureFlags``
#: resource limit (5,000), which the server enforces on a flag create: every server started
#: here may hold ten million.
SERVER_ENV = {
    "FLAGADMIN_INTEGRATION_EVENTS_KEEP": "1000000000",
    "FLAGADMIN_INTEGRATION_EVENTS_MAX_AGE": "P36500D",
    "FLAGADMIN_RESOURCE_LIMITS": '{"featureFlags": 10000000}',
}


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def flagadmin_command(db: Path | str, port: int, threads: int) -> list[str]:
    """Return the command that serves ``db`` with flagadmin (``python -m flagadmin``, so that the
    package found first on ``PYTHONPATH``, the measured copy, is the one that runs)."""
    return [
        sys.executable,
        "-m",
        "flagadmin",
        "serve",
        "--db",
        str(db),
        "--port",
        str(port),
        "--threads",
        str(threads),
    ]


def ceiling_command(
    mode: str, port: int, threads: int, *, body: Path | None = None, index: Path | None = None
) -> list[str]:
    """Return the command of a ceiling server (:func:`serve_ceiling`) answering ``body`` (the
    same bytes to every request) or the answers of ``index`` (chosen per request)."""
    answers = ["--body", str(body)] if body is not None else ["--index", str(index)]
    return [
        *bench_command("_ceiling"),
        "--mode",
        mode,
        *answers,
        "--port",
        str(port),
        "--threads",
        str(threads),
    ]


def read_through(path: str) -> float:
    """Read the file at ``path`` once (into the OS page cache), in seconds: at the reference
    size a log page not in the page cache is a disk read, and this VM drops its page cache
    within minutes, which would turn the measurement into one of the disk."""
    started = time.perf_counter()
    with open(path, "rb") as f:
        while f.read(1 << 20):
            pass
    return time.perf_counter() - started


class Server:
    """A server process pinned to ``cpu`` (default :data:`SERVER_CPU`), its output appended to
    ``log``."""

    def __init__(self, command: list[str], port: int, log: Path, cpu: str = SERVER_CPU) -> None:
        self.port = port
        env = {**SERVER_ENV, **os.environ, "FLAGADMIN_GIT_REVISION": "bench", "PYTHONUNBUFFERED": "1"}
        log.parent.mkdir(parents=True, exist_ok=True)
        self.log = log.open("ab")
        self.proc = subprocess.Popen(
            ["taskset", "-c", cpu, *command], stdout=self.log, stderr=subprocess.STDOUT, env=env
        )
        self.pid = self.proc.pid  # taskset execs the command: same process

    def wait_ready(self, timeout: float = 60) -> None:
        """Wait until the port accepts connections.

        :raise RuntimeError: the process exited or did not listen in time.
        """
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}; see {self.log.name}")
            try:
                socket.create_connection((HOST, self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"server did not listen on {self.port} within {timeout} s")

    def memory(self) -> dict[str, int]:
        """Return ``{"VmHWM": kB, "VmRSS": kB}`` of the server process."""
        out = {}
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmHWM", "VmRSS"):
                out[key] = int(value.split()[0])
        return out

    def cpu_seconds(self) -> float:
        """CPU time the server process has used so far (user + system, all its threads), in
        seconds, from ``/proc/<pid>/stat``."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        """Terminate the process (SIGTERM, then SIGKILL after 10 s) and close its log."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()

    def __enter__(self) -> Server:
        self.wait_ready()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def fetch(port: int, path: str, method: str = "GET", auth: str | None = None) -> tuple[int, bytes, float]:
    """Make one request on a new connection; return (status, body, seconds to the last byte)."""
    headers = {"Accept": "application/json"}
    if auth:
        headers["Authorization"] = auth
    conn = http.client.HTTPConnection(HOST, port, timeout=300)
    try:
        start = time.perf_counter()
        conn.request(method, path, headers=headers)
        response = conn.getresponse()
        body = response.read()
        return response.status, body, time.perf_counter() - start
    finally:
        conn.close()


# --- wrk ------------------------------------------------------------------------------------------

#: Core of wrk; the server under test gets the other one.
WRK_CPU = "1"
SCRIPT = LUA / "wrk.lua"


def ensure_wrk() -> str:
    """Return the wrk executable, installing Debian's package first when it is missing."""
    found = shutil.which("wrk")
    if found:
        return found
    print("wrk is missing: apt-get update && apt-get install -y wrk", flush=True)
    subprocess.run("apt-get update && apt-get install -y wrk", shell=True, check=True)
    found = shutil.which("wrk")
    if not found:
        raise RuntimeError("wrk is still missing after apt-get install wrk")
    return found


def wrk_version(wrk: str) -> str:
    """Return the first line of ``wrk --version``."""
    result = subprocess.run([wrk, "--version"], capture_output=True, text=True, check=False)
    return (result.stdout or result.stderr).splitlines()[0].strip()


def run_wrk(
    wrk: str,
    port: int,
    paths: list[str],
    *,
    method: str = "GET",
    auth: str | None = None,
    duration: int,
    connections: int,
    timeout: int,
    log: Path,
    script: Path = SCRIPT,
    env: dict[str, str] | None = None,
    stop_marker: str | None = None,
) -> dict:
    """Run wrk (one thread, pinned to :data:`WRK_CPU`) against ``paths``; return its figures.

    Figures: requests, duration_us, bytes, the error counts connect/read/write/status
    (non-2xx/3xx)/timeout, latency p50/p90/p99/max/mean in microseconds, plus rps.
    wrk's own report (with --latency) is appended to ``log``.

    ``script`` is the Lua script (default :data:`SCRIPT`; another one must print the same
    ``BENCH_JSON`` line from ``done``) and ``env`` what it reads besides the defaults. With
    ``stop_marker``, wrk is interrupted (SIGINT: it reports what it did so far) as soon as the
    script prints that line, so that a script can end a run after a fixed number of requests;
    ``duration`` is then only an upper bound.
    """
    env = {
        **os.environ,
        "BENCH_METHOD": method,
        "BENCH_AUTH": auth or "",
        "BENCH_PATHS": " ".join(paths),
        **(env or {}),
    }
    command = [
        "taskset",
        "-c",
        WRK_CPU,
        wrk,
        "-t1",
        f"-c{connections}",
        f"-d{duration}s",
        f"--timeout={timeout}s",
        "--latency",
        "-s",
        str(script),
        f"http://{HOST}:{port}{paths[0]}",
    ]
    if stop_marker is None:
        result = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    else:
        result = _run_until(command, env, stop_marker, duration + timeout + 30)
    with log.open("a") as f:
        f.write(f"$ {' '.join(command)}\n{result.stdout}{result.stderr}\n")
    line = next((x for x in result.stdout.splitlines() if x.startswith("BENCH_JSON ")), None)
    if result.returncode != 0 or line is None:
        raise RuntimeError(f"wrk failed ({result.returncode}): {result.stderr.strip()}; see {log}")
    figures = json.loads(line.removeprefix("BENCH_JSON "))
    figures["rps"] = figures["requests"] / (figures["duration_us"] / 1e6)
    figures["errors"] = sum(figures[k] for k in ("connect", "read", "write", "status", "timeout"))
    return figures


def _run_until(command: list[str], env: dict, marker: str, deadline_s: float) -> subprocess.CompletedProcess:
    """Run wrk; send it SIGINT when its output shows the line ``marker`` (or after
    ``deadline_s``). Returns its exit status and whole output. stderr goes to a file, so that
    a full pipe cannot stall wrk while stdout is read line by line."""
    with tempfile.TemporaryFile(mode="w+") as errors:
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=errors, text=True, env=env)
        timer = threading.Timer(deadline_s, proc.send_signal, [signal.SIGINT])
        timer.start()
        lines = []
        try:
            for line in proc.stdout:
                lines.append(line)
                if line.strip() == marker and proc.poll() is None:
                    proc.send_signal(signal.SIGINT)
            proc.wait(30)
        finally:
            timer.cancel()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        errors.seek(0)
        return subprocess.CompletedProcess(command, proc.returncode, "".join(lines), errors.read())


# --- ceilings -------------------------------------------------------------------------------------

JSON = "application/json"


def flask_app(body: bytes) -> Flask:
    """Return a Flask app whose single route answers ``body`` to GET, POST and DELETE on any
    path."""
    from flask import Flask, Response

    app = Flask(__name__)

    @app.route("/<path:path>", methods=["GET", "POST", "DELETE"])
    def answer(path: str) -> Response:
        return Response(body, mimetype=JSON)

    return app


def wsgi_app(body: bytes):
    """Return a bare WSGI callable that answers ``body`` to every request."""
    headers = [("Content-Type", JSON), ("Content-Length", str(len(body)))]

    def app(environ, start_response):
        start_response("200 OK", headers)
        return [body]

    return app


#: An answer of the index: status, headers (name, value pairs), body.
Answer = tuple[int, list[tuple[str, str]], bytes]
#: Methods a keyed ceiling answers.
METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]


def load_index(index: Path) -> dict[tuple, Answer]:
    """Read an index (see the module's docstring): answers by (method, path, query, auth, gzip)."""
    table = {}
    for entry in json.loads(index.read_text()):
        body = (index.parent / entry["body"]).read_bytes()
        headers = [(k, v) for k, v in entry["headers"]] + [("Content-Length", str(len(body)))]
        key = (entry["method"], entry["path"], entry["query"], entry["auth"], entry["gzip"])
        table[key] = (entry["status"], headers, body)
    return table


def lookup(
    table: dict[tuple, Answer], method: str, path: str, query: str, auth: str | None, accept_encoding: str
) -> Answer | None:
    """The answer of the index to a request: exact query and token first, then either as any."""
    gzip = "gzip" in accept_encoding
    for key in (
        (method, path, query, auth, gzip),
        (method, path, None, auth, gzip),
        (method, path, query, None, gzip),
        (method, path, None, None, gzip),
    ):
        found = table.get(key)
        if found is not None:
            return found
    return None


MISSING: Answer = (500, [("Content-Type", "text/plain")], b"no answer in the index for this request")


def flask_keyed_app(table: dict[tuple, Answer]) -> Flask:
    """Return a Flask app answering each request from ``table`` (see :func:`lookup`)."""
    from flask import Flask, Response, request

    app = Flask(__name__)

    @app.route("/<path:path>", methods=METHODS)
    def answer(path: str) -> Response:
        status, headers, body = (
            lookup(
                table,
                request.method,
                request.path,
                request.query_string.decode("latin-1"),
                request.headers.get("Authorization"),
                request.headers.get("Accept-Encoding", ""),
            )
            or MISSING
        )
        return Response(body, status=status, headers=headers)

    return app


def wsgi_keyed_app(table: dict[tuple, Answer]):
    """Return a bare WSGI callable answering each request from ``table``."""
    reasons = {200: "200 OK", 201: "201 Created", 202: "202 Accepted", 204: "204 No Content"}

    def app(environ, start_response):
        status, headers, body = (
            lookup(
                table,
                environ["REQUEST_METHOD"],
                environ.get("PATH_INFO", ""),
                environ.get("QUERY_STRING", ""),
                environ.get("HTTP_AUTHORIZATION"),
                environ.get("HTTP_ACCEPT_ENCODING", ""),
            )
            or MISSING
        )
        start_response(reasons.get(status, f"{status} Status"), headers)
        return [body]

    return app


def serve_ceiling(argv: list[str]) -> None:
    """``python -m bench _ceiling --mode flask|wsgi (--body FILE | --index FILE) --port N
    [--threads 8]``: serve the answers until killed, through ``flagadmin.serving.serve`` (the
    waitress set-up of ``flagadmin serve``, so that only the application differs).

    ``--mode flask``: one Flask route answering every path (the floor of flagadmin's stack:
    Flask, Werkzeug, waitress, no database, no serialization). ``--mode wsgi``: a bare WSGI
    callable. ``--body``: the same bytes to every request. ``--index``: answers chosen per
    request, a JSON list of ``{"method", "path", "query", "auth", "gzip", "status", "headers",
    "body"}`` (``body`` a file name relative to the index; ``query`` or ``auth`` null: any); a
    request takes the entry of its method, path, query string, ``Authorization`` and whether its
    ``Accept-Encoding`` names gzip, the exact query and token first; a request no entry answers
    gets a 500, which wrk counts.
    """
    import argparse

    from flagadmin.serving import serve

    parser = argparse.ArgumentParser(prog="python -m bench _ceiling", description="a ceiling server")
    parser.add_argument("--mode", choices=("flask", "wsgi"), required=True)
    bodies = parser.add_mutually_exclusive_group(required=True)
    bodies.add_argument("--body", type=Path, help="file holding the response body")
    bodies.add_argument("--index", type=Path, help="index of answers chosen per request")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--threads", type=int, default=8, help="waitress threads (as flagadmin serve)")
    args = parser.parse_args(argv)
    if args.index:
        table = load_index(args.index)
        app = flask_keyed_app(table) if args.mode == "flask" else wsgi_keyed_app(table)
    else:
        body = args.body.read_bytes()
        app = flask_app(body) if args.mode == "flask" else wsgi_app(body)
    serve(app, host=HOST, port=args.port, threads=args.threads)


# --- the protocol: the tree under test, the machine, results ------------------------------------

#: Set in the environment of the process that measures a snapshot (see :func:`measured_tree`):
#: the tree the snapshot was taken from.
SNAPSHOT_ENV = "FLAGADMIN_BENCH_SNAPSHOT"
#: What a snapshot of flagadmin's source leaves out (names matched at every depth): a virtual
#: environment inside the checkout is not source (copying it made each snapshot about 300 MB).
NOT_SOURCE = (
    ".git",
    ".venv",
    ".ci",
    "bench",
    "tests",
    "docs",
    "build",
    "dist",
    "*.egg-info",
    ".*_cache",
    "__pycache__",
    "*.db*",
)


def add_common_options(
    parser, *, db: bool = True, rounds: int | None = 3, seconds: int | None = 10, tree: bool = True
) -> None:
    """Add the options every case shares: ``--out`` (default bench/out), ``--tree`` (the
    flagadmin tree measured, default this checkout), ``--quick`` (a check of the case in about
    a minute), and where they make sense ``--db``, ``--rounds`` and ``--seconds`` (alias
    ``--duration``, seconds of load per measurement)."""
    parser.add_argument("--out", type=Path, default=OUT, help="folder of the results (default bench/out)")
    if tree:
        parser.add_argument(
            "--tree",
            type=Path,
            default=None,
            help="the flagadmin tree to measure, e.g. a git worktree of another commit (default: this one)",
        )
    parser.add_argument("--quick", action="store_true", help="a short check of the case itself")
    if db:
        parser.add_argument(
            "--db", default=str(DEFAULT_DB), help="the database (default bench/data/bench.db)"
        )
    if rounds is not None:
        parser.add_argument("--rounds", type=int, default=rounds, help=f"rounds (default {rounds})")
    if seconds is not None:
        parser.add_argument(
            "--seconds",
            "--duration",
            dest="duration",
            type=int,
            default=seconds,
            help=f"seconds of load per measurement (default {seconds})",
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


def enter_snapshot(argv: list[str]) -> None:
    """Before a case is imported: unless this process already measures a snapshot, copy the tree
    that ``argv``'s ``--tree`` names (default: this checkout) to ``<--out>/src`` and run the same
    command again with that copy first on PYTHONPATH (:func:`measured_tree`). Done by
    ``python -m bench`` before it imports the case, so that the case's own imports of flagadmin
    are the copy's too; does not return when it runs the command again."""
    import argparse

    if SNAPSHOT_ENV in os.environ:
        return
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--tree", type=Path, default=None)
    parser.add_argument("-h", "--help", action="store_true")
    known, _ = parser.parse_known_args(argv)
    if not known.help:
        measured_tree(known)


def measured_tree(args) -> dict:
    """Make this process measure a copy of one version of flagadmin; return ``{"tree",
    "code_digest", "tree_digest_start"}`` for the results.

    The first call copies the tree ``args.tree`` (default: this checkout) to ``<args.out>/src``
    and runs the same command again (``python -m bench ...``) with that copy first on
    PYTHONPATH, which every server started afterwards inherits: a run measures one version even
    when the tree is edited meanwhile, and another tree (a ``git worktree`` of another commit)
    is measured by the same harness. In the second process it checks that ``flagadmin`` is
    imported from the copy.

    :raise RuntimeError: flagadmin is imported from somewhere else than the copy.
    """
    if SNAPSHOT_ENV not in os.environ:
        source = (args.tree or REPO).resolve()
        if not (source / "__main__.py").exists():
            raise SystemExit(f"--tree {source}: not a flagadmin tree (no __main__.py)")
        args.out.mkdir(parents=True, exist_ok=True)
        root = snapshot(source, args.out.resolve() / "src")
        path = os.pathsep.join(p for p in (str(root), str(REPO), os.environ.get("PYTHONPATH")) if p)
        env = dict(os.environ, PYTHONPATH=path, **{SNAPSHOT_ENV: str(source)})
        sys.stdout.flush()
        os.execve(sys.executable, [*bench_command(sys.argv[1]), *sys.argv[2:]], env)
    import flagadmin

    copy = Path(flagadmin.__file__).resolve().parent
    if copy != (args.out.resolve() / "src" / "flagadmin"):
        raise RuntimeError(f"flagadmin imported from {copy}, not from the snapshot in {args.out}/src")
    tree = Path(os.environ[SNAPSHOT_ENV])
    return {"tree": str(tree), "code_digest": code_digest(copy), "tree_digest_start": code_digest(tree)}


def python_step_ns(iterations: int = 1_000_000, rounds: int = 10) -> float:
    """How fast this machine runs Python: nanoseconds per step of a plain loop (``s += i`` on
    locals), the best of ``rounds`` loops of ``iterations`` steps (about half a second).

    A yardstick printed with every report, so that absolute figures taken on VMs of different
    speeds can be told apart (the VMs here have differed by up to twice from one day to the
    next). It is taken once, before the run: a VM that slows down during a run is not seen."""
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
        "nproc": str(os.cpu_count()),  # the machine's, whatever this process is pinned to
        "cpu": model,
        "memory_gib": round(mem_kb / 2**20, 1),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "python_step_ns": python_step_ns(),
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }


def machine_line(m: dict) -> str:
    """One line naming the machine of :func:`machine`, for a report."""
    return (
        f"{m['date']}; {m['nproc']} x {m['cpu']}, {m['memory_gib']} GiB, Linux {m['kernel']},"
        f" Python {m['python']}, SQLite {m['sqlite']}, a Python loop step {m['python_step_ns']} ns"
        + (f", {m['wrk']}" if m.get("wrk") else "")
    )


def command_line() -> str:
    """The command that started this run, as typed from the repository root."""
    return shlex.join(["python", "-m", "bench", *sys.argv[1:]])


def speed_note(m: dict) -> str:
    """``"; a Python loop step 37.1 ns"`` from a run's machine (:func:`python_step_ns`), or
    "" for results saved before it was measured."""
    step = m.get("python_step_ns")
    return f"; a Python loop step {step} ns" if step is not None else ""


def code_line(results: dict) -> str:
    """A report's line naming the code measured: the snapshot's digest, and whether the tree
    changed during the run."""
    line = f"- Code: flagadmin source digest {results['code_digest']}, a copy of the working tree taken "
    if results["tree_digest_end"] == results["tree_digest_start"] == results["code_digest"]:
        return line + "at the start (the tree did not change during the run)"
    return line + (
        f"at the start; the working tree changed during the run (digest {results['tree_digest_end']} "
        "at the end), the copy was measured"
    )


def _output(command: list[str]) -> str:
    return subprocess.run(command, capture_output=True, text=True, check=False).stdout


def write_results(out: Path, name: str, results: dict, markdown: str) -> None:
    """Write ``<out>/<name>.json`` (every figure) and ``<out>/<name>.md`` (the report), and print
    the report."""
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(results, indent=2, default=str) + "\n")
    (out / f"{name}.md").write_text(markdown)
    print("\n" + markdown, flush=True)


def ensure_database(db: Path, scale: float, regenerate: bool = False) -> dict:
    """Build the SQLite database ``db`` at ``scale`` unless it (and its JSON) exist; return its
    JSON (:func:`build_database`)."""
    db = Path(db)
    meta_file = meta_path(db)
    if regenerate or not db.exists() or not meta_file.exists():
        print(f"Building {db} at scale {scale} ...", flush=True)
        db.parent.mkdir(parents=True, exist_ok=True)
        meta = build_database(db, scale)
        meta_file.write_text(json.dumps(meta, indent=2) + "\n")
        print(f"Built in {meta['seconds']} s.", flush=True)
    return json.loads(meta_file.read_text())


# --- two trees in alternated pairs ---------------------------------------------------------------

#: The figures :func:`compare_trees` compares: the last part of their key in the results ends
#: with one of these (req/s, latency percentiles, server CPU per request, rates a second).
HEADLINE = ("rps", "p50_us", "p99_us", "cpu_us", "per_s", "p50", "p99", "median_ms")


def flatten(value, prefix: str = "") -> dict[str, float]:
    """The numbers of a results document by dotted key; a list of numbers, or of documents of
    the same keys (rounds), becomes the median of each."""
    if isinstance(value, bool):
        return {}
    if isinstance(value, int | float):
        return {prefix: float(value)}
    if isinstance(value, dict):
        found: dict[str, float] = {}
        for key, item in value.items():
            found.update(flatten(item, f"{prefix}.{key}" if prefix else str(key)))
        return found
    if isinstance(value, list) and value:
        parts = [flatten(item, prefix) for item in value]
        keys = set.intersection(*(set(p) for p in parts))
        return {k: statistics.median(p[k] for p in parts) for k in keys}
    return {}


def compare_trees(case: str, case_args: list[str], other: Path, pairs: int, out: Path) -> str:
    """Measure ``case`` on this checkout and on the tree ``other`` in ``pairs`` alternated pairs
    (this, other; then other, this; ...), each run a child ``python -m bench CASE --tree ...
    --out <out>/<n>-<which>``; return a Markdown report of the headline figures
    (:data:`HEADLINE`): each tree's median over pairs and the ratio other/this of every pair.
    The results of every run stay in their folders."""
    trees = {"this": REPO, "other": other.resolve()}
    found: dict[str, list[dict[str, float]]] = {"this": [], "other": []}
    for n in range(1, pairs + 1):
        order = ("this", "other") if n % 2 else ("other", "this")
        for which in order:
            folder = out / f"{n}-{which}"
            shutil.rmtree(folder, ignore_errors=True)
            command = [*bench_command(case), *case_args, "--tree", str(trees[which]), "--out", str(folder)]
            print(f"pair {n}/{pairs}, {which}: {shlex.join(command[1:])}", flush=True)
            env = {k: v for k, v in os.environ.items() if k != SNAPSHOT_ENV}
            subprocess.run(command, check=True, env=env, cwd=REPO)
            figures: dict[str, float] = {}
            for result in sorted(folder.glob("*.json")):
                document = json.loads(result.read_text())
                figures.update(flatten(document, result.stem))
            found[which].append(figures)
    keys = sorted(
        k
        for k in set(found["this"][0]) & set(found["other"][0])
        if k.rsplit(".", 1)[-1].endswith(HEADLINE) and all(k in f for f in found["this"] + found["other"])
    )
    lines = [
        f"# {case}: this checkout against {trees['other']}",
        "",
        f"`{command_line()}`, {pairs} alternated pairs; every run's results in `{out}/<pair>-<tree>/`.",
        "",
        "| figure | this (median) | other (median) | other / this by pair |",
        "|---|---:|---:|---|",
    ]
    for key in keys:
        this = [f[key] for f in found["this"]]
        that = [f[key] for f in found["other"]]
        ratios = ", ".join(f"{b / a:.3f}" if a else "-" for a, b in zip(this, that, strict=True))
        lines.append(f"| {key} | {statistics.median(this):.4g} | {statistics.median(that):.4g} | {ratios} |")
    return "\n".join(lines) + "\n"


# --- PostgreSQL ---------------------------------------------------------------------------------

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

    from flagadmin.store import schema  # the measured tree's, imported after the snapshot

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


# --- statistics ---------------------------------------------------------------------------------


def percentile(values: list[float], p: float) -> float:
    """The ``p``-th percentile (0-100) of ``values`` (seconds), nearest rank, in milliseconds."""
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(p / 100 * len(ordered) + 0.5) - 1))
    return round(ordered[index] * 1000, 2)


def summary(values: list[float]) -> dict[str, float]:
    """``{"n", "p50", "p95", "p99", "mean"}`` of latencies in seconds, as milliseconds;
    ``{"n": 0}`` for no values."""
    if not values:
        return {"n": 0}
    return {
        "n": len(values),
        "p50": percentile(values, 50),
        "p95": percentile(values, 95),
        "p99": percentile(values, 99),
        "mean": round(statistics.fmean(values) * 1000, 2),
    }


def markdown_table(header: list[str], rows: list[list]) -> list[str]:
    """A Markdown table's lines."""
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return out


# --- a client and a webhook receiver --------------------------------------------------------------


class Client:
    """One keep-alive connection to a server on this machine, every request with ``token`` as
    its ``Authorization``."""

    def __init__(self, port: int, token: str) -> None:
        self.conn = http.client.HTTPConnection(HOST, port, timeout=300)
        self.token = token

    def send(self, method: str, path: str, body: dict | None = None, headers: dict | None = None):
        """Send one request (``body`` as JSON); return (status, headers lower-cased, body bytes,
        seconds to the last byte)."""
        sent = {"Authorization": self.token, **(headers or {})}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            sent["Content-Type"] = "application/json"
        start = time.perf_counter()
        self.conn.request(method, path, body=data, headers=sent)
        response = self.conn.getresponse()
        payload = response.read()
        return (
            response.status,
            {k.lower(): v for k, v in response.getheaders()},
            payload,
            time.perf_counter() - start,
        )

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()


class _Ok(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")


def serve_receiver(argv: list[str]) -> None:
    """``python -m bench _receiver PORT``: a webhook receiver answering every POST with 200 at
    once, until killed."""
    server = ThreadingHTTPServer((HOST, int(argv[0])), _Ok)
    server.daemon_threads = True
    server.request_queue_size = 256
    server.serve_forever()


def receiver_command(port: int) -> list[str]:
    """The command of a webhook receiver on ``port`` (:func:`serve_receiver`)."""
    return [*bench_command("_receiver"), str(port)]


def addon_body(
    receiver: int,
    description: str,
    *,
    enabled: bool = False,
    events: list[str] | None = None,
    path: str = "/target",
) -> dict:
    """The body of a webhook configuration (``addonCreateUpdateSchema``, the reference server's
    shape, which flagadmin takes too) delivering to ``receiver`` on this machine at ``path``,
    taking ``events`` (default: ``feature-created`` only)."""
    return {
        "provider": "webhook",
        "enabled": enabled,
        "description": description,
        "parameters": {"url": f"http://{HOST}:{receiver}{path}"},
        "events": events or ["feature-created"],
    }


# --- the generated database -----------------------------------------------------------------------
#
# Built directly with bulk SQL (:func:`build_database`). Reference size (scale 1.0): 10,000 users,
# 1,000 projects, 100,000 flags (half archived, two environments each), 20 favorites per user, 10
# integrations with 1,000,000 integration events (600,000 in integration 1, so that offset 500,000
# exists), and the caller ``heavy`` (root role Viewer, so visibility filtering is exercised), a
# member of 200 projects who created 500 flags. Every count scales with the scale. The integrations
# keep their whole log (:data:`KEEP_ALL`), so that a server started on the database by hand does
# not delete the fixed data. Beside the file: ``<stem>.json`` (an admin token, heavy's token, the
# counts) and ``<stem>.users.json`` (personal tokens of 1,000 distinct project members).

#: Reference counts, multiplied by ``--scale``.
USERS = 10_000
PROJECTS = 1_000
FLAGS = 100_000
INTEGRATION_EVENTS = 1_000_000
#: Counts that do not scale, so that heavy's share stays the same at every scale (heavy's
#: projects are capped by the number of projects).
INTEGRATIONS = 10
FAVORITES_PER_USER = 20
HEAVY_PROJECTS = 200
HEAVY_FLAGS = 500
MEMBERS_PER_PROJECT = 10

FLAG_TYPES = ("release", "experiment", "operational", "kill-switch", "permission")
ENVIRONMENTS = ("development", "production")
CHUNK = 20_000

#: One real event object (spec 2.3), from unleash-server 8.2.0's webhook integration log
#: (shared/fixtures/unleash-8.2.0/integration-events.json); id, times and names vary per row.
EVENT_TEMPLATE = {
    "id": 184,
    "data": {
        "name": "new-pricing",
        "type": "experiment",
        "stale": False,
        "project": "default",
        "archived": False,
        "createdAt": "2026-11-22T00:16:07.304Z",
        "description": "Pricing page experiment (round 2)",
        "impressionData": True,
    },
    "tags": [],
    "type": "feature-metadata-updated",
    "groupId": "01M809RTKQRQYFQEEW2KA99T8A",
    "preData": {
        "name": "new-pricing",
        "type": "experiment",
        "stale": False,
        "project": "default",
        "archived": False,
        "createdAt": "2026-11-22T00:16:07.304Z",
        "description": "Pricing page experiment",
        "impressionData": False,
    },
    "project": "default",
    "createdAt": "2026-11-22T00:16:20.599Z",
    "createdBy": "admin",
    "groupType": "transaction",
    "environment": None,
    "featureName": "new-pricing",
    "createdByUserId": 1,
}
EVENT_TYPES = ("feature-metadata-updated", "feature-updated", "feature-stale-on", "feature-tagged")
#: (state, stateDetails, share in thousandths), as the fixture's webhook integration wrote them.
STATES = (
    ("success", "Webhook request was successful with status code: 200.", 900),
    ("failed", "Webhook request failed with status code: 500.", 70),
    (
        "successWithErrors",
        "Could not parse the JSON in the customHeaders parameter.\n"
        "Webhook request was successful with status code: 200.",
        30,
    ),
)
DETAILS_HEAD = '{"url":"http://127.0.0.1:9099/hook","body":'
DETAILS_TAIL = ',"contentType":"application/json"}'


def scaled(count: int, scale: float) -> int:
    """Return ``count * scale`` rounded, at least 1."""
    return max(1, round(count * scale))


def rfc3339(moment: datetime) -> str:
    """Format an aware UTC datetime as flagadmin stores timestamps."""
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


class Progress:
    """One status line on stderr: table, rows done, elapsed seconds."""

    def __init__(self) -> None:
        self.start = time.monotonic()
        self.tty = sys.stderr.isatty()
        self.last = 0.0

    def show(self, table: str, done: int, total: int, *, final: bool = False) -> None:
        """Show progress; on a non-terminal, print at most one line per 5 s plus the final one."""
        now = time.monotonic()
        percent = 100 * done // max(total, 1)
        line = f"{table:<20} {done:>10,}/{total:<10,} {percent:3d}%  {now - self.start:6.1f} s"
        if self.tty:
            sys.stderr.write("\r" + line + ("\n" if final else ""))
            sys.stderr.flush()
        elif final or now - self.last >= 5:
            print(line, file=sys.stderr, flush=True)
            self.last = now


def insert(conn: sqlite3.Connection, progress: Progress, table: str, rows, total: int) -> None:
    """Insert ``rows`` (tuples of the first columns of ``table``, in order; columns added later,
    at the end, keep their defaults) in chunks, showing progress."""
    done = 0
    chunk: list[tuple] = []
    sql = ""
    for row in rows:
        chunk.append(row)
        if not sql:
            columns = [c[1] for c in conn.execute(f"PRAGMA table_info({table})")][: len(row)]
            sql = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(row))})"
        if len(chunk) == CHUNK:
            conn.executemany(sql, chunk)
            done += len(chunk)
            chunk.clear()
            if done < total:
                progress.show(table, done, total)
    if chunk:
        conn.executemany(sql, chunk)
    progress.show(table, done + len(chunk), total, final=True)


def user_rows(n_users: int, heavy_id: int):
    """Users 1..n: 1% Admin, 29% Editor, the rest Viewer; ``heavy`` is the last, a Viewer."""
    for uid in range(1, n_users + 1):
        if uid == heavy_id:
            yield (uid, "heavy", "Heavy User", "heavy@example.com", None, "Viewer")
            continue
        role = "Admin" if uid % 100 == 0 else "Editor" if uid % 100 < 30 else "Viewer"
        avatar = f"https://gravatar.com/avatar/{uid:064x}?s=42&d=retro&r=g"
        name = None if uid % 7 == 0 else f"User {uid:05d}"
        yield (uid, f"user{uid:05d}", name, f"user{uid:05d}@example.com", avatar, role)


def project_ids(n_projects: int) -> list[str]:
    """Return the project ids, ``project-0000`` onwards."""
    return [f"project-{p:04d}" for p in range(n_projects)]


def member_rows(rng: random.Random, projects: list[str], n_users: int, heavy_id: int):
    """One Owner and several Members per project, a custom role in every tenth, and ``heavy``
    as Member of :data:`HEAVY_PROJECTS` projects spread over the list."""
    step = max(1, len(projects) // HEAVY_PROJECTS)
    heavy_in = set(projects[::step][:HEAVY_PROJECTS])
    for p, pid in enumerate(projects):
        owner = rng.randrange(1, n_users)
        rows = {(pid, owner, "Owner")}
        rows.update((pid, rng.randrange(1, n_users), "Member") for _ in range(MEMBERS_PER_PROJECT))
        if p % 10 == 0:
            rows.add((pid, owner, "Developer"))
        if pid in heavy_in:
            rows.add((pid, heavy_id, "Member"))
        yield from sorted(rows)


def is_heavy_flag(i: int, n_flags: int) -> bool:
    """:data:`HEAVY_FLAGS` flags spread evenly are heavy's, alternately live and archived."""
    step = max(2, n_flags // HEAVY_FLAGS)
    return i % step == (0 if (i // step) % 2 == 0 else 1)


def flag_rows(rng: random.Random, n_flags: int, projects: list[str], n_users: int, heavy_id: int, now):
    """Flags ``flag-000000`` onwards; odd-numbered ones are archived."""
    for i in range(n_flags):
        created = now - timedelta(days=730) + timedelta(seconds=i * 63_000_000 // n_flags)
        archived = rfc3339(min(now, created + timedelta(days=rng.randrange(1, 30)))) if i % 2 else None
        creator = heavy_id if is_heavy_flag(i, n_flags) else rng.randrange(1, n_users)
        yield (
            f"flag-{i:06d}",
            projects[i % len(projects)],
            FLAG_TYPES[i % len(FLAG_TYPES)],
            None if i % 11 == 0 else f"Flag {i} controls part of the checkout flow",
            int(i % 20 == 0),
            int(i % 10 == 0),
            rfc3339(created),
            creator,
            archived,
            rfc3339(created + timedelta(days=1)) if i % 3 == 0 else None,
        )


def environment_rows(n_flags: int, now):
    """Two environments (development, production) per flag."""
    seen = rfc3339(now - timedelta(hours=6))
    for i in range(n_flags):
        name = f"flag-{i:06d}"
        yield (name, "development", int(i % 2 == 0), seen if i % 4 == 0 else None)
        yield (name, "production", int(i % 3 == 0), seen if i % 5 == 0 else None)


def favorite_rows(rng: random.Random, n_users: int, n_flags: int):
    """:data:`FAVORITES_PER_USER` distinct random flags per user."""
    for uid in range(1, n_users + 1):
        for i in sorted(rng.sample(range(n_flags), min(FAVORITES_PER_USER, n_flags))):
            yield (uid, f"flag-{i:06d}")


def integration_rows():
    """:data:`INTEGRATIONS` webhook configurations subscribed to feature events."""
    events = json.dumps(list(EVENT_TYPES), separators=(",", ":"))
    params = '{"url":"http://127.0.0.1:9099/hook","contentType":"application/json"}'
    for n in range(1, INTEGRATIONS + 1):
        yield (n, "webhook", f"Webhook {n}", 1, events, "[]", "[]", params)


#: Retention of each generated configuration's log (``integration_options``: events_keep,
#: events_max_age): every row, for a century. The logs are fixed data spread over the 30 days
#: before the build; with the instance's defaults (10,000 rows, 30 days), the first sweep of any
#: server started on the database would delete most of them (:data:`SERVER_ENV` sets the same for
#: the servers the benchmarks start, for databases built before this).
KEEP_ALL = (1_000_000_000, "P36500D")


def integration_option_rows():
    """flagadmin's options of the :data:`INTEGRATIONS` configurations: :data:`KEEP_ALL`, the
    rest the instance's defaults (no creation time, the default deliveries in flight)."""
    for n in range(1, INTEGRATIONS + 1):
        yield (n, None, None, *KEEP_ALL)


def integration_of(i: int) -> int:
    """Integration of the i-th event: 6 of every 10 go to integration 1, the rest round-robin."""
    j = i % 10
    if j < 6:
        return 1
    return 2 + ((i // 10) * 4 + (j - 6)) % (INTEGRATIONS - 1)


def event_rows(n_events: int, n_flags: int, projects: list[str], now, counts: dict[int, int]):
    """Integration events, oldest first (ids interleaved across integrations, as deliveries
    append them), over the last 30 days; fills ``counts`` per integration. Each row starts with
    its ``log_key`` (the log number of integration n is n, see ``integration_logs``)."""
    from flagadmin.store import integration_events  # the measured tree's, imported after the snapshot

    start = now - timedelta(days=30)
    step_ms = 30 * 86_400_000 // max(n_events, 1)
    template = dict(EVENT_TEMPLATE)
    states = [s for s in STATES for _ in range(s[2])]
    for i in range(n_events):
        integration = integration_of(i)
        counts[integration] = counts.get(integration, 0) + 1
        at = start + timedelta(milliseconds=i * step_ms)
        flag = f"flag-{(i * 7919) % n_flags:06d}"
        project = projects[(i * 7919) % n_flags % len(projects)]
        template["id"] = i + 1
        template["type"] = EVENT_TYPES[i % len(EVENT_TYPES)]
        template["createdAt"] = rfc3339(at - timedelta(milliseconds=230))
        template["featureName"] = flag
        template["project"] = project
        template["createdByUserId"] = 1 + i % 97
        template["createdBy"] = f"user{1 + i % 97:05d}@example.com"
        event = orjson.dumps(template).decode()
        state, state_details, _ = states[i % 1000]
        created_at = rfc3339(at)
        yield (
            integration * integration_events.LOG_KEY_SPAN + counts[integration],  # log_no = integration id
            i + 1,
            integration,
            counts[integration],
            created_at,
            state,
            integration_events.item(
                i + 1,
                integration_events.Entry(
                    integration, created_at, state, state_details, event, DETAILS_HEAD + event + DETAILS_TAIL
                ),
            ),
        )


def build_database(path: Path, scale: float, seed: int = 42) -> dict:
    """Create the database at ``path`` (replacing it) and return what was generated."""
    from flagadmin.store import connect, schema, tokens  # the measured tree's, imported after the snapshot

    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    schema.ensure_schema(path)
    rng = random.Random(seed)
    now = datetime.now(UTC).replace(microsecond=0)
    n_users, n_flags, n_events = scaled(USERS, scale), scaled(FLAGS, scale), scaled(INTEGRATION_EVENTS, scale)
    projects = project_ids(scaled(PROJECTS, scale))
    heavy_id = n_users
    counts: dict[int, int] = {}
    progress = Progress()

    conn = sqlite3.connect(path, isolation_level=None)
    # Bulk load: no journal (a failed build is simply rebuilt), WAL again afterwards.
    conn.execute("PRAGMA journal_mode = OFF")
    conn.execute("PRAGMA synchronous = OFF")
    conn.execute("PRAGMA cache_size = -262144")
    conn.execute("BEGIN")
    members = list(member_rows(rng, projects, n_users, heavy_id))
    tables = (
        ("users", user_rows(n_users, heavy_id), n_users),
        ("projects", [(p, f"Project {p[8:]}", f"Team project {p}") for p in projects], len(projects)),
        ("project_members", members, len(members)),
        ("features", flag_rows(rng, n_flags, projects, n_users, heavy_id, now), n_flags),
        ("feature_environments", environment_rows(n_flags, now), 2 * n_flags),
        ("favorite_features", favorite_rows(rng, n_users, n_flags), n_users * FAVORITES_PER_USER),
        ("integrations", integration_rows(), INTEGRATIONS),
        ("integration_options", integration_option_rows(), INTEGRATIONS),
        ("integration_logs", [(n, n) for n in range(1, INTEGRATIONS + 1)], INTEGRATIONS),
        ("integration_events", event_rows(n_events, n_flags, projects, now, counts), n_events),
    )
    for table, rows, total in tables:
        insert(conn, progress, table, rows, total)
    conn.execute("COMMIT")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.close()

    db = connect(path)
    try:
        admin_token, heavy_token = tokens.new_admin_token(), tokens.new_personal_token()
        tokens.insert_token(db, admin_token, kind="admin", name="bench admin")
        tokens.insert_token(db, heavy_token, kind="personal", user_id=heavy_id, name="bench heavy")
        archived = db.value("SELECT count(*) FROM features WHERE archived_at IS NOT NULL")
        heavy_projects = db.value(
            "SELECT count(DISTINCT project_id) FROM project_members WHERE user_id = ?", [heavy_id]
        )
        heavy_created = db.value("SELECT count(*) FROM features WHERE created_by_user_id = ?", [heavy_id])
    finally:
        db.close()
    return {
        "scale": scale,
        "admin_token": admin_token,
        "heavy_token": heavy_token,
        "heavy_user_id": heavy_id,
        "heavy_root_role": "Viewer",
        "heavy_projects": heavy_projects,
        "heavy_created_flags": heavy_created,
        "users": n_users,
        "projects": len(projects),
        "flags": n_flags,
        "archived_flags": archived,
        "integration_events": n_events,
        "events_per_integration": {str(k): v for k, v in sorted(counts.items())},
        "seconds": round(time.monotonic() - progress.start, 1),
        "bytes": os.path.getsize(path),
    }


def meta_path(db_path: Path) -> Path:
    """Return the JSON file written next to ``db_path`` (tokens and counts)."""
    return db_path.with_suffix(".json")


#: Personal tokens made for distinct users (the traffic case: 4.2 and token checks in rotation).
USER_TOKENS = 1_000


def user_tokens_path(db_path: Path) -> Path:
    """Return the JSON file of the distinct users' tokens, next to ``db_path``."""
    return db_path.with_suffix(".users.json")


def ensure_user_tokens(db_path: Path, count: int = USER_TOKENS, seed: int = 42) -> list[dict]:
    """Personal access tokens (spec 5) for up to ``count`` distinct users who hold a role in
    at least one project (``heavy`` left out), chosen at random with ``seed``, in user id
    order. They are stored as digests like every token; the plain tokens go to
    :func:`user_tokens_path` as ``[{"user_id", "username", "root_role", "projects", "token"},
    ...]``. Made once: when that file exists and its first token is in the database, it is
    returned as it is; otherwise new tokens are made and the file is rewritten.
    """
    from flagadmin.store import connect, tokens  # the measured tree's, imported after the snapshot

    path = user_tokens_path(db_path)
    db = connect(db_path)
    try:
        if path.exists():
            users = json.loads(path.read_text())
            if users and db.value(
                "SELECT count(*) FROM api_tokens WHERE digest = ?", [tokens.digest(users[0]["token"])]
            ):
                return users
        heavy = db.value("SELECT id FROM users WHERE username = 'heavy'")
        members = db.all(
            "SELECT u.id AS user_id, u.username, u.root_role, count(DISTINCT m.project_id) AS projects"
            " FROM users u JOIN project_members m ON m.user_id = u.id"
            " WHERE u.id <> ? GROUP BY u.id, u.username, u.root_role ORDER BY u.id",
            [heavy or 0],
        )
        chosen = sorted(
            random.Random(seed).sample(members, min(count, len(members))), key=lambda u: u["user_id"]
        )
        with db.write("api_tokens"):
            for user in chosen:
                user["token"] = tokens.new_personal_token()
                tokens.insert_token(
                    db, user["token"], kind="personal", user_id=user["user_id"], name="bench traffic"
                )
    finally:
        db.close()
    path.write_text(json.dumps(chosen, indent=1) + "\n")
    return chosen


# --- a database of realistic rules (the client and frontend cases) ------------------------


def constraint(r: random.Random, kind: int) -> dict:
    """A constraint of one of seven kinds, its values drawn from ``r``."""
    if kind == 0:
        return {"contextName": "country", "operator": "IN", "values": r.sample(COUNTRIES, r.randint(1, 6))}
    if kind == 1:
        return {
            "contextName": "email",
            "operator": "STR_ENDS_WITH",
            "values": ["@example.com", "@example.org"],
        }
    if kind == 2:
        values = ["pro", "enterprise"]
        return {
            "contextName": "plan",
            "operator": "STR_STARTS_WITH",
            "values": values,
            "caseInsensitive": True,
        }
    if kind == 3:
        return {"contextName": "seats", "operator": "NUM_GT", "value": str(r.randint(1, 500))}
    if kind == 4:
        version = f"{r.randint(1, 9)}.{r.randint(0, 20)}.0"
        return {"contextName": "appVersion", "operator": "SEMVER_GTE", "value": version}
    if kind == 5:
        return {"contextName": "currentTime", "operator": "DATE_AFTER", "value": "2026-01-01T00:00:00.000Z"}
    users = [str(r.randint(1, 10**6)) for _ in range(3)]
    return {"contextName": "userId", "operator": "NOT_IN", "values": users, "inverted": r.random() < 0.2}


COUNTRIES = ["NO", "SE", "DK", "FI", "DE", "FR", "NL", "BE", "ES", "IT", "PL", "GB", "IE", "US", "CA"]


def rules_database(folder: Path, flags: int, seed: int = 42) -> dict:
    """Make a run's database in ``folder`` (``client.db``), the state the ``client`` and
    ``frontend`` cases both measure: the demo data, ``flags`` flags of realistic rules in
    ``development`` written through the admin API in process (every flag a flexibleRollout of
    0 to 100 %; a third with one to three constraints of :func:`constraint`'s kinds; one in eight
    using one or two of 20 segments; one in six with strategy variants; one in ten a second
    strategy, userWithId; one in ten flag variants; 70 % switched on), a client token of every
    project there; return ``{"db", "client_token", "flags"}``."""
    from flagadmin import events
    from flagadmin.app import create_app
    from flagadmin.seed.documents import demo_files, load_files
    from flagadmin.store import connect, schema
    from flagadmin.store import tokens as store_tokens
    from flagadmin.tokens import changes as token_changes

    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    db = folder / "client.db"
    schema.ensure_schema(str(db))
    with connect(str(db)) as conn:
        load_files(conn, demo_files())
        client_token, _ = token_changes.create_api_token(
            conn, events.COMMAND_LINE, type="client", name="bench", environment="development", projects=["*"]
        )
        admin_token = store_tokens.new_admin_token()
        store_tokens.insert_token(conn, admin_token, kind="admin", name="bench")
    client = create_app({"DATABASE": str(db)}).test_client()
    headers = {"Authorization": admin_token}

    def send(method: str, path: str, body=None, expect=(200, 201, 204)) -> dict | None:
        response = client.open(path, method=method, json=body, headers=headers)
        if response.status_code not in expect:
            raise RuntimeError(
                f"{method} {path}: {response.status_code} {response.get_data(as_text=True)[:300]}"
            )
        return response.get_json(silent=True)

    known = {s["name"] for s in send("GET", "/api/admin/strategies")["strategies"]}
    if "userWithId" not in known:
        send(
            "POST",
            "/api/admin/strategies",
            {"name": "userWithId", "parameters": [{"name": "userIds", "type": "list"}]},
        )
    r = random.Random(seed)
    segments = [
        send(
            "POST",
            "/api/admin/segments",
            {"name": f"bench segment {i}", "constraints": [constraint(r, i % 7)]},
        )["id"]
        for i in range(20)
    ]
    project = "/api/admin/projects/default/features"
    for i in range(flags):
        name = f"{['checkout', 'search', 'profile', 'billing', 'onboarding'][i % 5]}-{i:04d}"
        send(
            "POST",
            project,
            {"name": name, "type": "release", "description": f"Rollout {i}"},
        )
        strategy = {
            "name": "flexibleRollout",
            "parameters": {"rollout": str(r.randint(0, 100)), "stickiness": "default", "groupId": name},
            "constraints": [constraint(r, r.randrange(7)) for _ in range(r.randint(1, 3) * (i % 3 == 0))],
            "segments": r.sample(segments, r.randint(1, 2)) if i % 8 == 1 else [],
            "variants": [
                {"name": color, "weight": 0, "weightType": "variable", "stickiness": "default",
                 "payload": {"type": "string", "value": f"{color}-{i}"}}
                for color in ["blue", "green", "red"][: r.randint(2, 3)]
            ] if i % 6 == 2 else [],
        }  # fmt: skip
        path = f"{project}/{name}/environments/development"
        send("POST", f"{path}/strategies", strategy)
        if i % 10 == 3:
            ids = ",".join(str(r.randint(1, 10**6)) for _ in range(r.randint(2, 8)))
            send("POST", f"{path}/strategies", {"name": "userWithId", "parameters": {"userIds": ids}})
        if i % 10 == 5:
            variants = [
                {"name": v, "weight": 0, "weightType": "variable", "stickiness": "default"}
                for v in ("on", "off")
            ]
            send(
                "PUT",
                f"{project}/{name}/variants-batch",
                {"variants": variants, "environments": ["development"]},
            )
        if r.random() < 0.7:
            send("POST", f"{path}/on")
    return {"db": str(db), "client_token": client_token, "flags": flags}
