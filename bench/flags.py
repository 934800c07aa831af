"""Flag writes (issue 10): create + archive throughput and latency through a real ``flagadmin
serve``, and the latency of 4.2 and 4.4 on the request right after a write (their caches and
ETags miss), against the same requests with nothing written in between.

Usage (from the repository root)::

    python bench/flags.py                                   # bench/data/bench.db, reference size
    python bench/flags.py --db /tmp/fb/bench.db --scale 0.01 --pairs 200 --rounds 10

The database is built with ``generate.py`` when missing (at ``--scale``), then copied to
``--work`` so that the writes never touch it. The server runs on core 0 (``taskset``), the
clients in this process. Phase 1: ``--clients`` threads, each on one keep-alive connection,
create a flag in one of ``heavy``'s projects as ``heavy`` (a Viewer with a role there) and
archive it, ``--pairs`` pairs in all. Phase 2: ``--rounds`` times, ``heavy`` creates a flag,
then 4.2 is fetched as ``heavy`` and 4.4 as the admin token (whole bodies, to the last byte);
then the same two reads with nothing written before them (4.2 from its cache, 4.4 a 304 to
``If-None-Match``). Prints a Markdown table and writes ``--out``/flags.json.
"""

from __future__ import annotations

import argparse
import http.client
import json
import shutil
import statistics
import sys
import threading
import time
import uuid
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import generate  # noqa: E402
from procs import HOST, Server, flagadmin_command, free_port  # noqa: E402

from flagadmin.store import connect, schema  # noqa: E402
from flagadmin.store import environments as store_environments  # noqa: E402
from flagadmin.timestamps import now_rfc3339  # noqa: E402

DASHBOARD = "/api/admin/personal-dashboard"
ARCHIVE = "/api/admin/archive/features"


def percentile(values: list[float], p: float) -> float:
    """The ``p``-th percentile (0-100) of ``values``, nearest rank, in milliseconds."""
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(p / 100 * len(ordered) + 0.5) - 1))
    return round(ordered[index] * 1000, 2)


def summary(values: list[float]) -> dict[str, float]:
    """``{"n", "p50", "p95", "p99", "mean"}`` of latencies in seconds, as milliseconds."""
    return {
        "n": len(values),
        "p50": percentile(values, 50),
        "p95": percentile(values, 95),
        "p99": percentile(values, 99),
        "mean": round(statistics.fmean(values) * 1000, 2),
    }


class Client:
    """One keep-alive connection to the server."""

    def __init__(self, port: int, token: str) -> None:
        self.conn = http.client.HTTPConnection(HOST, port, timeout=300)
        self.token = token

    def send(self, method: str, path: str, body: dict | None = None, headers: dict | None = None):
        """Send one request; return (status, headers, body bytes, seconds to the last byte)."""
        sent = {"Authorization": self.token, **(headers or {})}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            sent["Content-Type"] = "application/json"
        start = time.perf_counter()
        self.conn.request(method, path, body=data, headers=sent)
        response = self.conn.getresponse()
        payload = response.read()
        return (
            response.status,
            {k.lower(): v for k, v in response.getheaders()},
            payload,
            time.perf_counter() - start,
        )

    def close(self) -> None:
        self.conn.close()


def prepare(args) -> tuple[Path, dict, str]:
    """Build the database if missing, copy it to ``--work``, and give the copy the install's
    environments (``generate.py`` writes flags' environments, not the install's list).
    Returns the copy, the tokens and counts, and a project of ``heavy``."""
    if not args.db.exists():
        args.db.parent.mkdir(parents=True, exist_ok=True)
        meta = generate.build(args.db, args.scale, 42)
        generate.meta_path(args.db).write_text(json.dumps(meta, indent=2) + "\n")
    meta = json.loads(generate.meta_path(args.db).read_text())
    schema.ensure_schema(args.db)
    with connect(args.db) as conn:
        conn.pragma("wal_checkpoint(TRUNCATE)")
    args.work.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(args.db, args.work)
    with connect(args.work) as conn:
        with conn.write():
            names = list(conn.values("SELECT DISTINCT name FROM feature_environments ORDER BY name"))
            store_environments.insert_missing(conn, names, now_rfc3339())
        project = conn.value(
            "SELECT project_id FROM project_members WHERE user_id = ? ORDER BY project_id LIMIT 1",
            [meta["heavy_user_id"]],
        )
    return args.work, meta, project


def create_archive(port: int, token: str, project: str, pairs: int, clients: int) -> dict:
    """Phase 1: ``pairs`` create + archive pairs from ``clients`` threads."""
    creates: list[float] = []
    archives: list[float] = []
    failures: list[str] = []
    lock = threading.Lock()
    per_client = [pairs // clients + (1 if i < pairs % clients else 0) for i in range(clients)]

    def run(count: int) -> None:
        client = Client(port, token)
        mine_c, mine_a = [], []
        try:
            for _ in range(count):
                name = f"bench-{uuid.uuid4().hex[:16]}"
                status, _, body, took = client.send(
                    "POST", f"/api/admin/projects/{project}/features", {"name": name, "type": "release"}
                )
                if status != 201:
                    failures.append(f"create {status} {body[:200]!r}")
                    continue
                mine_c.append(took)
                status, _, body, took = client.send(
                    "DELETE", f"/api/admin/projects/{project}/features/{name}"
                )
                if status != 202:
                    failures.append(f"archive {status} {body[:200]!r}")
                    continue
                mine_a.append(took)
        finally:
            client.close()
            with lock:
                creates.extend(mine_c)
                archives.extend(mine_a)

    threads = [threading.Thread(target=run, args=(n,)) for n in per_client]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - start
    return {
        "pairs": len(archives),
        "clients": clients,
        "seconds": round(elapsed, 2),
        "pairs_per_second": round(len(archives) / elapsed, 1),
        "requests_per_second": round((len(creates) + len(archives)) / elapsed, 1),
        "create_ms": summary(creates) if creates else None,
        "archive_ms": summary(archives) if archives else None,
        "failures": failures[:5],
        "failure_count": len(failures),
    }


def reads_after_write(port: int, meta: dict, project: str, rounds: int) -> dict:
    """Phase 2: 4.2 and 4.4 right after a write (cache miss), and with nothing written."""
    heavy = Client(port, meta["heavy_token"])
    admin = Client(port, meta["admin_token"])
    after = {"4.2": [], "4.4": []}
    unchanged = {"4.2": [], "4.4 (304)": []}
    sizes = {}
    try:
        for _ in range(rounds):
            name = f"bench-{uuid.uuid4().hex[:16]}"
            status, *_ = heavy.send("POST", f"/api/admin/projects/{project}/features", {"name": name})
            assert status == 201, status
            status, _, body, took = heavy.send("GET", DASHBOARD)
            assert status == 200, status
            after["4.2"].append(took)
            sizes["4.2"] = len(body)
            status, headers, body, took = admin.send("GET", ARCHIVE)
            assert status == 200, status
            after["4.4"].append(took)
            sizes["4.4"] = len(body)
            status, _, _, took = heavy.send("GET", DASHBOARD)
            assert status == 200, status
            unchanged["4.2"].append(took)
            status, _, _, took = admin.send("GET", ARCHIVE, headers={"If-None-Match": headers["etag"]})
            assert status == 304, status
            unchanged["4.4 (304)"].append(took)
    finally:
        heavy.close()
        admin.close()
    return {
        "rounds": rounds,
        "after_write_ms": {key: summary(values) for key, values in after.items()},
        "nothing_written_ms": {key: summary(values) for key, values in unchanged.items()},
        "bytes": sizes,
    }


def _row(label: str, figures: dict) -> str:
    return f"| {label} | {figures['n']} | {figures['p50']} | {figures['p95']} | {figures['p99']} |"


def report(result: dict) -> str:
    """The results as a Markdown table."""
    phase1, phase2 = result["create_archive"], result["reads_after_write"]
    lines = [
        f"flag writes on {result['flags']:,} flags (scale {result['scale']}), {phase1['clients']} clients, "
        f"server {result['threads']} threads on core 0",
        "",
        "| measure | n | p50 ms | p95 ms | p99 ms |",
        "|---|---|---|---|---|",
    ]
    for label, figures in (
        ("create (POST, 201)", phase1["create_ms"]),
        ("archive (DELETE, 202)", phase1["archive_ms"]),
    ):
        if figures:
            lines.append(
                f"| {label} | {figures['n']} | {figures['p50']} | {figures['p95']} | {figures['p99']} |"
            )
    for key, figures in phase2["after_write_ms"].items():
        lines.append(_row(f"{key} right after a write", figures))
    for key, figures in phase2["nothing_written_ms"].items():
        lines.append(_row(f"{key}, nothing written", figures))
    lines += [
        "",
        f"create + archive: {phase1['pairs_per_second']} pairs/s "
        f"({phase1['requests_per_second']} requests/s), "
        f"{phase1['pairs']} pairs in {phase1['seconds']} s, {phase1['failure_count']} failures",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """Command line: see the module's docstring."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, default=BENCH / "data" / "bench.db")
    parser.add_argument("--scale", type=float, default=1.0, help="size to build when --db is missing")
    parser.add_argument("--work", type=Path, default=Path("/tmp/flagadmin-bench-flags/work.db"))
    parser.add_argument("--out", type=Path, default=BENCH / "out")
    parser.add_argument("--pairs", type=int, default=2000, help="create + archive pairs in phase 1")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=30, help="write-then-read rounds in phase 2")
    parser.add_argument("--threads", type=int, default=8, help="server threads")
    args = parser.parse_args(argv)

    work, meta, project = prepare(args)
    port = free_port()
    args.out.mkdir(parents=True, exist_ok=True)
    with Server(flagadmin_command(work, port, args.threads), port, args.out / "flags-server.log"):
        # warm-up: a few requests so that connections and caches exist, as for a running server
        warm = Client(port, meta["heavy_token"])
        for path in (DASHBOARD, f"/api/admin/projects/{project}/features"):
            warm.send("GET", path)
        warm.close()
        phase1 = create_archive(port, meta["heavy_token"], project, args.pairs, args.clients)
        phase2 = reads_after_write(port, meta, project, args.rounds)
    result = {
        "scale": meta["scale"],
        "flags": meta["flags"],
        "threads": args.threads,
        "create_archive": phase1,
        "reads_after_write": phase2,
        "command": " ".join(sys.argv),
        "date": now_rfc3339(),
    }
    (args.out / "flags.json").write_text(json.dumps(result, indent=2) + "\n")
    print(report(result))


if __name__ == "__main__":
    main()
