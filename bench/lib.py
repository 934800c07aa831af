"""Starting and stopping the servers under test, and reading their memory from /proc."""

from __future__ import annotations

import http.client
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

HOST = "127.0.0.1"
#: Core of the server under test; wrk gets the other one.
SERVER_CPU = "0"
#: Retention of the integration event logs (4.1) in every server started here, unless the
#: environment sets it: none. The generated logs are fixed data (600,000 events in integration
#: 1 at reference size, spread over the 30 days before the build), and the default retention
#: (10,000 rows, 30 days) would delete most of them at the first sweep of a server's delivery
#: workers, and the rest as the database ages. Databases built now carry the same on each
#: generated configuration (generate.KEEP_ALL); this covers those built before.
RETENTION = {
    "FLAGADMIN_INTEGRATION_EVENTS_KEEP": "1000000000",
    "FLAGADMIN_INTEGRATION_EVENTS_MAX_AGE": "P36500D",
}
BENCH = Path(__file__).resolve().parent


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


def ceiling_command(mode: str, body: Path, port: int, threads: int) -> list[str]:
    """Return the command of a ceiling server (see ceilings.py) answering ``body``."""
    return [
        sys.executable,
        str(BENCH / "ceilings.py"),
        "--mode",
        mode,
        "--body",
        str(body),
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
        env = {**RETENTION, **os.environ, "FLAGADMIN_GIT_REVISION": "bench", "PYTHONUNBUFFERED": "1"}
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
