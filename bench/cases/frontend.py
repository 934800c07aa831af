"""frontend: ``/api/frontend`` under load, against bare routes answering the same in the same run.

    python -m bench frontend [--rounds 3] [--seconds 10] [--connections 8] [--flags 1000] [--quick]

On a database made for the run by ``bench.lib.rules_database``, as the Client API case's (the
demo data and ``--flags`` flags of realistic rules in ``development``, 70 % switched on: both
cases measure the same state) with a frontend token of every project in ``development``:

- **same**: one context repeated (a browser polling), ``GET /api/frontend?<context>``: the
  answer kept, its bytes sent; against a Flask route and a bare WSGI callable serving the same
  bytes (the line: 0.7 of the Flask route);
- **304**: the same with ``If-None-Match`` naming its ETag; against the same 304 (line 0.7);
- **new**: a new context per request (``userId`` and ``sessionId`` counted up, properties
  drawn): every flag switched on evaluated by the engine; against a bare Flask route that
  makes the same engine calls through the engine's public API (``UnleashEngine.check_variant``
  per flag switched on, fed the same state) for the same context and returns their answer
  (line 0.6). The route's answer is checked to be flagadmin's, byte for byte, for a sample
  context before the run;
- **ofrep**: OFREP's single-flag evaluation, ``POST /ofrep/v1/evaluate/flags/{key}`` of a flag
  on for the repeated context, that context in the body (``targetingKey`` and its properties):
  one engine call a request, nothing kept between them; against a Flask route and a bare WSGI
  callable answering the same bytes (line 0.5).

And, in this process pinned to the server's core, the engine's own cost: CPU per
``check_variant`` call (the floor of "new", per flag and per request), and the three ways
threads may share an engine (8 threads on one core: one engine without a lock, one engine
with a lock around each call, an engine per thread): their answers against one thread's, and
their CPU and wall time.

Protocol: every measurement on a freshly started server pinned to core 0 (``taskset``), wrk
``-t1`` pinned to core 1, a few warm-up requests, then ``--seconds`` of load; each round runs
the targets in turn; figures are medians over ``--rounds``. The tree measured is a snapshot
(``--tree``). Results: ``<out>/frontend.{json,md}``; the database, bodies, scripts and logs in
``<out>/frontend/``. The reference server's rate on the same state is not measured here (no
reference server runs on this machine).

About 550 lines, past the 400 a module should stay under, because it holds its two ceilings'
code (the engine route is served by this module itself, ``--serve-engine-ceiling``, so that it
runs the code measured) and the in-process engine figures beside the HTTP protocol: about 90,
100 and 300 lines.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import threading
import time
from pathlib import Path

from bench import lib

#: The lines the ratios are held to.
LINES = {"same": 0.7, "304": 0.7, "new": 0.6, "ofrep": 0.5}

FRONTEND = "/api/frontend"
OFREP = "/ofrep/v1/evaluate/flags/"

#: The context repeated by "same" and "304" (what the browser SDK sends, its own sessionId).
SAME_QUERY = (
    "appName=shop-web&environment=default&sessionId=812733491&userId=user-17"
    "&properties%5Bcountry%5D=NO&properties%5Bplan%5D=pro&properties%5Bseats%5D=42"
    "&properties%5BappVersion%5D=3.2.1&properties%5Bemail%5D=ann%40example.com"
)

#: A wrk script adding If-None-Match from BENCH_ETAG to the suite's own script.
CONDITIONAL_SCRIPT = """dofile({wrk_lua!r})
local etag = os.getenv("BENCH_ETAG")
if etag and etag ~= "" then
  wrk.headers["If-None-Match"] = etag
end
"""

#: The repeated context as OFREP's providers send it (the same user as SAME_QUERY).
OFREP_BODY = {
    "context": {
        "targetingKey": "user-17",
        "appName": "shop-web",
        "sessionId": "812733491",
        "country": "NO",
        "plan": "pro",
        "seats": "42",
        "appVersion": "3.2.1",
        "email": "ann@example.com",
    }
}

#: A wrk script posting BENCH_BODY as JSON, on top of the suite's own script.
OFREP_SCRIPT = """dofile({wrk_lua!r})
wrk.body = os.getenv("BENCH_BODY")
wrk.headers["Content-Type"] = "application/json"
"""

#: A wrk script asking for a new context each request: userId and sessionId counted up from
#: BENCH_START, properties drawn from the count.
NEW_CONTEXT_SCRIPT = """dofile({wrk_lua!r})
local countries = {{"NO", "SE", "DK", "FI", "DE", "FR", "NL", "US", "GB", "PL"}}
local plans = {{"free", "pro", "pro-yearly", "enterprise"}}
local n = tonumber(os.getenv("BENCH_START") or "1")
request = function()
  n = n + 1
  local path = string.format(
    "/api/frontend?appName=shop-web&environment=default&sessionId=%d&userId=user-%d"
    .. "&properties%%5Bcountry%%5D=%s&properties%%5Bplan%%5D=%s&properties%%5Bseats%%5D=%d"
    .. "&properties%%5BappVersion%%5D=%d.%d.0&properties%%5Bemail%%5D=u%d%%40example.com",
    n, n, countries[n % #countries + 1], plans[n % #plans + 1], n % 500, n % 9 + 1, n % 20, n)
  return wrk.format("GET", path)
end
"""

#: The kinds of measurement: name -> the targets measured for it.
TARGETS = {
    "same": ("flagadmin", "flask", "wsgi"),
    "304": ("flagadmin", "flask", "wsgi"),
    "new": ("flagadmin", "engine"),
    "ofrep": ("flagadmin", "flask", "wsgi"),
}


# --- the engine ceiling: a bare Flask route making the same engine calls ----------------------


def engine_answer(engine, names: list[str], impression: dict[str, bool], context: dict) -> bytes:
    """The Frontend API's answer for ``context`` made by the engine's public API alone: one
    ``check_variant`` per flag switched on, the flags found on, in the order given."""
    import orjson

    toggles = []
    for name in names:
        found = engine.check_variant(name, context).variant
        if not found.feature_enabled:
            continue
        variant = {"name": found.name, "enabled": found.enabled}
        if found.payload is not None:
            variant["payload"] = found.payload
        variant["feature_enabled"] = True
        variant["featureEnabled"] = True
        toggles.append(
            {"name": name, "enabled": True, "variant": variant, "impressionData": impression[name]}
        )
    return orjson.dumps({"toggles": toggles})


def load_engine(state_file: Path):
    """An engine fed the state in ``state_file`` (a ``/api/client/features`` body), the names of
    the flags switched on (by name) and each flag's impressionData."""
    from yggdrasil_engine.engine import UnleashEngine

    text = state_file.read_text()
    body = json.loads(text)
    engine = UnleashEngine()
    engine.take_state(text)
    features = sorted(body["features"], key=lambda f: f["name"])
    names = [f["name"] for f in features if f["enabled"]]
    return engine, names, {f["name"]: bool(f.get("impressionData")) for f in features}


def serve_engine_ceiling(argv: list[str]) -> None:
    """``python -m bench frontend --serve-engine-ceiling STATE PORT THREADS``: a Flask app whose
    one route reads the context from the query (the top-level fields, ``properties[name]``, a
    missing remoteAddress the caller's) and answers :func:`engine_answer`, served through
    ``flagadmin.serving.serve`` (flagadmin's waitress set-up)."""
    from flask import Flask, Response, request

    from flagadmin.serving import serve

    state_file, port, threads = Path(argv[0]), int(argv[1]), int(argv[2])
    engine, names, impression = load_engine(state_file)
    app = Flask(__name__)
    top = ("appName", "environment", "userId", "sessionId", "remoteAddress", "currentTime")

    @app.route(FRONTEND)
    def answer() -> Response:
        args = request.args
        context = {key: args[key] for key in top if key in args}
        context.setdefault("remoteAddress", request.remote_addr)
        context["properties"] = {k[11:-1]: v for k, v in args.items() if k.startswith("properties[")}
        return Response(engine_answer(engine, names, impression, context), mimetype="application/json")

    serve(app, host=lib.HOST, port=port, threads=threads)


# --- in process: the engine's cost, and threads sharing it ---------------------------------------


def contexts(count: int, start: int = 1) -> list[dict]:
    """``count`` distinct contexts as the engine reads them (as "new" sends them)."""
    countries = ["NO", "SE", "DK", "FI", "DE", "FR", "NL", "US", "GB", "PL"]
    plans = ["free", "pro", "pro-yearly", "enterprise"]
    return [
        {
            "appName": "shop-web",
            "environment": "default",
            "sessionId": str(n),
            "userId": f"user-{n}",
            "remoteAddress": "127.0.0.1",
            "properties": {
                "country": countries[n % 10],
                "plan": plans[n % 4],
                "seats": str(n % 500),
                "appVersion": f"{n % 9 + 1}.{n % 20}.0",
                "email": f"u{n}@example.com",
            },
        }
        for n in range(start, start + count)
    ]


class _Locked:
    """An engine whose every call holds one lock."""

    def __init__(self, engine) -> None:
        self.engine, self.lock = engine, threading.Lock()

    def check_variant(self, name: str, context: dict):
        with self.lock:
            return self.engine.check_variant(name, context)


def _share(k: int, shared, job: dict, start: threading.Barrier, wrong: list[int]) -> None:
    """One thread of :func:`engine_figures`: ``job["count"]`` evaluations through ``shared``
    (None: an engine of its own, fed before the start), each compared with one thread's
    answer (a difference noted in ``wrong``)."""
    own = shared if shared is not None else load_engine(job["state_file"])[0]
    sample, expected = job["sample"], job["expected"]
    start.wait()
    for i in range(job["count"]):
        index = (k + i) % len(sample)
        if engine_answer(own, job["names"], job["impression"], sample[index]) != expected[index]:
            wrong.append(index)


def engine_figures(state_file: Path, threads: int, quick: bool) -> dict:
    """The engine's CPU per ``check_variant`` call, one thread; then ``threads`` threads on one
    core evaluating the same contexts three ways (see the module), each checked against one
    thread's answers. Runs pinned to the server's core."""
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {int(lib.SERVER_CPU)})
    try:
        engine, names, impression = load_engine(state_file)
        sample = contexts(4 if quick else 20)
        cpu = time.process_time()
        expected = [engine_answer(engine, names, impression, c) for c in sample]
        per_call_us = (time.process_time() - cpu) / (len(sample) * len(names)) * 1e6
        sharing = {}
        job = {"state_file": state_file, "sample": sample, "expected": expected,
               "count": 2 if quick else 6, "names": names, "impression": impression}  # fmt: skip
        modes = {
            "shared, no lock": engine,
            "shared, a lock per call": _Locked(engine),
            "one engine per thread": None,
        }
        for mode, shared in modes.items():
            wrong: list[int] = []
            start = threading.Barrier(threads + 1)
            workers = [
                threading.Thread(target=_share, args=(k, shared, job, start, wrong)) for k in range(threads)
            ]
            for worker in workers:
                worker.start()
            start.wait()
            wall, cpu = time.perf_counter(), time.process_time()
            for worker in workers:
                worker.join()
            evaluations = threads * job["count"]
            sharing[mode] = {
                "wrong_answers": len(wrong),
                "evaluations": evaluations,
                "cpu_ms_per_evaluation": (time.process_time() - cpu) / evaluations * 1e3,
                "wall_ms_per_evaluation": (time.perf_counter() - wall) / evaluations * 1e3,
            }
        return {
            "flags_switched_on": len(names),
            "cpu_us_per_check_variant": per_call_us,
            "cpu_ms_per_request": per_call_us * len(names) / 1e3,
            "sharing": sharing,
        }
    finally:
        os.sched_setaffinity(0, before)


# --- over HTTP ------------------------------------------------------------------------------------


class Run:
    """What every measurement shares: the database and token, the state, the answers fetched
    once, the ceilings' indexes and the wrk scripts."""

    def __init__(self, args: argparse.Namespace, work: Path, db: str, token: str, wrk: str) -> None:
        self.args, self.work, self.db, self.token, self.wrk = args, work, db, token, wrk
        self.server_log = work / "servers.log"
        self.wrk_log = work / "wrk.log"
        wrk_lua = str(lib.LUA / "wrk.lua")
        self.conditional_script = work / "conditional.lua"
        self.conditional_script.write_text(CONDITIONAL_SCRIPT.format(wrk_lua=wrk_lua))
        self.new_script = work / "new-context.lua"
        self.new_script.write_text(NEW_CONTEXT_SCRIPT.format(wrk_lua=wrk_lua))
        self.ofrep_script = work / "ofrep.lua"
        self.ofrep_script.write_text(OFREP_SCRIPT.format(wrk_lua=wrk_lua))
        self.state_file = work / "state.json"
        self.answers = self.fetch_answers()
        self.indexes = {kind: self.ceiling_index(kind) for kind in ("same", "304", "ofrep")}
        self.requests_sent = 0

    def server(self, target: str, kind: str) -> lib.Server:
        port = lib.free_port()
        if target == "flagadmin":
            command = lib.flagadmin_command(self.db, port, self.args.threads)
        elif target == "engine":
            command = [
                *lib.bench_command("frontend"),
                "--serve-engine-ceiling",
                str(self.state_file),
                str(port),
                str(self.args.threads),
            ]
        else:
            command = lib.ceiling_command(target, port, self.args.threads, index=self.indexes[kind])
        return lib.Server(command, port, self.server_log)

    def fetch_answers(self) -> dict:
        """flagadmin's answers, once: the state its engine is fed (from the Client API's
        function), the repeated context's bytes and ETag (checked: 200, then 304), and a new
        context's bytes, checked against the engine ceiling's."""
        from flagadmin.clients.features import client_state
        from flagadmin.store import connect

        with connect(self.db) as conn:
            self.state_file.write_bytes(client_state(conn, "development", None).payload)
        path = f"{FRONTEND}?{SAME_QUERY}"
        with self.server("flagadmin", "same") as server:
            client = lib.Client(server.port, self.token)
            try:
                status, headers, body, _ = client.send("GET", path)
                again = client.send("GET", path, headers={"If-None-Match": headers.get("etag", "")})
                sample = contexts(1, start=10**9)[0]
                query = "&".join(
                    [f"{k}={v}" for k, v in sample.items() if k not in ("properties", "remoteAddress")]
                    + [
                        f"properties%5B{k}%5D={v.replace('@', '%40')}"
                        for k, v in sample["properties"].items()
                    ]
                )
                fresh = client.send("GET", f"{FRONTEND}?{query}")
                key = json.loads(body)["toggles"][0]["name"] if status == 200 else ""
                ofrep = client.send("POST", OFREP + key, body=OFREP_BODY)
            finally:
                client.close()
        if status != 200 or again[0] != 304 or fresh[0] != 200 or ofrep[0] != 200:
            raise RuntimeError(
                f"flagadmin answered {status}, then {again[0]} conditionally,"
                f" {fresh[0]} new, {ofrep[0]} OFREP"
            )
        if json.loads(ofrep[2]).get("value") is not True:
            raise RuntimeError(f"OFREP: {key} is not on for the repeated context: {ofrep[2][:200]!r}")
        engine, names, impression = load_engine(self.state_file)
        if engine_answer(engine, names, impression, sample) != fresh[2]:
            raise RuntimeError("the engine ceiling's answer is not flagadmin's for the same context")
        (self.work / "answer.json").write_bytes(body)
        (self.work / "ofrep.json").write_bytes(ofrep[2])
        (self.work / "empty").write_bytes(b"")
        return {
            "bytes": len(body),
            "toggles": len(json.loads(body)["toggles"]),
            "etag": headers["etag"],
            "ofrep_key": key,
            "ofrep_bytes": len(ofrep[2]),
            "new_context_bytes": len(fresh[2]),
            "flags": len(json.loads(self.state_file.read_text())["features"]),
            "switched_on": len(names),
        }

    def ceiling_index(self, kind: str) -> Path:
        """The ceilings' answer to the repeated context: its bytes, or its 304."""
        method, path = "GET", FRONTEND
        if kind == "same":
            status, headers, body = 200, [["Content-Type", "application/json"]], "answer.json"
        elif kind == "ofrep":
            method, path = "POST", OFREP + self.answers["ofrep_key"]
            status, headers, body = 200, [["Content-Type", "application/json"]], "ofrep.json"
        else:
            status, headers, body = 304, [["ETag", self.answers["etag"]]], "empty"
        entry = {"method": method, "path": path, "query": None, "auth": None, "gzip": False,
                 "status": status, "headers": headers, "body": body}  # fmt: skip
        index = self.work / f"ceiling-{kind}.json"
        index.write_text(json.dumps([entry]))
        return index

    def measure(self, target: str, kind: str) -> dict:
        """A fresh ``target`` server under wrk asking for ``kind``; its figures."""
        expected = 304 if kind == "304" else 200
        same_path = f"{FRONTEND}?{SAME_QUERY}"
        ofrep_path = OFREP + self.answers["ofrep_key"]
        ofrep_body = json.dumps(OFREP_BODY)
        with self.server(target, kind) as server:
            client = lib.Client(server.port, self.token)
            try:
                for n in range(5):
                    headers = {"If-None-Match": self.answers["etag"]} if kind == "304" else {}
                    path = same_path if kind != "new" else f"{FRONTEND}?userId=warm-{n}&sessionId=warm-{n}"
                    if kind == "ofrep":
                        status = client.send("POST", ofrep_path, body=OFREP_BODY)[0]
                    else:
                        status = client.send("GET", path, headers=headers)[0]
                    if status != expected:
                        raise RuntimeError(f"{target}: {kind} answered {status} while warming up")
            finally:
                client.close()
            cpu_before = server.cpu_seconds()
            script = {"new": self.new_script, "ofrep": self.ofrep_script}.get(kind, self.conditional_script)
            self.requests_sent += 10**7
            figures = lib.run_wrk(
                self.wrk,
                server.port,
                [ofrep_path if kind == "ofrep" else same_path],
                method="POST" if kind == "ofrep" else "GET",
                auth=self.token,
                duration=self.args.duration,
                connections=self.args.connections,
                timeout=30,
                log=self.wrk_log,
                script=script,
                env={
                    "BENCH_ETAG": self.answers["etag"] if kind == "304" else "",
                    "BENCH_START": str(self.requests_sent),
                    "BENCH_BODY": ofrep_body,
                },
            )
            cpu = server.cpu_seconds() - cpu_before
        figures["cpu_us_per_request"] = cpu / max(figures["requests"], 1) * 1e6
        return figures


def main(argv: list[str]) -> None:
    """Run the case (see the module's docstring)."""
    if argv and argv[0] == "--serve-engine-ceiling":
        serve_engine_ceiling(argv[1:])
        return
    p = argparse.ArgumentParser(prog="python -m bench frontend", description=__doc__.splitlines()[0])
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
    work = args.out / "frontend"
    print(f"writing {args.flags} flags through the admin API ...", flush=True)
    state = lib.rules_database(work, args.flags)
    from flagadmin import events
    from flagadmin.store import connect
    from flagadmin.tokens.changes import create_api_token

    with connect(state["db"]) as conn:
        token, _ = create_api_token(
            conn,
            events.COMMAND_LINE,
            type="frontend",
            name="bench",
            environment="development",
            projects=["*"],
        )
    run = Run(args, work, state["db"], token, wrk)
    a = run.answers
    print(
        f"state: {a['flags']} flags, {a['switched_on']} switched on; the repeated context's answer:"
        f" {a['toggles']} flags on, {a['bytes']:,} bytes",
        flush=True,
    )
    engine = engine_figures(run.state_file, args.threads, args.quick)
    print(
        f"engine: {engine['cpu_us_per_check_variant']:.1f} µs CPU per check_variant,"
        f" {engine['cpu_ms_per_request']:.1f} ms per request of {engine['flags_switched_on']} flags",
        flush=True,
    )
    targets = [(kind, target) for kind, names in TARGETS.items() for target in names]
    rounds: dict[str, list[dict]] = {f"{kind}: {target}": [] for kind, target in targets}
    for r in range(1, args.rounds + 1):
        for kind, target in targets:
            figures = run.measure(target, kind)
            rounds[f"{kind}: {target}"].append(figures)
            print(
                f"round {r}: {kind + ': ' + target:18} {figures['rps']:9,.1f} req/s,"
                f" p50 {figures['p50_us'] / 1000:.2f} ms, {figures['cpu_us_per_request']:8,.0f} µs CPU/req,"
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
    ceiling = {"same": "flask", "304": "flask", "new": "engine", "ofrep": "flask"}
    ratios = {
        kind: medians[f"{kind}: flagadmin"]["rps"] / medians[f"{kind}: {ceiling[kind]}"]["rps"]
        for kind in TARGETS
    }
    by_round = {
        kind: [
            mine["rps"] / theirs["rps"]
            for mine, theirs in zip(
                rounds[f"{kind}: flagadmin"], rounds[f"{kind}: {ceiling[kind]}"], strict=True
            )
        ]
        for kind in TARGETS
    }
    cpu_ratios = {
        kind: medians[f"{kind}: {ceiling[kind]}"]["cpu_us_per_request"]
        / medians[f"{kind}: flagadmin"]["cpu_us_per_request"]
        for kind in TARGETS
    }
    results = {
        **tree,
        "tree_digest_end": lib.code_digest(Path(tree["tree"])),
        "command": lib.command_line(),
        "machine": machine,
        "options": {k: str(v) for k, v in vars(args).items()},
        "answers": a,
        "engine": engine,
        "rounds": rounds,
        "medians": medians,
        "ratios": ratios,
        "ratios_by_round": by_round,
        "cpu_ratios": cpu_ratios,
        "lines": LINES,
    }
    rows = [
        [
            name,
            f"{m['rps']:,.1f}",
            f"{m['p50_us'] / 1000:.2f}",
            f"{m['p99_us'] / 1000:.2f}",
            f"{m['cpu_us_per_request']:,.0f}",
            f"{m['errors']:.0f}",
        ]
        for name, m in medians.items()
    ]
    sharing_rows = [
        [
            mode,
            f"{s['wrong_answers']}",
            f"{s['cpu_ms_per_evaluation']:.1f}",
            f"{s['wall_ms_per_evaluation']:.1f}",
        ]
        for mode, s in engine["sharing"].items()
    ]
    words = {
        "same": "serving the same bytes",
        "304": "serving the same 304",
        "new": "making the same engine calls",
        "ofrep": f"answering the same bytes ({a['ofrep_key']}, {a['ofrep_bytes']} bytes)",
    }
    lines = [
        "# frontend",
        "",
        f"`{results['command']}`",
        "",
        f"- Machine: {lib.machine_line(machine)}",
        lib.code_line(results),
        f"- {args.rounds} rounds of {args.duration} s, {args.connections} connections, {args.threads} server"
        f" threads; medians over rounds",
        f"- The state: {a['flags']} live flags in the token's environment, {a['switched_on']} switched on;"
        f" the repeated context's answer: {a['toggles']} flags on, {a['bytes']:,} bytes, ETag {a['etag']}",
        "",
        *lib.markdown_table(["target", "req/s", "p50 ms", "p99 ms", "server CPU µs/req", "errors"], rows),
        "",
        *[
            f"- {kind}: {ratio:.2f} of the Flask route {words[kind]} (line {LINES[kind]}:"
            f" {'met' if ratio >= LINES[kind] else 'NOT met'}); by round"
            f" {', '.join(f'{r:.2f}' for r in by_round[kind])}; the route's server CPU per request"
            f" {cpu_ratios[kind]:.2f} of flagadmin's"
            for kind, ratio in ratios.items()
        ],
        "- The engine alone (one thread on the server's core):"
        f" {engine['cpu_us_per_check_variant']:.1f} µs of CPU per check_variant,"
        f" {engine['cpu_ms_per_request']:.1f} ms per new context"
        f" ({engine['flags_switched_on']} flags switched on)",
        "",
        f"Threads sharing the engine ({args.threads} threads on one core; an evaluation: every flag switched"
        " on, one context):",
        "",
        *lib.markdown_table(
            ["mode", "answers unlike one thread's", "CPU ms/eval", "wall ms/eval"], sharing_rows
        ),
        "",
    ]
    lib.write_results(args.out, "frontend", results, "\n".join(lines))
