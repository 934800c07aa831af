"""System events (spec 2.3, 6): every change writes its event in its own transaction, with its
deliveries to the integrations whose filters match (the reference server's rules)."""

from __future__ import annotations

import contextlib
import re
import threading

import orjson
import pytest

from flagadmin import events
from flagadmin.store import connect, deliveries, tokens, users
from flagadmin.store import events as store_events
from flagadmin.store import integrations as store_integrations
from flagadmin.store.tokens import Caller

from helpers import auth


def record(db, event_type: str = "feature-created", **fields) -> int | None:
    with db.write():
        return events.record(db, event_type, events.COMMAND_LINE, **fields)


def delivered_to(db, event_id: int) -> set[int]:
    return {d["integration_id"] for d in deliveries.of_event(db, event_id)}


def enable_demo_webhooks(db) -> None:
    """Enable the demo's webhooks 1 to 4 (it ships 1, 2 and 4 disabled until their URLs are
    set): nothing is sent here, no worker runs; only the outbox rows are looked at."""
    with db.write():
        db.run("UPDATE integrations SET enabled = 1 WHERE id IN (1, 2, 3, 4)")


def test_record__in_a_transaction_that_rolls_back__neither_event_nor_delivery(db):
    # Given
    before = db.value("SELECT count(*) FROM events"), db.value("SELECT count(*) FROM integration_deliveries")
    # When: the change fails after recording its event
    with pytest.raises(RuntimeError, match="the change failed"), db.write():
        events.record(db, "feature-created", events.COMMAND_LINE, project="default", data={"name": "x"})
        raise RuntimeError("the change failed")
    # Then
    after = db.value("SELECT count(*) FROM events"), db.value("SELECT count(*) FROM integration_deliveries")
    assert after == before


def test_record__committed__event_in_wire_shape_with_its_deliveries(db):
    # Given
    enable_demo_webhooks(db)
    # When
    event_id = record(db, project="default", environment="production", feature_name="f", data={"name": "f"})
    # Then
    event = store_events.get(db, event_id)
    assert event == {
        "id": event_id,
        "createdAt": event["createdAt"],
        "type": "feature-created",
        "createdBy": "flagadmin-cli",
        "createdByUserId": None,
        "environment": "production",
        "project": "default",
        "featureName": "f",
        "data": {"name": "f"},
        "preData": None,
        "tags": None,
    }
    # the demo's webhooks 1, 2, 3 take every type and 4 takes feature events of default;
    # 5 (teamsworkflow) and 6 (slack-app) are the reference server's, never delivered to
    assert delivered_to(db, event_id) == {1, 2, 3, 4}
    assert {d["state"] for d in deliveries.of_event(db, event_id)} == {"pending"}


def test_record__deliveries__each_its_own_webhook_id_in_the_standard_webhooks_form(db):
    """The outbox rows are written by the database in one statement, each with a
    ``webhook-id`` of its own: ``msg_`` + 32 lower-case hex digits (Standard Webhooks)."""
    enable_demo_webhooks(db)
    made = [
        d["webhook_id"]
        for event_id in (record(db, project="default", data={"n": n}) for n in range(3))
        for d in deliveries.of_event(db, event_id)
    ]
    assert len(made) == 3 * 4  # webhooks 1-4 take feature-created events of default
    assert all(re.fullmatch(r"msg_[0-9a-f]{32}", webhook_id) for webhook_id in made), made
    assert len(set(made)) == len(made)
    assert deliveries.new_webhook_id() not in made
    assert re.fullmatch(r"msg_[0-9a-f]{32}", deliveries.new_webhook_id())


def test_record__data_equal_to_pre_data__nothing_recorded(db):
    before = db.value("SELECT count(*) FROM events")
    assert record(db, "feature-metadata-updated", data={"a": 1}, pre_data={"a": 1}) is None
    assert db.value("SELECT count(*) FROM events") == before


def test_record__outside_a_transaction_or_unknown_type__refused(db):
    with pytest.raises(RuntimeError):
        events.record(db, "feature-created", events.COMMAND_LINE)
    with pytest.raises(ValueError, match="spec section 6"), db.write():
        events.record(db, "feature-link-added", events.COMMAND_LINE)


def test_record__after_the_newest_event_is_deleted__ids_still_grow(db):
    first = record(db)
    with db.write():
        db.run("DELETE FROM integration_deliveries WHERE event_id = ?", [first])
        db.run("DELETE FROM events WHERE id = ?", [first])
    assert record(db) > first


def test_record__while_another_connection_deletes_a_matching_integration__no_delivery_no_error(db, database):
    """A change recorded while another connection (another process, on PostgreSQL)
    deletes an integration that matches it waits for the delete, then owes that integration
    nothing: no outbox row pointing at a deleted configuration, no foreign-key failure."""
    # Given: another connection deleting webhook 1 (which takes every event type), not yet
    # committed
    enable_demo_webhooks(db)
    deleter = connect(database)
    deleting = contextlib.ExitStack()
    deleting.enter_context(deleter.write("integrations"))
    assert store_integrations.delete(deleter, 1)
    outcome: dict = {}

    def change() -> None:
        try:
            with connect(database) as conn:
                outcome["event"] = record(conn, project="default", data={"name": "racing"})
        except Exception as exc:  # the failure under test, reported to the main thread
            outcome["error"] = exc

    changer = threading.Thread(target=change)
    changer.start()
    # When: the change is under way (it waits for the delete), and the delete commits
    changer.join(0.5)
    deleting.close()
    deleter.close()
    changer.join(10)
    # Then: the change went through, owing deliveries to the other webhooks only
    assert "error" not in outcome, outcome
    assert delivered_to(db, outcome["event"]) == {2, 3, 4}
    assert db.value("SELECT count(*) FROM integrations WHERE id = 1") == 0


def test_actor__of_callers__user_for_personal_tokens_admin_for_admin_tokens():
    assert events.Actor.of_caller(Caller(1, "admin", None, "Admin")) == events.Actor("admin", -42)
    assert events.Actor.of_caller(Caller(2, "personal", 3, "Editor", "alice")) == events.Actor("alice", 3)


# --- which integrations an event goes to ------------------------------------------------


@pytest.fixture
def filtered(seed):
    """Webhooks 101-107 with filters, all taking feature-created only."""
    webhook = {"provider": "webhook", "events": ["feature-created"], "parameters": {"url": "http://x.test/"}}
    seed(
        {
            "integrations": [
                {**webhook, "id": 101, "projects": ["mobile"]},
                {**webhook, "id": 102, "projects": ["*"], "environments": ["*"]},
                {**webhook, "id": 103, "projects": [], "environments": ["production"]},
                {**webhook, "id": 104, "enabled": False},
                {**webhook, "id": 105, "events": ["feature-archived"]},
                {**webhook, "id": 106, "provider": "datadog"},
                {**webhook, "id": 107, "projects": ["web", "*"]},
            ]
        }
    )
    return {101, 102, 103, 104, 105, 106, 107}


@pytest.mark.parametrize(
    ("project", "environment", "expected"),
    [
        ("mobile", "production", {101, 102, 103}),
        ("default", "development", {102}),
        ("web", None, {102, 103, 107}),
        (None, None, {101, 102, 103, 107}),  # no project, no environment: every filter passes
        (None, "development", {101, 102, 107}),
    ],
)
def test_matching__project_and_environment_filters__as_the_reference_server(
    db, filtered, project, environment, expected
):
    event_id = record(db, project=project, environment=environment)
    assert delivered_to(db, event_id) & filtered == expected


def test_matching__type_not_listed_disabled_or_foreign_provider__never(db, filtered):
    event_id = record(db, "feature-archived", project="mobile")
    assert delivered_to(db, event_id) & filtered == {105}


# --- events of the changes that exist today -------------------------------------------


def newest(db) -> dict:
    return store_events.latest(db, limit=1)[0]


def test_create_token__admin__api_token_created_by_the_command_line_without_the_secret(invoke, database):
    # When
    result = invoke("create-token", "--admin", "--name", "ci", db=database)
    # Then
    token = result.output.strip()
    from flagadmin.store import connect

    with connect(database) as db:
        event = newest(db)
        stored_digest = db.value("SELECT digest FROM api_tokens ORDER BY id DESC LIMIT 1")
    assert event["type"] == "api-token-created"
    assert (event["createdBy"], event["createdByUserId"]) == ("flagadmin-cli", None)
    assert event["data"] == {
        "id": event["data"]["id"],
        "name": "ci",
        "kind": "admin",
        "userId": None,
        "username": None,
        "createdAt": event["data"]["createdAt"],
        "expiresAt": None,
    }
    text = orjson.dumps(event).decode()
    assert token not in text and stored_digest not in text


def test_create_and_revoke_token__personal__pat_created_then_pat_deleted_once(invoke, database):
    from flagadmin.store import connect

    # Given
    invoke("create-token", "--user", "alice", "--expires-in", "P30D", db=database)
    with connect(database) as db:
        created = newest(db)
    token_id = created["data"]["id"]
    # When: revoked twice
    invoke("revoke-token", str(token_id), db=database)
    invoke("revoke-token", str(token_id), db=database)
    # Then
    with connect(database) as db:
        latest = store_events.latest(db, limit=3)
    assert created["type"] == "pat-created"
    assert created["data"]["username"] == "alice" and created["data"]["expiresAt"]
    assert [e["type"] for e in latest[:2]] == ["pat-deleted", "pat-created"]
    assert latest[0]["data"]["id"] == token_id


def test_revoke_token__admin__api_token_deleted_with_pre_data(invoke, database):
    from flagadmin.store import connect

    invoke("create-token", "--admin", db=database)
    with connect(database) as db:
        token_id = newest(db)["data"]["id"]
    invoke("revoke-token", str(token_id), db=database)
    with connect(database) as db:
        event = newest(db)
    assert event["type"] == "api-token-deleted"
    assert event["data"] is None and event["preData"]["id"] == token_id


def test_seed__a_bootstrap__writes_no_events(invoke):
    result = invoke("seed")
    assert result.exit_code == 0
    from flagadmin.store import connect

    with connect(invoke.db) as db:
        assert db.value("SELECT count(*) FROM events") == 0


def test_serve__fixed_admin_token__api_token_created_once(live_server, database):
    # Given / When: two starts with the same FLAGADMIN_ADMIN_TOKEN
    admin = tokens.new_admin_token()
    env = {"FLAGADMIN_ADMIN_TOKEN": admin, "FLAGADMIN_DELIVERY_WORKERS": "0"}
    live_server(env=env).stop()
    server = live_server(env=env)
    # Then: one event, and the token works
    from flagadmin.store import connect

    with connect(database) as db:
        types = [e["type"] for e in store_events.latest(db, limit=50)]
    assert types.count("api-token-created") == 1
    assert server.request("GET", "/api/admin/addons", auth(admin)).status == 200


def test_api_change__personal_token__event_names_the_user(client, db, make_token):
    # Given: an Admin user's personal token
    token = make_token(user="carol")
    carol = users.id_by_username(db, "carol")
    # When
    client.delete("/api/admin/addons/6", headers=auth(token))
    # Then
    event = newest(db)
    assert (event["type"], event["createdBy"], event["createdByUserId"]) == (
        "addon-config-deleted",
        "carol",
        carol,
    )
