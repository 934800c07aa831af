"""Driving a server with wrk (installed from Debian's packages when missing)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
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
) -> dict:
    """Run wrk (one thread, pinned to :data:`WRK_CPU`) against ``paths``; return its figures.

    Figures: requests, duration_us, bytes, the error counts connect/read/write/status
    (non-2xx/3xx)/timeout, latency p50/p90/p99/max/mean in microseconds, plus rps.
    wrk's own report (with --latency) is appended to ``log``.
    """
    env = dict(os.environ, BENCH_METHOD=method, BENCH_AUTH=auth or "", BENCH_PATHS=" ".join(paths))
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
        str(SCRIPT),
        f"http://{HOST}:{port}{paths[0]}",
    ]
    result = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    with log.open("a") as f:
        f.write(f"$ {' '.join(command)}\n{result.stdout}{result.stderr}\n")
    line = next((x for x in result.stdout.splitlines() if x.startswith("BENCH_JSON ")), None)
    if result.returncode != 0 or line is None:
        raise RuntimeError(f"wrk failed ({result.returncode}): {result.stderr.strip()}; see {log}")
    figures = json.loads(line.removeprefix("BENCH_JSON "))
    figures["rps"] = figures["requests"] / (figures["duration_us"] / 1e6)
    figures["errors"] = sum(figures[k] for k in ("connect", "read", "write", "status", "timeout"))
    return figures
