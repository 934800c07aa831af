"""``GET /api/client/features`` and ``/api/client/features/{name}``: the reference server's
format (validated against its ``clientFeaturesSchema``), only the token's environment and
projects, the filters, segments by id or inlined by the SDK's spec header, and an ETag that
changes exactly when the token's view does; the rules revision (``Versions.rules``) that keeps
the kept answers true moves with every write that can change an answer and with no other.

Run on either engine (``--engine=postgresql``), and with ``--answer-cache=off``.
"""

from __future__ import annotations

import json
import uuid

import pytest
import schemathesis
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings
from schemathesis.config import SchemathesisConfig

from flagadmin import events
from flagadmin.store import settings
from flagadmin.tokens.changes import create_api_token

from flag_helpers import assert_reference, flag_path
from helpers import auth, examples

FEATURES = "/api/client/features"
NEW_SPEC = {"Unleash-Client-Spec": "5.2.0"}

COUNTRY = {
    "contextName": "country",
    "operator": "IN",
    "values": ["NO", "SE"],
    "inverted": False,
    "caseInsensitive": False,
}
BETA = {
    "contextName": "beta",
    "operator": "IN",
    "values": ["true"],
    "inverted": False,
    "caseInsensitive": False,
}
PLAN = {
    "contextName": "plan",
    "operator": "STR_STARTS_WITH",
    "values": ["pro"],
    "inverted": False,
    "caseInsensitive": True,
}
ROLLOUT = {"rollout": "50", "stickiness": "default", "groupId": "checkout-v2"}
BLUE = {
    "name": "blue",
    "weight": 1000,
    "weightType": "variable",
    "stickiness": "default",
    "payload": {"type": "string", "value": "b"},
}


# --- writing rules: the rule tables of schema.sql, as the rules' store functions write them ------


def compact(value) -> str:
    return json.dumps(value, separators=(",", ":"))


def add_segment(db, name: str, constraints: list[dict], project: str | None = None) -> int:
    with db.write("features"):
        return db.insert(
            "INSERT INTO segments (name, project_id, constraints, created_at) VALUES (?, ?, ?, ?)",
            [name, project, compact(constraints), "2026-11-01T00:00:00.000Z"],
        )


def add_strategy(
    db,
    feature: str,
    environment: str = "development",
    name: str = "flexibleRollout",
    *,
    parameters: dict | None = None,
    constraints: list[dict] = (),
    variants: list[dict] = (),
    segments: list[int] = (),
    sort_order: int = 0,
    disabled: bool = False,
) -> str:
    strategy_id = str(uuid.uuid4())
    with db.write("features"):
        db.run(
            "INSERT INTO feature_strategies (id, feature_name, environment, strategy_name, disabled,"
            " sort_order, parameters, constraints, variants, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                strategy_id,
                feature,
                environment,
                name,
                int(disabled),
                sort_order,
                compact(parameters or {}),
                compact(list(constraints)),
                compact(list(variants)),
                "2026-11-01T00:00:00.000Z",
            ],
        )
        for segment in segments:
            db.run(
                "INSERT INTO feature_strategy_segments (strategy_id, segment_id) VALUES (?, ?)",
                [strategy_id, segment],
            )
    return strategy_id


def set_variants(db, feature: str, environment: str, variants: list[dict]) -> None:
    with db.write("features"):
        db.run(
            "INSERT INTO feature_variants (feature_name, environment, variants) VALUES (?, ?, ?)"
            " ON CONFLICT (feature_name, environment) DO UPDATE SET variants = excluded.variants",
            [feature, environment, compact(variants)],
        )


def set_dependency(
    db, child: str, parent: str, enabled: bool = True, variants: list[str] | None = None
) -> None:
    with db.write("features"):
        db.run(
            "INSERT INTO feature_dependencies (child, parent, enabled, variants) VALUES (?, ?, ?, ?)",
            [child, parent, int(enabled), None if variants is None else compact(variants)],
        )


def add_tag(db, feature: str, type_: str, value: str) -> None:
    with db.write("features"):
        db.run(
            "INSERT INTO feature_tags (feature_name, type, value) VALUES (?, ?, ?)", [feature, type_, value]
        )


# --- fixtures -----------------------------------------------------------------------------------


@pytest.fixture
def sdk_token(db):
    """``sdk_token(environment, projects)``: the secret of a new client token (projects None:
    every project)."""

    def make(
        environment: str = "development", projects: list[str] | None = None, type: str = "client"
    ) -> str:
        secret, _ = create_api_token(
            db, events.COMMAND_LINE, type=type, name="sdk", environment=environment, projects=projects
        )
        return secret

    return make


def features_of(response) -> dict[str, dict]:
    return {feature["name"]: feature for feature in response.get_json()["features"]}


def rules_version(db) -> int:
    return settings.versions(db).rules


# --- the answer ----------------------------------------------------------------------------------


def test_features__token_of_one_project__its_live_flags_in_its_environment_in_the_reference_format(
    client, sdk_token, db, assert_valid
):
    # Given: a client token of project default in development
    token = sdk_token("development", ["default"])
    # When
    response = client.get(FEATURES, headers={**auth(token), **NEW_SPEC})
    # Then: the reference's schema and our document; the live flags of default only, by name
    assert response.status_code == 200
    body = response.get_json()
    assert_reference(body, "clientFeaturesSchema")
    assert_valid(response, FEATURES)
    live = db.column(
        "SELECT name FROM features WHERE project_id = 'default' AND archived_at IS NULL ORDER BY name"
    )
    assert [f["name"] for f in body["features"]] == sorted(live)
    assert body["version"] == 2
    assert body["segments"] == []
    assert body["query"] == {
        "project": ["default"],
        "environment": "development",
        "inlineSegmentConstraints": False,
    }
    assert body["meta"]["etag"] == response.headers["ETag"]
    assert body["meta"]["revisionId"] == rules_version(db)
    # enabled is the environment's switch; the flag's own fields as stored
    flags = features_of(response)
    assert flags["beta-dashboard"]["enabled"] is False and flags["checkout-v2"]["enabled"] is True
    assert flags["checkout-v2"] == {
        "name": "checkout-v2",
        "type": "release",
        "enabled": True,
        "project": "default",
        "stale": False,
        "strategies": [],
        "variants": [],
        "description": "New checkout flow",
        "impressionData": True,
    }


def test_features__production_token__production_switches(client, sdk_token):
    flags = features_of(client.get(FEATURES, headers=auth(sdk_token("production"))))
    assert flags["beta-dashboard"]["enabled"] is True and flags["dark-mode"]["enabled"] is False
    assert {f["project"] for f in flags.values()} == {"default", "mobile", "payments", "growth"}


def test_features__strategies_of_the_environment_in_order__disabled_ones_left_out(client, sdk_token, db):
    # Given: checkout-v2 has three strategies in development (one disabled) and one in production
    add_strategy(db, "checkout-v2", name="default", sort_order=2)
    add_strategy(
        db,
        "checkout-v2",
        parameters=ROLLOUT,
        constraints=[COUNTRY],
        variants=[BLUE],
        sort_order=1,
    )
    add_strategy(db, "checkout-v2", name="userWithId", parameters={"userIds": "1,2"}, disabled=True)
    add_strategy(db, "checkout-v2", "production", name="remoteAddress", parameters={"IPs": "10.0.0.1"})
    # When
    flags = features_of(client.get(FEATURES, headers={**auth(sdk_token()), **NEW_SPEC}))
    # Then: by sort order, no ids, no sort order, no disabled strategy, nothing of production
    assert flags["checkout-v2"]["strategies"] == [
        {"name": "flexibleRollout", "constraints": [COUNTRY], "parameters": ROLLOUT, "variants": [BLUE]},
        {"name": "default", "constraints": [], "parameters": {}, "variants": []},
    ]


def test_features__every_strategy_disabled__off_as_the_reference_answers__none_at_all_on(
    client, sdk_token, db
):
    # Given: dark-mode (on in development) with one strategy there, disabled
    add_strategy(db, "dark-mode", name="default", disabled=True)
    # When
    flags = features_of(client.get(FEATURES, headers=auth(sdk_token())))
    # Then: off with no strategies; search-ranking (on, no strategy at all) stays on
    assert flags["dark-mode"]["enabled"] is False and flags["dark-mode"]["strategies"] == []
    assert flags["search-ranking"]["enabled"] is True and flags["search-ranking"]["strategies"] == []


def test_features__segments__by_id_for_new_sdks__inlined_for_old_ones(client, sdk_token, db):
    # Given: two segments, one used by a strategy of checkout-v2, the other by nobody in development
    beta = add_segment(db, "beta users", [BETA])
    plans = add_segment(db, "pro plans", [PLAN])
    unused = add_segment(db, "unused", [COUNTRY])
    add_strategy(db, "checkout-v2", name="default", constraints=[COUNTRY], segments=[plans, beta])
    add_strategy(db, "dark-mode", "production", name="default", segments=[unused])
    token = sdk_token()
    # When: an SDK of spec 4.2.0 or newer
    new = client.get(FEATURES, headers={**auth(token), "Unleash-Client-Spec": "4.2.0"}).get_json()
    # Then: segment ids on the strategy, the segments it uses at the top, by id
    strategy = {f["name"]: f for f in new["features"]}["checkout-v2"]["strategies"][0]
    assert strategy["constraints"] == [COUNTRY] and strategy["segments"] == [beta, plans]
    assert new["segments"] == [
        {"id": beta, "name": "beta users", "constraints": [BETA]},
        {"id": plans, "name": "pro plans", "constraints": [PLAN]},
    ]
    assert_reference(new, "clientFeaturesSchema")
    # When: an SDK that says no spec, or one before 4.2.0 (a pre-release of 4.2.0 is before it)
    for headers in ({}, {"Unleash-Client-Spec": "4.1.9"}, {"Unleash-Client-Spec": "4.2.0-beta.1"}):
        old = client.get(FEATURES, headers={**auth(token), **headers}).get_json()
        # Then: the segments' constraints follow the strategy's own, no ids, no segments list
        strategy = {f["name"]: f for f in old["features"]}["checkout-v2"]["strategies"][0]
        assert strategy == {
            "name": "default",
            "constraints": [COUNTRY, BETA, PLAN],
            "parameters": {},
            "variants": [],
        }
        assert "segments" not in old
        assert old["query"]["inlineSegmentConstraints"] is True
        assert_reference(old, "clientFeaturesSchema")


@pytest.mark.parametrize("spec", ["banana", "5", "5.1", "v5.1.0", "05.1.0", "5.1.0-", "x" * 300])
def test_features__spec_header_not_semver__400_saying_so(client, sdk_token, spec, assert_valid):
    response = client.get(FEATURES, headers={**auth(sdk_token()), "Unleash-Client-Spec": spec})
    assert response.status_code == 400
    assert "Unleash-Client-Spec" in response.get_json()["message"]
    assert_valid(response, FEATURES)


def test_features__flag_variants_of_the_environment_and_dependencies(client, sdk_token, db):
    # Given: variants in development and production; two children, one needing its parent off
    set_variants(db, "checkout-v2", "development", [BLUE])
    set_variants(db, "checkout-v2", "production", [{**BLUE, "name": "red"}])
    set_dependency(db, "onboarding-tour", "checkout-v2", True, ["blue"])
    set_dependency(db, "i18n-search", "checkout-v2", False)
    set_dependency(db, "recommendations", "checkout-v2", True)
    # When
    response = client.get(FEATURES, headers={**auth(sdk_token()), **NEW_SPEC})
    flags = features_of(response)
    # Then
    assert flags["checkout-v2"]["variants"] == [BLUE]
    assert "dependencies" not in flags["checkout-v2"]
    assert flags["onboarding-tour"]["dependencies"] == [
        {"feature": "checkout-v2", "enabled": True, "variants": ["blue"]}
    ]
    assert flags["i18n-search"]["dependencies"] == [{"feature": "checkout-v2", "enabled": False}]
    assert flags["recommendations"]["dependencies"] == [
        {"feature": "checkout-v2", "enabled": True, "variants": []}
    ]
    assert_reference(response.get_json(), "clientFeaturesSchema")


def test_features__archived_flags_left_out(client, sdk_token, db):
    flags = features_of(client.get(FEATURES, headers=auth(sdk_token())))
    archived = set(db.column("SELECT name FROM features WHERE archived_at IS NOT NULL"))
    assert archived and not archived & set(flags)


# --- filters ----------------------------------------------------------------------------------------


def test_filters__project_narrowed_to_the_tokens__name_prefix__tags(client, sdk_token, db):
    # Given: a token of default and mobile; tags on three flags
    token = sdk_token("development", ["default", "mobile"])
    add_tag(db, "checkout-v2", "simple", "payment")
    add_tag(db, "mobile-dark-mode", "simple", "ui")
    add_tag(db, "apple-pay", "simple", "payment")

    def names(query: str) -> list[str]:
        response = client.get(f"{FEATURES}?{query}", headers=auth(token))
        assert response.status_code == 200, response.get_json()
        assert_reference(response.get_json(), "clientFeaturesSchema")
        return [f["name"] for f in response.get_json()["features"]]

    # Then: project asks among the token's projects only (payments is not the token's)
    assert {n for n in names("project=mobile")} == set(
        db.column("SELECT name FROM features WHERE project_id = 'mobile' AND archived_at IS NULL")
    )
    assert names("project=payments") == []
    assert set(names("project=payments&project=mobile")) == set(names("project=mobile"))
    # namePrefix: exact prefix, case and all
    assert names("namePrefix=mobile-o") == ["mobile-offline-mode", "mobile-onboarding"]
    assert names("namePrefix=Mobile") == []
    # tag: any of them, within the token's projects (apple-pay is of payments)
    assert names("tag=simple:payment") == ["checkout-v2"]
    assert names("tag=simple:payment&tag=simple:ui") == ["checkout-v2", "mobile-dark-mode"]
    # echoed in query
    body = client.get(
        f"{FEATURES}?tag=simple:ui&namePrefix=mob&project=mobile", headers=auth(token)
    ).get_json()
    assert body["query"] == {
        "tag": [["simple", "ui"]],
        "project": ["mobile"],
        "namePrefix": "mob",
        "environment": "development",
        "inlineSegmentConstraints": True,
    }
    # environment is the token's whatever the query says; unknown parameters are let be
    assert names("environment=production&inlineSegmentConstraints=false&other=1") == names("")


@pytest.mark.parametrize(
    "query",
    [
        "tag=simple",
        "tag=:x",
        "tag=x:",
        "project=",
        "namePrefix=a&namePrefix=b",
        "namePrefix=" + "a" * 201,
        "namePrefix=a%00b",
        "project=x%00",
    ],
)
def test_filters__malformed__400_naming_the_parameter(client, sdk_token, query, assert_valid):
    response = client.get(f"{FEATURES}?{query}", headers=auth(sdk_token()))
    assert response.status_code == 400
    assert query.split("=")[0] in response.get_json()["message"]
    assert_valid(response, FEATURES)


# --- one flag -----------------------------------------------------------------------------------------


def test_one_feature__as_in_the_list__404_unknown_archived_or_other_project(client, sdk_token, db):
    # Given
    add_strategy(db, "checkout-v2", parameters=ROLLOUT, constraints=[COUNTRY])
    token = sdk_token("development", ["default"])
    listed = features_of(client.get(FEATURES, headers=auth(token)))
    # When / Then
    one = client.get(f"{FEATURES}/checkout-v2", headers=auth(token))
    assert one.status_code == 200
    assert one.get_json() == listed["checkout-v2"]
    assert_reference(one.get_json(), "clientFeatureSchema")
    for name in ("no-such-flag", "old-checkout", "mobile-dark-mode", "checkout", "a%00b", "x" * 300):
        assert client.get(f"{FEATURES}/{name}", headers=auth(token)).status_code == 404, name


# --- who may read it ----------------------------------------------------------------------------------


def test_tokens__client_and_backend_tokens_read__admin_token_403__none_401(client, sdk_token, admin_token):
    assert client.get(FEATURES, headers=auth(sdk_token(type="backend"))).status_code == 200
    assert client.get(FEATURES, headers=auth(admin_token)).status_code == 403
    assert client.get(FEATURES).status_code == 401


# --- ETags -----------------------------------------------------------------------------------------------


def ask(client, token: str, etag: str | None = None, **headers):
    sent = {**auth(token), **NEW_SPEC, **headers}
    if etag is not None:
        sent["If-None-Match"] = etag
    return client.get(FEATURES, headers=sent)


def test_etag__304_without_a_body_while_nothing_changes__gzip_has_its_own(client, sdk_token):
    token = sdk_token()
    plain = ask(client, token)
    etag = plain.headers["ETag"]
    assert etag.startswith('W/"')
    again = ask(client, token, etag)
    assert again.status_code == 304 and again.get_data() == b"" and again.headers["ETag"] == etag
    gzipped = ask(client, token, **{"Accept-Encoding": "gzip"})
    assert gzipped.headers["Content-Encoding"] == "gzip" and gzipped.headers["ETag"] != etag
    assert ask(client, token, gzipped.headers["ETag"], **{"Accept-Encoding": "gzip"}).status_code == 304
    # the same view asked by another token of the same scope: the same ETag
    assert ask(client, sdk_token()).headers["ETag"] == etag


def test_etag__changes_exactly_when_the_tokens_view_changes(client, sdk_token, db, alice):
    # Given: a token of default in development, its ETag
    token = sdk_token("development", ["default"])
    etag = ask(client, token).headers["ETag"]
    version = rules_version(db)

    def still() -> bool:
        return ask(client, token, etag).status_code == 304

    # When: writes outside its view (another project; another environment), the revision moves
    add_strategy(db, "mobile-dark-mode", parameters={"rollout": "10"})
    add_strategy(db, "checkout-v2", "production", name="default")
    set_variants(db, "dark-mode", "production", [BLUE])
    assert rules_version(db) > version
    # Then: the same ETag, 304
    assert still()
    # When: a write in its view: a strategy of checkout-v2 in development
    add_strategy(db, "checkout-v2", name="default")
    # Then: a new answer with the strategy, under a new ETag, which holds in turn
    response = ask(client, token, etag)
    assert response.status_code == 200
    assert features_of(response)["checkout-v2"]["strategies"][0]["name"] == "default"
    etag = response.headers["ETag"]
    assert still()
    # When: its switch, through the admin API
    off = client.post(
        f"{flag_path('default', 'checkout-v2')}/environments/development/off", headers=auth(alice)
    )
    assert off.status_code == 200, off.get_json()
    # Then
    response = ask(client, token, etag)
    assert response.status_code == 200 and features_of(response)["checkout-v2"]["enabled"] is False
    etag = response.headers["ETag"]
    # When: last-seen times move (what metrics write): nothing moves
    version = rules_version(db)
    with db.write("features"):
        db.run("UPDATE features SET last_seen_at = '2026-11-30T00:00:00.000Z' WHERE project_id = 'default'")
        db.run(
            "UPDATE feature_environments SET last_seen_at = '2026-11-30T00:00:00.000Z'"
            " WHERE feature_name = 'checkout-v2'"
        )
    assert rules_version(db) == version
    assert still()


def test_etag__another_app_on_the_same_database_sees_a_change_at_its_next_request(make_app, sdk_token, db):
    """Two apps with caches of their own, as two processes: a write through neither is in the
    next answer of both (the revision is read from the database on every request)."""
    token = sdk_token()
    first, second = make_app().test_client(), make_app().test_client()
    etags = [ask(c, token).headers["ETag"] for c in (first, second)]
    assert etags[0] == etags[1]
    add_strategy(db, "checkout-v2", name="default")
    for c in (first, second):
        response = ask(c, token, etags[0])
        assert response.status_code == 200
        assert features_of(response)["checkout-v2"]["strategies"] == [
            {"name": "default", "constraints": [], "parameters": {}, "variants": []}
        ]


# --- the rules revision -----------------------------------------------------------------------------------


def moves(db, sql: str, params=()) -> bool:
    before = rules_version(db)
    with db.write("features"):
        db.run(sql, params)
    return rules_version(db) > before


def test_rules_version__moves_with_every_write_an_answer_can_show(db):
    strategy = add_strategy(db, "checkout-v2")
    segment = add_segment(db, "s", [BETA])
    set_variants(db, "checkout-v2", "development", [BLUE])
    set_dependency(db, "dark-mode", "checkout-v2")
    add_tag(db, "checkout-v2", "simple", "xx")
    shown = [
        "UPDATE features SET description = 'new words' WHERE name = 'checkout-v2'",
        "UPDATE features SET stale = 1 WHERE name = 'checkout-v2'",
        "UPDATE features SET impression_data = 0 WHERE name = 'checkout-v2'",
        "UPDATE features SET type = 'experiment' WHERE name = 'checkout-v2'",
        "UPDATE features SET archived_at = '2026-11-30T00:00:00.000Z' WHERE name = 'beta-access'",
        "UPDATE feature_environments SET enabled = 1 - enabled WHERE feature_name = 'dark-mode'",
        f"UPDATE feature_strategies SET parameters = '{{}}' WHERE id = '{strategy}'",
        f"UPDATE segments SET constraints = '[]' WHERE id = {segment}",
        f"INSERT INTO feature_strategy_segments (strategy_id, segment_id) VALUES ('{strategy}', {segment})",
        f"DELETE FROM feature_strategy_segments WHERE strategy_id = '{strategy}'",
        "UPDATE feature_variants SET variants = '[]' WHERE feature_name = 'checkout-v2'",
        "UPDATE feature_dependencies SET enabled = 0 WHERE child = 'dark-mode'",
        "DELETE FROM feature_dependencies WHERE child = 'dark-mode'",
        "DELETE FROM feature_tags WHERE feature_name = 'checkout-v2'",
        f"DELETE FROM feature_strategies WHERE id = '{strategy}'",
        "UPDATE environments SET sort_order = 5 WHERE name = 'production'",
        "DELETE FROM feature_variants WHERE feature_name = 'checkout-v2'",
        f"DELETE FROM segments WHERE id = {segment}",
    ]
    for sql in shown:
        assert moves(db, sql), sql


def test_rules_version__still_for_writes_no_answer_shows(db):
    still = [
        "UPDATE features SET last_seen_at = '2026-11-30T00:00:00.000Z'",
        "UPDATE feature_environments SET last_seen_at = '2026-11-30T00:00:00.000Z'",
        "UPDATE features SET description = description WHERE name = 'checkout-v2'",
        "UPDATE feature_environments SET enabled = enabled",
        "UPDATE feature_strategies SET title = 'x' WHERE id = 'no such strategy'",
        "DELETE FROM segments WHERE id = -1",
        "UPDATE projects SET description = 'words'",
        "INSERT INTO favorite_features (user_id, feature_name) VALUES (2, 'dark-mode')"
        " ON CONFLICT DO NOTHING",
    ]
    for sql in still:
        assert not moves(db, sql), sql


def test_rules_version__read_with_the_other_counters_in_one_statement(db):
    from helpers import statements_of

    found = []
    statements = statements_of(db, lambda: found.append(settings.versions(db)))
    assert len(statements) == 1 and "rules_version" in statements[0]
    assert found[0].rules == int(db.value("SELECT value FROM settings WHERE key = 'rules_version'"))


# --- generated and hostile requests, with a client token -------------------------------------------


@pytest.fixture
def client_api_schema(make_app, sdk_token):
    """The document's Client API operations, with a client token as the security scheme's key
    (the admin API's run, in test_openapi.py, sends an admin token, which gets 403 here)."""
    app = make_app(auth_failure_limit="100000/minute")
    config = SchemathesisConfig.from_dict(
        {"generation": {"allow-x00": False}, "auth": {"openapi": {"apiKey": {"api_key": sdk_token()}}}}
    )
    return schemathesis.openapi.from_wsgi("/docs/openapi.json", app, config=config)


client_api = schemathesis.pytest.from_fixture("client_api_schema").include(
    path_regex=r"^/api/client/features"
)


@client_api.parametrize()
@hypothesis_settings(max_examples=examples(40), deadline=None, suppress_health_check=list(HealthCheck))
def test_client_api__schemathesis_finds_nothing(case):
    case.call_and_validate(headers={"Accept-Encoding": "identity"})
