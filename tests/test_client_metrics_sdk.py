"""What SDKs report, against real ``flagadmin serve`` processes (both engines): the Python SDK
(UnleashClient) registers and its metrics move ``lastSeenAt``; a report is answered while the
database's write lock is held by someone else (the request writes nothing); a stop writes what
was reported since the last write; two servers on one database create a new application once
and add up their counts."""

from __future__ import annotations

import json
import logging
import threading

import pytest
from UnleashClient import UnleashClient

from flagadmin import events
from flagadmin.store import connect
from flagadmin.store.client_metrics import LOCK
from flagadmin.tokens import changes

from flag_helpers import flag_path, recorded
from helpers import auth, wait_until

#: Seconds between two writes of the servers started here.
FAST = {"FLAGADMIN_CLIENT_METRICS_FLUSH_INTERVAL": "0.1"}

REGISTRATION = {
    "appName": "sdk-app",
    "instanceId": "pod-1",
    "sdkVersion": "unleash-python-sdk:6.9.1",
    "strategies": ["default"],
    "started": "2026-11-27T10:00:00Z",
    "interval": 60,
}


@pytest.fixture
def client_token(db) -> str:
    secret, _ = changes.create_api_token(
        db, events.COMMAND_LINE, type="client", name="sdk", environment="development", projects=["*"]
    )
    return secret


def post(server, token: str, path: str, body: dict):
    return server.request(
        "POST", path, {**auth(token), "Content-Type": "application/json"}, json.dumps(body).encode()
    )


def development_seen(server, admin_token: str, project: str, name: str) -> str | None:
    body = server.request("GET", flag_path(project, name), auth(admin_token)).json()
    (development,) = [e for e in body["environments"] if e["name"] == "development"]
    return development["lastSeenAt"]


def metrics(app: str, toggles: dict) -> dict:
    return {
        "appName": app,
        "instanceId": "pod-1",
        "bucket": {"start": "2026-11-27T10:15:00Z", "stop": "2026-11-27T10:16:00Z", "toggles": toggles},
    }


def test_python_sdk__registers_and_its_metrics_move_lastseenat(
    live_server, client_token, admin_token, tmp_path
):
    server = live_server(env=FAST)
    before = development_seen(server, admin_token, "default", "checkout-v2")
    logging.getLogger("UnleashClient").setLevel(logging.ERROR)
    sdk = UnleashClient(
        url=f"{server.url}/api",
        app_name="python-sdk-app",
        instance_id="sdk-instance-1",
        custom_headers={"Authorization": client_token},
        refresh_interval=1,
        metrics_interval=1,
        cache_directory=str(tmp_path / "sdk-cache"),
    )
    sdk.initialize_client()
    try:
        for _ in range(3):
            sdk.is_enabled("checkout-v2")
    finally:
        sdk.destroy()  # sends what it counted
    seen = wait_until(
        lambda: (now := development_seen(server, admin_token, "default", "checkout-v2")) != before and now,
        timeout=30,
    )
    assert seen > (before or "")
    app = server.request("GET", "/api/admin/metrics/applications/python-sdk-app", auth(admin_token)).json()
    (instance,) = app["instances"]
    assert instance["instanceId"] == "sdk-instance-1"
    assert instance["sdkVersion"].startswith("unleash-python-sdk:")
    assert (instance["sdkType"], instance["environment"], instance["clientIp"]) == (
        "backend",
        "development",
        "127.0.0.1",
    )
    assert "checkout-v2" in [f["name"] for f in app["seenToggles"]]


def test_metrics__answered_while_another_holds_the_write_lock(live_server, client_token, database):
    """The request notes the report and answers: it never waits for a write. Another
    connection holds the lock of the writes of reports for the whole request (SQLite: the
    database's write lock; PostgreSQL: the advisory lock); what was reported is written once
    it lets go."""
    server = live_server(env=FAST)
    with connect(database) as holder, holder.write(LOCK):
        reply = post(
            server, client_token, "/api/client/metrics", metrics("locked-app", {"dark-mode": {"yes": 1}})
        )
        assert reply.status == 202
        assert post(server, client_token, "/api/client/register", REGISTRATION).status == 202
        assert holder.value("SELECT count(*) FROM client_applications") == 0
    with connect(database) as conn:
        assert wait_until(
            lambda: (
                conn.column("SELECT app_name FROM client_applications ORDER BY app_name")
                == ["locked-app", "sdk-app"]
            )
        )


def test_serve__stop__writes_what_was_reported_since_the_last_write(live_server, client_token, database):
    server = live_server(env={"FLAGADMIN_CLIENT_METRICS_FLUSH_INTERVAL": "300"})
    assert post(server, client_token, "/api/client/register", REGISTRATION).status == 202
    with connect(database) as conn:
        assert conn.value("SELECT count(*) FROM client_applications") == 0
    server.stop()
    assert server.process.returncode == 0
    with connect(database) as conn:
        assert conn.column("SELECT app_name FROM client_applications") == ["sdk-app"]
        assert len(recorded(conn, "application-created")) == 1


def test_two_servers__a_new_application_created_once__counts_added_up(live_server, client_token, database):
    servers = [live_server(env=FAST), live_server(env=FAST)]
    names = [f"shared-app-{i}" for i in range(10)]
    barrier = threading.Barrier(len(servers))
    statuses: list[int] = []

    def report(server) -> None:
        barrier.wait()
        for name in names:
            statuses.append(
                post(server, client_token, "/api/client/register", {**REGISTRATION, "appName": name}).status
            )
            statuses.append(
                post(
                    server,
                    client_token,
                    "/api/client/metrics",
                    metrics(name, {"checkout-v2": {"yes": 2, "no": 1}}),
                ).status
            )

    threads = [threading.Thread(target=report, args=(server,)) for server in servers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert statuses == [202] * (4 * len(names))
    with connect(database) as conn:
        wait_until(
            lambda: (
                conn.value(
                    "SELECT coalesce(sum(yes), 0) FROM client_metrics WHERE feature_name = 'checkout-v2'"
                )
                == 2 * 2 * len(names)
            ),
            timeout=30,
        )
        assert conn.value("SELECT sum(no) FROM client_metrics") == 2 * len(names)
        created = recorded(conn, "application-created", limit=100)
        assert sorted(e["data"]["appName"] for e in created) == sorted(names)
