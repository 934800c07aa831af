"""Spec 4.5: POST /api/admin/scim-settings/generate-new-token, and the SCIM side that
shows every earlier token stops working (RFC 7644 ServiceProviderConfig)."""

from __future__ import annotations

import pytest

from flagadmin.store import Conflict
from flagadmin.store.tokens import digest

from helpers import auth, table_names

PATH = "/api/admin/scim-settings/generate-new-token"
SCIM = "/scim/v2/ServiceProviderConfig"


def every_value(conn) -> str:
    """Every value of every table, as text, one row a line: what the database holds, on
    either engine (a SQL dump of it, less the schema)."""
    return "\n".join(
        repr(tuple(row.values())) for name in table_names(conn) for row in conn.all(f'SELECT * FROM "{name}"')
    )


def generate(client, token):
    return client.post(PATH, headers={**auth(token), "Accept": "application/json"})


def test_generate__admin__new_token_not_cached(client, admin_token, assert_valid):
    response = generate(client, admin_token)
    assert response.status_code == 200
    assert_valid(response, PATH, "post")
    token = response.get_json()["token"]
    assert token.startswith("scim_") and len(token) == len("scim_") + 43
    assert response.headers["Cache-Control"] == "no-store"


def test_generate__twice__only_the_newest_authenticates_scim(client, admin_token):
    # Given
    first = generate(client, admin_token).get_json()["token"]
    assert client.get(SCIM, headers={"Authorization": f"Bearer {first}"}).status_code == 200
    # When
    second = generate(client, admin_token).get_json()["token"]
    # Then
    revoked = client.get(SCIM, headers={"Authorization": f"Bearer {first}"})
    assert revoked.status_code == 401
    assert revoked.mimetype == "application/scim+json"
    assert revoked.get_json()["schemas"] == ["urn:ietf:params:scim:api:messages:2.0:Error"]
    assert revoked.get_json()["status"] == "401"
    current = client.get(SCIM, headers={"Authorization": f"Bearer {second}"})
    assert current.status_code == 200
    assert "urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig" in current.get_json()["schemas"]


def test_scim__missing_or_wrong_token__401(client):
    assert client.get(SCIM).status_code == 401
    assert client.get(SCIM, headers={"Authorization": "Bearer scim_nope"}).status_code == 401


def test_generate__stored_only_as_digest(client, admin_token, db):
    token = generate(client, admin_token).get_json()["token"]
    assert digest(token) in set(db.values("SELECT digest FROM scim_tokens"))
    dump = every_value(db)
    assert token not in dump


def test_scim_token__not_an_api_token(client, admin_token):
    token = generate(client, admin_token).get_json()["token"]
    response = client.get("/api/admin/ui-config", headers=auth(token))
    assert response.status_code == 401


def test_schema__refuses_a_second_active_scim_token(db):
    db.run("INSERT INTO scim_tokens (digest, created_at) VALUES (?, 'x')", ["a" * 64])
    with pytest.raises(Conflict):
        db.run("INSERT INTO scim_tokens (digest, created_at) VALUES (?, 'x')", ["b" * 64])


@pytest.mark.parametrize("who", ["alice", "victor"])
def test_generate__without_admin__403_and_no_token_made(client, request, db, assert_valid, who):
    response = generate(client, request.getfixturevalue(who))
    assert response.status_code == 403
    assert_valid(response, PATH, "post")
    assert '"ADMIN"' in response.get_json()["message"]
    assert db.value("SELECT count(*) FROM scim_tokens") == 0


def test_generate__admin_user_token__allowed(client, admin_user):
    assert generate(client, admin_user).status_code == 200


def test_generate__no_token__401(client, assert_valid):
    response = client.post(PATH)
    assert response.status_code == 401
    assert_valid(response, PATH, "post")
