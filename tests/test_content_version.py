"""``content_version`` moves for the writes that 4.2 (spec 4.2) or 4.4 (spec 4.4) can
show, and only for them, so that their answers stay cached (same ETag, 304) across the rest:
a live flag's description, a new user with no role, the name of a user who is in no project.
Each test also makes the nearest write that does show and sees the version move: the triggers
are narrow, not off. Run on either engine (``--engine=postgresql``)."""

from __future__ import annotations

import pytest
from scim_helpers import Scim, new_scim_token

from flag_helpers import ARCHIVE, DASHBOARD, flag_path
from helpers import auth


def content_version(db) -> int:
    return int(db.value("SELECT value FROM settings WHERE key = 'content_version'"))


def revalidates(client, token: str, path: str) -> int:
    """Status of asking ``path`` again with the ETag it answers now (304: still the same)."""
    etag = client.get(path, headers=auth(token)).headers["ETag"]
    return client.get(path, headers={**auth(token), "If-None-Match": etag}).status_code


def patch_flag(client, token, project: str, name: str, path: str, value) -> None:
    response = client.patch(
        flag_path(project, name), json=[{"op": "replace", "path": path, "value": value}], headers=auth(token)
    )
    assert response.status_code == 200, response.get_json()


@pytest.fixture
def scim(client, db) -> Scim:
    return Scim(client, new_scim_token(db))


def test_live_flag__description_changed__4_2_and_4_4_answers_kept(client, alice, victor, db):
    # Given: alice's dashboard and victor's archive, answered
    version = content_version(db)
    etags = {
        (token, path): client.get(path, headers=auth(token)).headers["ETag"]
        for token in (alice, victor)
        for path in (DASHBOARD, ARCHIVE)
    }
    # When: a live flag of their project gets a new description (4.2 shows none; 4.4 shows
    # archived flags only)
    patch_flag(client, alice, "mobile", "mobile-rating-prompt", "/description", "Asks for a rating, later")
    # Then
    assert content_version(db) == version
    for (token, path), etag in etags.items():
        again = client.get(path, headers={**auth(token), "If-None-Match": etag})
        assert again.status_code == 304, (path, again.status_code)


def test_live_flag__marked_stale__version_moves_and_dashboard_changes(client, alice, db):
    # Given
    version = content_version(db)
    etag = client.get(DASHBOARD, headers=auth(alice)).headers["ETag"]
    # When: stale counts in 4.2's project health
    patch_flag(client, alice, "mobile", "mobile-rating-prompt", "/stale", True)
    # Then
    assert content_version(db) > version
    assert client.get(DASHBOARD, headers={**auth(alice), "If-None-Match": etag}).status_code == 200


def test_archived_flag__description_changed__version_moves_and_archive_shows_it(client, alice, db):
    # Given: an archived flag of project mobile, and the archive answered
    name = db.value(
        "SELECT name FROM features WHERE archived_at IS NOT NULL AND project_id = 'mobile' LIMIT 1"
    )
    version = content_version(db)
    # When: its description changes underneath (4.4 shows every field of an archived flag)
    with db.write("features"):
        db.run("UPDATE features SET description = 'kept for the record' WHERE name = ?", [name])
    # Then
    assert content_version(db) > version
    archived = {f["name"]: f for f in client.get(ARCHIVE, headers=auth(alice)).get_json()["features"]}
    assert archived[name]["description"] == "kept for the record"


def test_environments__of_a_live_flag_kept__of_an_archived_flag_moved(db):
    live = db.value(
        "SELECT feature_name FROM feature_environments fe JOIN features f ON f.name = fe.feature_name"
        " WHERE f.archived_at IS NULL LIMIT 1"
    )
    archived = db.value("SELECT name FROM features WHERE archived_at IS NOT NULL LIMIT 1")
    version = content_version(db)
    # When: a live flag is turned on somewhere (4.2 shows no environment)
    with db.write("feature_environments"):
        db.run("UPDATE feature_environments SET enabled = 1 - enabled WHERE feature_name = ?", [live])
    # Then
    assert content_version(db) == version
    # When: an archived flag gets an environment (4.4 lists them)
    with db.write("feature_environments"):
        db.run(
            "INSERT INTO feature_environments (feature_name, name, enabled) VALUES (?, 'audit', 0)",
            [archived],
        )
    assert content_version(db) > version


def test_scim__user_without_role_created_and_renamed__answers_kept(client, alice, scim, db):
    # Given
    version = content_version(db)
    etag = client.get(DASHBOARD, headers=auth(alice)).headers["ETag"]
    # When: an identity provider creates a user in no project and no group, then renames it
    user = scim.create_user("newcomer@example.com")
    response = scim.patch(
        f"/Users/{user['id']}", {"op": "replace", "path": "displayName", "value": "New Comer"}
    )
    assert response.status_code in (200, 204)
    # Then: nobody's 4.2 or 4.4 can show that user
    assert content_version(db) == version
    assert client.get(DASHBOARD, headers={**auth(alice), "If-None-Match": etag}).status_code == 304


def test_scim__project_owner_renamed__version_moves_and_dashboard_shows_the_name(client, victor, scim, db):
    # Given: alice owns project mobile, where victor is a member, so victor's 4.2 lists her
    (found,) = scim.find_users('userName eq "alice"')
    version = content_version(db)
    # When
    response = scim.patch(
        f"/Users/{found['id']}", {"op": "replace", "path": "displayName", "value": "Alice A."}
    )
    assert response.status_code in (200, 204)
    # Then
    assert content_version(db) > version
    owners = client.get(DASHBOARD, headers=auth(victor)).get_json()["projectOwners"]
    assert "Alice A." in [owner["name"] for owner in owners]


def test_admin__renamed__version_moves_and_admins_show_the_name(client, victor, db):
    # Given: carol is an Admin, in no project: 4.2 lists her among the admins
    version = content_version(db)
    # When
    with db.write("users"):
        db.run("UPDATE users SET name = 'Carol C.' WHERE username = 'carol'")
    # Then
    assert content_version(db) > version
    admins = client.get(DASHBOARD, headers=auth(victor)).get_json()["admins"]
    assert "Carol C." in [admin.get("name") for admin in admins]


def test_user_in_no_project__made_admin__version_moves(client, scim, victor, db):
    # Given: a new user in no project (its creation moved nothing)
    user = scim.create_user("promoted@example.com")
    version = content_version(db)
    assert revalidates(client, victor, DASHBOARD) == 304
    # When: its root role becomes Admin
    with db.write("users"):
        db.run("UPDATE users SET root_role = 'Admin' WHERE id = ?", [int(user["id"])])
    # Then: it is one of 4.2's admins now
    assert content_version(db) > version
    admins = client.get(DASHBOARD, headers=auth(victor)).get_json()["admins"]
    assert "promoted@example.com" in [admin["username"] for admin in admins]
