"""Every attribute flagadmin keeps is stored within its type (RFC 7643 section 2.3), and every
refusal says so in flagadmin's words: a boolean is true or false, never null (``active`` null
would be a third state that no filter finds and that locks no one out); a string is a string;
objects and arrays are what they are. Through HTTP, in POST, PUT and every PATCH form, on both
engines."""

from __future__ import annotations

import pytest
from scim_helpers import (
    GROUP_SCHEMA,
    USER_SCHEMA,
    Scim,
    assert_scim_error,
    group_body,
    new_scim_token,
    patch_body,
    user_body,
)

from helpers import auth

DASHBOARD = "/api/admin/personal-dashboard"

#: What a detail never shows: pydantic's wording and links, Python's reprs.
FOREIGN = ("pydantic", "https://errors.pydantic.dev", "Input should be", "<class", "[type=", "object at 0x")


@pytest.fixture
def scim(client, db) -> Scim:
    return Scim(client, new_scim_token(db))


def assert_in_our_words(body: dict) -> None:
    detail = body["detail"]
    for word in FOREIGN:
        assert word not in detail, detail
    assert "validation error" not in detail.lower(), detail


def stored_user(db, user_id: str) -> dict:
    return db.one(
        "SELECT username, name, email, email_type, email_primary, external_id, given_name, family_name,"
        " formatted_name, active, version FROM users WHERE id = ?",
        [int(user_id)],
    )


def stored_group(db, group_id: str) -> dict:
    number = int(group_id.removeprefix("group-"))
    group = db.one("SELECT display_name, external_id, version FROM directory_groups WHERE id = ?", [number])
    members = db.values(
        "SELECT user_id FROM directory_group_members WHERE group_id = ? ORDER BY user_id", [number]
    )
    return {**group, "members": list(members)}


def assert_no_value_outside_its_type(db) -> None:
    """No user holds a boolean outside 0 and 1, nor a primary flag beside no email."""
    assert db.value("SELECT count(*) FROM users WHERE active IS NULL OR active NOT IN (0, 1)") == 0
    assert db.value("SELECT count(*) FROM users WHERE email IS NULL AND email_primary IS NOT NULL") == 0
    assert (
        db.value(
            "SELECT count(*) FROM users WHERE scim_managed = 1 AND email IS NOT NULL"
            " AND email_primary IS NULL"
        )
        == 0
    )


# --- active: true or false, never null -----------------------------------------------------------

ACTIVE_URN = f"{USER_SCHEMA}:active"

#: Every way a PATCH can try to set active to null.
NULL_ACTIVE_OPERATIONS = [
    pytest.param({"op": "replace", "path": "active", "value": None}, id="replace-path"),
    pytest.param({"op": "add", "path": "active", "value": None}, id="add-path"),
    pytest.param({"op": "Replace", "path": "active", "value": None}, id="Replace-path"),
    pytest.param({"op": "replace", "path": ACTIVE_URN, "value": None}, id="replace-urn-path"),
    pytest.param({"op": "replace", "path": "ACTIVE", "value": None}, id="replace-path-uppercase"),
    pytest.param({"op": "replace", "value": {"active": None}}, id="replace-no-path"),
    pytest.param({"op": "add", "value": {"active": None}}, id="add-no-path"),
    pytest.param({"op": "replace", "value": {ACTIVE_URN: None}}, id="replace-no-path-urn"),
    pytest.param({"op": "replace", "value": {"Active": None, "displayName": "Changed"}}, id="with-another"),
    pytest.param({"op": "remove", "path": "active"}, id="remove"),
    pytest.param({"op": "remove", "path": ACTIVE_URN}, id="remove-urn"),
]


@pytest.mark.parametrize("deactivated", [False, True], ids=["active-user", "deactivated-user"])
@pytest.mark.parametrize("operation", NULL_ACTIVE_OPERATIONS)
def test_patch_active_null__refused_and_user_as_it_was(scim, db, operation, deactivated):
    # Given
    user = scim.create_user("nulled@example.com", active=not deactivated)
    before = stored_user(db, user["id"])
    # When: a valid operation first, then the null: all or nothing
    response = scim.patch(
        f"/Users/{user['id']}", {"op": "replace", "path": "displayName", "value": "First"}, operation
    )
    # Then
    body = assert_scim_error(response, 400)
    assert body["scimType"] in ("invalidValue", "mutability")
    assert "active" in body["detail"]
    assert_in_our_words(body)
    assert stored_user(db, user["id"]) == before
    assert scim.get(f"/Users/{user['id']}").get_json()["active"] is (not deactivated)
    assert_no_value_outside_its_type(db)


def test_active_not_a_boolean__400_invalid_value_in_every_form(scim, db):
    # Given
    user = scim.create_user("typed@example.com")
    before = stored_user(db, user["id"])
    for value in (None, 1, 0, "yes", "off", "", [], {}, 1.5, [True]):
        # When
        responses = [
            scim.patch(f"/Users/{user['id']}", {"op": "replace", "path": "active", "value": value}),
            scim.patch(f"/Users/{user['id']}", {"op": "replace", "value": {"active": value}}),
            scim.put(f"/Users/{user['id']}", user_body("typed@example.com", active=value)),
            scim.post("/Users", user_body("other@example.com", active=value)),
        ]
        # Then
        for response in responses:
            body = assert_scim_error(response, 400, "invalidValue")
            assert body["detail"].startswith("active must be true or false"), body["detail"]
            assert_in_our_words(body)
    assert stored_user(db, user["id"]) == before
    assert db.value("SELECT count(*) FROM users WHERE username = 'other@example.com'") == 0
    assert_no_value_outside_its_type(db)


def test_deactivated_user__stays_locked_out_through_refused_patches(scim, db, make_token, client):
    # Given: alice is deactivated by the directory
    alice_id = str(db.value("SELECT id FROM users WHERE username = 'alice'"))
    token = make_token(user="alice")
    off = scim.patch(f"/Users/{alice_id}", {"op": "replace", "path": "active", "value": False})
    assert off.status_code == 200
    # When: every null form is tried on her
    for operation in NULL_ACTIVE_OPERATIONS:
        assert scim.patch(f"/Users/{alice_id}", operation.values[0]).status_code == 400
    # Then: still deactivated, found as such, and no token of hers works, not even a new one
    assert scim.get(f"/Users/{alice_id}").get_json()["active"] is False
    assert alice_id in [u["id"] for u in scim.find_users("active eq false")]
    assert alice_id not in [u["id"] for u in scim.find_users("active eq true")]
    assert client.get(DASHBOARD, headers=auth(token)).status_code == 401
    assert client.get(DASHBOARD, headers=auth(make_token(user="alice"))).status_code == 401
    assert_no_value_outside_its_type(db)


def test_post_without_active__active_and_found_by_filters(scim, db):
    # Given
    body = user_body("unsaid@example.com")
    del body["active"]
    # When
    user = scim.post("/Users", body).get_json()
    # Then
    assert user["active"] is True
    assert user["id"] in [u["id"] for u in scim.find_users("active eq true")]
    assert db.value("SELECT active FROM users WHERE id = ?", [int(user["id"])]) == 1


@pytest.mark.parametrize("active", [True, False])
def test_put_without_active__keeps_the_state(scim, db, active):
    # Given
    user = scim.create_user("kept@example.com", active=active)
    body = user_body("kept@example.com", displayName="Renamed")
    del body["active"]
    # When
    response = scim.put(f"/Users/{user['id']}", body)
    # Then
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["active"] is active
    assert response.get_json()["displayName"] == "Renamed"
    assert db.value("SELECT active FROM users WHERE id = ?", [int(user["id"])]) == int(active)


@pytest.mark.parametrize("text, expected", [("False", False), ("TRUE", True), ("false", False)])
def test_active_as_entra_string__read_as_the_boolean(scim, db, text, expected):
    user = scim.create_user("entra@example.com")
    response = scim.patch(f"/Users/{user['id']}", {"op": "Replace", "path": "active", "value": text})
    assert response.status_code == 200 and response.get_json()["active"] is expected


# --- emails.primary: true or false; absent is false ------------------------------------------------


def test_email_without_primary__stored_and_answered_false(scim, db):
    # Given
    body = user_body("plain@example.com", emails=[{"value": "plain@example.com", "type": "work"}])
    # When
    user = scim.post("/Users", body).get_json()
    # Then
    assert user["emails"] == [{"value": "plain@example.com", "type": "work", "primary": False}]
    assert db.value("SELECT email_primary FROM users WHERE id = ?", [int(user["id"])]) == 0
    assert user["id"] in [u["id"] for u in scim.find_users("emails.primary eq false")]
    assert_no_value_outside_its_type(db)


@pytest.mark.parametrize(
    "operation",
    [
        {"op": "replace", "path": 'emails[type eq "work"].primary', "value": None},
        {"op": "replace", "path": "emails", "value": [{"value": "p@example.com", "primary": None}]},
        {"op": "add", "path": "emails", "value": {"value": "p@example.com", "primary": "maybe"}},
        {
            "op": "replace",
            "path": 'emails[type eq "work"]',
            "value": {"value": "p@example.com", "primary": 1},
        },
        {"op": "replace", "value": {"emails": [{"value": "p@example.com", "primary": None}]}},
    ],
)
def test_patch_primary_not_a_boolean__refused(scim, db, operation):
    user = scim.create_user("primary@example.com")
    before = stored_user(db, user["id"])
    body = assert_scim_error(scim.patch(f"/Users/{user['id']}", operation), 400, "invalidValue")
    assert "primary must be true or false" in body["detail"]
    assert_in_our_words(body)
    assert stored_user(db, user["id"]) == before


# --- every attribute, every wrong type: refused in flagadmin's words ------------------------------

NOT_A_STRING = [12, True, ["x"], {"value": "x"}]
NOT_A_BOOLEAN = [None, 1, "yes", {}]
NOT_AN_OBJECT = ["x", 12, ["x"]]
NOT_AN_ARRAY = ["x", 12]

#: The forms a value can come in: a POST or PUT body, a PATCH with a path or without one.
FORMS = ("post", "put", "patch-path", "patch-no-path")

#: (attribute as a PATCH path, its key path in a body, wrong values) of every user attribute kept.
USER_ATTRIBUTES = [
    ("userName", ("userName",), NOT_A_STRING),
    ("displayName", ("displayName",), NOT_A_STRING),
    ("externalId", ("externalId",), NOT_A_STRING),
    ("active", ("active",), NOT_A_BOOLEAN),
    ("name", ("name",), NOT_AN_OBJECT),
    ("name.givenName", ("name", "givenName"), NOT_A_STRING),
    ("name.familyName", ("name", "familyName"), NOT_A_STRING),
    ("name.formatted", ("name", "formatted"), NOT_A_STRING),
    ("emails", ("emails",), NOT_AN_ARRAY),
    ('emails[type eq "work"].value', ("emails", 0, "value"), NOT_A_STRING),
    ('emails[type eq "work"].type', ("emails", 0, "type"), NOT_A_STRING),
    ('emails[type eq "work"].primary', ("emails", 0, "primary"), NOT_A_BOOLEAN),
]
GROUP_ATTRIBUTES = [
    ("displayName", ("displayName",), NOT_A_STRING),
    ("externalId", ("externalId",), NOT_A_STRING),
    ("members", ("members",), NOT_AN_ARRAY),
]


def _cases(attributes):
    for path, keys, values in attributes:
        for value in values:
            yield pytest.param(path, keys, value, id=f"{path}={value!r}")


def _with(body: dict, keys: tuple, value) -> dict:
    target = body
    for key in keys[:-1]:
        target = target[key]
    target[keys[-1]] = value
    return body


def _named(detail: str, path: str) -> bool:
    """Whether ``detail`` names the attribute of ``path`` (its last part)."""
    return path.rsplit(".", 1)[-1].split("[")[0] in detail


def _user_request(scim: Scim, user_id: str, form: str, path: str, keys: tuple, value):
    if form == "post":
        return scim.post("/Users", _with(user_body("new@example.com"), keys, value))
    if form == "put":
        return scim.put(f"/Users/{user_id}", _with(user_body("shape@example.com"), keys, value))
    if form == "patch-path":
        return scim.patch(f"/Users/{user_id}", {"op": "replace", "path": path, "value": value})
    no_path = {".".join(str(k) for k in keys if not isinstance(k, int)): value}
    if len(keys) == 3:  # an email's sub-attribute: the whole email, as Entra sends it
        no_path = {"emails": [{"value": "e@example.com", "type": "work", keys[2]: value}]}
    return scim.patch(f"/Users/{user_id}", {"op": "replace", "value": no_path})


@pytest.mark.parametrize("path, keys, value", _cases(USER_ATTRIBUTES))
def test_user_attribute_of_the_wrong_type__400_in_our_words_and_nothing_stored(scim, db, path, keys, value):
    # Given
    user = scim.create_user("shape@example.com")
    before = stored_user(db, user["id"])
    users_before = db.value("SELECT count(*) FROM users")
    for form in FORMS:
        # When
        response = _user_request(scim, user["id"], form, path, keys, value)
        # Then
        body = assert_scim_error(response, 400, "invalidValue")
        assert_in_our_words(body)
        assert _named(body["detail"], path), (form, body["detail"])
        assert "must be" in body["detail"] or "required" in body["detail"], (form, body["detail"])
    assert stored_user(db, user["id"]) == before
    assert db.value("SELECT count(*) FROM users") == users_before


@pytest.mark.parametrize("path, keys, value", _cases(GROUP_ATTRIBUTES))
def test_group_attribute_of_the_wrong_type__400_in_our_words_and_nothing_stored(scim, db, path, keys, value):
    # Given
    member = scim.create_user("member@example.com")["id"]
    group = scim.create_group("Shapes", [member])
    before = stored_group(db, group["id"])
    # When
    responses = [
        scim.post("/Groups", _with(group_body("Other"), keys, value)),
        scim.put(f"/Groups/{group['id']}", _with(group_body("Shapes", [member]), keys, value)),
        scim.patch(f"/Groups/{group['id']}", {"op": "replace", "path": path, "value": value}),
        scim.patch(f"/Groups/{group['id']}", {"op": "replace", "value": {path: value}}),
    ]
    # Then
    for response in responses:
        body = assert_scim_error(response, 400, "invalidValue")
        assert_in_our_words(body)
        assert _named(body["detail"], path), body["detail"]
    assert stored_group(db, group["id"]) == before
    assert db.value("SELECT count(*) FROM directory_groups") == 1


@pytest.mark.parametrize(
    "members",
    [[{"value": 12}], ["12"], [12], [{"value": ["1"]}], [{"value": "1", "display": 5}], [None]],
    ids=repr,
)
def test_member_of_the_wrong_type__400_in_our_words(scim, db, members):
    # Given
    group = scim.create_group("Typed")
    before = stored_group(db, group["id"])
    # When
    responses = [
        scim.post("/Groups", group_body("Other") | {"members": members}),
        scim.put(f"/Groups/{group['id']}", group_body("Typed") | {"members": members}),
        scim.patch(f"/Groups/{group['id']}", {"op": "add", "path": "members", "value": members}),
        scim.patch(f"/Groups/{group['id']}", {"op": "replace", "path": "members", "value": members}),
        scim.patch(f"/Groups/{group['id']}", {"op": "add", "value": {"members": members}}),
    ]
    # Then
    for response in responses:
        body = assert_scim_error(response, 400, "invalidValue")
        assert_in_our_words(body)
        assert "members" in body["detail"], body["detail"]
    assert stored_group(db, group["id"]) == before


# --- any other bad body: still flagadmin's words -----------------------------------------------------

BAD_BODIES = [
    ("POST", "/Users", {"schemas": [USER_SCHEMA]}),
    ("POST", "/Users", {"schemas": [USER_SCHEMA], "userName": None}),
    ("POST", "/Users", {"schemas": [USER_SCHEMA], "userName": ""}),
    ("POST", "/Users", {"schemas": "nope", "userName": "a"}),
    ("POST", "/Users", {"schemas": [12], "userName": "a"}),
    ("POST", "/Users", {"schemas": [GROUP_SCHEMA], "userName": "a"}),
    ("POST", "/Users", {"schemas": [USER_SCHEMA], "userName": "a", "meta": "x"}),
    ("POST", "/Users", {"schemas": [USER_SCHEMA], "userName": "a", "id": 5}),
    ("POST", "/Users", {"schemas": [USER_SCHEMA], "userName": "a", "groups": "x"}),
    ("POST", "/Groups", {"schemas": [GROUP_SCHEMA]}),
    ("POST", "/Groups", {"schemas": [GROUP_SCHEMA], "displayName": None}),
    ("POST", "/Groups", {"schemas": [USER_SCHEMA], "displayName": "g"}),
    ("PATCH", "/Users/{user}", {"schemas": ["nope"], "Operations": []}),
    ("PATCH", "/Users/{user}", patch_body()),
    ("PATCH", "/Users/{user}", patch_body({"op": "explode", "path": "userName", "value": "x"})),
    ("PATCH", "/Users/{user}", patch_body({"op": "replace", "path": "[[", "value": "x"})),
    ("PATCH", "/Users/{user}", patch_body({"op": "replace", "path": 12, "value": "x"})),
    ("PATCH", "/Users/{user}", patch_body({"op": 12, "path": "userName", "value": "x"})),
    ("PATCH", "/Users/{user}", patch_body({"op": "add", "path": "userName"})),
    ("PATCH", "/Users/{user}", patch_body({"op": "replace", "value": "x"})),
    ("PATCH", "/Users/{user}", patch_body({"op": "replace", "value": [1, 2]})),
    ("PATCH", "/Users/{user}", patch_body({"op": "remove"})),
    ("PATCH", "/Users/{user}", patch_body({"op": "remove", "path": "userName"})),
    ("PATCH", "/Users/{user}", patch_body({"op": "replace", "path": "id", "value": "9"})),
    ("PATCH", "/Users/{user}", patch_body({"op": "replace", "path": "meta.created", "value": "x"})),
    ("PATCH", "/Users/{user}", patch_body({"op": "replace", "path": "groups", "value": [{"value": 1}]})),
    ("PATCH", "/Users/{user}", {"schemas": [USER_SCHEMA], "Operations": "x"}),
    ("PATCH", "/Users/{user}", {"schemas": [USER_SCHEMA], "Operations": [12]}),
    ("PATCH", "/Groups/{group}", patch_body({"op": "replace", "path": "displayName", "value": None})),
    ("PATCH", "/Groups/{group}", patch_body({"op": "remove", "path": "displayName"})),
    ("PATCH", "/Groups/{group}", patch_body({"op": "add", "path": "members[value eq 1]", "value": "x"})),
    ("PATCH", "/Groups/{group}", patch_body({"op": "remove", "path": 'members[display eq "x"]'})),
    ("PUT", "/Users/{user}", {"schemas": [USER_SCHEMA]}),
    ("PUT", "/Groups/{group}", {"schemas": [GROUP_SCHEMA], "displayName": 5}),
    ("POST", "/.search", {"schemas": ["urn:ietf:params:scim:api:messages:2.0:SearchRequest"], "count": "x"}),
    ("POST", "/Users/.search", {"schemas": ["nope"], "filter": 12}),
    ("POST", "/Users/.search", {"attributes": 12}),
    ("GET", "/Users?filter=active%20eq%20%22x%22", None),
    ("GET", "/Users?filter=userName%20gt%20true", None),
    ("GET", "/Users?filter=meta.created%20gt%20%22yesterday%22", None),
    ("GET", "/Users?filter=((", None),
    ("GET", "/Users?attributes=%5B%5B", None),
    ("GET", "/Users?attributes=a&excludedAttributes=b", None),
    ("GET", "/Users?count=x", None),
]


def test_bad_requests__4xx_detail_in_our_words(scim):
    user = scim.create_user("target@example.com")
    group = scim.create_group("Target")
    for method, path, body in BAD_BODIES:
        response = scim.request(method, path.format(user=user["id"], group=group["id"]), body)
        assert 400 <= response.status_code < 500, (method, path, body, response.get_json())
        assert_in_our_words(assert_scim_error(response, response.status_code))
