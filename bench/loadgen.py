"""Driving a server with wrk (installed from Debian's packages when missing)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
from pathlib import Path

from procs import HOST

#: Core of wrk; the server under test gets the other one.
WRK_CPU = "1"
SCRIPT = Path(__file__).resolve().parent / "wrk.lua"


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
