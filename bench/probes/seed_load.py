"""Seed load time, before and after, in alternated pairs: ``flagadmin seed`` of a large document.

    python bench/probes/seed_load.py --tree before=DIR --tree after=DIR [--flags 20000] [--pairs 5]

Each ``DIR`` holds the package to measure under the name ``flagadmin`` (first on ``PYTHONPATH``).
The document is the demo seed (``seed/demo.json`` of the first tree) with ``--flags`` more flags
added to its first project, each with the demo's two environments, and one favorite for every
tenth: a large install's bootstrap. Each measurement, in a fresh process pinned to core 0: create
an empty database (``ensure_schema``, not timed), then ``load_files`` of the document (timed,
validation included, in one transaction, the commit synced). Prints each measurement and, per
tree, the median and the range of the load time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

MEASURE = """
import sys, time
from flagadmin.store import connect
from flagadmin.store.schema import ensure_schema
try:
    from flagadmin.seed.documents import load_files
except ImportError:
    from flagadmin.seed_documents import load_files
db, document = sys.argv[1], sys.argv[2]
ensure_schema(db)
with connect(db) as conn:
    started = time.perf_counter()
    counts = load_files(conn, [document])
    print(time.perf_counter() - started, counts["features"])
"""


def document(tree: Path, flags: int, dest: Path) -> None:
    seed = json.loads((tree / "flagadmin" / "seed" / "demo.json").read_text())
    project = seed["projects"][0]["id"]
    template = next(f for f in seed["features"] if f["project"] == project)
    users = [u["id"] for u in seed["users"]]
    for i in range(flags):
        seed["features"].append({**template, "name": f"bulk-{i}", "description": f"bulk flag {i}"})
        if i % 10 == 0:
            seed["favorites"].append({"userId": users[i % len(users)], "feature": f"bulk-{i}"})
    dest.write_text(json.dumps(seed))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tree", action="append", required=True, help="name=DIR (DIR/flagadmin is the package)")
    p.add_argument("--flags", type=int, default=20000)
    p.add_argument("--pairs", type=int, default=5)
    args = p.parse_args()
    trees = dict(t.split("=", 1) for t in args.tree)
    names = list(trees)
    work = Path(tempfile.mkdtemp(prefix="seed-load-"))
    doc = work / "seed.json"
    document(Path(trees[names[0]]), args.flags, doc)
    print(
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} cores; demo + {args.flags} flags",
        flush=True,
    )
    times: dict[str, list[float]] = {name: [] for name in names}
    for pair in range(args.pairs):
        for name in names if pair % 2 == 0 else names[::-1]:
            db = work / f"{name}-{pair}.db"
            env = {**os.environ, "PYTHONPATH": trees[name]}
            out = subprocess.run(
                ["taskset", "-c", "0", sys.executable, "-c", MEASURE, str(db), str(doc)],
                capture_output=True,
                text=True,
                env=env,
                check=True,
                cwd="/",
            ).stdout.split()
            times[name].append(float(out[0]))
            print(f"pair {pair + 1} {name:10s} {float(out[0]):7.3f} s ({out[1]} flags)", flush=True)
            for suffix in ("", "-wal", "-shm"):
                Path(f"{db}{suffix}").unlink(missing_ok=True)
    for name in names:
        t = times[name]
        ratio = statistics.median(a / b for a, b in zip(t, times[names[0]], strict=True))
        print(f"  {name:10s} median {statistics.median(t):.3f} s [{min(t):.3f}-{max(t):.3f}] x{ratio:.3f}")


if __name__ == "__main__":
    main()
