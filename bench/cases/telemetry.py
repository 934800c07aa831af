"""telemetry: the five spec operations with the Prometheus metrics on and off, in alternated pairs.

What it measures: req/s, p50, p99 and server CPU per request of the operations of the ``reads``
case (4.1 first page, 4.2 of ``heavy``, 4.3, 4.4, 4.5) on fresh ``flagadmin serve`` processes
that differ only in ``FLAGADMIN_PROMETHEUS``: ``on`` (the default: every request timed into two
histograms, ``web/telemetry.py``) and ``off`` (the endpoint answers 404 and no request is timed).
With ``--before TREE`` a third variant, ``before``, serves the same operations with another
flagadmin tree (the commit before the metrics, say): it measures what ``off`` keeps as well
(the thread's time in SQL counted per statement, the answer caches' counters).

Protocol: as ``reads`` (bench/README.md): each measurement on a freshly started server pinned to
core 0, wrk ``-t1`` on core 1, two warm-up requests, then ``--seconds`` of load. A pair runs
every variant once per operation, the order rotated from one pair to the next (on, off, before;
off, before, on; ...), so that a machine slowing down during the run weighs on every variant
alike. The report gives, per operation, each variant's median over pairs and the median and
range of the per-pair ratios ``on ÷ off`` (and ``on ÷ before``): a ratio whose range straddles
1 is noise. After each ``on`` measurement the server's own histogram count for the operation's
route is read back, so that the report shows the metrics were really on.

Then, in process (``--in-process-rounds``, 0: not at all): two apps of the measured tree on the
same database, one with the metrics on and one off, each operation's request made through
Flask's test client, this process pinned to core 0; the CPU time of this thread per request,
alternated by rounds. Without waitress, the network and the other core's load generator in the
figure, what the metrics add to a request stands out from much less noise than over HTTP (no
``before`` here: one process imports one tree).

Last, the hooks alone: the WSGI wrapper's call and the after-request hook's (both histograms
observed) timed in a loop inside one request's context, the best of 7 repeats, pinned to core
0; what they add to every request, without the request around them.

Results: ``<out>/telemetry.json`` and ``<out>/telemetry.md``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import time
from dataclasses import dataclass, replace
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from bench import lib

#: Page size of 4.1.
LIMIT = 50
PROMETHEUS = "/internal-backstage/prometheus"
VARIANTS = ("on", "off", "before")


@dataclass(frozen=True)
class Operation:
    """One spec operation under load: its request and the route template it is counted under."""

    name: str
    path: str
    template: str
    token: str  # "admin" or "heavy"
    method: str = "GET"
    connections: int | None = None  # None: --connections


OPERATIONS = (
    Operation(
        "4.1@0",
        f"/api/admin/addons/1/events?limit={LIMIT}&offset=0",
        "/api/admin/addons/:id/events",
        "admin",
    ),
    Operation("4.2", "/api/admin/personal-dashboard", "/api/admin/personal-dashboard", "heavy"),
    Operation("4.3", "/api/admin/ui-config", "/api/admin/ui-config", "admin"),
    Operation("4.4", "/api/admin/archive/features", "/api/admin/archive/features", "admin", connections=2),
    Operation(
        "4.5",
        "/api/admin/scim-settings/generate-new-token",
        "/api/admin/scim-settings/generate-new-token",
        "admin",
        method="POST",
    ),
)


@contextlib.contextmanager
def environment(**changes: str):
    """``os.environ`` with ``changes`` for the block (what a server started inside inherits)."""
    saved = {name: os.environ.get(name) for name in changes}
    os.environ.update(changes)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def server(args: argparse.Namespace, variant: str, before_root: Path | None) -> lib.Server:
    """A fresh flagadmin server of ``variant`` on the database."""
    port = lib.free_port()
    changes = {"FLAGADMIN_PROMETHEUS": "false" if variant == "off" else "true"}
    if variant == "before":
        changes["PYTHONPATH"] = str(before_root)
    with environment(**changes):
        return lib.Server(lib.flagadmin_command(args.db, port, args.threads), port, args.out / "servers.log")


def counted(port: int, template: str, method: str) -> int:
    """The server's own histogram count of ``template`` (every status), read back from it."""
    status, body, _ = lib.fetch(port, PROMETHEUS)
    if status != 200:
        return -1
    total = 0
    for family in text_string_to_metric_families(body.decode()):
        for sample in family.samples:
            labels = sample.labels
            if (
                sample.name == "http_request_duration_milliseconds_count"
                and labels.get("path") == template
                and labels.get("method") == method
            ):
                total += int(sample.value)
    return total


def measure(args, wrk: str, tokens: dict, op: Operation, variant: str, before_root: Path | None) -> dict:
    """One measurement: a fresh server of ``variant``, warmed up, loaded by wrk."""
    auth = tokens[op.token]
    with server(args, variant, before_root) as running:
        for _ in range(2):
            status, body, _ = lib.fetch(running.port, op.path, op.method, auth)
            if status != 200:
                raise RuntimeError(f"{op.name} on {variant}: {status} {body[:200]!r}")
        cpu_before = running.cpu_seconds()
        figures = lib.run_wrk(
            wrk,
            running.port,
            [op.path],
            method=op.method,
            auth=auth,
            duration=args.duration,
            connections=op.connections or args.connections,
            timeout=args.timeout,
            log=args.out / "wrk.log",
        )
        figures["cpu_us"] = (running.cpu_seconds() - cpu_before) / max(1, figures["requests"]) * 1e6
        if variant == "on":
            figures["counted"] = counted(running.port, op.template, op.method)
    return figures


#: Requests per measurement in process, by operation (4.4 reads every archived flag: few).
IN_PROCESS_REQUESTS = {"4.4": 3}


def in_process(args: argparse.Namespace, tokens: dict, operations: list[Operation]) -> dict:
    """The in-process measurement (see the module's docstring): ``{operation: {variant: [µs of
    this thread's CPU per request, one per round]}}``."""
    from flagadmin.app import create_app
    from flagadmin.config import settings_from_env

    base = replace(settings_from_env(lib.SERVER_ENV), git_revision="bench")
    apps = {
        variant: create_app({"DATABASE": args.db, "SETTINGS": replace(base, prometheus=variant == "on")})
        for variant in ("on", "off")
    }
    cpus = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {int(lib.SERVER_CPU)})
    found: dict[str, dict[str, list[float]]] = {op.name: {"on": [], "off": []} for op in operations}
    try:
        for r in range(args.in_process_rounds):
            for op in operations:
                n = IN_PROCESS_REQUESTS.get(op.name, args.in_process_requests)
                for variant in rotation(r, ["on", "off"]):
                    client = apps[variant].test_client()
                    headers = {"Authorization": tokens[op.token]}
                    for _ in range(3):
                        client.open(op.path, method=op.method, headers=headers).close()
                    started = time.thread_time()
                    for _ in range(n):
                        response = client.open(op.path, method=op.method, headers=headers)
                        response.get_data()
                        response.close()
                    found[op.name][variant].append((time.thread_time() - started) / n * 1e6)
            print(
                f"in process, round {r + 1}/{args.in_process_rounds}: "
                + ", ".join(f"{k} {v['on'][-1]:.0f}/{v['off'][-1]:.0f} µs" for k, v in found.items()),
                flush=True,
            )
    finally:
        os.sched_setaffinity(0, cpus)
    return found


def hooks_alone(args: argparse.Namespace, calls: int = 20000) -> dict[str, float]:
    """µs per call of the metrics' two request hooks, in a request context of 4.3's route:
    ``{"wrapper", "observe", "loop"}`` (``loop``: an empty call, the harness's own share)."""
    import timeit

    from flask import Response, request

    from flagadmin.app import create_app
    from flagadmin.config import settings_from_env
    from flagadmin.web import telemetry

    app = create_app(
        {"DATABASE": args.db, "SETTINGS": replace(settings_from_env(lib.SERVER_ENV), prometheus=True)}
    )
    response = Response(b"{}", status=200)
    wrapper = telemetry._Timed(lambda environ, start_response: None)
    environ: dict = {}
    cpus = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {int(lib.SERVER_CPU)})
    try:
        with app.test_request_context("/api/admin/ui-config"):
            request.url_rule = app.url_map.bind("localhost").match("/api/admin/ui-config", return_rule=True)[
                0
            ]
            wrapper(request.environ, None)

            def best(call) -> float:
                return min(timeit.repeat(call, number=calls, repeat=7)) / calls * 1e6

            return {
                "wrapper": best(lambda: wrapper(environ, None)),
                "observe": best(lambda: telemetry._observe(response)),
                "loop": best(lambda: None),
            }
    finally:
        os.sched_setaffinity(0, cpus)


def rotation(pair: int, variants: list[str]) -> list[str]:
    """The order of the variants in pair ``pair`` (0-based): rotated by one each pair."""
    shift = pair % len(variants)
    return variants[shift:] + variants[:shift]


def parse_args(argv: list[str]) -> argparse.Namespace:
    """The command line (``python -m bench telemetry --help``)."""
    p = argparse.ArgumentParser(prog="python -m bench telemetry", description=__doc__.splitlines()[0])
    lib.add_common_options(p, rounds=None)
    p.add_argument("--pairs", type=int, default=5, help="alternated pairs (default 5)")
    p.add_argument("--scale", type=float, default=1.0, help="scale used when the database is built")
    p.add_argument("--connections", type=int, default=8, help="wrk connections (4.4: 2)")
    p.add_argument("--timeout", type=int, default=60, help="wrk request timeout (s)")
    p.add_argument("--threads", type=int, default=8, help="waitress threads of every server")
    p.add_argument("--before", type=Path, default=None, help="another flagadmin tree, measured as 'before'")
    p.add_argument("--only", default="", help="comma-separated operations (default: all five)")
    p.add_argument("--in-process-rounds", type=int, default=6, help="in-process rounds (0: none)")
    p.add_argument("--in-process-requests", type=int, default=2000, help="requests per measurement")
    args = p.parse_args(argv)
    if args.quick:
        if args.db == p.get_default("db"):
            args.db, args.scale = str(lib.DATA / "bench-0.1.db"), 0.1
        args.duration, args.pairs, args.in_process_rounds, args.in_process_requests = 2, 1, 1, 200
    return args


def main(argv: list[str]) -> None:
    """Run the case (see the module's docstring); write ``<out>/telemetry.{json,md}``."""
    args = parse_args(argv)
    tree = lib.measured_tree(args)
    args.out.mkdir(parents=True, exist_ok=True)
    for log in ("servers.log", "wrk.log"):
        (args.out / log).unlink(missing_ok=True)
    before_root = None
    if args.before is not None:
        before_root = lib.snapshot(args.before.resolve(), args.out.resolve() / "before")
    started = time.monotonic()
    meta = lib.ensure_database(Path(args.db), args.scale)
    wrk = lib.ensure_wrk()
    tokens = {"admin": meta["admin_token"], "heavy": meta["heavy_token"]}
    only = {name for name in args.only.split(",") if name}
    operations = [op for op in OPERATIONS if not only or op.name in only]
    variants = [v for v in VARIANTS if v != "before" or before_root is not None]
    runs: dict[str, dict[str, list[dict]]] = {op.name: {v: [] for v in variants} for op in operations}
    for pair in range(args.pairs):
        for op in operations:
            for variant in rotation(pair, variants):
                figures = measure(args, wrk, tokens, op, variant, before_root)
                runs[op.name][variant].append(figures)
                print(
                    f"pair {pair + 1}/{args.pairs} {op.name:<6} {variant:<6} {figures['rps']:9.1f} req/s"
                    f"  cpu {figures['cpu_us']:8.1f} µs  p50 {figures['p50_us'] / 1000:7.2f} ms"
                    f"  errors {figures['errors']}",
                    flush=True,
                )
    found_in_process = in_process(args, tokens, operations) if args.in_process_rounds else {}
    hooks = hooks_alone(args)
    results = {
        **tree,
        "command": lib.command_line(),
        "machine": {**lib.machine(), "wrk": lib.wrk_version(wrk)},
        "options": {k: str(v) for k, v in vars(args).items()},
        "before_digest": lib.code_digest(before_root / "flagadmin") if before_root else None,
        "data": {k: v for k, v in meta.items() if not k.endswith("_token")},
        "operations": [op.__dict__ for op in operations],
        "runs": runs,
        "in_process_us": found_in_process,
        "hooks_us": hooks,
        "seconds": round(time.monotonic() - started),
        "tree_digest_end": lib.code_digest(Path(tree["tree"])),
    }
    lib.write_results(args.out, "telemetry", results, markdown(results))


# --- the report ---


def _ratios(on: list[dict], other: list[dict], key: str) -> list[float]:
    return [a[key] / b[key] for a, b in zip(on, other, strict=True) if b[key]]


def _spread(values: list[float]) -> str:
    if not values:
        return "-"
    return f"x{statistics.median(values):.3f} [{min(values):.2f}-{max(values):.2f}]"


def markdown(results: dict) -> str:
    """The report: per operation, each variant's medians and the per-pair ratios."""
    o = results["options"]
    m = results["machine"]
    lines = [
        "# telemetry: the five spec operations with the Prometheus metrics on and off",
        "",
        f"- Command: `{results['command']}`",
        f"- Machine: {lib.machine_line(m)}",
        lib.code_line(results),
        f"- Data: scale {results['data'].get('scale')}; {o['pairs']} pairs, {o['duration']} s a measurement,"
        f" {o['connections']} connections (4.4: 2), {o['threads']} server threads",
    ]
    if results.get("before_digest"):
        lines.append(f"- before: the tree {o['before']}, digest {results['before_digest']}")
    lines += ["", "Medians over pairs:", ""]
    header = ["operation", "variant", "req/s", "CPU µs/request", "p50 ms", "p99 ms", "errors"]
    rows = []
    for name, variants in results["runs"].items():
        for variant, runs in variants.items():
            if not runs:
                continue
            rows.append(
                [
                    name,
                    variant,
                    f"{statistics.median(r['rps'] for r in runs):,.1f}",
                    f"{statistics.median(r['cpu_us'] for r in runs):,.0f}",
                    f"{statistics.median(r['p50_us'] for r in runs) / 1000:.2f}",
                    f"{statistics.median(r['p99_us'] for r in runs) / 1000:.2f}",
                    sum(r["errors"] for r in runs),
                ]
            )
    lines += lib.markdown_table(header, rows)
    lines += ["", "Ratios per pair, median [range]: req/s and server CPU per request.", ""]
    header = ["operation", "req/s on ÷ off", "CPU on ÷ off", "req/s on ÷ before", "CPU on ÷ before"]
    header.append("counted")
    rows = []
    for name, variants in results["runs"].items():
        on = variants["on"]
        if not on:
            continue
        before = variants.get("before")
        counted_ok = all(r.get("counted", 0) >= r["requests"] for r in on)
        rows.append(
            [
                name,
                _spread(_ratios(on, variants["off"], "rps")),
                _spread(_ratios(on, variants["off"], "cpu_us")),
                _spread(_ratios(on, before, "rps")) if before else "-",
                _spread(_ratios(on, before, "cpu_us")) if before else "-",
                "every request" if counted_ok else "**not all**",
            ]
        )
    lines += lib.markdown_table(header, rows)
    lines += [
        "",
        "`counted`: the `on` server's own `http_request_duration_milliseconds_count` for the route,"
        " read back after the load, covers every request wrk made.",
    ]
    if results.get("in_process_us"):
        lines += [
            "",
            f"In process: this thread's CPU per request through Flask's test client, µs, median of"
            f" {o['in_process_rounds']} alternated rounds of {o['in_process_requests']} requests"
            f" (4.4: {IN_PROCESS_REQUESTS['4.4']}), pinned to core {lib.SERVER_CPU}:",
            "",
        ]
        header = ["operation", "on µs", "off µs", "on - off µs", "on ÷ off, median [range]"]
        rows = []
        for name, variants in results["in_process_us"].items():
            on, off = variants["on"], variants["off"]
            rows.append(
                [
                    name,
                    f"{statistics.median(on):,.1f}",
                    f"{statistics.median(off):,.1f}",
                    f"{statistics.median(a - b for a, b in zip(on, off, strict=True)):+,.1f}",
                    _spread([a / b for a, b in zip(on, off, strict=True)]),
                ]
            )
        lines += lib.markdown_table(header, rows)
    hooks = results.get("hooks_us")
    if hooks:
        lines += [
            "",
            f"The hooks alone, µs a call (best of 7 loops, an empty call {hooks['loop']:.2f} µs): the WSGI"
            f" wrapper {hooks['wrapper']:.2f}, the after-request hook with both histograms"
            f" {hooks['observe']:.2f}; {hooks['wrapper'] + hooks['observe']:.1f} µs a request in all.",
        ]
    return "\n".join(lines) + "\n"
