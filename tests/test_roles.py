"""Project roles are declared with what they grant: a new database has Owner and Member as the
reference server grants them; ``flagadmin role create|update|list|delete`` declares, changes,
shows and removes custom roles, each recorded (role-created, role-updated, role-deleted);
``flagadmin project role``, ``flagadmin group-role`` and the group-roles API give only declared
roles; a seed's undeclared role and, on the upgrade to schema version 11, every role name a
database already used are declared with the rights roles had before (every project permission
in every environment)."""

from __future__ import annotations

import pytest
from scim_helpers import Scim, new_scim_token

from flagadmin.permissions import names, roles
from flagadmin.store import connect, schema

from flag_helpers import events_since, features_path, last_event_id, toggle_path
from helpers import auth

EVERY_ENVIRONMENT = ""


def stored_roles(db) -> dict[str, set[tuple[str, str]]]:
    """Every declared role and its ``(permission, environment)`` rows."""
    found: dict[str, set[tuple[str, str]]] = {name: set() for name in db.values("SELECT name FROM roles")}
    for row in db.all("SELECT role, permission, environment FROM role_permissions"):
        found[row["role"]].add((row["permission"], row["environment"]))
    return found


def everywhere(permissions) -> set[tuple[str, str]]:
    return {(permission, EVERY_ENVIRONMENT) for permission in permissions}


@pytest.fixture
def cli(invoke, database):
    """Run a command on the test's (demo) database."""

    def run(*args: str):
        return invoke(*args, db=database)

    return run


# --- what a database starts with ----------------------------------------------------------------


def test_new_database__owner_and_member_as_the_reference_grants_them(empty_database):
    schema.ensure_schema(empty_database)
    with connect(empty_database) as db:
        assert stored_roles(db) == {
            "Owner": everywhere(names.PROJECT_PERMISSIONS),
            "Member": everywhere(roles.MEMBER_PERMISSIONS),
        }
        assert set(db.values("SELECT name FROM roles WHERE built_in = 1")) == {"Owner", "Member"}
        # applying the schema again (every upgrade does) adds nothing
        schema.ensure_schema(empty_database)
        assert len(stored_roles(db)) == 2


def test_member__the_flags_work_without_the_projects_administration():
    assert (
        names.PROJECT_PERMISSIONS
        - {
            names.UPDATE_PROJECT,
            names.DELETE_PROJECT,
            names.UPDATE_PROJECT_SEGMENT,
        }
        == roles.MEMBER_PERMISSIONS
    )
    assert {
        names.CREATE_FEATURE,
        names.UPDATE_FEATURE,
        names.DELETE_FEATURE,
        names.UPDATE_FEATURE_ENVIRONMENT,
        names.CREATE_FEATURE_STRATEGY,
        names.UPDATE_FEATURE_DEPENDENCY,
        names.UPDATE_FEATURE_ENVIRONMENT_VARIANTS,
    } <= roles.MEMBER_PERMISSIONS


def test_seed__a_role_it_names_undeclared__declared_with_every_project_permission(db):
    # the demo's seed gives "Release Manager" in mobile and growth without declaring it
    found = stored_roles(db)
    assert found["Release Manager"] == everywhere(names.PROJECT_PERMISSIONS)
    assert (
        db.value("SELECT description FROM roles WHERE name = 'Release Manager'") == roles.SEEDED_DESCRIPTION
    )
    assert set(found) == {"Owner", "Member", "Release Manager"}


# --- role create ---------------------------------------------------------------------------------


def test_role_create__declared_recorded_and_listed(cli, db):
    before = last_event_id(db)
    result = cli(
        "role",
        "create",
        "Shipper",
        "--permission",
        "UPDATE_FEATURE_ENVIRONMENT:production",
        "--permission",
        "CREATE_FEATURE",
        "--description",
        "Ships to production",
    )
    assert result.exit_code == 0, result.output
    assert result.output == (
        "Declared role Shipper (custom): CREATE_FEATURE, UPDATE_FEATURE_ENVIRONMENT:production.\n"
    )
    (event,) = events_since(db, before)
    assert (event["type"], event["createdBy"], event["project"]) == ("role-created", "flagadmin-cli", None)
    assert event["data"] == {
        "name": "Shipper",
        "description": "Ships to production",
        "type": "custom",
        "builtIn": False,
        "permissions": [
            {"name": "CREATE_FEATURE"},
            {"name": "UPDATE_FEATURE_ENVIRONMENT", "environment": "production"},
        ],
    }
    listed = cli("role", "list").output.splitlines()
    assert listed[0].startswith("Owner (built in): CREATE_FEATURE, ")
    assert listed[1].startswith("Member (built in): CREATE_FEATURE, ")
    assert "Shipper (custom): CREATE_FEATURE, UPDATE_FEATURE_ENVIRONMENT:production" in listed


def test_role_create__no_permission__read_only(cli, db):
    result = cli("role", "create", "Auditor")
    assert result.exit_code == 0 and "no permission (read-only)" in result.output
    assert stored_roles(db)["Auditor"] == set()


def test_role_create__a_grant_in_every_environment_covers_the_single_ones(cli, db):
    result = cli(
        "role",
        "create",
        "Switcher",
        "--permission",
        "UPDATE_FEATURE_ENVIRONMENT:development",
        "--permission",
        "UPDATE_FEATURE_ENVIRONMENT",
        "--permission",
        "UPDATE_FEATURE_ENVIRONMENT",
    )
    assert result.exit_code == 0
    assert stored_roles(db)["Switcher"] == {("UPDATE_FEATURE_ENVIRONMENT", EVERY_ENVIRONMENT)}


@pytest.mark.parametrize(
    ("permission", "why"),
    [
        ("NOPE", '"NOPE" is not a project permission'),
        ("CREATE_SEGMENT", "root permission"),
        ("CREATE_FEATURE:development", "CREATE_FEATURE is granted in the whole project"),
        ("UPDATE_FEATURE_ENVIRONMENT:staging", 'no environment "staging"'),
        ("UPDATE_FEATURE_ENVIRONMENT:", "names no environment"),
    ],
)
def test_role_create__permission_it_cannot_grant__usage_error_and_nothing_written(cli, db, permission, why):
    before = last_event_id(db)
    result = cli("role", "create", "Broken", "--permission", permission)
    assert result.exit_code == 2
    assert why in result.output and "--permission" in result.output
    assert last_event_id(db) == before
    assert "Broken" not in stored_roles(db)


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("Owner", 'A role named "Owner" exists already'),
        ("member", 'A role named "Member" exists already'),
        (" padded", "white space"),
        ("x" * 101, "at most 100"),
    ],
)
def test_role_create__name_taken_or_invalid__refused_and_nothing_written(cli, db, name, why):
    before = last_event_id(db)
    result = cli("role", "create", name)
    assert result.exit_code == 1 and why in result.output
    assert last_event_id(db) == before


# --- role update ---------------------------------------------------------------------------------


def test_role_update__permissions_replaced__recorded_with_data_and_pre_data(cli, db):
    cli("role", "create", "Dev", "--permission", "UPDATE_FEATURE_ENVIRONMENT:development")
    before = last_event_id(db)
    result = cli("role", "update", "Dev", "--permission", "UPDATE_FEATURE_ENVIRONMENT")
    assert result.exit_code == 0 and "UPDATE_FEATURE_ENVIRONMENT." in result.output
    (event,) = events_since(db, before)
    assert event["type"] == "role-updated"
    assert event["preData"]["permissions"] == [
        {"name": "UPDATE_FEATURE_ENVIRONMENT", "environment": "development"}
    ]
    assert event["data"]["permissions"] == [{"name": "UPDATE_FEATURE_ENVIRONMENT"}]
    assert cli("role", "update", "Dev", "--read-only").exit_code == 0
    assert stored_roles(db)["Dev"] == set()
    # the same again changes nothing and records nothing
    before = last_event_id(db)
    assert "already was so" in cli("role", "update", "Dev", "--read-only").output
    assert last_event_id(db) == before


@pytest.mark.parametrize(
    ("args", "status", "why"),
    [
        (("Owner", "--read-only"), 1, "Owner is a built-in role and cannot be changed"),
        (("Nobody", "--read-only"), 1, 'There is no role "Nobody"'),
        (("Release Manager",), 2, "Give --permission, --read-only or --description"),
        (("Release Manager", "--read-only", "--permission", "CREATE_FEATURE"), 2, "not both"),
        (("Release Manager", "--permission", "DELETE_STRATEGY"), 2, "root permission"),
    ],
)
def test_role_update__refused__nothing_written(cli, db, args, status, why):
    before = last_event_id(db)
    result = cli("role", "update", *args)
    assert result.exit_code == status and why in result.output
    assert last_event_id(db) == before


# --- role delete ---------------------------------------------------------------------------------


def test_role_delete__in_use__refused_naming_who_until_taken_back(cli, db, client):
    cli("role", "create", "Dev")
    cli("project", "role", "mobile", "kenji", "Dev")
    cli("group-role", "Mobile devs", "--project", "mobile", "--role", "Dev")
    before = last_event_id(db)
    result = cli("role", "delete", "Dev")
    assert result.exit_code == 1
    assert '"kenji" in mobile' in result.output and '"Mobile devs" in mobile' in result.output
    assert "--remove" in result.output
    assert last_event_id(db) == before and "Dev" in stored_roles(db)
    cli("project", "role", "mobile", "kenji", "Dev", "--remove")
    cli("group-role", "Mobile devs", "--project", "mobile", "--role", "Dev", "--remove")
    before = last_event_id(db)
    result = cli("role", "delete", "Dev")
    assert result.exit_code == 0 and result.output == "Deleted role Dev.\n"
    (event,) = events_since(db, before)
    assert (event["type"], event["data"]) == ("role-deleted", None)
    assert event["preData"]["name"] == "Dev" and event["preData"]["permissions"] == []
    assert "Dev" not in stored_roles(db)


@pytest.mark.parametrize(
    ("name", "why"), [("Member", "built-in role"), ("Nobody", 'There is no role "Nobody"')]
)
def test_role_delete__built_in_or_unknown__refused(cli, db, name, why):
    before = last_event_id(db)
    result = cli("role", "delete", name)
    assert result.exit_code == 1 and why in result.output
    assert last_event_id(db) == before


# --- only declared roles are given ---------------------------------------------------------------


def test_project_role__undeclared_role__refused_listing_the_declared(cli, db):
    before = last_event_id(db)
    result = cli("project", "role", "mobile", "kenji", "Releaser")
    assert result.exit_code == 1
    assert 'There is no role "Releaser"' in result.output
    assert "Owner, Member, Release Manager" in result.output and "flagadmin role create" in result.output
    assert last_event_id(db) == before
    assert db.value("SELECT count(*) FROM project_members WHERE role = 'Releaser'") == 0


def test_project_role__declared_custom_role__given(cli, db):
    cli("role", "create", "Releaser", "--permission", "UPDATE_FEATURE_ENVIRONMENT")
    result = cli("project", "role", "mobile", "kenji", "Releaser")
    assert result.exit_code == 0 and "now holds Releaser" in result.output


def test_group_role__undeclared_role__refused_listing_the_declared(cli, db):
    result = cli("group-role", "Ops", "--project", "mobile", "--role", "Releaser")
    assert result.exit_code == 1
    assert 'There is no role "Releaser"' in result.output and "Owner, Member" in result.output
    assert db.value("SELECT count(*) FROM group_project_roles") == 0


def test_group_roles_api__undeclared_role__400_and_nothing_written(client, admin_token, db, assert_valid):
    path = "/api/admin/group-roles/project-roles"
    body = {"group": "Ops", "project": "mobile", "role": "Releaser"}
    response = client.post(path, json=body, headers=auth(admin_token))
    assert response.status_code == 400 and 'There is no role "Releaser"' in response.get_json()["message"]
    assert_valid(response, path, "post")
    assert db.value("SELECT count(*) FROM group_project_roles") == 0


# --- the upgrade to schema version 11 ------------------------------------------------------------


def _as_in_version_10(db, engine: str) -> None:
    """Take the test database back to version 10: no roles nor role permissions."""
    with db.write():
        db.run("DROP TABLE role_permissions")
        db.run("DROP TABLE roles")
        if engine == "postgresql":
            db.run("UPDATE settings SET value = '10' WHERE key = 'schema_version'")
    if engine == "sqlite":
        db.pragma("user_version = 10")


def test_upgrade_from_version_10__role_names_in_use_declared_with_todays_rights(
    engine, database, db, client, make_token, admin_token
):
    """The real 10 -> 11 upgrade on either engine: every role name users hold or SCIM groups
    grant becomes a declared role granting every project permission in every environment, so
    its holders keep doing what they did; Owner and Member are as in a new database."""
    # Given: version 10's free role names, given directly and through a SCIM group
    scim = Scim(client, new_scim_token(db))
    scim.create_group("Legacy ops", ["10"])  # kenji
    with db.write():
        db.run("INSERT INTO project_members (project_id, user_id, role) VALUES ('mobile', 10, 'Legacy dev')")
        db.run(
            "INSERT INTO group_project_roles (group_key, group_name, project_id, role)"
            " VALUES ('legacy ops', 'Legacy ops', 'default', 'Ops lead')"
        )
    _as_in_version_10(db, engine)
    # When
    found = schema.ensure_schema(database)
    # Then
    assert found == 10
    declared = stored_roles(db)
    assert declared["Owner"] == everywhere(names.PROJECT_PERMISSIONS)
    assert declared["Member"] == everywhere(roles.MEMBER_PERMISSIONS)
    for name in ("Legacy dev", "Ops lead", "Release Manager"):
        assert declared[name] == everywhere(names.PROJECT_PERMISSIONS), name
        assert db.value("SELECT description FROM roles WHERE name = ?", [name]) == schema.UPGRADE_11_ROLES
        assert db.value("SELECT built_in FROM roles WHERE name = ?", [name]) == 0
    assert set(declared) == {"Owner", "Member", "Legacy dev", "Ops lead", "Release Manager"}
    # and kenji keeps today's rights through both: create, and switch production on
    kenji = make_token(user="kenji")
    for project in ("mobile", "default"):
        name = f"after-upgrade-{project}"
        created = client.post(features_path(project), json={"name": name}, headers=auth(kenji))
        assert created.status_code == 201, created.get_json()
        switched = client.post(toggle_path(project, name, "production", "on"), headers=auth(kenji))
        assert switched.status_code == 200, switched.get_json()
    # and the upgrade is not done twice
    assert schema.ensure_schema(database) == schema.SCHEMA_VERSION
    assert stored_roles(db) == declared


def test_upgrade_from_version_10__a_role_declared_since_keeps_what_it_grants(engine, database, db, cli):
    """Only the names the upgrade declares get every permission: a read-only role declared
    since (in a database marked older again) stays read-only."""
    cli("role", "create", "Auditor")
    cli("project", "role", "mobile", "kenji", "Auditor")
    with db.write():
        if engine == "postgresql":
            db.run("UPDATE settings SET value = '10' WHERE key = 'schema_version'")
    if engine == "sqlite":
        db.pragma("user_version = 10")
    schema.ensure_schema(database)
    assert stored_roles(db)["Auditor"] == set()
