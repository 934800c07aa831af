"""Segments on the reference server's paths (``/api/admin/segments``): create, list, read,
replace, delete and the strategies that use one; who may change them; the events written; the
resource limits ``segments``, ``segmentValues`` and ``strategySegments``; and the checks the
strategies' code runs on a strategy's ``segments`` (``rules.segments.check_ids``).

Demo data (seed/demo.json): alice is an Editor, victor a Viewer and Member of mobile, kenji a
Viewer and Member of payments and growth.
"""

from __future__ import annotations

import uuid

import orjson
import pytest

from flagadmin.config import DEFAULT_RESOURCE_LIMITS
from flagadmin.refusals import Invalid
from flagadmin.rules import segments as rule_segments
from flagadmin.store import projects as store_projects
from flagadmin.store import segments as store_segments
from flagadmin.store import users as store_users

from flag_helpers import assert_reference, example_of, flag_path, last_event_id, recorded
from helpers import auth

SEGMENTS = "/api/admin/segments"

BETA = {
    "name": "beta-users",
    "description": "Users who test new things",
    "constraints": [
        {"contextName": "userId", "operator": "IN", "values": ["u1", "u2"]},
        {"contextName": "appVersion", "operator": "SEMVER_GTE", "value": "2.0.0"},
    ],
}


@pytest.fixture
def kenji(make_token) -> str:
    """Personal token of kenji (Viewer, Member of payments and growth)."""
    return make_token(user="kenji")


@pytest.fixture
def victor(make_token) -> str:
    """Personal token of victor (Viewer, Member of mobile)."""
    return make_token(user="victor")


@pytest.fixture
def owner(make_token, db) -> str:
    """Personal token of victor (Viewer) made Owner of mobile: UPDATE_PROJECT_SEGMENT there."""
    with db.write():
        store_projects.set_role(db, "mobile", store_users.id_by_username(db, "victor"), "Owner")
    return make_token(user="victor")


def segment_path(segment_id) -> str:
    return f"{SEGMENTS}/{segment_id}"


def create(client, token, body=None):
    return client.post(SEGMENTS, json=BETA if body is None else body, headers=auth(token))


def add_strategy(db, flag: str, environment: str = "production", segment_ids=()) -> str:
    """A strategy of ``flag`` using ``segment_ids``, written as the strategies' code writes it."""
    strategy_id = str(uuid.uuid4())
    with db.write():
        db.run(
            "INSERT INTO feature_strategies (id, feature_name, environment, strategy_name, created_at)"
            " VALUES (?, ?, ?, 'flexibleRollout', '2026-01-01T00:00:00.000Z')",
            [strategy_id, flag, environment],
        )
        store_segments.set_strategy_segments(db, strategy_id, segment_ids)
    return strategy_id


def segment_count(db) -> int:
    return db.value("SELECT count(*) FROM segments")


# --- create and read ------------------------------------------------------------------------


def test_create__editor__201_reference_shape_constraints_normalised_and_event(
    client, alice, db, assert_valid
):
    # When
    response = create(client, alice)
    # Then
    assert response.status_code == 201, response.get_json()
    body = response.get_json()
    assert_reference(body, "adminSegmentSchema")
    assert_valid(response, "/api/admin/segments", "post")
    assert body["name"] == "beta-users" and body["description"] == "Users who test new things"
    assert "project" not in body and body["createdBy"] == "alice"
    assert body["usedInFeatures"] == 0 and body["usedInProjects"] == 0
    assert body["constraints"][0]["values"] == ["u1", "u2"] and body["constraints"][0]["inverted"] is False
    assert body["constraints"][1]["values"] == [] and body["constraints"][1]["value"] == "2.0.0"
    (event,) = recorded(db, "segment-created", limit=1)
    assert event["createdBy"] == "alice" and event["project"] is None
    assert event["data"] == {k: v for k, v in body.items() if not k.startswith("usedIn")}


def test_list_and_get__reference_shapes_and_the_same_segment(client, alice, assert_valid):
    created = create(client, alice).get_json()
    create(client, alice, {"name": "a-first", "constraints": []})
    # When
    listed = client.get(SEGMENTS, headers=auth(alice))
    one = client.get(segment_path(created["id"]), headers=auth(alice))
    # Then
    assert listed.status_code == 200 and one.status_code == 200
    assert_reference(listed.get_json(), "segmentsSchema")
    assert_reference(one.get_json(), "adminSegmentSchema")
    assert_valid(listed, "/api/admin/segments", "get")
    assert [s["name"] for s in listed.get_json()["segments"]] == ["a-first", "beta-users"]
    assert one.get_json() == created


def test_get__unknown_or_malformed_id__404(client, alice):
    assert client.get(segment_path(987654), headers=auth(alice)).status_code == 404
    assert client.get(segment_path("abc"), headers=auth(alice)).status_code == 404
    assert client.get(segment_path("9" * 30), headers=auth(alice)).status_code == 404


def test_create__project_segment__owner_may_and_others_see_nothing(client, owner, kenji, alice):
    # When: victor, Owner of mobile, makes a segment of mobile
    response = create(client, owner, {**BETA, "project": "mobile"})
    # Then
    assert response.status_code == 201, response.get_json()
    segment = response.get_json()
    assert segment["project"] == "mobile"
    assert [s["name"] for s in client.get(SEGMENTS, headers=auth(kenji)).get_json()["segments"]] == []
    assert client.get(segment_path(segment["id"]), headers=auth(kenji)).status_code == 404
    assert [s["name"] for s in client.get(SEGMENTS, headers=auth(alice)).get_json()["segments"]] == [
        "beta-users"
    ]


@pytest.mark.parametrize(
    ("user", "project", "status", "permission"),
    [
        ("owner", None, 403, "CREATE_SEGMENT"),
        ("victor", "mobile", 403, "UPDATE_PROJECT_SEGMENT"),
        ("kenji", "mobile", 403, "UPDATE_PROJECT_SEGMENT"),
        ("owner", "mobile", 201, None),
        ("alice", None, 201, None),
    ],
)
def test_create__who_may(client, request, db, user, project, status, permission):
    token = request.getfixturevalue(user) if user in ("owner", "victor", "kenji") else None
    token = token or request.getfixturevalue("alice")
    body = {**BETA, "project": project} if project else BETA
    response = create(client, token, body)
    assert response.status_code == status, response.get_json()
    if status == 403:
        assert response.get_json()["name"] == "NoAccessError"
        assert permission in response.get_json()["message"]
        assert segment_count(db) == 0


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"constraints": []}, "name"),
        ({"name": "", "constraints": []}, "name"),
        ({"name": "x" * 101, "constraints": []}, "name"),
        ({"name": 42, "constraints": []}, "name"),
        ({"name": "ok"}, "constraints"),
        ({"name": "ok", "constraints": "IN"}, "constraints"),
        (
            {"name": "ok", "constraints": [{"contextName": "a", "operator": "NOPE", "values": ["x"]}]},
            "constraints",
        ),
        (
            {"name": "ok", "constraints": [{"contextName": "a", "operator": "IN", "values": []}]},
            "constraints",
        ),
        (
            {"name": "ok", "constraints": [{"contextName": "a", "operator": "SEMVER_EQ", "value": "v1.0.0"}]},
            "constraints",
        ),
        (
            {"name": "ok", "constraints": [{"contextName": "a", "operator": "REGEX", "value": "(?=x)"}]},
            "constraints",
        ),
        ({"name": "ok", "constraints": [], "project": "nowhere"}, "project"),
        ({"name": "ok", "constraints": [], "description": 42}, "description"),
        ({"name": "ok", "constraints": [], "colour": "red"}, "colour"),
    ],
)
def test_create__bad_body__400_naming_the_field_and_nothing_written(client, alice, db, body, field):
    before = last_event_id(db)
    response = create(client, alice, body)
    assert response.status_code == 400, response.get_json()
    assert any(d["message"].startswith(field) for d in response.get_json()["details"]), response.get_json()
    assert segment_count(db) == 0 and last_event_id(db) == before


def test_create__huge_constraint_list__400_and_nothing_written(client, alice, db):
    constraints = [{"contextName": "userId", "operator": "IN", "values": ["a"]}] * 500
    response = create(client, alice, {"name": "huge", "constraints": constraints})
    assert response.status_code == 400
    assert segment_count(db) == 0


def test_create__name_taken__409_and_validate_says_so(client, alice, db):
    create(client, alice)
    assert create(client, alice).status_code == 409
    assert segment_count(db) == 1
    taken = client.post(f"{SEGMENTS}/validate", json={"name": "beta-users"}, headers=auth(alice))
    free = client.post(f"{SEGMENTS}/validate", json={"name": "other"}, headers=auth(alice))
    assert taken.status_code == 409 and free.status_code == 204


def test_create__past_the_segments_limit__400_naming_it(make_app, alice, db):
    client = make_app(resource_limits={**DEFAULT_RESOURCE_LIMITS, "segments": 1}).test_client()
    assert create(client, alice).status_code == 201
    response = create(client, alice, {"name": "second", "constraints": []})
    assert response.status_code == 400 and "segments resource limit is 1" in response.get_json()["message"]
    assert segment_count(db) == 1


def test_create__past_the_segment_values_limit__400_naming_it(make_app, alice, db):
    client = make_app(resource_limits={**DEFAULT_RESOURCE_LIMITS, "segmentValues": 2}).test_client()
    body = {
        "name": "many",
        "constraints": [{"contextName": "userId", "operator": "IN", "values": ["a", "b", "c"]}],
    }
    response = create(client, alice, body)
    assert response.status_code == 400, response.get_json()
    assert "segmentValues" in response.get_json()["message"]
    assert segment_count(db) == 0


# --- replace --------------------------------------------------------------------------------


def test_put__204_then_reads_and_event_with_pre_data(client, alice, db):
    segment = create(client, alice).get_json()
    new = {"name": "beta-2", "constraints": [{"contextName": "region", "operator": "IN", "values": ["eu"]}]}
    # When
    response = client.put(segment_path(segment["id"]), json=new, headers=auth(alice))
    # Then
    assert response.status_code == 204 and response.data == b""
    after = client.get(segment_path(segment["id"]), headers=auth(alice)).get_json()
    assert after["name"] == "beta-2" and after["description"] is None
    assert after["constraints"][0]["values"] == ["eu"] and after["createdAt"] == segment["createdAt"]
    (event,) = recorded(db, "segment-updated", limit=1)
    assert event["preData"]["name"] == "beta-users" and event["data"]["name"] == "beta-2"


def test_put__name_of_another__409_and_unknown__404(client, alice):
    segment = create(client, alice).get_json()
    create(client, alice, {"name": "other", "constraints": []})
    taken = client.put(
        segment_path(segment["id"]), json={"name": "other", "constraints": []}, headers=auth(alice)
    )
    assert taken.status_code == 409
    unknown = client.put(segment_path(424242), json={"name": "x", "constraints": []}, headers=auth(alice))
    assert unknown.status_code == 404


def test_put__to_a_project_while_used_elsewhere__400_naming_the_projects(client, alice, db):
    segment = create(client, alice).get_json()
    add_strategy(db, "checkout-v2", segment_ids=[segment["id"]])  # a flag of project default
    response = client.put(
        segment_path(segment["id"]), json={**BETA, "project": "mobile"}, headers=auth(alice)
    )
    assert response.status_code == 400
    assert (
        response.get_json()["details"][0]["message"].startswith("project")
        and "default" in response.get_json()["message"]
    )
    same = client.put(segment_path(segment["id"]), json={**BETA, "project": "default"}, headers=auth(alice))
    assert same.status_code == 204


# --- delete ---------------------------------------------------------------------------------


def test_delete__204_event_and_gone(client, alice, db):
    segment = create(client, alice).get_json()
    response = client.delete(segment_path(segment["id"]), headers=auth(alice))
    assert response.status_code == 204
    assert client.get(segment_path(segment["id"]), headers=auth(alice)).status_code == 404
    (event,) = recorded(db, "segment-deleted", limit=1)
    assert event["preData"]["name"] == "beta-users" and event["data"] is None
    assert client.delete(segment_path(segment["id"]), headers=auth(alice)).status_code == 404


def test_delete__in_use__409_naming_the_flag_and_kept(client, alice, db):
    segment = create(client, alice).get_json()
    strategy = add_strategy(db, "checkout-v2", segment_ids=[segment["id"]])
    # When
    response = client.delete(segment_path(segment["id"]), headers=auth(alice))
    # Then
    assert response.status_code == 409 and "checkout-v2" in response.get_json()["message"]
    assert segment_count(db) == 1
    used = client.get(f"{segment_path(segment['id'])}/strategies", headers=auth(alice))
    assert used.status_code == 200
    assert_reference(used.get_json(), "segmentStrategiesSchema")
    assert used.get_json()["strategies"] == [
        {
            "id": strategy,
            "featureName": "checkout-v2",
            "projectId": "default",
            "environment": "production",
            "strategyName": "flexibleRollout",
        }
    ]
    listed = client.get(SEGMENTS, headers=auth(alice)).get_json()["segments"]
    assert listed[0]["usedInFeatures"] == 1 and listed[0]["usedInProjects"] == 1
    of_strategy = client.get(f"{SEGMENTS}/strategies/{strategy}", headers=auth(alice)).get_json()
    assert [s["id"] for s in of_strategy["segments"]] == [segment["id"]]


def test_delete__global_segment_by_a_viewer__403(client, alice, victor, db):
    segment = create(client, alice).get_json()
    response = client.delete(segment_path(segment["id"]), headers=auth(victor))
    assert response.status_code == 403 and "DELETE_SEGMENT" in response.get_json()["message"]
    assert segment_count(db) == 1


# --- a strategy's segments (what the strategies' code checks) -------------------------------


def _ids(db, ids, project="default", **limits):
    return rule_segments.check_ids(db, ids, project, {**DEFAULT_RESOURCE_LIMITS, **limits})


def test_check_ids__known_global_and_own_project__sorted_once(client, alice, db):
    first = create(client, alice).get_json()["id"]
    second = create(client, alice, {"name": "mine", "project": "default", "constraints": []}).get_json()["id"]
    assert _ids(db, [second, first]) == sorted([first, second])
    assert _ids(db, None) == [] and _ids(db, []) == []


@pytest.mark.parametrize(
    ("ids", "field"),
    [
        ("1", "segments"),
        ([True], "segments.0"),
        (["1"], "segments.0"),
        ([0], "segments.0"),
        ([1.5], "segments.0"),
        ([987654], "segments.0"),
        ([1, 2, 3, 4, 5, 6], "segments"),
    ],
)
def test_check_ids__bad_ids__400_naming_the_field(db, ids, field):
    with pytest.raises(Invalid) as refused:
        _ids(db, ids)
    assert refused.value.details[0].startswith(f"{field}:")


def test_check_ids__given_twice_or_of_another_project__400(client, alice, db):
    segment = create(
        client, alice, {"name": "mobile-only", "project": "mobile", "constraints": []}
    ).get_json()
    with pytest.raises(Invalid) as other_project:
        _ids(db, [segment["id"]], project="default")
    assert "mobile" in other_project.value.message
    assert _ids(db, [segment["id"]], project="mobile") == [segment["id"]]
    with pytest.raises(Invalid):
        _ids(db, [segment["id"], segment["id"]], project="mobile")
    with pytest.raises(Invalid):
        _ids(db, [segment["id"]], project="mobile", strategySegments=0)


def test_set_strategy_segments__replaces_the_list_and_reads_back(client, alice, db):
    a = create(client, alice, {"name": "a", "constraints": []}).get_json()["id"]
    b = create(client, alice, {"name": "b", "constraints": []}).get_json()["id"]
    strategy = add_strategy(db, "checkout-v2", segment_ids=[b, a])
    assert store_segments.strategy_segment_ids(db, strategy) == sorted([a, b])
    with db.write():
        store_segments.set_strategy_segments(db, strategy, [b])
    assert store_segments.segment_ids_by_strategy(db, "checkout-v2") == {strategy: [b]}
    with db.write():
        store_segments.delete_strategy_segments(db, strategy)
    assert store_segments.strategy_segment_ids(db, strategy) == []


def test_flag_read_unchanged_by_segments(client, alice):
    """A segment is not part of a flag's own answer (its strategies name segments by id)."""
    create(client, alice)
    assert client.get(flag_path("default", "checkout-v2"), headers=auth(alice)).status_code == 200


def test_stored_constraints_are_compact_json(client, alice, db):
    segment = create(client, alice).get_json()
    text = db.value("SELECT constraints FROM segments WHERE id = ?", [segment["id"]])
    assert text == orjson.dumps(orjson.loads(text)).decode()


def test_create__body_built_from_the_reference_schema__201(client, alice):
    body = {**example_of("upsertSegmentSchema"), "project": "default"}
    assert_reference(body, "upsertSegmentSchema")
    response = create(client, alice, body)
    assert response.status_code == 201, response.get_json()
    assert_reference(response.get_json(), "adminSegmentSchema")
