"""The Frontend API (``/api/frontend``) as browser SDKs use it: the flags on for each context in
the reference's shape (validated against its ``frontendApiFeaturesSchema``), the context read
as the reference reads it but for ``currentTime`` and disabled parents, the ETag dance, a
change in the very next answer (from another connection or process too), metrics and
registrations recorded as the backend SDKs' are, the token kinds, bad contexts refused; and
the browser SDK itself (npm ``unleash-proxy-client``, unmodified, in Node) against a live
server when npm can fetch it.

Rules are written through the admin API. Run on either engine (``--engine=postgresql``), and
with ``--answer-cache=off``. About 580 lines: the answers, the freshness, the tokens, the bad
contexts, the reports and the browser SDK's script are one API's promises, each section short.
"""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from flagadmin import events
from flagadmin.app import create_app
from flagadmin.config import Settings
from flagadmin.tokens.changes import create_api_token
from flagadmin.web.state import state

from flag_helpers import assert_reference, flag_path, toggle_path
from helpers import auth, wait_until

FRONTEND = "/api/frontend"
PROJECT = "default"
ENVIRONMENT = "development"

BLUE = {
    "name": "blue",
    "weight": 1000,
    "weightType": "variable",
    "stickiness": "default",
    "payload": {"type": "json", "value": '{"color": "blue"}'},
}


def constraint(name: str, operator: str, values=(), value=None, inverted=False) -> dict:
    found = {"contextName": name, "operator": operator, "values": list(values), "inverted": inverted}
    if value is not None:
        found["value"] = value
    return found


class Admin:
    """The admin API, in process, writing flags and their rules in ``development``."""

    def __init__(self, client, token: str):
        self.client, self.headers = client, auth(token)

    def send(self, method: str, path: str, body=None, expect=(200, 201, 202, 204)):
        response = self.client.open(path, method=method, json=body, headers=self.headers)
        assert response.status_code in expect, (method, path, response.get_json())
        return response

    def flag(
        self,
        name: str,
        *,
        strategies=({"name": "default"},),
        variants=(),
        on: bool = True,
        project: str = PROJECT,
        impression_data: bool = False,
    ) -> str:
        self.send(
            "POST",
            f"/api/admin/projects/{project}/features",
            {"name": name, "type": "release", "impressionData": impression_data},
        )
        for order, strategy in enumerate(strategies):
            body = {"parameters": {}, "constraints": [], "sortOrder": order, **strategy}
            self.send("POST", f"{flag_path(project, name)}/environments/{ENVIRONMENT}/strategies", body)
        if variants:
            body = {"variants": list(variants), "environments": [ENVIRONMENT]}
            self.send("PUT", f"{flag_path(project, name)}/variants-batch", body)
        self.switch(name, on, project)
        return name

    def switch(self, name: str, on: bool, project: str = PROJECT) -> None:
        self.send("POST", toggle_path(project, name, ENVIRONMENT, "on" if on else "off"))

    def depend(self, child: str, parent: str, enabled: bool = True, project: str = PROJECT) -> None:
        self.send(
            "POST", f"{flag_path(project, child)}/dependencies", {"feature": parent, "enabled": enabled}
        )


@pytest.fixture
def admin(client, admin_token) -> Admin:
    return Admin(client, admin_token)


@pytest.fixture
def sdk_token(db):
    """``sdk_token(type="frontend", environment=..., projects=[...])``: a new API token's secret."""

    def make(type: str = "frontend", environment: str = ENVIRONMENT, projects=("*",)) -> str:
        secret, _ = create_api_token(
            db,
            events.COMMAND_LINE,
            type=type,
            name=f"{type} token",
            environment=environment,
            projects=list(projects),
        )
        return secret

    return make


@pytest.fixture
def frontend_token(sdk_token) -> str:
    return sdk_token()


def toggles(client, token: str, query: str = "", **headers) -> dict[str, dict]:
    response = client.get(f"{FRONTEND}{query}", headers={**auth(token), **headers})
    assert response.status_code == 200, response.get_json()
    return {t["name"]: t for t in response.get_json()["toggles"]}


# --- the answer -------------------------------------------------------------------------------


def test_answer__the_references_shape__only_flags_on__variants_payloads_impression_data(
    client, admin, frontend_token
):
    admin.flag("fe-plain", impression_data=True)
    admin.flag("fe-blue", variants=[BLUE])
    admin.flag("fe-off", on=False)
    admin.flag("fe-nobody", strategies=[{"name": "flexibleRollout", "parameters": {"rollout": "0"}}])
    response = client.get(f"{FRONTEND}?userId=7", headers=auth(frontend_token))
    assert response.status_code == 200
    body = response.get_json()
    assert_reference(body, "frontendApiFeaturesSchema")
    found = {t["name"]: t for t in body["toggles"]}
    assert found["fe-plain"] == {
        "name": "fe-plain",
        "enabled": True,
        "variant": {"name": "disabled", "enabled": False, "feature_enabled": True, "featureEnabled": True},
        "impressionData": True,
    }
    assert found["fe-blue"]["variant"] == {
        "name": "blue",
        "enabled": True,
        "payload": {"type": "json", "value": '{"color": "blue"}'},
        "feature_enabled": True,
        "featureEnabled": True,
    }
    assert found["fe-blue"]["impressionData"] is False
    assert "fe-off" not in found and "fe-nobody" not in found
    assert [t["name"] for t in body["toggles"]] == sorted(found)
    assert response.headers["Cache-Control"] == "no-cache"
    assert response.headers["ETag"].startswith('W/"')


def test_answer__per_context__user_ids_constraints_and_properties(client, admin, frontend_token):
    admin.flag("fe-users", strategies=[{"name": "userWithId", "parameters": {"userIds": "17,42"}}])
    country = constraint("country", "IN", ["NO", "SE"])
    admin.flag("fe-nordic", strategies=[{"name": "default", "constraints": [country]}])
    plan = constraint("plan", "STR_STARTS_WITH", ["pro"])
    admin.flag("fe-plan", strategies=[{"name": "default", "constraints": [plan]}])

    assert "fe-users" in toggles(client, frontend_token, "?userId=42")
    assert "fe-users" not in toggles(client, frontend_token, "?userId=43")
    # properties[name]=value, or any other parameter: a property, as the reference reads it
    assert "fe-nordic" in toggles(client, frontend_token, "?properties%5Bcountry%5D=NO")
    assert "fe-nordic" in toggles(client, frontend_token, "?country=SE")
    assert "fe-nordic" not in toggles(client, frontend_token, "?country=DE")
    assert "fe-nordic" not in toggles(client, frontend_token, "?country=SE&properties%5Bcountry%5D=DE")
    assert "fe-plan" in toggles(client, frontend_token, "?plan=pro-yearly")


def test_post__the_same_answer_and_etag_as_get__numbers_and_booleans_as_text(client, admin, frontend_token):
    admin.flag(
        "fe-seats",
        strategies=[{"name": "default", "constraints": [constraint("seats", "NUM_GT", value="10")]}],
    )
    admin.flag(
        "fe-beta", strategies=[{"name": "default", "constraints": [constraint("beta", "IN", ["true"])]}]
    )
    got = client.get(f"{FRONTEND}?userId=5&seats=20&properties%5Bbeta%5D=true", headers=auth(frontend_token))
    posted = client.post(
        FRONTEND,
        json={"context": {"userId": 5, "properties": {"seats": 20, "beta": True}}},
        headers=auth(frontend_token),
    )
    assert posted.status_code == 200
    assert posted.get_json() == got.get_json()
    assert posted.headers["ETag"] == got.headers["ETag"]
    assert {"fe-seats", "fe-beta"} <= {t["name"] for t in posted.get_json()["toggles"]}
    empty = client.post(FRONTEND, json={}, headers=auth(frontend_token))
    assert empty.status_code == 200 and "fe-seats" not in {t["name"] for t in empty.get_json()["toggles"]}


def test_current_time__date_constraints_evaluated_at_the_contexts_time(client, admin, frontend_token):
    after = constraint("currentTime", "DATE_AFTER", value="2030-01-01T00:00:00.000Z")
    admin.flag("fe-launch", strategies=[{"name": "default", "constraints": [after]}])
    assert "fe-launch" not in toggles(client, frontend_token)
    assert "fe-launch" in toggles(client, frontend_token, "?currentTime=2030-06-01T12:00:00Z")
    assert "fe-launch" in toggles(client, frontend_token, "?currentTime=2030-06-01T14:00:00%2B02:00")
    assert "fe-launch" not in toggles(client, frontend_token, "?currentTime=2029-12-31T23:59:59Z")
    posted = client.post(
        FRONTEND, json={"context": {"currentTime": "2031-01-01T00:00:00.000Z"}}, headers=auth(frontend_token)
    )
    assert "fe-launch" in {t["name"] for t in posted.get_json()["toggles"]}


@pytest.mark.parametrize(
    "moment", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:30:00-01:00", "2030-13-01T00:00:00Z"]
)
def test_current_time__not_a_moment_of_years_1_to_9999__400_naming_it(client, frontend_token, moment):
    for response in (
        client.get(FRONTEND, query_string={"currentTime": moment}, headers=auth(frontend_token)),
        client.post(FRONTEND, json={"context": {"currentTime": moment}}, headers=auth(frontend_token)),
    ):
        assert response.status_code == 400, response.get_json()
        assert "currentTime" in response.get_json()["message"]


def test_dependencies__on_a_disabled_parent_and_on_an_enabled_one(client, admin, frontend_token):
    admin.flag("fe-parent", on=False)
    admin.flag("fe-needs-parent-off")
    admin.depend("fe-needs-parent-off", "fe-parent", enabled=False)
    admin.flag("fe-needs-parent-on")
    admin.depend("fe-needs-parent-on", "fe-parent", enabled=True)
    found = toggles(client, frontend_token)
    assert "fe-needs-parent-off" in found and "fe-needs-parent-on" not in found and "fe-parent" not in found
    admin.switch("fe-parent", True)
    found = toggles(client, frontend_token)
    assert "fe-needs-parent-off" not in found and {"fe-needs-parent-on", "fe-parent"} <= set(found)


def test_remote_address__the_callers_when_absent(client, admin, frontend_token):
    admin.flag("fe-local", strategies=[{"name": "remoteAddress", "parameters": {"IPs": "127.0.0.1"}}])
    assert "fe-local" in toggles(client, frontend_token)
    assert "fe-local" not in toggles(client, frontend_token, "?remoteAddress=10.1.2.3")
    assert "fe-local" in toggles(client, frontend_token, "?remoteAddress=")


def test_session_id__absent__the_same_context_gets_the_same_answer_every_time(client, admin, frontend_token):
    for i in range(12):
        rollout = {"rollout": "50", "stickiness": "default", "groupId": f"g{i}"}
        admin.flag(f"fe-half-{i}", strategies=[{"name": "flexibleRollout", "parameters": rollout}])
    first = client.get(f"{FRONTEND}?appName=web", headers=auth(frontend_token))
    again = [client.get(f"{FRONTEND}?appName=web", headers=auth(frontend_token)) for _ in range(3)]
    assert {r.headers["ETag"] for r in again} == {first.headers["ETag"]}
    halves = {t["name"] for t in first.get_json()["toggles"] if t["name"].startswith("fe-half-")}
    assert 0 < len(halves) < 12  # a draw, not all or nothing
    # a sessionId given is used: two sessions differ somewhere among twelve 50 % rollouts
    drawn = {
        frozenset(n for n in toggles(client, frontend_token, f"?sessionId=s{s}") if n.startswith("fe-half-"))
        for s in range(4)
    }
    assert len(drawn) > 1


# --- ETag, caching, freshness -----------------------------------------------------------------


def test_etag_dance__304_while_unchanged__a_change_in_the_next_answer(client, admin, frontend_token):
    admin.flag("fe-etag")
    first = client.get(f"{FRONTEND}?userId=1", headers=auth(frontend_token))
    etag = first.headers["ETag"]
    again = client.get(f"{FRONTEND}?userId=1", headers={**auth(frontend_token), "If-None-Match": etag})
    assert again.status_code == 304 and again.get_data() == b""
    assert again.headers["ETag"] == etag and again.headers["Cache-Control"] == "no-cache"
    # the same answer for another context shares the ETag (a digest of the body)
    other = client.get(f"{FRONTEND}?userId=2", headers={**auth(frontend_token), "If-None-Match": etag})
    assert other.status_code == 304
    admin.switch("fe-etag", False)
    changed = client.get(f"{FRONTEND}?userId=1", headers={**auth(frontend_token), "If-None-Match": etag})
    assert changed.status_code == 200 and changed.headers["ETag"] != etag
    assert "fe-etag" not in {t["name"] for t in changed.get_json()["toggles"]}


def test_gzip__for_clients_that_take_it(client, admin, frontend_token):
    for i in range(20):
        admin.flag(f"fe-many-{i:02d}", variants=[BLUE])
    plain = client.get(FRONTEND, headers=auth(frontend_token))
    zipped = client.get(FRONTEND, headers={**auth(frontend_token), "Accept-Encoding": "gzip"})
    assert zipped.headers["Content-Encoding"] == "gzip"
    assert gzip.decompress(zipped.get_data()) == plain.get_data()
    etag = zipped.headers["ETag"]
    assert etag.endswith(':gzip"')
    again = client.get(
        FRONTEND, headers={**auth(frontend_token), "Accept-Encoding": "gzip", "If-None-Match": etag}
    )
    assert again.status_code == 304


def test_a_write_of_another_app_on_the_same_database__in_the_next_answer(
    make_app, database, admin, frontend_token
):
    """Another app (another process's view of the database: its own connections and engines)
    writes; the next answer of this one shows it, and the engine is built again once only."""
    admin.flag("fe-elsewhere")
    mine = make_app().test_client()
    assert "fe-elsewhere" in toggles(mine, frontend_token)
    built = state(mine.application).engines.built
    admin.switch("fe-elsewhere", False)
    assert "fe-elsewhere" not in toggles(mine, frontend_token)
    assert "fe-elsewhere" not in toggles(mine, frontend_token, "?userId=9")
    assert state(mine.application).engines.built == built + 1


def test_a_write_elsewhere__the_engine_and_the_etag_stay(client, admin, sdk_token):
    """A write outside the token's projects moves the rules revision but not its state: no new
    engine, the same ETag."""
    admin.flag("fe-mine")
    token = sdk_token(projects=[PROJECT])
    first = client.get(FRONTEND, headers=auth(token))
    built = state(client.application).engines.built
    admin.flag("fe-other-project", project="mobile")
    again = client.get(FRONTEND, headers={**auth(token), "If-None-Match": first.headers["ETag"]})
    assert again.status_code == 304
    assert state(client.application).engines.built == built


def test_projects__a_token_sees_its_projects_flags_only(client, admin, sdk_token):
    admin.flag("fe-in-default")
    admin.flag("fe-in-mobile", project="mobile")
    mobile = sdk_token(projects=["mobile"])
    found = toggles(client, mobile)
    assert "fe-in-mobile" in found and "fe-in-default" not in found
    production = sdk_token(environment="production")
    assert "fe-in-default" not in toggles(client, production)


# --- tokens -----------------------------------------------------------------------------------


def test_tokens__none_or_unknown_401__other_kinds_403(client, sdk_token, admin_token):
    for headers in ({}, auth("*:development.0000")):
        response = client.get(FRONTEND, headers=headers)
        assert response.status_code == 401
        assert response.get_json()["message"].startswith("This endpoint requires an API token")
    for token in (sdk_token(type="client"), admin_token):
        for method, path, body in (
            ("GET", FRONTEND, None),
            ("POST", FRONTEND, {"context": {}}),
            ("POST", f"{FRONTEND}/client/metrics", {"appName": "web"}),
        ):
            response = client.open(path, method=method, json=body, headers=auth(token))
            assert response.status_code == 403, (token[:10], path)
            assert response.get_json()["message"] == (
                "invalid token: expected a different token type for this endpoint"
            )
    frontend = sdk_token()
    assert client.get("/api/client/features", headers=auth(frontend)).status_code == 403
    assert client.get("/api/admin/ui-config", headers=auth(frontend)).status_code == 403


def test_paths__not_implemented_405__no_single_flag_404(client, frontend_token):
    for path in ("/client/features", "/health", "/internal-backstage/prometheus"):
        response = client.get(f"{FRONTEND}{path}", headers=auth(frontend_token))
        assert response.status_code == 405
        assert response.get_json()["name"] == "NotImplementedError"
        assert response.get_json()["message"] == "The frontend API does not support this endpoint."
    assert client.get(f"{FRONTEND}/features/fe-any", headers=auth(frontend_token)).status_code == 404


# --- bad contexts -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ("?userId=1&userId=2", "userId"),
        ("?properties=x", "properties"),
        ("?properties%5Ba%5D%5Bb%5D=x", "properties"),
        ("?currentTime=tomorrow", "currentTime"),
        ("?currentTime=2030-01-01", "currentTime"),
        ("?userId=" + "x" * 2001, "userId"),
        ("?" + "&".join(f"p{i}=1" for i in range(101)), "properties"),
    ],
)
def test_bad_query__400_naming_the_field(client, frontend_token, query, named):
    response = client.get(f"{FRONTEND}{query}", headers=auth(frontend_token))
    assert response.status_code == 400
    assert named in response.get_json()["message"]


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({"context": []}, "context"),
        ({"context": {"userId": {"a": 1}}}, "userId"),
        ({"context": {"properties": ["x"]}}, "properties"),
        ({"context": {"properties": {"tags": ["a"]}}}, "properties.tags"),
        ({"context": {"currentTime": 1}}, "currentTime"),
        ([], "body"),
    ],
)
def test_bad_body__400_naming_the_field(client, frontend_token, body, named):
    response = client.post(FRONTEND, json=body, headers=auth(frontend_token))
    assert response.status_code == 400
    assert named in response.get_json()["message"] or named == "body"


# --- metrics and registrations ----------------------------------------------------------------


METRICS = {
    "appName": "shop-web",
    "instanceId": "browser",
    "bucket": {
        "start": "2026-11-28T10:00:00.000Z",
        "stop": "2026-11-28T10:00:30.000Z",
        "toggles": {"fe-counted": {"yes": 3, "no": 1, "variants": {"blue": 3}}},
    },
    "impactMetrics": [],
}


def test_metrics__200__last_seen_and_the_application_as_a_frontend_sdk(
    client, admin, frontend_token, admin_token
):
    admin.flag("fe-counted", variants=[BLUE])

    def seen() -> str | None:
        flag = client.get(flag_path(PROJECT, "fe-counted"), headers=auth(admin_token)).get_json()
        (development,) = [e for e in flag["environments"] if e["name"] == ENVIRONMENT]
        return development["lastSeenAt"]

    assert seen() is None
    response = client.post(
        f"{FRONTEND}/client/metrics",
        json=METRICS,
        headers={**auth(frontend_token), "unleash-sdk": "unleash-js-sdk:3.8.2"},
    )
    assert response.status_code == 200 and response.get_data() == b""
    state(client.application).client_metrics.flush()
    assert seen() is not None
    app = client.get("/api/admin/metrics/applications/shop-web", headers=auth(admin_token)).get_json()
    (instance,) = app["instances"]
    assert instance["instanceId"] == "browser"
    assert instance["sdkType"] == "frontend"
    assert instance["sdkVersion"] == "unleash-js-sdk:3.8.2"
    assert instance["environment"] == ENVIRONMENT


def test_register__200__the_application_recorded(client, frontend_token, admin_token):
    body = {
        "appName": "shop-mobile",
        "instanceId": "ios-1",
        "interval": 30000,
        "started": "2026-11-28T10:00:00Z",
        "strategies": [],
        "sdkVersion": "unleash-ios:2.0.0",
    }
    response = client.post(f"{FRONTEND}/client/register", json=body, headers=auth(frontend_token))
    assert response.status_code == 200
    state(client.application).client_metrics.flush()
    app = client.get("/api/admin/metrics/applications/shop-mobile", headers=auth(admin_token)).get_json()
    assert [(i["instanceId"], i["sdkType"]) for i in app["instances"]] == [("ios-1", "frontend")]


def test_metrics__a_bad_body__400(client, frontend_token):
    response = client.post(f"{FRONTEND}/client/metrics", json={"bucket": {}}, headers=auth(frontend_token))
    assert response.status_code == 400
    assert "appName" in response.get_json()["message"]


# --- the browser SDK itself -------------------------------------------------------------------

SDK_PACKAGE = "unleash-proxy-client@3.8.2"

#: A Node script driving the browser SDK: start with a context, read flags, change the context,
#: read again, send metrics, stop; it prints one JSON line of what it saw.
SDK_SCRIPT = r"""
const { UnleashClient, InMemoryStorageProvider } = require(process.env.SDK_MODULE);
const names = ["fe-sdk-all", "fe-sdk-nordic", "fe-sdk-blue", "fe-sdk-off"];
const seen = (client) =>
  Object.fromEntries(names.map((n) => [n, {on: client.isEnabled(n), variant: client.getVariant(n)}]));
const requests = [];
const realFetch = globalThis.fetch;
const fetch = async (url, options) => {
  const response = await realFetch(url, options);
  requests.push({url: String(url).replace(/^https?:\/\/[^/]+/, ""), method: options.method || "GET",
                 ifNoneMatch: (options.headers || {})["if-none-match"] || null, status: response.status});
  return response;
};
(async () => {
  const client = new UnleashClient({
    url: process.env.SDK_URL, clientKey: process.env.SDK_KEY, appName: "sdk-shop",
    refreshInterval: 0, metricsInterval: 0, storageProvider: new InMemoryStorageProvider(), fetch,
    context: {userId: "42", properties: {country: "SE"}}, usePOSTrequests: process.env.SDK_POST === "1",
  });
  const errors = [];
  client.on("error", (e) => errors.push(e));
  await client.start();
  const first = seen(client);
  await client.updateContext({userId: "43", properties: {country: "DE"}});
  const second = seen(client);
  await client.updateContext({userId: "43", properties: {country: "DE"}});
  await client.sendMetrics();
  client.stop();
  console.log(JSON.stringify({first, second, errors, requests}));
})();
"""


@pytest.fixture(scope="module")
def browser_sdk(tmp_path_factory) -> Path:
    """The browser SDK installed by npm (its own cache keeps it for later runs): the path of its
    module. Skipped, saying why, without node and npm or when the registry cannot be reached."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip(f"needs node and npm to install {SDK_PACKAGE} (docs/tests.md)")
    folder = tmp_path_factory.mktemp("browser-sdk")
    done = subprocess.run(
        [npm, "install", "--silent", "--no-audit", "--no-fund", "--prefix", str(folder), SDK_PACKAGE],
        capture_output=True,
        text=True,
        timeout=180,
    )
    module = folder / "node_modules" / "unleash-proxy-client"
    if done.returncode != 0 or not module.exists():
        pytest.skip(f"npm could not install {SDK_PACKAGE}: {done.stderr.strip()[-500:]}")
    return module


@pytest.mark.parametrize("post", [False, True], ids=["GET", "POST"])
def test_browser_sdk__unmodified__flags_per_context_etag_metrics(
    browser_sdk, admin, frontend_token, admin_token, live_server, database, tmp_path, post
):
    admin.flag("fe-sdk-all")
    admin.flag(
        "fe-sdk-nordic",
        strategies=[{"name": "default", "constraints": [constraint("country", "IN", ["SE"])]}],
    )
    admin.flag(
        "fe-sdk-blue", strategies=[{"name": "userWithId", "parameters": {"userIds": "42"}}], variants=[BLUE]
    )
    admin.flag("fe-sdk-off", on=False)
    server = live_server()
    script = tmp_path / "sdk.js"
    script.write_text(SDK_SCRIPT)
    env = {
        "SDK_MODULE": str(browser_sdk),
        "SDK_URL": f"{server.url}{FRONTEND}",
        "SDK_KEY": frontend_token,
        "SDK_POST": "1" if post else "0",
        "PATH": "/usr/bin:/bin",
    }
    done = subprocess.run(
        [shutil.which("node"), str(script)], capture_output=True, text=True, timeout=60, env=env
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["errors"] == []
    assert {n: s["on"] for n, s in seen["first"].items()} == {
        "fe-sdk-all": True,
        "fe-sdk-nordic": True,
        "fe-sdk-blue": True,
        "fe-sdk-off": False,
    }
    assert seen["first"]["fe-sdk-blue"]["variant"]["payload"] == BLUE["payload"]
    assert seen["first"]["fe-sdk-blue"]["variant"]["name"] == "blue"
    assert {n: s["on"] for n, s in seen["second"].items()} == {
        "fe-sdk-all": True,
        "fe-sdk-nordic": False,
        "fe-sdk-blue": False,
        "fe-sdk-off": False,
    }
    assert seen["second"]["fe-sdk-blue"]["variant"] == {
        "name": "disabled",
        "enabled": False,
        "feature_enabled": False,
    }
    fetches = [r for r in seen["requests"] if not r["url"].endswith("/client/metrics")]
    assert [r["status"] for r in fetches] == [200, 200, 304]
    assert fetches[2]["ifNoneMatch"] is not None
    assert all(r["method"] == ("POST" if post else "GET") for r in fetches)
    (metrics,) = [r for r in seen["requests"] if r["url"].endswith("/client/metrics")]
    assert metrics["status"] == 200
    # the live server's writer records the metrics within its flush interval
    client = create_app({"DATABASE": database, "SETTINGS": Settings(git_revision="t")}).test_client()
    wait_until(
        lambda: (
            client.get("/api/admin/metrics/applications/sdk-shop", headers=auth(admin_token)).status_code
            == 200
        ),
        timeout=20,
    )
    app = client.get("/api/admin/metrics/applications/sdk-shop", headers=auth(admin_token)).get_json()
    assert {i["sdkType"] for i in app["instances"]} == {"frontend"}
