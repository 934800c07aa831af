"""The calling user's favorite flags: favorite, unfavorite, the events (with no
project, as the reference server records them), who may, and the personal dashboard (4.2)
answering from the new state on the very next request."""

from __future__ import annotations

import orjson
import pytest

from flag_helpers import DASHBOARD, events_since, favorites_path, last_event_id
from helpers import auth


def dashboard_flags(client, token) -> list[str]:
    return [flag["name"] for flag in client.get(DASHBOARD, headers=auth(token)).get_json()["flags"]]


def favorite(client, token, name="mobile-rating-prompt", project="mobile", method="post", **kwargs):
    return getattr(client, method)(favorites_path(project, name), headers=auth(token), **kwargs)


def test_favorite__200_no_body_event_without_project_and_next_dashboard_lists_it(
    client, victor, db, assert_valid
):
    # Given: victor's dashboard, answered before the write, without the flag
    assert "mobile-rating-prompt" not in dashboard_flags(client, victor)
    before = last_event_id(db)
    # When
    response = favorite(client, victor)
    # Then
    assert response.status_code == 200 and response.get_data() == b""
    assert_valid(response, "/api/admin/projects/{projectId}/features/{featureName}/favorites", "post")
    (event,) = events_since(db, before)
    assert event["type"] == "feature-favorited"
    assert (event["featureName"], event["project"], event["environment"]) == (
        "mobile-rating-prompt",
        None,
        None,
    )
    assert event["data"] == {"feature": "mobile-rating-prompt"}
    assert (event["createdBy"], event["createdByUserId"]) == ("victor", 3)
    assert "mobile-rating-prompt" in dashboard_flags(client, victor)


def test_favorite__twice__200_and_one_event(client, victor, db):
    favorite(client, victor)
    before = last_event_id(db)
    assert favorite(client, victor).status_code == 200
    assert last_event_id(db) == before


def test_unfavorite__200_event_and_next_dashboard_drops_it(client, victor, db):
    favorite(client, victor)
    assert "mobile-rating-prompt" in dashboard_flags(client, victor)
    before = last_event_id(db)
    response = favorite(client, victor, method="delete")
    assert response.status_code == 200
    (event,) = events_since(db, before)
    assert (event["type"], event["project"], event["data"]) == (
        "feature-unfavorited",
        None,
        {"feature": "mobile-rating-prompt"},
    )
    assert "mobile-rating-prompt" not in dashboard_flags(client, victor)


def test_unfavorite__not_a_favorite__200_and_no_event(client, victor, db):
    before = last_event_id(db)
    assert favorite(client, victor, method="delete").status_code == 200
    assert last_event_id(db) == before


def test_favorite__the_reference_clients_body__empty_json_object_accepted(client, victor):
    response = favorite(client, victor, data=orjson.dumps({}), content_type="application/json")
    assert response.status_code == 200


def test_favorite__admin_token__403_a_favorite_needs_a_user(client, admin_token):
    response = favorite(client, admin_token)
    assert response.status_code == 403 and "personal access token" in response.get_json()["message"]


@pytest.mark.parametrize(("user", "status"), [("kenji", 403), ("sam", 403), ("bob", 200), ("admin", 200)])
def test_favorite__any_user_on_flags_they_can_see(client, make_token, user, status):
    assert favorite(client, make_token(user=user)).status_code == status


def test_favorite__unknown_flag_or_project__404(client, victor):
    assert favorite(client, victor, name="nope").status_code == 404
    assert favorite(client, victor, project="nowhere").status_code == 404


def test_favorite__archived_flag__stays_out_of_the_dashboard(client, alice, db):
    name = db.value(
        "SELECT name FROM features WHERE archived_at IS NOT NULL AND project_id = 'mobile' LIMIT 1"
    )
    assert favorite(client, alice, name=name).status_code == 200
    assert name not in dashboard_flags(client, alice)


def content_version(db) -> int:
    return int(db.value("SELECT value FROM settings WHERE key = 'content_version'"))


def test_favorite__twice__the_second_moves_no_content_version_and_4_4_keeps_its_etag(client, victor, db):
    # Given: the flag favorited once, and the archive's ETag after it
    assert favorite(client, victor).status_code == 200
    version = content_version(db)
    etag = client.get("/api/admin/archive/features", headers=auth(victor)).headers["ETag"]
    # When: favorited again (a write that changes no row, on either engine)
    assert favorite(client, victor).status_code == 200
    # Then: the answers computed before still hold
    assert content_version(db) == version
    again = client.get("/api/admin/archive/features", headers={**auth(victor), "If-None-Match": etag})
    assert again.status_code == 304
    # and a write that changes a row moves it
    assert favorite(client, victor, method="delete").status_code == 200
    assert content_version(db) > version
