"""The request sequences real identity providers send, replayed against /scim/v2:
Okta (user lifecycle, Push Groups, the SPEC test's checks), Microsoft Entra ID (test
connection, the enterprise extension, both PATCH dialects, disable, delete) and authentik
(ServiceProviderConfig first, PUT updates, one member per PATCH operation). Payload shapes
follow each vendor's published examples (see docs/scim.md, "Connecting an identity provider")."""

from __future__ import annotations

import uuid

import pytest
from scim2_models import Context, ServiceProviderConfig
from scim_helpers import (
    ENTERPRISE_SCHEMA,
    GROUP_SCHEMA,
    USER_SCHEMA,
    Scim,
    assert_scim_error,
    new_scim_token,
)

from helpers import auth

DASHBOARD = "/api/admin/personal-dashboard"
ADSCIM_GROUP = "http://schemas.microsoft.com/2006/11/ResourceManagement/ADSCIM/2.0/Group"


@pytest.fixture
def okta(client, db) -> Scim:
    """Okta sends its bodies as application/json."""
    return Scim(client, new_scim_token(db), content_type="application/json")


@pytest.fixture
def entra(client, db) -> Scim:
    return Scim(client, new_scim_token(db), content_type="application/scim+json")


# --- Okta --------------------------------------------------------------------------------------


def okta_user(email: str, given: str, family: str) -> dict:
    return {
        "schemas": [USER_SCHEMA],
        "userName": email,
        "name": {"givenName": given, "familyName": family},
        "emails": [{"primary": True, "value": email, "type": "work"}],
        "displayName": f"{given} {family}",
        "locale": "en-US",
        "externalId": "00ujl29u0le5T6Aj10h7",
        "groups": [],
        "password": "1mz050nq",
        "active": True,
    }


def test_okta__user_lifecycle(okta, db, make_token):
    email = "Test.User@okta.local"
    # Assign: Okta looks the user up (any case), finds nobody, creates it
    found = okta.get(
        "/Users", query_string={"filter": f'userName eq "{email.upper()}"', "startIndex": 1, "count": 100}
    )
    assert found.status_code == 200 and found.get_json()["totalResults"] == 0
    created = okta.post("/Users", okta_user(email, "Test", "User"))
    assert created.status_code == 201
    user = created.get_json()
    assert user["active"] is True and user["userName"] == email
    # Re-assign: the lookup (in upper case) finds it, so Okta does not POST again
    again = okta.find_users(f'userName eq "{email.upper()}"', startIndex=1, count=100)
    assert [u["id"] for u in again] == [user["id"]]
    assert_scim_error(okta.post("/Users", okta_user(email, "Test", "User")), 409, "uniqueness")
    # Profile update: GET, then PUT the whole object back with the change
    current = okta.get(f"/Users/{user['id']}").get_json()
    current["name"]["givenName"] = "Another"
    updated = okta.put(f"/Users/{user['id']}", current)
    assert updated.status_code == 200 and updated.get_json()["name"]["givenName"] == "Another"
    assert updated.get_json()["meta"]["created"] == current["meta"]["created"]
    # Deactivate: PATCH with a value object; the user stays readable, its token stops at once
    token = make_token(user=email)
    assert okta.client.get(DASHBOARD, headers=auth(token)).status_code == 200
    off = okta.patch(f"/Users/{user['id']}", {"op": "replace", "value": {"active": False}})
    assert off.status_code == 200 and off.get_json()["active"] is False
    assert okta.get(f"/Users/{user['id']}").get_json()["active"] is False
    assert okta.client.get(DASHBOARD, headers=auth(token)).status_code == 401
    # Reactivate
    on = okta.patch(f"/Users/{user['id']}", {"op": "replace", "value": {"active": True}})
    assert on.get_json()["active"] is True
    assert okta.client.get(DASHBOARD, headers=auth(make_token(user=email))).status_code == 200
    kinds = list(db.values("SELECT type FROM events WHERE created_by = 'scim-client' ORDER BY id"))
    assert kinds == ["user-created", "user-updated", "user-updated", "pat-deleted", "user-updated"]


def test_okta__push_groups(okta, db):
    bob, sam, kenji = (
        str(db.value("SELECT id FROM users WHERE username = ?", [n])) for n in ("bob", "sam", "kenji")
    )
    # Push: the group is created empty
    created = okta.post("/Groups", {"schemas": [GROUP_SCHEMA], "displayName": "Test Group", "members": []})
    assert created.status_code == 201
    group = created.get_json()
    # Membership: a rename-to-itself with the id, then removes and adds
    assert okta.patch(
        f"/Groups/{group['id']}", {"op": "replace", "value": {"id": group["id"], "displayName": "Test Group"}}
    ).status_code in (200, 204)
    okta.patch(
        f"/Groups/{group['id']}",
        {
            "op": "add",
            "path": "members",
            "value": [{"value": bob, "display": "bob@okta.local"}, {"value": sam}],
        },
    )
    okta.patch(
        f"/Groups/{group['id']}",
        {"op": "remove", "path": f'members[value eq "{bob}"]'},
        {"op": "add", "path": "members", "value": [{"value": kenji, "display": "kenji@okta.local"}]},
    )
    members = okta.get(f"/Groups/{group['id']}").get_json()["members"]
    assert {m["value"] for m in members} == {sam, kenji}
    # Full push: replace
    okta.patch(f"/Groups/{group['id']}", {"op": "replace", "path": "members", "value": [{"value": bob}]})
    assert [m["value"] for m in okta.get(f"/Groups/{group['id']}").get_json()["members"]] == [bob]
    # Unlink with delete
    assert okta.delete(f"/Groups/{group['id']}").status_code == 204
    assert_scim_error(okta.get(f"/Groups/{group['id']}"), 404)


def test_okta__spec_test_checks(okta, db):
    """The checks of Okta's SCIM 2.0 SPEC test that do not need a populated directory."""
    okta.post("/Users", okta_user("spec@okta.local", "Spec", "Test"))
    page = okta.get("/Users", query_string={"count": 1, "startIndex": 1}).get_json()
    assert all(isinstance(page[key], int) for key in ("itemsPerPage", "startIndex", "totalResults"))
    first = okta.get(f"/Users/{page['Resources'][0]['id']}").get_json()
    assert first["id"] == page["Resources"][0]["id"]
    random_email = f"{uuid.uuid4()}@example.com"
    assert (
        okta.get("/Users", query_string={"filter": f'userName eq "{random_email}"'}).get_json()[
            "totalResults"
        ]
        == 0
    )
    assert_scim_error(okta.get("/Users/00919288221112222"), 404)
    assert_scim_error(okta.get(f"/Users/{uuid.uuid4()}"), 404)
    assert okta.get("/Groups").status_code == 200
    for header in ("non-token", "Bearer non-token", ""):
        response = okta.client.get("/scim/v2/Users", headers={"Authorization": header})
        assert_scim_error(response, 401)


# --- Microsoft Entra ID ------------------------------------------------------------------------


def entra_user(user_name: str) -> dict:
    return {
        "schemas": [USER_SCHEMA, ENTERPRISE_SCHEMA],
        "externalId": "0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef",
        "userName": user_name,
        "active": True,
        "emails": [{"primary": True, "type": "work", "value": f"{user_name}@testuser.com"}],
        "meta": {"resourceType": "User"},
        "name": {"formatted": "givenName familyName", "familyName": "familyName", "givenName": "givenName"},
        "roles": [],
        ENTERPRISE_SCHEMA: {"employeeNumber": "1", "department": "Sales"},
    }


def test_entra__test_connection__random_lookups_answer_empty_lists(entra):
    guid = str(uuid.uuid4())
    users = entra.get("/Users", query_string={"filter": f'userName eq "{guid}"'})
    groups = entra.get(
        "/Groups", query_string={"filter": f'displayName eq "{guid}"', "excludedAttributes": "members"}
    )
    assert users.status_code == groups.status_code == 200
    assert users.get_json()["totalResults"] == groups.get_json()["totalResults"] == 0
    assert users.mimetype == "application/scim+json"


def test_entra__user_without_compliance_flag(entra, db, make_token):
    name = f"Test_User_{uuid.uuid4()}"
    # Create with the enterprise extension
    created = entra.post("/Users", entra_user(name))
    assert created.status_code == 201
    user = created.get_json()
    # The lookups Entra makes, with its stray query flag
    for scim_filter in (
        f'userName eq "{name}"',
        'externalId eq "0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef"',
        f'emails[type eq "work"].value eq "{name}@testuser.com"',
    ):
        assert [u["id"] for u in entra.find_users(scim_filter, aadOptscim062020="")] == [user["id"]]
    # One Replace per attribute, capitalised, a value path on emails, extension paths
    patched = entra.patch(
        f"/Users/{user['id']}",
        {"op": "Replace", "path": 'emails[type eq "work"].value', "value": "updatedEmail@microsoft.com"},
        {"op": "Replace", "path": "name.familyName", "value": "updatedFamilyName"},
        {"op": "Replace", "path": "externalId", "value": "new-external-id"},
        {"op": "Replace", "path": f"{ENTERPRISE_SCHEMA}:employeeNumber", "value": "2"},
        {"op": "Add", "path": "nickName", "value": "Babs"},
    )
    assert patched.status_code == 200
    after = patched.get_json()
    assert after["emails"][0]["value"] == "updatedEmail@microsoft.com"
    assert after["name"]["familyName"] == "updatedFamilyName" and after["externalId"] == "new-external-id"
    # Disable with a string boolean: the user stays readable, its token stops
    token = make_token(user=name)
    disabled = entra.patch(f"/Users/{user['id']}", {"op": "Replace", "path": "active", "value": "False"})
    assert disabled.get_json()["active"] is False
    assert entra.client.get(DASHBOARD, headers=auth(token)).status_code == 401
    # Delete
    assert entra.delete(f"/Users/{user['id']}").status_code == 204
    assert_scim_error(entra.get(f"/Users/{user['id']}"), 404)


def test_entra__user_with_compliance_flag__no_path_replace_with_dotted_and_urn_keys(entra):
    user = entra.post("/Users", entra_user("flagged.user")).get_json()
    response = entra.patch(
        f"/Users/{user['id']}",
        {
            "op": "replace",
            "value": {
                "displayName": "Flagged User",
                "name.givenName": "Flagged",
                "name.familyName": "User",
                f"{ENTERPRISE_SCHEMA}:employeeNumber": "42",
                "active": False,
            },
        },
    )
    assert response.status_code == 200
    after = response.get_json()
    assert after["displayName"] == "Flagged User" and after["active"] is False
    assert after["name"] == {
        "formatted": "givenName familyName",
        "givenName": "Flagged",
        "familyName": "User",
    }


def test_entra__groups_both_dialects(entra, db):
    bob, sam = (str(db.value("SELECT id FROM users WHERE username = ?", [n])) for n in ("bob", "sam"))
    created = entra.post(
        "/Groups",
        {
            "schemas": [GROUP_SCHEMA, ADSCIM_GROUP],
            "externalId": "8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159",
            "displayName": "Group1DisplayName",
            "meta": {"resourceType": "Group"},
        },
    )
    assert created.status_code == 201
    group = created.get_json()
    read = entra.get(f"/Groups/{group['id']}", query_string={"excludedAttributes": "members"}).get_json()
    assert read["displayName"] == "Group1DisplayName" and "members" not in read
    assert (
        entra.patch(
            f"/Groups/{group['id']}",
            {
                "op": "Replace",
                "path": "displayName",
                "value": "1879db59-3bdf-4490-ad68-ab880a269474updatedDisplayName",
            },
        ).status_code
        == 204
    )
    entra.patch(
        f"/Groups/{group['id']}",
        {
            "op": "Add",
            "path": "members",
            "value": [{"$ref": None, "value": bob}, {"$ref": None, "value": sam}],
        },
    )
    # Without the flag: remove with a value list
    entra.patch(f"/Groups/{group['id']}", {"op": "Remove", "path": "members", "value": [{"value": bob}]})
    assert [m["value"] for m in entra.get(f"/Groups/{group['id']}").get_json()["members"]] == [sam]
    # With the flag: remove by filter
    entra.patch(f"/Groups/{group['id']}", {"op": "remove", "path": f'members[value eq "{sam}"]'})
    assert entra.get(f"/Groups/{group['id']}").get_json().get("members", []) == []
    assert entra.delete(f"/Groups/{group['id']}").status_code == 204
    assert_scim_error(entra.get(f"/Groups/{group['id']}"), 404)


# --- authentik -----------------------------------------------------------------------------------


def test_authentik__reads_service_provider_config_strictly(entra):
    response = entra.get("/ServiceProviderConfig")
    config = ServiceProviderConfig.model_validate(
        response.get_json(), scim_ctx=Context.RESOURCE_QUERY_RESPONSE
    )
    assert config.patch.supported is True and config.filter.supported is True
    assert config.bulk.max_operations == 0  # authentik: every PATCH operation in one request


def test_authentik__users_put_and_delete(entra):
    body = {
        "schemas": [USER_SCHEMA],
        "userName": "akadmin",
        "externalId": "f0b7c8e4",
        "name": {
            "formatted": "authentik Default Admin",
            "givenName": "authentik",
            "familyName": "Default Admin",
        },
        "displayName": "authentik Default Admin",
        "active": True,
        "emails": [{"value": "admin@authentik.local", "type": "other", "primary": True}],
    }
    user = entra.post("/Users", body).get_json()
    replaced = entra.put(f"/Users/{user['id']}", {**body, "displayName": "Renamed", "active": False})
    assert replaced.get_json()["displayName"] == "Renamed" and replaced.get_json()["active"] is False
    assert entra.delete(f"/Users/{user['id']}").status_code == 204


def test_authentik__groups_one_member_per_operation_and_409_lookup(entra, db):
    ids = [str(db.value("SELECT id FROM users WHERE username = ?", [n])) for n in ("bob", "sam", "kenji")]
    group = entra.post("/Groups", {"schemas": [GROUP_SCHEMA], "displayName": "authentik Admins"}).get_json()
    operations = [{"op": "add", "path": "members", "value": [{"value": i}]} for i in ids]
    assert entra.patch(f"/Groups/{group['id']}", *operations).status_code == 204
    assert (
        entra.patch(
            f"/Groups/{group['id']}", {"op": "remove", "path": "members", "value": [{"value": ids[0]}]}
        ).status_code
        == 204
    )
    # attribute update: a no-path replace of the whole group, id included, no members key
    entra.patch(
        f"/Groups/{group['id']}",
        {
            "op": "replace",
            "value": {"id": group["id"], "displayName": "authentik Admins", "externalId": "ak-1"},
        },
    )
    after = entra.get(f"/Groups/{group['id']}").get_json()
    assert sorted(m["value"] for m in after["members"]) == sorted(ids[1:]) and after["externalId"] == "ak-1"
    # a second POST of the same group: 409 uniqueness, then the lookup by displayName finds it
    duplicate = entra.post("/Groups", {"schemas": [GROUP_SCHEMA], "displayName": "authentik Admins"})
    assert_scim_error(duplicate, 409, "uniqueness")
    found = entra.get("/Groups", query_string={"filter": 'displayName eq "authentik Admins"'}).get_json()
    assert [g["id"] for g in found["Resources"]] == [group["id"]]
    # discovery pages without count
    assert entra.get("/Groups", query_string={"startIndex": 1}).get_json()["itemsPerPage"] == 1
