"""The shapes flags take in answers and events, built as plain dicts with their keys in order.

- :func:`feature_wire`: one flag as the reference server's ``featureSchema`` (spec 2.6), keys in
  the order of ``blueprints.features.FlagSchema``;
- :func:`project_features_wire`: a project's live flags as ``projectFeaturesSchema``, keys in the
  order of ``blueprints.features.ProjectFlagsSchema`` (its environments: ``variantCount``
  before ``lastSeenAt``, as the reference server's openapi.json has them);
- :func:`event_data` and :func:`as_event_tags`: a flag and its tags as the reference server's
  feature events carry them (``data``/``preData``, ``tags``; spec 2.3, 6);
- :func:`strategy_wire`: one strategy of a flag environment as ``featureStrategySchema``, in
  answers and in the ``feature-strategy-*`` events' ``data``/``preData``; a flag's answer shows
  each environment's ``strategies`` in order. :func:`flexible_rollout_parameters` fills in
  flexibleRollout's parameters as the reference server does on every write of one.

The views' answers go through their response schemas' dump, which decides the keys sent.
Nothing here checks who may read what: :mod:`flagadmin.flags.reads` does, before it builds.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..store import Connection
from ..store import dependencies as store_dependencies
from ..store import features as store_features
from ..store import segments as store_segments
from ..store import strategies as store_strategies
from ..store import variants as store_variants


def event_data(flag: dict[str, Any]) -> dict[str, Any]:
    """A flag (``store.features``' row) as the reference server's feature events carry it
    (``data``/``preData``): ``{name, description, type, project, stale, createdAt,
    impressionData, archived[, archivedAt]}``."""
    data = {
        "name": flag["name"],
        "description": flag["description"],
        "type": flag["type"],
        "project": flag["project_id"],
        "stale": bool(flag["stale"]),
        "createdAt": flag["created_at"],
        "impressionData": bool(flag["impression_data"]),
        "archived": flag["archived_at"] is not None,
    }
    if flag["archived_at"] is not None:
        data["archivedAt"] = flag["archived_at"]
    return data


def as_event_tags(tags: Iterable[dict[str, str]]) -> list[dict[str, str]]:
    """``[{type, value}]`` (the store's shape) as events carry tags: ``[{value, type}]``."""
    return [{"value": tag["value"], "type": tag["type"]} for tag in tags]


def event_tags(conn: Connection, name: str) -> list[dict[str, str]]:
    """The tags of flag ``name``, read, as events carry them (``[{value, type}]``)."""
    return as_event_tags(store_features.tags(conn, name))


#: flexibleRollout's parameters when left out or empty, as the reference server fills them in
#: (``groupId``: the flag's name). An SDK evaluates a flexibleRollout without ``rollout`` as off.
FLEXIBLE_ROLLOUT_DEFAULTS: dict[str, str] = {"rollout": "100", "stickiness": "default"}


def flexible_rollout_parameters(parameters: dict[str, str], feature_name: str) -> dict[str, str]:
    """``parameters`` of a flexibleRollout of flag ``feature_name`` with ``rollout``,
    ``stickiness`` and ``groupId`` filled in where left out or empty
    (:data:`FLEXIBLE_ROLLOUT_DEFAULTS`, the flag's name)."""
    filled = dict(parameters)
    for name, default in (*FLEXIBLE_ROLLOUT_DEFAULTS.items(), ("groupId", feature_name)):
        if not filled.get(name):
            filled[name] = default
    return filled


def strategy_wire(row: dict[str, Any], segments: list[int]) -> dict[str, Any]:
    """A flag strategy (``store.strategies``' row) with the ids of the segments it uses, as the
    reference server's ``featureStrategySchema`` (keys in its order)."""
    return {
        "id": row["id"],
        "name": row["strategy_name"],
        "title": row["title"],
        "disabled": bool(row["disabled"]),
        "featureName": row["feature_name"],
        "sortOrder": row["sort_order"],
        "segments": segments,
        "constraints": row["constraints"],
        "variants": row["variants"],
        "parameters": row["parameters"],
    }


def _environment_wire(
    row: dict[str, Any],
    feature_name: str,
    strategies: list[dict[str, Any]],
    segments: dict[str, list[int]],
) -> dict[str, Any]:
    """A flag in one environment (``FlagEnvironmentSchema``'s keys, in its order), with its
    ``strategies`` (``store.strategies``' rows, in order) and their ``segments`` (by strategy id)."""
    return {
        "name": row["name"],
        "featureName": feature_name,
        "environment": row["name"],
        "type": row["type"],
        "enabled": bool(row["enabled"]),
        "sortOrder": row["sort_order"],
        "lastSeenAt": row["last_seen_at"],
        "strategies": [strategy_wire(strategy, segments.get(strategy["id"], [])) for strategy in strategies],
    }


def feature_wire(
    conn: Connection,
    flag: dict[str, Any],
    user_id: int | None,
    tags: list[dict[str, str]] | None = None,
    *,
    environments: list[dict[str, Any]] | None = None,
    favorite: bool | None = None,
    strategies: dict[str, list[dict[str, Any]]] | None = None,
) -> dict[str, Any]:
    """One flag (``store.features``' row) in the reference server's ``featureSchema`` shape,
    as the user ``user_id`` sees it (None: an admin token, whose favorites are none), its keys
    in the order of ``blueprints.features.FlagSchema``. ``tags``, ``environments`` (as
    :mod:`flagadmin.store.features` gives them), ``favorite`` and ``strategies`` (as
    ``store.strategies.of_flag`` gives them): when the caller has them at hand (it just wrote
    them); None: read."""
    name = flag["name"]
    wire: dict[str, Any] = {
        "name": name,
        "type": flag["type"],
        "description": flag["description"],
        "project": flag["project_id"],
        "archived": flag["archived_at"] is not None,
        "archivedAt": flag["archived_at"],
        "stale": bool(flag["stale"]),
        "favorite": store_features.is_favorite(conn, user_id, name) if favorite is None else favorite,
        "impressionData": bool(flag["impression_data"]),
        "createdAt": flag["created_at"],
    }
    if flag["created_by_user_id"] is not None:
        wire["createdBy"] = {
            "id": flag["created_by_user_id"],
            "name": flag["creator_name"] or "unknown",
            "imageUrl": flag["creator_image_url"] or "",
        }
    rows = store_features.environments(conn, name) if environments is None else environments
    by_environment = store_strategies.of_flag(conn, name) if strategies is None else strategies
    # the segments are read only when there is a strategy to show them on
    segments = store_segments.segment_ids_by_strategy(conn, name) if any(by_environment.values()) else {}
    wire["environments"] = [
        _environment_wire(row, name, by_environment.get(row["name"], []), segments) for row in rows
    ]
    wire["tags"] = store_features.tags(conn, name) if tags is None else tags
    variants = store_variants.by_environment(conn, name)
    for environment in wire["environments"]:
        environment["variants"] = variants.get(environment["name"], [])
    wire["dependencies"], wire["children"] = store_dependencies.of_flag(conn, name)
    return wire


def project_features_wire(flags: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """A project's live flags (``store.features.project_features``' rows, with ``favorite``,
    ``environments`` and ``tags``) in the reference server's ``projectFeaturesSchema`` shape,
    keys in the order of ``blueprints.features.ProjectFlagsSchema``."""
    return {
        "version": 2,
        "features": [
            {
                "name": flag["name"],
                "type": flag["type"],
                "description": flag["description"],
                "stale": bool(flag["stale"]),
                "favorite": flag["favorite"],
                "impressionData": bool(flag["impression_data"]),
                "createdAt": flag["created_at"],
                "environments": [
                    {
                        "name": row["name"],
                        "type": row["type"],
                        "enabled": bool(row["enabled"]),
                        "sortOrder": row["sort_order"],
                        "variantCount": row["variant_count"],
                        "lastSeenAt": row["last_seen_at"],
                    }
                    for row in flag["environments"]
                ],
                "tags": flag["tags"],
            }
            for flag in flags
        ],
    }
