"""``credentials_version`` moves when a token could turn invalid or act as someone
else, and only then. Every token found valid is kept (the ``callers`` cache) until it moves, so
a counter moved by a write that changes no credentials sends every cached token back to the
database. A SCIM PUT or PATCH writes every column of the user, ``active`` included: what counts
is whether the value changed (schema version 6). Each test also makes the nearest write that
does count and sees the version move and the token refused: the triggers are narrow, not off.
Run on either engine (``--engine=postgresql``)."""

from __future__ import annotations

import pytest
from scim_helpers import Scim, new_scim_token, user_body

from flagadmin.store import schema as store_schema

from helpers import LOG_AS_IN_VERSION_6, auth

UI_CONFIG = "/api/admin/ui-config"


def versions(db) -> dict[str, int]:
    return {
        row["key"]: int(row["value"])
        for row in db.all(
            "SELECT key, value FROM settings WHERE key IN ('content_version', 'credentials_version')"
        )
    }


@pytest.fixture
def scim(client, db) -> Scim:
    return Scim(client, new_scim_token(db))


def test_scim_patch__display_name__credentials_version_stays__deactivation_moves_it(client, alice, scim, db):
    # Given: alice's token, found valid once (kept)
    (found,) = scim.find_users('userName eq "alice"')
    assert client.get(UI_CONFIG, headers=auth(alice)).status_code == 200
    before = versions(db)
    # When: her identity provider renames her (the user's every column is written again)
    response = scim.patch(
        f"/Users/{found['id']}", {"op": "replace", "path": "displayName", "value": "Alice A."}
    )
    assert response.status_code in (200, 204)
    # Then: who her token is did not change
    assert versions(db)["credentials_version"] == before["credentials_version"]
    assert client.get(UI_CONFIG, headers=auth(alice)).status_code == 200
    # And: deactivating her does move it, and her token fails on the very next request
    response = scim.patch(f"/Users/{found['id']}", {"op": "replace", "path": "active", "value": False})
    assert response.status_code in (200, 204)
    assert versions(db)["credentials_version"] > before["credentials_version"]
    assert client.get(UI_CONFIG, headers=auth(alice)).status_code == 401


def test_scim_put__active_unchanged__credentials_version_stays(client, victor, scim, db):
    # Given
    (found,) = scim.find_users('userName eq "victor"')
    before = versions(db)
    # When: a full replace that sends active=true again, with a new name
    body = user_body("victor", name={"givenName": "Victor", "familyName": "V."}, active=True)
    response = scim.put(f"/Users/{found['id']}", body)
    assert response.status_code == 200, response.get_json()
    # Then
    assert versions(db)["credentials_version"] == before["credentials_version"]
    assert client.get(UI_CONFIG, headers=auth(victor)).status_code == 200


def test_scim_group__external_id_changed__versions_stay__renamed_both_move(scim, db):
    # Given: a group (its name is what role mappings follow)
    group = scim.create_group("Release managers", externalId="okta-1")
    before = versions(db)
    # When: only its externalId changes
    response = scim.patch(
        f"/Groups/{group['id']}", {"op": "replace", "path": "externalId", "value": "okta-2"}
    )
    assert response.status_code in (200, 204)
    # Then: nobody's role or 4.2 can change
    assert versions(db) == before
    # And: a new name (a new key) moves both
    response = scim.patch(
        f"/Groups/{group['id']}", {"op": "replace", "path": "displayName", "value": "Release captains"}
    )
    assert response.status_code in (200, 204)
    after = versions(db)
    assert all(after[key] > before[key] for key in before)


def test_upgrade_from_5__postgresql__user_state_trigger_compares_rows(engine, database, db):
    """The real 5 -> 6 upgrade on PostgreSQL (SQLite's: tests/test_schema.py): the schema file
    replaces version 5's trigger, which moved credentials_version whenever ``active`` was
    assigned."""
    if engine != "postgresql":
        pytest.skip("needs --engine=postgresql (tests/test_schema.py upgrades a SQLite file)")
    # Given: the database as version 5 left it
    with db.write("settings"):
        db.run("DROP TRIGGER users_active_credentials_version ON users")
        db.run(
            "CREATE TRIGGER users_active_credentials_version AFTER UPDATE OF active, deleted_at ON users"
            " FOR EACH STATEMENT EXECUTE FUNCTION flagadmin_move_credentials_version()"
        )
        for statement in LOG_AS_IN_VERSION_6["postgresql"]:
            db.run(statement)
        db.run("UPDATE settings SET value = '5' WHERE key = 'schema_version'")
    # When
    assert store_schema.ensure_schema(database) == 5
    # Then
    before = versions(db)["credentials_version"]
    with db.write("users"):
        db.run("UPDATE users SET active = active, deleted_at = deleted_at WHERE username = 'alice'")
    unchanged = versions(db)["credentials_version"]
    with db.write("users"):
        db.run("UPDATE users SET active = 0 WHERE username = 'alice'")
    assert (unchanged, versions(db)["credentials_version"]) == (before, before + 1)
