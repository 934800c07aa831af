"""What SCIM groups grant is flagadmin's: `flagadmin group-role` (a contract: scripts
use it) and /api/admin/group-roles (ADMIN only), each recorded as an event; and the command
line leaves users the directory deactivated alone."""

from __future__ import annotations

import json

import pytest
from scim_helpers import Scim, new_scim_token

from flagadmin.store import connect

from helpers import auth, flagadmin

PATH = "/api/admin/group-roles"


def events_of(db, *types: str) -> list[dict]:
    marks = ", ".join("?" * len(types))
    rows = db.all(
        "SELECT type, created_by, created_by_user_id, project, data, pre_data FROM events"
        f" WHERE type IN ({marks}) ORDER BY id",
        list(types),
    )
    for row in rows:
        row["data"] = json.loads(row["data"]) if row["data"] else None
        row["pre_data"] = json.loads(row["pre_data"]) if row["pre_data"] else None
    return rows


# --- the command line ------------------------------------------------------------------------------


def test_cli__root_role_set_shown_and_removed__with_events(invoke, database):
    db = database
    # When
    granted = invoke("group-role", "Flag admins", "--root-role", "Admin", db=db)
    shown = invoke("group-role", "FLAG ADMINS", db=db)
    removed = invoke("group-role", "Flag admins", "--root-role", "Admin", "--remove", db=db)
    # Then
    assert granted.exit_code == 0, granted.output
    assert granted.output == "Group 'Flag admins' grants root role Admin (no SCIM group of this name yet).\n"
    assert "root role Admin" in shown.output
    assert removed.output == "Group 'Flag admins' grants nothing (no SCIM group of this name yet).\n"
    with connect(database) as conn:
        (first, second) = events_of(conn, "group-updated")
    assert first["created_by"] == "flagadmin-cli" and first["data"] == {
        "name": "Flag admins",
        "rootRole": "Admin",
    }
    assert first["pre_data"] == {"name": "Flag admins", "rootRole": None}
    assert second["data"]["rootRole"] is None


def test_cli__project_role__given_and_taken_back_with_events(invoke, database):
    db = database
    given = invoke("group-role", "Checkout team", "--project", "payments", "--role", "Owner", db=db)
    custom = invoke(
        "group-role", "Checkout team", "--project", "payments", "--role", "Release Manager", db=db
    )
    taken = invoke(
        "group-role", "Checkout team", "--project", "payments", "--role", "Owner", "--remove", db=db
    )
    last = invoke(
        "group-role", "Checkout team", "--project", "payments", "--role", "Release Manager", "--remove", db=db
    )
    assert given.exit_code == custom.exit_code == taken.exit_code == last.exit_code == 0
    assert "Owner in project payments" in given.output
    assert "Owner, Release Manager in project payments" in custom.output
    assert "Release Manager in project payments" in taken.output
    with connect(database) as conn:
        rows = events_of(conn, "project-access-group-roles-updated", "project-access-group-roles-deleted")
    assert [r["type"] for r in rows] == ["project-access-group-roles-updated"] * 3 + [
        "project-access-group-roles-deleted"
    ]
    assert rows[0]["project"] == "payments" and rows[0]["data"] == {
        "groupName": "Checkout team",
        "roles": ["Owner"],
    }
    assert rows[-1]["data"]["roles"] == []


def test_cli__mapping_with_a_scim_group__shows_its_id_and_members(invoke, database, client):
    with connect(database) as conn:
        scim = Scim(client, new_scim_token(conn))
    scim.create_group("Editors", ["2", "3"])
    result = invoke("group-role", "editors", "--root-role", "Editor", db=database)
    assert result.output == "Group 'Editors' grants root role Editor (SCIM group id group-1, 2 members).\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--project", "nowhere", "--role", "Owner"), 'No project has the id "nowhere"'),
        (("--project", "payments", "--role", " "), "A role is Owner, Member or a custom role's name"),
        (("--root-role", "Admin", "--project", "payments", "--role", "Owner"), "not both"),
        (("--project", "payments"), "--project and --role go together"),
        (("--remove",), "--remove needs"),
        (("--root-role", "Owner"), "Invalid value for '--root-role'"),
    ],
)
def test_cli__bad_mapping__nonzero_exit_message_nothing_written(invoke, database, args, message):
    result = invoke("group-role", "Team", *args, db=database)
    assert result.exit_code != 0
    assert message in result.output
    with connect(database) as conn:
        assert conn.value("SELECT count(*) FROM events") == 0


def test_cli__empty_group_name__refused(invoke, database):
    result = invoke("group-role", " ", "--root-role", "Admin", db=database)
    assert result.exit_code == 1 and "must not be empty" in result.output


def test_cli__as_a_process__the_contract_scripts_use(database):
    result = flagadmin("group-role", "Ops", "--root-role", "Editor", "--db", database)
    assert result.returncode == 0, result.stderr
    assert "grants root role Editor" in result.stdout


def test_create_token__user_deactivated_by_the_directory__refused(invoke, database, client):
    with connect(database) as conn:
        scim = Scim(client, new_scim_token(conn))
    scim.patch("/Users/3", {"op": "replace", "path": "active", "value": False})
    result = invoke("create-token", "--user", "victor", db=database)
    assert result.exit_code == 1 and "deactivated by the identity provider" in result.output
    with connect(database) as conn:
        assert conn.value("SELECT count(*) FROM api_tokens WHERE user_id = 3") == 0


# --- the admin API ---------------------------------------------------------------------------------

ROOT = PATH + "/root-role"
PROJECTS = PATH + "/project-roles"


def test_api__put_post_get_delete__admin_only_and_valid(client, admin_token, alice, db, assert_valid):
    # When
    created = client.put(ROOT, headers=auth(admin_token), json={"group": "Flag admins", "rootRole": "Admin"})
    project = client.post(
        PROJECTS,
        headers=auth(admin_token),
        json={"group": "flag ADMINS", "project": "mobile", "role": "Owner"},
    )
    listed = client.get(PATH, headers=auth(admin_token))
    one = client.get(PATH, headers=auth(admin_token), query_string={"group": "FLAG ADMINS"})
    removed = client.delete(ROOT, headers=auth(admin_token), query_string={"group": "Flag admins"})
    unmapped = client.delete(
        PROJECTS,
        headers=auth(admin_token),
        query_string={"group": "Flag admins", "project": "mobile", "role": "Owner"},
    )
    forbidden = client.get(PATH, headers=auth(alice))
    # Then
    for response, path, method in (
        (created, ROOT, "put"),
        (project, PROJECTS, "post"),
        (listed, PATH, "get"),
        (one, PATH, "get"),
        (removed, ROOT, "delete"),
        (unmapped, PROJECTS, "delete"),
    ):
        assert response.status_code == 200, response.get_json()
        assert_valid(response, path, method)
    assert created.get_json() == {
        "group": "Flag admins",
        "rootRole": "Admin",
        "projects": [],
        "scimGroupId": None,
        "members": 0,
    }
    assert project.get_json()["projects"] == [{"project": "mobile", "roles": ["Owner"]}]
    assert listed.get_json()["groupRoles"] == one.get_json()["groupRoles"]
    assert removed.get_json()["rootRole"] is None and unmapped.get_json()["projects"] == []
    assert forbidden.status_code == 403
    assert_valid(forbidden, PATH, "get")
    updated = events_of(db, "group-updated")
    assert updated[0]["created_by"] == "admin" and updated[0]["created_by_user_id"] == -42
    assert [e["type"] for e in events_of(db, "project-access-group-roles-deleted")] == [
        "project-access-group-roles-deleted"
    ]


@pytest.mark.parametrize(
    ("method", "path", "body", "status"),
    [
        ("put", ROOT, {"group": "G"}, 400),
        ("put", ROOT, {"group": "G", "rootRole": "Owner"}, 400),
        ("put", ROOT, {"group": "", "rootRole": "Admin"}, 400),
        ("put", ROOT, {"group": " ", "rootRole": "Admin"}, 400),
        ("post", PROJECTS, {"group": "G", "project": "mobile"}, 400),
        ("post", PROJECTS, {"group": "G", "project": "mobile", "role": ""}, 400),
        ("post", PROJECTS, {"group": "G", "project": "nowhere", "role": "Owner"}, 404),
    ],
)
def test_api__bad_mapping__error_and_nothing_written(
    client, admin_token, db, assert_valid, method, path, body, status
):
    response = client.open(path, method=method.upper(), headers=auth(admin_token), json=body)
    assert response.status_code == status
    assert_valid(response, path, method)
    assert db.value("SELECT count(*) FROM events") == 0


def test_api__remove_a_root_role_the_group_does_not_grant__nothing_changes(client, admin_token, db):
    client.put(ROOT, headers=auth(admin_token), json={"group": "G", "rootRole": "Editor"})
    response = client.delete(
        ROOT, headers=auth(admin_token), query_string={"group": "G", "rootRole": "Admin"}
    )
    assert response.get_json()["rootRole"] == "Editor"
    assert len(events_of(db, "group-updated")) == 1


def test_api__personal_token_of_an_admin_user__recorded_as_that_user(client, admin_user, db):
    client.post(
        PROJECTS, headers=auth(admin_user), json={"group": "G", "project": "growth", "role": "Member"}
    )
    (event,) = events_of(db, "project-access-group-roles-updated")
    assert (event["created_by"], event["created_by_user_id"]) == ("admin", 1)
