"""group-commit: SQLite commits a second with group commit (``flagadmin.store.group_commit``'s
WalSync) against its ceiling-free baseline, one fsync per commit (``synchronous=FULL``).

    python -m bench group-commit [--threads 8] [--commits 300] [--rounds 3] [--cpu 0] [--quick]

Writers (threads of one process pinned to one CPU, as ``serve`` runs under the other cases)
commit small transactions (one 500-byte row each) as fast as they can into a fresh database in
a temporary folder: first with group commit (the default), then with ``synchronous=FULL``
(``connect(..., group_commit=False)``), alternating, ``--rounds`` times. Reports commits per
second of each mode, the fdatasync calls of the group mode, and the ratio of the medians.
Every commit of both modes is on disk when its ``write()`` returns. No server, no wrk: the
figure is the store's alone. Results: ``<out>/group-commit.{json,md}``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path

from bench import lib
from flagadmin.store import schema
from flagadmin.store.engine import connect

try:
    from flagadmin.store.group_commit import WalSync
except ImportError:  # a tree from before store/engine.py was split (compare --tree)
    from flagadmin.store.engine import WalSync


def run(path: str, threads: int, commits: int, group_commit: bool) -> tuple[float, int]:
    """``threads`` writers of ``commits`` commits each; (commits per second, fdatasync calls)."""
    sync = WalSync.of(path)
    syncs_before = sync.syncs
    start = threading.Barrier(threads + 1)

    def writer(n: int) -> None:
        try:
            with connect(path, group_commit=group_commit) as conn:
                start.wait()
                for _ in range(commits):
                    with conn.write():
                        conn.run("INSERT INTO bench_rows (writer, pad) VALUES (?, ?)", [n, "x" * 500])
        except BaseException:
            start.abort()  # the main thread stops waiting (BrokenBarrierError) instead of hanging
            raise

    workers = [threading.Thread(target=writer, args=(n,)) for n in range(threads)]
    for worker in workers:
        worker.start()
    start.wait()
    began = time.perf_counter()
    for worker in workers:
        worker.join()
    elapsed = time.perf_counter() - began
    return threads * commits / elapsed, sync.syncs - syncs_before


def main(argv: list[str]) -> None:
    """Run the case (see the module's docstring)."""
    p = argparse.ArgumentParser(prog="python -m bench group-commit", description=__doc__.splitlines()[0])
    lib.add_common_options(p, db=False, seconds=None)
    p.add_argument("--threads", type=int, default=8)
    p.add_argument("--commits", type=int, default=300, help="commits per thread per measurement")
    p.add_argument("--cpu", type=int, default=0, help="the CPU the writers run on (-1: any)")
    p.add_argument("--dir", default=None, help="folder of the temporary database (default: the system's)")
    args = p.parse_args(argv)
    if args.quick:
        args.commits, args.rounds = 100, 1
    tree = lib.measured_tree(args)
    machine = lib.machine()  # before the pinning: its loop step is the machine's, not a busy core's
    if args.cpu >= 0:
        os.sched_setaffinity(0, {args.cpu})
    with tempfile.TemporaryDirectory(prefix="flagadmin-group-commit-", dir=args.dir) as folder:
        path = str(Path(folder) / "bench.db")
        schema.ensure_schema(path)
        with connect(path) as conn:
            conn.run("CREATE TABLE bench_rows (id INTEGER PRIMARY KEY, writer INTEGER, pad TEXT)")
        figures: dict[str, list[float]] = {"group commit": [], "synchronous=FULL": []}
        for r in range(1, args.rounds + 1):
            for label, group in (("group commit", True), ("synchronous=FULL", False)):
                rate, syncs = run(path, args.threads, args.commits, group)
                figures[label].append(rate)
                extra = f", {syncs} fdatasync calls" if group else ""
                print(f"round {r}: {label:17} {rate:9,.0f} commits/s{extra}", flush=True)
    group, full = (statistics.median(figures[k]) for k in ("group commit", "synchronous=FULL"))
    results = {
        **tree,
        "command": lib.command_line(),
        "machine": machine,
        "rounds": figures,
        "group_commits_per_s": group,
        "full_commits_per_s": full,
        "ratio": group / full,
    }
    text = (
        f"# group-commit\n\n`{results['command']}`\n\n{lib.machine_line(results['machine'])}\n\n"
        f"Median: group commit {group:,.0f} commits/s, synchronous=FULL {full:,.0f} commits/s;"
        f" ratio {group / full:.2f} ({args.threads} threads on "
        f"{'CPU ' + str(args.cpu) if args.cpu >= 0 else 'any CPU'}, {args.commits} commits each,"
        f" {args.rounds} rounds)\n"
    )
    lib.write_results(args.out, "group-commit", results, text)
