"""RFC 7643/7644 conformance of /scim/v2, checked by scim2-tester in-process (its
WSGI client over the app) on a fresh database, and discovery that tells the truth."""

from __future__ import annotations

import pytest
from scim2_client.engines.wsgi import WSGISCIMClient
from scim2_models import ScimProvider
from scim2_tester import Status, check_server
from scim_helpers import USER_SCHEMA, Scim, new_scim_token

from flagadmin.store import connect


@pytest.fixture
def fresh_app(make_app, tmp_path):
    """An app on a new, empty database (no seed: scim2-tester's list checks expect to find
    what they created on the first page)."""
    return make_app(config={"DATABASE": str(tmp_path / "fresh.db")})


@pytest.fixture
def fresh_token(fresh_app, tmp_path) -> str:
    with connect(tmp_path / "fresh.db") as conn:
        return new_scim_token(conn)


@pytest.mark.parametrize("resource_type", ["User", "Group"])
def test_scim2_tester__fresh_database__no_error(fresh_app, fresh_token, resource_type):
    """Every check of scim2-tester 0.5.x passes for Users and Groups: none fails, none is
    skipped."""
    # Given
    client = WSGISCIMClient(
        fresh_app,
        base_url="http://localhost/scim/v2",
        headers={"Authorization": f"Bearer {fresh_token}"},
        provider=ScimProvider(),
    )
    # When
    results = check_server(client, resource_types=[resource_type])
    # Then
    failed = [r for r in results if r.status in (Status.ERROR, Status.CRITICAL)]
    assert not failed, [f"{r.title}: {r.reason}" for r in failed]
    skipped = [r for r in results if r.status == Status.SKIPPED]
    assert not skipped, [f"{r.title}: {r.reason}" for r in skipped]
    successes = [r for r in results if r.status == Status.SUCCESS and r.resource_type == resource_type]
    assert len(successes) >= 15


def test_service_provider_config__tells_what_is_supported(client, db):
    # Given
    scim = Scim(client, new_scim_token(db))
    # When
    response = scim.get("/ServiceProviderConfig")
    # Then
    assert response.status_code == 200
    assert response.mimetype == "application/scim+json"
    config = response.get_json()
    assert config["patch"] == {"supported": True}
    assert config["filter"] == {"supported": True, "maxResults": 200}
    for unsupported in ("changePassword", "sort", "etag"):
        assert config[unsupported] == {"supported": False}
    assert config["bulk"]["supported"] is False
    assert config["authenticationSchemes"][0]["type"] == "oauthbearertoken"
    assert config["pagination"]["index"] is True and config["pagination"]["cursor"] is False


def test_resource_types_and_schemas__user_and_group_with_the_attributes_kept(client, db):
    # Given
    scim = Scim(client, new_scim_token(db))
    # When
    types = scim.get("/ResourceTypes").get_json()
    user_schema = scim.get(f"/Schemas/{USER_SCHEMA}").get_json()
    # Then
    assert {t["id"]: t["endpoint"] for t in types["Resources"]} == {"User": "/Users", "Group": "/Groups"}
    assert types["totalResults"] == 2
    attributes = {a["name"]: a for a in user_schema["attributes"]}
    assert set(attributes) == {"userName", "name", "displayName", "active", "emails", "groups"}
    assert attributes["userName"]["uniqueness"] == "server" and attributes["userName"]["caseExact"] is False
    assert attributes["groups"]["mutability"] == "readOnly"
    assert {s["name"] for s in attributes["emails"]["subAttributes"]} == {"value", "type", "primary"}
    assert (
        scim.get("/ResourceTypes/Group").get_json()["schema"] == "urn:ietf:params:scim:schemas:core:2.0:Group"
    )


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/Me"),
        ("PATCH", "/Me"),
        ("POST", "/Bulk"),
        ("DELETE", "/Bulk"),
    ],
)
def test_unsupported_endpoints__501_scim_error(client, db, method, path):
    # Given
    scim = Scim(client, new_scim_token(db))
    # When
    response = scim.request(method, path, {} if method != "GET" else None)
    # Then
    assert response.status_code == 501
    body = response.get_json()
    assert body["schemas"] == ["urn:ietf:params:scim:api:messages:2.0:Error"]
    assert body["status"] == "501"


def test_discovery__wrong_method__405_scim_error_with_allow(client, db):
    scim = Scim(client, new_scim_token(db))
    response = scim.request("DELETE", "/Schemas")
    assert response.status_code == 405
    assert response.headers["Allow"] == "GET"
    assert response.get_json()["status"] == "405"


def test_scim_routes__not_in_the_openapi_document(openapi_document):
    assert not [path for path in openapi_document["paths"] if path.startswith("/scim")]


def test_root_search__users_then_groups_paged_across_both(client, db):
    # Given
    scim = Scim(client, new_scim_token(db))
    scim.create_group("Search team", ["2"])
    body = {"schemas": ["urn:ietf:params:scim:api:messages:2.0:SearchRequest"]}
    # When
    everything = scim.post("/.search", {**body, "count": 100}).get_json()
    tail = scim.post("/.search", {**body, "startIndex": 9, "count": 5}).get_json()
    named = scim.post(
        "/.search", {**body, "filter": 'displayName sw "search" or userName eq "bob"'}
    ).get_json()
    members = scim.post("/.search", {**body, "filter": "members pr"}).get_json()
    # Then
    assert everything["totalResults"] == 10 and len(everything["Resources"]) == 10
    assert [r["meta"]["resourceType"] for r in tail["Resources"]] == ["User", "Group"]
    assert sorted(r.get("userName") or r["displayName"] for r in named["Resources"]) == ["Search team", "bob"]
    assert [r["displayName"] for r in members["Resources"]] == ["Search team"]
