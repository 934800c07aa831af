"""/scim/v2 against wrong credentials and hostile input: every route answers 401
with a SCIM error to anything but the current SCIM token; malformed, deep, huge or strange
bodies get SCIM errors, never a 500, and leave nothing half-written."""

from __future__ import annotations

import io

import orjson
import pytest
from scim_helpers import (
    GROUP_SCHEMA,
    PATCH_SCHEMA,
    USER_SCHEMA,
    Scim,
    assert_scim_error,
    bulk_users,
    new_scim_token,
    patch_body,
    user_body,
)

from helpers import auth, fingerprint

GENERATE = "/api/admin/scim-settings/generate-new-token"

#: (method, path) of every kind of SCIM route.
ROUTES = [
    ("GET", "/ServiceProviderConfig"),
    ("GET", "/ResourceTypes"),
    ("GET", "/ResourceTypes/User"),
    ("GET", "/Schemas"),
    ("GET", "/Schemas/urn:ietf:params:scim:schemas:core:2.0:User"),
    ("GET", "/Users"),
    ("POST", "/Users"),
    ("POST", "/Users/.search"),
    ("GET", "/Users/1"),
    ("PUT", "/Users/1"),
    ("PATCH", "/Users/1"),
    ("DELETE", "/Users/1"),
    ("GET", "/Groups"),
    ("POST", "/Groups"),
    ("POST", "/Groups/.search"),
    ("GET", "/Groups/1"),
    ("PUT", "/Groups/1"),
    ("PATCH", "/Groups/1"),
    ("DELETE", "/Groups/1"),
    ("GET", "/Me"),
    ("POST", "/Bulk"),
    ("POST", "/.search"),
    ("GET", ""),
    ("GET", "/"),
    ("GET", "/Nowhere/at/all"),
]


@pytest.fixture
def lenient_client(make_app):
    """An app that does not throttle the many failures these tests make on purpose."""
    return make_app(auth_failure_limit="100000/minute").test_client()


@pytest.fixture
def scim(lenient_client, db) -> Scim:
    return Scim(lenient_client, new_scim_token(db))


@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_every_route__no_revoked_or_api_token__401_scim_error(
    lenient_client, db, admin_token, alice, method, path
):
    # Given: a SCIM token that was revoked by generating the next one
    revoked = new_scim_token(db)
    new_scim_token(db)
    credentials = {
        "none": None,
        "revoked SCIM token": f"Bearer {revoked}",
        "admin API token": f"Bearer {admin_token}",
        "admin API token, raw": admin_token,
        "personal access token": f"Bearer {alice}",
        "SCIM token without scheme": revoked,
        "empty bearer": "Bearer ",
        "basic": "Basic YWRtaW46YWRtaW4=",
        "huge": "Bearer " + "x" * 10_000,
    }
    for name, header in credentials.items():
        headers = {} if header is None else {"Authorization": header}
        # When
        response = lenient_client.open(
            f"/scim/v2{path}",
            method=method,
            headers=headers,
            json={} if method in ("POST", "PUT", "PATCH") else None,
        )
        # Then
        body = assert_scim_error(response, 401)
        assert "generate-new-token" in body["detail"], name
        assert response.headers["WWW-Authenticate"] == 'Bearer realm="scim"'


def test_regenerated_token__old_one_401_everywhere_new_one_works(lenient_client, db, admin_token):
    first = Scim(lenient_client, lenient_client.post(GENERATE, headers=auth(admin_token)).get_json()["token"])
    assert first.get("/Users").status_code == 200
    second = Scim(
        lenient_client, lenient_client.post(GENERATE, headers=auth(admin_token)).get_json()["token"]
    )
    for method, path in ROUTES:
        assert first.request(method, path).status_code == 401
    assert second.get("/Users").status_code == 200


def test_failed_authentications__429_scim_error_past_the_limit(make_app, db):
    client = make_app(auth_failure_limit="3/minute").test_client()
    statuses = [
        client.get("/scim/v2/Users", headers={"Authorization": "Bearer wrong"}).status_code for _ in range(4)
    ]
    assert statuses == [401, 401, 401, 429]
    response = client.get("/scim/v2/Users", headers={"Authorization": "Bearer wrong"})
    assert_scim_error(response, 429)
    assert int(response.headers["Retry-After"]) >= 1


# --- hostile bodies -------------------------------------------------------------------------------


def raw(
    scim: Scim, method: str, path: str, data: bytes | str, content_type: str | None = "application/scim+json"
):
    headers = scim.headers({"Content-Type": content_type} if content_type else {})
    return scim.client.open(f"/scim/v2{path}", method=method, headers=headers, data=data)


def nested(depth: int) -> dict:
    value: dict = {"leaf": 1}
    for _ in range(depth):
        value = {"x": value}
    return value


@pytest.mark.parametrize(
    ("name", "data", "content_type", "status", "scim_type"),
    [
        ("not JSON", b"userName=bob", "application/scim+json", 400, "invalidSyntax"),
        ("form", b"userName=bob", "application/x-www-form-urlencoded", 415, None),
        ("XML", b"<user/>", "application/xml", 415, None),
        ("empty", b"", "application/scim+json", 400, "invalidSyntax"),
        ("array", b"[]", "application/json", 400, "invalidSyntax"),
        ("string", b'"bob"', "application/json", 400, "invalidSyntax"),
        ("null", b"null", "application/json", 400, "invalidSyntax"),
        ("truncated", b'{"userName": "bob"', "application/json", 400, "invalidSyntax"),
        ("invalid UTF-8", b'{"userName": "\xff\xfe"}', "application/json", 400, "invalidSyntax"),
        (
            "deep",
            orjson.dumps({**user_body("deep"), "x": nested(200)}),
            "application/json",
            400,
            "invalidSyntax",
        ),
        (
            "deeper than orjson",
            b'{"a":' * 2000 + b"1" + b"}" * 2000,
            "application/json",
            400,
            "invalidSyntax",
        ),
        ("no userName", orjson.dumps({"schemas": [USER_SCHEMA]}), None, 400, None),
        ("blank userName", orjson.dumps(user_body(" ")), None, 400, "invalidValue"),
        ("long userName", orjson.dumps(user_body("u" * 2000)), None, 400, "invalidValue"),
        ("NUL in userName", orjson.dumps(user_body("bo\x00b")), None, 400, "invalidValue"),
        (
            "active not boolean",
            orjson.dumps({**user_body("x"), "active": "maybe"}),
            None,
            400,
            "invalidValue",
        ),
        ("name not an object", orjson.dumps({**user_body("x"), "name": "Bob"}), None, 400, None),
        ("emails not a list", orjson.dumps({**user_body("x"), "emails": 7}), None, 400, None),
    ],
)
def test_create_user__hostile_body__scim_error_and_nothing_written(
    scim, database, name, data, content_type, status, scim_type
):
    # Given
    before = fingerprint(database)
    # When
    response = raw(scim, "POST", "/Users", data, content_type)
    # Then
    assert_scim_error(response, status, scim_type)
    assert fingerprint(database) == before, name


def test_create_user__body_over_the_limit__413_scim_error(scim, database):
    before = fingerprint(database)
    huge = orjson.dumps({**user_body("big"), "padding": "x" * (3 * 1024 * 1024)})
    assert_scim_error(raw(scim, "POST", "/Users", huge), 413)
    assert fingerprint(database) == before


def test_create_user__chunked_body_over_the_limit__413_scim_error(scim, database):
    """A body of unannounced length (chunked, as a WSGI server that does not buffer it passes
    it on) is refused once it goes past the limit, not cut short and parsed."""
    before = fingerprint(database)
    huge = orjson.dumps({**user_body("chunked"), "padding": "x" * (3 * 1024 * 1024)})
    response = scim.client.post(
        "/scim/v2/Users",
        headers=scim.headers({"Content-Type": "application/scim+json", "Transfer-Encoding": "chunked"}),
        input_stream=io.BytesIO(huge),
        environ_overrides={"wsgi.input_terminated": True},
    )
    assert_scim_error(response, 413)
    assert fingerprint(database) == before


def test_admin_api__keeps_its_own_smaller_limit(client, admin_token):
    response = client.post(
        GENERATE, headers={**auth(admin_token), "Content-Type": "application/json"}, data=b"x" * 70_000
    )
    assert response.status_code == 413
    assert response.get_json()["name"] == "ContentTooLargeError"


def test_create_user__unknown_schemas_beside_the_core_one__accepted_and_ignored(scim):
    response = scim.post(
        "/Users",
        {
            "schemas": [USER_SCHEMA, "urn:example:unknown:2.0:User"],
            "userName": "stranger",
            "urn:example:unknown:2.0:User": {"y": 1},
        },
    )
    assert response.status_code == 201 and response.get_json()["schemas"] == [USER_SCHEMA]


def test_create_user__schemas_without_the_core_one__400_naming_it(scim):
    response = scim.post("/Users", {"schemas": ["urn:example:unknown:2.0:User"], "userName": "stranger"})
    body = assert_scim_error(response, 400, "invalidSyntax")
    assert USER_SCHEMA in body["detail"]


@pytest.mark.parametrize(
    ("name", "body", "scim_type"),
    [
        ("no Operations", {"schemas": [PATCH_SCHEMA]}, None),
        ("empty Operations", patch_body(), "invalidValue"),
        ("Operations not a list", {"schemas": [PATCH_SCHEMA], "Operations": {"op": "add"}}, None),
        ("unknown op", patch_body({"op": "delete", "path": "userName"}), "invalidValue"),
        ("remove without path", patch_body({"op": "remove"}), "noTarget"),
        ("add without value", patch_body({"op": "add", "path": "displayName"}), "invalidValue"),
        ("broken path", patch_body({"op": "replace", "path": "emails[type eq", "value": "x"}), None),
        ("read-only id", patch_body({"op": "replace", "path": "id", "value": "1"}), "mutability"),
        ("required userName removed", patch_body({"op": "remove", "path": "userName"}), None),
        ("wrong value type", patch_body({"op": "replace", "path": "active", "value": {"a": 1}}), None),
        ("no-path value not an object", patch_body({"op": "replace", "value": "x"}), None),
        (
            "too many operations",
            patch_body(*[{"op": "add", "path": "displayName", "value": "x"}] * 10_001),
            "invalidValue",
        ),
        (
            "deep value",
            patch_body({"op": "add", "path": "displayName", "value": nested(50)}),
            "invalidSyntax",
        ),
    ],
)
def test_patch_user__hostile_operations__400_and_nothing_written(scim, database, name, body, scim_type):
    # Given
    user = scim.create_user("target@example.com")
    before = fingerprint(database)
    # When
    response = scim.request("PATCH", f"/Users/{user['id']}", body)
    # Then
    assert_scim_error(response, 400, scim_type)
    assert fingerprint(database) == before, name


def test_patch_user__unknown_attributes_and_schemas__ignored_200(scim):
    user = scim.create_user("lenient@example.com")
    response = scim.patch(
        f"/Users/{user['id']}",
        {"op": "add", "path": "shoeSize", "value": 44},
        {"op": "replace", "path": "urn:example:custom:1.0:User:team", "value": "blue"},
        {"op": "replace", "value": {"favouriteColour": "green", "displayName": "Lenient"}},
    )
    assert response.status_code == 200 and response.get_json()["displayName"] == "Lenient"


@pytest.mark.parametrize(
    "operation",
    [
        {"op": "add", "path": "members", "value": [{"value": str(i)} for i in range(1, 100_002)]},
        {"op": "add", "path": "members", "value": [{"value": "1"}, {"nothing": "here"}]},
        {"op": "add", "path": "members", "value": [["nested", "list"]]},
        {"op": "add", "path": "members", "value": [{"value": "1", "type": "Group"}]},
        {"op": "add", "path": 'members[value eq "1"].display', "value": "x"},
        {"op": "remove", "path": 'members[value eq "1"].display'},
        {"op": "remove", "path": 'members[display sw "a" and value pr]'},
        {"op": "replace", "path": "displayName", "value": ""},
        {"op": "replace", "path": "displayName", "value": "x" * 2000},
    ],
)
def test_patch_group__hostile_member_operations__400_and_nothing_written(scim, db, database, operation):
    # Given
    group = scim.create_group("Hostile", [str(db.value("SELECT id FROM users WHERE username = 'bob'"))])
    before = fingerprint(database)
    # When
    response = scim.patch(f"/Groups/{group['id']}", operation)
    # Then
    assert response.status_code == 400, response.get_json()
    assert response.get_json()["schemas"] == ["urn:ietf:params:scim:api:messages:2.0:Error"]
    assert fingerprint(database) == before


def test_create_group__10000_members_of_which_one_unknown__400_and_nothing_written(scim, db, database):
    # Given
    ids = bulk_users(db, 9_999, prefix="crowd")
    before = fingerprint(database)
    members = [{"value": str(i)} for i in ids] + [{"value": "999999"}]
    # When
    response = scim.post("/Groups", {"schemas": [GROUP_SCHEMA], "displayName": "Crowd", "members": members})
    # Then
    body = assert_scim_error(response, 400, "invalidValue")
    assert "999999" in body["detail"]
    assert fingerprint(database) == before


def test_create_group__10000_members__201(scim, db):
    ids = bulk_users(db, 10_000, prefix="crowd")
    response = scim.post(
        "/Groups",
        {"schemas": [GROUP_SCHEMA], "displayName": "Crowd", "members": [{"value": str(i)} for i in ids]},
    )
    assert response.status_code == 201 and len(response.get_json()["members"]) == 10_000


@pytest.mark.parametrize(
    ("path", "params"),
    [
        ("/Users", {"attributes": "userName", "excludedAttributes": "emails"}),
        ("/Users", {"attributes": 'emails[type eq "work"]'}),
        ("/Users", {"filter": "\x00"}),
        ("/Groups", {"filter": 'members[$ref eq "x"]'}),
        ("/Groups", {"count": "1e9"}),
    ],
)
def test_list__hostile_parameters__400_scim_error(scim, path, params):
    response = scim.get(path, query_string=params)
    assert_scim_error(response, 400)


def test_list__raw_bytes_not_utf8_in_the_filter__400_scim_error(scim):
    # A WSGI server other than waitress may pass raw bytes on (PEP 3333): the filter's text
    # keeps them percent-encoded and fails to parse (400 invalidFilter), not to decode (500).
    response = scim.get("/Users", environ_overrides={"QUERY_STRING": 'filter=userName eq "\xff'})
    assert_scim_error(response, 400, "invalidFilter")


def test_list__a_parameter_given_twice__the_first_value_counts(scim):
    response = scim.get("/Users", query_string="count=1&count=5")
    assert response.status_code == 200
    assert response.get_json()["itemsPerPage"] <= 1


def test_search__post_body_like_the_query__and_errors(scim):
    found = scim.post(
        "/Users/.search",
        {
            "schemas": ["urn:ietf:params:scim:api:messages:2.0:SearchRequest"],
            "filter": 'userName eq "bob"',
            "attributes": ["userName"],
            "startIndex": 1,
            "count": 10,
        },
    ).get_json()
    assert [u["userName"] for u in found["Resources"]] == ["bob"] and set(found["Resources"][0]) == {
        "schemas",
        "id",
        "userName",
    }
    bad = scim.post(
        "/Users/.search", {"schemas": ["urn:ietf:params:scim:api:messages:2.0:SearchRequest"], "count": "x"}
    )
    assert_scim_error(bad, 400)


def _filter_attributes(vocabulary) -> list[str]:
    names = list(vocabulary.attributes)
    names += [f"{name}.{sub}" for name, (_, subs) in vocabulary.inline.items() for sub in subs]
    names += [name for name in vocabulary.inline]
    names += [f"{name}.{sub}" for name, c in vocabulary.collections.items() for sub in c.attributes]
    names += [name for name in vocabulary.collections]
    return names


OPERATORS = ("eq", "ne", "co", "sw", "ew", "gt", "ge", "lt", "le")
VALUES = ('"x"', '"group-1"', '"2"', "true", "7", "null", '"2026-01-01T00:00:00Z"')


@pytest.mark.parametrize("path", ["/Users", "/Groups"])
def test_list__every_attribute_operator_and_value__answered_never_500(scim, path):
    """Each attribute flagadmin filters on, with each operator, each kind of value, alone, in
    ``not``, ``and``/``or`` and a value path: 200 or a 400 invalidFilter, never a 500."""
    from flagadmin.store.scim_filter import GROUP_ATTRIBUTES, USER_ATTRIBUTES

    scim.create_group("Filtered", ["2"])
    vocabulary = USER_ATTRIBUTES if path == "/Users" else GROUP_ATTRIBUTES
    statuses = set()
    for attribute in _filter_attributes(vocabulary):
        texts = [f"{attribute} pr", f"not ({attribute} pr)"]
        texts += [f"{attribute} {op} {value}" for op in OPERATORS for value in VALUES]
        texts += [f'not ({attribute} {op} "x")' for op in OPERATORS]
        texts += [f'{attribute} {op} "x" or displayName eq "bob"' for op in OPERATORS]
        for text in texts:
            response = scim.get(path, query_string={"filter": text, "count": 1})
            statuses.add(response.status_code)
            assert response.status_code in (200, 400), (text, response.get_json())
            if response.status_code == 400:
                assert response.get_json()["scimType"] == "invalidFilter", (text, response.get_json())
    assert statuses == {200, 400}


PATCH_VALUES = ("x", "False", True, 1, None, {"a": 1}, {"value": "2"}, [{"value": "2"}], [], ["x"])


@pytest.mark.parametrize(
    ("path", "targets"),
    [
        (
            "/Users",
            (
                None,
                "userName",
                "name",
                "name.givenName",
                "displayName",
                "active",
                "emails",
                "emails.value",
                'emails[type eq "work"].value',
                'emails[type eq "work"]',
                "externalId",
                "groups",
                "id",
                "meta",
                "meta.created",
                "schemas",
                "nickName",
                "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:employeeNumber",
            ),
        ),
        (
            "/Groups",
            (
                None,
                "displayName",
                "externalId",
                "members",
                "members.value",
                'members[value eq "2"]',
                'members[value eq "2"].display',
                "id",
                "meta",
                "schemas",
            ),
        ),
    ],
)
def test_patch__every_operation_path_and_value__answered_never_500(scim, db, path, targets):
    """Each op with each path and each kind of value: a success or a 4xx SCIM error, never a
    500; the resource stays readable."""
    resource = scim.create_user("fuzz@example.com") if path == "/Users" else scim.create_group("Fuzz", ["2"])
    for op in ("add", "replace", "remove", "Replace"):
        for target in targets:
            for value in PATCH_VALUES:
                operation = (
                    {"op": op, "value": value}
                    if target is None
                    else {"op": op, "path": target, "value": value}
                )
                response = scim.patch(f"{path}/{resource['id']}", operation)
                assert response.status_code in (200, 204, 400, 409), (operation, response.get_data()[:300])
                if response.status_code >= 400:
                    assert response.get_json()["schemas"] == ["urn:ietf:params:scim:api:messages:2.0:Error"]
    assert scim.get(f"{path}/{resource['id']}").status_code == 200
