"""``GET /internal-backstage/prometheus``: the process's metrics, parsed with prometheus_client's
own parser, and counts that move with the traffic that should move them (a flag route by its
template and status, a flag change by its event type, a webhook delivery by its state, a SCIM
request by its resource, an answer cache's hits and misses, the database time of a request);
the labels stay bounded whatever paths clients send; the settings that turn the endpoint off or
move it to another address.

The metrics are the process's (as a server's are): a test reads what its own requests moved as
the difference between two scrapes.
"""

from __future__ import annotations

import http.client
import secrets

import pytest
from prometheus_client.parser import text_string_to_metric_families
from scim_helpers import Scim, new_scim_token

from flagadmin import events
from flagadmin.config import Settings
from flagadmin.integrations.worker import Worker
from flagadmin.tokens import changes

from helpers import auth, free_port, wait_until
from receiver import Receiver

pytestmark = pytest.mark.same_on_both_engines

PATH = "/internal-backstage/prometheus"
HTTP = "http_request_duration_milliseconds"
FEATURES = "/api/admin/projects/:projectId/features"


def parse(text: str) -> dict[tuple, float]:
    """Every sample of an exposition, parsed by prometheus_client: ``(name, labels) -> value``,
    labels as a sorted tuple of pairs."""
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def scrape(client) -> dict[tuple, float]:
    response = client.get(PATH)
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("text/plain")
    assert response.headers["Cache-Control"] == "no-store"
    return parse(response.get_data(as_text=True))


def value(samples: dict[tuple, float], name: str, **labels: str) -> float:
    """The sample ``name`` with exactly ``labels`` (0 when there is none yet)."""
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def moved(before: dict, after: dict, name: str, **labels: str) -> float:
    return value(after, name, **labels) - value(before, name, **labels)


# --- the exposition -------------------------------------------------------------------------


def test_exposition__parsed_by_prometheus_client__the_reference_histogram_and_process_metrics(client):
    # Given: one request answered
    client.get("/health")
    # When
    samples = scrape(client)
    families = {name for name, _ in samples}
    # Then: the reference's histogram (its buckets in ms), flagadmin's own, the process's
    assert f"{HTTP}_bucket" in families and f"{HTTP}_count" in families and f"{HTTP}_sum" in families
    for family in (
        "flagadmin_request_database_seconds_count",
        "flagadmin_events_recorded_total",
        "flagadmin_webhook_deliveries_total",
        "flagadmin_sdk_registrations_total",
        "flagadmin_sdk_metrics_posts_total",
        "process_cpu_seconds_total",
        "process_resident_memory_bytes",
        "python_info",
    ):
        assert family in families, family
    # every event type and delivery state has its series from the start
    assert ("flagadmin_events_recorded_total", (("type", "feature-created"),)) in samples
    assert ("flagadmin_webhook_deliveries_total", (("state", "delivered"),)) in samples
    # no _created series (they would double the series)
    assert not any(name.endswith("_created") for name in families)


def test_exposition__openmetrics_when_asked(client):
    response = client.get(PATH, headers={"Accept": "application/openmetrics-text; version=1.0.0"})
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("application/openmetrics-text")
    assert response.get_data(as_text=True).rstrip().endswith("# EOF")


def test_exposition__no_token_needed_and_not_in_the_openapi_document(client, openapi_document):
    assert client.get(PATH).status_code == 200
    assert PATH not in openapi_document["paths"]


# --- HTTP requests --------------------------------------------------------------------------


def test_flag_route__histogram_count_moves_for_its_template_and_status(client, admin_token):
    # Given
    before = scrape(client)
    # When: two lists of a project's flags, and one of a project that does not exist
    for _ in range(2):
        assert (
            client.get("/api/admin/projects/default/features", headers=auth(admin_token)).status_code == 200
        )
    assert client.get("/api/admin/projects/nowhere/features", headers=auth(admin_token)).status_code == 404
    after = scrape(client)
    # Then: counted under the route's template, by status; never under the raw path
    ok = {"path": FEATURES, "method": "GET", "status": "200"}
    assert moved(before, after, f"{HTTP}_count", **ok) == 2
    assert moved(before, after, f"{HTTP}_bucket", le="+Inf", **ok) == 2
    assert moved(before, after, f"{HTTP}_sum", **ok) > 0
    assert moved(before, after, f"{HTTP}_count", **{**ok, "status": "404"}) == 1
    assert not any("nowhere" in str(labels) or "/default/" in str(labels) for _, labels in after)


def test_request__database_time_observed_per_route(client, admin_token):
    before = scrape(client)
    assert client.get("/api/admin/projects/default/features", headers=auth(admin_token)).status_code == 200
    after = scrape(client)
    series = {"path": FEATURES, "method": "GET"}
    assert moved(before, after, "flagadmin_request_database_seconds_count", **series) == 1
    # the request read its token, the version row and the flags: some time was spent in SQL
    assert moved(before, after, "flagadmin_request_database_seconds_sum", **series) > 0


def test_request_without_sql__no_database_time(client):
    # The exposition itself runs no statement
    scrape(client)
    before = scrape(client)
    after = scrape(client)
    series = {"path": PATH, "method": "GET"}
    assert moved(before, after, "flagadmin_request_database_seconds_count", **series) == 1
    assert moved(before, after, "flagadmin_request_database_seconds_sum", **series) == 0


def test_cardinality__a_thousand_unknown_paths_and_methods__series_stay_bounded(client, admin_token):
    # Given: every series a first round of traffic makes
    client.get("/no/such/path")
    client.get("/api/admin/projects/p0/features/f0", headers=auth(admin_token))
    client.open("/no/such/path", method="BREW")
    before = scrape(client)
    # When: a thousand distinct unknown paths, ids of unknown flags and made-up methods
    secret = secrets.token_hex(24)
    for i in range(1000):
        client.get(f"/no/such/path/{i}/{secret}")
        client.get(f"/api/admin/projects/p{i}/features/f{i}", headers=auth(admin_token))
        client.open(f"/no/such/path/{i}", method=f"BREW{i}")
    after = scrape(client)
    # Then: no new series at all (the scrapes' own series were there already) and no raw path
    new = set(after) - set(before)
    assert not new, sorted(new)[:10]
    unmatched = {"path": "(hidden)", "method": "GET", "status": "404"}
    assert moved(before, after, f"{HTTP}_count", **unmatched) == 1000
    assert moved(before, after, f"{HTTP}_count", **{**unmatched, "method": "OTHER"}) == 1000
    flag = {"path": FEATURES + "/:featureName", "method": "GET", "status": "404"}
    assert moved(before, after, f"{HTTP}_count", **flag) == 1000
    text = client.get(PATH).get_data(as_text=True)
    assert secret not in text and "/p999" not in text and "BREW" not in text


def test_labels__never_the_token_or_a_flag_name(client, admin_token):
    name = f"secret-{secrets.token_hex(6)}"
    response = client.post(
        "/api/admin/projects/default/features", json={"name": name}, headers=auth(admin_token)
    )
    assert response.status_code == 201
    client.get(f"/api/admin/projects/default/features/{name}", headers=auth(admin_token))
    text = client.get(PATH).get_data(as_text=True)
    assert name not in text
    assert admin_token not in text and admin_token.split(".")[-1] not in text


# --- what the domain counts -----------------------------------------------------------------


def test_flag_change__event_type_counter_moves(client, alice):
    # Given
    before = scrape(client)
    # When: a flag created and switched on
    name = f"counted-{secrets.token_hex(4)}"
    headers = auth(alice)
    assert (
        client.post("/api/admin/projects/mobile/features", json={"name": name}, headers=headers).status_code
        == 201
    )
    on = f"/api/admin/projects/mobile/features/{name}/environments/development/on"
    assert client.post(on, headers=headers).status_code == 200
    after = scrape(client)
    # Then
    assert moved(before, after, "flagadmin_events_recorded_total", type="feature-created") == 1
    assert moved(before, after, "flagadmin_events_recorded_total", type="feature-environment-enabled") == 1
    assert moved(before, after, "flagadmin_events_recorded_total", type="feature-archived") == 0


def test_change_rolled_back__not_counted(client, db):
    before = scrape(client)
    with pytest.raises(RuntimeError), db.write():
        events.record(db, "feature-created", events.COMMAND_LINE, project="default", data={"name": "x"})
        raise RuntimeError("rolled back")
    after = scrape(client)
    assert moved(before, after, "flagadmin_events_recorded_total", type="feature-created") == 0


DELIVERY = {
    "integrations_allowed_hosts": ("127.0.0.1",),
    "delivery_timeout": 2.0,
    "delivery_retry_schedule": (0.05,),
    "delivery_poll_interval": 0.05,
}


@pytest.fixture
def receiver():
    started = Receiver()
    yield started
    started.close()


def test_webhook_delivery__state_counter_and_latencies_move(make_app, db, database, admin_token, receiver):
    # Given: only the test's webhooks deliver; one receiver answers 200, one always 500
    with db.write():
        db.run("UPDATE integrations SET enabled = 0")
    client = make_app(**DELIVERY).test_client()
    for path in ("/ok", "/fail"):
        body = {
            "provider": "webhook",
            "enabled": True,
            "parameters": {"url": receiver.url(path)},
            "events": ["feature-created"],
        }
        assert client.post("/api/admin/addons", json=body, headers=auth(admin_token)).status_code == 201
    before = scrape(client)
    # When: a flag change, delivered by a worker in this process (attempts due now, then the
    # one retry of /fail once due)
    name = f"hooked-{secrets.token_hex(4)}"
    response = client.post(
        "/api/admin/projects/default/features", json={"name": name}, headers=auth(admin_token)
    )
    assert response.status_code == 201
    worker = Worker(database, Settings(**DELIVERY))
    wait_until(lambda: worker.run_once() == 0 and receiver.count("/fail") == 2, timeout=30)
    after = scrape(client)
    # Then: one delivered, one retried then given up
    assert moved(before, after, "flagadmin_webhook_deliveries_total", state="delivered") == 1
    assert moved(before, after, "flagadmin_webhook_deliveries_total", state="pending") == 1
    assert moved(before, after, "flagadmin_webhook_deliveries_total", state="failed") == 1
    assert moved(before, after, "flagadmin_webhook_attempt_seconds_count") == 3
    assert moved(before, after, "flagadmin_webhook_attempt_seconds_sum") > 0
    assert moved(before, after, "flagadmin_webhook_delivery_lag_seconds_count") == 1


def test_scim_request__counted_by_resource_type_and_status(client, db):
    # Given
    scim = Scim(client, new_scim_token(db))
    before = scrape(client)
    # When
    assert scim.get("/Users").status_code == 200
    assert scim.get("/Users/no-such-id").status_code == 404
    assert scim.get("/Groups").status_code == 200
    assert client.get("/scim/v2/Users").status_code == 401
    assert scim.get("/Nothing/here").status_code == 404
    after = scrape(client)
    # Then
    counter = "flagadmin_scim_requests_total"
    assert moved(before, after, counter, resource="Users", method="GET", status="200") == 1
    assert moved(before, after, counter, resource="Users", method="GET", status="404") == 1
    assert moved(before, after, counter, resource="Users", method="GET", status="401") == 1
    assert moved(before, after, counter, resource="Groups", method="GET", status="200") == 1
    assert moved(before, after, counter, resource="(unknown)", method="GET", status="404") == 1
    # and the HTTP histogram has them by template
    assert (
        moved(before, after, f"{HTTP}_count", path="/scim/v2/Users/:resource_id", method="GET", status="404")
        == 1
    )


SDK_REGISTRATION = {
    "appName": "checkout-service",
    "instanceId": "pod-1",
    "sdkVersion": "unleash-python-sdk:6.9.1",
    "strategies": ["default"],
    "started": "2026-11-27T10:00:00Z",
    "interval": 60,
}
SDK_METRICS = {
    "appName": "checkout-service",
    "instanceId": "pod-1",
    "bucket": {
        "start": "2026-11-27T10:15:00Z",
        "stop": "2026-11-27T10:16:00Z",
        "toggles": {"f": {"yes": 3, "no": 1, "variants": {}}},
    },
}


def test_sdk_traffic__registrations_and_metrics_posts_by_api(client, db):
    # Given: a client token and a frontend token
    tokens = {
        kind: changes.create_api_token(
            db, events.COMMAND_LINE, type=kind, name=kind, environment="development", projects=["*"]
        )[0]
        for kind in ("client", "frontend")
    }
    before = scrape(client)
    # When: each registers and reports once, and a report is refused
    client_headers, frontend_headers = auth(tokens["client"]), auth(tokens["frontend"])
    assert (
        client.post("/api/client/register", json=SDK_REGISTRATION, headers=client_headers).status_code == 202
    )
    assert client.post("/api/client/metrics", json=SDK_METRICS, headers=client_headers).status_code == 202
    assert client.post("/api/client/metrics", json={"bucket": {}}, headers=client_headers).status_code == 400
    front = "/api/frontend/client"
    assert (
        client.post(f"{front}/register", json=SDK_REGISTRATION, headers=frontend_headers).status_code == 200
    )
    assert client.post(f"{front}/metrics", json=SDK_METRICS, headers=frontend_headers).status_code == 200
    assert client.get("/api/client/features", headers=client_headers).status_code == 200
    after = scrape(client)
    # Then: accepted ones counted by API; every request in the HTTP histogram by its route
    assert moved(before, after, "flagadmin_sdk_registrations_total", api="client") == 1
    assert moved(before, after, "flagadmin_sdk_metrics_posts_total", api="client") == 1
    assert moved(before, after, "flagadmin_sdk_registrations_total", api="frontend") == 1
    assert moved(before, after, "flagadmin_sdk_metrics_posts_total", api="frontend") == 1
    assert moved(before, after, f"{HTTP}_count", path="/api/client/metrics", method="POST", status="400") == 1
    assert moved(before, after, f"{HTTP}_count", path="/api/client/features", method="GET", status="200") == 1
    assert moved(before, after, f"{HTTP}_count", path=f"{front}/metrics", method="POST", status="200") == 1


def test_answer_cache__miss_then_hit(make_app, admin_token, answer_cache):
    # Given: a fresh app, whose ui-config is not kept yet
    client = make_app().test_client()
    before = scrape(client)
    # When
    for _ in range(3):
        assert client.get("/api/admin/ui-config", headers=auth(admin_token)).status_code == 200
    after = scrape(client)
    # Then: built once, then served from the cache (nothing counted with the caches off)
    hits = moved(before, after, "flagadmin_answer_cache_hits_total", cache="fixed_answers")
    misses = moved(before, after, "flagadmin_answer_cache_misses_total", cache="fixed_answers")
    assert (misses, hits) == ((1, 2) if answer_cache else (0, 0))
    # the token was found once, then kept
    assert moved(before, after, "flagadmin_answer_cache_hits_total", cache="callers") == (
        2 if answer_cache else 0
    )


# --- settings -------------------------------------------------------------------------------


def test_turned_off__404_and_requests_not_timed(make_app):
    client = make_app(prometheus=False).test_client()
    response = client.get(PATH)
    assert response.status_code == 404
    assert response.get_json()["name"] == "NotFoundError"
    # its requests are not timed: the histogram of another app of the process did not move
    other = make_app().test_client()
    before = scrape(other)
    client.get("/health")
    after = scrape(other)
    assert moved(before, after, f"{HTTP}_count", path="/health", method="GET", status="200") == 0


def test_real_server__scraped_over_http(live_server):
    # Given
    server = live_server()
    assert server.request("GET", "/health").status == 200
    # When
    reply = server.request("GET", PATH)
    # Then
    assert reply.status == 200
    samples = parse(reply.body.decode())
    assert value(samples, f"{HTTP}_count", path="/health", method="GET", status="200") >= 1


def test_other_address__served_there_and_not_on_the_main_port(live_server):
    # Given: a real server whose metrics are served on a port of their own
    port = free_port()
    server = live_server(env={"FLAGADMIN_PROMETHEUS_ADDRESS": f"127.0.0.1:{port}"})
    assert server.request("GET", "/health").status == 200
    # When
    main = server.request("GET", PATH)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", "/metrics")
        side = conn.getresponse()
        body = side.read().decode()
    finally:
        conn.close()
    # Then: 404 on the main port; there, the main port's traffic (the 404 included)
    assert main.status == 404
    assert side.status == 200
    samples = parse(body)
    assert value(samples, f"{HTTP}_count", path="/health", method="GET", status="200") >= 1
    assert value(samples, f"{HTTP}_count", path=PATH, method="GET", status="404") == 1


def test_other_address__taken__serve_refuses_to_start_naming_the_setting(live_server):
    # Given: the address is taken by another server's metrics
    port = free_port()
    env = {"FLAGADMIN_PROMETHEUS_ADDRESS": f"127.0.0.1:{port}"}
    live_server(env=env)
    # When / Then
    with pytest.raises(RuntimeError, match="FLAGADMIN_PROMETHEUS_ADDRESS"):
        live_server(env=env)


@pytest.mark.parametrize("raw", ["9100", "host", ":9100", "127.0.0.1:0", "127.0.0.1:99999", "a b:1"])
def test_other_address__malformed__refused_naming_the_variable(raw):
    from flagadmin.config import SettingsError, settings_from_env

    with pytest.raises(SettingsError, match="FLAGADMIN_PROMETHEUS_ADDRESS"):
        settings_from_env({"FLAGADMIN_PROMETHEUS_ADDRESS": raw})


def test_other_address__ipv6_and_names_read():
    from flagadmin.config import settings_from_env

    assert settings_from_env({"FLAGADMIN_PROMETHEUS_ADDRESS": "[::1]:9100"}).prometheus_address == (
        "::1",
        9100,
    )
    assert settings_from_env({"FLAGADMIN_PROMETHEUS_ADDRESS": "localhost:9100"}).prometheus_address == (
        "localhost",
        9100,
    )
    assert settings_from_env({}).prometheus_address is None
    assert settings_from_env({}).prometheus is True
