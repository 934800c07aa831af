"""rules: a strategy add and a strategy update under load, as ratios to a flag create.

    python -m bench rules [--rounds 3] [--seconds 10] [--connections 8] [--flags 300] [--quick]

The three are the same shape of transaction (look the flag or project up, check the caller and
the body, write a row or two, record the event with its deliveries, answer the object), so a
strategy write is held to at least :data:`LINE` of a flag create's req/s in the same run:

- ``flag create``: ``POST /api/admin/projects/default/features``, a new name each request (201);
- ``strategy add``: ``POST .../features/{flag}/environments/production/strategies``, a
  flexibleRollout with its parameters and one ``IN`` constraint of two values, to the flags of
  the database in turn (200);
- ``strategy update``: ``PUT .../strategies/{id}`` of the strategies the database holds (one per
  flag), in turn, each request a new ``rollout`` (so that every one changes the strategy and
  records ``feature-strategy-update``) (200).

The database is made once per run (the demo data, ``--flags`` live flags in ``default`` with a
flexibleRollout each in production, an admin token) and copied afresh for every measurement, so
that each starts from the same state. Server CPU per request is reported beside req/s (the
machine is shared, and CPU moves less than req/s with the load of others).

Protocol: every measurement on a freshly started ``flagadmin serve`` pinned to core 0
(``taskset``), wrk ``-t1`` pinned to core 1, a few warm-up requests, then ``--seconds`` of load;
each round runs the three writes in turn, starting with the next one each round; figures are
medians over ``--rounds``, and the ratios are also given per round. The tree measured is a
snapshot (``--tree``). Results: ``<out>/rules.{json,md}``; the database, wrk script and logs in
``<out>/rules/``.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
from pathlib import Path

from bench import lib

#: The line each ratio to the flag create is held to.
LINE = 0.8

PROJECT = "default"
ENVIRONMENT = "production"

#: The wrk script: BENCH_KIND create | add | update; BENCH_AUTH the admin token; BENCH_FLAGS a
#: file of flag names, BENCH_STRATEGIES one of "flag id" lines; BENCH_TAG unique per
#: measurement (new flag names never collide). Its answers outside 2xx are noted in the log.
SCRIPT = """local lib = dofile({lib_lua!r})
local kind = lib.env("BENCH_KIND")
local auth = lib.env("BENCH_AUTH")
local tag = lib.env("BENCH_TAG", "t")
local headers = lib.headers(auth, "application/json")
local base = "/api/admin/projects/{project}/features"
local m = 0
local flags, strategies = {{}}, {{}}
if kind == "add" then
  flags = lib.lines(lib.env("BENCH_FLAGS"))
elseif kind == "update" then
  for _, line in ipairs(lib.lines(lib.env("BENCH_STRATEGIES"))) do
    local flag, id = line:match("(%S+)%s+(%S+)")
    strategies[#strategies + 1] = {{flag = flag, id = id}}
  end
end
local add_body = '{{"name":"flexibleRollout","parameters":{{"rollout":"50","stickiness":"default"}},' ..
  '"constraints":[{{"contextName":"appName","operator":"IN","values":["web","ios"]}}]}}'

request = function()
  m = m + 1
  if kind == "create" then
    local body = string.format('{{"name":"%s-%d","type":"release"}}', tag, m)
    return wrk.format("POST", base, headers, body)
  elseif kind == "add" then
    local flag = flags[m % #flags + 1]
    local path = base .. "/" .. flag .. "/environments/{environment}/strategies"
    return wrk.format("POST", path, headers, add_body)
  else
    local s = strategies[m % #strategies + 1]
    local body = string.format(
      '{{"name":"flexibleRollout","parameters":{{"rollout":"%d","stickiness":"default"}},' ..
      '"constraints":[{{"contextName":"appName","operator":"IN","values":["web","ios"]}}]}}', m % 97)
    local path = base .. "/" .. s.flag .. "/environments/{environment}/strategies/" .. s.id
    return wrk.format("PUT", path, headers, body)
  end
end

response = function(status, headers, body)
  lib.note_status(status, body)
end
"""


def prepare(folder: Path, flags: int) -> dict:
    """Make the run's template database in ``folder``: the demo data, ``flags`` live flags of
    project ``default`` with one flexibleRollout each in production, an admin token. Returns
    ``{"db", "admin_token", "flags" (file), "strategies" (file)}``."""
    from flagadmin.app import create_app
    from flagadmin.seed.documents import demo_files, load_files
    from flagadmin.store import connect, schema
    from flagadmin.store import tokens as store_tokens

    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    db = folder / "template.db"
    schema.ensure_schema(str(db))
    with connect(str(db)) as conn:
        load_files(conn, demo_files())
        token = store_tokens.new_admin_token()
        store_tokens.insert_token(conn, token, kind="admin", name="bench")
    client = create_app({"DATABASE": str(db)}).test_client()
    headers = {"Authorization": token}
    names, lines = [], []
    for i in range(flags):
        name = f"rules-bench-{i:04d}"
        created = client.post(f"/api/admin/projects/{PROJECT}/features", json={"name": name}, headers=headers)
        added = client.post(
            f"/api/admin/projects/{PROJECT}/features/{name}/environments/{ENVIRONMENT}/strategies",
            json={"name": "flexibleRollout", "parameters": {"rollout": "10"}},
            headers=headers,
        )
        if created.status_code != 201 or added.status_code != 200:
            raise RuntimeError(f"flag {name}: {created.status_code} {added.get_data(as_text=True)}")
        names.append(name)
        lines.append(f"{name} {added.get_json()['id']}")
    with connect(str(db)) as conn:
        conn.pragma("wal_checkpoint(TRUNCATE)")
    (folder / "flags.txt").write_text("\n".join(names) + "\n")
    (folder / "strategies.txt").write_text("\n".join(lines) + "\n")
    return {
        "db": db,
        "admin_token": token,
        "flags": folder / "flags.txt",
        "strategies": folder / "strategies.txt",
    }


#: The writes measured: name, wrk kind, the status each answer must have.
WRITES = [("flag create", "create", 201), ("strategy add", "add", 200), ("strategy update", "update", 200)]


class Run:
    """What every measurement shares."""

    def __init__(self, args: argparse.Namespace, work: Path, state: dict, wrk: str) -> None:
        self.args = args
        self.work = work
        self.state = state
        self.wrk = wrk
        self.script = work / "rules.lua"
        self.script.write_text(
            SCRIPT.format(lib_lua=str(lib.LUA / "lib.lua"), project=PROJECT, environment=ENVIRONMENT)
        )
        self.server_log = work / "servers.log"
        self.wrk_log = work / "wrk.log"
        self.count = 0

    def measure(self, kind: str, status: int) -> dict:
        """``kind`` under wrk on a fresh server and a fresh copy of the template; its figures."""
        self.count += 1
        db = self.work / "measured.db"
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)
        shutil.copyfile(self.state["db"], db)
        port = lib.free_port()
        env = {
            "BENCH_KIND": kind,
            "BENCH_FLAGS": str(self.state["flags"]),
            "BENCH_STRATEGIES": str(self.state["strategies"]),
        }
        with lib.Server(lib.flagadmin_command(db, port, self.args.threads), port, self.server_log) as server:
            warm = lib.run_wrk(
                self.wrk,
                port,
                ["/"],
                auth=self.state["admin_token"],
                duration=1,
                connections=2,
                timeout=10,
                log=self.wrk_log,
                script=self.script,
                env={**env, "BENCH_TAG": f"warm-{self.count}"},
            )
            if warm["errors"]:
                raise RuntimeError(f"{kind}: {warm['errors']} errors while warming up; see {self.wrk_log}")
            cpu_before = server.cpu_seconds()
            figures = lib.run_wrk(
                self.wrk,
                port,
                ["/"],
                auth=self.state["admin_token"],
                duration=self.args.duration,
                connections=self.args.connections,
                timeout=10,
                log=self.wrk_log,
                script=self.script,
                env={**env, "BENCH_TAG": f"m{self.count}"},
            )
            cpu = server.cpu_seconds() - cpu_before
        if figures["errors"]:
            raise RuntimeError(
                f"{kind}: {figures['errors']} errors (expected {status} each); see {self.wrk_log}"
            )
        figures["cpu_us_per_request"] = cpu / max(figures["requests"], 1) * 1e6
        return figures


def main(argv: list[str]) -> None:
    """Run the case (see the module's docstring)."""
    p = argparse.ArgumentParser(prog="python -m bench rules", description=__doc__.splitlines()[0])
    lib.add_common_options(p, db=False)
    p.add_argument("--threads", type=int, default=8, help="server threads (default 8)")
    p.add_argument("--connections", type=int, default=8, help="wrk connections (default 8)")
    p.add_argument("--flags", type=int, default=300, help="flags the strategy writes go to (default 300)")
    args = p.parse_args(argv)
    if args.quick:
        args.rounds, args.duration, args.flags = 1, 3, 50
    tree = lib.measured_tree(args)
    machine = lib.machine()
    wrk = lib.ensure_wrk()
    machine["wrk"] = lib.wrk_version(wrk)
    work = args.out / "rules"
    run = Run(args, work, prepare(work, args.flags), wrk)
    rounds: dict[str, list[dict]] = {name: [] for name, _, _ in WRITES}
    for r in range(1, args.rounds + 1):
        # each round starts with another write, so that a drift of the machine's speed during a
        # round (it is shared) does not always favour the same one
        start = (r - 1) % len(WRITES)
        for name, kind, status in WRITES[start:] + WRITES[:start]:
            figures = run.measure(kind, status)
            rounds[name].append(figures)
            print(
                f"round {r}: {name:16} {figures['rps']:8,.0f} req/s, p50 {figures['p50_us'] / 1000:.2f} ms,"
                f" {figures['cpu_us_per_request']:6.0f} µs CPU/req",
                flush=True,
            )
    keys = ("rps", "p50_us", "p99_us", "cpu_us_per_request", "errors")
    medians = {
        name: {k: statistics.median(f[k] for f in figures) for k in keys} for name, figures in rounds.items()
    }
    base = "flag create"
    ratios = {
        name: medians[name]["rps"] / medians[base]["rps"] for name in ("strategy add", "strategy update")
    }
    by_round = {
        name: [rounds[name][i]["rps"] / rounds[base][i]["rps"] for i in range(args.rounds)]
        for name in ("strategy add", "strategy update")
    }
    cpu_ratios = {
        name: medians[name]["cpu_us_per_request"] / medians[base]["cpu_us_per_request"]
        for name in ("strategy add", "strategy update")
    }
    results = {
        **tree,
        "tree_digest_end": lib.code_digest(Path(tree["tree"])),
        "command": lib.command_line(),
        "machine": machine,
        "options": {k: str(v) for k, v in vars(args).items()},
        "rounds": rounds,
        "medians": medians,
        "ratios": ratios,
        "ratios_by_round": by_round,
        "cpu_ratios": cpu_ratios,
        "line": LINE,
    }
    rows = [
        [
            name,
            f"{m['rps']:,.0f}",
            f"{m['p50_us'] / 1000:.2f}",
            f"{m['p99_us'] / 1000:.2f}",
            f"{m['cpu_us_per_request']:,.0f}",
        ]
        for name, m in medians.items()
    ]
    lines = [
        "# rules",
        "",
        f"`{results['command']}`",
        "",
        f"- Machine: {lib.machine_line(machine)}",
        lib.code_line(results),
        f"- {args.rounds} rounds of {args.duration} s, {args.connections} connections, {args.threads} server"
        f" threads; {args.flags} flags; medians over rounds",
        "",
        *lib.markdown_table(["write", "req/s", "p50 ms", "p99 ms", "server CPU µs/req"], rows),
        "",
        *[
            f"- {name}: {ratio:.2f} of a flag create's req/s (by round: "
            f"{', '.join(f'{x:.2f}' for x in by_round[name])}; line {LINE}: "
            f"{'met' if ratio >= LINE else 'NOT met'}); server CPU per request {cpu_ratios[name]:.2f}x"
            for name, ratio in ratios.items()
        ],
        "",
    ]
    lib.write_results(args.out, "rules", results, "\n".join(lines))
