"""Retention of a log backlog: the longest write transaction while it is deleted.

    python bench/retention.py [--db bench/data/bench-0.1.db] [--integration 1] [--keep 10000]

Copies ``--db`` to a temporary folder twice and applies retention (keep the newest ``--keep``
rows of ``--integration``'s log) to each copy: once in a single transaction, as the sweep did
before, and once in steps of ``PRUNE_MAX_ROWS`` rows (store/integration_events.py), as it does
now. Prints the rows deleted, the transactions, the longest one (every writer of the process
waits that long) and the total, for both, and the ratio of the longest.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from flagadmin.store import connect
from flagadmin.store import integration_events as store_log

BENCH = Path(__file__).resolve().parent


def run(path: Path, integration: int, keep: int, max_rows: int) -> tuple[int, list[float]]:
    """Prune until nothing is left to delete, ``max_rows`` per transaction; (rows, seconds
    of each transaction)."""
    times: list[float] = []
    total = 0
    with connect(path) as conn:
        while True:
            started = time.perf_counter()
            with conn.write():
                deleted = store_log.prune(conn, integration, keep=keep, before="0000", max_rows=max_rows)
            times.append(time.perf_counter() - started)
            total += deleted
            if deleted < max_rows:
                return total, times


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--db", type=Path, default=BENCH / "data" / "bench-0.1.db", help="a bench database (copied)"
    )
    p.add_argument("--integration", type=int, default=1)
    p.add_argument("--keep", type=int, default=10_000)
    args = p.parse_args(argv)
    if not args.db.exists():
        p.error(
            f"{args.db} does not exist: build it with `python bench/generate.py --db {args.db} --scale 0.1`"
        )
    longest = {}
    with tempfile.TemporaryDirectory(prefix="flagadmin-retention-") as folder:
        for label, max_rows in (("one transaction", 2**62), ("steps", store_log.PRUNE_MAX_ROWS)):
            copy = Path(folder) / f"{label.replace(' ', '-')}.db"
            shutil.copy(args.db, copy)
            rows, times = run(copy, args.integration, args.keep, max_rows)
            longest[label] = max(times)
            print(
                f"{label:16} {rows:,} rows in {len(times):,} transaction(s)"
                f" of at most {min(max_rows, rows):,} rows: longest {max(times) * 1000:,.0f} ms,"
                f" all {sum(times) * 1000:,.0f} ms",
                flush=True,
            )
    print(f"longest transaction, steps ÷ one: {longest['steps'] / longest['one transaction']:.3f}")


if __name__ == "__main__":
    main()
