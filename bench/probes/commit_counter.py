"""What the check "has anybody committed?" costs a request, before and after, in alternated pairs.

    python bench/probes/commit_counter.py --db bench.db --tree before=DIR --tree after=DIR \\
        [--threads 8] [--calls 20000] [--pairs 5]

Each ``DIR`` holds the package to measure under the name ``flagadmin`` (first on ``PYTHONPATH``).
In a fresh process pinned to core 0, ``--threads`` threads each open their own connection to a
copy of ``--db`` and call ``settings.versions(conn)`` ``--calls`` times: what every request
whose answer is kept runs before it trusts its token and its answer (nobody commits meanwhile,
so each call is the commit counter's check and nothing else). Prints the process CPU per call
(every thread, user + system) and the wall time per call; per tree the median and range.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

MEASURE = """
import sys, threading, time
from flagadmin.store import connect, settings
db, threads, calls = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
start = threading.Barrier(threads + 1)
done = []

def work():
    conn = connect(db)  # a connection is used by the thread that opened it
    settings.versions(conn)
    start.wait()
    for _ in range(calls):
        settings.versions(conn)
    done.append(conn)

workers = [threading.Thread(target=work) for _ in range(threads)]
for w in workers:
    w.start()
cpu0, wall0 = time.process_time(), time.perf_counter()
start.wait()
for w in workers:
    w.join()
cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
assert len(done) == threads, "a thread failed"
n = threads * calls
print(cpu / n * 1e6, wall / n * 1e6)
"""


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--db", required=True, type=Path)
    p.add_argument("--tree", action="append", required=True, help="name=DIR (DIR/flagadmin is the package)")
    p.add_argument("--threads", type=int, default=8)
    p.add_argument("--calls", type=int, default=20000)
    p.add_argument("--pairs", type=int, default=5)
    args = p.parse_args()
    trees = dict(t.split("=", 1) for t in args.tree)
    names = list(trees)
    work = Path(tempfile.mkdtemp(prefix="commit-counter-"))
    with sqlite3.connect(args.db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    dbs = {}
    for name in names:
        dbs[name] = work / f"{name}.db"
        shutil.copyfile(args.db, dbs[name])
    print(
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f};"
        f" {args.threads} threads x {args.calls} calls, pinned to core 0",
        flush=True,
    )
    cpu: dict[str, list[float]] = {name: [] for name in names}
    for pair in range(args.pairs):
        for name in names if pair % 2 == 0 else names[::-1]:
            env = {**os.environ, "PYTHONPATH": trees[name]}
            command = ["taskset", "-c", "0", sys.executable, "-c", MEASURE, str(dbs[name])]
            out = subprocess.run(
                [*command, str(args.threads), str(args.calls)],
                capture_output=True,
                text=True,
                env=env,
                check=True,
                cwd="/",
            ).stdout.split()
            cpu[name].append(float(out[0]))
            line = f"CPU {float(out[0]):6.2f} µs/call  wall {float(out[1]):6.2f} µs/call"
            print(f"pair {pair + 1} {name:10s} {line}", flush=True)
    for name in names:
        c = cpu[name]
        ratio = statistics.median(a / b for a, b in zip(c, cpu[names[0]], strict=True))
        spread = f"[{min(c):.2f}-{max(c):.2f}]"
        print(f"  {name:10s} CPU median {statistics.median(c):.2f} µs/call {spread} x{ratio:.3f}")
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
