"""Helpers shared by the tests: headers and a real server process."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path


def auth(token: str) -> dict[str, str]:
    """The Authorization header for ``token``."""
    return {"Authorization": token}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LiveServer:
    """A ``flagadmin serve`` process on 127.0.0.1, started and stopped by the test."""

    def __init__(
        self, db_path: Path, env: dict[str, str] | None = None, threads: int = 8, args: tuple[str, ...] = ()
    ):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = db_path.parent / f"server-{self.port}.log"
        command = [
            sys.executable,
            "-c",
            "from flagadmin.app import main; main()",
            "serve",
            "--db",
            str(db_path),
            "--port",
            str(self.port),
            "--threads",
            str(threads),
            *args,
        ]
        self.process = subprocess.Popen(
            command,
            env={**os.environ, **(env or {})},
            stdout=self.log.open("wb"),
            stderr=subprocess.STDOUT,
        )
        self.wait_until_up()

    def wait_until_up(self, timeout: float = 20) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited: {self.log.read_text()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("server did not start in time")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
