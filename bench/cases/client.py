"""client: ``GET /api/client/features`` under load, against a bare route serving the same bytes.

    python -m bench client [--rounds 3] [--seconds 10] [--connections 8] [--flags 1000] [--quick]

What it measures, on a database made for the run (the demo data and ``--flags`` live flags of
realistic rules in ``development``, a client token of every project in ``development``):

- the full answer (about 440 KB at 1,000 flags), asked as the Python SDK asks it
  (``Unleash-Client-Spec: 5.2.0``, no ``Accept-Encoding``);
- the same with ``Accept-Encoding: gzip`` (both SDKs send it);
- the same with ``If-None-Match`` naming the answer's ETag: a 304;
- the ceilings, measured in the same run: a Flask route and a bare WSGI callable (through
  ``flagadmin.serving.serve``, flagadmin's waitress set-up, same threads, same core) serving
  the same bytes, the same gzip bytes and the same 304 (ETag, no body). The report gives
  flagadmin's req/s as a ratio to the Flask ceiling's (the line: 0.7 each) and the server CPU
  per request of each.

The rules: every flag has a ``flexibleRollout`` (rollout 0 to 100 %); a third have one to three
constraints (``IN`` lists, ``STR_STARTS_WITH``, ``NUM_GT``, ``SEMVER_GTE``, ``DATE_AFTER``), one
in eight uses one or two of 20 segments, one in six has two or three strategy variants, one in
ten has a second strategy (``userWithId``), one in ten has flag variants; 70 % are switched on.
Written through the admin API, in process, before the servers start (``bench.lib.rules_database``).

Protocol: every measurement on a freshly started server pinned to core 0 (``taskset``), wrk
``-t1`` pinned to core 1, a few warm-up requests, then ``--seconds`` of load; each round runs
the nine targets in turn; figures are medians over ``--rounds``. The tree measured is a
snapshot (``--tree``). Results: ``<out>/client.{json,md}``; the database, bodies, wrk script
and logs in ``<out>/client/``.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from bench import lib

#: The line each ratio is held to (the issue's figures).
LINE = 0.7

FEATURES = "/api/client/features"
SPEC = "5.2.0"

#: A wrk script adding the SDK's headers, from the environment: BENCH_SPEC, BENCH_GZIP ("1":
#: Accept-Encoding: gzip), BENCH_ETAG (If-None-Match), on top of the suite's own script.
SCRIPT = """dofile({wrk_lua!r})
wrk.headers["Unleash-Client-Spec"] = os.getenv("BENCH_SPEC")
if os.getenv("BENCH_GZIP") == "1" then
  wrk.headers["Accept-Encoding"] = "gzip"
end
local etag = os.getenv("BENCH_ETAG")
if etag and etag ~= "" then
  wrk.headers["If-None-Match"] = etag
end
"""

#: The three kinds of request: name -> (gzip, conditional).
KINDS = {"full": (False, False), "gzip": (True, False), "304": (False, True)}


class Run:
    """What every measurement shares: the database, the answers fetched once, the ceilings'
    indexes and the wrk script."""

    def __init__(self, args: argparse.Namespace, work: Path, state: dict, wrk: str) -> None:
        self.args = args
        self.work = work
        self.state = state
        self.wrk = wrk
        self.script = work / "client.lua"
        self.script.write_text(SCRIPT.format(wrk_lua=str(lib.LUA / "wrk.lua")))
        self.server_log = work / "servers.log"
        self.wrk_log = work / "wrk.log"
        self.answers = self.fetch_answers()
        self.indexes = {kind: self.ceiling_index(kind) for kind in KINDS}

    def server(self, target: str, kind: str) -> lib.Server:
        port = lib.free_port()
        if target == "flagadmin":
            command = lib.flagadmin_command(self.state["db"], port, self.args.threads)
        else:
            command = lib.ceiling_command(target, port, self.args.threads, index=self.indexes[kind])
        return lib.Server(command, port, self.server_log)

    def headers(self, kind: str) -> dict[str, str]:
        gzip, conditional = KINDS[kind]
        sent = {"Unleash-Client-Spec": SPEC}
        if gzip:
            sent["Accept-Encoding"] = "gzip"
        if conditional:
            sent["If-None-Match"] = self.answers["etag"]
        return sent

    def fetch_answers(self) -> dict:
        """flagadmin's answers, once: the bytes, the gzip bytes, the ETag (checked: 200, 200
        gzipped, 304)."""
        with self.server("flagadmin", "full") as server:
            client = lib.Client(server.port, self.state["client_token"])
            try:
                status, headers, body, _ = client.send("GET", FEATURES, headers={"Unleash-Client-Spec": SPEC})
                zipped = client.send(
                    "GET", FEATURES, headers={"Unleash-Client-Spec": SPEC, "Accept-Encoding": "gzip"}
                )
                etag = headers["etag"]
                again = client.send(
                    "GET", FEATURES, headers={"Unleash-Client-Spec": SPEC, "If-None-Match": etag}
                )
            finally:
                client.close()
        if (
            status != 200
            or zipped[0] != 200
            or zipped[1].get("content-encoding") != "gzip"
            or again[0] != 304
        ):
            raise RuntimeError(f"flagadmin answered {status}, {zipped[0]} gzipped, {again[0]} conditionally")
        (self.work / "answer.json").write_bytes(body)
        (self.work / "answer.json.gz").write_bytes(zipped[2])
        (self.work / "empty").write_bytes(b"")
        return {
            "bytes": len(body),
            "gzip_bytes": len(zipped[2]),
            "etag": etag,
            "gzip_etag": zipped[1]["etag"],
            "flags": len(json.loads(body)["features"]),
        }

    def ceiling_index(self, kind: str) -> Path:
        """The ceilings' answer to each kind: the same bytes, the same gzip bytes, or the 304."""
        if kind == "full":
            status, headers, body, gzip = 200, [["Content-Type", "application/json"]], "answer.json", False
        elif kind == "gzip":
            status, body, gzip = 200, "answer.json.gz", True
            headers = [["Content-Type", "application/json"], ["Content-Encoding", "gzip"]]
        else:
            status, headers, body, gzip = 304, [["ETag", self.answers["etag"]]], "empty", False
        entry = {"method": "GET", "path": FEATURES, "query": None, "auth": None, "gzip": gzip,
                 "status": status, "headers": headers, "body": body}  # fmt: skip
        index = self.work / f"ceiling-{kind}.json"
        index.write_text(json.dumps([entry]))
        return index

    def measure(self, target: str, kind: str) -> dict:
        """A fresh ``target`` server under wrk asking for ``kind``; its figures."""
        token = self.state["client_token"]
        expected = 304 if kind == "304" else 200
        with self.server(target, kind) as server:
            client = lib.Client(server.port, token)
            try:
                for _ in range(5):
                    status = client.send("GET", FEATURES, headers=self.headers(kind))[0]
                    if status != expected:
                        raise RuntimeError(f"{target}: {kind} answered {status} while warming up")
            finally:
                client.close()
            cpu_before = server.cpu_seconds()
            gzip, conditional = KINDS[kind]
            figures = lib.run_wrk(
                self.wrk,
                server.port,
                [FEATURES],
                auth=token,
                duration=self.args.duration,
                connections=self.args.connections,
                timeout=10,
                log=self.wrk_log,
                script=self.script,
                env={
                    "BENCH_SPEC": SPEC,
                    "BENCH_GZIP": "1" if gzip else "0",
                    "BENCH_ETAG": self.answers["etag"] if conditional else "",
                },
            )
            cpu = server.cpu_seconds() - cpu_before
        figures["cpu_us_per_request"] = cpu / max(figures["requests"], 1) * 1e6
        return figures


def main(argv: list[str]) -> None:
    """Run the case (see the module's docstring)."""
    p = argparse.ArgumentParser(prog="python -m bench client", description=__doc__.splitlines()[0])
    lib.add_common_options(p, db=False)
    p.add_argument("--threads", type=int, default=8, help="server threads (default 8)")
    p.add_argument("--connections", type=int, default=8, help="wrk connections (default 8)")
    p.add_argument(
        "--flags", type=int, default=1000, help="live flags in the token's environment (default 1000)"
    )
    args = p.parse_args(argv)
    if args.quick:
        args.rounds, args.duration, args.flags = 1, 3, min(args.flags, 200)
    tree = lib.measured_tree(args)
    machine = lib.machine()
    wrk = lib.ensure_wrk()
    machine["wrk"] = lib.wrk_version(wrk)
    work = args.out / "client"
    print(f"writing {args.flags} flags through the admin API ...", flush=True)
    run = Run(args, work, lib.rules_database(work, args.flags), wrk)
    a = run.answers
    print(f"answer: {a['flags']} flags, {a['bytes']:,} bytes, gzip {a['gzip_bytes']:,}", flush=True)
    targets = [(kind, target) for kind in KINDS for target in ("flagadmin", "flask", "wsgi")]
    rounds: dict[str, list[dict]] = {f"{kind}: {target}": [] for kind, target in targets}
    for r in range(1, args.rounds + 1):
        for kind, target in targets:
            figures = run.measure(target, kind)
            rounds[f"{kind}: {target}"].append(figures)
            print(
                f"round {r}: {kind + ': ' + target:16} {figures['rps']:8,.0f} req/s,"
                f" p50 {figures['p50_us'] / 1000:.2f} ms, {figures['cpu_us_per_request']:6.0f} µs CPU/req,"
                f" {figures['errors']} errors",
                flush=True,
            )
    medians = {
        name: {
            key: statistics.median(f[key] for f in figures)
            for key in ("rps", "p50_us", "p99_us", "cpu_us_per_request", "errors")
        }
        for name, figures in rounds.items()
    }
    ratios = {kind: medians[f"{kind}: flagadmin"]["rps"] / medians[f"{kind}: flask"]["rps"] for kind in KINDS}
    results = {
        **tree,
        "tree_digest_end": lib.code_digest(Path(tree["tree"])),
        "command": lib.command_line(),
        "machine": machine,
        "options": {k: str(v) for k, v in vars(args).items()},
        "answers": run.answers,
        "rounds": rounds,
        "medians": medians,
        "ratios": ratios,
        "line": LINE,
    }
    rows = [
        [
            name,
            f"{m['rps']:,.0f}",
            f"{m['p50_us'] / 1000:.2f}",
            f"{m['p99_us'] / 1000:.2f}",
            f"{m['cpu_us_per_request']:,.0f}",
            f"{m['errors']:.0f}",
        ]
        for name, m in medians.items()
    ]
    lines = [
        "# client",
        "",
        f"`{results['command']}`",
        "",
        f"- Machine: {lib.machine_line(machine)}",
        lib.code_line(results),
        f"- {args.rounds} rounds of {args.duration} s, {args.connections} connections, {args.threads} server"
        f" threads; medians over rounds",
        f"- The answer: {a['flags']} flags, {a['bytes']:,} bytes, gzip {a['gzip_bytes']:,} bytes,"
        f" ETag {a['etag']}",
        "",
        *lib.markdown_table(["target", "req/s", "p50 ms", "p99 ms", "server CPU µs/req", "errors"], rows),
        "",
        *[
            f"- {kind}: {ratio:.2f} of the Flask route serving the same"
            f" {'bytes' if kind == 'full' else 'gzip bytes' if kind == 'gzip' else '304'}"
            f" (line {LINE}: {'met' if ratio >= LINE else 'NOT met'})"
            for kind, ratio in ratios.items()
        ],
        "",
    ]
    lib.write_results(args.out, "client", results, "\n".join(lines))
