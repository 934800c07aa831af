"""binary: the one-file build against the package install (its ceiling): size, start time and
throughput.

``python -m bench binary`` (after ``packaging/build``) measures, in one run:

1. **Size** of ``dist/flagadmin`` and ``dist/flagadmin.pyz``, in bytes. Target: the binary
   under 40 MB (40,000,000 bytes).
2. **Start to first answer**: from the moment the process is started to the first 200 of
   ``GET /health`` (polled every 5 ms on new connections), of ``serve`` on a copy of a
   database holding the demo dataset, for the binary, the package (``python -m flagadmin``
   in ``build/venv``, which holds the very wheel that was frozen) and the zipapp.
   *Cold*: the page cache of every file the program reads is dropped first
   (``posix_fadvise(POSIX_FADV_DONTNEED)`` on the binary; on the interpreter, its standard
   library and site-packages for the package and the zipapp), and the zipapp starts with an
   empty ``SHIV_ROOT`` (it unpacks itself). The binary unpacks itself into an empty
   ``TMPDIR`` on every start, cold or warm: a folder on the disk (as ``/tmp`` is here), and,
   where ``/dev/shm`` exists, once more on that tmpfs. *Warm*: the same again, right after.
   Target: the binary's first answer within 2 s, cold and warm (``TMPDIR`` on the disk).
3. **Throughput of ui-config** (spec 4.3, ``GET /api/admin/ui-config``, admin token): wrk with
   one thread and ``--connections`` connections on core 1, the server (``--threads``) on core
   0, binary and package alternating for ``--rounds`` rounds of ``--duration`` seconds, each
   on a fresh server after a few warm-up requests; medians compared. Target: the binary
   within 10 % of the package (the ceiling here is the package, measured in the same run).

It also checks after every stop of the binary that its extraction folder is gone.
Figures go to ``<out>/binary.json`` and ``<out>/binary.md`` (default ``bench/out``). A quick check:
``python -m bench binary --quick`` (2 s of wrk, one round, two starts). It measures the builds in
``dist/``, not a tree: it takes no ``--tree``.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import lib

REPOSITORY = lib.REPO
SIZE_TARGET = 40_000_000
READY_TARGET_S = 2.0
THROUGHPUT_TARGET = 0.90
UI_CONFIG = "/api/admin/ui-config"


def drop_from_page_cache(paths: list[Path]) -> int:
    """Drop the cached pages of every file under ``paths`` (files or folders) from the page
    cache with ``posix_fadvise(DONTNEED)``: this process's files only, no root needed, no
    effect on other files. Return how many files were dropped."""
    count = 0
    for top in paths:
        files = [top] if top.is_file() else (p for p in top.rglob("*") if p.is_file() and not p.is_symlink())
        for path in files:
            try:
                fd = os.open(path, os.O_RDONLY)
            except OSError:
                continue
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                count += 1
            finally:
                os.close(fd)
    return count


def interpreter_files(python: str) -> list[Path]:
    """The folders an interpreter reads its code from: its standard library and its
    site-packages (as that interpreter reports them)."""
    out = subprocess.run(
        [
            python,
            "-c",
            "import json, sysconfig; p = sysconfig.get_paths(); "
            "print(json.dumps([p['stdlib'], p['platstdlib'], p['purelib'], p['platlib']]))",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return sorted({Path(p) for p in json.loads(out)})


def health_ok(port: int) -> bool:
    """True when ``GET /health`` answers 200 right now."""
    conn = http.client.HTTPConnection(lib.HOST, port, timeout=1)
    try:
        conn.request("GET", "/health")
        return conn.getresponse().status == 200
    except OSError:
        return False
    finally:
        conn.close()


#: The binary unpacking itself into a tmpfs (/dev/shm) rather than the disk's /tmp.
ON_TMPFS = "binary, TMPDIR on tmpfs"


class Programs:
    """How to start each program under test, and what to drop for a cold start."""

    def __init__(self, args: argparse.Namespace, work: Path, tmpfs: Path | None) -> None:
        self.args = args
        self.work = work
        self.tmpdirs = {"disk": work / "tmp", "tmpfs": tmpfs}
        self.shiv_root = work / "shiv"
        self.tmpdirs["disk"].mkdir()
        self.cold_files = {
            "binary": [args.binary],
            ON_TMPFS: [args.binary],
            "package": interpreter_files(args.python),
            "zipapp": [args.pyz, *interpreter_files(args.zipapp_python)],
        }

    def names(self) -> list[str]:
        """The programs whose start is timed (the tmpfs case only where /dev/shm exists)."""
        return ["binary", *([ON_TMPFS] if self.tmpdirs["tmpfs"] else []), "package", "zipapp"]

    def command(self, name: str, db: Path, port: int) -> list[str]:
        """The ``serve`` command of program ``name`` on ``db`` and ``port``."""
        serve = ["serve", "--db", str(db), "--port", str(port), "--threads", str(self.args.threads)]
        if name in ("binary", ON_TMPFS):
            return [str(self.args.binary), *serve]
        if name == "package":
            return [self.args.python, "-m", "flagadmin", *serve]
        return [self.args.zipapp_python, str(self.args.pyz), *serve]

    def env(self, name: str) -> dict[str, str]:
        """The environment of program ``name``: its own TMPDIR and SHIV_ROOT, no virtualenv."""
        env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
        tmpdir = self.tmpdirs["tmpfs" if name == ON_TMPFS else "disk"]
        return {**env, "TMPDIR": str(tmpdir), "SHIV_ROOT": str(self.shiv_root)}

    def extraction_left(self) -> list[str]:
        """PyInstaller extraction folders left in the binary's TMPDIRs."""
        return sorted(p.name for folder in self.tmpdirs.values() if folder for p in folder.glob("_MEI*"))


def time_to_first_answer(programs: Programs, name: str, template: Path, cold: bool) -> float:
    """Start program ``name`` on a fresh copy of ``template``; return the seconds from start to
    the first 200 of /health, then stop it (SIGTERM).

    :raise RuntimeError: it exited, did not answer within 30 s, or left its extraction folder.
    """
    db = programs.work / f"start-{secrets.token_hex(4)}.db"
    shutil.copyfile(template, db)
    if cold:
        if name == "zipapp":
            shutil.rmtree(programs.shiv_root, ignore_errors=True)
        drop_from_page_cache(programs.cold_files[name])
    port = lib.free_port()
    log = (programs.work / "starts.log").open("ab")
    start = time.perf_counter()
    proc = subprocess.Popen(
        programs.command(name, db, port), stdout=log, stderr=subprocess.STDOUT, env=programs.env(name)
    )
    try:
        deadline = start + 30
        while not health_ok(port):
            if proc.poll() is not None:
                raise RuntimeError(f"{name} exited with {proc.returncode}; see {log.name}")
            if time.perf_counter() > deadline:
                raise RuntimeError(f"{name} did not answer /health within 30 s")
            time.sleep(0.005)
        return time.perf_counter() - start
    finally:
        proc.terminate()
        proc.wait(30)
        log.close()
        left = programs.extraction_left()
        if left:
            raise RuntimeError(f"{name} left its extraction folder behind: {left}")


def throughput(programs: Programs, name: str, template: Path, admin: str, wrk: str) -> dict:
    """wrk figures of ui-config on a fresh server of program ``name`` (pinned to core 0)."""
    db = programs.work / f"load-{secrets.token_hex(4)}.db"
    shutil.copyfile(template, db)
    port = lib.free_port()
    env = programs.env(name)
    os.environ.update(TMPDIR=env["TMPDIR"], SHIV_ROOT=env["SHIV_ROOT"])
    with lib.Server(programs.command(name, db, port), port, programs.work / "servers.log") as server:
        for _ in range(3):
            status, body, _ = lib.fetch(server.port, UI_CONFIG, auth=admin)
            if status != 200:
                raise RuntimeError(f"{name}: ui-config answered {status}: {body[:200]!r}")
        return lib.run_wrk(
            wrk,
            server.port,
            [UI_CONFIG],
            auth=admin,
            duration=programs.args.duration,
            connections=programs.args.connections,
            timeout=5,
            log=programs.work / "wrk.log",
        )


def demo_database(args: argparse.Namespace, work: Path, admin: str) -> Path:
    """A database holding the demo dataset and the admin token ``admin``, made by the package."""
    db = work / "template.db"
    subprocess.run([args.python, "-m", "flagadmin", "seed", "--db", str(db)], check=True, capture_output=True)
    code = (
        "import sys\n"
        "from flagadmin.store import connect, tokens\n"
        "with connect(sys.argv[1]) as conn:\n"
        "    tokens.ensure_admin_token(conn, sys.argv[2], name='bench')\n"
        "    conn.pragma('wal_checkpoint(TRUNCATE)')\n"
    )
    subprocess.run([args.python, "-c", code, str(db), admin], check=True)
    return db


def summary(values: list[float]) -> dict:
    """Median, min and max of ``values``, and the values."""
    return {
        "median": statistics.median(values),
        "min": min(values),
        "max": max(values),
        "values": values,
    }


def report(results: dict) -> str:
    """The figures as Markdown, with the targets."""
    size = results["size"]
    lines = [
        "# The one-file build against the package install",
        "",
        f"Command: `{results['command']}`; {lib.machine_line(results['machine'])}.",
        "",
        "| file | bytes | MB | target |",
        "|---|---|---|---|",
        f"| dist/flagadmin | {size['binary']:,} | {size['binary'] / 1e6:.1f} | < 40 MB: "
        f"{'met' if size['binary'] < SIZE_TARGET else 'MISSED'} |",
        f"| dist/flagadmin.pyz | {size['zipapp']:,} | {size['zipapp'] / 1e6:.1f} | |",
        "",
        "Start to first answered request (`serve` on a demo database, to the first 200 of /health), "
        "seconds, median (min-max):",
        "",
        "| program | cold | warm |",
        "|---|---|---|",
    ]
    for name, starts in results["starts"].items():
        cells = [
            f"{s['median']:.2f} ({s['min']:.2f}-{s['max']:.2f})" for s in (starts["cold"], starts["warm"])
        ]
        lines.append(f"| {name} | {cells[0]} | {cells[1]} |")
    binary = results["starts"]["binary"]
    typical = max(binary["cold"]["median"], binary["warm"]["median"])
    worst = max(binary["cold"]["max"], binary["warm"]["max"])
    lines += [
        "",
        f"Target: the binary's first answer within {READY_TARGET_S:.0f} s (medians, cold and warm): "
        f"{'met' if typical <= READY_TARGET_S else 'MISSED'} ({typical:.2f} s; slowest single start "
        f"{worst:.2f} s).",
        "",
        f"ui-config throughput, req/s (wrk -t1 -c{results['connections']}, {results['duration']} s, "
        f"{results['rounds']} rounds, alternating):",
        "",
        "| program | median | rounds | errors |",
        "|---|---|---|---|",
    ]
    for name, load in results["throughput"].items():
        rounds = ", ".join(f"{r:.0f}" for r in load["rps"]["values"])
        lines.append(f"| {name} | {load['rps']['median']:.0f} | {rounds} | {load['errors']} |")
    ratio = results["throughput_ratio"]
    lines += [
        "",
        f"Binary / package: {ratio:.3f}; target within 10 %: "
        f"{'met' if ratio >= THROUGHPUT_TARGET else 'MISSED'}.",
    ]
    return "\n".join(lines) + "\n"


def arguments(argv: list[str]) -> argparse.Namespace:
    """Command-line options (see ``--help``)."""
    build_python = REPOSITORY / "build/venv/bin/python"
    parser = argparse.ArgumentParser(prog="python -m bench binary", description=__doc__.split("\n\n")[0])
    lib.add_common_options(parser, db=False, tree=False)
    parser.add_argument("--binary", type=Path, default=REPOSITORY / "dist/flagadmin")
    parser.add_argument("--pyz", type=Path, default=REPOSITORY / "dist/flagadmin.pyz")
    parser.add_argument(
        "--python",
        default=str(build_python) if build_python.exists() else sys.executable,
        help="the package install to compare with (default: build/venv, the frozen wheel)",
    )
    parser.add_argument(
        "--zipapp-python",
        default=None,
        help="interpreter for the zipapp (default: the base interpreter of --python, no venv)",
    )
    parser.add_argument("--starts", type=int, default=5, help="cold and warm starts per program")
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--threads", type=int, default=8)
    args = parser.parse_args(argv)
    if args.quick:
        args.duration, args.rounds, args.starts = 2, 1, 2
    if args.zipapp_python is None:
        args.zipapp_python = subprocess.run(
            [args.python, "-c", "import sys; print(sys._base_executable)"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    for path in (args.binary, args.pyz):
        if not path.exists():
            parser.error(f"{path} is missing: run packaging/build first")
    return args


def main(argv: list[str]) -> None:
    """Measure, print the Markdown report and write ``<out>/binary.{json,md}``."""
    args = arguments(argv)
    wrk = lib.ensure_wrk()
    admin = "*:*." + secrets.token_hex(32)
    args.out.mkdir(parents=True, exist_ok=True)
    shm = Path("/dev/shm")
    with (
        tempfile.TemporaryDirectory(prefix="flagadmin-bench-binary-") as folder,
        tempfile.TemporaryDirectory(prefix="flagadmin-bench-", dir=shm if shm.is_dir() else None) as tmpfs,
    ):
        work = Path(folder)
        template = demo_database(args, work, admin)
        programs = Programs(args, work, Path(tmpfs) if shm.is_dir() else None)
        starts: dict[str, dict] = {}
        for name in programs.names():
            cold, warm = [], []
            for _ in range(args.starts):
                cold.append(time_to_first_answer(programs, name, template, cold=True))
                warm.append(time_to_first_answer(programs, name, template, cold=False))
            starts[name] = {"cold": summary(cold), "warm": summary(warm)}
            print(f"start {name}: cold {cold}, warm {warm}", flush=True)
        loads: dict[str, list[dict]] = {"binary": [], "package": []}
        for _ in range(args.rounds):
            for name in loads:
                figures = throughput(programs, name, template, admin, wrk)
                loads[name].append(figures)
                print(f"ui-config {name}: {figures['rps']:.0f} req/s", flush=True)
        shutil.copy(work / "wrk.log", args.out / "binary-wrk.log")
    results = {
        "command": lib.command_line(),
        "machine": {**lib.machine(), "wrk": lib.wrk_version(wrk)},
        "size": {"binary": args.binary.stat().st_size, "zipapp": args.pyz.stat().st_size},
        "starts": starts,
        "duration": args.duration,
        "rounds": args.rounds,
        "connections": args.connections,
        "throughput": {
            name: {
                "rps": summary([f["rps"] for f in figures]),
                "errors": sum(f["errors"] for f in figures),
                "rounds": figures,
            }
            for name, figures in loads.items()
        },
    }
    results["throughput_ratio"] = (
        results["throughput"]["binary"]["rps"]["median"] / results["throughput"]["package"]["rps"]["median"]
    )
    lib.write_results(args.out, "binary", results, report(results))
