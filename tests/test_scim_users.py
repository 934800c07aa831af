"""/scim/v2/Users (RFC 7643 section 4.1, RFC 7644 section 3): create, read, list
with filters and paging, replace, patch, deactivate, delete; users flagadmin already had."""

from __future__ import annotations

import sqlite3

import pytest
from scim_helpers import (
    ENTERPRISE_SCHEMA,
    LIST_SCHEMA,
    USER_SCHEMA,
    Scim,
    assert_scim_error,
    bulk_users,
    new_scim_token,
    user_body,
)

from flagadmin.store import schema as store_schema

from helpers import auth, fingerprint, log_as_in_version_6, users_as_in_version_2

DASHBOARD = "/api/admin/personal-dashboard"


@pytest.fixture
def scim(client, db) -> Scim:
    return Scim(client, new_scim_token(db))


def events_of(db, event_type: str) -> list[dict]:
    return db.all("SELECT * FROM events WHERE type = ? ORDER BY id", [event_type])


# --- create -------------------------------------------------------------------------------------


def test_create__okta_user__201_with_location_viewer_and_event(scim, db):
    # When
    response = scim.post(
        "/Users", user_body("jane.doe@example.com", externalId="00u1", password="x", locale="en")
    )
    # Then
    assert response.status_code == 201
    user = response.get_json()
    assert (
        response.headers["Location"]
        == user["meta"]["location"]
        == f"http://127.0.0.1:4242/scim/v2/Users/{user['id']}"
    )
    assert user["schemas"] == [USER_SCHEMA]
    assert user["userName"] == "jane.doe@example.com"
    assert user["name"] == {"givenName": "Jane", "familyName": "Doe"}
    assert user["emails"] == [{"value": "jane.doe@example.com", "type": "work", "primary": True}]
    assert user["active"] is True and user["externalId"] == "00u1"
    assert user["meta"]["resourceType"] == "User" and user["meta"]["version"] == 'W/"1"'
    assert "password" not in user and "locale" not in user
    row = db.one("SELECT root_role, scim_managed FROM users WHERE id = ?", [int(user["id"])])
    assert row == {"root_role": "Viewer", "scim_managed": 1}
    (event,) = events_of(db, "user-created")
    assert event["created_by"] == "scim-client" and event["created_by_user_id"] is None
    assert '"username":"jane.doe@example.com"' in event["data"]


@pytest.mark.parametrize(
    ("existing", "new", "attribute"),
    [
        ({"userName": "Jane@Example.com"}, {"userName": "jane@example.COM"}, "userName"),
        (
            {"userName": "a@example.com", "externalId": "x1"},
            {"userName": "b@example.com", "externalId": "x1"},
            "externalId",
        ),
        ({"userName": "x"}, {"userName": "alice"}, "userName"),
    ],
)
def test_create__taken_username_or_external_id__409_uniqueness_and_nothing_written(
    scim, db, existing, new, attribute
):
    # Given
    scim.post("/Users", {"schemas": [USER_SCHEMA], **existing})
    before = db.value("SELECT count(*) FROM users")
    # When
    response = scim.post("/Users", {"schemas": [USER_SCHEMA], **new})
    # Then
    body = assert_scim_error(response, 409, "uniqueness")
    assert attribute in body["detail"]
    assert db.value("SELECT count(*) FROM users") == before


def test_create__enterprise_extension_and_unknown_attributes__accepted_and_ignored(scim):
    # When
    response = scim.post(
        "/Users",
        {
            **user_body("ext@example.com"),
            "schemas": [USER_SCHEMA, ENTERPRISE_SCHEMA, "urn:example:custom:1.0:User"],
            ENTERPRISE_SCHEMA: {"employeeNumber": "701984", "department": "Tour Operations"},
            "urn:example:custom:1.0:User": {"shoeSize": 44},
            "nickName": "Babs",
            "roles": [],
            "favouriteColour": "blue",
        },
    )
    # Then
    assert response.status_code == 201
    user = response.get_json()
    assert user["schemas"] == [USER_SCHEMA]
    assert ENTERPRISE_SCHEMA not in user and "nickName" not in user and "favouriteColour" not in user


def test_create__several_emails__the_primary_one_is_kept(scim):
    body = user_body("multi@example.com")
    body["emails"] = [
        {"value": "home@example.com", "type": "home"},
        {"value": "work@example.com", "type": "work", "primary": True},
    ]
    user = scim.post("/Users", body).get_json()
    assert user["emails"] == [{"value": "work@example.com", "type": "work", "primary": True}]


# --- read and list ------------------------------------------------------------------------------


@pytest.mark.parametrize("user_id", ["999", "00919288221112222", "01", "abc", "-1", "1.0"])
def test_get__unknown_id__404_scim_error(scim, user_id):
    assert_scim_error(scim.get(f"/Users/{user_id}"), 404)


def test_get__user_flagadmin_already_had__readable_and_listed(scim, db):
    # Given: alice comes from the seed, not from SCIM
    alice_id = db.value("SELECT id FROM users WHERE username = 'alice'")
    # When
    user = scim.get(f"/Users/{alice_id}").get_json()
    listed = scim.get("/Users").get_json()
    # Then
    assert user["userName"] == "alice" and user["active"] is True
    assert user["emails"][0]["value"] == db.value("SELECT email FROM users WHERE username = 'alice'")
    assert listed["totalResults"] == 9
    assert [u["userName"] for u in listed["Resources"]][:3] == ["admin", "alice", "victor"]


@pytest.mark.parametrize(
    ("scim_filter", "expected"),
    [
        ('userName eq "ALICE"', ["alice"]),
        ('userName eq "alice" and active eq true', ["alice"]),
        ('userName eq "alice" or userName eq "bob"', ["alice", "bob"]),
        ('userName sw "ca"', ["carol"]),
        ('userName co "ENJ"', ["kenji"]),
        ('userName ew "OR"', ["victor"]),
        ('emails[type eq "work"].value eq "ALICE@EXAMPLE.COM"', ["alice"]),
        ('emails.value eq "alice@example.com"', ["alice"]),
        ('emails co "@example.com" and userName sw "p"', ["priya"]),
        ('userName eq "nobody"', []),
        ('not (userName ne "sam")', ["sam"]),
        ('id eq "2"', ["alice"]),
        ('id eq "03"', []),
        ('userName gt "sa" and userName lt "v"', ["sam"]),
        ('displayName pr and userName eq "bob"', ["bob"]),
        ("name.givenName pr", []),
        ('meta.resourceType eq "User" and userName eq "bob"', ["bob"]),
    ],
)
def test_list__filters__matching_users_in_id_order(scim, scim_filter, expected):
    found = scim.find_users(scim_filter)
    assert [u["userName"] for u in found] == expected


def test_list__filter_on_external_id__case_exact(scim):
    scim.create_user("ext@example.com", externalId="AbC-1")
    assert [u["userName"] for u in scim.find_users('externalId eq "AbC-1"')] == ["ext@example.com"]
    assert scim.find_users('externalId eq "abc-1"') == []
    assert [u["userName"] for u in scim.find_users('externalId sw "AbC"')] == ["ext@example.com"]
    assert scim.find_users('externalId sw "abc"') == []
    assert scim.find_users('externalId co "bC-"') != [] and scim.find_users('externalId co "BC-"') == []


def test_list__like_wildcards_in_values__matched_literally(scim):
    # Given
    scim.create_user("dave_1")
    scim.create_user("davex1")
    scim.create_user("100%sure")
    # When / Then: _ and % are characters, not LIKE wildcards
    assert [u["userName"] for u in scim.find_users('userName sw "dave_"')] == ["dave_1"]
    assert [u["userName"] for u in scim.find_users('userName co "%"')] == ["100%sure"]
    assert [u["userName"] for u in scim.find_users('userName ew "\\\\"')] == []


def test_list__filter_on_groups__members_of_a_group(scim, db):
    # Given
    bob = db.value("SELECT id FROM users WHERE username = 'bob'")
    group = scim.create_group("Release managers", [str(bob)])
    # When / Then
    assert [u["userName"] for u in scim.find_users(f'groups.value eq "{group["id"]}"')] == ["bob"]
    assert [u["userName"] for u in scim.find_users('groups[display eq "release MANAGERS"]')] == ["bob"]


@pytest.mark.parametrize(
    "scim_filter",
    [
        "userName eq",
        'userName eq "unterminated',
        "externalId eq jyoung",
        '((((userName eq "a"',
        'title eq "Tour Guide"',
        f'{ENTERPRISE_SCHEMA}:employeeNumber eq "1"',
        'userName xx "a"',
        'active eq "yes"',
        'meta.created gt "yesterday"',
        "not (" * 40 + 'userName eq "a"' + ")" * 40,
        " or ".join(f'userName eq "u{i}"' for i in range(150)),
        "a" * 5000,
    ],
)
def test_list__malformed_or_unsupported_filter__400_invalid_filter(scim, scim_filter):
    response = scim.get("/Users", query_string={"filter": scim_filter})
    assert_scim_error(response, 400, "invalidFilter")


def test_list__filter_in_2000_parentheses__evaluated_not_refused(scim):
    found = scim.find_users("(" * 2000 + 'userName eq "bob"' + ")" * 2000)
    assert [u["userName"] for u in found] == ["bob"]


def test_list__250_users_paged_by_100__each_once_in_order_integer_counters(scim, db):
    # Given: 250 users besides the 9 of the seed, built with bulk SQL
    bulk_users(db, 250)
    total = db.value("SELECT count(*) FROM users")
    # When: the way Okta imports, startIndex moving by the page size
    seen, start, pages = [], 1, 0
    while pages < 10:
        page = scim.get("/Users", query_string={"startIndex": start, "count": 100}).get_json()
        pages += 1
        assert page["schemas"] == [LIST_SCHEMA]
        assert isinstance(page["totalResults"], int) and isinstance(page["itemsPerPage"], int)
        assert page["startIndex"] == start and page["totalResults"] == total
        seen += [u["id"] for u in page["Resources"]]
        if start + page["itemsPerPage"] > page["totalResults"]:
            break
        start += page["itemsPerPage"]
    # Then
    assert pages == 3
    assert len(seen) == len(set(seen)) == total == 259
    assert [int(i) for i in seen] == sorted(int(i) for i in seen)


def test_list__count_zero__totals_only(scim):
    page = scim.get("/Users", query_string={"count": 0}).get_json()
    assert page["totalResults"] == 9 and page["itemsPerPage"] == 0 and page["Resources"] == []


@pytest.mark.parametrize(
    ("params", "start", "items"),
    [
        ({"startIndex": 0, "count": 2}, 1, 2),
        ({"startIndex": -5}, 1, 9),
        ({"startIndex": 9, "count": 5}, 9, 1),
        ({"startIndex": 50}, 50, 0),
        ({"count": -3}, 1, 0),
        ({"count": 100000}, 1, 9),
        ({"startIndex": 2, "aadOptscim062020": ""}, 2, 8),
        ({"startIndex": 2**63 - 1}, 2**63 - 1, 0),
    ],
)
def test_list__paging_parameters__clamped(scim, params, start, items):
    page = scim.get("/Users", query_string=params).get_json()
    assert (page["startIndex"], page["itemsPerPage"], len(page["Resources"])) == (start, items, items)


@pytest.mark.parametrize("params", [{"count": "ten"}, {"startIndex": "1.5"}, {"startIndex": str(2**63)}])
def test_list__non_integer_paging__400_invalid_value(scim, params):
    assert_scim_error(scim.get("/Users", query_string=params), 400, "invalidValue")


def test_list__count_above_max_results__capped_at_200(scim, db):
    bulk_users(db, 210)
    page = scim.get("/Users", query_string={"count": 500}).get_json()
    assert page["itemsPerPage"] == 200 and page["totalResults"] == 219


def test_get__attributes_and_excluded_attributes__select_what_is_returned(scim):
    user = scim.create_user("sel@example.com", externalId="s1")
    only = scim.get(f"/Users/{user['id']}", query_string={"attributes": "userName,emails.value"}).get_json()
    assert only == {
        "schemas": [USER_SCHEMA],
        "id": user["id"],
        "userName": "sel@example.com",
        "emails": [{"value": "sel@example.com"}],
    }
    without = scim.get(
        f"/Users/{user['id']}", query_string={"excludedAttributes": "emails,meta,name"}
    ).get_json()
    assert "emails" not in without and "meta" not in without and without["externalId"] == "s1"
    listed = scim.get(
        "/Users", query_string={"filter": 'userName eq "sel@example.com"', "attributes": "userName"}
    )
    assert listed.get_json()["Resources"] == [
        {"schemas": [USER_SCHEMA], "id": user["id"], "userName": "sel@example.com"}
    ]


# --- replace and patch ----------------------------------------------------------------------------


def test_put__whole_object_back__read_only_ignored_absent_cleared(scim, db):
    # Given: Okta reads the user, changes a name, and PUTs everything back, id, meta and groups included
    user = scim.create_user("put@example.com", externalId="p1", displayName="Put Me")
    user["name"]["givenName"] = "Changed"
    user["groups"] = [{"value": "77", "display": "Not a group"}]
    user["id"] = "424242"
    user["meta"]["created"] = "2000-01-01T00:00:00Z"
    del user["displayName"]
    # When
    response = scim.put(f"/Users/{response_id(user)}", user)
    # Then
    assert response.status_code == 200
    after = response.get_json()
    assert after["name"]["givenName"] == "Changed"
    assert "displayName" not in after and "groups" not in after
    assert after["meta"]["created"] != "2000-01-01T00:00:00Z" and after["meta"]["version"] == 'W/"2"'
    assert len(events_of(db, "user-updated")) == 1


def response_id(user: dict) -> str:
    """The id of a user document, from its location (the test above overwrote its id)."""
    return user["meta"]["location"].rsplit("/", 1)[1]


def test_put__user_flagadmin_already_had__becomes_scim_managed_keeps_root_role(scim, db):
    # Given
    alice_id = db.value("SELECT id FROM users WHERE username = 'alice'")
    user = scim.get(f"/Users/{alice_id}").get_json()
    # When
    response = scim.put(f"/Users/{alice_id}", {**user, "displayName": "Alice from the IdP"})
    # Then
    assert response.status_code == 200
    row = db.one("SELECT name, root_role, scim_managed FROM users WHERE id = ?", [alice_id])
    assert row == {"name": "Alice from the IdP", "root_role": "Editor", "scim_managed": 1}


def test_put__rename_to_taken_username__409_and_unchanged(scim, db):
    user = scim.create_user("mover@example.com")
    response = scim.put(f"/Users/{user['id']}", {**user, "userName": "BOB"})
    assert_scim_error(response, 409, "uniqueness")
    assert db.value("SELECT username FROM users WHERE id = ?", [int(user["id"])]) == "mover@example.com"


def test_put__unknown_user__404(scim):
    assert_scim_error(scim.put("/Users/9999", user_body("ghost@example.com")), 404)


def test_patch__okta_deactivate_and_reactivate__user_stays_readable(scim, db):
    # Given
    user = scim.create_user("okta@example.com")
    # When
    off = scim.patch(f"/Users/{user['id']}", {"op": "replace", "value": {"active": False}})
    read = scim.get(f"/Users/{user['id']}")
    on = scim.patch(f"/Users/{user['id']}", {"op": "replace", "value": {"active": True}})
    # Then
    assert off.status_code == 200 and off.get_json()["active"] is False
    assert read.status_code == 200 and read.get_json()["active"] is False
    assert on.get_json()["active"] is True
    assert [u["userName"] for u in scim.find_users("active eq false")] == []


def test_patch__remove_username__400_and_unchanged(scim, db):
    user = scim.create_user("keep@example.com")
    response = scim.patch(f"/Users/{user['id']}", {"op": "remove", "path": "userName"})
    assert response.status_code == 400
    assert db.value("SELECT username FROM users WHERE id = ?", [int(user["id"])]) == "keep@example.com"


def test_patch__change_id__400_mutability(scim):
    user = scim.create_user("fixed@example.com")
    response = scim.patch(f"/Users/{user['id']}", {"op": "replace", "path": "id", "value": "1"})
    assert_scim_error(response, 400)


def test_patch__nothing_changes__no_event_same_version(scim, db):
    user = scim.create_user("same@example.com")
    response = scim.patch(
        f"/Users/{user['id']}", {"op": "replace", "path": "userName", "value": "same@example.com"}
    )
    assert response.get_json()["meta"]["version"] == 'W/"1"'
    assert events_of(db, "user-updated") == []


# --- deactivation and deletion ------------------------------------------------------------------


def test_deactivate__personal_token_401_on_next_request__admin_token_still_works(
    make_app, db, make_token, admin_token, answer_cache
):
    # Given: alice's token works (and is cached by the app)
    client = make_app().test_client()
    scim = Scim(client, new_scim_token(db))
    token = make_token(user="alice")
    assert client.get(DASHBOARD, headers=auth(token)).status_code == 200
    alice_id = db.value("SELECT id FROM users WHERE username = 'alice'")
    # When: the directory deactivates her
    response = scim.patch(f"/Users/{alice_id}", {"op": "Replace", "path": "active", "value": "False"})
    # Then
    assert response.status_code == 200 and response.get_json()["active"] is False
    assert client.get(DASHBOARD, headers=auth(token)).status_code == 401
    assert (
        db.value("SELECT count(*) FROM api_tokens WHERE user_id = ? AND revoked_at IS NULL", [alice_id]) == 0
    )
    (revoked,) = events_of(db, "pat-deleted")
    assert revoked["created_by"] == "scim-client"
    assert client.get("/api/admin/ui-config", headers=auth(admin_token)).status_code == 200


def test_deactivate_through_one_app__other_app_401_on_next_request_and_dashboard_updated(
    make_app, db, make_token
):
    # Given: two apps on one database (two processes behind a load balancer: each its own
    # token cache and 4.2 answers), alice's token and carol's dashboard known to the first
    first, second = make_app().test_client(), make_app().test_client()
    alice, carol = make_token(user="alice"), make_token(user="carol")
    assert first.get(DASHBOARD, headers=auth(alice)).status_code == 200
    before = first.get(DASHBOARD, headers=auth(carol)).get_json()
    alice_id = db.value("SELECT id FROM users WHERE username = 'alice'")
    # When: the directory deactivates her through the second
    scim = Scim(second, new_scim_token(db))
    assert (
        scim.patch(f"/Users/{alice_id}", {"op": "replace", "path": "active", "value": False}).status_code
        == 200
    )
    # Then: the first learns of it on its very next requests
    assert first.get(DASHBOARD, headers=auth(alice)).status_code == 401
    after = first.get(DASHBOARD, headers=auth(carol)).get_json()
    assert "Alice Q. Example" in [o["name"] for o in before["projectOwners"]]
    assert "Alice Q. Example" not in [o["name"] for o in after["projectOwners"]]


def test_deactivated_user__holds_no_project_role_and_is_no_admin(scim, db, make_token):
    # Given: carol is an Admin, alice the Owner of mobile
    victor = make_token(user="victor")
    carol_id, alice_id = (
        db.value("SELECT id FROM users WHERE username = ?", [name]) for name in ("carol", "alice")
    )
    client = scim.client
    before = client.get(DASHBOARD, headers=auth(victor)).get_json()
    assert "carol" in [a["username"] for a in before["admins"]]
    # When
    for user_id in (carol_id, alice_id):
        scim.patch(f"/Users/{user_id}", {"op": "replace", "path": "active", "value": False})
    # Then
    after = client.get(DASHBOARD, headers=auth(victor)).get_json()
    assert "carol" not in [a["username"] for a in after["admins"]]
    mobile = next(p for p in after["projects"] if p["id"] == "mobile")
    assert (
        mobile["memberCount"] == next(p for p in before["projects"] if p["id"] == "mobile")["memberCount"] - 1
    )
    assert "Alice" not in " ".join(o["name"] for o in after["projectOwners"])


def test_delete__tombstone_404_after__username_and_external_id_free_again(scim, db, make_token):
    # Given: a provisioned user with a token, in a group
    user = scim.create_user("gone@example.com", externalId="g-1")
    group = scim.create_group("Leavers", [user["id"]])
    token = make_token(user="gone@example.com")
    # When
    deleted = scim.delete(f"/Users/{user['id']}")
    # Then
    assert deleted.status_code == 204 and deleted.get_data() == b""
    assert_scim_error(scim.get(f"/Users/{user['id']}"), 404)
    assert_scim_error(scim.delete(f"/Users/{user['id']}"), 404)
    assert_scim_error(
        scim.patch(f"/Users/{user['id']}", {"op": "replace", "path": "active", "value": True}), 404
    )
    assert scim.find_users('userName eq "gone@example.com"') == []
    assert scim.client.get(DASHBOARD, headers=auth(token)).status_code == 401
    assert scim.get(f"/Groups/{group['id']}").get_json()["members"] == []
    row = db.one("SELECT active, deleted_at, external_id FROM users WHERE id = ?", [int(user["id"])])
    assert row["active"] == 0 and row["deleted_at"] and row["external_id"] is None
    # and it can be provisioned again, as a new user
    again = scim.create_user("gone@example.com", externalId="g-1")
    assert again["id"] != user["id"]
    kinds = [row["type"] for row in db.all("SELECT type FROM events ORDER BY id")]
    assert kinds.count("user-deleted") == 1 and "group-user-removed" in kinds


# --- the same answers on SQLite and PostgreSQL ---------------------------------------

#: userName -> externalId of users whose filters read differently under another fold (Unicode
#: lower()), another collation (a locale's order), or another LIKE (case-sensitive or not).
ENGINE_TRAPS = {"Zoe": "Zeta", "amy": "alpha", "Émile": "Écho", "under_score": "x_1", "100%": "y%"}


@pytest.mark.parametrize(
    ("scim_filter", "expected"),
    [
        ('userName sw "ZO"', ["Zoe"]),  # caseExact false: PostgreSQL's LIKE alone keeps case
        ('externalId sw "zeta"', []),  # caseExact true: SQLite's LIKE alone ignores case
        ('externalId co "LPH"', []),
        ('userName eq "ÉMILE"', ["Émile"]),  # ASCII letters are folded...
        ('userName eq "émile"', []),  # ...and no other letter, on both engines
        ('externalId lt "a"', ["Zoe"]),  # by code point: Z < a (a locale puts a first)
        ('externalId gt "z"', ["Émile"]),  # É > z (a locale puts É beside E)
        ('userName gt "z"', ["Zoe", "Émile"]),
        ('userName co "_"', ["under_score"]),
        ('externalId ew "%"', ["100%"]),
        ('meta.created gt "2000-01-01T00:00:00Z" and userName sw "a"', ["amy"]),  # not seeded alice
        ('meta.lastModified le "2000-01-01T01:00:00+01:00"', []),
        ('not (userName eq "zoe") and externalId pr', ["amy", "Émile", "under_score", "100%"]),
        ('not (externalId pr) and userName eq "zoe"', []),
    ],
)
def test_list__filters_engines_could_read_differently__same_answer_on_both(scim, scim_filter, expected):
    # Given
    for username, external_id in ENGINE_TRAPS.items():
        scim.create_user(username, externalId=external_id)
    # When
    found = scim.find_users(scim_filter)
    # Then
    assert [u["userName"] for u in found] == expected


def test_list__nul_in_a_filter_value__400_invalid_filter(scim):
    # When: PostgreSQL's text cannot hold NUL, and no stored value does
    response = scim.get("/Users", query_string={"filter": 'userName eq "a\x00b"'})
    # Then
    assert_scim_error(response, 400, "invalidFilter")


@pytest.mark.parametrize(("taken", "new", "status"), [("Émile", "ÉMILE", 409), ("Émile", "émile", 201)])
def test_create__username_differing_in_case__409_only_when_ascii_letters_differ(scim, taken, new, status):
    # Given
    scim.create_user(taken)
    # When
    response = scim.post("/Users", user_body(new))
    # Then
    assert response.status_code == status, response.get_json()


def test_create__after_seeded_ids__next_ids_follow_the_highest(scim, db, seed):
    # Given: a seed gave a user an id far above the others
    seed({"users": [{"id": 500, "username": "seeded", "rootRole": "Viewer"}]})
    # When
    first = scim.create_user("first@example.com")
    second = scim.create_user("second@example.com")
    # Then
    assert (first["id"], second["id"]) == ("501", "502")


# --- a database from before SCIM -------------------------------------------------------------------


def test_upgrade__version_2_demo_database__users_keep_working_and_appear_in_scim(
    db_path, make_app, make_token
):
    # Given: the demo database in its version 2 shape (no SCIM columns, tables or views)
    conn = sqlite3.connect(db_path)
    for (trigger,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall():
        conn.execute(f"DROP TRIGGER {trigger}")
    users_as_in_version_2(conn)
    log_as_in_version_6(conn)
    for table in ("group_project_roles", "group_root_roles", "directory_group_members", "directory_groups"):
        conn.execute(f"DROP TABLE {table}")
    conn.executescript(
        "DELETE FROM settings WHERE key IN ('content_version', 'credentials_version');"
        "INSERT INTO settings (key, value) VALUES ('data_version', 7);"
        "PRAGMA user_version = 2;"
    )
    conn.close()
    # When
    assert store_schema.ensure_schema(db_path) == 2
    client = make_app().test_client()
    from flagadmin.store import connect

    with connect(db_path) as upgraded:
        scim = Scim(client, new_scim_token(upgraded))
    token = make_token(user="alice")
    # Then: every user is listed, active and not SCIM-managed; their tokens work
    listed = scim.get("/Users").get_json()
    assert listed["totalResults"] == 9
    assert all(u["active"] is True for u in listed["Resources"])
    assert [u["userName"] for u in scim.find_users('userName eq "Alice"')] == ["alice"]
    dashboard = client.get(DASHBOARD, headers=auth(token))
    assert dashboard.status_code == 200
    assert {a["username"] for a in dashboard.get_json()["admins"]} == {"admin", "carol"}
    # and SCIM writes work on the upgraded file
    assert scim.post("/Users", user_body("new@example.com")).status_code == 201
    assert_scim_error(scim.post("/Users", user_body("ALICE")), 409, "uniqueness")


def test_upgrade__version_2_database_with_usernames_differing_in_case__refused_file_unchanged(db_path):
    # Given: a version 2 file where "Alice" and "alice" are two users (allowed before SCIM)
    conn = sqlite3.connect(db_path)
    for (trigger,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall():
        conn.execute(f"DROP TRIGGER {trigger}")
    users_as_in_version_2(conn)
    log_as_in_version_6(conn)
    conn.execute("DROP INDEX IF EXISTS users_username_ci")
    conn.execute("INSERT INTO users (id, username, root_role) VALUES (99, 'Alice', 'Viewer')")
    conn.executescript("PRAGMA user_version = 2;")
    conn.close()
    before = fingerprint(db_path)
    # When / Then
    with pytest.raises(store_schema.SchemaError, match="rolled back and the file was not changed"):
        store_schema.ensure_schema(db_path)
    assert fingerprint(db_path) == before
