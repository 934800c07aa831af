"""The system event log on the reference server's paths: ``GET /api/admin/events`` and
``GET /api/admin/events/{featureName}`` (spec 2.3, 6; Unleash 8.2.0), and what the log keeps
for them: each event's transaction group, the per-project counts, the upgrade that adds both.

Through HTTP on the demo database, on either engine (``pytest --engine=postgresql``). Events are
written by the changes themselves (flag creates over HTTP) and, where a test needs them at given
moments or of no project, by ``events.record`` with a clock of its own, as every change records
them. Every answer is checked against the reference's ``eventsSchema`` and
``featureEventsSchema``. The search (``/api/admin/search/events``) is test_event_search.py.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from flagadmin import events
from flagadmin.store import schema as store_schema

from flag_helpers import assert_reference, features_path
from helpers import ManualClock, auth

EVENTS = "/api/admin/events"

#: A moment of the tests' own events.
START = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def record(db, event_type: str, *, at: datetime = START, actor=events.ADMIN_TOKEN, **fields) -> int:
    """Record one event in a transaction of its own at ``at``, as a change records it; its id."""
    with db.write("test"):
        return events.record(db, event_type, actor, clock=ManualClock(at), **fields)


def record_many(db, specs: list[dict], *, start: datetime = START, step_s: float = 60.0) -> list[int]:
    """Record one event per spec (``type`` and ``events.record``'s keywords), ``step_s`` apart
    from ``start``, each in a transaction of its own; their ids, oldest first."""
    ids = []
    for i, spec in enumerate(specs):
        spec = dict(spec)
        ids.append(record(db, spec.pop("type"), at=start + timedelta(seconds=i * step_s), **spec))
    return ids


def log_ids(db, where: str = "1 = 1", params=()) -> list[int]:
    """The ids of the events that ``where`` matches, newest first (the log's order)."""
    return db.column(f"SELECT id FROM events WHERE {where} ORDER BY created_at DESC, id DESC", params)


def test_events__admin__newest_100_first__with_the_logs_total(client, admin_token, db):
    # Given: more than 100 events, of projects and of none
    record_many(
        db,
        [
            {"type": "feature-created", "project": "mobile", "feature_name": f"f{i}"}
            if i % 3
            else {"type": "user-created", "data": {"id": i}}
            for i in range(120)
        ],
    )
    # When
    response = client.get(EVENTS, headers=auth(admin_token))
    # Then
    assert response.status_code == 200
    body = response.get_json()
    assert_reference(body, "eventsSchema")
    assert body["version"] == 1
    assert [e["id"] for e in body["events"]] == log_ids(db)[:100]
    assert body["totalEvents"] == db.value("SELECT count(*) FROM events")
    assert {e["project"] for e in body["events"]} == {"mobile", None}


def test_events__project__that_projects_newest_events_and_its_total(client, admin_token, db):
    # Given
    record_many(db, [{"type": "feature-updated", "project": ("mobile", "growth")[i % 2]} for i in range(70)])
    # When
    body = client.get(f"{EVENTS}?project=growth", headers=auth(admin_token)).get_json()
    # Then: the newest 50 (the reference's server answers 50) and how many the project has
    assert_reference(body, "eventsSchema")
    assert [e["id"] for e in body["events"]] == log_ids(db, "project = 'growth'")[:50]
    assert body["totalEvents"] == 35
    # an unknown project has none; an empty one is the whole log
    unknown = client.get(f"{EVENTS}?project=nope", headers=auth(admin_token)).get_json()
    assert unknown == {"version": 1, "events": [], "totalEvents": 0}
    whole = client.get(f"{EVENTS}?project=", headers=auth(admin_token)).get_json()
    assert whole["totalEvents"] == db.value("SELECT count(*) FROM events")


def test_events__same_moment__newer_id_first(client, admin_token, db):
    # Given: three events at the same millisecond
    ids = [record(db, "feature-updated", project="mobile") for _ in range(3)]
    # When
    body = client.get(f"{EVENTS}?project=mobile", headers=auth(admin_token)).get_json()
    # Then
    assert [e["id"] for e in body["events"]][:3] == sorted(ids, reverse=True)


@pytest.mark.parametrize("who", ["alice", "victor"])
def test_events__not_root_admin__403_naming_admin(client, who, request):
    # An Editor and a Viewer alike: the reference asks ADMIN of this route
    response = client.get(EVENTS, headers=auth(request.getfixturevalue(who)))
    assert response.status_code == 403
    assert response.get_json()["name"] == "NoAccessError"
    assert "ADMIN" in response.get_json()["message"]


def test_events__admin_user__200(client, admin_user):
    assert client.get(EVENTS, headers=auth(admin_user)).status_code == 200


@pytest.mark.parametrize("path", [EVENTS, f"{EVENTS}/checkout-v2", "/api/admin/search/events"])
def test_event_log__no_token__401(client, path):
    response = client.get(path)
    assert response.status_code == 401
    assert response.get_json()["name"] == "AuthenticationRequired"


def test_events__unknown_parameter__400(client, admin_token):
    response = client.get(f"{EVENTS}?projekt=mobile", headers=auth(admin_token))
    assert response.status_code == 400
    assert "projekt" in response.get_json()["message"]


def test_events__every_kind_of_event_a_change_writes__valid_against_the_reference(
    client, admin_token, alice, db, assert_valid
):
    # Given: events made by changes over HTTP (a create, a switch, an archive)
    headers = auth(admin_token)
    assert (
        client.post(features_path("mobile"), json={"name": "from-http"}, headers=headers).status_code == 201
    )
    assert (
        client.post(
            f"{features_path('mobile')}/from-http/environments/production/on", headers=headers
        ).status_code
        == 200
    )
    assert client.delete(f"{features_path('mobile')}/from-http", headers=auth(alice)).status_code == 202
    record(
        db,
        "feature-tagged",
        project="mobile",
        feature_name="from-http",
        tags=[{"type": "simple", "value": "ab"}],
    )
    # When
    response = client.get(EVENTS, headers=headers)
    # Then
    assert_valid(response, EVENTS)
    assert_reference(response.get_json(), "eventsSchema")
    kinds = {e["type"] for e in response.get_json()["events"]}
    assert {"feature-created", "feature-environment-enabled", "feature-archived", "feature-tagged"} <= kinds


def test_feature_events__the_flags_newest_events_and_their_count(client, admin_token, db, assert_valid):
    # Given: events of two flags
    record_many(
        db,
        [
            {"type": "feature-updated", "project": "mobile", "feature_name": ("one", "two")[i % 3 == 0]}
            for i in range(80)
        ],
    )
    # When
    response = client.get(f"{EVENTS}/one", headers=auth(admin_token))
    # Then
    assert_valid(response, f"{EVENTS}/{{featureName}}")
    body = response.get_json()
    assert_reference(body, "featureEventsSchema")
    assert body["toggleName"] == "one"
    assert body["version"] == 1
    assert [e["id"] for e in body["events"]] == log_ids(db, "feature_name = 'one'")[:50]
    assert body["totalEvents"] == len(log_ids(db, "feature_name = 'one'"))
    assert {e["featureName"] for e in body["events"]} == {"one"}


def test_feature_events__a_flag_no_event_names__empty(client, admin_token):
    body = client.get(f"{EVENTS}/never-was", headers=auth(admin_token)).get_json()
    assert body == {"version": 1, "toggleName": "never-was", "events": [], "totalEvents": 0}


def test_feature_events__viewer__sees_the_events_of_her_projects_only(client, victor, kenji, db):
    # Given: one flag's events in mobile (victor's project), then in default after a move
    record_many(db, [{"type": "feature-updated", "project": "mobile", "feature_name": "moved"}] * 3)
    record_many(
        db,
        [{"type": "feature-project-change", "project": "default", "feature_name": "moved"}] * 2,
        start=START + timedelta(hours=1),
    )
    # When
    mine = client.get(f"{EVENTS}/moved", headers=auth(victor)).get_json()
    none = client.get(f"{EVENTS}/moved", headers=auth(kenji)).get_json()
    # Then
    assert_reference(mine, "featureEventsSchema")
    assert [e["project"] for e in mine["events"]] == ["mobile"] * 3
    assert mine["totalEvents"] == 3
    assert none["events"] == [] and none["totalEvents"] == 0


def test_feature_events__nul_in_the_name__400(client, admin_token):
    response = client.get(f"{EVENTS}/a%00b", headers=auth(admin_token))
    assert response.status_code == 400


@pytest.fixture
def kenji(make_token) -> str:
    """Personal token of kenji (Viewer, Member of payments and growth)."""
    return make_token(user="kenji")


# --- what the log keeps: transaction groups ---------------------------------------------------


def test_group__the_events_of_one_change__share_a_group(client, admin_token, db):
    # Given: one change over HTTP that writes two events (a strategy added, then the switch)
    headers = auth(admin_token)
    client.post(features_path("mobile"), json={"name": "grouped"}, headers=headers)
    before = db.value("SELECT max(id) FROM events")
    assert (
        client.post(
            f"{features_path('mobile')}/grouped/environments/production/on", headers=headers
        ).status_code
        == 200
    )
    # When
    body = client.get(f"{EVENTS}/grouped", headers=headers).get_json()
    # Then: the switch's events share one groupId, the create's is another
    switched = [e for e in body["events"] if e["id"] > before]
    created = [e for e in body["events"] if e["id"] <= before]
    assert len(switched) >= 2
    assert {e["groupId"] for e in switched} != {e["groupId"] for e in created}
    assert len({e["groupId"] for e in switched}) == 1
    assert {e["groupType"] for e in body["events"]} == {"transaction"}
    assert all(e["groupId"].isdigit() for e in body["events"])


def test_group__a_transaction_rolled_back__its_group_is_not_inherited(db):
    # Given: a transaction that records an event, then fails
    with pytest.raises(RuntimeError), db.write("test"):
        events.record(db, "feature-updated", events.ADMIN_TOKEN, project="mobile")
        raise RuntimeError("the change failed")
    # When: the next two changes on the same connection
    first = record(db, "feature-updated", project="mobile")
    second = record(db, "feature-updated", project="mobile")
    # Then: each has a group of its own
    groups = db.column("SELECT group_id FROM events WHERE id IN (?, ?) ORDER BY id", [first, second])
    assert None not in groups and groups[0] != groups[1]


def test_group__events_of_one_transaction__one_group(db):
    with db.write("test"):
        ids = [events.record(db, "feature-updated", events.ADMIN_TOKEN, project="mobile") for _ in range(3)]
    assert len(set(db.column(f"SELECT group_id FROM events WHERE id IN ({','.join('?' * 3)})", ids))) == 1


# --- what the log keeps: the per-project counts ------------------------------------------------


def counted(db) -> dict[tuple[str, str], int]:
    """``event_counts``' rows that count something."""
    return {
        (r["dimension"], r["value"]): r["events"]
        for r in db.all("SELECT * FROM event_counts WHERE events > 0")
    }


def actual(db) -> dict[tuple[str, str], int]:
    """What ``event_counts`` should hold, counted in the log."""
    found: dict[tuple[str, str], int] = {}
    for row in db.all("SELECT project, type, environment, created_by_user_id FROM events"):
        keys = [("project", row["project"] or ""), ("type", row["type"])]
        if row["environment"] is not None:
            keys.append(("environment", row["environment"]))
        if row["created_by_user_id"] is not None:
            keys.append(("creator", str(row["created_by_user_id"])))
        for key in keys:
            found[key] = found.get(key, 0) + 1
    return found


def test_event_counts__follow_every_insert_update_and_delete(client, admin_token, db):
    # Given: events written by changes and by hand
    client.post(features_path("growth"), json={"name": "counted"}, headers=auth(admin_token))
    record_many(db, [{"type": "user-created"}, {"type": "feature-updated", "project": "payments"}] * 3)
    assert counted(db) == actual(db)
    # When: an operator moves and deletes events by hand
    with db.write("test"):
        db.run("UPDATE events SET project = 'mobile', type = 'feature-stale-on' WHERE project = 'payments'")
        db.run("UPDATE events SET environment = 'development' WHERE environment = 'production'")
        db.run(
            "DELETE FROM events WHERE project IS NULL"
            " AND id NOT IN (SELECT event_id FROM integration_deliveries)"
        )
    # Then
    assert counted(db) == actual(db)


def test_upgrade_from_version_10__group_column_indexes_and_counts_made(
    engine, database, db, admin_token, client
):
    """The real 10 -> 11 upgrade of the log on either engine: a database without
    ``events.group_id``, the log's indexes and ``event_counts`` gets them, the counts filled
    from the events already there, the old events without a group."""
    # Given: events, then the database taken back to what version 10 had of the log
    record_many(db, [{"type": "feature-updated", "project": "mobile"}, {"type": "user-created"}] * 4)
    client.get(EVENTS, headers=auth(admin_token))
    on = " ON events" if engine == "postgresql" else ""
    with db.write("test"):
        for name in ("events_insert_count", "events_delete_count", "events_update_count"):
            db.run(f"DROP TRIGGER IF EXISTS {name}{on}")
        db.run("DROP TABLE event_counts")
        for name in (
            "events_created",
            "events_project",
            "events_feature",
            "events_type",
            "events_created_by",
            "events_environment",
            "events_group",
        ):
            db.run(f"DROP INDEX {name}")
        db.run("ALTER TABLE events DROP COLUMN group_id")
        if engine == "postgresql":
            db.run("UPDATE settings SET value = '10' WHERE key = 'schema_version'")
    if engine == "sqlite":
        db.run("PRAGMA user_version = 10")
    # When
    assert store_schema.ensure_schema(database) == 10
    # Then
    assert counted(db) == actual(db)
    assert db.value("SELECT count(*) FROM events WHERE group_id IS NOT NULL") == 0
    indexes = (
        "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name LIKE 'events\\_%' ESCAPE '\\'"
        if engine == "sqlite"
        else "SELECT count(*) FROM pg_indexes WHERE tablename = 'events' AND indexname LIKE 'events\\_%'"
        " AND indexname <> 'events_pkey'"
    )
    assert db.value(indexes) == 7
    new = record(db, "feature-updated", project="mobile", at=START + timedelta(days=1))
    assert db.value("SELECT group_id FROM events WHERE id = ?", [new]) is not None
    assert counted(db) == actual(db)
    body = client.get(EVENTS, headers=auth(admin_token)).get_json()
    assert_reference(body, "eventsSchema")
    assert "groupId" in body["events"][0] and "groupId" not in body["events"][1]
