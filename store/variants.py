"""A flag's variants per environment (table ``feature_variants``), both engines.

One row per flag and environment that has variants ever set: ``variants`` holds the stored
list as compact JSON text (``rules.variants.normalise``'s: sorted by name, weights summing to
1000; ``[]`` once emptied). A flag environment without a row has no variants.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

from .engine import Connection


def of_environment(conn: Connection, feature_name: str, environment: str) -> list[dict[str, Any]]:
    """The variants of the flag in ``environment`` (``[]``: none)."""
    text = conn.value(
        "SELECT variants FROM feature_variants WHERE feature_name = ? AND environment = ?",
        [feature_name, environment],
    )
    return [] if text is None else orjson.loads(text)


def by_environment(conn: Connection, feature_name: str) -> dict[str, list[dict[str, Any]]]:
    """``{environment: variants}`` of the flag, for the environments that have a row."""
    rows = conn.all(
        "SELECT environment, variants FROM feature_variants WHERE feature_name = ?", [feature_name]
    )
    return {row["environment"]: orjson.loads(row["variants"]) for row in rows}


def any_set(conn: Connection, feature_name: str) -> bool:
    """True when the flag has variants (a non-empty list) in some environment."""
    return (
        conn.value(
            "SELECT 1 FROM feature_variants WHERE feature_name = ? AND variants <> '[]' LIMIT 1",
            [feature_name],
        )
        is not None
    )


def set_variants(conn: Connection, feature_name: str, environments: Iterable[str], variants: str) -> None:
    """Make ``variants`` (compact JSON text of a normalised list) the flag's variants in each of
    ``environments`` (environments of the flag); call inside a write transaction."""
    conn.run_many(
        "INSERT INTO feature_variants (feature_name, environment, variants) VALUES (?, ?, ?)"
        " ON CONFLICT (feature_name, environment) DO UPDATE SET variants = excluded.variants",
        [(feature_name, environment, variants) for environment in environments],
    )


def delete_flag(conn: Connection, feature_name: str) -> None:
    """Forget the flag's variants in every environment (before the flag is deleted for good);
    call inside a write transaction."""
    conn.run("DELETE FROM feature_variants WHERE feature_name = ?", [feature_name])


def delete_environment(conn: Connection, environment: str) -> None:
    """Forget every flag's variants in ``environment`` (before the environment is removed);
    call inside a write transaction."""
    conn.run("DELETE FROM feature_variants WHERE environment = ?", [environment])
