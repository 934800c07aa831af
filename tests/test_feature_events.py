"""Every flag change appears as an event to a matching integration: the change
writes its delivery (the outbox row) in its own transaction for each matching integration,
and none for an integration whose filters do not match; and, through a real ``flagadmin
serve`` with its delivery workers, a local receiver gets the event."""

from __future__ import annotations

import http.server
import json
import threading
from typing import ClassVar

import pytest

from flagadmin.store import deliveries as store_deliveries

from flag_helpers import NAME, WRITES, events_since, features_path, last_event_id
from helpers import auth, wait_until

FLAG_EVENTS = [
    "feature-created",
    "feature-metadata-updated",
    "feature-stale-on",
    "feature-stale-off",
    "feature-environment-enabled",
    "feature-environment-disabled",
    "feature-strategy-add",
    "feature-archived",
    "feature-revived",
    "feature-deleted",
    "feature-favorited",
    "feature-unfavorited",
]

#: 100 listens to default's flag events; 101 to mobile's; 102 to other event types only;
#: 103 would match but is disabled.
INTEGRATIONS = {
    "integrations": [
        {"id": 100, "provider": "webhook", "events": FLAG_EVENTS, "projects": ["default"]},
        {"id": 101, "provider": "webhook", "events": FLAG_EVENTS, "projects": ["mobile"]},
        {"id": 102, "provider": "webhook", "events": ["user-created"], "projects": []},
        {"id": 103, "provider": "webhook", "enabled": False, "events": FLAG_EVENTS, "projects": []},
    ]
}


@pytest.mark.parametrize(("change", "given", "when", "types"), WRITES, ids=[w[0] for w in WRITES])
def test_write__matching_integration__one_delivery_per_event_and_none_for_the_others(
    client, alice, db, seed, change, given, when, types
):
    # Given
    seed(INTEGRATIONS)
    if given:
        given(client, alice)
    before = last_event_id(db)
    # When
    response = when(client, alice)
    # Then: the events, and for each a pending delivery to 100 only (favorites carry no
    # project, so they pass 101's project filter too, as on the reference server)
    assert response is None or response.status_code < 300, response.get_json()
    written = events_since(db, before)
    assert [e["type"] for e in written] == types
    for event in written:
        # (the demo's own integrations, ids 1 to 6, are left out of the comparison)
        targets = [
            d["integration_id"]
            for d in store_deliveries.of_event(db, event["id"])
            if d["integration_id"] >= 100
        ]
        expected = [100, 101] if event["project"] is None else [100]
        assert targets == expected, (event["type"], targets)
        assert all(d["state"] == "pending" for d in store_deliveries.of_event(db, event["id"]))


def test_write__flag_of_another_project__delivered_to_that_projects_integration_only(client, alice, db, seed):
    seed(INTEGRATIONS)
    before = last_event_id(db)
    client.post(features_path("mobile"), json={"name": NAME}, headers=auth(alice))
    (event,) = events_since(db, before)
    targets = [d["integration_id"] for d in store_deliveries.of_event(db, event["id"])]
    assert [t for t in targets if t >= 100] == [101]


def test_refused_write__no_event_and_no_delivery(client, victor, db, seed):
    seed(INTEGRATIONS)
    before = last_event_id(db)
    deliveries = db.value("SELECT count(*) FROM integration_deliveries")
    assert client.post(features_path("default"), json={"name": NAME}, headers=auth(victor)).status_code == 403
    assert last_event_id(db) == before
    assert db.value("SELECT count(*) FROM integration_deliveries") == deliveries


class _Receiver(http.server.BaseHTTPRequestHandler):
    """Answers every POST with 200 and keeps its JSON body."""

    received: ClassVar[list[dict]] = []

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        try:
            type(self).received.append(json.loads(body))
        except ValueError:
            type(self).received.append({"raw": body.decode("latin-1")})
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args) -> None:
        pass


def test_create_through_serve__local_receiver_gets_the_feature_created_event(
    live_server, seed, make_token, db
):
    # Given: a receiver on 127.0.0.1 and a webhook integration pointing at it; the demo's own
    # webhooks disabled, so that the server (private addresses allowed) sends to no other
    with db.write():
        db.run("UPDATE integrations SET enabled = 0")
    _Receiver.received = []
    receiver = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{receiver.server_address[1]}/hook"
        seed(
            {
                "integrations": [
                    {"id": 200, "provider": "webhook", "events": FLAG_EVENTS, "parameters": {"url": url}}
                ]
            }
        )
        token = make_token(user="alice")
        server = live_server(env={"FLAGADMIN_INTEGRATIONS_ALLOW_PRIVATE": "true"})
        # When
        reply = server.request(
            "POST",
            features_path("default"),
            {**auth(token), "Content-Type": "application/json"},
            json.dumps({"name": "delivered-flag"}).encode(),
        )
        assert reply.status == 201
        # Then: the receiver gets the event (off the request path: waited for)
        wait_until(lambda: _Receiver.received, timeout=30)
        event = _Receiver.received[0]
        assert event["type"] == "feature-created" and event["featureName"] == "delivered-flag"
    finally:
        receiver.shutdown()
        receiver.server_close()
