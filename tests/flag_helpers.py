"""Helpers of the flag-change tests: the reference server's schemas (a copy kept in
``tests/reference/``), request bodies built from them, paths, and the events a change wrote."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from openapi_schema_validator import OAS30Validator

from flagadmin.store import events as store_events

from helpers import auth

#: The reference server's schemas that these tests use (Unleash 8.2.0's OpenAPI document).
REFERENCE = json.loads((Path(__file__).parent / "reference" / "unleash-schemas.json").read_text())
SCHEMAS = REFERENCE["components"]["schemas"]

DASHBOARD = "/api/admin/personal-dashboard"
ARCHIVE = "/api/admin/archive/features"
VALIDATE = "/api/admin/features/validate"


def features_path(project: str) -> str:
    return f"/api/admin/projects/{project}/features"


def flag_path(project: str, name: str) -> str:
    return f"/api/admin/projects/{project}/features/{name}"


def toggle_path(project: str, name: str, environment: str, state: str) -> str:
    return f"{flag_path(project, name)}/environments/{environment}/{state}"


def favorites_path(project: str, name: str) -> str:
    return f"{flag_path(project, name)}/favorites"


def revive_path(name: str) -> str:
    return f"/api/admin/archive/revive/{name}"


def delete_path(name: str) -> str:
    return f"/api/admin/archive/{name}"


def assert_reference(body: Any, schema: str) -> None:
    """``body`` validates against the reference server's schema named ``schema``."""
    OAS30Validator(
        {"$ref": f"#/components/schemas/{schema}", "components": REFERENCE["components"]}
    ).validate(body)


def example_of(schema: str | dict[str, Any], *, optional: bool = True) -> Any:
    """A value built from a reference schema's ``example`` annotations: every property (only
    the required ones when ``optional`` is False), each from its own example, its enum's first
    value, or its items' example."""
    node = SCHEMAS[schema] if isinstance(schema, str) else schema
    if "$ref" in node:
        return example_of(node["$ref"].rsplit("/", 1)[-1], optional=optional)
    if "example" in node:
        return copy.deepcopy(node["example"])
    if "enum" in node:
        return node["enum"][0]
    if node.get("type") == "array":
        return [example_of(node["items"], optional=optional)]
    if node.get("type") == "object" or "properties" in node:
        required = set(node.get("required", []))
        return {
            name: example_of(prop, optional=optional)
            for name, prop in node.get("properties", {}).items()
            if optional or name in required
        }
    return {"string": "text", "boolean": True, "integer": 1, "number": 1}.get(node.get("type"))


def recorded(db, event_type: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
    """The newest events (of ``event_type``), newest first, in their wire shape (spec 2.3)."""
    return store_events.latest(db, limit=limit, type=event_type)


def last_event_id(db) -> int:
    """The id of the newest event (0: none yet)."""
    return db.value("SELECT coalesce(max(id), 0) FROM events")


def events_since(db, after: int) -> list[dict[str, Any]]:
    """Events written after event ``after``, oldest first."""
    return list(reversed([e for e in recorded(db, limit=100) if e["id"] > after]))


# --- every change of the flag changes, ready to run -------------------------------------------------

#: The flag the changes of :data:`WRITES` make.
NAME = "outbox-flag"


def _create(client, token):
    client.post(features_path("default"), json={"name": NAME}, headers=auth(token))


def _archived(client, token):
    _create(client, token)
    client.delete(flag_path("default", NAME), headers=auth(token))


#: (the change, what to do first, the event types it writes)
WRITES: list[tuple[str, Callable | None, Callable, list[str]]] = [
    ("create", None, _create, ["feature-created"]),
    (
        "put",
        _create,
        lambda c, t: c.put(flag_path("default", NAME), json={"stale": True}, headers=auth(t)),
        ["feature-metadata-updated", "feature-stale-on"],
    ),
    (
        "patch",
        _create,
        lambda c, t: c.patch(
            flag_path("default", NAME),
            json=[{"op": "replace", "path": "/type", "value": "permission"}],
            headers=auth(t),
        ),
        ["feature-metadata-updated"],
    ),
    (
        "on",
        _create,
        lambda c, t: c.post(toggle_path("default", NAME, "production", "on"), headers=auth(t)),
        # a flag with no strategy there gets a flexibleRollout of 100 % first
        ["feature-strategy-add", "feature-environment-enabled"],
    ),
    (
        "off",
        lambda c, t: (
            _create(c, t),
            c.post(toggle_path("default", NAME, "production", "on"), headers=auth(t)),
        ),
        lambda c, t: c.post(toggle_path("default", NAME, "production", "off"), headers=auth(t)),
        ["feature-environment-disabled"],
    ),
    (
        "archive",
        _create,
        lambda c, t: c.delete(flag_path("default", NAME), headers=auth(t)),
        ["feature-archived"],
    ),
    ("revive", _archived, lambda c, t: c.post(revive_path(NAME), headers=auth(t)), ["feature-revived"]),
    ("delete", _archived, lambda c, t: c.delete(delete_path(NAME), headers=auth(t)), ["feature-deleted"]),
    (
        "favorite",
        _create,
        lambda c, t: c.post(favorites_path("default", NAME), headers=auth(t)),
        ["feature-favorited"],
    ),
    (
        "unfavorite",
        lambda c, t: (_create(c, t), c.post(favorites_path("default", NAME), headers=auth(t))),
        lambda c, t: c.delete(favorites_path("default", NAME), headers=auth(t)),
        ["feature-unfavorited"],
    ),
]
