"""data: build the generated database the other cases read (no measurement, no ceiling).

``python -m bench data [--scale 1.0] [--db bench/data/bench.db] [--seed 42]`` builds the SQLite
file with bulk SQL (:func:`lib.build_database`: at reference size 10,000 users, 1,000 projects,
100,000 flags, half archived, 1,000,000 integration events, the caller ``heavy``), writes its
tokens and counts beside it (``<stem>.json``) and personal tokens of 1,000 distinct users
(``<stem>.users.json``). The cases build what they need when it is missing; this rebuilds.
``--quick`` builds scale 0.1 at ``bench/data/bench-0.1.db`` (a few seconds).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from bench import lib


def main(argv: list[str]) -> None:
    """Build the database and write its JSON files."""
    parser = argparse.ArgumentParser(prog="python -m bench data", description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="1.0 = reference size (default)")
    parser.add_argument("--db", type=Path, default=lib.DEFAULT_DB)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--quick", action="store_true", help="scale 0.1 at bench/data/bench-0.1.db")
    args = parser.parse_args(argv)
    if args.quick:
        args.scale, args.db = 0.1, lib.DATA / "bench-0.1.db"
    args.db.parent.mkdir(parents=True, exist_ok=True)
    meta = lib.build_database(args.db, args.scale, args.seed)
    lib.meta_path(args.db).write_text(json.dumps(meta, indent=2) + "\n")
    lib.user_tokens_path(args.db).unlink(missing_ok=True)
    lib.ensure_user_tokens(args.db)
    print(
        f"{args.db}: {meta['bytes'] / 2**20:,.0f} MiB in {meta['seconds']} s "
        f"(scale {args.scale}); tokens and counts in {lib.meta_path(args.db)}"
    )
