"""The shapes flags take in answers and events, built as plain dicts with their keys in order.

- :func:`feature_wire`: one flag as the reference server's ``featureSchema`` (spec 2.6), keys in
  the order of ``blueprints.features.FlagSchema``;
- :func:`project_features_wire`: a project's live flags as ``projectFeaturesSchema``, keys in the
  order of ``blueprints.features.ProjectFlagsSchema`` (its environments: ``variantCount``
  before ``lastSeenAt``, as the reference server's openapi.json has them);
- :func:`event_data` and :func:`as_event_tags`: a flag and its tags as the reference server's
  feature events carry them (``data``/``preData``, ``tags``; spec 2.3, 6).

The views' answers go through their response schemas' dump, which decides the keys sent.
Nothing here checks who may read what: :mod:`flagadmin.flags.reads` does, before it builds.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..store import Connection
from ..store import dependencies as store_dependencies
from ..store import features as store_features
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


def _environment_wire(row: dict[str, Any], feature_name: str) -> dict[str, Any]:
    """A flag in one environment (``FlagEnvironmentSchema``'s keys, in its order)."""
    return {
        "name": row["name"],
        "featureName": feature_name,
        "environment": row["name"],
        "type": row["type"],
        "enabled": bool(row["enabled"]),
        "sortOrder": row["sort_order"],
        "lastSeenAt": row["last_seen_at"],
    }


def feature_wire(
    conn: Connection,
    flag: dict[str, Any],
    user_id: int | None,
    tags: list[dict[str, str]] | None = None,
    *,
    environments: list[dict[str, Any]] | None = None,
    favorite: bool | None = None,
) -> dict[str, Any]:
    """One flag (``store.features``' row) in the reference server's ``featureSchema`` shape,
    as the user ``user_id`` sees it (None: an admin token, whose favorites are none), its keys
    in the order of ``blueprints.features.FlagSchema``. ``tags``, ``environments`` (as
    :mod:`flagadmin.store.features` gives them) and ``favorite``: when the caller has them at
    hand (it just wrote them); None: read."""
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
    wire["environments"] = [_environment_wire(row, name) for row in rows]
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
                        "variantCount": 0,
                        "lastSeenAt": row["last_seen_at"],
                    }
                    for row in flag["environments"]
                ],
                "tags": flag["tags"],
            }
            for flag in flags
        ],
    }
