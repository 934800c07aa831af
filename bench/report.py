"""Turning run.py's results into medians, target verdicts and a Markdown report."""

from __future__ import annotations

import statistics

TARGETS = (
    "4.3 and 4.1@0 reach at least 0.7 of the Flask ceiling's req/s",
    "4.1 p50 at the deep offset and at the last page within 3x that at offset 0",
    "4.2 p50 within 5x the Flask ceiling's p50",
    "4.4 whole response within 2x the SQLite+orjson baseline; memory growth under 100 MB",
    "soak: no errors, no memory growth from run 1 to run 2 (under 5 MiB)",
)


def medians(runs: list[dict]) -> dict:
    """Median req/s, latencies and request count over rounds; peak RSS is the maximum."""
    return {
        "rps": statistics.median(r["rps"] for r in runs),
        "p50_ms": statistics.median(r["p50_us"] for r in runs) / 1000,
        "p99_ms": statistics.median(r["p99_us"] for r in runs) / 1000,
        "requests": statistics.median(r["requests"] for r in runs),
        "peak_mib": max(r["peak_rss_kb"] for r in runs) / 1024,
        "errors": sum(r["errors"] for r in runs),
        "first_ms": statistics.median(r["first_ms"] for r in runs),
    }


def summary(results: dict) -> dict[str, dict[str, dict]]:
    """Medians per case and target (flagadmin, flask, wsgi)."""
    return {
        case: {t: medians(runs) for t, runs in targets.items()} for case, targets in results["runs"].items()
    }


def verdicts(results: dict) -> list[tuple[str, bool, str]]:
    """(target, met, the figures that decide it) for every target of the brief."""
    s = summary(results)
    names = list(s)
    at0, deep, last = names[0], names[1], names[2]
    out = []
    r43 = s["4.3"]["flagadmin"]["rps"] / s["4.3"]["flask"]["rps"]
    r41 = s[at0]["flagadmin"]["rps"] / s[at0]["flask"]["rps"]
    out.append((TARGETS[0], r43 >= 0.7 and r41 >= 0.7, f"4.3: {r43:.2f}, 4.1@0: {r41:.2f}"))
    p0 = s[at0]["flagadmin"]["p50_ms"]
    rd, rl = s[deep]["flagadmin"]["p50_ms"] / p0, s[last]["flagadmin"]["p50_ms"] / p0
    out.append((TARGETS[1], rd <= 3 and rl <= 3, f"{deep}: {rd:.2f}x, {last}: {rl:.2f}x"))
    r42 = s["4.2"]["flagadmin"]["p50_ms"] / s["4.2"]["flask"]["p50_ms"]
    out.append((TARGETS[2], r42 <= 5, f"{r42:.1f}x"))
    a = results["archive"]
    growth_mb = a["growth_kb"] * 1024 / 1e6
    out.append((TARGETS[3], a["ratio"] <= 2 and growth_mb < 100, f"{a['ratio']:.2f}x, {growth_mb:.0f} MB"))
    runs = results["soak"]["runs"]
    errors = sum(r["errors"] for r in runs)
    grown = (runs[1]["after"]["VmRSS"] - runs[0]["after"]["VmRSS"]) / 1024
    out.append(
        (TARGETS[4], errors == 0 and grown < 5, f"{errors} errors, RSS run 2 - run 1: {grown:+.1f} MiB")
    )
    return out


def speed_note(m: dict) -> str:
    """``"; a Python loop step 37.1 ns"`` from a run's machine (``run.python_step_ns``), or
    "" for results saved before it was measured."""
    step = m.get("python_step_ns")
    return f"; a Python loop step {step} ns" if step is not None else ""


def _code_line(results: dict) -> str:
    line = f"- Code: flagadmin source digest {results['code_digest']}, a copy of the working tree taken "
    if results["tree_digest_end"] == results["tree_digest_start"] == results["code_digest"]:
        return line + "at the start (the tree did not change during the run)"
    return line + (
        f"at the start; the working tree changed during the run (digest {results['tree_digest_end']} "
        "at the end), the copy was measured"
    )


def _table(header: list[str], rows: list[list]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return lines


def markdown(results: dict) -> str:
    """The report: machine, data, method, the tables and the target verdicts."""
    m, d, o, s = results["machine"], results["data"], results["options"], summary(results)
    lines = [
        "# flagadmin benchmark results",
        "",
        f"- Date: {m['date']}; whole run {results['seconds']} s",
        f"- Command: `{results['command']}`",
        _code_line(results),
        f"- Machine: nproc {m['nproc']}, {m['cpu']}, {m['memory_gib']} GiB; Linux {m['kernel']}; "
        f"Python {m['python']}, SQLite {m['sqlite']}, {m['wrk']}{speed_note(m)}",
        f"- Data (scale {d['scale']}): {d['users']:,} users, {d['projects']:,} projects, "
        f"{d['flags']:,} flags ({d['archived_flags']:,} archived), {d['integration_events']:,} "
        f"integration events ({d['events_per_integration']['1']:,} in integration 1); caller `heavy`: "
        f"root role {d['heavy_root_role']}, member of {d['heavy_projects']} projects, created "
        f"{d['heavy_created_flags']} flags; database {d['bytes'] / 2**20:,.0f} MiB, "
        f"built in {d['seconds']} s",
        f"- Method: each server started fresh per measurement, pinned to core 0 (waitress, "
        f"{o['threads']} threads); wrk -t1 pinned to core 1, {o['connections']} connections "
        f"({o['archive_connections']} for 4.4), {o['duration']} s per measurement, after warm-up "
        f"requests; {o['rounds']} rounds, each running every case on flagadmin, the Flask ceiling and "
        f"the WSGI ceiling in turn; figures are medians over rounds (peak RSS: the highest VmHWM).",
        "",
        "## Operations",
        "",
    ]
    rows = []
    for c in results["cases"]:
        f = s[c["name"]]["flagadmin"]
        rows.append(
            [
                c["name"],
                f"`{c['method']} {c['path']}`",
                c["connections"],
                f"{f['rps']:,.1f}",
                f"{f['p50_ms']:.2f}",
                f"{f['p99_ms']:.2f}",
                f"{results['body_bytes'][c['name']]:,}",
                f"{f['peak_mib']:.0f}",
                f"{f['first_ms']:.1f}",
                f["errors"],
            ]
        )
    lines += _table(
        [
            "case",
            "request",
            "conns",
            "req/s",
            "p50 ms",
            "p99 ms",
            "body bytes",
            "peak RSS MiB",
            "first ms",
            "errors",
        ],
        rows,
    )
    lines += [
        "",
        "first ms: the first request on a freshly started server (nothing cached, no connection "
        "open), median over rounds; errors: connect, read, write, non-2xx and timeouts, all rounds.",
    ]
    for name, targets in results["runs"].items():
        for i, r in enumerate(targets["flagadmin"]):
            if "error_sample" in r:
                lines.append(f"- {name}, round {i + 1}: {r['status']} non-2xx answers; {r['error_sample']}")
    lines += ["", "## Against the ceilings (same bytes, same waitress, same cores)", ""]
    rows = []
    for c in results["cases"]:
        f, fl, w = (s[c["name"]][t] for t in ("flagadmin", "flask", "wsgi"))
        rows.append(
            [
                c["name"],
                f"{fl['rps']:,.1f}",
                f"{fl['p50_ms']:.2f}",
                f"{w['rps']:,.1f}",
                f"{w['p50_ms']:.2f}",
                f"{f['rps'] / fl['rps']:.2f}",
                f"{f['rps'] / w['rps']:.2f}",
                f"{f['p50_ms'] / fl['p50_ms']:.1f}",
                f"{f['p50_ms'] / w['p50_ms']:.1f}",
            ]
        )
    lines += _table(
        [
            "case",
            "Flask req/s",
            "Flask p50 ms",
            "WSGI req/s",
            "WSGI p50 ms",
            "req/s ÷ Flask",
            "req/s ÷ WSGI",
            "p50 x Flask",
            "p50 x WSGI",
        ],
        rows,
    )
    lines += ["", "flagadmin req/s per round:", ""]
    rows = [
        [name, *(f"{r['rps']:,.1f}" for r in targets["flagadmin"])]
        for name, targets in results["runs"].items()
    ]
    lines += _table(["case", *(f"round {i + 1}" for i in range(int(o["rounds"])))], rows)

    a = results["archive"]
    lines += [
        "",
        "## 4.4 against SQLite + orjson",
        "",
        *_table(
            ["measure", "value"],
            [
                ["whole 4.4 response (http.client, median of 5)", f"{a['whole_s']:.3f} s"],
                ["first 4.4 response on a fresh server", f"{a['first_s']:.3f} s"],
                [
                    f"SQLite alone: the SELECT of 4.4, {a['baseline_rows']:,} rows fetched",
                    f"{a['baseline_sqlite_s']:.3f} s",
                ],
                ["SQLite + orjson.dumps of the rows as one document", f"{a['baseline_encoded_s']:.3f} s"],
                ["ratio whole response ÷ SQLite+orjson", f"{a['ratio']:.2f}"],
                ["body bytes (server / baseline)", f"{a['body_bytes']:,} / {a['baseline_body_bytes']:,}"],
                [
                    "VmHWM before → after one request (fresh server)",
                    f"{a['hwm_before_kb'] / 1024:.1f} → {a['hwm_after_kb'] / 1024:.1f} MiB "
                    f"(+{a['growth_kb'] * 1024 / 1e6:.0f} MB)",
                ],
            ],
        ),
    ]
    soak = results["soak"]
    lines += [
        "",
        f"## Soak: {o['soak_connections']} connections, {o['soak_duration']} s, twice, on one server",
        "",
        f"Requests alternate between `{soak['paths'][0]}` and `{soak['paths'][1]}` (admin token); wrk "
        f"timeout {o['soak_timeout']} s. Before: VmRSS {soak['before']['VmRSS'] / 1024:.1f} MiB, "
        f"VmHWM {soak['before']['VmHWM'] / 1024:.1f} MiB.",
        "",
    ]
    rows = [
        [
            i + 1,
            f"{r['requests']:,}",
            f"{r['rps']:,.1f}",
            f"{r['p50_us'] / 1000:.2f}",
            f"{r['p99_us'] / 1000:.2f}",
            f"{r['connect']}/{r['read']}/{r['write']}/{r['status']}/{r['timeout']}",
            f"{r['after']['VmRSS'] / 1024:.1f}",
            f"{r['after']['VmHWM'] / 1024:.1f}",
        ]
        for i, r in enumerate(soak["runs"])
    ]
    lines += _table(
        [
            "run",
            "requests",
            "req/s",
            "p50 ms",
            "p99 ms",
            "errors connect/read/write/non-2xx/timeout",
            "VmRSS after MiB",
            "VmHWM after MiB",
        ],
        rows,
    )
    lines += ["", "## 4.2 statement count for heavy", ""]
    rows = [[scale, q["count"]] for scale, q in results["query_counts"].items()]
    lines += _table(["scale", "SQL statements of one request (fresh app, nothing cached)"], rows)
    lines += ["", "## Targets", ""]
    lines += [f"- {'met' if ok else '**MISSED**'}: {target} ({why})" for target, ok, why in verdicts(results)]
    return "\n".join(lines) + "\n"
