"""deliveries: webhook deliveries under a burst or steady traffic of changes, against the same
traffic with no webhook configured (the ceiling: a change's latency with deliveries on must stay
within 1.2x of its latency without them).

Usage (from the repository root)::

    python -m bench deliveries                          # 10,000 changes, 5 integrations
    python -m bench deliveries --quick                  # 300 changes, one round
    python -m bench deliveries --kind flag --rate 50 --changes 1500 --rounds 1   # steady traffic
    python -m bench deliveries --db postgresql://postgres@/flagadmin_bench?host=/run/postgresql \
        --processes 2 --quick                           # on PostgreSQL, two serve processes

For each mode (``without``: no integration handles the changes; ``with``: ``--integrations``
enabled webhooks take every event type), on a fresh copy of the demo database: start
``flagadmin serve`` (core 0, ``--delivery-workers`` threads delivering), a receiver process
answering 200 at once (core 1), then ``--clients`` threads send ``--changes`` changes in all,
each on one keep-alive connection, while one more thread pages the 4.1 log of an integration
that is being written (``limit=50``, offsets 0 to 500) and checks each page (newest first,
no duplicates). After the burst, wait for the outbox to empty.

Steady traffic instead of a burst (``--rate``): the clients send the changes at that many a
second in all, for ``--changes / --rate`` seconds, while the pager goes on (a request every 10
ms or so: never a pause of 50 ms). The report then also gives the deliveries made *during* the
traffic, per second, against the rate they are needed at (changes a second times
``--integrations``): a server that is idle most of the time should keep up. E.g.
the third command above: whether deliveries keep up with steady traffic.

The change is a parameter (``--kind``): ``flag`` creates a flag (``POST
/api/admin/projects/default/features``, event ``feature-created``), ``addon`` replaces the
description of a disabled webhook configuration (``PUT /api/admin/addons/{id}``, event
``addon-config-updated``); ``auto`` takes ``flag`` when the server has the route.

Engines: by default each mode runs on a copy of a SQLite file. ``--db`` with a
PostgreSQL URL runs them on that server instead: the URL's user must be allowed to create
databases; the bench makes ``<name>_template`` (the demo data), then ``<name>_without`` and
``<name>_with`` from it for each mode (``<name>``: the URL's database). ``--processes 2``
starts two ``flagadmin serve`` processes on the same database (pinned to cores 0 and 1, the
receiver sharing core 1), the writers spread over both, every process delivering: on
PostgreSQL, the claims of both processes queue on one advisory lock, so no delivery is
attempted twice (the report counts attempts against deliveries).

Rounds (``--rounds``, default 3) alternate the two modes, on a machine that may be busy
with other work; the report gives each round and the median of the p50 ratios. Reports, per
mode: the change's latency (p50/p95/p99), the ratio of the p50s (target: within 1.2),
deliveries per second (attempts recorded / time from the first change to the last
delivery), the time from the start of the burst to the last delivery and from its end, the
paging latency during the burst and its page errors. Writes ``<out>/deliveries.{json,md}``.

This module is longer than 400 lines because it holds the set-up of both engines' databases,
the writers, the pager and the report of one case.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import os
import random
import shutil
import statistics
import subprocess
import threading
import time
from pathlib import Path

import orjson

from bench import lib
from flagadmin.spec import EVENT_TYPES
from flagadmin.store import connect, is_postgresql, schema, tokens
from flagadmin.store import integrations as store_integrations
from flagadmin.timestamps import parse_rfc3339

try:
    from flagadmin.seed.documents import demo_files, load_files
except ImportError:  # a tree from before the seed documents moved into seed/ (compare --tree)
    from flagadmin.seed_documents import demo_files, load_files

EVENT_OF_KIND = {"flag": "feature-created", "addon": "addon-config-updated"}


# --- set-up ---------------------------------------------------------------------------------


def _demo(target: str | Path) -> str:
    """Load the demo data into ``target`` (its own webhooks disabled) with an admin token;
    return the token."""
    schema.ensure_schema(target)
    token = tokens.new_admin_token()
    with connect(target) as conn:
        load_files(conn, demo_files())
        with conn.write():
            conn.run("UPDATE integrations SET enabled = 0")
        tokens.insert_token(conn, token, kind="admin", name="bench")
        if not is_postgresql(target):
            conn.pragma("wal_checkpoint(TRUNCATE)")
    return token


def template(work: Path, url: str | None = None) -> tuple[Path | str, str]:
    """The demo database (its own webhooks disabled) with an admin token: a SQLite file built
    once, or (``url``) a PostgreSQL template database built afresh."""
    if url is not None:
        target = _database_url(url, "template")
        _recreate(url, "template")
        return target, _demo(target)
    path = work / "template.db"
    token_file = work / "template.token"
    if path.exists() and token_file.exists():
        return path, token_file.read_text()
    path.unlink(missing_ok=True)
    token = _demo(path)
    token_file.write_text(token)
    return path, token


def _database_url(url: str, suffix: str) -> str:
    """The URL of the bench's database ``<name>_<suffix>`` on the server of ``url``."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    name = parts.path.lstrip("/") or "flagadmin_bench"
    return urlunsplit(parts._replace(path=f"/{name}_{suffix}"))


def _recreate(url: str, suffix: str, template_suffix: str | None = None) -> str:
    """Drop and create the database ``<name>_<suffix>`` (a copy of ``<name>_<template_suffix>``
    when given); return its URL."""
    from urllib.parse import urlsplit, urlunsplit

    import psycopg

    target = _database_url(url, suffix)
    name = urlsplit(target).path.lstrip("/")
    admin = urlunsplit(urlsplit(url)._replace(path="/postgres"))
    copy = (
        f' TEMPLATE "{urlsplit(_database_url(url, template_suffix)).path.lstrip("/")}"'
        if template_suffix
        else ""
    )
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"{copy}')
    return target


def fresh_database(args, work: Path, base: Path | str, mode: str) -> Path | str:
    """The database of one mode: a copy of the template (a file, or a PostgreSQL database)."""
    if args.db is not None:
        return _recreate(args.db, mode, "template")
    db = work / f"{mode}.db"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    shutil.copyfile(base, db)
    return db


def add_webhooks(db: Path | str, receiver: int, count: int) -> list[int]:
    """``count`` enabled webhooks to the receiver, taking every event type; return their ids."""
    ids = []
    with connect(db) as conn, conn.write("integrations"):
        for n in range(count):
            config = {
                "provider": "webhook",
                "description": f"bench receiver {n}",
                "enabled": True,
                "events": list(EVENT_TYPES),
                "parameters": {"url": f"http://{lib.HOST}:{receiver}/hook/{n}"},
            }
            ids.append(store_integrations.insert(conn, config, created_at="2026-01-01T00:00:00.000Z"))
    return ids


def request(conn: http.client.HTTPConnection, method: str, path: str, token: str, body=None) -> int:
    headers = {"Authorization": token}
    data = None
    if body is not None:
        data = orjson.dumps(body)
        headers["Content-Type"] = "application/json"
    conn.request(method, path, body=data, headers=headers)
    response = conn.getresponse()
    response.read()
    return response.status


def pick_kind(port: int, token: str, kind: str) -> str:
    if kind != "auto":
        return kind
    conn = http.client.HTTPConnection(lib.HOST, port, timeout=30)
    try:
        conn.request("GET", "/docs/openapi.json")
        paths = orjson.loads(conn.getresponse().read())["paths"]
    finally:
        conn.close()
    return "flag" if "/api/admin/projects/{projectId}/features" in paths else "addon"


def disabled_config(port: int, token: str, receiver: int) -> int:
    """A disabled webhook configuration whose description the ``addon`` kind replaces."""
    conn = http.client.HTTPConnection(lib.HOST, port, timeout=30)
    try:
        body = lib.addon_body(receiver, "bench target")
        conn.request(
            "POST",
            "/api/admin/addons",
            body=orjson.dumps(body),
            headers={"Authorization": token, "Content-Type": "application/json"},
        )
        return orjson.loads(conn.getresponse().read())["id"]
    finally:
        conn.close()


# --- one mode -------------------------------------------------------------------------------


def burst(
    ports: list[int],
    token: str,
    kind: str,
    changes: int,
    clients: int,
    run: str,
    target: int,
    receiver: int,
    rate: float | None = None,
):
    """Send ``changes`` changes from ``clients`` threads, spread over the servers of ``ports``,
    each as soon as the last one's answer is in, or (``rate``) the n-th at n / ``rate`` seconds
    after the start; return (latencies s, statuses)."""
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    lock = threading.Lock()
    counter = iter(range(changes))
    begun = time.perf_counter()

    def client(port: int) -> None:
        conn = http.client.HTTPConnection(lib.HOST, port, timeout=60)
        try:
            while True:
                with lock:
                    n = next(counter, None)
                if n is None:
                    return
                if rate:
                    time.sleep(max(begun + n / rate - time.perf_counter(), 0))
                if kind == "flag":
                    method, path = "POST", "/api/admin/projects/default/features"
                    body = {"name": f"bench-{run}-{n}", "type": "release"}
                else:
                    method, path = "PUT", f"/api/admin/addons/{target}"
                    body = lib.addon_body(receiver, f"burst {run} change {n}")
                started = time.perf_counter()
                status = request(conn, method, path, token, body)
                elapsed = time.perf_counter() - started
                with lock:
                    latencies.append(elapsed)
                    statuses[status] = statuses.get(status, 0) + 1
        finally:
            conn.close()

    threads = [threading.Thread(target=client, args=(ports[n % len(ports)],)) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return latencies, statuses


def pager(port: int, token: str, integration: int, stop: threading.Event, found: dict) -> None:
    """Page the 4.1 log of ``integration`` until ``stop``; record latencies and bad pages."""
    conn = http.client.HTTPConnection(lib.HOST, port, timeout=60)
    rng = random.Random(8)
    try:
        while not stop.is_set():
            offset = rng.choice((0, 0, 50, 100, 500))
            started = time.perf_counter()
            conn.request(
                "GET",
                f"/api/admin/addons/{integration}/events?limit=50&offset={offset}",
                headers={"Authorization": token},
            )
            response = conn.getresponse()
            body = response.read()
            found["latencies"].append(time.perf_counter() - started)
            if response.status != 200:
                found["errors"] += 1
                continue
            ids = [int(e["id"]) for e in orjson.loads(body)["integrationEvents"]]
            if ids != sorted(set(ids), reverse=True):
                found["errors"] += 1
            found["pages"] += 1
            time.sleep(0.01)
    finally:
        conn.close()


def outbox(db: Path | str) -> dict:
    with connect(db) as conn:
        return conn.one(
            "SELECT sum(CASE WHEN state IN ('pending', 'in_flight') THEN 1 ELSE 0 END) AS unfinished,"
            " sum(CASE WHEN state = 'delivered' THEN 1 ELSE 0 END) AS delivered,"
            " sum(CASE WHEN state = 'failed' THEN 1 ELSE 0 END) AS failed,"
            " count(*) AS total, min(created_at) AS first,"
            " max(finished_at) AS last, (SELECT count(*) FROM integration_events"
            " WHERE integration_id IN (SELECT integration_id FROM integration_deliveries)) AS attempts"
            " FROM integration_deliveries"
        )


def run_mode(mode: str, args, work: Path, base: Path | str, token: str, receiver: int) -> dict:
    db = fresh_database(args, work, base, mode)
    webhooks = add_webhooks(db, receiver, args.integrations) if mode == "with" else []
    ports = [lib.free_port() for _ in range(args.processes)]
    with contextlib.ExitStack() as servers:
        for n, port in enumerate(ports):
            command = [
                *lib.flagadmin_command(db, port, args.threads),
                "--delivery-workers",
                str(args.delivery_workers),
            ]
            servers.enter_context(lib.Server(command, port, work / "servers.log", cpu=str(n % 2)))
        port = ports[0]
        kind = pick_kind(port, token, args.kind)
        target = disabled_config(port, token, receiver) if kind == "addon" else 0
        paging = {"latencies": [], "errors": 0, "pages": 0}
        stop = threading.Event()
        watched = webhooks[0] if webhooks else 1
        reader = threading.Thread(target=pager, args=(port, token, watched, stop, paging))
        reader.start()
        started_wall, started = time.time(), time.perf_counter()
        latencies, statuses = burst(
            ports, token, kind, args.changes, args.clients, mode, target, receiver, args.rate
        )
        burst_s = time.perf_counter() - started
        stop.set()
        reader.join()
        deadline = time.monotonic() + args.timeout
        state = during = outbox(db)
        while webhooks and (state["unfinished"] or 0) > 0 and time.monotonic() < deadline:
            time.sleep(0.2)
            state = outbox(db)
    result = {
        "mode": mode,
        "engine": "postgresql" if args.db else "sqlite",
        "processes": args.processes,
        "kind": kind,
        "event": EVENT_OF_KIND[kind],
        "changes": args.changes,
        "rate": args.rate,
        "statuses": statuses,
        "burst_s": round(burst_s, 2),
        "changes_per_s": round(args.changes / burst_s, 1),
        "latency_ms": lib.summary(latencies),
        "paging_ms": lib.summary(paging["latencies"]),
        "paging_pages": paging["pages"],
        "paging_errors": paging["errors"],
    }
    if webhooks:
        last = parse_rfc3339(state["last"]).timestamp() if state["last"] else started_wall
        result.update(
            {
                "deliveries": state["total"],
                "delivered": state["delivered"],
                "failed": state["failed"],
                "unfinished": state["unfinished"],
                "attempts": state["attempts"],
                "last_delivery_after_start_s": round(last - started_wall, 2),
                "last_delivery_after_burst_s": round(last - started_wall - burst_s, 2),
                "deliveries_per_s": round((state["delivered"] or 0) / max(last - started_wall, 1e-3), 1),
                "delivered_during_burst": during["delivered"] or 0,
                "delivered_during_burst_per_s": round((during["delivered"] or 0) / burst_s, 1),
                "needed_per_s": round(args.changes * len(webhooks) / burst_s, 1),
            }
        )
    return result


def report(results: list[dict]) -> str:
    without, with_ = results
    ratio = with_["latency_ms"]["p50"] / without["latency_ms"]["p50"]
    spell = "traffic" if with_["rate"] else "burst"  # the 1.2x target is a burst's
    lines = [
        f"Change: {with_['kind']} ({with_['event']}), {with_['changes']} changes per mode"
        + (f" at {with_['rate']:g} a second" if with_["rate"] else " in a burst")
        + f", on {with_['engine']} with {with_['processes']} flagadmin process(es).",
        "",
        "| mode | p50 ms | p95 ms | p99 ms | changes/s | 4.1 pages | 4.1 p50 ms | 4.1 p99 ms | page errors |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lat, pag = r["latency_ms"], r["paging_ms"]
        lines.append(
            f"| {r['mode']} | {lat['p50']} | {lat['p95']} | {lat['p99']} | {r['changes_per_s']} | "
            f"{r['paging_pages']} | {pag.get('p50', '-')} | {pag.get('p99', '-')} | {r['paging_errors']} |"
        )
    lines += [
        "",
        f"p50 with / without: **{ratio:.2f}x**" + ("" if with_["rate"] else " (target: within 1.2x)"),
        f"Deliveries: {with_['delivered']} delivered of {with_['deliveries']} ({with_['failed']} failed, "
        f"{with_['unfinished']} unfinished; {with_['attempts']} attempts recorded), "
        f"{with_['deliveries_per_s']} per second; the last one "
        f"{with_['last_delivery_after_start_s']} s after the {spell} began, "
        f"{with_['last_delivery_after_burst_s']} s after it ended.",
        f"During the {spell}: {with_['delivered_during_burst']} delivered, "
        f"{with_['delivered_during_burst_per_s']} per second, against {with_['needed_per_s']} per second "
        "made to deliver.",
    ]
    return "\n".join(lines)


def main(argv: list[str]) -> None:
    """Run the case (see the module's docstring); write ``<out>/deliveries.{json,md}``."""
    parser = argparse.ArgumentParser(
        prog="python -m bench deliveries",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--changes", type=int, default=10_000)
    parser.add_argument("--integrations", type=int, default=5)
    parser.add_argument("--kind", choices=("auto", "flag", "addon"), default="auto")
    parser.add_argument("--clients", type=int, default=4, help="concurrent writers")
    parser.add_argument(
        "--rate",
        type=float,
        help="steady traffic: changes per second in all (default: a burst, as fast as answered)",
    )
    parser.add_argument("--threads", type=int, default=8, help="waitress threads")
    parser.add_argument("--delivery-workers", type=int, default=4)
    parser.add_argument("--timeout", type=float, default=900, help="seconds to wait for the outbox to empty")
    parser.add_argument("--work", type=Path, default=lib.DATA / "deliveries")
    lib.add_common_options(parser, db=False, seconds=None)
    parser.add_argument(
        "--db",
        help="a postgresql:// URL: run on that server (databases <name>_template, _without, _with)",
    )
    parser.add_argument("--processes", type=int, default=1, help="flagadmin serve processes (1 or 2)")
    args = parser.parse_args(argv)
    if args.rate is not None and not args.rate > 0:
        parser.error("--rate takes a number of changes per second above 0")
    if args.quick:
        args.changes, args.rounds = min(args.changes, 300), 1
    tree = lib.measured_tree(args)
    args.work.mkdir(parents=True, exist_ok=True)
    if args.db is not None and not is_postgresql(args.db):
        parser.error("--db takes a postgresql:// URL (without it, the bench runs on SQLite files)")
    base, token = template(args.work, args.db)
    receiver_port = lib.free_port()
    receiver = subprocess.Popen(
        ["taskset", "-c", lib.WRK_CPU, *lib.receiver_command(receiver_port)],
    )
    os.environ["FLAGADMIN_INTEGRATIONS_ALLOWED_HOSTS"] = lib.HOST
    rounds: list[list[dict]] = []
    try:
        for _ in range(args.rounds):
            rounds.append(
                [run_mode(mode, args, args.work, base, token, receiver_port) for mode in ("without", "with")]
            )
    finally:
        receiver.terminate()
        receiver.wait(10)
    text = "\n\n".join(report(pair) for pair in rounds)
    if len(rounds) > 1:
        ratios = sorted(pair[1]["latency_ms"]["p50"] / pair[0]["latency_ms"]["p50"] for pair in rounds)
        text += f"\n\nMedian of the {len(rounds)} rounds' p50 ratios: **{statistics.median(ratios):.2f}x**"
    results = {**tree, "command": lib.command_line(), "machine": lib.machine(), "rounds": rounds}
    head = f"# deliveries\n\n`{results['command']}`\n\n{lib.machine_line(results['machine'])}\n\n"
    lib.write_results(args.out, "deliveries", results, head + text + "\n")
