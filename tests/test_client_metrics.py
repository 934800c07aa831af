"""What backend SDKs report (``POST /api/client/register``, ``/api/client/metrics`` and Edge's
``/api/client/metrics/bulk``), through the HTTP stack on both engines:

- 202 with no body for a report that the reference's schema takes (fields beyond it ignored),
  400 naming each field for one it refuses, 401/403 for a missing or wrong kind of token;
- nothing is written by the request: the writer thread (``clients/writer.py``, a short
  interval here) writes the application, the instance, usage, hourly counts, unknown flags and
  ``lastSeenAt`` of the flag and of the token's environment, seen on the flag's admin GET and
  on 4.4 (whose item and ETag move for an archived flag);
- ``application-created`` once per new application, whatever the number of reports and of
  apps (processes) reporting it together;
- a write the database cannot take now keeps its batch for the next one.

The real SDK and real server processes are in test_client_metrics_sdk.py.
"""

from __future__ import annotations

import copy
import threading

import pytest
from marshmallow import Schema

from flagadmin import events
from flagadmin.blueprints.client_metrics import ClientApplicationSchema, ClientMetricsSchema
from flagadmin.clients.writer import Writer
from flagadmin.store import connect
from flagadmin.tokens import changes
from flagadmin.web.state import state

from flag_helpers import ARCHIVE, flag_path, recorded
from helpers import auth, wait_until

METRICS = "/api/client/metrics"
REGISTER = "/api/client/register"
BULK = "/api/client/metrics/bulk"

#: The Python SDK's registration (UnleashClient 6.9.1, as seen on the wire).
REGISTRATION = {
    "appName": "checkout-service",
    "instanceId": "pod-1",
    "connectionId": "0f5d6c1e-4b2a-4c3e-9d8f-1a2b3c4d5e6f",
    "platformName": "CPython",
    "platformVersion": "3.11.7",
    "yggdrasilVersion": "0.17.0",
    "specVersion": "5.2.0",
    "sdkVersion": "unleash-python-sdk:6.9.1",
    "strategies": ["default", "gradualRollout"],
    "started": "2026-11-27T10:00:00.123456+00:00",
    "interval": 60,
}


def metrics_body(toggles: dict, app: str = "checkout-service", instance: str | None = "pod-1") -> dict:
    """A metrics report as the Python SDK sends it (its bucket as yggdrasil writes it)."""
    body = {
        "appName": app,
        "connectionId": "0f5d6c1e-4b2a-4c3e-9d8f-1a2b3c4d5e6f",
        "platformName": "CPython",
        "platformVersion": "3.11.7",
        "yggdrasilVersion": "0.17.0",
        "specVersion": "5.2.0",
        "bucket": {
            "start": "2026-11-27T10:15:00.414771930Z",
            "stop": "2026-11-27T10:16:00.416001767Z",
            "toggles": toggles,
        },
        "impactMetrics": [],
    }
    if instance is not None:
        body["instanceId"] = instance
    return body


@pytest.fixture
def sdk_token(db):
    """Make a client (or frontend) token: ``sdk_token(environment="development",
    projects=None, type="client")``; None projects: every project."""

    def make(
        environment: str = "development", projects: list[str] | None = None, type: str = "client"
    ) -> str:
        secret, _ = changes.create_api_token(
            db,
            events.COMMAND_LINE,
            type=type,
            name="sdk",
            environment=environment,
            projects=projects or ["*"],
        )
        return secret

    return make


@pytest.fixture
def client_token(sdk_token) -> str:
    """A client token of every project in development."""
    return sdk_token()


@pytest.fixture
def writer(app):
    """The app's writer of SDK reports, every 50 ms (stopped, with its last write, at the end)."""
    started = Writer(state(app).client_metrics, 0.05).start()
    yield started
    started.stop()


def flag(client, token, project: str, name: str) -> dict:
    response = client.get(flag_path(project, name), headers=auth(token))
    assert response.status_code == 200
    return response.get_json()


def environment_seen(flag_body: dict, environment: str) -> str | None:
    (found,) = [e for e in flag_body["environments"] if e["name"] == environment]
    return found["lastSeenAt"]


# --- the answers ------------------------------------------------------------------------------


def test_register__the_python_sdks_body__202_without_a_body(client, client_token):
    response = client.post(REGISTER, json=REGISTRATION, headers=auth(client_token))
    assert response.status_code == 202
    assert response.get_data() == b""
    assert "Content-Type" not in response.headers


def test_register__the_node_sdks_body__202(client, client_token):
    """The Node SDK sends ``yggdrasilVersion: null``, every strategy it knows and its interval
    in milliseconds."""
    body = {
        **REGISTRATION,
        "sdkVersion": "unleash-node-sdk:6.12.1",
        "yggdrasilVersion": None,
        "interval": 15000,
        "started": "2026-11-27T10:00:00.000Z",
    }
    assert client.post(REGISTER, json=body, headers=auth(client_token)).status_code == 202


def test_metrics__a_report__202_and_nothing_written_by_the_request(client, client_token, db):
    response = client.post(
        METRICS,
        json=metrics_body({"checkout-v2": {"yes": 3, "no": 1, "variants": {}}}),
        headers=auth(client_token),
    )
    assert response.status_code == 202
    assert response.get_data() == b""
    assert db.value("SELECT count(*) FROM client_applications") == 0
    assert db.value("SELECT count(*) FROM client_metrics") == 0


#: Metrics bodies the reference takes, and their test ids.
ACCEPTED = [
    {"appName": "a"},  # no bucket: only the instance
    {"appName": "a", "bucket": None, "impactMetrics": [{"name": "x"}]},
    metrics_body({}),
    metrics_body({"checkout-v2": {}}),  # yes and no default to 0
    metrics_body({"checkout-v2": {"yes": 1.0, "no": 0, "variants": None}}),
    {"appName": "a", "bucket": {"start": 1764237600, "stop": 1764237660.5, "toggles": {}}},
    {
        "appName": "a",
        "bucket": {"start": "2026-11-27T10:00:00", "stop": "2026-11-27T10:01:00", "toggles": {}},
    },
    {
        "appName": "a",
        "bucket": {"start": "2026-11-27t10:00:00z", "stop": 0, "toggles": {"f": {"yes": 1, "x": 2}}},
    },
]
ACCEPTED_IDS = [
    "no-bucket",
    "null-bucket",
    "no-flags",
    "empty-counts",
    "float-and-null",
    "unix-seconds",
    "no-zone",
    "lower-case-and-more-fields",
]


@pytest.mark.parametrize("body", ACCEPTED, ids=ACCEPTED_IDS)
def test_metrics__what_the_reference_takes__202(client, client_token, body):
    assert client.post(METRICS, json=body, headers=auth(client_token)).status_code == 202


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({}, "appName: is required"),
        ({"appName": ""}, "appName"),
        ({"appName": 3}, "appName"),
        ({"appName": "a" * 256}, "appName"),
        ({"appName": "a", "bucket": []}, "bucket"),
        (
            {"appName": "a", "bucket": {"start": "x", "stop": "y", "toggles": {}}},
            "bucket.start: must be an RFC 3339",
        ),
        ({"appName": "a", "bucket": {"start": 1, "stop": 2}}, "bucket.toggles: is required"),
        (
            {"appName": "a", "bucket": {"start": "0001-01-01T00:00:00+01:00", "stop": 2, "toggles": {}}},
            "bucket.start: must be an RFC 3339",
        ),
        ({"appName": "a", "bucket": {"start": 1e12, "stop": 2, "toggles": {}}}, "bucket.start"),
        (
            {"appName": "a", "bucket": {"start": 1, "stop": 2, "toggles": []}},
            "bucket.toggles: must be an object",
        ),
        (metrics_body({"f": 3}), "bucket.toggles.f: must be an object"),
        (metrics_body({"f": {"yes": -1}}), "bucket.toggles.f.yes: must be a whole number"),
        (
            metrics_body({"f": {"yes": True}}),
            "bucket.toggles.f.yes: must be a whole number from 0 to 2147483647; got true",
        ),
        (metrics_body({"f": {"no": "3"}}), "bucket.toggles.f.no"),
        (metrics_body({"f": {"no": 1.5}}), "bucket.toggles.f.no"),
        (metrics_body({"f": {"yes": 2**31}}), "bucket.toggles.f.yes"),
        (metrics_body({"f": {"variants": []}}), "bucket.toggles.f.variants: must be an object"),
        (metrics_body({"f": {"variants": {"blue": -2}}}), "bucket.toggles.f.variants.blue"),
        ({"appName": "a", "instanceId": 7}, "instanceId"),
        ({"appName": "a", "sdkFlavor": "x" * 257}, "sdkFlavor"),
    ],
)
def test_metrics__what_the_reference_refuses__400_naming_the_field(client, client_token, body, words):
    response = client.post(METRICS, json=body, headers=auth(client_token))
    assert response.status_code == 400
    assert response.get_json()["name"] == "BadDataError"
    assert words in response.get_json()["message"]


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"appName": None}, "appName"),
        ({"interval": None}, "interval"),
        ({"interval": -1}, "interval: must be a number of at least 0"),
        ({"interval": "15"}, "interval"),
        ({"interval": True}, "interval"),
        ({"started": "yesterday"}, "started: must be an RFC 3339"),
        ({"started": 10**20}, "started"),
        ({"strategies": "default"}, "strategies"),
        ({"strategies": [1]}, "strategies.0"),
    ],
)
def test_register__what_the_reference_refuses__400_naming_the_field(client, client_token, change, words):
    response = client.post(REGISTER, json={**REGISTRATION, **change}, headers=auth(client_token))
    assert response.status_code == 400
    assert words in response.get_json()["message"]


@pytest.mark.parametrize(
    ("schema", "body"),
    [
        (ClientMetricsSchema, body)
        for body in [*ACCEPTED, metrics_body({"f": {"yes": 1, "variants": {"a": 2}}})]
    ]
    + [
        (ClientApplicationSchema, REGISTRATION),
        (ClientApplicationSchema, {**REGISTRATION, "yggdrasilVersion": None}),
    ],
)
def test_bodies__the_quick_load__gives_what_the_schema_loads(schema, body):
    """The quick check of a plainly right body (blueprints/client_metrics.py) loads exactly
    what the marshmallow schema loads."""
    quick = schema().quick_load(copy.deepcopy(body))
    assert quick is not None
    assert quick == Schema.load(schema(), copy.deepcopy(body))


@pytest.mark.parametrize("missing", ["appName", "interval", "started", "strategies"])
def test_register__a_required_field_missing__400(client, client_token, missing):
    body = {key: value for key, value in REGISTRATION.items() if key != missing}
    response = client.post(REGISTER, json=body, headers=auth(client_token))
    assert response.status_code == 400
    assert f"{missing}: is required" in response.get_json()["message"]


def test_metrics__not_json__400_or_415(client, client_token):
    headers = auth(client_token)
    assert (
        client.post(METRICS, data=b"{", headers={**headers, "Content-Type": "application/json"}).status_code
        == 400
    )
    assert client.post(METRICS, data=b"appName=a", headers=headers).status_code == 415


@pytest.mark.parametrize("path", [METRICS, REGISTER, BULK])
def test_reports__no_token_401__an_admin_or_frontend_token_403(client, admin_token, sdk_token, path):
    assert client.post(path, json={"appName": "a"}).status_code == 401
    for token in (admin_token, sdk_token(type="frontend")):
        response = client.post(path, json={"appName": "a"}, headers=auth(token))
        assert response.status_code == 403
        assert (
            response.get_json()["message"]
            == "invalid token: expected a different token type for this endpoint"
        )


def test_metrics__a_body_of_a_thousand_flags__taken(client, client_token):
    """The Python SDK sends every flag it evaluated in one body: past the admin API's 64 KiB."""
    toggles = {f"flag-number-{i:04d}": {"yes": i, "no": 1, "variants": {"on": i}} for i in range(1000)}
    body = metrics_body(toggles)
    response = client.post(METRICS, json=body, headers=auth(client_token))
    assert response.status_code == 202


def test_metrics__in_maintenance_mode__still_taken(make_app, client_token):
    client = make_app(maintenance_mode=True).test_client()
    assert client.post(METRICS, json={"appName": "a"}, headers=auth(client_token)).status_code == 202
    assert client.post(REGISTER, json=REGISTRATION, headers=auth(client_token)).status_code == 202


# --- what is written ------------------------------------------------------------------------


def test_metrics__after_a_write__lastseenat_of_the_flag_and_its_environment_move(
    client, client_token, admin_token, db, writer
):
    """The admin GET shows each environment's lastSeenAt (8.2.0's featureSchema has no
    flag-level one); the flag's own is 4.4's once archived, stored meanwhile."""
    before = flag(client, admin_token, "default", "checkout-v2")
    development_before = environment_seen(before, "development")
    client.post(METRICS, json=metrics_body({"checkout-v2": {"yes": 2, "no": 0}}), headers=auth(client_token))
    after = wait_until(
        lambda: (
            environment_seen(body := flag(client, admin_token, "default", "checkout-v2"), "development")
            != development_before
            and body
        )
    )
    seen = environment_seen(after, "development")
    assert seen > (development_before or "")
    assert environment_seen(after, "production") == environment_seen(before, "production")
    assert db.value("SELECT last_seen_at FROM features WHERE name = 'checkout-v2'") == seen


def test_metrics__a_flag_counted_zero_times__not_seen(client, client_token, admin_token, db):
    before = flag(client, admin_token, "default", "dark-mode")
    client.post(
        METRICS,
        json=metrics_body({"dark-mode": {"yes": 0, "no": 0}, "checkout-v2": {"yes": 1}}),
        headers=auth(client_token),
    )
    state(client.application).client_metrics.flush()
    assert flag(client, admin_token, "default", "dark-mode") == before
    assert db.column("SELECT feature_name FROM client_metrics") == ["checkout-v2"]


def test_metrics__the_tokens_environment__not_the_bodys(client, sdk_token, admin_token):
    token = sdk_token(environment="production")
    before = flag(client, admin_token, "default", "checkout-v2")
    body = {**metrics_body({"checkout-v2": {"yes": 1}}), "environment": "development"}
    client.post(METRICS, json=body, headers=auth(token))
    state(client.application).client_metrics.flush()
    after = flag(client, admin_token, "default", "checkout-v2")
    assert environment_seen(after, "production") > (environment_seen(before, "production") or "")
    assert environment_seen(after, "development") == environment_seen(before, "development")


def test_metrics__an_archived_flag__4_4_shows_the_new_lastseenat_and_its_etag_moves(
    client, client_token, admin_token, writer
):
    def archived(name: str) -> dict:
        (found,) = [
            f
            for f in client.get(ARCHIVE, headers=auth(admin_token)).get_json()["features"]
            if f["name"] == name
        ]
        return found

    first = client.get(ARCHIVE, headers=auth(admin_token))
    before = archived("new-pricing")
    client.post(METRICS, json=metrics_body({"new-pricing": {"yes": 1}}), headers=auth(client_token))
    after = wait_until(
        lambda: (item := archived("new-pricing"))["lastSeenAt"] != before["lastSeenAt"] and item
    )
    assert after["lastSeenAt"] > (before["lastSeenAt"] or "")
    (development,) = [e for e in after["environments"] if e["name"] == "development"]
    assert development["lastSeenAt"] == after["lastSeenAt"]
    second = client.get(ARCHIVE, headers={**auth(admin_token), "If-None-Match": first.headers["ETag"]})
    assert second.status_code == 200
    assert second.headers["ETag"] != first.headers["ETag"]


def test_metrics__counts_summed_by_flag_application_environment_and_hour(client, client_token, db):
    headers = auth(client_token)
    aggregator = state(client.application).client_metrics
    client.post(
        METRICS,
        json=metrics_body({"checkout-v2": {"yes": 2, "no": 1, "variants": {"a": 2}}}),
        headers=headers,
    )
    client.post(
        METRICS,
        json=metrics_body({"checkout-v2": {"yes": 1, "no": 0, "variants": {"b": 1}}}),
        headers=headers,
    )
    aggregator.flush()
    client.post(
        METRICS,
        json=metrics_body({"checkout-v2": {"yes": 4, "no": 4, "variants": {"a": 1}}}),
        headers=headers,
    )
    later = metrics_body({"checkout-v2": {"yes": 7}})
    later["bucket"]["start"] = "2026-11-27T11:00:00Z"
    client.post(METRICS, json=later, headers=headers)
    aggregator.flush()
    rows = db.all(
        "SELECT hour, yes, no, variants FROM client_metrics WHERE feature_name = 'checkout-v2' ORDER BY hour"
    )
    assert rows == [
        {"hour": "2026-11-27T10:00:00.000Z", "yes": 7, "no": 5, "variants": '{"a":3,"b":1}'},
        {"hour": "2026-11-27T11:00:00.000Z", "yes": 7, "no": 0, "variants": "{}"},
    ]


def test_metrics__unknown_names__kept_as_unknown_flags(client, client_token, admin_token):
    toggles = {"no-such-flag": {"yes": 1}, "not a flag name!": {"yes": 1}, "checkout-v2": {"yes": 1}}
    client.post(METRICS, json=metrics_body(toggles), headers=auth(client_token))
    state(client.application).client_metrics.flush()
    body = client.get("/api/admin/metrics/unknown-flags", headers=auth(admin_token)).get_json()
    assert [f["name"] for f in body["unknownFlags"]] == ["no-such-flag"]
    (report,) = body["unknownFlags"][0]["reports"]
    assert report["appName"] == "checkout-service"
    assert [e["environment"] for e in report["environments"]] == ["development"]


def test_register__application_instance_and_usage_written(client, sdk_token, admin_token, db):
    token = sdk_token(environment="production", projects=["default", "mobile"])
    client.post(REGISTER, json=REGISTRATION, headers=auth(token))
    state(client.application).client_metrics.flush()
    app = client.get("/api/admin/metrics/applications/checkout-service", headers=auth(admin_token)).get_json()
    assert app["strategies"] == ["default", "gradualRollout"]
    (instance,) = app["instances"]
    assert instance == {
        "instanceId": "pod-1",
        "sdkVersion": "unleash-python-sdk:6.9.1",
        "sdkType": "backend",
        "clientIp": "127.0.0.1",
        "lastSeen": instance["lastSeen"],
        "environment": "production",
    }
    listed = client.get("/api/admin/metrics/applications", headers=auth(admin_token)).get_json()
    assert listed["applications"][0]["usage"] == [
        {"project": "default", "environments": ["production"]},
        {"project": "mobile", "environments": ["production"]},
    ]


def test_metrics__instance_without_an_id__default__sdk_version_from_the_header(
    client, client_token, admin_token
):
    headers = {**auth(client_token), "unleash-sdk": "unleash-node-sdk:6.12.1"}
    client.post(METRICS, json=metrics_body({}, instance=None), headers=headers)
    state(client.application).client_metrics.flush()
    app = client.get("/api/admin/metrics/applications/checkout-service", headers=auth(admin_token)).get_json()
    assert [(i["instanceId"], i["sdkVersion"]) for i in app["instances"]] == [
        ("default", "unleash-node-sdk:6.12.1")
    ]


def test_application_created__once_per_application__the_system_its_actor(client, client_token, db):
    headers = auth(client_token)
    aggregator = state(client.application).client_metrics
    for _ in range(3):
        client.post(REGISTER, json=REGISTRATION, headers=headers)
        client.post(METRICS, json=metrics_body({"checkout-v2": {"yes": 1}}), headers=headers)
        aggregator.flush()
    client.post(METRICS, json=metrics_body({}, app="other-service"), headers=headers)
    aggregator.flush()
    created = recorded(db, "application-created")
    assert sorted(e["data"]["appName"] for e in created) == ["checkout-service", "other-service"]
    event = next(e for e in created if e["data"]["appName"] == "checkout-service")
    assert (event["createdBy"], event["createdByUserId"]) == (events.SYSTEM.name, events.SYSTEM.user_id)
    assert event["data"]["strategies"] == ["default", "gradualRollout"]


def test_application_created__two_apps_writing_together__once(make_app, client_token, db):
    """Two apps on one database (as two processes are), each with its own reports and writer,
    seeing the same new applications at once: each application is created once, and the
    counts of both add up."""
    apps = [make_app(), make_app()]
    names = [f"service-{i}" for i in range(20)]
    for app in apps:
        client = app.test_client()
        for name in names:
            client.post(REGISTER, json={**REGISTRATION, "appName": name}, headers=auth(client_token))
            client.post(
                METRICS, json=metrics_body({"checkout-v2": {"yes": 1}}, app=name), headers=auth(client_token)
            )
    barrier = threading.Barrier(2)

    def flush(app):
        barrier.wait()
        state(app).client_metrics.flush()

    threads = [threading.Thread(target=flush, args=(app,)) for app in apps]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    created = recorded(db, "application-created", limit=100)
    assert sorted(e["data"]["appName"] for e in created) == sorted(names)
    assert db.value("SELECT sum(yes) FROM client_metrics WHERE feature_name = 'checkout-v2'") == 40


def test_bulk__only_the_tokens_environment_kept(client, client_token, admin_token, db):
    body = {
        "applications": [
            {**REGISTRATION, "appName": "via-edge", "environment": "development", "sdkType": "frontend"},
            {**REGISTRATION, "appName": "elsewhere", "environment": "production"},
        ],
        "metrics": [
            {
                "featureName": "checkout-v2",
                "appName": "via-edge",
                "environment": "development",
                "yes": 2,
                "no": 1,
                "timestamp": "2026-11-27T10:20:00Z",
                "variants": {"a": 1},
            },
            {
                "featureName": "dark-mode",
                "appName": "via-edge",
                "environment": "production",
                "yes": 5,
                "no": 0,
            },
        ],
    }
    assert client.post(BULK, json=body, headers=auth(client_token)).status_code == 202
    state(client.application).client_metrics.flush()
    assert db.column("SELECT app_name FROM client_applications") == ["via-edge"]
    assert db.all("SELECT feature_name, environment, hour, yes, no FROM client_metrics") == [
        {
            "feature_name": "checkout-v2",
            "environment": "development",
            "hour": "2026-11-27T10:00:00.000Z",
            "yes": 2,
            "no": 1,
        }
    ]
    assert db.value("SELECT sdk_type FROM client_instances") == "frontend"


def test_bulk__a_bad_body__400(client, client_token):
    response = client.post(BULK, json={"applications": [{}], "metrics": "x"}, headers=auth(client_token))
    assert response.status_code == 400
    message = response.get_json()["message"]
    assert "applications.0.appName: is required" in message and "metrics" in message


# --- when the database cannot take the write -------------------------------------------------


def test_write__the_database_locked__kept_for_the_next_write(make_app, client_token, db_path):
    """A flush that finds the database locked past its busy timeout writes nothing and keeps
    what it had; the next one writes it with what was reported meanwhile."""
    app = make_app(config={"BUSY_TIMEOUT_MS": 50})
    client = app.test_client()
    headers = auth(client_token)
    client.post(REGISTER, json=REGISTRATION, headers=headers)
    client.post(
        METRICS, json=metrics_body({"checkout-v2": {"yes": 2, "variants": {"a": 1}}}), headers=headers
    )
    aggregator = state(app).client_metrics
    with connect(db_path) as holder:
        holder._execute("BEGIN IMMEDIATE")
        try:
            assert aggregator.flush() == 0
        finally:
            holder.rollback()
    assert aggregator.pending > 0
    client.post(
        METRICS, json=metrics_body({"checkout-v2": {"yes": 3, "variants": {"a": 1}}}), headers=headers
    )
    assert aggregator.flush() > 0
    assert aggregator.pending == 0
    with connect(db_path) as conn:
        assert conn.column("SELECT app_name FROM client_applications") == ["checkout-service"]
        assert conn.all("SELECT yes, variants FROM client_metrics") == [{"yes": 5, "variants": '{"a":2}'}]
        assert conn.value("SELECT strategies FROM client_applications") == '["default","gradualRollout"]'


def test_writer__stop__writes_what_is_left(app, client_token, db):
    client = app.test_client()
    writer = Writer(state(app).client_metrics, 300).start()
    client.post(REGISTER, json=REGISTRATION, headers=auth(client_token))
    assert db.value("SELECT count(*) FROM client_applications") == 0
    assert writer.stop() > 0
    assert db.column("SELECT app_name FROM client_applications") == ["checkout-service"]
