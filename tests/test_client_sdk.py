"""The Python SDK (UnleashClient from PyPI, unmodified) against a live ``flagadmin serve`` with
a client token: it starts, evaluates flags with strategies, constraints, segments, strategy and
flag variants and dependencies exactly as the rules written through the admin API say, gets
304 while nothing changes (counted in the server's access log) and sees a change after its
next poll.

Every wait is bounded (:func:`helpers.wait_until`); the SDK polls every second. Run on either
engine (``--engine=postgresql``).
"""

from __future__ import annotations

import re

import pytest
from UnleashClient import UnleashClient

from flagadmin import events
from flagadmin.store.tokens import new_admin_token
from flagadmin.tokens.changes import create_api_token

from helpers import Reply, auth, wait_until

PROJECT = "/api/admin/projects/default"
FEATURES_LINE = re.compile(r'"GET /api/client/features" (\d{3}) ')

COUNTRY = {"contextName": "country", "operator": "IN", "values": ["NO", "SE"]}
BETA = {"contextName": "beta", "operator": "IN", "values": ["true"]}
VERSION = {"contextName": "appVersion", "operator": "SEMVER_GTE", "value": "2.0.0"}
BLUE = {"name": "blue", "weight": 1000, "weightType": "variable", "stickiness": "default",
        "payload": {"type": "string", "value": "b"}}  # fmt: skip
RED = {"name": "red", "weight": 1000, "weightType": "variable", "stickiness": "default",
       "payload": {"type": "json", "value": '{"shade": 7}'}}  # fmt: skip


class Admin:
    """The admin API of a live server, through an admin token; every write must succeed."""

    def __init__(self, server, token: str):
        self.server, self.token = server, token

    def send(self, method: str, path: str, body=None) -> Reply:
        import orjson

        headers = {**auth(self.token), "Content-Type": "application/json"}
        reply = self.server.request(method, path, headers, None if body is None else orjson.dumps(body))
        assert 200 <= reply.status < 300, (method, path, reply.status, reply.body[:500])
        return reply

    def flag(self, name: str, *strategies: dict, on: bool = True) -> None:
        self.send("POST", f"{PROJECT}/features", {"name": name, "type": "release"})
        for strategy in strategies:
            self.strategy(name, strategy)
        if on:
            self.switch(name, True)

    def strategy(self, flag: str, strategy: dict) -> dict:
        body = {"parameters": {}, "constraints": [], **strategy}
        return self.send(
            "POST", f"{PROJECT}/features/{flag}/environments/development/strategies", body
        ).json()

    def switch(self, flag: str, on: bool) -> None:
        self.send("POST", f"{PROJECT}/features/{flag}/environments/development/{'on' if on else 'off'}")

    def strategy_type(self, name: str, parameters: list[dict]) -> None:
        known = {s["name"] for s in self.send("GET", "/api/admin/strategies").json()["strategies"]}
        if name not in known:
            self.send("POST", "/api/admin/strategies", {"name": name, "parameters": parameters})


@pytest.fixture
def sdk_setup(live_server, db):
    """A live server with the access log, its admin API, and a client token of default in
    development."""
    admin_token = new_admin_token()
    server = live_server(
        args=("--access-log",), env={"FLAGADMIN_ADMIN_TOKEN": admin_token, "FLAGADMIN_DELIVERY_WORKERS": "0"}
    )
    secret, _ = create_api_token(
        db,
        events.COMMAND_LINE,
        type="client",
        name="python-sdk",
        environment="development",
        projects=["default"],
    )
    return server, Admin(server, admin_token), secret


@pytest.fixture
def start_sdk(tmp_path):
    """``start_sdk(server, token)``: an initialised UnleashClient polling every second, its
    metrics off (their own tests are the metrics'); destroyed at the end."""
    started: list[UnleashClient] = []

    def start(server, token: str, wait_for: str) -> UnleashClient:
        client = UnleashClient(
            url=f"{server.url}/api",
            app_name="flagadmin-tests",
            instance_id="test-1",
            custom_headers={"Authorization": token},
            refresh_interval=1,
            disable_metrics=True,
            cache_directory=str(tmp_path / f"sdk-cache-{len(started)}"),
            request_timeout=10,
        )
        started.append(client)
        client.initialize_client()
        wait_until(lambda: wait_for in client.feature_definitions(), timeout=20)
        return client

    yield start
    for client in started:
        client.destroy()


def features_statuses(server) -> list[int]:
    """The statuses of every ``GET /api/client/features`` in the server's access log so far."""
    return [int(m.group(1)) for m in FEATURES_LINE.finditer(server.log.read_text())]


def test_sdk__evaluates_strategies_constraints_segments_variants_and_dependencies_as_written(
    sdk_setup, start_sdk
):
    # Given: rules written through the admin API
    server, admin, token = sdk_setup
    admin.strategy_type(
        "userWithId", [{"name": "userIds", "type": "list", "description": "", "required": True}]
    )
    segment = admin.send("POST", "/api/admin/segments", {"name": "sdk beta", "constraints": [BETA]}).json()[
        "id"
    ]
    rollout = {"rollout": "100", "stickiness": "default", "groupId": "sdk-country"}
    admin.flag("sdk-country", {"name": "flexibleRollout", "parameters": rollout, "constraints": [COUNTRY]})
    admin.flag("sdk-segment", {"name": "default", "segments": [segment]})
    admin.flag("sdk-users", {"name": "userWithId", "parameters": {"userIds": "alice,bob"}})
    admin.flag("sdk-semver", {"name": "default", "constraints": [VERSION]})
    admin.flag("sdk-strategy-variants", {"name": "default", "variants": [BLUE]})
    admin.flag("sdk-flag-variants", {"name": "default"})
    admin.send(
        "PUT",
        f"{PROJECT}/features/sdk-flag-variants/variants-batch",
        {"variants": [RED], "environments": ["development"]},
    )
    admin.flag("sdk-parent", {"name": "default"})
    admin.flag("sdk-child", {"name": "default"})
    admin.send("POST", f"{PROJECT}/features/sdk-child/dependencies", {"feature": "sdk-parent"})
    admin.flag("sdk-needs-parent-off", {"name": "default"})
    admin.send(
        "POST",
        f"{PROJECT}/features/sdk-needs-parent-off/dependencies",
        {"feature": "sdk-parent", "enabled": False},
    )
    admin.flag("sdk-off", {"name": "default"}, on=False)
    # When: the SDK starts with a client token
    sdk = start_sdk(server, token, "sdk-off")
    # Then: each flag as its rules say
    assert sdk.is_enabled("sdk-country", {"properties": {"country": "NO"}})
    assert not sdk.is_enabled("sdk-country", {"properties": {"country": "DK"}})
    assert sdk.is_enabled("sdk-segment", {"properties": {"beta": "true"}})
    assert not sdk.is_enabled("sdk-segment", {"properties": {"beta": "false"}})
    assert sdk.is_enabled("sdk-users", {"userId": "bob"})
    assert not sdk.is_enabled("sdk-users", {"userId": "carol"})
    assert sdk.is_enabled("sdk-semver", {"properties": {"appVersion": "2.1.0"}})
    assert not sdk.is_enabled("sdk-semver", {"properties": {"appVersion": "1.9.9"}})
    assert sdk.get_variant("sdk-strategy-variants", {"userId": "u1"}) == {
        "name": "blue",
        "enabled": True,
        "feature_enabled": True,
        "payload": {"type": "string", "value": "b"},
    }
    red = sdk.get_variant("sdk-flag-variants", {"userId": "u1"})
    assert red["name"] == "red" and red["payload"] == {"type": "json", "value": '{"shade": 7}'}
    assert sdk.is_enabled("sdk-child") and not sdk.is_enabled("sdk-needs-parent-off")
    assert not sdk.is_enabled("sdk-off")
    assert not sdk.is_enabled("no-such-flag")
    # ... flags of other projects are not the token's
    assert "mobile-dark-mode" not in sdk.feature_definitions()
    assert "checkout-v2" in sdk.feature_definitions()


def test_sdk__304_while_nothing_changes__a_change_seen_after_the_next_poll(sdk_setup, start_sdk):
    # Given: a running SDK that sees sdk-live on and its child on
    server, admin, token = sdk_setup
    admin.flag("sdk-live", {"name": "default"})
    admin.flag("sdk-live-child", {"name": "default"})
    admin.send("POST", f"{PROJECT}/features/sdk-live-child/dependencies", {"feature": "sdk-live"})
    sdk = start_sdk(server, token, "sdk-live-child")
    assert sdk.is_enabled("sdk-live") and sdk.is_enabled("sdk-live-child")
    # When: nothing changes for a few polls
    wait_until(
        lambda: features_statuses(server).count(304) >= 3,
        timeout=20,
        explain=lambda: features_statuses(server),
    )
    # Then: every poll after the first answer was a 304
    statuses = features_statuses(server)
    assert statuses[0] == 200 and set(statuses[1:]) == {304}
    # When: the flag is switched off through the admin API
    admin.switch("sdk-live", False)
    # Then: the SDK sees it after its next poll (a 200), and the child follows its parent
    wait_until(lambda: not sdk.is_enabled("sdk-live"), timeout=20)
    assert not sdk.is_enabled("sdk-live-child")
    assert 200 in features_statuses(server)[len(statuses) :]
    # ... and 304s again once it has the new answer
    seen = len(features_statuses(server))
    wait_until(lambda: 304 in features_statuses(server)[seen:], timeout=20)


def test_two_processes__one_etag__a_write_through_one_in_the_others_next_answer(live_server, db):
    """Two ``flagadmin serve`` processes on one database (a SQLite file, or PostgreSQL with
    ``--engine=postgresql``): the same view has the same ETag on both, and a rule written
    through one is in the other's very next answer (each request reads the rules revision)."""
    # Given: two servers, each asked once (each keeps its answer)
    admin_token = new_admin_token()
    env = {"FLAGADMIN_ADMIN_TOKEN": admin_token, "FLAGADMIN_DELIVERY_WORKERS": "0"}
    first, second = live_server(env=env), live_server(env=env)
    token, _ = create_api_token(
        db, events.COMMAND_LINE, type="client", name="two", environment="development", projects=None
    )
    headers = {**auth(token), "Unleash-Client-Spec": "5.2.0"}
    etags = [
        server.request("GET", "/api/client/features", headers).headers["etag"] for server in (first, second)
    ]
    assert etags[0] == etags[1]
    # When: a strategy is added through the first server's admin API
    Admin(first, admin_token).strategy("checkout-v2", {"name": "default"})
    # Then: the second's next answer has it, under a new ETag; the first's too, the same ETag
    replies = [
        server.request("GET", "/api/client/features", {**headers, "If-None-Match": etags[0]})
        for server in (second, first)
    ]
    assert [reply.status for reply in replies] == [200, 200]
    assert replies[0].headers["etag"] == replies[1].headers["etag"] != etags[0]
    flags = {f["name"]: f for f in replies[0].json()["features"]}
    assert [s["name"] for s in flags["checkout-v2"]["strategies"]] == ["default"]
