"""A flag's variants per environment on the reference server's paths (``variants-batch``,
``.../environments/{env}/variants``): the weights shared as the reference shares them, the
stored list sorted as the reference sorts it, payloads and overrides checked, the events
written, who may change them, and hostile bodies refused with nothing stored.

Demo data (seed/demo.json): alice is an Editor, victor a Viewer and Member of mobile, kenji a
Viewer and Member of payments and growth; checkout-v2 is a flag of project default.
"""

from __future__ import annotations

import pytest

from flagadmin.events import COMMAND_LINE
from flagadmin.permissions import roles
from flagadmin.refusals import Invalid
from flagadmin.rules.variants import name_order, normalise
from flagadmin.store import projects as store_projects
from flagadmin.store import users as store_users

from flag_helpers import assert_reference, example_of, flag_path, last_event_id, recorded
from helpers import auth

FLAG = "checkout-v2"
BATCH = f"{flag_path('default', FLAG)}/variants-batch"


def env_variants(environment: str, flag: str = FLAG, project: str = "default") -> str:
    return f"{flag_path(project, flag)}/environments/{environment}/variants"


def push(client, token, variants, environments=("production",), flag=FLAG, project="default"):
    return client.put(
        f"{flag_path(project, flag)}/variants-batch",
        json={"variants": variants, "environments": list(environments)},
        headers=auth(token),
    )


def stored(db, environment: str = "production", flag: str = FLAG):
    return db.value(
        "SELECT variants FROM feature_variants WHERE feature_name = ? AND environment = ?",
        [flag, environment],
    )


# --- the weights and the order, as the reference computes them ------------------------------


def test_normalise__remainder_to_the_first_variable_sent_then_sorted_by_name():
    result = normalise(
        [{"name": "c", "weight": 0}, {"name": "a", "weight": 0}, {"name": "b", "weight": 0}], strategy=False
    )
    assert [(v["name"], v["weight"]) for v in result] == [("a", 333), ("b", 333), ("c", 334)]


def test_normalise__fix_weights_kept_variable_share_the_rest():
    result = normalise(
        [
            {"name": "x", "weight": 5},
            {"name": "y", "weight": 100, "weightType": "fix"},
            {"name": "z", "weight": 7, "weightType": "variable"},
        ],
        strategy=False,
    )
    assert {v["name"]: v["weight"] for v in result} == {"x": 450, "y": 100, "z": 450}
    assert sum(v["weight"] for v in result) == 1000
    assert all(v["stickiness"] == "default" for v in result)


def test_normalise__fix_weights_of_1000_leave_zero_to_the_variable_one():
    result = normalise(
        [{"name": "v", "weight": 3}, {"name": "f", "weight": 1000, "weightType": "fix"}], strategy=False
    )
    assert {v["name"]: v["weight"] for v in result} == {"f": 1000, "v": 0}


def test_name_order__the_reference_localecompare_order():
    # As Node's localeCompare (ICU root collation) sorts them: punctuation, digits, then letters
    # whatever their case, lower case first between names equal but for case
    names = ["b", "B", "a", "_x", "1", "-y", "A", "~z", "ab", "aB", "Ab"]
    assert sorted(names, key=name_order) == ["_x", "-y", "~z", "1", "a", "A", "ab", "aB", "Ab", "b", "B"]


def test_normalise__strategy_variants_need_weight_type_and_stickiness_and_have_no_overrides():
    with pytest.raises(Invalid) as no_type:
        normalise([{"name": "a", "weight": 1, "stickiness": "default"}], strategy=True)
    assert no_type.value.details[0].startswith("variants.0.weightType")
    with pytest.raises(Invalid) as overrides:
        normalise(
            [{"name": "a", "weight": 1, "weightType": "variable", "stickiness": "default", "overrides": []}],
            strategy=True,
        )
    assert overrides.value.details[0].startswith("variants.0.overrides")
    ok = normalise(
        [{"name": "a", "weight": 1, "weightType": "variable", "stickiness": "userId"}], strategy=True
    )
    assert ok == [{"name": "a", "weight": 1000, "weightType": "variable", "stickiness": "userId"}]


# --- variants-batch -------------------------------------------------------------------------


def test_batch__two_environments__answer_in_sent_order_stored_sorted_events_per_environment(
    client, alice, db, assert_valid
):
    before = last_event_id(db)
    variants = [
        {"name": "red", "weight": 0, "payload": {"type": "json", "value": '{"color": "red"}'}},
        {"name": "blue", "weight": 200, "weightType": "fix", "stickiness": "userId"},
        {"name": "green", "weight": 0, "overrides": [{"contextName": "userId", "values": ["u1"]}]},
    ]
    # When
    response = push(client, alice, variants, ("production", "development"))
    # Then: answered in the order sent, with the defaults and the shared weights
    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    assert_reference(body, "featureVariantsSchema")
    assert_valid(response, "/api/admin/projects/{projectId}/features/{featureName}/variants-batch", "put")
    assert [(v["name"], v["weight"], v["weightType"]) for v in body["variants"]] == [
        ("red", 400, "variable"),
        ("blue", 200, "fix"),
        ("green", 400, "variable"),
    ]
    # stored sorted by name, in each environment
    for environment in ("production", "development"):
        got = client.get(env_variants(environment), headers=auth(alice)).get_json()
        assert_reference(got, "featureVariantsSchema")
        assert [v["name"] for v in got["variants"]] == ["blue", "green", "red"]
        assert got["variants"][1]["overrides"] == [{"contextName": "userId", "values": ["u1"]}]
    events = [e for e in recorded(db, "feature-environment-variants-updated") if e["id"] > before]
    assert sorted(e["environment"] for e in events) == ["development", "production"]
    assert all(e["preData"] == {"variants": []} and e["featureName"] == FLAG for e in events)
    assert all([v["name"] for v in e["data"]["variants"]] == ["blue", "green", "red"] for e in events)


def test_batch__flag_read_shows_each_environment_variants_in_the_reference_shape(client, alice):
    push(client, alice, [{"name": "on", "weight": 0}], ("production",))
    flag = client.get(flag_path("default", FLAG), headers=auth(alice)).get_json()
    assert_reference(flag, "featureSchema")
    by_environment = {e["name"]: e["variants"] for e in flag["environments"]}
    assert by_environment["production"] == [
        {"name": "on", "weight": 1000, "weightType": "variable", "stickiness": "default"}
    ]
    assert by_environment["development"] == []


def test_batch__project_flag_list__variant_count_of_each_environment(client, alice):
    # Given: two variants in production, none in development
    push(client, alice, [{"name": "on", "weight": 0}, {"name": "off", "weight": 0}], ("production",))
    # When
    answer = client.get("/api/admin/projects/default/features", headers=auth(alice)).get_json()
    # Then: each environment of the flag counts its own variants (projectFeaturesSchema)
    (flag,) = [f for f in answer["features"] if f["name"] == FLAG]
    counts = {e["name"]: e["variantCount"] for e in flag["environments"]}
    assert counts == {"development": 0, "production": 2}
    assert all(
        e["variantCount"] == 0 for f in answer["features"] if f["name"] != FLAG for e in f["environments"]
    )


def test_batch__same_variants_again__no_second_event(client, alice, db):
    push(client, alice, [{"name": "on", "weight": 0}])
    before = last_event_id(db)
    assert push(client, alice, [{"name": "on", "weight": 0}]).status_code == 200
    assert last_event_id(db) == before


def test_batch__empty_list_clears_them(client, alice, db):
    push(client, alice, [{"name": "on", "weight": 0}])
    assert push(client, alice, []).status_code == 200
    assert client.get(env_variants("production"), headers=auth(alice)).get_json()["variants"] == []
    (event,) = recorded(db, "feature-environment-variants-updated", limit=1)
    assert event["data"] == {"variants": []} and event["preData"]["variants"][0]["name"] == "on"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"variants": [{"name": "a", "weight": 1001}], "environments": ["production"]}, "variants.0.weight"),
        ({"variants": [{"name": "a", "weight": -1}], "environments": ["production"]}, "variants.0.weight"),
        ({"variants": [{"name": "a", "weight": 1.5}], "environments": ["production"]}, "variants.0.weight"),
        ({"variants": [{"name": "a", "weight": "5"}], "environments": ["production"]}, "variants.0.weight"),
        ({"variants": [{"name": "a", "weight": True}], "environments": ["production"]}, "variants.0.weight"),
        ({"variants": [{"name": "a"}], "environments": ["production"]}, "variants.0.weight"),
        (
            {"variants": [{"name": "a", "weight": 1, "weightType": "heavy"}], "environments": ["production"]},
            "variants.0.weightType",
        ),
        (
            {"variants": [{"name": "a", "weight": 1, "weightType": "fix"}], "environments": ["production"]},
            "variants",
        ),
        (
            {
                "variants": [
                    {"name": "a", "weight": 600, "weightType": "fix"},
                    {"name": "b", "weight": 500, "weightType": "fix"},
                    {"name": "c", "weight": 0},
                ],
                "environments": ["production"],
            },
            "variants",
        ),
        (
            {
                "variants": [{"name": "a", "weight": 1}, {"name": "a", "weight": 1}],
                "environments": ["production"],
            },
            "variants.1.name",
        ),
        ({"variants": [{"name": "a b", "weight": 1}], "environments": ["production"]}, "variants.0.name"),
        ({"variants": [{"name": "", "weight": 1}], "environments": ["production"]}, "variants.0.name"),
        ({"variants": [{"name": 7, "weight": 1}], "environments": ["production"]}, "variants.0.name"),
        (
            {
                "variants": [{"name": "a", "weight": 1, "payload": {"type": "json", "value": "{nope"}}],
                "environments": ["production"],
            },
            "variants.0.payload.value",
        ),
        (
            {
                "variants": [{"name": "a", "weight": 1, "payload": {"type": "number", "value": "12abc"}}],
                "environments": ["production"],
            },
            "variants.0.payload.value",
        ),
        (
            {
                "variants": [{"name": "a", "weight": 1, "payload": {"type": "xml", "value": "<a/>"}}],
                "environments": ["production"],
            },
            "variants.0.payload.type",
        ),
        (
            {
                "variants": [{"name": "a", "weight": 1, "payload": {"type": "string"}}],
                "environments": ["production"],
            },
            "variants.0.payload.value",
        ),
        (
            {"variants": [{"name": "a", "weight": 1, "overrides": "userId"}], "environments": ["production"]},
            "variants.0.overrides",
        ),
        (
            {
                "variants": [
                    {"name": "a", "weight": 1, "overrides": [{"contextName": "userId", "values": [1]}]}
                ],
                "environments": ["production"],
            },
            "variants.0.overrides.0.values.0",
        ),
        (
            {"variants": [{"name": "a", "weight": 1, "stickiness": ""}], "environments": ["production"]},
            "variants.0.stickiness",
        ),
        (
            {"variants": [{"name": "a", "weight": 1, "colour": "red"}], "environments": ["production"]},
            "variants.0.colour",
        ),
        ({"variants": "a", "environments": ["production"]}, "variants"),
        ({"variants": [{"name": "a", "weight": 1}]}, "environments"),
        ({"variants": [{"name": "a", "weight": 1}], "environments": []}, "environments"),
        ({"variants": [{"name": "a", "weight": 1}], "environments": ["nowhere"]}, "environments.0"),
        ({"variants": [{"name": "a", "weight": 1}], "environments": "production"}, "environments"),
    ],
)
def test_batch__bad_body__400_naming_the_field_and_nothing_written(client, alice, db, body, field):
    before = last_event_id(db)
    response = client.put(BATCH, json=body, headers=auth(alice))
    assert response.status_code == 400, response.get_json()
    assert any(d["message"].startswith(field) for d in response.get_json()["details"]), response.get_json()
    assert last_event_id(db) == before
    assert db.value("SELECT count(*) FROM feature_variants") == 0


def test_batch__huge_list__400_and_nothing_written(client, alice, db):
    variants = [{"name": f"v{i}", "weight": 0} for i in range(1001)]
    response = push(client, alice, variants)
    assert response.status_code == 400 and response.get_json()["details"][0]["message"].startswith("variants")
    assert db.value("SELECT count(*) FROM feature_variants") == 0


def test_batch__deep_json_payload_value__400_and_deep_body__400(client, alice, db):
    deep = "[" * 300 + "]" * 300
    response = push(client, alice, [{"name": "a", "weight": 0, "payload": {"type": "json", "value": deep}}])
    # the value is a string: JSON text of any depth that parses is kept as text
    assert response.status_code in (200, 400)
    nested: object = {"name": "a", "weight": 0}
    for _ in range(200):
        nested = {"payload": nested}
    refused = client.put(
        BATCH, json={"variants": [nested], "environments": ["production"]}, headers=auth(alice)
    )
    assert refused.status_code == 400


def test_batch__unknown_flag_or_project__404(client, alice):
    assert push(client, alice, [], flag="no-such-flag").status_code == 404
    assert push(client, alice, [], project="no-such-project").status_code == 404


def test_batch__archived_flag__409_and_nothing_written(client, alice, db):
    client.delete(flag_path("default", FLAG), headers=auth(alice))
    response = push(client, alice, [{"name": "a", "weight": 0}])
    assert response.status_code == 409
    assert stored(db) is None


def test_batch__permission_granted_per_environment(client, make_token, db):
    # Given: victor holds a role in default that grants the permission in development only
    with db.write():
        store_projects.set_role(db, "default", store_users.id_by_username(db, "victor"), "Releaser")
    roles.create(db, COMMAND_LINE, "Releaser", ["UPDATE_FEATURE_ENVIRONMENT_VARIANTS:development"])
    victor = make_token(user="victor")
    # When / Then
    refused = push(client, victor, [{"name": "a", "weight": 0}], ("development", "production"))
    assert refused.status_code == 403, refused.get_json()
    assert "UPDATE_FEATURE_ENVIRONMENT_VARIANTS" in refused.get_json()["message"]
    assert "production" in refused.get_json()["message"]
    assert db.value("SELECT count(*) FROM feature_variants") == 0
    assert push(client, victor, [{"name": "a", "weight": 0}], ("development",)).status_code == 200
    kenji = make_token(user="kenji")
    assert push(client, kenji, [{"name": "a", "weight": 0}]).status_code == 403


def test_batch__member_of_the_project__200(client, make_token):
    victor = make_token(user="victor")
    response = push(client, victor, [{"name": "a", "weight": 0}], flag="mobile-dark-mode", project="mobile")
    assert response.status_code == 200, response.get_json()


# --- one environment's variants (deprecated in the reference) -------------------------------


def test_get__no_variants__empty_list_and_unknown_environment__404(client, alice):
    got = client.get(env_variants("production"), headers=auth(alice))
    assert got.status_code == 200 and got.get_json() == {"version": 1, "variants": []}
    assert client.get(env_variants("nowhere"), headers=auth(alice)).status_code == 404


def test_put__flag_without_environment_variants__403_deprecated(client, alice, db):
    response = client.put(env_variants("production"), json=[{"name": "a", "weight": 0}], headers=auth(alice))
    assert response.status_code == 403 and "deprecated" in response.get_json()["message"]
    assert stored(db) is None


def test_put__flag_with_environment_variants__200_normalised_and_event(client, alice, db, assert_valid):
    push(client, alice, [{"name": "a", "weight": 0}], ("development",))
    response = client.put(
        env_variants("production"),
        json=[{"name": "z", "weight": 0}, {"name": "b", "weight": 0}],
        headers=auth(alice),
    )
    assert response.status_code == 200, response.get_json()
    assert_valid(
        response,
        "/api/admin/projects/{projectId}/features/{featureName}/environments/{environment}/variants",
        "put",
    )
    assert [(v["name"], v["weight"]) for v in response.get_json()["variants"]] == [("b", 500), ("z", 500)]
    (event,) = recorded(db, "feature-environment-variants-updated", limit=1)
    assert event["environment"] == "production"


def test_patch__add_replace_and_failed_test(client, alice, db):
    push(client, alice, [{"name": "a", "weight": 0}])
    added = client.patch(
        env_variants("production"),
        json=[{"op": "add", "path": "/-", "value": {"name": "b", "weight": 0}}],
        headers=auth(alice),
    )
    assert added.status_code == 200, added.get_json()
    assert [(v["name"], v["weight"]) for v in added.get_json()["variants"]] == [("a", 500), ("b", 500)]
    before = last_event_id(db)
    failed = client.patch(
        env_variants("production"),
        json=[{"op": "test", "path": "/0/name", "value": "zzz"}, {"op": "remove", "path": "/0"}],
        headers=auth(alice),
    )
    assert failed.status_code == 409 and last_event_id(db) == before
    nowhere = client.patch(
        env_variants("production"), json=[{"op": "remove", "path": "/9"}], headers=auth(alice)
    )
    assert nowhere.status_code == 400
    broken = client.patch(
        env_variants("production"),
        json=[{"op": "replace", "path": "/0/weight", "value": 5000}],
        headers=auth(alice),
    )
    assert broken.status_code == 400 and broken.get_json()["details"][0]["message"].startswith(
        "variants.0.weight"
    )
    assert last_event_id(db) == before


def test_patch__copies_that_double_the_document__400(client, alice, db):
    push(client, alice, [{"name": "a", "weight": 0, "payload": {"type": "string", "value": "x" * 2000}}])
    before = last_event_id(db)
    doubling = [{"op": "copy", "from": "", "path": "/-"}] * 200
    response = client.patch(env_variants("production"), json=doubling, headers=auth(alice))
    assert response.status_code == 400
    assert last_event_id(db) == before


def test_batch__body_built_from_the_reference_schema__200(client, alice):
    body = {**example_of("pushVariantsSchema"), "environments": ["production"]}
    assert_reference(body, "pushVariantsSchema")
    response = client.put(BATCH, json=body, headers=auth(alice))
    assert response.status_code == 200, response.get_json()
    assert_reference(response.get_json(), "featureVariantsSchema")
    assert response.get_json()["variants"][0]["overrides"] == body["variants"][0]["overrides"]
