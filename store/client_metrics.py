"""What SDKs report, written in batches: applications, instances, usage, hourly counts,
unknown flags and each flag's ``lastSeenAt`` (the tables "SDK traffic" of ``schema.sql``).

Every function here runs inside the one write transaction of a flush
(``flagadmin.clients.metrics.Aggregator.flush``), under the lock :data:`LOCK`. Each write is an
upsert that adds to what is stored (counts summed, times kept at their latest), so the flushes
of several processes on one PostgreSQL database merge whatever order they commit in; rows are
written in a fixed order (sorted keys) so that two flushes never wait on each other's rows in
opposite orders.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from .engine import Connection

#: The write lock of a flush (PostgreSQL: an advisory lock shared by every process).
LOCK = "client_metrics"

#: Counts are capped at this sum (a client that reports absurd numbers saturates, never
#: overflows PostgreSQL's BIGINT or SQLite's 64-bit integers).
COUNT_CAP = 2**62

#: Names asked in one ``IN (...)`` list.
CHUNK = 500

_GREATEST = {"sqlite": "max", "postgresql": "GREATEST"}
_LEAST = {"sqlite": "min", "postgresql": "LEAST"}

#: The variants of a stored row and of the new one, summed name by name, as compact JSON text
#: with names in order.
_MERGED_VARIANTS = {
    "sqlite": (
        "(SELECT json_group_object(key, total) FROM (SELECT key, min(sum(value), {cap}) AS total"
        " FROM (SELECT key, value FROM json_each(client_metrics.variants)"
        " UNION ALL SELECT key, value FROM json_each(excluded.variants)) GROUP BY key ORDER BY key))"
    ),
    "postgresql": (
        "(SELECT coalesce(string_agg(to_json(key)::text || ':' || total::text, ',' ORDER BY key"
        " COLLATE \"C\"), '') FROM (SELECT key, LEAST(sum(value::numeric), {cap}) AS total"
        " FROM (SELECT key, value FROM jsonb_each_text(client_metrics.variants::jsonb)"
        " UNION ALL SELECT key, value FROM jsonb_each_text(excluded.variants::jsonb)) v GROUP BY key) s)"
    ),
}


def _variants_sql(dialect: str) -> str:
    merged = _MERGED_VARIANTS[dialect].format(cap=COUNT_CAP)
    if dialect == "postgresql":
        return f"'{{' || {merged} || '}}'"
    return merged


def _chunks(items: list[Any]) -> Iterator[list[Any]]:
    for start in range(0, len(items), CHUNK):
        yield items[start : start + CHUNK]


def existing_flags(conn: Connection, names: Iterable[str]) -> set[str]:
    """The names among ``names`` that are flags, live or archived."""
    found: set[str] = set()
    for chunk in _chunks(sorted(set(names))):
        marks = ", ".join("?" * len(chunk))
        found.update(conn.values(f"SELECT name FROM features WHERE name IN ({marks})", chunk))
    return found


def add_applications(conn: Connection, applications: list[dict[str, Any]], created_by: str) -> list[str]:
    """Create the applications of ``applications`` not stored yet and bring every one's
    ``updated_at`` (and ``strategies``, when given) up to date. Each item: ``{"app_name",
    "seen_at" (stored timestamp), "strategies" (list of names, or None: keep)}``.

    Returns the names of the applications this call created, in name order: exactly once per
    application across processes (the insert that finds a row already there, even one committed
    meanwhile by another process, creates nothing).
    """
    created = []
    for app in sorted(applications, key=lambda a: a["app_name"]):
        strategies = orjson.dumps(app["strategies"] or []).decode()
        row = conn.one(
            "INSERT INTO client_applications (app_name, created_at, updated_at, created_by, strategies,"
            " announced) VALUES (?, ?, ?, ?, ?, 1) ON CONFLICT (app_name) DO NOTHING RETURNING app_name",
            [app["app_name"], app["seen_at"], app["seen_at"], created_by, strategies],
        )
        if row is not None:
            created.append(row["app_name"])
            continue
        greatest = _GREATEST[conn.dialect]
        if app["strategies"] is None:
            conn.run(
                f"UPDATE client_applications SET updated_at = {greatest}(updated_at, ?) WHERE app_name = ?",
                [app["seen_at"], app["app_name"]],
            )
        else:
            conn.run(
                f"UPDATE client_applications SET updated_at = {greatest}(updated_at, ?), strategies = ?"
                " WHERE app_name = ?",
                [app["seen_at"], strategies, app["app_name"]],
            )
    return created


def add_instances(conn: Connection, instances: list[dict[str, Any]]) -> None:
    """Upsert SDK instances. Each: ``{"app_name", "instance_id", "environment", "sdk_version",
    "sdk_type", "client_ip", "seen_at"}``; a value given as None keeps the stored one, and
    ``last_seen`` only moves forward."""
    greatest = _GREATEST[conn.dialect]
    rows = sorted(
        (
            i["app_name"],
            i["instance_id"],
            i["environment"],
            i["sdk_version"],
            i["sdk_type"],
            i["client_ip"],
            i["seen_at"],
            i["seen_at"],
        )
        for i in instances
    )
    conn.run_many(
        "INSERT INTO client_instances (app_name, instance_id, environment, sdk_version, sdk_type, client_ip,"
        " created_at, last_seen) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (app_name, instance_id, environment) DO UPDATE SET"
        " sdk_version = coalesce(excluded.sdk_version, client_instances.sdk_version),"
        " sdk_type = coalesce(excluded.sdk_type, client_instances.sdk_type),"
        " client_ip = coalesce(excluded.client_ip, client_instances.client_ip),"
        f" last_seen = {greatest}(client_instances.last_seen, excluded.last_seen)",
        rows,
    )


def add_usage(conn: Connection, usage: Iterable[tuple[str, str, str]]) -> None:
    """Note that applications read projects in environments: ``(app_name, project,
    environment)`` rows (project ``*``: every project)."""
    conn.run_many(
        "INSERT INTO client_application_usage (app_name, project, environment) VALUES (?, ?, ?)"
        " ON CONFLICT (app_name, project, environment) DO NOTHING",
        sorted(set(usage)),
    )


def add_counts(conn: Connection, counts: list[tuple[str, str, str, str, int, int, dict[str, int]]]) -> None:
    """Add hourly counts: ``(feature_name, app_name, environment, hour, yes, no, variants)``
    rows, each summed into the stored row of its key (variants name by name), capped at
    :data:`COUNT_CAP`."""
    least = _LEAST[conn.dialect]
    rows = sorted(
        (flag, app, env, hour, min(yes, COUNT_CAP), min(no, COUNT_CAP), _compact(variants))
        for flag, app, env, hour, yes, no, variants in counts
    )
    conn.run_many(
        "INSERT INTO client_metrics (feature_name, app_name, environment, hour, yes, no, variants)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (feature_name, app_name, environment, hour) DO UPDATE SET"
        f" yes = {least}(client_metrics.yes + excluded.yes, {COUNT_CAP}),"
        f" no = {least}(client_metrics.no + excluded.no, {COUNT_CAP}),"
        f" variants = CASE WHEN excluded.variants = '{{}}' THEN client_metrics.variants"
        f" ELSE {_variants_sql(conn.dialect)} END",
        rows,
    )


def _compact(variants: dict[str, int]) -> str:
    return orjson.dumps({name: min(count, COUNT_CAP) for name, count in sorted(variants.items())}).decode()


def add_unknown_flags(conn: Connection, seen: list[tuple[str, str, str, str]]) -> None:
    """Note names reported in metrics that are no flag: ``(name, app_name, environment,
    seen_at)`` rows; ``last_seen_at`` only moves forward."""
    greatest = _GREATEST[conn.dialect]
    conn.run_many(
        "INSERT INTO unknown_flags (name, app_name, environment, last_seen_at) VALUES (?, ?, ?, ?)"
        " ON CONFLICT (name, app_name, environment) DO UPDATE SET"
        f" last_seen_at = {greatest}(unknown_flags.last_seen_at, excluded.last_seen_at)",
        sorted(seen),
    )


def mark_seen(conn: Connection, flags: dict[str, str], environments: dict[tuple[str, str], str]) -> None:
    """Move flags' ``lastSeenAt`` forward: ``flags`` maps a flag's name to when it was seen,
    ``environments`` a ``(flag, environment)`` pair to when it was seen there (a pair the flag
    does not have is skipped). An archived flag's 4.4 item is made again by the triggers of
    ``features`` and ``feature_environments``, which also move the content version."""
    conn.run_many(
        "UPDATE features SET last_seen_at = ? WHERE name = ? AND (last_seen_at IS NULL OR last_seen_at < ?)",
        [(at, name, at) for name, at in sorted(flags.items())],
    )
    conn.run_many(
        "UPDATE feature_environments SET last_seen_at = ?"
        " WHERE feature_name = ? AND name = ? AND (last_seen_at IS NULL OR last_seen_at < ?)",
        [(at, name, env, at) for (name, env), at in sorted(environments.items())],
    )


def prune(conn: Connection, *, counts_before: str, instances_before: str, unknown_before: str) -> None:
    """Delete hourly counts of hours before ``counts_before``, instances last seen before
    ``instances_before`` and unknown flags last seen before ``unknown_before`` (stored
    timestamps)."""
    conn.run("DELETE FROM client_metrics WHERE hour < ?", [counts_before])
    conn.run("DELETE FROM client_instances WHERE last_seen < ?", [instances_before])
    conn.run("DELETE FROM unknown_flags WHERE last_seen_at < ?", [unknown_before])
