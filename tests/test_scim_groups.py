"""/scim/v2/Groups (RFC 7643 section 4.2) and what groups grant: root roles and
project roles mapped in flagadmin, counted in 4.2 (spec 4.2: admins, projects, memberCount,
projectOwners) and visibility exactly as direct roles, with the caches kept exact."""

from __future__ import annotations

import pytest
from scim_helpers import GROUP_SCHEMA, Scim, assert_scim_error, bulk_users, group_body, new_scim_token

from flagadmin import events
from flagadmin.directory import role_mappings
from flagadmin.timestamps import SYSTEM_CLOCK
from flagadmin.web.state import state

from helpers import auth

DASHBOARD = "/api/admin/personal-dashboard"
ARCHIVE = "/api/admin/archive/features"
GENERATE = "/api/admin/scim-settings/generate-new-token"


@pytest.fixture
def scim(client, db) -> Scim:
    return Scim(client, new_scim_token(db))


def user_id(db, username: str) -> str:
    return str(db.value("SELECT id FROM users WHERE username = ?", [username]))


def member_ids(scim: Scim, group: dict) -> list[str]:
    return [m["value"] for m in scim.get(f"/Groups/{group['id']}").get_json()["members"]]


def event_types(db) -> list[str]:
    return list(db.values("SELECT type FROM events ORDER BY id"))


def map_root_role(db, group: str, role: str | None) -> None:
    role_mappings.set_group_root_role(db, group, role, events.COMMAND_LINE, SYSTEM_CLOCK)


def map_project_role(db, group: str, project: str, role: str, remove: bool = False) -> None:
    role_mappings.change_group_project_role(
        db, group, project, role, remove=remove, actor=events.COMMAND_LINE, clock=SYSTEM_CLOCK
    )


# --- groups and their members -------------------------------------------------------------------


def test_create__with_members__201_members_with_ref_type_display_and_events(scim, db):
    # When
    response = scim.post("/Groups", group_body("Flag admins", [user_id(db, "alice"), user_id(db, "kenji")]))
    # Then
    assert response.status_code == 201
    group = response.get_json()
    assert response.headers["Location"] == group["meta"]["location"]
    assert group["schemas"] == [GROUP_SCHEMA] and group["displayName"] == "Flag admins"
    assert group["id"] == "group-1"  # ids are unique across users and groups (RFC 7643 section 3.1)
    assert group["members"] == [
        {
            "value": "2",
            "$ref": "http://127.0.0.1:4242/scim/v2/Users/2",
            "type": "User",
            "display": "Alice Q. Example",
        },
        {"value": "10", "$ref": "http://127.0.0.1:4242/scim/v2/Users/10", "type": "User", "display": "kenji"},
    ]
    assert event_types(db) == ["group-created", "group-user-added"]
    added = db.one("SELECT created_by, data FROM events WHERE type = 'group-user-added'")
    assert added["created_by"] == "scim-client" and '"username":"kenji"' in added["data"]


def test_create__same_display_name_any_case__409_uniqueness(scim):
    scim.create_group("Flag Admins")
    assert_scim_error(scim.post("/Groups", group_body("flag admins")), 409, "uniqueness")


@pytest.mark.parametrize(
    "members",
    [
        [{"value": "9999"}],
        [{"value": "2"}, {"value": "not-an-id"}],
        [{"value": "2", "type": "Group"}],
        ["2", 42, {"display": "no value"}],
    ],
)
def test_create__unknown_or_foreign_member__400_and_nothing_written(scim, db, members):
    response = scim.post("/Groups", {"schemas": [GROUP_SCHEMA], "displayName": "Broken", "members": members})
    assert_scim_error(response, 400, "invalidValue")
    assert db.value("SELECT count(*) FROM directory_groups") == 0
    assert db.value("SELECT count(*) FROM events") == 0


def test_get__excluded_members_and_attributes__as_entra_reads_groups(scim, db):
    group = scim.create_group("Readers", [user_id(db, "bob")], externalId="ext-1")
    without = scim.get(f"/Groups/{group['id']}", query_string={"excludedAttributes": "members"}).get_json()
    assert (
        "members" not in without and without["displayName"] == "Readers" and without["externalId"] == "ext-1"
    )
    only = scim.get(f"/Groups/{group['id']}", query_string={"attributes": "members.value"}).get_json()
    assert only["members"] == [{"value": user_id(db, "bob")}] and "displayName" not in only
    found = scim.get(
        "/Groups", query_string={"filter": 'displayName eq "READERS"', "excludedAttributes": "members"}
    ).get_json()
    assert found["totalResults"] == 1 and "members" not in found["Resources"][0]
    by_member = scim.get("/Groups", query_string={"filter": f'members[value eq "{user_id(db, "bob")}"]'})
    assert [g["displayName"] for g in by_member.get_json()["Resources"]] == ["Readers"]
    by_id = scim.get("/Groups", query_string={"filter": f'id eq "{group["id"]}" or id sw "group-9"'})
    assert [g["displayName"] for g in by_id.get_json()["Resources"]] == ["Readers"]
    assert scim.get("/Groups", query_string={"filter": 'id eq "1"'}).get_json()["totalResults"] == 0
    assert_scim_error(scim.get("/Groups/1"), 404)
    user = scim.get(f"/Users/{user_id(db, 'bob')}").get_json()
    assert user["groups"] == [
        {
            "value": group["id"],
            "$ref": f"http://127.0.0.1:4242/scim/v2/Groups/{group['id']}",
            "display": "Readers",
        }
    ]


def test_patch__okta_rename_with_id__keeps_members_204(scim, db):
    # Given
    group = scim.create_group("Okta group", [user_id(db, "bob"), user_id(db, "sam")])
    # When: Okta sends this on every membership change
    response = scim.patch(
        f"/Groups/{group['id']}",
        {"op": "replace", "value": {"id": group["id"], "displayName": "Okta group 2"}},
    )
    # Then
    assert response.status_code == 204 and response.get_data() == b""
    after = scim.get(f"/Groups/{group['id']}").get_json()
    assert after["displayName"] == "Okta group 2" and len(after["members"]) == 2
    assert "group-updated" in event_types(db)


def test_patch__okta_remove_by_filter_and_add_in_one_request(scim, db):
    # Given
    bob, sam, kenji = (user_id(db, name) for name in ("bob", "sam", "kenji"))
    group = scim.create_group("Swap", [bob, sam])
    # When
    response = scim.patch(
        f"/Groups/{group['id']}",
        {"op": "remove", "path": f'members[value eq "{bob}"]'},
        {"op": "add", "path": "members", "value": [{"value": kenji, "display": "Kenji K."}]},
    )
    # Then: only bob left, kenji came, sam stayed
    assert response.status_code == 204
    after = scim.get(f"/Groups/{group['id']}").get_json()["members"]
    assert {m["value"]: m["display"] for m in after} == {sam: "Sam Signup", kenji: "Kenji K."}


def test_patch__okta_replace_members__exactly_the_list(scim, db):
    bob, sam, kenji = (user_id(db, name) for name in ("bob", "sam", "kenji"))
    group = scim.create_group("Full push", [bob, sam])
    scim.patch(
        f"/Groups/{group['id']}",
        {"op": "replace", "path": "members", "value": [{"value": kenji}, {"value": sam}]},
    )
    assert sorted(member_ids(scim, group), key=int) == sorted([kenji, sam], key=int)


def test_patch__entra_without_flag__capitalised_ops_remove_with_value_list(scim, db):
    bob, sam, kenji = (user_id(db, name) for name in ("bob", "sam", "kenji"))
    group = scim.create_group("Entra", [bob])
    response = scim.patch(
        f"/Groups/{group['id']}",
        {"op": "Replace", "path": "displayName", "value": "Entra renamed"},
        {
            "op": "Add",
            "path": "members",
            "value": [{"$ref": None, "value": sam}, {"$ref": None, "value": kenji}],
        },
        {"op": "Remove", "path": "members", "value": [{"value": bob}]},
    )
    assert response.status_code == 204
    after = scim.get(f"/Groups/{group['id']}").get_json()
    assert after["displayName"] == "Entra renamed"
    assert sorted(m["value"] for m in after["members"]) == sorted([sam, kenji])


def test_patch__authentik_one_member_per_operation(scim, db):
    ids = [user_id(db, name) for name in ("bob", "sam", "kenji", "priya")]
    group = scim.create_group("authentik")
    operations = [{"op": "add", "path": "members", "value": [{"value": i}]} for i in ids]
    operations.append({"op": "remove", "path": "members", "value": [{"value": ids[0]}]})
    assert scim.patch(f"/Groups/{group['id']}", *operations).status_code == 204
    assert sorted(member_ids(scim, group)) == sorted(ids[1:])


def test_patch__add_twice__idempotent_no_duplicate_and_others_kept(scim, db):
    bob, sam = user_id(db, "bob"), user_id(db, "sam")
    group = scim.create_group("Twice", [bob])
    for _ in range(2):
        scim.patch(f"/Groups/{group['id']}", {"op": "add", "path": "members", "value": [{"value": sam}]})
    assert sorted(member_ids(scim, group)) == sorted([bob, sam])
    assert db.value("SELECT count(*) FROM directory_group_members") == 2
    assert event_types(db).count("group-user-added") == 2  # bob at creation, sam once


def test_patch__remove_members_without_value__empties_group(scim, db):
    group = scim.create_group("Empty me", [user_id(db, "bob"), user_id(db, "sam")])
    scim.patch(f"/Groups/{group['id']}", {"op": "remove", "path": "members"})
    assert member_ids(scim, group) == []


def test_patch__remove_a_non_member__changes_nothing(scim, db):
    group = scim.create_group("Stable", [user_id(db, "bob")])
    before = db.value("SELECT count(*) FROM events")
    response = scim.patch(f"/Groups/{group['id']}", {"op": "remove", "path": 'members[value eq "9999"]'})
    assert response.status_code == 204
    assert member_ids(scim, group) == [user_id(db, "bob")]
    assert db.value("SELECT count(*) FROM events") == before


def test_patch__named_members_of_a_large_group__only_their_rows_read_and_changed(scim, db, app):
    """A PATCH that names members reads those members' rows of the group, not the whole
    membership: identity providers add members one request at a time (Entra, authentik), and
    reading every member each time would make provisioning a large group quadratic. A replace
    still reads them all (every member not named goes)."""
    if db.dialect != "sqlite":
        pytest.skip("traces the app's own SQLite connection (PostgreSQL's are pooled per request)")
    # Given: a group of 1,999 members, and one user not in it
    ids = bulk_users(db, 2_000, prefix="many")
    group = scim.create_group("Many", [str(i) for i in ids[:-1]])
    statements: list[str] = []
    conn = state(app).connections.conn
    conn.trace(statements.append)
    try:
        # When: one member added, one removed, one already there given a display
        response = scim.patch(
            f"/Groups/{group['id']}",
            {"op": "add", "path": "members", "value": [{"value": str(ids[-1])}]},
            {"op": "remove", "path": f'members[value eq "{ids[0]}"]'},
            {"op": "add", "path": "members", "value": [{"value": str(ids[1]), "display": "Second"}]},
        )
    finally:
        conn.trace(None)
    # Then
    assert response.status_code == 204
    reads = [
        s for s in statements if s.lstrip().upper().startswith("SELECT") and "directory_group_members" in s
    ]
    assert reads and all("user_id IN" in s for s in reads), reads
    assert sorted(int(i) for i in member_ids(scim, group)) == sorted(ids[1:])
    assert db.value("SELECT display FROM directory_group_members WHERE user_id = ?", [ids[1]]) == "Second"
    assert event_types(db)[-2:] == ["group-user-added", "group-user-removed"]


def test_patch__rename_and_add_unknown_user__400_and_nothing_written(scim, db):
    group = scim.create_group("Atomic", [user_id(db, "bob")])
    before = db.value("SELECT count(*) FROM events")
    response = scim.patch(
        f"/Groups/{group['id']}",
        {"op": "replace", "path": "displayName", "value": "Atomic 2"},
        {"op": "add", "path": "members", "value": [{"value": "9999"}]},
    )
    assert_scim_error(response, 400, "invalidValue")
    after = scim.get(f"/Groups/{group['id']}").get_json()
    assert after["displayName"] == "Atomic" and [m["value"] for m in after["members"]] == [user_id(db, "bob")]
    assert db.value("SELECT count(*) FROM events") == before


def test_patch__with_attributes__200_and_the_group(scim, db):
    group = scim.create_group("Answered")
    response = scim.patch(
        f"/Groups/{group['id']}",
        {"op": "add", "path": "members", "value": [{"value": user_id(db, "sam")}]},
        query_string={"attributes": "displayName,members"},
    )
    assert response.status_code == 200
    assert response.get_json()["members"][0]["value"] == user_id(db, "sam")


def test_patch__members_only__answer_meta_is_the_stored_one_and_moved(scim, db):
    """The group a PATCH answers is the row its UPDATE stored (RFC 7644 3.5.2: the resource
    after the change): meta.version and lastModified moved, and a GET reads the same."""
    # Given
    group = scim.create_group("Versioned")
    before = scim.get(f"/Groups/{group['id']}").get_json()["meta"]
    # When
    response = scim.patch(
        f"/Groups/{group['id']}",
        {"op": "add", "path": "members", "value": [{"value": user_id(db, "sam")}]},
        query_string={"attributes": "displayName,members,meta"},
    )
    # Then
    assert response.status_code == 200
    answered = response.get_json()
    assert answered["meta"]["version"] != before["version"]
    assert answered["meta"]["lastModified"] >= before["lastModified"]
    read = scim.get(f"/Groups/{group['id']}").get_json()
    assert (answered["meta"], answered["displayName"]) == (read["meta"], read["displayName"])


def test_get__meta_times_with_no_fraction__written_as_stored_with_milliseconds(scim, db):
    """meta.created and meta.lastModified are RFC 3339 UTC text with milliseconds, as stored
    and as filters compare them, whatever their digits: pydantic alone wrote a whole second as
    "...00Z" and any other moment with six digits ("...00.036000Z"), so two timestamps of one
    resource compared wrongly as text (CI once failed on a PATCH made at a whole second)."""
    # Given: a group created at a whole second and modified 36 ms later
    group = scim.create_group("Whole Second")
    with db.write():
        db.run(
            "UPDATE directory_groups SET created_at = ?, last_modified = ? WHERE display_name = ?",
            ["2026-11-27T04:36:28.000Z", "2026-11-27T04:36:28.036Z", "Whole Second"],
        )
    # When
    meta = scim.get(f"/Groups/{group['id']}").get_json()["meta"]
    # Then
    assert (meta["created"], meta["lastModified"]) == ("2026-11-27T04:36:28.000Z", "2026-11-27T04:36:28.036Z")
    assert meta["created"] < meta["lastModified"]


def test_patch__rename_to_another_groups_name_in_other_case__409_nothing_written(scim, db):
    # Given
    scim.create_group("Taken Name")
    group = scim.create_group("Mine", [user_id(db, "bob")])
    before = db.value("SELECT count(*) FROM events")
    # When: renamed onto the other's name, in another case, with a member added
    response = scim.patch(
        f"/Groups/{group['id']}",
        {"op": "replace", "path": "displayName", "value": "taken name"},
        {"op": "add", "path": "members", "value": [{"value": user_id(db, "sam")}]},
    )
    # Then
    assert_scim_error(response, 409, "uniqueness")
    assert member_ids(scim, group) == [user_id(db, "bob")]
    assert db.value("SELECT count(*) FROM events") == before


def test_patch__member_filter_other_than_value__400_invalid_filter(scim):
    group = scim.create_group("Filters")
    response = scim.patch(f"/Groups/{group['id']}", {"op": "remove", "path": 'members[display co "a"]'})
    assert_scim_error(response, 400, "invalidFilter")


def test_put__replaces_name_and_members__absent_members_empty(scim, db):
    bob, sam = user_id(db, "bob"), user_id(db, "sam")
    group = scim.create_group("Put", [bob])
    response = scim.put(f"/Groups/{group['id']}", group_body("Put 2", [sam]))
    assert response.status_code == 200 and [m["value"] for m in response.get_json()["members"]] == [sam]
    emptied = scim.put(f"/Groups/{group['id']}", {"schemas": [GROUP_SCHEMA], "displayName": "Put 2"})
    assert "members" not in emptied.get_json() or emptied.get_json()["members"] == []
    assert db.value("SELECT count(*) FROM directory_group_members") == 0


def test_delete__204_then_404_members_gone_mapping_stays(scim, db):
    group = scim.create_group("Doomed", [user_id(db, "bob")])
    map_root_role(db, "Doomed", "Editor")
    assert scim.delete(f"/Groups/{group['id']}").status_code == 204
    assert_scim_error(scim.get(f"/Groups/{group['id']}"), 404)
    assert_scim_error(scim.delete(f"/Groups/{group['id']}"), 404)
    assert db.value("SELECT count(*) FROM directory_group_members") == 0
    assert event_types(db)[-2:] == ["group-user-removed", "group-deleted"]
    assert role_mappings.group_roles(db, "doomed")[0]["rootRole"] == "Editor"
    again = scim.create_group("Doomed")
    assert int(again["id"].removeprefix("group-")) > int(group["id"].removeprefix("group-"))


def test_group_of_10000_members__added_in_one_patch_read_and_listed(scim, db):
    # Given: 10,000 users (bulk SQL)
    ids = bulk_users(db, 10_000, prefix="big")
    group = scim.create_group("Everyone")
    # When
    added = scim.patch(
        f"/Groups/{group['id']}", {"op": "add", "path": "members", "value": [{"value": str(i)} for i in ids]}
    )
    # Then
    assert added.status_code == 204
    read = scim.get(f"/Groups/{group['id']}").get_json()
    assert len(read["members"]) == 10_000 and read["members"][0]["display"] == "big00001"
    slim = scim.get(f"/Groups/{group['id']}", query_string={"excludedAttributes": "members"}).get_json()
    assert "members" not in slim
    listed = scim.get("/Groups").get_json()
    assert listed["totalResults"] == 1 and len(listed["Resources"][0]["members"]) == 10_000
    (event,) = db.all("SELECT data FROM events WHERE type = 'group-user-added'")
    assert event["data"].count('"username"') == 10_000
    # and emptied again in one operation
    assert (
        scim.patch(f"/Groups/{group['id']}", {"op": "replace", "path": "members", "value": []}).status_code
        == 204
    )
    assert db.value("SELECT count(*) FROM directory_group_members") == 0


# --- what groups grant: root roles ---------------------------------------------------------------


def test_group_mapped_to_admin__members_in_admins__removing_member_removes_it(scim, db, make_token):
    # Given: victor (Viewer) reads his dashboard, kept in the app's cache
    victor = make_token(user="victor")
    kenji_id = user_id(db, "kenji")
    before = scim.client.get(DASHBOARD, headers=auth(victor))
    assert "kenji" not in [a["username"] for a in before.get_json()["admins"]]
    map_root_role(db, "Flag admins", "Admin")
    group = scim.create_group("Flag admins", [kenji_id])
    # When / Then: kenji is an admin now
    with_kenji = scim.client.get(DASHBOARD, headers=auth(victor)).get_json()
    assert "kenji" in [a["username"] for a in with_kenji["admins"]]
    # When: the directory removes kenji from the group
    scim.patch(f"/Groups/{group['id']}", {"op": "remove", "path": f'members[value eq "{kenji_id}"]'})
    # Then
    without = scim.client.get(DASHBOARD, headers=auth(victor)).get_json()
    assert [a["username"] for a in without["admins"]] == [a["username"] for a in before.get_json()["admins"]]


def test_group_mapped_to_admin__member_token_gets_admin_permission_then_loses_it(scim, db, make_token):
    # Given: kenji (Viewer) may not generate the SCIM token
    kenji = make_token(user="kenji")
    assert scim.client.post(GENERATE, headers=auth(kenji)).status_code == 403
    map_root_role(db, "Admins", "Admin")
    group = scim.create_group("Admins", [user_id(db, "kenji")])
    # When / Then: through the group, kenji holds ADMIN (the token cache moved with it)
    granted = scim.client.post(GENERATE, headers=auth(kenji))
    assert granted.status_code == 200
    scim.token = granted.get_json()["token"]
    scim.patch(f"/Groups/{group['id']}", {"op": "remove", "path": "members"})
    assert scim.client.post(GENERATE, headers=auth(kenji)).status_code == 403


def test_root_role__highest_of_own_and_groups(scim, db):
    alice = user_id(db, "alice")  # Editor
    map_root_role(db, "Viewers", "Viewer")
    scim.create_group("Viewers", [alice])
    assert db.value("SELECT root_role FROM user_root_roles WHERE user_id = ?", [int(alice)]) == "Editor"
    map_root_role(db, "Viewers", "Admin")
    assert db.value("SELECT root_role FROM user_root_roles WHERE user_id = ?", [int(alice)]) == "Admin"


def test_mapping_follows_the_name__rename_away_loses_the_role(scim, db, make_token):
    sam = make_token(user="sam")
    map_root_role(db, "Editors", "Editor")
    group = scim.create_group("editors", [user_id(db, "sam")])  # another case: the same group name
    assert len(scim.client.get(DASHBOARD, headers=auth(sam)).get_json()["projectOwners"]) == 4
    scim.patch(f"/Groups/{group['id']}", {"op": "replace", "path": "displayName", "value": "Former editors"})
    assert len(scim.client.get(DASHBOARD, headers=auth(sam)).get_json()["projectOwners"]) == 2


def test_scim_created_user__viewer_until_a_group_says_otherwise(scim, db):
    created = scim.create_user("newbie@example.com")
    assert (
        db.value("SELECT root_role FROM user_root_roles WHERE user_id = ?", [int(created["id"])]) == "Viewer"
    )
    map_root_role(db, "Editors", "Editor")
    scim.create_group("Editors", [created["id"]])
    assert (
        db.value("SELECT root_role FROM user_root_roles WHERE user_id = ?", [int(created["id"])]) == "Editor"
    )


# --- what groups grant: project roles -------------------------------------------------------------


def test_project_role_through_group__counts_in_4_2_like_a_direct_role(scim, db, make_token):
    # Given: victor (Viewer) is a Member of mobile only
    victor = make_token(user="victor")
    before = scim.client.get(DASHBOARD, headers=auth(victor)).get_json()
    archived_before = scim.client.get(ARCHIVE, headers=auth(victor)).get_json()["features"]
    assert [p["id"] for p in before["projects"]] == ["mobile"]
    payments_members = db.value(
        "SELECT count(DISTINCT user_id) FROM project_members WHERE project_id = 'payments'"
    )
    # When: his group is made Owner of payments
    map_project_role(db, "Payments team", "payments", "Owner")
    scim.create_group("Payments team", [user_id(db, "victor")])
    # Then: payments is his, with him counted and listed among the owners; he sees its archive
    after = scim.client.get(DASHBOARD, headers=auth(victor)).get_json()
    payments = next(p for p in after["projects"] if p["id"] == "payments")
    assert payments["memberCount"] == payments_members + 1
    assert "Victor Viewer" in [o["name"] for o in after["projectOwners"]]
    archived_after = scim.client.get(ARCHIVE, headers=auth(victor)).get_json()["features"]
    assert {f["project"] for f in archived_after} - {f["project"] for f in archived_before} == {"payments"}
    # When: the mapping is taken back
    map_project_role(db, "Payments team", "payments", "Owner", remove=True)
    # Then
    back = scim.client.get(DASHBOARD, headers=auth(victor)).get_json()
    assert [p["id"] for p in back["projects"]] == ["mobile"]


def test_project_role_through_group__direct_and_group_role_count_once(scim, db):
    # alice is already a Member of payments; her group makes her Member again
    map_project_role(db, "Payments", "payments", "Member")
    scim.create_group("Payments", [user_id(db, "alice")])
    from flagadmin.store import visibility

    assert visibility.project_roles(db, int(user_id(db, "alice")), "payments") == {"Member"}
    count = db.value("SELECT count(DISTINCT user_id) FROM project_roles WHERE project_id = 'payments'")
    assert count == db.value(
        "SELECT count(DISTINCT user_id) FROM project_members WHERE project_id = 'payments'"
    )


def test_mapping_before_the_group_exists__applies_when_scim_creates_it(scim, db):
    map_project_role(db, "Future team", "growth", "Owner")
    kenji = int(user_id(db, "kenji"))
    from flagadmin.store import visibility

    assert "Owner" not in visibility.project_roles(db, kenji, "growth")
    scim.create_group("FUTURE TEAM", [str(kenji)])
    assert "Owner" in visibility.project_roles(db, kenji, "growth")


# --- the same on SQLite and PostgreSQL ------------------------------------------------


@pytest.mark.parametrize(("taken", "new", "status"), [("Ünit", "ÜNIT", 409), ("Ünit", "ünit", 201)])
def test_create__display_name_differing_in_case__409_only_when_ascii_letters_differ(scim, taken, new, status):
    # Given
    scim.create_group(taken)
    # When
    response = scim.post("/Groups", group_body(new))
    # Then
    assert response.status_code == status, response.get_json()


def test_mapping__group_named_in_another_case__applies_ascii_letters_folded_only(scim, db):
    # Given
    map_root_role(db, "ÜNIT ADMINS", "Admin")
    kenji = user_id(db, "kenji")
    # When
    scim.create_group("Ünit admins", [kenji])
    scim.create_group("ünit admins", [user_id(db, "sam")])
    # Then
    admins = set(db.values("SELECT user_id FROM group_granted_root_roles WHERE root_role = 'Admin'"))
    assert admins == {int(kenji)}


def versions(db) -> dict[str, int]:
    return {
        row["key"]: int(row["value"])
        for row in db.all(
            "SELECT key, value FROM settings WHERE key IN ('content_version', 'credentials_version')"
        )
    }


def test_directory_writes__move_both_version_counters__not_when_nothing_changes(scim, db):
    """The token cache and 4.2's answers, in every process, rely on these counters (spec 4.2;
    a deactivated user's token gets 401 on the very next request anywhere)."""
    bob, sam = user_id(db, "bob"), user_id(db, "sam")
    steps = {
        "group created with a member": lambda: scim.create_group("Counted", [bob]),
        "member added": lambda: scim.patch(
            f"/Groups/{group_id()}", {"op": "add", "path": "members", "value": [{"value": sam}]}
        ),
        "root role mapped": lambda: map_root_role(db, "counted", "Editor"),
        "project role mapped": lambda: map_project_role(db, "Counted", "growth", "Member"),
        "member removed": lambda: scim.patch(
            f"/Groups/{group_id()}", {"op": "remove", "path": f'members[value eq "{sam}"]'}
        ),
    }

    def group_id() -> str:
        return "group-" + str(db.value("SELECT id FROM directory_groups WHERE name_key = 'counted'"))

    for step, act in steps.items():
        before = versions(db)
        act()
        after = versions(db)
        assert all(after[key] > before[key] for key in before), step
    # a user deactivated: credentials_version moves
    before = versions(db)
    scim.patch(f"/Users/{bob}", {"op": "replace", "path": "active", "value": False})
    assert versions(db)["credentials_version"] > before["credentials_version"]
    # requests that change nothing move nothing
    before = versions(db)
    scim.patch(f"/Groups/{group_id()}", {"op": "remove", "path": 'members[value eq "9999"]'})
    scim.patch(f"/Users/{bob}", {"op": "replace", "path": "active", "value": False})
    assert versions(db) == before


def test_read_big_group__gzip_when_accepted(scim, db):
    import gzip

    ids = bulk_users(db, 2_000, prefix="zip")
    group = scim.create_group("Zipped", [str(i) for i in ids])
    plain = scim.get(f"/Groups/{group['id']}")
    zipped = scim.get(f"/Groups/{group['id']}", headers={"Accept-Encoding": "gzip"})
    assert zipped.headers["Content-Encoding"] == "gzip"
    assert zipped.mimetype == "application/scim+json"
    assert gzip.decompress(zipped.get_data()) == plain.get_data()
    assert len(zipped.get_data()) * 5 < len(plain.get_data())
