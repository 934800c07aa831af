"""A flag environment's strategies through the API: add, list in order, read, replace (PUT),
JSON Patch, remove, set their order; flexibleRollout's defaults; the first strategy a flag gets
when switched on; the flag's answer showing them; the events written; permissions per
environment; archived flags; a flag deleted for good taking its rules with it; and hostile
bodies refused with 400 naming the field, nothing stored. Bodies and answers are validated
against the reference server's 8.2.0 schemas.

Demo data (seed/demo.json): alice is an Editor, victor a Viewer and Member of mobile.
"""

from __future__ import annotations

import uuid

import pytest

from flagadmin.config import DEFAULT_RESOURCE_LIMITS

from flag_helpers import (
    assert_reference,
    delete_path,
    events_since,
    flag_path,
    last_event_id,
    toggle_path,
)
from helpers import auth

FLAG = "checkout"
ROLLOUT = {
    "name": "flexibleRollout",
    "title": "Half of the beta users",
    "parameters": {"rollout": "50", "stickiness": "userId", "groupId": "checkout"},
    "constraints": [{"contextName": "appName", "operator": "IN", "values": ["web"]}],
}


def strategies_path(flag: str = FLAG, environment: str = "production", project: str = "default") -> str:
    return f"/api/admin/projects/{project}/features/{flag}/environments/{environment}/strategies"


def strategy_path(
    strategy_id: str, flag: str = FLAG, environment: str = "production", project: str = "default"
):
    return f"{strategies_path(flag, environment, project)}/{strategy_id}"


LIST = "/api/admin/projects/{projectId}/features/{featureName}/environments/{environment}/strategies"
ONE = LIST + "/{strategyId}"


def create_flag(client, token, name: str = FLAG, project: str = "default") -> None:
    response = client.post(
        f"/api/admin/projects/{project}/features", json={"name": name}, headers=auth(token)
    )
    assert response.status_code == 201, response.get_json()


@pytest.fixture
def flag(client, admin_token):
    create_flag(client, admin_token)
    return FLAG


def add(client, token, body, **where):
    return client.post(strategies_path(**where), json=body, headers=auth(token))


def stored(db, flag: str = FLAG) -> int:
    return db.value("SELECT count(*) FROM feature_strategies WHERE feature_name = ?", [flag])


def enabled(client, token, environment: str, flag: str = FLAG) -> bool:
    flag_answer = client.get(flag_path("default", flag), headers=auth(token)).get_json()
    return {e["name"]: e["enabled"] for e in flag_answer["environments"]}[environment]


# --- add ----------------------------------------------------------------------------------------


def test_add__flexible_rollout__200_with_a_uuid_valid_against_both_documents_and_event_with_the_strategy(
    client, alice, db, flag, assert_valid
):
    # Given
    assert_reference(ROLLOUT, "createFeatureStrategySchema")
    before = last_event_id(db)
    # When
    response = add(client, alice, ROLLOUT)
    # Then
    assert response.status_code == 200, response.get_json()
    assert_valid(response, LIST, "post")
    strategy = response.get_json()
    assert_reference(strategy, "featureStrategySchema")
    assert uuid.UUID(strategy["id"]).version == 4
    assert strategy == {
        "id": strategy["id"],
        "name": "flexibleRollout",
        "title": "Half of the beta users",
        "disabled": False,
        "featureName": FLAG,
        "sortOrder": 0,
        "segments": [],
        "constraints": [
            {
                "contextName": "appName",
                "operator": "IN",
                "values": ["web"],
                "inverted": False,
                "caseInsensitive": False,
            }
        ],
        "variants": [],
        "parameters": {"rollout": "50", "stickiness": "userId", "groupId": "checkout"},
    }
    (event,) = events_since(db, before)
    assert (event["type"], event["project"], event["environment"], event["featureName"]) == (
        "feature-strategy-add",
        "default",
        "production",
        FLAG,
    )
    assert event["data"] == strategy and event["preData"] is None and event["createdBy"] == "alice"


@pytest.mark.parametrize(
    ("parameters", "filled"),
    [
        ({}, {"rollout": "100", "stickiness": "default", "groupId": FLAG}),
        (
            {"rollout": "", "stickiness": "", "groupId": ""},
            {"rollout": "100", "stickiness": "default", "groupId": FLAG},
        ),
        ({"rollout": "25"}, {"rollout": "25", "stickiness": "default", "groupId": FLAG}),
        (
            {"stickiness": "sessionId", "extra": "kept"},
            {"rollout": "100", "stickiness": "sessionId", "groupId": FLAG, "extra": "kept"},
        ),
    ],
)
def test_add__flexible_rollout_parameters_left_out_or_empty__the_reference_defaults(
    client, admin_token, flag, parameters, filled
):
    response = add(client, admin_token, {"name": "flexibleRollout", "parameters": parameters})
    assert response.status_code == 200
    assert response.get_json()["parameters"] == filled


def test_add__only_a_name__every_other_field_its_default(client, admin_token, flag):
    response = add(client, admin_token, {"name": "default"})
    assert response.status_code == 200
    body = response.get_json()
    assert (body["title"], body["disabled"], body["parameters"], body["constraints"], body["variants"]) == (
        None,
        False,
        {},
        [],
        [],
    )


def test_add__strategy_variants__normalised_as_the_reference_and_sorted_by_name(client, admin_token, flag):
    body = {
        "name": "flexibleRollout",
        "variants": [
            {"name": "blue", "weight": 0, "weightType": "variable", "stickiness": "default"},
            {
                "name": "amber",
                "weight": 200,
                "weightType": "fix",
                "stickiness": "default",
                "payload": {"type": "json", "value": '{"a": 1}'},
            },
        ],
    }
    response = add(client, admin_token, body)
    assert response.status_code == 200, response.get_json()
    assert [(v["name"], v["weight"]) for v in response.get_json()["variants"]] == [
        ("amber", 200),
        ("blue", 800),
    ]
    assert_reference(response.get_json(), "featureStrategySchema")


def test_add__flag_without_a_row_for_a_new_environment__added_there(client, admin_token, db, flag):
    # Given: an environment the install gained, which the flag has no row for yet
    with db.write():
        db.run(
            "INSERT INTO environments (name, type, sort_order, created_at) VALUES ('staging', 'test', 5, 'x')"
        )
    # When
    response = add(client, admin_token, {"name": "default"}, environment="staging")
    # Then
    assert response.status_code == 200
    shown = client.get(flag_path("default", FLAG), headers=auth(admin_token)).get_json()["environments"]
    assert [len(e["strategies"]) for e in shown if e["name"] == "staging"] == [1]


# --- read and order ---------------------------------------------------------------------------


def test_list_and_flag__three_strategies__in_sort_order_then_creation(
    client, admin_token, flag, assert_valid
):
    # Given
    first = add(client, admin_token, {"name": "default", "title": "first"}).get_json()
    second = add(client, admin_token, {"name": "default", "title": "second", "sortOrder": -1}).get_json()
    third = add(client, admin_token, {"name": "default", "title": "third"}).get_json()
    # Then: without a sortOrder a strategy goes after the last
    assert (first["sortOrder"], second["sortOrder"], third["sortOrder"]) == (0, -1, 1)
    listed = client.get(strategies_path(), headers=auth(admin_token))
    assert listed.status_code == 200
    assert_valid(listed, LIST)
    for item in listed.get_json():
        assert_reference(item, "featureStrategySchema")
    assert [s["title"] for s in listed.get_json()] == ["second", "first", "third"]
    answer = client.get(flag_path("default", FLAG), headers=auth(admin_token)).get_json()
    assert_reference(answer, "featureSchema")
    for environment in answer["environments"]:
        assert_reference(environment, "featureEnvironmentSchema")
    shown = {e["name"]: [s["title"] for s in e["strategies"]] for e in answer["environments"]}
    assert shown == {"development": [], "production": ["second", "first", "third"]}


def test_add__after_a_strategy_at_the_largest_sort_order__beside_it(client, admin_token, flag):
    # Given: a strategy at the largest sortOrder a 32-bit integer holds (as PostgreSQL stores it)
    last = add(client, admin_token, {"name": "default", "title": "last", "sortOrder": 2**31 - 1})
    assert last.status_code == 200
    # When: another is added without a sortOrder
    response = add(client, admin_token, {"name": "default", "title": "after"})
    # Then: it is stored beside the last, on either engine
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["sortOrder"] == 2**31 - 1
    listed = client.get(strategies_path(), headers=auth(admin_token)).get_json()
    assert sorted(s["title"] for s in listed) == ["after", "last"]


def test_get__one_strategy__as_added(client, admin_token, flag, assert_valid):
    added = add(client, admin_token, ROLLOUT).get_json()
    response = client.get(strategy_path(added["id"]), headers=auth(admin_token))
    assert response.status_code == 200
    assert_valid(response, ONE)
    assert response.get_json() == added


@pytest.mark.parametrize("where", ["another-flag", "another-environment", "unknown", "not-a-uuid"])
def test_get__strategy_of_another_flag_or_environment_or_unknown__404(client, admin_token, flag, where):
    create_flag(client, admin_token, "other")
    other = add(client, admin_token, {"name": "default"}, flag="other").get_json()["id"]
    development = add(client, admin_token, {"name": "default"}, environment="development").get_json()["id"]
    target = {
        "another-flag": strategy_path(other),
        "another-environment": strategy_path(development),
        "unknown": strategy_path(str(uuid.uuid4())),
        "not-a-uuid": strategy_path("set-sort-order-x"),
    }[where]
    response = client.get(target, headers=auth(admin_token))
    assert response.status_code == 404
    assert response.get_json()["name"] == "NotFoundError"


def test_list__unknown_environment_or_flag__404(client, admin_token, flag):
    assert client.get(strategies_path(environment="nowhere"), headers=auth(admin_token)).status_code == 404
    assert client.get(strategies_path(flag="nope"), headers=auth(admin_token)).status_code == 404
    assert add(client, admin_token, {"name": "default"}, environment="nowhere").status_code == 404


def test_set_sort_order__reordered_and_strategy_order_changed_recorded_once(client, admin_token, db, flag):
    # Given
    a, b, c = (add(client, admin_token, {"name": "default", "title": t}).get_json()["id"] for t in "abc")
    body = [{"id": c, "sortOrder": 0}, {"id": a, "sortOrder": 1}, {"id": b, "sortOrder": 2}]
    assert_reference(body, "setStrategySortOrderSchema")
    before = last_event_id(db)
    # When
    response = client.post(strategies_path() + "/set-sort-order", json=body, headers=auth(admin_token))
    again = client.post(strategies_path() + "/set-sort-order", json=body, headers=auth(admin_token))
    # Then
    assert (response.status_code, again.status_code) == (200, 200)
    assert response.get_data() == b""
    assert [s["id"] for s in client.get(strategies_path(), headers=auth(admin_token)).get_json()] == [c, a, b]
    (event,) = events_since(db, before)
    assert event["type"] == "strategy-order-changed"
    assert (event["preData"], event["data"]) == ({"strategyIds": [a, b, c]}, {"strategyIds": [c, a, b]})


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ([{"id": "not-one-of-them", "sortOrder": 0}], "0.id"),
        ([{"id": "{a}", "sortOrder": 0}, {"id": "{a}", "sortOrder": 1}], "1.id"),
        ([{"id": "{a}", "sortOrder": 2**31}], "0.sortOrder"),
        ([{"id": "{a}", "sortOrder": "1"}], "0.sortOrder"),
        ([{"id": "{a}"}], "0.sortOrder"),
        ([{"id": "{a}", "sortOrder": 1, "extra": 1}], "0.extra"),
        ({"id": "{a}", "sortOrder": 1}, None),
    ],
)
def test_set_sort_order__invalid__400_and_order_unchanged(client, admin_token, db, flag, body, field):
    a = add(client, admin_token, {"name": "default"}).get_json()["id"]
    if isinstance(body, list):
        body = [{k: (v.format(a=a) if isinstance(v, str) else v) for k, v in item.items()} for item in body]
    before = last_event_id(db)
    response = client.post(strategies_path() + "/set-sort-order", json=body, headers=auth(admin_token))
    assert response.status_code == 400
    if field:
        assert any(d["message"].startswith(f"{field}:") for d in response.get_json()["details"]), (
            response.get_json()
        )
    assert last_event_id(db) == before
    assert client.get(strategy_path(a), headers=auth(admin_token)).get_json()["sortOrder"] == 0


def test_set_sort_order__strategy_of_another_flag__400_and_that_one_unchanged(client, admin_token, db, flag):
    create_flag(client, admin_token, "other")
    other = add(client, admin_token, {"name": "default"}, flag="other").get_json()["id"]
    response = client.post(
        strategies_path() + "/set-sort-order", json=[{"id": other, "sortOrder": 9}], headers=auth(admin_token)
    )
    assert response.status_code == 400
    assert (
        client.get(strategy_path(other, flag="other"), headers=auth(admin_token)).get_json()["sortOrder"] == 0
    )


# --- update -------------------------------------------------------------------------------------


def test_put__fields_left_out__as_the_reference_keeps_or_empties_them_and_event_with_both_states(
    client, admin_token, db, flag, assert_valid
):
    # Given
    added = add(client, admin_token, {**ROLLOUT, "sortOrder": 7}).get_json()
    body = {"parameters": {"rollout": "75"}}
    assert_reference(body, "updateFeatureStrategySchema")
    before = last_event_id(db)
    # When
    response = client.put(strategy_path(added["id"]), json=body, headers=auth(admin_token))
    # Then: name, title, disabled, sortOrder kept; constraints and variants emptied; defaults filled
    assert response.status_code == 200, response.get_json()
    assert_valid(response, ONE, "put")
    updated = response.get_json()
    assert updated == {
        **added,
        "parameters": {"rollout": "75", "stickiness": "default", "groupId": FLAG},
        "constraints": [],
    }
    assert client.get(strategy_path(added["id"]), headers=auth(admin_token)).get_json() == updated
    (event,) = events_since(db, before)
    assert (event["type"], event["data"], event["preData"]) == ("feature-strategy-update", updated, added)


def test_put__same_strategy__200_and_nothing_recorded(client, admin_token, db, flag):
    added = add(client, admin_token, ROLLOUT).get_json()
    before = last_event_id(db)
    response = client.put(strategy_path(added["id"]), json=ROLLOUT, headers=auth(admin_token))
    assert response.status_code == 200
    assert response.get_json() == added
    assert last_event_id(db) == before


def test_put__other_type__parameters_checked_for_the_new_type(client, admin_token, flag):
    added = add(client, admin_token, {"name": "default"}).get_json()
    response = client.put(
        strategy_path(added["id"]), json={"name": "flexibleRollout"}, headers=auth(admin_token)
    )
    assert response.status_code == 200
    assert response.get_json()["parameters"] == {"rollout": "100", "stickiness": "default", "groupId": FLAG}


def test_patch__json_patch__applied_to_the_strategy_as_get_shows_it(
    client, admin_token, db, flag, assert_valid
):
    # Given
    added = add(client, admin_token, ROLLOUT).get_json()
    operations = [
        {"op": "test", "path": "/parameters/rollout", "value": "50"},
        {"op": "replace", "path": "/parameters/rollout", "value": "10"},
        {
            "op": "add",
            "path": "/constraints/-",
            "value": {"contextName": "v", "operator": "SEMVER_GT", "value": "1.0.0"},
        },
        {"op": "replace", "path": "/title", "value": None},
    ]
    assert_reference(operations, "patchesSchema")
    before = last_event_id(db)
    # When
    response = client.patch(strategy_path(added["id"]), json=operations, headers=auth(admin_token))
    # Then
    assert response.status_code == 200, response.get_json()
    assert_valid(response, ONE, "patch")
    patched = response.get_json()
    assert patched["parameters"]["rollout"] == "10" and patched["title"] is None
    assert [c["operator"] for c in patched["constraints"]] == ["IN", "SEMVER_GT"]
    assert [e["type"] for e in events_since(db, before)] == ["feature-strategy-update"]


@pytest.mark.parametrize(
    ("operations", "status"),
    [
        (
            [
                {"op": "test", "path": "/parameters/rollout", "value": "99"},
                {"op": "replace", "path": "/title", "value": "x"},
            ],
            409,
        ),
        ([{"op": "replace", "path": "/id", "value": "other"}], 400),
        ([{"op": "replace", "path": "/featureName", "value": "other"}], 400),
        ([{"op": "replace", "path": "/nothing/here", "value": 1}], 400),
        ([{"op": "add", "path": "/unknownMember", "value": 1}], 400),
        ([{"op": "replace", "path": "/parameters/rollout", "value": 10}], 400),
        ([{"op": "replace", "path": "/constraints/0/operator", "value": "LIKE"}], 400),
        ([{"op": "replace", "path": "/segments", "value": [424242]}], 400),
        ([{"op": "replace", "path": "/name", "value": "nope"}], 400),
        ([{"op": "replace", "path": "", "value": []}], 400),
    ],
)
def test_patch__failed_test_or_bad_result__refused_and_nothing_changed(
    client, admin_token, db, flag, operations, status
):
    added = add(client, admin_token, ROLLOUT).get_json()
    before = last_event_id(db)
    response = client.patch(strategy_path(added["id"]), json=operations, headers=auth(admin_token))
    assert response.status_code == status, response.get_json()
    assert last_event_id(db) == before
    assert client.get(strategy_path(added["id"]), headers=auth(admin_token)).get_json() == added


def test_patch__copies_that_grow_the_strategy_past_its_bound__400(client, admin_token, flag):
    added = add(client, admin_token, {"name": "default", "parameters": {"p0": "x" * 30000}}).get_json()
    operations = [{"op": "copy", "from": "/parameters/p0", "path": f"/parameters/p{i}"} for i in range(1, 12)]
    response = client.patch(strategy_path(added["id"]), json=operations, headers=auth(admin_token))
    assert response.status_code == 400
    assert "KiB" in response.get_json()["message"]


def test_update__disabling_the_last_enabled_strategy__flag_switched_off_there(client, admin_token, db, flag):
    # Given: the flag on in production with its one strategy
    client.post(toggle_path("default", FLAG, "production", "on"), headers=auth(admin_token))
    (strategy,) = client.get(strategies_path(), headers=auth(admin_token)).get_json()
    before = last_event_id(db)
    # When
    response = client.put(
        strategy_path(strategy["id"]),
        json={**strategy, "disabled": True, "id": None},
        headers=auth(admin_token),
    )
    # Then
    assert response.status_code == 200, response.get_json()
    assert enabled(client, admin_token, "production") is False
    assert [e["type"] for e in events_since(db, before)] == [
        "feature-strategy-update",
        "feature-environment-disabled",
    ]


# --- remove ---------------------------------------------------------------------------------------


def test_delete__strategy__gone_event_with_pre_data_and_flag_switched_off_when_none_is_left(
    client, admin_token, db, flag
):
    # Given: on, with two strategies
    client.post(toggle_path("default", FLAG, "production", "on"), headers=auth(admin_token))
    second = add(client, admin_token, ROLLOUT).get_json()
    (first, _) = client.get(strategies_path(), headers=auth(admin_token)).get_json()
    before = last_event_id(db)
    # When: the first goes, then the second
    one = client.delete(strategy_path(first["id"]), headers=auth(admin_token))
    still_on = enabled(client, admin_token, "production")
    two = client.delete(strategy_path(second["id"]), headers=auth(admin_token))
    # Then
    assert (one.status_code, two.status_code) == (200, 200)
    assert one.get_data() == b""
    assert still_on is True and enabled(client, admin_token, "production") is False
    written = events_since(db, before)
    assert [(e["type"], (e["preData"] or {}).get("id")) for e in written] == [
        ("feature-strategy-remove", first["id"]),
        ("feature-strategy-remove", second["id"]),
        ("feature-environment-disabled", None),
    ]
    assert written[1]["preData"] == second
    assert client.get(strategy_path(first["id"]), headers=auth(admin_token)).status_code == 404
    assert client.delete(strategy_path(first["id"]), headers=auth(admin_token)).status_code == 404


# --- switching on -------------------------------------------------------------------------------


def test_on__flag_without_strategies__a_flexible_rollout_of_100_added_then_enabled(
    client, admin_token, db, flag
):
    before = last_event_id(db)
    response = client.post(toggle_path("default", FLAG, "development", "on"), headers=auth(admin_token))
    assert response.status_code == 200
    (strategy,) = client.get(strategies_path(environment="development"), headers=auth(admin_token)).get_json()
    assert (strategy["name"], strategy["parameters"], strategy["constraints"]) == (
        "flexibleRollout",
        {"rollout": "100", "stickiness": "default", "groupId": FLAG},
        [],
    )
    written = events_since(db, before)
    assert [(e["type"], e["environment"]) for e in written] == [
        ("feature-strategy-add", "development"),
        ("feature-environment-enabled", "development"),
    ]
    assert written[0]["data"] == strategy
    shown = [e for e in response.get_json()["environments"] if e["name"] == "development"]
    assert shown[0]["strategies"] == [strategy]


def test_on__flag_with_an_enabled_strategy__none_added(client, admin_token, db, flag):
    add(client, admin_token, ROLLOUT)
    before = last_event_id(db)
    client.post(toggle_path("default", FLAG, "production", "on"), headers=auth(admin_token))
    assert [e["type"] for e in events_since(db, before)] == ["feature-environment-enabled"]
    assert stored(db) == 1


def test_on__flag_with_only_disabled_strategies__a_flexible_rollout_added_as_the_reference(
    client, admin_token, db, flag
):
    add(client, admin_token, {**ROLLOUT, "disabled": True})
    client.post(toggle_path("default", FLAG, "production", "on"), headers=auth(admin_token))
    listed = client.get(strategies_path(), headers=auth(admin_token)).get_json()
    assert [(s["name"], s["disabled"]) for s in listed] == [
        ("flexibleRollout", True),
        ("flexibleRollout", False),
    ]


# --- archived and deleted flags ---------------------------------------------------------------


def test_archived_flag__changes_409_reads_served(client, admin_token, db, flag):
    # Given
    added = add(client, admin_token, ROLLOUT).get_json()
    client.delete(flag_path("default", FLAG), headers=auth(admin_token))
    before = last_event_id(db)
    # When
    answers = [
        add(client, admin_token, ROLLOUT).status_code,
        client.put(strategy_path(added["id"]), json=ROLLOUT, headers=auth(admin_token)).status_code,
        client.patch(strategy_path(added["id"]), json=[], headers=auth(admin_token)).status_code,
        client.delete(strategy_path(added["id"]), headers=auth(admin_token)).status_code,
        client.post(strategies_path() + "/set-sort-order", json=[], headers=auth(admin_token)).status_code,
    ]
    # Then
    assert answers == [409] * 5
    assert last_event_id(db) == before
    assert client.get(strategies_path(), headers=auth(admin_token)).get_json() == [added]


def test_delete_for_good__its_strategies_segment_links_variants_and_dependency_go_with_it(
    client, admin_token, db, flag
):
    # Given: a strategy using a segment, variants in an environment, a dependency on a parent
    segment = client.post(
        "/api/admin/segments",
        json={"name": "beta", "constraints": [{"contextName": "userId", "operator": "IN", "values": ["1"]}]},
        headers=auth(admin_token),
    )
    assert segment.status_code == 201, segment.get_json()
    added = add(client, admin_token, {**ROLLOUT, "segments": [segment.get_json()["id"]]})
    assert added.get_json()["segments"] == [segment.get_json()["id"]]
    with db.write():
        db.run(
            "INSERT INTO feature_variants (feature_name, environment, variants)"
            " VALUES (?, 'production', '[]')",
            [FLAG],
        )
    create_flag(client, admin_token, "parent-flag")
    client.delete(flag_path("default", FLAG), headers=auth(admin_token))
    with db.write():  # (whatever archiving did with it, the row is there to go)
        db.run(
            "INSERT INTO feature_dependencies (child, parent, enabled) VALUES (?, 'parent-flag', 1)"
            " ON CONFLICT (child) DO NOTHING",
            [FLAG],
        )
    # When
    response = client.delete(delete_path(FLAG), headers=auth(admin_token))
    # Then
    assert response.status_code == 200
    assert stored(db) == 0
    assert db.value("SELECT count(*) FROM feature_strategy_segments") == 0
    assert db.value("SELECT count(*) FROM feature_variants WHERE feature_name = ?", [FLAG]) == 0
    assert db.value("SELECT count(*) FROM feature_dependencies WHERE child = ?", [FLAG]) == 0
    # and the segment, no longer used, can go
    assert (
        client.delete(
            f"/api/admin/segments/{segment.get_json()['id']}", headers=auth(admin_token)
        ).status_code
        == 204
    )


# --- permissions --------------------------------------------------------------------------------


def test_viewer_without_a_role_in_the_project__403_naming_the_permission_and_the_environment(
    client, admin_token, victor, db, flag
):
    added = add(client, admin_token, ROLLOUT).get_json()
    before = stored(db)
    refused = [
        (add(client, victor, ROLLOUT), "CREATE_FEATURE_STRATEGY"),
        (
            client.put(strategy_path(added["id"]), json=ROLLOUT, headers=auth(victor)),
            "UPDATE_FEATURE_STRATEGY",
        ),
        (client.delete(strategy_path(added["id"]), headers=auth(victor)), "DELETE_FEATURE_STRATEGY"),
        (
            client.post(strategies_path() + "/set-sort-order", json=[], headers=auth(victor)),
            "UPDATE_FEATURE_STRATEGY",
        ),
    ]
    for response, permission in refused:
        assert response.status_code == 403
        assert response.get_json()["name"] == "NoAccessError"
        assert permission in response.get_json()["message"] and "production" in response.get_json()["message"]
    assert client.get(strategies_path(), headers=auth(victor)).status_code == 403
    assert stored(db) == before


def test_member_of_the_project__may_add_and_change_strategies(client, admin_token, victor):
    create_flag(client, admin_token, "mobile-flag", project="mobile")
    response = add(client, victor, {"name": "default"}, flag="mobile-flag", project="mobile")
    assert response.status_code == 200, response.get_json()


# --- hostile bodies -------------------------------------------------------------------------------


def _deep(levels: int):
    value: object = "x"
    for _ in range(levels):
        value = {"a": value}
    return value


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "nope"}, "name"),
        ({}, "name"),
        ({"name": 5}, "name"),
        ({"name": "default", "title": 5}, "title"),
        ({"name": "default", "title": "t" * 101}, "title"),
        ({"name": "default", "disabled": "yes"}, "disabled"),
        ({"name": "default", "sortOrder": 2**31}, "sortOrder"),
        ({"name": "default", "sortOrder": 1.5}, "sortOrder"),
        ({"name": "default", "parameters": []}, "parameters"),
        ({"name": "default", "parameters": {"a": 1}}, "parameters.a"),
        ({"name": "default", "parameters": {"a": None}}, "parameters.a"),
        ({"name": "default", "parameters": {"a": {"b": "c"}}}, "parameters.a"),
        ({"name": "default", "parameters": {"": "x"}}, "parameters."),
        ({"name": "flexibleRollout", "parameters": {"rollout": "150"}}, "parameters.rollout"),
        ({"name": "flexibleRollout", "parameters": {"rollout": "abc"}}, "parameters.rollout"),
        ({"name": "flexibleRollout", "parameters": {"rollout": 50}}, "parameters.rollout"),
        ({"name": "gradualRolloutRandom", "parameters": {"percentage": "-1"}}, "parameters.percentage"),
        ({"name": "default", "constraints": {"a": 1}}, "constraints"),
        (
            {"name": "default", "constraints": [{"contextName": "a", "operator": "NUM_EQ", "value": "x"}]},
            "constraints.0.value",
        ),
        ({"name": "default", "segments": [424242]}, "segments.0"),
        ({"name": "default", "segments": ["1"]}, "segments.0"),
        ({"name": "default", "segments": 1}, "segments"),
        ({"name": "default", "variants": [{"name": "a"}]}, "variants.0"),
        ({"name": "default", "variants": {"name": "a"}}, "variants"),
        ({"name": "default", "parameters": _deep(200)}, None),
        (
            {
                "name": "default",
                "constraints": [
                    {"contextName": "a", "operator": "IN", "values": [f"v{i}" for i in range(3000)]}
                ],
            },
            "constraints.0.values",
        ),
    ],
)
def test_add__hostile_body__400_naming_the_field_and_nothing_stored(
    client, admin_token, db, flag, body, field
):
    before = last_event_id(db)
    response = add(client, admin_token, body)
    assert response.status_code == 400, response.get_json()
    assert response.get_json()["name"] == "BadDataError"
    if field is not None:
        assert any(d["message"].startswith(field) for d in response.get_json()["details"]), (
            response.get_json()
        )
    assert stored(db) == 0 and last_event_id(db) == before


@pytest.mark.parametrize("payload", [b"[", b'"just a string"', b"[1, 2]", b"null", b'{"name": "default"'])
def test_add__not_a_json_object__400(client, admin_token, db, flag, payload):
    response = client.post(
        strategies_path(), data=payload, headers={**auth(admin_token), "Content-Type": "application/json"}
    )
    assert response.status_code == 400
    assert stored(db) == 0


def test_add__past_the_feature_environment_strategies_limit__400_naming_it(make_app, admin_token, db):
    client = make_app(
        resource_limits={**DEFAULT_RESOURCE_LIMITS, "featureEnvironmentStrategies": 2}
    ).test_client()
    create_flag(client, admin_token)
    assert [add(client, admin_token, {"name": "default"}).status_code for _ in range(2)] == [200, 200]
    response = add(client, admin_token, {"name": "default"})
    assert response.status_code == 400
    assert "featureEnvironmentStrategies resource limit is 2" in response.get_json()["message"]
    assert stored(db) == 2
    # another environment has its own count
    assert add(client, admin_token, {"name": "default"}, environment="development").status_code == 200


def test_add__unknown_members__ignored_as_the_reference_ignores_them(client, admin_token, flag):
    response = add(client, admin_token, {"name": "default", "id": "mine", "featureName": "x", "copyOf": "y"})
    assert response.status_code == 200
    assert response.get_json()["id"] != "mine" and response.get_json()["featureName"] == FLAG
