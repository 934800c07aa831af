"""The demo dataset shows the product working out of the box: ``flagadmin serve --demo`` with
the default settings (private addresses refused), then a flag change, puts a row in 4.1's log
that says what happened and why; its templates use only what an event has; its environment
``production`` is of the type ``production``; and nothing of it is sent to a fixed port of the
machine the tests run on. ``serve --demo`` prints an admin token, a client token and a frontend
token for ``development``, each shown once.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import urllib.parse
from pathlib import Path

import pytest

from flagadmin.integrations import address_guard
from flagadmin.records import EventSchema
from flagadmin.seed.documents import demo_files
from flagadmin.store import connect, tokens
from flagadmin.timestamps import now_rfc3339

from flag_helpers import features_path
from helpers import FLAGADMIN, LiveServer, auth, wait_until
from receiver import point_demo_webhooks_at

#: The demo's webhook that is enabled: a port of this machine, which the default guard refuses.
SHOWCASE = 3


@pytest.fixture(scope="module")
def demo() -> dict:
    (path,) = [p for p in demo_files() if p.name == "demo.json"]
    return json.loads(Path(path).read_text())


def webhooks(demo: dict) -> list[dict]:
    return [i for i in demo["integrations"] if i["provider"] == "webhook"]


def test_demo__production_is_a_production_environment(db):
    types = {row["name"]: row["type"] for row in db.all("SELECT name, type FROM environments")}
    assert types == {"development": "development", "production": "production"}


def test_demo__templates_use_only_what_an_event_has(demo):
    """Every tag of every body template names ``eventJson`` or a field of the event (spec
    2.3), and renders to what its log shows for each event it handled."""
    fields = set(EventSchema().fields)
    for integration in webhooks(demo):
        template = integration["parameters"].get("bodyTemplate")
        if not template:
            continue
        for name in re.findall(r"\{\{[#^/&{]?\s*([^}\s]+)\s*\}?\}\}", template):
            head, _, rest = name.partition(".")
            assert name == "eventJson" or (head == "event" and rest.split(".")[0] in fields), name
        rows = [r for r in demo["integrationEvents"] if r["integrationId"] == integration["id"]]
        assert rows
        for row in rows:
            assert row["event"]["type"] in row["details"]["body"]
            assert (
                f"flag {row['event']['featureName']} in project {row['event']['project']}"
                in (row["details"]["body"])
            )


def test_demo__webhooks_send_to_no_fixed_port__only_the_refused_one_is_enabled(demo):
    """The disabled webhooks name the documentation host hooks.example.com (RFC 2606) until
    their user sets a URL; the one enabled names this machine, which the default guard refuses,
    so that a change shows a delivery and the guard's reason without sending anything."""
    guard = address_guard.AddressGuard(allow_private=False, allowed_hosts=frozenset())
    for integration in webhooks(demo):
        url = integration["parameters"]["url"]
        if integration["enabled"]:
            assert integration["id"] == SHOWCASE
            with pytest.raises(address_guard.Blocked):
                guard.check_url(url)
        else:
            assert urllib.parse.urlsplit(url).hostname == "hooks.example.com", url
    for integration in demo["integrations"]:
        assert "9099" not in json.dumps(integration)


def test_demo__each_webhook_as_the_api_shows_it__saved_back_with_a_new_url(make_app, admin_token, db):
    """What a user does first: set a demo webhook's URL, sending the rest back as shown
    (events, filters, masked parameters). Nothing is sent: no worker runs, no test delivery."""
    client = make_app(integrations_allowed_hosts=("127.0.0.1",)).test_client()
    assert point_demo_webhooks_at(client, admin_token, "http://127.0.0.1/saved-never-sent") == [1, 2, 3, 4]
    stored = db.all("SELECT id, parameters FROM integrations WHERE id IN (1, 2, 3, 4)")
    assert all(json.loads(row["parameters"])["url"] == "http://127.0.0.1/saved-never-sent" for row in stored)


def test_serve_demo__a_flag_change__a_row_in_the_log_saying_why_nothing_was_sent(empty_database, tmp_path):
    # Given: `flagadmin serve --demo` with the default settings (private addresses refused)
    env = {name: "" for name in os.environ if name.startswith("FLAGADMIN_INTEGRATIONS_")}
    server = LiveServer(empty_database, env=env, args=("--demo",), log_dir=tmp_path)
    try:
        token = subprocess.run(
            [*FLAGADMIN, "create-token", "--admin", "--db", empty_database],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        log = f"/api/admin/addons/{SHOWCASE}/events?limit=10"
        # When: a flag is created
        reply = server.request(
            "POST",
            features_path("default"),
            {**auth(token), "Content-Type": "application/json"},
            json.dumps({"name": "demo-delivery"}).encode(),
        )
        assert reply.status == 201, reply.body

        # Then: the enabled demo webhook's log gets a row for it, off the request path (the
        # token's api-token-created may come before it)
        def found() -> dict | None:
            rows = json.loads(server.request("GET", log, auth(token)).body)["integrationEvents"]
            return next((r for r in rows if r["event"].get("featureName") == "demo-delivery"), None)

        row = wait_until(found, timeout=30)
        assert row["event"]["type"] == "feature-created"
        assert row["state"] == "failed"
        assert row["stateDetails"].startswith("Webhook request failed: blocked address: 127.0.0.1 ")
        assert "FLAGADMIN_INTEGRATIONS_ALLOW_PRIVATE=true" in row["stateDetails"]
        assert row["stateDetails"].endswith("Not retried: the address is not allowed.")
        assert ".." not in row["stateDetails"]
        # the disabled ones owe nothing
        with connect(empty_database) as conn:
            owed = list(
                conn.values(
                    "SELECT integration_id FROM integration_deliveries WHERE event_id = ?",
                    [row["event"]["id"]],
                )
            )
        assert owed == [SHOWCASE]
    finally:
        server.stop()


def test_serve_demo__prints_an_admin_a_client_and_a_frontend_token__each_works_where_it_belongs(
    empty_database, tmp_path
):
    # When: the first start of `flagadmin serve --demo` (click.echo flushes each line)
    server = LiveServer(
        empty_database, env={"FLAGADMIN_DELIVERY_WORKERS": "0"}, args=("--demo",), log_dir=tmp_path
    )
    try:
        printed = server.log.read_text()
        # Then: three tokens, in the reference server's formats
        admin = re.search(r"Admin API token \(shown once[^:]*\): (\S+)", printed).group(1)
        client = re.search(
            r"Client API token [^\n]* for development \(shown once[^:]*\): (\S+)", printed
        ).group(1)
        frontend = re.search(
            r"Frontend API token [^\n]* for development \(shown once[^:]*\): (\S+)", printed
        ).group(1)
        assert re.fullmatch(r"\*:\*\.[0-9a-f]{64}", admin)
        assert re.fullmatch(r"\*:development\.[0-9a-f]{56}", client)
        assert re.fullmatch(r"\*:development\.[0-9a-f]{56}", frontend)
        # ... each of its kind, reading development and every project
        with connect(empty_database) as conn:
            for secret, kind in ((client, "client"), (frontend, "frontend")):
                caller = tokens.find_caller(conn, secret, now_rfc3339())
                assert (caller.kind, caller.environment, caller.projects) == (kind, "development", None)
        # ... the admin token on the admin API; the SDK tokens refused there
        assert server.request("GET", "/api/admin/ui-config", auth(admin)).status == 200
        for secret in (client, frontend):
            assert server.request("GET", "/api/admin/ui-config", auth(secret)).status == 403
    finally:
        server.stop()
    # And: a second start prints none again (each is shown once)
    again = LiveServer(
        empty_database, env={"FLAGADMIN_DELIVERY_WORKERS": "0"}, args=("--demo",), log_dir=tmp_path
    )
    try:
        assert "shown once" not in again.log.read_text()
    finally:
        again.stop()
