"""Projects, project roles and environments change from the command line (``flagadmin
project create|update|delete``, ``flagadmin project role PROJECT USER ROLE [--remove]``,
``flagadmin environment add NAME``), each writing its spec-6 event; the roles given decide who
may change a project's flags through the API at once; seeds declare environments."""

from __future__ import annotations

import pytest

from flagadmin.seed.documents import SeedError

from flag_helpers import (
    DASHBOARD,
    events_since,
    features_path,
    flag_path,
    last_event_id,
    revive_path,
    toggle_path,
)
from helpers import auth


@pytest.fixture
def cli(invoke, database):
    """Run a command on the test's (demo) database."""

    def run(*args: str):
        return invoke(*args, db=database)

    return run


def dashboard_projects(client, token) -> list[str]:
    return [p["id"] for p in client.get(DASHBOARD, headers=auth(token)).get_json()["projects"]]


# --- projects -----------------------------------------------------------------------------


def test_project_create__event_by_the_command_line_with_the_project_as_data(cli, db):
    before = last_event_id(db)
    result = cli("project", "create", "checkout", "--name", "Checkout", "--description", "Cart")
    assert result.exit_code == 0, result.output
    assert "Created project checkout" in result.output
    (event,) = events_since(db, before)
    assert (event["type"], event["project"], event["createdBy"], event["createdByUserId"]) == (
        "project-created",
        "checkout",
        "flagadmin-cli",
        None,
    )
    assert event["data"] == {"id": "checkout", "name": "Checkout", "description": "Cart"}


@pytest.mark.parametrize(("project_id", "why"), [("mobile", "exists already"), ("not ok", "URL-friendly")])
def test_project_create__taken_or_invalid_id__refused_and_nothing_written(cli, db, project_id, why):
    before = last_event_id(db)
    result = cli("project", "create", project_id)
    assert result.exit_code == 1 and why in result.output
    assert last_event_id(db) == before


def test_project_update__event_with_data_and_pre_data(cli, db):
    before = last_event_id(db)
    result = cli("project", "update", "mobile", "--name", "Mobile", "--description", "")
    assert result.exit_code == 0, result.output
    (event,) = events_since(db, before)
    assert event["type"] == "project-updated"
    assert event["preData"] == {"id": "mobile", "name": "Mobile App", "description": "iOS and Android apps"}
    assert event["data"] == {"id": "mobile", "name": "Mobile", "description": None}


def test_project_update__same_values__no_event(cli, db):
    before = last_event_id(db)
    result = cli("project", "update", "mobile", "--name", "Mobile App")
    assert result.exit_code == 0 and "already" in result.output
    assert last_event_id(db) == before


def test_project_update__nothing_given_or_unknown_project__refused(cli):
    assert cli("project", "update", "mobile").exit_code == 2
    assert cli("project", "update", "nowhere", "--name", "X").exit_code == 1


def test_project_delete__empty_project__event_and_gone(cli, db):
    cli("project", "create", "scratch")
    before = last_event_id(db)
    result = cli("project", "delete", "scratch")
    assert result.exit_code == 0, result.output
    (event,) = events_since(db, before)
    assert (event["type"], event["project"]) == ("project-deleted", "scratch")
    assert db.value("SELECT count(*) FROM projects WHERE id = 'scratch'") == 0


def test_project_delete__project_with_flags__refused_saying_how_and_nothing_changed(cli, db):
    before = last_event_id(db)
    result = cli("project", "delete", "mobile")
    assert result.exit_code == 1
    assert "live and" in result.output and "DELETE /api/admin/archive/NAME" in result.output
    assert db.value("SELECT count(*) FROM projects WHERE id = 'mobile'") == 1
    assert db.value("SELECT count(*) FROM project_members WHERE project_id = 'mobile'") == 4
    assert last_event_id(db) == before


def test_project_delete__after_its_flags_are_archived_and_deleted__allowed(cli, client, admin_token):
    cli("project", "create", "scratch")
    client.post(features_path("scratch"), json={"name": "short-lived"}, headers=auth(admin_token))
    assert cli("project", "delete", "scratch").exit_code == 1
    client.delete(flag_path("scratch", "short-lived"), headers=auth(admin_token))
    client.delete("/api/admin/archive/short-lived", headers=auth(admin_token))
    assert cli("project", "delete", "scratch").exit_code == 0


def test_project_delete__with_rules_and_tokens__segments_and_its_own_tokens_go_with_it(
    cli, client, admin_token, db
):
    # Given: a project whose one flag had a strategy using the project's segment, a client token
    # of that project only, and a frontend token of it and "mobile"
    cli("project", "create", "scratch")
    h = auth(admin_token)
    segment = client.post(
        "/api/admin/segments",
        json={"name": "scratch-testers", "project": "scratch", "constraints": []},
        headers=h,
    )
    assert segment.status_code == 201, segment.get_json()
    assert client.post(features_path("scratch"), json={"name": "short-lived"}, headers=h).status_code == 201
    strategy = client.post(
        flag_path("scratch", "short-lived") + "/environments/production/strategies",
        json={"name": "default", "segments": [segment.get_json()["id"]]},
        headers=h,
    )
    assert strategy.status_code == 200, strategy.get_json()
    tokens = {}
    for name, projects, kind in (
        ("own", ["scratch"], "client"),
        ("shared", ["scratch", "mobile"], "frontend"),
    ):
        body = {"tokenName": name, "type": kind, "environment": "production", "projects": projects}
        answer = client.post("/api/admin/api-tokens", json=body, headers=h)
        assert answer.status_code == 201, answer.get_json()
        tokens[name] = answer.get_json()["secret"]
    client.delete(flag_path("scratch", "short-lived"), headers=h)
    client.delete("/api/admin/archive/short-lived", headers=h)
    before = last_event_id(db)
    # When
    result = cli("project", "delete", "scratch")
    # Then: deleted with its segment; its own token deleted (recorded), the shared one reads mobile
    assert result.exit_code == 0, result.output
    assert [e["type"] for e in events_since(db, before)] == ["api-token-deleted", "project-deleted"]
    assert db.value("SELECT count(*) FROM segments WHERE project_id = 'scratch'") == 0
    listed = {t["tokenName"]: t for t in client.get("/api/admin/api-tokens", headers=h).get_json()["tokens"]}
    assert "own" not in listed and listed["shared"]["projects"] == ["mobile"]
    assert client.get("/api/client/features", headers={"Authorization": tokens["own"]}).status_code == 401
    assert client.get("/api/frontend", headers={"Authorization": tokens["shared"]}).status_code == 200


# --- project roles ------------------------------------------------------------------------


def test_project_role__new_member__event_and_next_dashboard_lists_the_project(cli, client, make_token, db):
    # Given: kenji's dashboard, answered before the change
    kenji = make_token(user="kenji")
    assert "mobile" not in dashboard_projects(client, kenji)
    before = last_event_id(db)
    # When
    result = cli("project", "role", "mobile", "kenji", "Member")
    # Then
    assert result.exit_code == 0 and "now holds Member" in result.output
    (event,) = events_since(db, before)
    assert (event["type"], event["project"]) == ("project-user-added", "mobile")
    assert event["data"] == {"userId": 10, "username": "kenji", "email": None, "roleName": "Member"}
    assert "mobile" in dashboard_projects(client, kenji)


def test_project_role__given__the_user_may_change_the_projects_flags_at_once(cli, client, make_token):
    kenji = make_token(user="kenji")
    create = lambda: client.post(features_path("mobile"), json={"name": "kenji-flag"}, headers=auth(kenji))  # noqa: E731
    assert create().status_code == 403
    cli("project", "role", "mobile", "kenji", "Member")
    assert create().status_code == 201
    cli("project", "role", "mobile", "kenji", "Member", "--remove")
    response = client.put(flag_path("mobile", "kenji-flag"), json={}, headers=auth(kenji))
    assert response.status_code == 403


def test_project_role__other_role__role_changed_event_with_the_old_one(cli, db):
    before = last_event_id(db)
    result = cli("project", "role", "mobile", "victor", "Owner")
    assert result.exit_code == 0 and "is now Owner" in result.output
    (event,) = events_since(db, before)
    assert event["type"] == "project-user-role-changed"
    assert (event["preData"]["roleName"], event["data"]["roleName"]) == ("Member", "Owner")
    assert (
        db.values("SELECT role FROM project_members WHERE project_id = 'mobile' AND user_id = 3").__next__()
        == "Owner"
    )


def test_project_role__same_role__nothing_changed(cli, db):
    before = last_event_id(db)
    result = cli("project", "role", "mobile", "victor", "Member")
    assert result.exit_code == 0 and "already holds" in result.output
    assert last_event_id(db) == before


def test_project_role_remove__event_with_the_lost_role(cli, db):
    before = last_event_id(db)
    result = cli("project", "role", "mobile", "victor", "Member", "--remove")
    assert result.exit_code == 0, result.output
    (event,) = events_since(db, before)
    assert (event["type"], event["data"], event["preData"]["roleName"]) == (
        "project-user-removed",
        None,
        "Member",
    )


@pytest.mark.parametrize(
    ("args", "why"),
    [
        (("mobile", "victor", "Owner", "--remove"), "her roles there: Member"),
        (("mobile", "nobody", "Member"), "No user"),
        (("nowhere", "victor", "Member"), "no project"),
        (("mobile", "victor", " "), "cannot be empty"),
    ],
)
def test_project_role__refused__message_and_nothing_written(cli, db, args, why):
    before = last_event_id(db)
    result = cli("project", "role", *args)
    assert result.exit_code == 1 and why in result.output
    assert last_event_id(db) == before


# --- environments -------------------------------------------------------------------------


def test_environment_add__event_and_every_live_flag_gets_it_off(cli, client, alice, db):
    before = last_event_id(db)
    result = cli("environment", "add", "staging", "--type", "test", "--sort-order", "5")
    assert result.exit_code == 0, result.output
    (event,) = events_since(db, before)
    assert (event["type"], event["environment"], event["project"]) == ("environment-created", "staging", None)
    assert event["data"] == {
        "name": "staging",
        "type": "test",
        "sortOrder": 5,
        "enabled": True,
        "protected": False,
    }
    flag = client.get(flag_path("default", "checkout-v2"), headers=auth(alice)).get_json()
    assert [(e["name"], e["enabled"], e["type"]) for e in flag["environments"]][-1] == (
        "staging",
        False,
        "test",
    )
    # and a flag can be switched on there
    on = client.post(toggle_path("default", "checkout-v2", "staging", "on"), headers=auth(alice))
    assert on.status_code == 200


def test_environment_add__archived_flag__gets_it_when_revived(cli, client, alice, db):
    name = db.value(
        "SELECT name FROM features WHERE archived_at IS NOT NULL AND project_id = 'default' LIMIT 1"
    )
    cli("environment", "add", "staging")
    assert (
        db.value(
            "SELECT count(*) FROM feature_environments WHERE feature_name = ? AND name = 'staging'", [name]
        )
        == 0
    )
    client.post(revive_path(name), headers=auth(alice))
    names = [
        e["name"]
        for e in client.get(flag_path("default", name), headers=auth(alice)).get_json()["environments"]
    ]
    assert "staging" in names


def test_environment_add__new_flag__created_in_it_too(cli, client, alice):
    cli("environment", "add", "staging")
    response = client.post(features_path("default"), json={"name": "three-envs"}, headers=auth(alice))
    assert [e["name"] for e in response.get_json()["environments"]] == [
        "development",
        "production",
        "staging",
    ]


@pytest.mark.parametrize(
    ("args", "code", "why"),
    [
        (("production",), 1, "exists already"),
        (("bad name",), 1, "URL-friendly"),
        (("qa", "--type", "moon"), 2, "moon"),
    ],
)
def test_environment_add__refused(cli, db, args, code, why):
    before = last_event_id(db)
    result = cli("environment", "add", *args)
    assert result.exit_code == code and why in result.output
    assert last_event_id(db) == before


def test_commands__each_has_help_with_an_example(runner):
    from flagadmin.cli import cli as command_line

    for command in (
        ("project",),
        ("project", "create"),
        ("project", "update"),
        ("project", "delete"),
        ("project", "role"),
        ("environment",),
        ("environment", "add"),
    ):
        result = runner.invoke(command_line, [*command, "--help"])
        assert result.exit_code == 0 and "Example" in result.output, command


# --- seeds --------------------------------------------------------------------------------


def test_seed__environments_key__declared_with_type_and_order(seed, db):
    seed({"environments": [{"name": "staging", "type": "preproduction", "sortOrder": 3}]})
    assert db.one("SELECT type, sort_order FROM environments WHERE name = 'staging'") == {
        "type": "preproduction",
        "sort_order": 3,
    }


def test_seed__environments_of_the_demo_flags__are_the_installs(db):
    assert list(db.values("SELECT name FROM environments ORDER BY name")) == ["development", "production"]


def test_seed__environment_declared_twice_or_existing__refused(seed):
    with pytest.raises(SeedError, match="already exists"):
        seed({"environments": [{"name": "production"}]})
    with pytest.raises(SeedError, match="duplicate"):
        seed({"environments": [{"name": "qa"}, {"name": "qa"}]})


def test_seed__bad_environment__refused_naming_the_field(seed):
    with pytest.raises(SeedError, match=r"environments\[0\].*type"):
        seed({"environments": [{"name": "qa", "type": "moon"}]})


def test_project_update__next_dashboard_shows_the_new_name(cli, client, alice):
    names = {p["id"]: p["name"] for p in client.get(DASHBOARD, headers=auth(alice)).get_json()["projects"]}
    assert names["mobile"] == "Mobile App"
    cli("project", "update", "mobile", "--name", "Mobile")
    names = {p["id"]: p["name"] for p in client.get(DASHBOARD, headers=auth(alice)).get_json()["projects"]}
    assert names["mobile"] == "Mobile"


def test_project_role_remove__next_dashboard_drops_the_project(cli, client, victor):
    assert "mobile" in dashboard_projects(client, victor)
    cli("project", "role", "mobile", "victor", "Member", "--remove")
    assert "mobile" not in dashboard_projects(client, victor)
