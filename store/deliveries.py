"""The delivery outbox: which integrations must handle an event, written with the event."""

from __future__ import annotations

import secrets

from .engine import Connection

#: An integration configuration matches an event when it is enabled, lists the event's type,
#: and its project and environment filters let the event through: an event without a project
#: (or environment) passes every filter; an empty list or one starting with "*" means all
#: (the reference server's rules, evaluated against the configuration as it is right now).
_MATCHING = (
    "SELECT i.id FROM integrations i"
    " WHERE i.enabled = 1"
    " AND EXISTS (SELECT 1 FROM json_each(i.events) WHERE value = :type)"
    " AND (:project IS NULL OR json_array_length(i.projects) = 0"
    "      OR json_extract(i.projects, '$[0]') = '*'"
    "      OR EXISTS (SELECT 1 FROM json_each(i.projects) WHERE value = :project))"
    " AND (:environment IS NULL OR json_array_length(i.environments) = 0"
    "      OR json_extract(i.environments, '$[0]') = '*'"
    "      OR EXISTS (SELECT 1 FROM json_each(i.environments) WHERE value = :environment))"
    " ORDER BY i.id"
)


def matching_integrations(
    conn: Connection, event_type: str, project: str | None, environment: str | None
) -> list[int]:
    """Ids of the enabled integration configurations that must handle such an event."""
    return list(conn.values(_MATCHING, {"type": event_type, "project": project, "environment": environment}))


def enqueue(
    conn: Connection, event_id: int, event_type: str, project: str | None, environment: str | None, now: str
) -> int:
    """Write one pending delivery of event ``event_id`` per matching integration (call inside
    the event's write transaction), due at ``now``; return how many were written.

    Each delivery gets its ``webhook_id`` (``msg_`` + 32 hex digits), the same on every attempt.
    """
    targets = matching_integrations(conn, event_type, project, environment)
    conn.run_many(
        "INSERT INTO integration_deliveries (event_id, integration_id, webhook_id, next_attempt_at,"
        " created_at) VALUES (?, ?, ?, ?, ?)",
        [(event_id, target, f"msg_{secrets.token_hex(16)}", now, now) for target in targets],
    )
    return len(targets)
