"""``python -m bench CASE [options]``: run one case of the suite (``python -m bench list``).

``python -m bench compare --tree OTHER [--pairs 3] [--out DIR] CASE [case options]`` runs a case
on this checkout and on another flagadmin tree (a ``git worktree`` of another commit, say) in
alternated pairs and reports each headline figure's ratio by pair (:func:`bench.lib.compare_trees`).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

#: The cases: name, module under bench.cases, options put before the user's, one line.
CASES: list[tuple[str, str, list[str], str]] = [
    (
        "reads",
        "reads",
        [],
        "the five spec operations (4.1-4.5) under wrk against their Flask and WSGI ceilings",
    ),
    ("traffic", "traffic", [], "real traffic: varied reads, the mixed case, reads after a write, the writes"),
    ("writes", "traffic", ["--phases", "writes"], "traffic's writes only: flag create/archive, SCIM, tokens"),
    ("mixed", "traffic", ["--phases", "mixed"], "traffic's mixed case only: reads with writes and gzip"),
    (
        "deliveries",
        "deliveries",
        [],
        "webhook deliveries: write throughput with and without them, outbox drain",
    ),
    ("scim", "scim", [], "SCIM user and group operations in process: time and SQL statements"),
    ("telemetry", "telemetry", [], "the five spec operations with the Prometheus metrics on, off and before"),
    ("rules", "rules", [], "a strategy add and a strategy update as ratios to a flag create, same run"),
    ("sdk-writes", "sdk_writes", [], "SDK metrics and registrations against a bare route answering 202"),
    ("client", "client", [], "the Client API's flag configuration (full, gzip, 304) against a bare route"),
    (
        "frontend",
        "frontend",
        [],
        "the Frontend API: a context repeated, its 304, a new context each time, against bare routes",
    ),
    ("events", "events", [], "the system event log at a million events: pages, totals, the write cost"),
    ("group-commit", "group_commit", [], "SQLite commits a second with and without group commit"),
    ("binary", "binary", [], "the one-file build against the package: start-up and throughput"),
    ("data", "data", [], "build the generated database (bench/data/bench.db) and its tokens"),
]
#: Cases that measure no tree (no snapshot, no ``--tree``).
TREELESS = {"binary", "data"}
#: Processes the cases start (not listed).
HIDDEN = {"_ceiling": "serve_ceiling", "_receiver": "serve_receiver"}


def usage() -> str:
    """The list of cases, one line each."""
    width = max(len(name) for name, *_ in CASES)
    lines = ["usage: python -m bench CASE [options]   (python -m bench CASE --help)", "", "cases:"]
    lines += [f"  {name:<{width}}  {line}" for name, _, _, line in CASES]
    lines += [
        "",
        "  compare --tree OTHER [--pairs 3] CASE [options]",
        "      CASE on this checkout and on OTHER in alternated pairs, ratios by pair",
    ]
    return "\n".join(lines)


def compare(argv: list[str]) -> None:
    """``compare``: see the module's docstring."""
    from bench import lib

    parser = argparse.ArgumentParser(
        prog="python -m bench compare", description="two trees, alternated pairs"
    )
    parser.add_argument("--tree", type=Path, required=True, help="the other flagadmin tree")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--out", type=Path, default=lib.OUT / "compare")
    parser.add_argument("case", choices=[name for name, *_ in CASES if name not in TREELESS])
    args, rest = parser.parse_known_args(argv)
    _, _, prefix, _ = next(c for c in CASES if c[0] == args.case)
    markdown = lib.compare_trees(args.case, [*prefix, *rest], args.tree, args.pairs, args.out)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "compare.md").write_text(markdown)
    print("\n" + markdown)


def main(argv: list[str]) -> None:
    """Dispatch to a case's ``main(argv)``."""
    if not argv or argv[0] in ("-h", "--help", "list"):
        print(usage())
        return
    name, rest = argv[0], argv[1:]
    if name in HIDDEN:
        from bench import lib

        getattr(lib, HIDDEN[name])(rest)
        return
    if name == "compare":
        compare(rest)
        return
    found = next((c for c in CASES if c[0] == name), None)
    if found is None:
        sys.exit(f"unknown case {name!r}\n\n{usage()}")
    _, module, prefix, _ = found
    if name not in TREELESS:
        from bench import lib

        lib.enter_snapshot(rest)
    importlib.import_module(f"bench.cases.{module}").main([*prefix, *rest])


main(sys.argv[1:])
