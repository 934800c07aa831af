"""traffic.py's results as Markdown: medians over rounds, ratios to the ceilings (or, on two
engines, to SQLite), and the verdicts on issue 13's targets."""

from __future__ import annotations

import statistics

import report

#: Write kinds that record an event (SCIM token generation records none: no configuration
#: can match it, whatever it takes).
EVENT_WRITES = ("flag-create", "flag-archive", "scim-user-create", "scim-group-patch")
#: Writes per second at 0 integrations that issue 13 asks for (ten times the reference server).
WRITE_RATES = {"flag-create": 1000, "flag-archive": 1750}


def median(runs: list[dict], load: str, key: str) -> float:
    """Median of ``key`` of ``load`` over rounds (``runs``: one dict of loads per round)."""
    return statistics.median(r[load][key] for r in runs)


#: The mixed case's windows on one server, as traffic.py names them (results of runs before
#: the second window have only the first).
MIX_WINDOWS = ("mixed", "mixed, second window")


def _windows(mixed: dict, setups) -> list[str]:
    """The mixed case's windows (:data:`MIX_WINDOWS`) that every round of ``setups`` measured."""
    return [w for w in MIX_WINDOWS if all(w in run for s in setups for run in mixed["runs"][s])]


def figures(runs: list[dict], load: str) -> dict:
    """Medians of one load over rounds: req/s, p50 and p99 (ms); errors summed."""
    return {
        "rps": median(runs, load, "rps"),
        "p50": median(runs, load, "p50_us") / 1000,
        "p99": median(runs, load, "p99_us") / 1000,
        "errors": sum(r[load]["errors"] for r in runs),
    }


def _table(header: list[str], rows: list[list]) -> list[str]:
    return report._table(header, rows)


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b else "-"


def _head(results: dict) -> list[str]:
    m, o = results["machine"], results["options"]
    main, install = results["data"]["main"], results["data"]["install"]
    users = results["users"]
    return [
        "# flagadmin under real traffic (issue 13)",
        "",
        f"- Date: {m['date']}; whole run {results['seconds']} s",
        f"- Command: `{results['command']}`",
        report._code_line(results),
        f"- Machine: nproc {m['nproc']}, {m['cpu']}, {m['memory_gib']} GiB; Linux {m['kernel']}; "
        f"Python {m['python']}, SQLite {m['sqlite']}, {m['wrk']}{report.speed_note(m)}",
        f"- Data: scale {main['scale']} ({main['users']:,} users, {main['projects']:,} projects, "
        f"{main['flags']:,} flags, {main['integration_events']:,} integration events, "
        f"{main['events_per_integration']['1']:,} in integration 1); the small install: scale "
        f"{install['scale']} ({install['archived_flags']:,} archived flags)",
        f"- Distinct users: {users['count']:,} personal tokens of project members "
        f"({', '.join(f'{n} {r}' for r, n in users['roles'].items())})",
        f"- Method: fresh server(s) per measurement, flagadmin pinned to core 0 ({o['threads']} "
        f"threads), wrk -t1 on core 1, {o['connections']} connections, {o['duration']} s after "
        f"warm-up; {o['rounds']} round(s); figures are medians over rounds, errors are summed "
        "(connect, read, write, non-2xx, timeouts).",
        *_reference_line(results),
    ]


def _reference_line(results: dict) -> list[str]:
    """The head's line on ``--reference``, when the run measured it."""
    ref = results.get("reference")
    if not ref:
        return []
    return [
        f"- Reference server: version {ref['version']} at {ref['url']} (project `{ref['project']}`), "
        "running before the run and not restarted by it; its writes measured by the same wrk "
        "script, connections and durations as flagadmin's, in turn with them in each round"
    ]


def _reads(results: dict) -> list[str]:
    reads = results.get("reads")
    if not reads:
        return []
    setups = results["setups"]
    lines = ["", "## Reads with no help from repetition", ""]
    rows = []
    engines = results["engines"]
    for case in reads["cases"]:
        if case["name"] == "4.2 first request":
            continue
        runs = reads["runs"][case["name"]]
        for load in case["loads"]:
            f = {s: figures(runs[s], load["name"]) for s in setups}
            first = f[setups[0]]
            row = [load["name"], f"{first['rps']:,.1f}", f"{first['p50']:.2f}", f"{first['p99']:.2f}"]
            if engines:
                for s in setups[1:]:
                    row += [f"{f[s]['rps']:,.1f}", _ratio(f[s]["rps"], first["rps"])]
            else:
                for s in setups[1:]:
                    row += [f"{f[s]['rps']:,.1f}", _ratio(first["rps"], f[s]["rps"])]
            sizes = reads["body_bytes"].get(case["name"])
            row += [sum(x["errors"] for x in f.values()), f"{sizes['median']:,.0f}" if sizes else "-"]
            rows.append(row)
    header = ["case", f"{setups[0]} req/s", "p50 ms", "p99 ms"]
    for s in setups[1:]:
        header += [f"{s} req/s", f"÷ {setups[0]}" if engines else f"÷ {s}"]
    lines += _table([*header, "errors (all)", "median body bytes"], rows)
    first = reads["runs"].get("4.2 first request")
    if first:
        lines += [
            "",
            "First request of each user on a fresh server (one connection, each token once; "
            "`heavy` first, the very first request the server answers):",
            "",
        ]
        rows = []
        for load in ("users first", "heavy first"):
            f = {s: figures(first[s], load) for s in setups}
            row = [load, f"{f[setups[0]]['p50']:.2f}", f"{f[setups[0]]['p99']:.2f}"]
            for s in setups[1:]:
                a, b = (f[s]["p50"], f[setups[0]]["p50"]) if engines else (f[setups[0]]["p50"], f[s]["p50"])
                row += [f"{f[s]['p50']:.2f}", f"{a / b:.1f}x"]
            rows.append(row)
        header = ["requests", f"{setups[0]} p50 ms", "p99 ms"]
        for s in setups[1:]:
            header += [f"{s} p50 ms", f"p50 ÷ {setups[0]}" if engines else f"{setups[0]} p50 ÷ {s}"]
        lines += _table(header, rows)
    return lines


def _mixed(results: dict) -> list[str]:
    mixed = results.get("mixed")
    if not mixed:
        return []
    setups = list(mixed["runs"])
    windows = _windows(mixed, setups)
    lines = [
        "",
        "## Mixed case",
        "",
        f"Reads {mixed['weights']} (percent of the reads; 4.1: {mixed['first_pages_percent']} % on the "
        f"first ten pages, the rest uniform over the log), one 4.5 every {mixed['token_every']} requests, "
        f"one write every {mixed['write_every']} (flag update, SCIM user PATCH, test delivery in turn), "
        f"Accept-Encoding: gzip on every request."
        + (
            " Each fresh server gets two windows of the same traffic, one after the other: the first"
            " is its first traffic (every user's first 4.2 and every Viewer's first 4.4 are built in"
            " it), the second keeps what the first built and its writes did not touch."
            if len(windows) > 1
            else ""
        )
        + (
            f" The ceilings answer {mixed['answers']:,} recorded answers"
            f" (median {mixed['body_bytes_median']:,.0f} bytes)."
            if mixed["answers"]
            else ""
        ),
        "",
    ]
    first = setups[0]
    rows = []
    for window in windows:
        f = {s: figures(mixed["runs"][s], window) for s in setups}
        rows += [
            [
                window,
                s,
                f"{f[s]['rps']:,.1f}",
                f"{f[s]['p50']:.2f}",
                f"{f[s]['p99']:.2f}",
                f[s]["errors"],
                _ratio(f[first]["rps"], f[s]["rps"])
                if not results["engines"]
                else _ratio(f[s]["rps"], f[first]["rps"]),
            ]
            for s in setups
        ]
    lines += _table(
        [
            "window",
            "setup",
            "req/s",
            "p50 ms",
            "p99 ms",
            "errors",
            f"ratio ({first} ÷ it)" if not results["engines"] else f"÷ {first}",
        ],
        rows,
    )
    return lines


def _after_write(results: dict) -> list[str]:
    after = results.get("after_write")
    if not after:
        return []
    lines = [
        "",
        "## 4.4 right after a write",
        "",
        "One keep-alive client on core 1, admin token, whole body; p50 (p99) ms over the rounds.",
        "",
    ]
    rows = []
    for name, a in after.items():
        cells = []
        for key in ("after archive", "after create", "nothing written", "flask ceiling"):
            x = a.get(key, {})
            cells.append(f"{x['p50']:.2f} ({x['p99']:.2f})" if x.get("n") else "-")
        rows.append([name, f"{a['body_bytes']:,}", a["rounds"], *cells])
    lines += _table(
        [
            "database",
            "body bytes",
            "rounds",
            "after archiving a flag",
            "after creating a flag",
            "nothing written",
            "Flask ceiling, same bytes",
        ],
        rows,
    )
    return lines


def _writes(results: dict) -> list[str]:
    writes = results.get("writes")
    if not writes:
        return []
    lines = [
        "",
        "## Writes",
        "",
        "Each kind with 0, 1 and 5 enabled webhook configurations that take every event type "
        "(delivering to a receiver process on core 1): wrk with the connections of the other cases, "
        "then with one connection (the latency of one write with nothing queued: an upper bound of "
        "its transaction), then the wait for the outbox to empty. SCIM token generation records no "
        "event, so no configuration matches it.",
        "",
    ]
    if results.get("reference"):
        lines += [
            "The reference server's rows: its own webhook configurations, taking every event type "
            "its webhook provider offers, delivering to the same receiver; its archives take "
            "flags made through its own create path before each load. Its deliveries are its own "
            "affair (no outbox to wait for).",
            "",
        ]
    rows = []
    cases = {key: (kind, int(count)) for key in writes["runs"] for kind, count in [key.rsplit(" x", 1)]}
    # kinds in the run's order, then counts (the runs go count by count: see traffic.writes)
    for key in sorted(cases, key=lambda k: (writes["kinds"].index(cases[k][0]), cases[k][1])):
        (kind, count), by_setup = cases[key], writes["runs"][key]
        for setup, runs in by_setup.items():
            load = figures(runs, "load")
            one = figures(runs, "one connection")
            base = writes["runs"].get(f"{kind} x0", {}).get(setup)
            base_rps = figures(base, "load")["rps"] if base else 0
            reference = by_setup.get("reference") if setup != "reference" else None
            drains = [r["drain_s"] for r in runs if r["drain_s"] is not None]
            rows.append(
                [
                    kind,
                    count,
                    setup,
                    f"{load['rps']:,.1f}",
                    f"{load['p50']:.2f}",
                    f"{load['p99']:.2f}",
                    f"{one['p50']:.2f}",
                    f"{one['p99']:.2f}",
                    load["errors"] + one["errors"],
                    f"{statistics.median(drains):.1f}" if drains else "-",
                    sum(r["cancelled"] for r in runs),
                    _ratio(load["rps"], base_rps),
                    _ratio(load["rps"], figures(reference, "load")["rps"]) if reference else "-",
                ]
            )
    lines += _table(
        [
            "write",
            "integrations",
            "setup",
            "req/s",
            "p50 ms",
            "p99 ms",
            "1-conn p50 ms",
            "1-conn p99 ms",
            "errors",
            "outbox emptied in s",
            "deliveries cancelled",
            "req/s ÷ 0 integrations",
            "req/s ÷ reference",
        ],
        rows,
    )
    return lines


def verdicts(results: dict) -> list[tuple[str, bool | None, str]]:
    """(target, met or None when not measured, figures) for issue 13's targets; SQLite runs
    only. The reads and the mixed case are judged when the Flask ceiling ran; the writes
    whenever they ran, and against ``--reference`` when it ran."""
    if results["engines"]:
        return []
    out: list[tuple[str, bool | None, str]] = []
    flask = "flask" in results["setups"]  # the reads and the mixed case compare with it
    reads = results.get("reads", {}).get("runs", {}) if flask else {}

    def rps_ratio(case: str, load: str) -> float:
        return figures(reads[case]["flagadmin"], load)["rps"] / figures(reads[case]["flask"], load)["rps"]

    if reads:
        r = rps_ratio("4.1 random offset", "4.1 random")
        out.append(("4.1 at random offsets: at least 0.5 of the Flask ceiling", r >= 0.5, f"{r:.2f}"))
        r = rps_ratio("4.2 distinct users", "4.2 users")
        out.append(("4.2 for distinct users: at least 0.5 of the Flask ceiling", r >= 0.5, f"{r:.2f}"))
        first = reads["4.2 first request"]
        for load, bound, label in (("users first", 3, "a user's"), ("heavy first", 10, "heavy's")):
            x = figures(first["flagadmin"], load)["p50"] / figures(first["flask"], load)["p50"]
            out.append(
                (f"4.2, {label} first request: p50 within {bound}x the ceiling's", x <= bound, f"{x:.1f}x")
            )
        r = rps_ratio("4.4 install", "4.4 install")
        g = rps_ratio("4.4 install gzip", "4.4 install gzip")
        out.append(
            (
                "4.4 at about 1,000 archived flags: at least 0.5 of the Flask ceiling",
                r >= 0.5,
                f"{r:.2f} (gzip {g:.2f})",
            )
        )
    mixed = results.get("mixed") if flask else None
    if mixed:
        for window in _windows(mixed, ("flagadmin", "flask")):
            f, c = figures(mixed["runs"]["flagadmin"], window), figures(mixed["runs"]["flask"], window)
            r = f["rps"] / c["rps"]
            ok = r >= 0.5 and f["errors"] == 0
            out.append(
                (
                    f"mixed case ({'first' if window == 'mixed' else 'second'} window):"
                    " at least 0.5 of the Flask ceiling, 0 errors",
                    ok,
                    f"{r:.2f}, {f['errors']} errors",
                )
            )
    writes = results.get("writes", {}).get("runs", {})
    if writes:
        slow = {
            k: figures(writes[f"{k} x5"]["flagadmin"], "one connection")["p50"]
            for k in EVENT_WRITES
            if f"{k} x5" in writes
        }
        if slow:
            out.append(
                (
                    "writes with 5 matching integrations: p50 under 5 ms (one connection)",
                    all(v < 5 for v in slow.values()),
                    ", ".join(f"{k} {v:.2f} ms" for k, v in slow.items()),
                )
            )
        for kind, rate in WRITE_RATES.items():
            if f"{kind} x0" not in writes or f"{kind} x5" not in writes:
                continue  # not measured in this run (--write-kinds, --integrations)
            zero = figures(writes[f"{kind} x0"]["flagadmin"], "load")["rps"]
            five = figures(writes[f"{kind} x5"]["flagadmin"], "load")["rps"]
            out.append(
                (
                    f"{kind}: at least {rate:,}/s, and with 5 matching integrations 0.8 of that",
                    zero >= rate and five >= 0.8 * zero,
                    f"{zero:,.0f}/s, with 5: {five:,.0f}/s ({five / zero:.2f})",
                )
            )
        for kind in WRITE_RATES:
            ref = writes.get(f"{kind} x0", {}).get("reference")
            if not ref:
                continue
            zero = figures(writes[f"{kind} x0"]["flagadmin"], "load")["rps"]
            theirs = figures(ref, "load")["rps"]
            more = []
            for n in (1, 5):
                with_n = writes.get(f"{kind} x{n}", {}).get("reference")
                if with_n:
                    more.append(f"with {n}: {figures(with_n, 'load')['rps'] / theirs:.2f} of that")
            out.append(
                (
                    f"{kind}: ten times the reference server measured the same way, in the same run",
                    zero >= 10 * theirs,
                    f"{zero / theirs:.1f}x: {zero:,.0f}/s against {theirs:,.1f}/s"
                    + (f" (the reference {', '.join(more)})" if more else ""),
                )
            )
        before = results.get("run_py_4_5")
        if "scim-token x0" in writes:
            token = figures(writes["scim-token x0"]["flagadmin"], "load")
            out.append(
                (
                    "SCIM token generation p99 no worse than today (run.py's 4.5 in the same folder)",
                    None if before is None else token["p99"] <= before["p99"] * 1.1,
                    f"p99 {token['p99']:.2f} ms at {token['rps']:,.0f}/s"
                    + (
                        ""
                        if before is None
                        else f"; run.py's 4.5 of {before['date']} (code {before['code_digest']}): p99 "
                        f"{before['p99']:.2f} ms at {before['rps']:,.0f}/s, 10 % allowed for noise"
                    ),
                )
            )
    return out


def markdown(results: dict) -> str:
    """The whole report."""
    lines = _head(results) + _reads(results) + _mixed(results) + _after_write(results) + _writes(results)
    found = verdicts(results)
    if found:
        lines += ["", "## Targets of issue 13", ""]
        for target, ok, why in found:
            state = "measured" if ok is None else "met" if ok else "**MISSED**"
            lines.append(f"- {state}: {target} ({why})")
    return "\n".join(lines) + "\n"
