"""Archive a flag, revive it, delete it for good; permissions by role; the events
written; and 4.2 and 4.4 answering from the new state on the very next request (their caches
and ETags follow each write)."""

from __future__ import annotations

import re

import pytest

from flag_helpers import (
    ARCHIVE,
    DASHBOARD,
    delete_path,
    events_since,
    features_path,
    flag_path,
    last_event_id,
    revive_path,
    toggle_path,
)
from helpers import auth


def create(client, token, name="to-archive", project="default"):
    response = client.post(features_path(project), json={"name": name}, headers=auth(token))
    assert response.status_code == 201
    return name


def archived_names(client, token, etag: str | None = None) -> list[str]:
    """The names 4.4 lists now, asked with the ETag of an earlier answer: a stale ETag must
    get a 200 with the new list, never a 304."""
    headers = auth(token) | ({"If-None-Match": etag} if etag else {})
    response = client.get(ARCHIVE, headers=headers)
    assert response.status_code == 200
    return [flag["name"] for flag in response.get_json()["features"]]


def archive_etag(client, token) -> str:
    return client.get(ARCHIVE, headers=auth(token)).headers["ETag"]


def dashboard_flags(client, token) -> list[str]:
    return [flag["name"] for flag in client.get(DASHBOARD, headers=auth(token)).get_json()["flags"]]


# --- archive ------------------------------------------------------------------------------


def test_archive__live_flag__202_no_body_event_and_next_4_4_and_4_2_answers_follow(
    client, alice, db, assert_valid
):
    # Given: a flag alice created, and 4.2 and 4.4 answered before the write
    name = create(client, alice)
    assert name in dashboard_flags(client, alice)
    etag = archive_etag(client, alice)
    before = last_event_id(db)
    # When
    response = client.delete(flag_path("default", name), headers=auth(alice))
    # Then
    assert response.status_code == 202 and response.get_data() == b""
    assert_valid(response, "/api/admin/projects/{projectId}/features/{featureName}", "delete")
    (event,) = events_since(db, before)
    assert (event["type"], event["project"], event["featureName"], event["data"]) == (
        "feature-archived",
        "default",
        name,
        None,
    )
    assert archived_names(client, alice, etag)[0] == name
    assert name not in dashboard_flags(client, alice)
    listing = client.get(features_path("default"), headers=auth(alice)).get_json()["features"]
    assert name not in {f["name"] for f in listing}
    assert client.get(flag_path("default", name), headers=auth(alice)).status_code == 404


def test_archive__202__no_content_type_for_no_content(client, alice):
    # Given
    name = create(client, alice, "typed-nothing")
    # When
    response = client.delete(flag_path("default", name), headers={**auth(alice), "Accept-Encoding": "gzip"})
    # Then: an empty body names no media type (RFC 9110 8.3) and is not encoded
    assert response.status_code == 202
    assert "Content-Type" not in response.headers
    assert "Content-Encoding" not in response.headers
    assert response.headers["Content-Length"] == "0"
    assert response.headers["Vary"] == "Accept-Encoding"
    assert response.headers["Cache-Control"] == "no-store"


def test_archive__archived_flag__409_saying_to_revive_or_delete(client, alice, db):
    name = create(client, alice)
    client.delete(flag_path("default", name), headers=auth(alice))
    before = last_event_id(db)
    response = client.delete(flag_path("default", name), headers=auth(alice))
    assert response.status_code == 409
    message = response.get_json()["message"]
    assert "archived already" in message and revive_path(name) in message and delete_path(name) in message
    assert last_event_id(db) == before


@pytest.mark.parametrize(("user", "status"), [("victor", 202), ("kenji", 403), ("bob", 202), ("admin", 202)])
def test_archive__permissions_by_role(client, make_token, db, user, status):
    response = client.delete(flag_path("mobile", "mobile-dark-mode"), headers=auth(make_token(user=user)))
    assert response.status_code == status
    if status == 403:
        assert '"DELETE_FEATURE"' in response.get_json()["message"]
        assert db.value("SELECT archived_at FROM features WHERE name = 'mobile-dark-mode'") is None


def test_archive__unknown_flag_or_project__404(client, alice):
    assert client.delete(flag_path("default", "nope"), headers=auth(alice)).status_code == 404
    assert client.delete(flag_path("nowhere", "checkout-v2"), headers=auth(alice)).status_code == 404


def test_archive__flag_of_another_project__404_saying_where_and_the_flag_stays_live(client, alice, db):
    response = client.delete(flag_path("default", "mobile-dark-mode"), headers=auth(alice))
    assert response.status_code == 404
    assert 'project "mobile" has one' in response.get_json()["message"]
    assert db.value("SELECT archived_at FROM features WHERE name = 'mobile-dark-mode'") is None


def test_archive__admin_token__event_by_admin(client, admin_token, db):
    client.delete(flag_path("default", "checkout-v2"), headers=auth(admin_token))
    (event,) = events_since(db, last_event_id(db) - 1)
    assert (event["createdBy"], event["createdByUserId"]) == ("admin", -42)


# --- revive -------------------------------------------------------------------------------


def test_revive__archived_flag__200_off_everywhere_event_and_gone_from_next_4_4(
    client, alice, db, assert_valid
):
    # Given: a flag switched on, then archived
    name = create(client, alice)
    client.post(toggle_path("default", name, "production", "on"), headers=auth(alice))
    client.delete(flag_path("default", name), headers=auth(alice))
    etag = archive_etag(client, alice)
    before = last_event_id(db)
    # When
    response = client.post(revive_path(name), headers=auth(alice))
    # Then
    assert response.status_code == 200 and response.get_data() == b""
    assert_valid(response, "/api/admin/archive/revive/{featureName}", "post")
    (event,) = events_since(db, before)
    assert (event["type"], event["project"], event["featureName"]) == ("feature-revived", "default", name)
    assert name not in archived_names(client, alice, etag)
    assert name in dashboard_flags(client, alice)
    flag = client.get(flag_path("default", name), headers=auth(alice)).get_json()
    assert flag["archived"] is False and flag["archivedAt"] is None
    assert [e["enabled"] for e in flag["environments"]] == [False, False]


def test_revive__seeded_archived_flag__200_and_has_every_environment(client, alice, db):
    name = db.value(
        "SELECT name FROM features WHERE archived_at IS NOT NULL AND project_id = 'default' LIMIT 1"
    )
    assert client.post(revive_path(name), headers=auth(alice)).status_code == 200
    environments = client.get(flag_path("default", name), headers=auth(alice)).get_json()["environments"]
    assert {(e["name"], e["enabled"]) for e in environments} == {
        ("development", False),
        ("production", False),
    }


def test_revive__live_flag__409_saying_it_is_live_and_how_to_archive(client, alice, db):
    before = last_event_id(db)
    response = client.post(revive_path("checkout-v2"), headers=auth(alice))
    assert response.status_code == 409
    message = response.get_json()["message"]
    assert "not archived" in message and flag_path("default", "checkout-v2") in message
    assert last_event_id(db) == before


def test_revive__unknown_flag__404(client, alice):
    assert client.post(revive_path("nope"), headers=auth(alice)).status_code == 404


@pytest.mark.parametrize(("user", "status"), [("victor", 200), ("kenji", 403), ("priya", 200)])
def test_revive__permissions_by_role_in_the_flags_project(client, make_token, db, user, status):
    name = db.value(
        "SELECT name FROM features WHERE archived_at IS NOT NULL AND project_id = 'mobile' LIMIT 1"
    )
    response = client.post(revive_path(name), headers=auth(make_token(user=user)))
    assert response.status_code == status
    if status == 403:
        # the permission is named; the project, which kenji cannot see, is not
        message = response.get_json()["message"]
        assert '"UPDATE_FEATURE"' in message and f'flag "{name}"' in message
        assert '"mobile"' not in message


# --- delete -------------------------------------------------------------------------------


def test_delete__archived_flag__200_event_with_pre_data_gone_from_4_4_and_name_free(client, alice, db):
    # Given
    name = create(client, alice)
    client.post(f"{flag_path('default', name)}/favorites", headers=auth(alice))
    client.delete(flag_path("default", name), headers=auth(alice))
    etag = archive_etag(client, alice)
    before = last_event_id(db)
    # When
    response = client.delete(delete_path(name), headers=auth(alice))
    # Then
    assert response.status_code == 200 and response.get_data() == b""
    (event,) = events_since(db, before)
    assert event["type"] == "feature-deleted" and event["data"] is None
    assert event["preData"]["name"] == name and event["preData"]["archived"] is True
    assert event["preData"]["archivedAt"] and event["project"] == "default"
    assert name not in archived_names(client, alice, etag)
    for table in ("features", "feature_environments", "favorite_features"):
        column = "name" if table == "features" else "feature_name"
        assert db.value(f"SELECT count(*) FROM {table} WHERE {column} = ?", [name]) == 0
    # and the name can be used again
    assert client.post(features_path("default"), json={"name": name}, headers=auth(alice)).status_code == 201


def test_delete__live_flag__409_saying_to_archive_it_first(client, alice, db):
    response = client.delete(delete_path("checkout-v2"), headers=auth(alice))
    assert response.status_code == 409
    assert "Archive it first" in response.get_json()["message"]
    assert flag_path("default", "checkout-v2") in response.get_json()["message"]
    assert db.value("SELECT count(*) FROM features WHERE name = 'checkout-v2'") == 1


def test_delete__unknown_flag__404(client, alice):
    assert client.delete(delete_path("nope"), headers=auth(alice)).status_code == 404


def test_delete__the_name_features__not_a_documented_flag_name__4_4s_path_answers_405(client, alice):
    """``features`` is 4.4's own path and a name no flag may take: the document's pattern for
    DELETE's ``featureName`` leaves it out (so no client built from the document sends it), and
    DELETE there is a 405 saying what the path allows; GET there is still 4.4."""
    document = client.get("/docs/openapi.json").get_json()
    (parameter,) = document["paths"]["/api/admin/archive/{featureName}"]["delete"]["parameters"]
    pattern = re.compile(parameter["schema"]["pattern"])
    assert [bool(pattern.search(name)) for name in ("features", "features-2", "checkout-v2")] == [
        False,
        True,
        True,
    ]
    response = client.delete(delete_path("features"), headers=auth(alice))
    assert response.status_code == 405
    assert "GET" in response.get_json()["message"]
    assert client.get(ARCHIVE, headers=auth(alice)).status_code == 200


@pytest.mark.parametrize(("user", "status"), [("kenji", 403), ("sam", 200)])
def test_delete__permissions_by_role_in_the_flags_project(client, make_token, db, user, status):
    name = db.value(
        "SELECT name FROM features WHERE archived_at IS NOT NULL AND project_id = 'default' LIMIT 1"
    )
    response = client.delete(delete_path(name), headers=auth(make_token(user=user)))
    assert response.status_code == status
    if status == 403:
        assert '"DELETE_FEATURE"' in response.get_json()["message"]
        assert '"default"' not in response.get_json()["message"]


def test_archive_revive_archive_delete__the_whole_cycle__events_in_order(client, alice, db):
    before = last_event_id(db)
    name = create(client, alice)
    client.delete(flag_path("default", name), headers=auth(alice))
    client.post(revive_path(name), headers=auth(alice))
    client.delete(flag_path("default", name), headers=auth(alice))
    client.delete(delete_path(name), headers=auth(alice))
    assert [e["type"] for e in events_since(db, before)] == [
        "feature-created",
        "feature-archived",
        "feature-revived",
        "feature-archived",
        "feature-deleted",
    ]
