"""A project's flags through the API: list, create, read, update (PUT and JSON
Patch), switch on and off, the name check; permissions by role; the events written; and 4.2
and 4.4 answering from the new state on the very next request.

Demo data (seed/demo.json): alice is an Editor (Owner of mobile), bob an Editor, victor a
Viewer and Member of mobile, kenji a Viewer and Member of payments and growth.
"""

from __future__ import annotations

import threading

import orjson
import pytest

from flagadmin.spec import FLAG_TYPES

from flag_helpers import (
    ARCHIVE,
    DASHBOARD,
    NAME,
    SCHEMAS,
    VALIDATE,
    WRITES,
    assert_reference,
    events_since,
    example_of,
    features_path,
    flag_path,
    last_event_id,
    recorded,
    toggle_path,
)
from helpers import auth

NEW = {
    "name": "new-checkout",
    "type": "experiment",
    "description": "The new checkout",
    "impressionData": True,
}


@pytest.fixture
def kenji(make_token) -> str:
    """Personal token of kenji (Viewer, Member of payments and growth)."""
    return make_token(user="kenji")


def create(client, token, project="default", body=None):
    return client.post(features_path(project), json=NEW if body is None else body, headers=auth(token))


def dashboard_flags(client, token) -> list[str]:
    return [flag["name"] for flag in client.get(DASHBOARD, headers=auth(token)).get_json()["flags"]]


def dashboard_project(client, token, project: str) -> dict:
    (found,) = [
        p for p in client.get(DASHBOARD, headers=auth(token)).get_json()["projects"] if p["id"] == project
    ]
    return found


# --- create -------------------------------------------------------------------------------


def test_create__editor__201_flag_in_every_environment_off_and_valid_against_both_documents(
    client, alice, assert_valid
):
    # When
    response = create(client, alice)
    # Then
    assert response.status_code == 201
    body = response.get_json()
    assert_valid(response, "/api/admin/projects/{projectId}/features", "post")
    assert_reference(body, "featureSchema")
    assert body["name"] == "new-checkout" and body["project"] == "default" and body["type"] == "experiment"
    assert body["description"] == "The new checkout" and body["impressionData"] is True
    assert body["archived"] is False and body["stale"] is False and body["favorite"] is False
    assert [(e["name"], e["enabled"]) for e in body["environments"]] == [
        ("development", False),
        ("production", False),
    ]
    assert body["createdBy"]["id"] == 2 and body["createdBy"]["name"] == "Alice Q. Example"


def test_create__feature_created_event__reference_shape_in_the_same_transaction(client, alice, db):
    # Given
    before = last_event_id(db)
    # When
    create(client, alice)
    # Then: one event, filled as the reference server fills it
    (event,) = events_since(db, before)
    assert event["type"] == "feature-created"
    assert (event["createdBy"], event["createdByUserId"]) == ("alice", 2)
    assert (event["project"], event["featureName"], event["environment"]) == ("default", "new-checkout", None)
    assert event["data"] == {
        "name": "new-checkout",
        "description": "The new checkout",
        "type": "experiment",
        "project": "default",
        "stale": False,
        "createdAt": event["data"]["createdAt"],
        "impressionData": True,
        "archived": False,
    }
    assert event["preData"] is None and event["tags"] == []


def test_create__next_dashboard_request__lists_the_flag_the_caller_created_and_counts_it(client, alice):
    # Given: the dashboard is answered (and cached) before the write
    assert "new-checkout" not in dashboard_flags(client, alice)
    count = dashboard_project(client, alice, "mobile")["featureCount"]
    # When
    create(client, alice, "mobile")
    # Then: the very next request sees it
    assert dashboard_flags(client, alice)[0] == "new-checkout"
    assert dashboard_project(client, alice, "mobile")["featureCount"] == count + 1


def test_create__admin_token__201_created_by_nobody_event_by_admin(client, admin_token, db):
    response = create(client, admin_token)
    assert response.status_code == 201 and "createdBy" not in response.get_json()
    (event,) = recorded(db, "feature-created", limit=1)
    assert (event["createdBy"], event["createdByUserId"]) == ("admin", -42)


def test_create__body_built_from_the_reference_create_schema__201(client, alice, db):
    # Given: every property of createFeatureSchema from its own example (tags included)
    body = example_of("createFeatureSchema")
    assert set(body) == set(SCHEMAS["createFeatureSchema"]["properties"])
    # When
    response = create(client, alice, body=body)
    # Then
    assert response.status_code == 201, response.get_json()
    assert_reference(response.get_json(), "featureSchema")
    assert response.get_json()["tags"] == [{"type": "simple", "value": "a-tag-value"}]
    (event,) = recorded(db, "feature-created", limit=1)
    assert event["tags"] == [{"value": "a-tag-value", "type": "simple"}]


def test_create__tags_out_of_order_and_repeated__answer_event_and_read_agree(client, alice, db):
    """The answer and the event carry the tags as a later read gives them: each once, by type
    then value, code point by code point (spec 6: an event's tags are the flag's)."""
    tags = [
        {"type": "simple", "value": "zeta"},
        {"type": "simple", "value": "Zeta"},
        {"type": "area", "value": "été"},
        {"type": "simple", "value": "zeta"},
        {"type": "area", "value": "ete"},
    ]
    # When
    response = create(client, alice, body={**NEW, "tags": tags})
    # Then
    assert response.status_code == 201, response.get_json()
    expected = [
        {"type": "area", "value": "ete"},
        {"type": "area", "value": "été"},
        {"type": "simple", "value": "Zeta"},
        {"type": "simple", "value": "zeta"},
    ]
    assert response.get_json()["tags"] == expected
    read = client.get(features_path("default") + "/new-checkout", headers=auth(alice)).get_json()
    assert read["tags"] == expected
    (event,) = recorded(db, "feature-created", limit=1)
    assert event["tags"] == [{"value": tag["value"], "type": tag["type"]} for tag in expected]


@pytest.mark.parametrize("with_tags", [True, False], ids=["tags", "no-tags"])
def test_switch_on_and_archive__events_carry_the_tags_as_a_read_gives_them(client, alice, db, with_tags):
    """The events of a switch and of an archive carry the flag's tags (spec 6), read with the
    flag by the same statement: by type then value, code point by code point; none: []."""
    # Given
    tags = [
        {"type": "simple", "value": "zeta"},
        {"type": "area", "value": "été"},
        {"type": "area", "value": "ete"},
    ]
    response = create(client, alice, body={**NEW, "tags": tags if with_tags else []})
    assert response.status_code == 201, response.get_json()
    expected = [{"value": tag["value"], "type": tag["type"]} for tag in response.get_json()["tags"]]
    assert expected == (
        [
            {"value": "ete", "type": "area"},
            {"value": "été", "type": "area"},
            {"value": "zeta", "type": "simple"},
        ]
        if with_tags
        else []
    )
    before = last_event_id(db)
    # When
    switched = client.post(toggle_path("default", "new-checkout", "development", "on"), headers=auth(alice))
    archived = client.delete(flag_path("default", "new-checkout"), headers=auth(alice))
    # Then
    assert (switched.status_code, archived.status_code) == (200, 202)
    written = events_since(db, before)
    assert [(event["type"], event["tags"]) for event in written] == [
        ("feature-strategy-add", expected),
        ("feature-environment-enabled", expected),
        ("feature-archived", expected),
    ]


def test_create__only_the_required_reference_properties__201_a_release_flag(client, alice):
    response = create(client, alice, body=example_of("createFeatureSchema", optional=False))
    assert response.status_code == 201
    assert response.get_json()["type"] == "release" and response.get_json()["description"] is None


@pytest.mark.parametrize("flag_type", FLAG_TYPES)
def test_create__each_flag_type__201(client, alice, flag_type):
    response = create(client, alice, body={"name": f"t-{flag_type}", "type": flag_type})
    assert response.status_code == 201 and response.get_json()["type"] == flag_type


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "has space"}, "name"),
        ({"name": "x" * 101}, "name"),
        ({"name": "."}, "name"),
        ({"name": ".."}, "name"),
        ({"name": "caf\u00e9"}, "name"),
        ({"name": "a/b"}, "name"),
        ({"name": "features"}, "name"),  # /api/admin/archive/features is 4.4
        ({"name": ""}, "name"),
        ({"name": 42}, "name"),
        ({}, "name"),
        ({"name": "ok", "type": "sunset"}, "type"),
        ({"name": "ok", "type": "rocket"}, "type"),
        ({"name": "ok", "impressionData": "true"}, "impressionData"),
        ({"name": "ok", "tags": [{"type": "simple", "value": "x"}]}, "tags"),
        ({"name": "ok", "colour": "red"}, "colour"),
    ],
)
def test_create__bad_body__400_naming_the_field_and_nothing_written(client, alice, db, body, field):
    before = last_event_id(db)
    response = create(client, alice, body=body)
    assert response.status_code == 400
    assert any(d["message"].startswith(field) for d in response.get_json()["details"]), response.get_json()
    assert last_event_id(db) == before
    assert db.value("SELECT count(*) FROM features WHERE name = 'ok'") == 0


def test_create__name_of_a_live_flag__400_naming_name_and_nothing_written(client, alice, db):
    # Given: the live flag of that name as it is, and the newest event
    before = last_event_id(db), db.all("SELECT * FROM features WHERE name = 'checkout-v2'")
    environments = db.all(
        "SELECT * FROM feature_environments WHERE feature_name = 'checkout-v2' ORDER BY name"
    )
    # When: a create takes its name (the insert itself finds it taken)
    response = create(
        client,
        alice,
        body={
            "name": "checkout-v2",
            "type": "experiment",
            "tags": [{"type": "simple", "value": "taken-name"}],
        },
    )
    # Then
    assert response.status_code == 400
    assert response.get_json()["details"][0]["message"].startswith("name: a flag named")
    assert (last_event_id(db), db.all("SELECT * FROM features WHERE name = 'checkout-v2'")) == before
    assert (
        db.all("SELECT * FROM feature_environments WHERE feature_name = 'checkout-v2' ORDER BY name")
        == environments
    )
    assert (
        db.value(
            "SELECT count(*) FROM feature_tags WHERE feature_name = 'checkout-v2' AND value = 'taken-name'"
        )
        == 0
    )


def test_create__name_of_an_archived_flag__400_saying_to_revive_or_delete_it(client, alice, db):
    archived = db.value("SELECT name FROM features WHERE archived_at IS NOT NULL LIMIT 1")
    response = create(client, alice, body={"name": archived})
    assert response.status_code == 400
    message = response.get_json()["message"]
    assert "name:" in message and "revive" in message and f"/api/admin/archive/{archived}" in message


def test_create__unknown_project__404(client, alice):
    response = create(client, alice, "nowhere")
    assert response.status_code == 404 and "nowhere" in response.get_json()["message"]


@pytest.mark.parametrize(
    ("user", "project", "status"),
    [
        ("admin", "payments", 201),  # Admin: everywhere
        ("bob", "growth", 201),  # Editor: everywhere, with or without a role
        ("victor", "mobile", 201),  # Viewer with a role in the project
        ("victor", "default", 403),  # Viewer without one
        ("kenji", "mobile", 403),
    ],
)
def test_create__permissions_by_role(client, make_token, db, user, project, status):
    response = create(client, make_token(user=user), project)
    assert response.status_code == status
    if status == 403:
        assert response.get_json()["name"] == "NoAccessError"
        assert '"CREATE_FEATURE" permission' in response.get_json()["message"]
        assert db.value("SELECT count(*) FROM features WHERE name = 'new-checkout'") == 0


def test_create__not_json__415_and_broken_json__400(client, alice):
    plain = client.post(features_path("default"), data="name=x", headers=auth(alice))
    broken = client.post(
        features_path("default"), data=b"{", headers={**auth(alice), "Content-Type": "application/json"}
    )
    assert plain.status_code == 415 and broken.status_code == 400


def test_create__twenty_concurrent_creates_of_one_name__exactly_one_201(live_server, alice):
    # Given: a real server and 20 clients ready at one barrier
    server = live_server()
    barrier = threading.Barrier(20)
    statuses: list[int] = []
    lock = threading.Lock()

    def one() -> None:
        barrier.wait(timeout=10)
        reply = server.request(
            "POST",
            features_path("default"),
            {**auth(alice), "Content-Type": "application/json"},
            orjson.dumps({"name": "race"}),
        )
        with lock:
            statuses.append(reply.status)

    threads = [threading.Thread(target=one) for _ in range(20)]
    # When
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    # Then: one 201, nineteen 400 (the name is taken)
    assert sorted(statuses) == [201] + [400] * 19
    listing = server.request("GET", features_path("default"), auth(alice)).json()
    assert [f["name"] for f in listing["features"]].count("race") == 1


def test_create__twenty_concurrent_creates_of_one_name_over_two_processes__exactly_one_201(
    live_server, alice
):
    # Given: two servers on one database (two hosts behind a load balancer), and 20
    # clients ready at one barrier, half on each
    servers = [live_server(threads=4), live_server(threads=4)]
    barrier = threading.Barrier(20)
    statuses: list[int] = []
    lock = threading.Lock()

    def one(server) -> None:
        barrier.wait(timeout=10)
        reply = server.request(
            "POST",
            features_path("default"),
            {**auth(alice), "Content-Type": "application/json"},
            orjson.dumps({"name": "race-across"}),
        )
        with lock:
            statuses.append(reply.status)

    threads = [threading.Thread(target=one, args=(servers[n % 2],)) for n in range(20)]
    # When
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    # Then: one 201, nineteen 400 (the name is taken), and both processes list it once
    assert sorted(statuses) == [201] + [400] * 19
    for server in servers:
        listing = server.request("GET", features_path("default"), auth(alice)).json()
        assert [f["name"] for f in listing["features"]].count("race-across") == 1


# --- read ---------------------------------------------------------------------------------


def test_list__live_flags_of_the_project__valid_against_the_reference_schema(client, alice, db, assert_valid):
    response = client.get(features_path("default"), headers=auth(alice))
    assert response.status_code == 200
    assert_valid(response, "/api/admin/projects/{projectId}/features")
    assert_reference(response.get_json(), "projectFeaturesSchema")
    names = {f["name"] for f in response.get_json()["features"]}
    live = set(db.values("SELECT name FROM features WHERE project_id = 'default' AND archived_at IS NULL"))
    assert names == live and response.get_json()["version"] == 2


def test_list__favorites_marked_for_the_caller(client, alice, db):
    favorites = set(db.values("SELECT feature_name FROM favorite_features WHERE user_id = 2"))
    flags = client.get(features_path("default"), headers=auth(alice)).get_json()["features"]
    assert {f["name"] for f in flags if f["favorite"]} == favorites & {f["name"] for f in flags}


@pytest.mark.parametrize(("user", "status"), [("victor", 200), ("kenji", 403), ("bob", 200)])
def test_list__who_sees_a_project(client, make_token, user, status):
    response = client.get(features_path("mobile"), headers=auth(make_token(user=user)))
    assert response.status_code == status


def test_list__unknown_project__404(client, alice):
    assert client.get(features_path("nowhere"), headers=auth(alice)).status_code == 404


def test_get__live_flag__200_valid_against_the_reference_schema(client, alice, assert_valid):
    response = client.get(flag_path("default", "checkout-v2"), headers=auth(alice))
    assert response.status_code == 200
    assert_valid(response, "/api/admin/projects/{projectId}/features/{featureName}")
    assert_reference(response.get_json(), "featureSchema")
    assert response.get_json()["name"] == "checkout-v2"


def test_get__flag_of_another_project__404_saying_where_it_is(client, alice):
    response = client.get(flag_path("mobile", "checkout-v2"), headers=auth(alice))
    assert response.status_code == 404 and 'project "default" has one' in response.get_json()["message"]


def test_get__archived_flag__404_pointing_to_the_archive(client, alice, db):
    name, project = db.one("SELECT name, project_id FROM features WHERE archived_at IS NOT NULL").values()
    response = client.get(flag_path(project, name), headers=auth(alice))
    assert response.status_code == 404 and "revive" in response.get_json()["message"]


# --- update: PUT --------------------------------------------------------------------------


def test_put__changes_fields__200_metadata_event_then_stale_on(client, alice, db):
    # Given
    create(client, alice)
    before = last_event_id(db)
    body = {"description": "Checkout, second try", "type": "release", "stale": True, "impressionData": False}
    # When
    response = client.put(flag_path("default", "new-checkout"), json=body, headers=auth(alice))
    # Then
    assert response.status_code == 200
    assert_reference(response.get_json(), "featureSchema")
    assert {k: response.get_json()[k] for k in body} == body
    updated, stale = events_since(db, before)
    assert updated["type"] == "feature-metadata-updated"
    assert updated["preData"]["type"] == "experiment" and updated["data"]["type"] == "release"
    assert updated["data"]["stale"] is True and updated["project"] == "default"
    assert (stale["type"], stale["featureName"], stale["data"]) == ("feature-stale-on", "new-checkout", None)


def test_put__body_built_from_the_reference_update_schema__200(client, alice):
    create(client, alice)
    body = {**example_of("updateFeatureSchema"), "archived": False}
    response = client.put(flag_path("default", "new-checkout"), json=body, headers=auth(alice))
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["type"] == body["type"] and response.get_json()["stale"] is True


def test_put__fields_left_out__take_the_values_of_a_new_flag(client, alice):
    create(client, alice)
    response = client.put(flag_path("default", "new-checkout"), json={"stale": True}, headers=auth(alice))
    flag = response.get_json()
    assert (flag["type"], flag["description"], flag["impressionData"], flag["stale"]) == (
        "release",
        None,
        False,
        True,
    )


def test_put__same_values__200_and_no_event(client, alice, db):
    create(client, alice)
    before = last_event_id(db)
    body = {k: NEW[k] for k in ("type", "description", "impressionData")}
    response = client.put(flag_path("default", "new-checkout"), json=body, headers=auth(alice))
    assert response.status_code == 200 and last_event_id(db) == before


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "renamed"}, "name"),
        ({"archived": True}, "archived"),
        ({"type": "sunset"}, "type"),
        ({"stale": "yes"}, "stale"),
        ({"project": "mobile"}, "project"),
    ],
)
def test_put__bad_body__400_naming_the_field(client, alice, body, field):
    create(client, alice)
    response = client.put(flag_path("default", "new-checkout"), json=body, headers=auth(alice))
    assert response.status_code == 400
    assert response.get_json()["details"][0]["message"].startswith(field)


def test_put__viewer_without_a_role__403_naming_update_feature(client, victor):
    response = client.put(flag_path("default", "checkout-v2"), json={}, headers=auth(victor))
    assert response.status_code == 403 and '"UPDATE_FEATURE"' in response.get_json()["message"]


def test_put__unknown_flag_or_project__404(client, alice):
    assert client.put(flag_path("default", "nope"), json={}, headers=auth(alice)).status_code == 404
    assert client.put(flag_path("nowhere", "checkout-v2"), json={}, headers=auth(alice)).status_code == 404


def test_put__stale_flag__next_dashboard_health_drops(client, alice, db):
    # Given: alice's view of mobile, answered before the write
    project = dashboard_project(client, alice, "mobile")
    name = db.value(
        "SELECT name FROM features WHERE project_id = 'mobile' AND archived_at IS NULL AND stale = 0"
        " AND type IN ('kill-switch', 'permission') LIMIT 1"
    )
    flag = client.get(flag_path("mobile", name), headers=auth(alice)).get_json()
    # When
    body = {k: flag[k] for k in ("type", "description", "impressionData")} | {"stale": True}
    assert client.put(flag_path("mobile", name), json=body, headers=auth(alice)).status_code == 200
    # Then
    after = dashboard_project(client, alice, "mobile")
    unhealthy_before = round((100 - project["health"]) * project["featureCount"] / 100)
    assert after["health"] == 100 - (200 * (unhealthy_before + 1) + after["featureCount"]) // (
        2 * after["featureCount"]
    )
    assert after["health"] < project["health"]


# --- update: JSON Patch -------------------------------------------------------------------


def patch(client, token, operations, name="new-checkout", project="default"):
    return client.patch(flag_path(project, name), json=operations, headers=auth(token))


@pytest.mark.parametrize(
    ("operation", "field", "value"),
    [
        ({"op": "replace", "path": "/description", "value": "Changed"}, "description", "Changed"),
        ({"op": "replace", "path": "/type", "value": "kill-switch"}, "type", "kill-switch"),
        ({"op": "replace", "path": "/stale", "value": True}, "stale", True),
        ({"op": "replace", "path": "/impressionData", "value": False}, "impressionData", False),
        ({"op": "remove", "path": "/description"}, "description", None),
        ({"op": "add", "path": "/description", "value": "Added"}, "description", "Added"),
        ({"op": "copy", "from": "/name", "path": "/description"}, "description", "new-checkout"),
    ],
)
def test_patch__each_changeable_field__200_and_metadata_event(client, alice, db, operation, field, value):
    create(client, alice)
    before = last_event_id(db)
    response = patch(client, alice, [operation])
    assert response.status_code == 200, response.get_json()
    assert response.get_json()[field] == value
    assert events_since(db, before)[0]["type"] == "feature-metadata-updated"


def test_patch__body_built_from_the_reference_patches_schema__200(client, alice):
    create(client, alice)
    body = example_of("patchesSchema")
    assert body == [{"path": "/type", "op": "replace", "from": "/type", "value": "kill-switch"}]
    response = patch(client, alice, body)
    assert response.status_code == 200 and response.get_json()["type"] == "kill-switch"


def test_patch__stale_off__metadata_event_then_stale_off(client, alice, db):
    create(client, alice)
    patch(client, alice, [{"op": "replace", "path": "/stale", "value": True}])
    before = last_event_id(db)
    patch(client, alice, [{"op": "replace", "path": "/stale", "value": False}])
    assert [e["type"] for e in events_since(db, before)] == ["feature-metadata-updated", "feature-stale-off"]


@pytest.mark.parametrize("field", ["name", "project", "createdAt", "archived", "environments", "favorite"])
def test_patch__read_only_field__400_naming_it_and_nothing_changed(client, alice, db, field):
    create(client, alice)
    before = last_event_id(db)
    response = patch(client, alice, [{"op": "replace", "path": f"/{field}", "value": "x"}])
    assert response.status_code == 400
    assert response.get_json()["details"][0]["message"].startswith(f"{field}: is read-only")
    assert last_event_id(db) == before


@pytest.mark.parametrize(
    "body",
    [
        {"op": "replace", "path": "/description", "value": "not a list"},
        [{"path": "/description", "value": "x"}],
        [{"op": "frobnicate", "path": "/description", "value": "x"}],
        [{"op": "replace", "path": "description", "value": "x"}],
        [{"op": "replace", "path": "/description"}],
        [{"op": "move", "path": "/description"}],
        [{"op": "replace", "path": "", "value": {}}],
        [{"op": "replace", "path": "/description/0", "value": "x"}],
        [{"op": "replace", "path": "/type", "value": "sunset"}],
        [{"op": "replace", "path": "/stale", "value": "true"}],
        [{"op": "remove", "path": "/type"}],
        [{"op": "move", "from": "/name", "path": "/description"}],
    ],
)
def test_patch__malformed_or_impossible__400_and_nothing_changed(client, alice, db, body):
    create(client, alice)
    before = last_event_id(db)
    response = patch(client, alice, body)
    assert response.status_code == 400, response.get_json()
    assert response.get_json()["name"] == "BadDataError"
    assert last_event_id(db) == before
    assert (
        client.get(flag_path("default", "new-checkout"), headers=auth(alice)).get_json()["type"]
        == "experiment"
    )


def test_patch__failed_test_operation__409_and_nothing_changed(client, alice, db):
    create(client, alice)
    before = last_event_id(db)
    response = patch(
        client,
        alice,
        [
            {"op": "test", "path": "/type", "value": "release"},
            {"op": "replace", "path": "/stale", "value": True},
        ],
    )
    assert response.status_code == 409 and last_event_id(db) == before


def test_patch__passing_test_operation__applies_the_rest(client, alice):
    create(client, alice)
    response = patch(
        client,
        alice,
        [
            {"op": "test", "path": "/name", "value": "new-checkout"},
            {"op": "replace", "path": "/stale", "value": True},
        ],
    )
    assert response.status_code == 200 and response.get_json()["stale"] is True


def test_patch__json_patch_media_type__accepted(client, alice):
    create(client, alice)
    response = client.patch(
        flag_path("default", "new-checkout"),
        data=orjson.dumps([{"op": "replace", "path": "/stale", "value": True}]),
        headers={**auth(alice), "Content-Type": "application/json-patch+json"},
    )
    assert response.status_code == 200


def test_patch__kenji_on_mobile__403(client, kenji):
    response = patch(client, kenji, [], name="mobile-onboarding", project="mobile")
    assert response.status_code == 403 and '"UPDATE_FEATURE"' in response.get_json()["message"]


# --- environments on and off --------------------------------------------------------------


def test_on__flag_switched_on__event_with_environment_and_list_shows_it(client, alice, db):
    create(client, alice)
    before = last_event_id(db)
    response = client.post(toggle_path("default", "new-checkout", "production", "on"), headers=auth(alice))
    assert response.status_code == 200
    assert_reference(response.get_json(), "featureSchema")
    enabled = {e["name"]: e["enabled"] for e in response.get_json()["environments"]}
    assert enabled == {"development": False, "production": True}
    # the flag had no strategy there: it gets a flexibleRollout of 100 % first
    added, event = events_since(db, before)
    assert (added["type"], added["environment"], added["data"]["name"]) == (
        "feature-strategy-add",
        "production",
        "flexibleRollout",
    )
    assert (event["type"], event["environment"], event["project"], event["featureName"]) == (
        "feature-environment-enabled",
        "production",
        "default",
        "new-checkout",
    )


def test_on_twice__second_records_nothing__then_off_records_disabled(client, alice, db):
    create(client, alice)
    on = toggle_path("default", "new-checkout", "development", "on")
    client.post(on, headers=auth(alice))
    before = last_event_id(db)
    assert client.post(on, headers=auth(alice)).status_code == 200
    assert last_event_id(db) == before
    client.post(toggle_path("default", "new-checkout", "development", "off"), headers=auth(alice))
    assert [e["type"] for e in events_since(db, before)] == ["feature-environment-disabled"]


def test_on__then_archived__next_archive_answer_shows_it_enabled(client, alice):
    create(client, alice)
    etag = client.get(ARCHIVE, headers=auth(alice)).headers["ETag"]
    client.post(toggle_path("default", "new-checkout", "production", "on"), headers=auth(alice))
    assert client.delete(flag_path("default", "new-checkout"), headers=auth(alice)).status_code == 202
    response = client.get(ARCHIVE, headers={**auth(alice), "If-None-Match": etag})
    assert response.status_code == 200
    (flag,) = [f for f in response.get_json()["features"] if f["name"] == "new-checkout"]
    assert {e["name"]: e["enabled"] for e in flag["environments"]} == {
        "development": False,
        "production": True,
    }


def test_on__unknown_environment__404_listing_the_known_ones(client, alice):
    response = client.post(toggle_path("default", "checkout-v2", "staging", "on"), headers=auth(alice))
    assert response.status_code == 404
    assert "development, production" in response.get_json()["message"]


def test_on__archived_flag__409_saying_to_revive_it(client, alice, db):
    name, project = db.one("SELECT name, project_id FROM features WHERE archived_at IS NOT NULL").values()
    response = client.post(toggle_path(project, name, "development", "on"), headers=auth(alice))
    assert response.status_code == 409 and "revive" in response.get_json()["message"]


@pytest.mark.parametrize(("user", "status"), [("victor", 200), ("kenji", 403), ("admin", 200)])
def test_on__permissions_by_role(client, make_token, user, status):
    response = client.post(
        toggle_path("mobile", "mobile-onboarding", "development", "on"), headers=auth(make_token(user=user))
    )
    assert response.status_code == status
    if status == 403:
        assert '"UPDATE_FEATURE_ENVIRONMENT"' in response.get_json()["message"]


# --- the name check -----------------------------------------------------------------------


def test_validate__free_name__200_no_body(client, victor, assert_valid):
    response = client.post(VALIDATE, json={"name": "brand-new", "projectId": "default"}, headers=auth(victor))
    assert response.status_code == 200 and response.get_data() == b""
    assert "Content-Type" not in response.headers and response.headers["Content-Length"] == "0"
    assert_valid(response, VALIDATE, "post")


def test_validate__body_built_from_the_reference_schema__200(client, victor):
    body = example_of("validateFeatureSchema")
    assert client.post(VALIDATE, json=body, headers=auth(victor)).status_code == 200


@pytest.mark.parametrize(("name", "why"), [("checkout-v2", "already exists"), ("not ok", "URL-friendly")])
def test_validate__taken_or_invalid__400_naming_name(client, victor, name, why):
    response = client.post(VALIDATE, json={"name": name}, headers=auth(victor))
    assert response.status_code == 400
    detail = response.get_json()["details"][0]["message"]
    assert detail.startswith("name:") and why in detail


# --- 4.2 and 4.4 follow every write -------------------------------------------------------


@pytest.mark.parametrize(("change", "given", "when", "types"), WRITES, ids=[w[0] for w in WRITES])
def test_write__next_4_2_and_4_4_requests__answer_the_new_state(
    client, make_app, alice, change, given, when, types
):
    """After each change of the flag changes, the next 4.2 and 4.4 requests, sent with the ETags of
    the answers given (and cached) before it, answer exactly what a new app with empty caches
    answers: 304 only when that answer is unchanged, else 200 with the new body."""
    # Given: the state before the change, and 4.2 and 4.4 answered (and cached) for alice
    if given:
        given(client, alice)
    etags = {}
    for path in (DASHBOARD, ARCHIVE):
        earlier = client.get(path, headers=auth(alice))
        earlier.get_data()
        etags[path] = earlier.headers["ETag"]
    # When
    when(client, alice)
    # Then
    fresh_client = make_app().test_client()
    for path, etag in etags.items():
        fresh = fresh_client.get(path, headers=auth(alice))
        again = client.get(path, headers={**auth(alice), "If-None-Match": etag})
        if fresh.headers["ETag"] == etag:
            assert again.status_code == 304, (change, path)
        else:
            assert again.status_code == 200, (change, path)
            assert again.get_data() == fresh.get_data() and again.headers["ETag"] == fresh.headers["ETag"]
    flags = {f["name"] for f in client.get(DASHBOARD, headers=auth(alice)).get_json()["flags"]}
    archived = {f["name"] for f in client.get(ARCHIVE, headers=auth(alice)).get_json()["features"]}
    assert (NAME in flags) == (change not in ("archive", "delete"))
    assert (NAME in archived) == (change == "archive")


def test_patch__stale__next_dashboard_health_drops(client, alice, db):
    name = db.value(
        "SELECT name FROM features WHERE project_id = 'mobile' AND archived_at IS NULL AND stale = 0"
        " AND type IN ('kill-switch', 'permission') LIMIT 1"
    )
    health = dashboard_project(client, alice, "mobile")["health"]
    response = patch(
        client, alice, [{"op": "replace", "path": "/stale", "value": True}], name=name, project="mobile"
    )
    assert response.status_code == 200
    assert dashboard_project(client, alice, "mobile")["health"] < health
