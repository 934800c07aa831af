"""Strategy types through the API (``/api/admin/strategies``): the built-ins every SDK
evaluates, custom types with their parameters, deprecation, who may change them, the events
written; bodies and answers validated against the reference server's 8.2.0 schemas.

Demo data (seed/demo.json): alice is an Editor, victor a Viewer and Member of mobile.
"""

from __future__ import annotations

import pytest

from flag_helpers import assert_reference, events_since, last_event_id
from helpers import auth

STRATEGIES = "/api/admin/strategies"

BUILT_INS = [
    "flexibleRollout",
    "default",
    "userWithId",
    "gradualRolloutUserId",
    "gradualRolloutSessionId",
    "gradualRolloutRandom",
    "remoteAddress",
    "applicationHostname",
]

#: The parameter names every SDK reads, per built-in type.
SDK_PARAMETERS = {
    "flexibleRollout": ["rollout", "stickiness", "groupId"],
    "default": [],
    "userWithId": ["userIds"],
    "gradualRolloutUserId": ["percentage", "groupId"],
    "gradualRolloutSessionId": ["percentage", "groupId"],
    "gradualRolloutRandom": ["percentage"],
    "remoteAddress": ["IPs"],
    "applicationHostname": ["hostNames"],
}

CUSTOM = {
    "name": "betaUsers",
    "title": "Beta users",
    "description": "On for the beta programme",
    "parameters": [
        {"name": "cohort", "type": "string", "description": "Which cohort", "required": True},
        {"name": "share", "type": "percentage"},
    ],
}


def type_path(name: str) -> str:
    return f"{STRATEGIES}/{name}"


def strategies_path(flag: str, environment: str = "production", project: str = "default") -> str:
    return f"/api/admin/projects/{project}/features/{flag}/environments/{environment}/strategies"


def custom_types(db) -> list[str]:
    return db.column("SELECT name FROM strategy_types WHERE built_in = 0 ORDER BY name")


# --- reading ------------------------------------------------------------------------------------


def test_list__any_token__the_built_ins_first_with_the_sdks_parameters_valid_against_both_documents(
    client, victor, assert_valid
):
    # When: a Viewer reads them (reading takes any token of the admin API)
    response = client.get(STRATEGIES, headers=auth(victor))
    # Then
    assert response.status_code == 200
    assert_valid(response, STRATEGIES)
    body = response.get_json()
    assert_reference(body, "strategiesSchema")
    assert body["version"] == 1
    assert [s["name"] for s in body["strategies"]] == BUILT_INS
    for strategy in body["strategies"]:
        assert [p["name"] for p in strategy["parameters"]] == SDK_PARAMETERS[strategy["name"]]
        assert strategy["editable"] is False and strategy["displayName"]
    deprecated = {s["name"] for s in body["strategies"] if s["deprecated"]}
    assert deprecated == {
        "userWithId",
        "gradualRolloutUserId",
        "gradualRolloutSessionId",
        "gradualRolloutRandom",
    }


def test_get__a_built_in__its_definition(client, admin_token, assert_valid):
    response = client.get(type_path("flexibleRollout"), headers=auth(admin_token))
    assert response.status_code == 200
    assert_valid(response, "/api/admin/strategies/{name}")
    assert_reference(response.get_json(), "strategySchema")
    assert response.get_json()["parameters"][0] == {
        "name": "rollout",
        "type": "percentage",
        "description": response.get_json()["parameters"][0]["description"],
        "required": False,
    }


def test_get__unknown_type__404(client, admin_token):
    response = client.get(type_path("nope"), headers=auth(admin_token))
    assert response.status_code == 404
    assert "GET /api/admin/strategies" in response.get_json()["message"]


# --- creating -----------------------------------------------------------------------------------


def test_create__editor__201_listed_after_the_built_ins_and_strategy_created_recorded(
    client, alice, db, assert_valid
):
    # Given
    assert_reference(CUSTOM, "createStrategySchema")
    before = last_event_id(db)
    # When
    response = client.post(STRATEGIES, json=CUSTOM, headers=auth(alice))
    # Then
    assert response.status_code == 201, response.get_json()
    assert_valid(response, STRATEGIES, "post")
    created = response.get_json()
    assert_reference(created, "strategySchema")
    assert created == {
        "title": "Beta users",
        "name": "betaUsers",
        "displayName": "Beta users",
        "description": "On for the beta programme",
        "editable": True,
        "deprecated": False,
        "parameters": [
            {"name": "cohort", "type": "string", "description": "Which cohort", "required": True},
            {"name": "share", "type": "percentage", "description": "", "required": False},
        ],
    }
    listed = client.get(STRATEGIES, headers=auth(alice)).get_json()["strategies"]
    assert [s["name"] for s in listed] == [*BUILT_INS, "betaUsers"]
    assert client.get(type_path("betaUsers"), headers=auth(alice)).get_json() == created
    (event,) = events_since(db, before)
    assert (event["type"], event["createdBy"], event["data"]) == ("strategy-created", "alice", created)


@pytest.mark.parametrize("name", ["betaUsers", "flexibleRollout"])
def test_create__name_taken_by_a_custom_or_built_in_type__409_and_nothing_changed(client, alice, db, name):
    # Given
    client.post(STRATEGIES, json=CUSTOM, headers=auth(alice))
    before = last_event_id(db)
    # When
    response = client.post(
        STRATEGIES, json={**CUSTOM, "name": name, "description": "other"}, headers=auth(alice)
    )
    # Then
    assert response.status_code == 409
    assert f'"{name}" already exists' in response.get_json()["message"]
    assert last_event_id(db) == before
    assert client.get(type_path(name), headers=auth(alice)).get_json()["description"] != "other"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({**CUSTOM, "name": "has space"}, "name"),
        ({**CUSTOM, "name": ""}, "name"),
        ({**CUSTOM, "name": "x" * 101}, "name"),
        ({**CUSTOM, "parameters": [{"name": "a", "type": "date"}]}, "parameters.0.type"),
        ({**CUSTOM, "parameters": [{"name": "a"}]}, "parameters.0.type"),
        ({**CUSTOM, "parameters": [{"name": "", "type": "string"}]}, "parameters.0.name"),
        (
            {**CUSTOM, "parameters": [{"name": "a", "type": "string", "required": "yes"}]},
            "parameters.0.required",
        ),
        ({**CUSTOM, "parameters": {"name": "a"}}, "parameters"),
        ({"name": "noParameters"}, "parameters"),
        ({**CUSTOM, "deprecated": "no"}, "deprecated"),
        ({**CUSTOM, "title": "t" * 101}, "title"),
    ],
)
def test_create__invalid_body__400_naming_the_field_and_nothing_stored(client, alice, db, body, field):
    before = last_event_id(db)
    response = client.post(STRATEGIES, json=body, headers=auth(alice))
    assert response.status_code == 400
    assert any(d["message"].startswith(f"{field}:") for d in response.get_json()["details"]), (
        response.get_json()
    )
    assert custom_types(db) == [] and last_event_id(db) == before


def test_create__viewer__403_naming_create_strategy(client, victor, db):
    response = client.post(STRATEGIES, json=CUSTOM, headers=auth(victor))
    assert response.status_code == 403
    assert response.get_json()["name"] == "NoAccessError"
    assert "CREATE_STRATEGY" in response.get_json()["message"]
    assert custom_types(db) == []


def test_create__deprecated_from_the_start__listed_deprecated(client, admin_token):
    response = client.post(STRATEGIES, json={**CUSTOM, "deprecated": True}, headers=auth(admin_token))
    assert response.status_code == 201
    assert response.get_json()["deprecated"] is True


# --- changing -----------------------------------------------------------------------------------


def test_update__custom_type__parameters_replaced_description_kept_and_strategy_updated_recorded(
    client, alice, db
):
    # Given
    client.post(STRATEGIES, json=CUSTOM, headers=auth(alice))
    before = last_event_id(db)
    body = {"parameters": [{"name": "cohort", "type": "list", "required": False}]}
    assert_reference(body, "updateStrategySchema")
    # When
    response = client.put(type_path("betaUsers"), json=body, headers=auth(alice))
    # Then
    assert response.status_code == 200 and response.get_data() == b""
    found = client.get(type_path("betaUsers"), headers=auth(alice)).get_json()
    assert found["parameters"] == [{"name": "cohort", "type": "list", "description": "", "required": False}]
    assert found["description"] == "On for the beta programme"
    (event,) = events_since(db, before)
    assert event["type"] == "strategy-updated"
    assert event["data"] == found and event["preData"]["parameters"][0]["type"] == "string"


def test_update__same_values__nothing_recorded(client, alice, db):
    client.post(STRATEGIES, json=CUSTOM, headers=auth(alice))
    before = last_event_id(db)
    response = client.put(type_path("betaUsers"), json=CUSTOM, headers=auth(alice))
    assert response.status_code == 200
    assert last_event_id(db) == before


@pytest.mark.parametrize("name", BUILT_INS)
def test_update_or_delete__built_in_type__403_and_unchanged(client, admin_token, db, name):
    before = last_event_id(db)
    put = client.put(type_path(name), json={"parameters": []}, headers=auth(admin_token))
    delete = client.delete(type_path(name), headers=auth(admin_token))
    assert (put.status_code, delete.status_code) == (403, 403)
    assert "built in" in put.get_json()["message"]
    assert last_event_id(db) == before
    assert [
        p["name"] for p in client.get(type_path(name), headers=auth(admin_token)).get_json()["parameters"]
    ] == (SDK_PARAMETERS[name])


def test_update_delete_deprecate__unknown_type__404(client, admin_token):
    assert (
        client.put(type_path("nope"), json={"parameters": []}, headers=auth(admin_token)).status_code == 404
    )
    assert client.delete(type_path("nope"), headers=auth(admin_token)).status_code == 404
    assert client.post(type_path("nope") + "/deprecate", headers=auth(admin_token)).status_code == 404
    assert client.post(type_path("nope") + "/reactivate", headers=auth(admin_token)).status_code == 404


def test_update_and_delete__viewer__403_naming_the_permission(client, alice, victor):
    client.post(STRATEGIES, json=CUSTOM, headers=auth(alice))
    put = client.put(type_path("betaUsers"), json={"parameters": []}, headers=auth(victor))
    delete = client.delete(type_path("betaUsers"), headers=auth(victor))
    deprecate = client.post(type_path("betaUsers") + "/deprecate", headers=auth(victor))
    assert (put.status_code, delete.status_code, deprecate.status_code) == (403, 403, 403)
    assert "UPDATE_STRATEGY" in put.get_json()["message"]
    assert "DELETE_STRATEGY" in delete.get_json()["message"]


def test_delete__unused_custom_type__gone_and_strategy_deleted_recorded(client, alice, db):
    client.post(STRATEGIES, json=CUSTOM, headers=auth(alice))
    before = last_event_id(db)
    response = client.delete(type_path("betaUsers"), headers=auth(alice))
    assert response.status_code == 200
    assert client.get(type_path("betaUsers"), headers=auth(alice)).status_code == 404
    (event,) = events_since(db, before)
    assert (event["type"], event["data"], event["preData"]["name"]) == (
        "strategy-deleted",
        {"name": "betaUsers"},
        "betaUsers",
    )


def test_delete__type_a_flag_uses__409_naming_the_flag_then_deleted_once_unused(client, alice, db):
    # Given: a flag whose strategy is of the custom type
    client.post(STRATEGIES, json=CUSTOM, headers=auth(alice))
    client.post("/api/admin/projects/default/features", json={"name": "beta-only"}, headers=auth(alice))
    added = client.post(
        strategies_path("beta-only"),
        json={"name": "betaUsers", "parameters": {"cohort": "a"}},
        headers=auth(alice),
    )
    assert added.status_code == 200, added.get_json()
    # When
    refused = client.delete(type_path("betaUsers"), headers=auth(alice))
    # Then
    assert refused.status_code == 409
    assert '"beta-only"' in refused.get_json()["message"]
    assert custom_types(db) == ["betaUsers"]
    client.delete(f"{strategies_path('beta-only')}/{added.get_json()['id']}", headers=auth(alice))
    assert client.delete(type_path("betaUsers"), headers=auth(alice)).status_code == 200


def test_deprecate_then_reactivate__built_in__listed_as_such_one_event_each(client, alice, db):
    before = last_event_id(db)
    deprecate = client.post(type_path("flexibleRollout") + "/deprecate", headers=auth(alice))
    again = client.post(type_path("flexibleRollout") + "/deprecate", headers=auth(alice))
    assert (deprecate.status_code, again.status_code) == (200, 200)
    assert client.get(type_path("flexibleRollout"), headers=auth(alice)).get_json()["deprecated"] is True
    reactivate = client.post(type_path("flexibleRollout") + "/reactivate", headers=auth(alice))
    assert reactivate.status_code == 200
    assert client.get(type_path("flexibleRollout"), headers=auth(alice)).get_json()["deprecated"] is False
    written = events_since(db, before)
    assert [(e["type"], e["data"]["name"], e["data"]["deprecated"]) for e in written] == [
        ("strategy-deprecated", "flexibleRollout", True),
        ("strategy-reactivated", "flexibleRollout", False),
    ]


def test_deprecated_type__still_usable_by_a_strategy_as_in_the_reference(client, alice):
    client.post("/api/admin/projects/default/features", json={"name": "legacy"}, headers=auth(alice))
    response = client.post(
        strategies_path("legacy"),
        json={"name": "userWithId", "parameters": {"userIds": "1,2"}},
        headers=auth(alice),
    )
    assert response.status_code == 200
    assert response.get_json()["parameters"] == {"userIds": "1,2"}
