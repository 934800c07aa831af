"""Project roles grant permissions, checked through HTTP: Member does a project's flag work and
not its administration, a custom role grants what it is declared with (per environment where
the reference scopes it), a role that grants nothing is read-only, a role a SCIM group grants
counts the same, and a refusal is 403 NoAccessError naming the permission, its environment and
how an operator grants it. Role changes take effect at the next request."""

from __future__ import annotations

import pytest
from scim_helpers import Scim, new_scim_token

from flagadmin import events
from flagadmin.directory import role_mappings
from flagadmin.flags import access, projects
from flagadmin.permissions import names, roles
from flagadmin.refusals import Forbidden
from flagadmin.store import tokens
from flagadmin.timestamps import SYSTEM_CLOCK

from flag_helpers import (
    delete_path,
    favorites_path,
    features_path,
    flag_path,
    last_event_id,
    revive_path,
    toggle_path,
)
from helpers import auth

TOGGLE = "/api/admin/projects/{projectId}/features/{featureName}/environments/{environment}/on"
FLAG = "/api/admin/projects/{projectId}/features/{featureName}"


@pytest.fixture
def kenji(make_token) -> str:
    """Personal token of kenji (Viewer, Member of payments and growth, no role in mobile)."""
    return make_token(user="kenji")


@pytest.fixture
def give(db, admin_token):
    """``give(role, user="kenji", project="mobile", grants=...)``: declare ``role`` (when
    ``grants`` is given) and make it the user's role in the project, as the command line does."""

    def run(role: str, user: str = "kenji", project: str = "mobile", grants=None) -> None:
        if grants is not None:
            roles.create(db, events.COMMAND_LINE, role, grants)
        projects.set_role(db, events.COMMAND_LINE, project, user, role)

    run.db, run.admin = db, admin_token
    return run


@pytest.fixture
def mobile_flag(client, admin_token) -> str:
    """A live flag of project mobile, made by an admin token, switched on and off again in
    each environment (so it has a strategy in each: switching on a flag that has none adds one,
    which needs CREATE_FEATURE_STRATEGY there as well, as in the reference server)."""
    h = auth(admin_token)
    assert client.post(features_path("mobile"), json={"name": "perm-flag"}, headers=h).status_code == 201
    for environment in ("development", "production"):
        for state in ("on", "off"):
            assert (
                client.post(toggle_path("mobile", "perm-flag", environment, state), headers=h).status_code
                == 200
            )
    return "perm-flag"


def refused(response, permission: str) -> str:
    """Assert a 403 NoAccessError naming ``permission``; return its message."""
    assert response.status_code == 403, response.get_data(as_text=True)
    body = response.get_json()
    assert body["name"] == "NoAccessError"
    assert f'"{permission}" permission' in body["message"]
    return body["message"]


def caller_of(db, token: str) -> tokens.Caller:
    return tokens.find_caller(db, token, "2026-01-01T00:00:00.000Z")


# --- Member -------------------------------------------------------------------------------------


def test_member__does_the_flag_work_of_the_project(client, victor, admin_token):
    """victor is a Viewer and Member of mobile: he creates, changes, switches both environments,
    archives, revives and deletes a flag there."""
    h = auth(victor)
    assert client.post(features_path("mobile"), json={"name": "by-member"}, headers=h).status_code == 201
    assert client.put(flag_path("mobile", "by-member"), json={"stale": True}, headers=h).status_code == 200
    patch = [{"op": "replace", "path": "/description", "value": "x"}]
    assert client.patch(flag_path("mobile", "by-member"), json=patch, headers=h).status_code == 200
    for environment in ("development", "production"):
        assert (
            client.post(toggle_path("mobile", "by-member", environment, "on"), headers=h).status_code == 200
        )
        assert (
            client.post(toggle_path("mobile", "by-member", environment, "off"), headers=h).status_code == 200
        )
    assert client.delete(flag_path("mobile", "by-member"), headers=h).status_code == 202
    assert client.post(revive_path("by-member"), headers=h).status_code == 200
    assert client.delete(flag_path("mobile", "by-member"), headers=h).status_code == 202
    assert client.delete(delete_path("by-member"), headers=h).status_code == 200


@pytest.mark.parametrize(
    "permission", [names.UPDATE_PROJECT, names.DELETE_PROJECT, names.UPDATE_PROJECT_SEGMENT]
)
def test_member__lacks_the_projects_administration__owner_holds_it(db, victor, give, make_token, permission):
    """What the reference's Member lacks, Owner holds (no HTTP operation of flagadmin needs these
    yet; the check the operations call is asked directly)."""
    with pytest.raises(Forbidden) as refusal:
        access.require(db, caller_of(db, victor), "mobile", permission)
    assert f'"{permission}" permission' in refusal.value.message
    assert "Owner grant" in refusal.value.message
    give("Owner")
    access.require(db, caller_of(db, make_token(user="kenji")), "mobile", permission)


# --- a custom role scoped to one environment ----------------------------------------------------


def test_custom_role__switches_development__403_for_production_naming_it(
    client, db, kenji, give, mobile_flag, assert_valid
):
    give("Dev switcher", grants=["UPDATE_FEATURE_ENVIRONMENT:development"])
    on_development = client.post(toggle_path("mobile", mobile_flag, "development", "on"), headers=auth(kenji))
    assert on_development.status_code == 200
    before = last_event_id(db)
    on_production = client.post(toggle_path("mobile", mobile_flag, "production", "on"), headers=auth(kenji))
    message = refused(on_production, "UPDATE_FEATURE_ENVIRONMENT")
    assert 'in the "production" environment of project "mobile"' in message
    assert "Dev switcher" in message  # her roles there, which do not grant it
    assert "flagadmin role create NAME --permission UPDATE_FEATURE_ENVIRONMENT:production" in message
    assert "flagadmin project role mobile USERNAME ROLE" in message
    assert_valid(on_production, TOGGLE, "post")
    assert last_event_id(db) == before
    enabled = db.value(
        "SELECT enabled FROM feature_environments WHERE feature_name = ? AND name = 'production'",
        [mobile_flag],
    )
    assert enabled == 0


def test_custom_role__switching_on_a_flag_without_strategy_needs_to_add_one_there(client, kenji, give):
    """As the reference server: switching on a flag with no strategy in the environment adds a
    flexibleRollout, so the caller needs CREATE_FEATURE_STRATEGY there too."""
    client.post(features_path("mobile"), json={"name": "bare"}, headers=auth(give.admin))
    give("Dev switcher", grants=["UPDATE_FEATURE_ENVIRONMENT:development"])
    response = client.post(toggle_path("mobile", "bare", "development", "on"), headers=auth(kenji))
    assert 'in the "development" environment' in refused(response, "CREATE_FEATURE_STRATEGY")
    roles.update(
        give.db,
        events.COMMAND_LINE,
        "Dev switcher",
        ["UPDATE_FEATURE_ENVIRONMENT:development", "CREATE_FEATURE_STRATEGY:development"],
    )
    response = client.post(toggle_path("mobile", "bare", "development", "on"), headers=auth(kenji))
    assert response.status_code == 200


def test_custom_role__only_what_it_grants(client, kenji, give, mobile_flag):
    give("Dev switcher", grants=["UPDATE_FEATURE_ENVIRONMENT:development"])
    h = auth(kenji)
    refused(client.post(features_path("mobile"), json={"name": "nope"}, headers=h), "CREATE_FEATURE")
    refused(client.put(flag_path("mobile", mobile_flag), json={"stale": True}, headers=h), "UPDATE_FEATURE")
    refused(client.delete(flag_path("mobile", mobile_flag), headers=h), "DELETE_FEATURE")
    # and nothing outside the project
    refused(client.post(features_path("default"), json={"name": "nope"}, headers=h), "CREATE_FEATURE")


def test_custom_role__every_environment_when_none_is_named(client, kenji, give, mobile_flag):
    give("Switcher", grants=["UPDATE_FEATURE_ENVIRONMENT"])
    for environment in ("development", "production"):
        response = client.post(toggle_path("mobile", mobile_flag, environment, "on"), headers=auth(kenji))
        assert response.status_code == 200


def test_role_updated__its_holders_get_the_new_permissions_at_once(client, db, kenji, give, mobile_flag):
    give("Dev switcher", grants=["UPDATE_FEATURE_ENVIRONMENT:development"])
    production = toggle_path("mobile", mobile_flag, "production", "on")
    refused(client.post(production, headers=auth(kenji)), "UPDATE_FEATURE_ENVIRONMENT")
    roles.update(db, events.COMMAND_LINE, "Dev switcher", ["UPDATE_FEATURE_ENVIRONMENT:production"])
    assert client.post(production, headers=auth(kenji)).status_code == 200
    development = toggle_path("mobile", mobile_flag, "development", "on")
    refused(client.post(development, headers=auth(kenji)), "UPDATE_FEATURE_ENVIRONMENT")


# --- a role that grants nothing -----------------------------------------------------------------


def test_read_only_role__sees_the_project_and_changes_nothing(
    client, db, kenji, give, mobile_flag, assert_valid
):
    give("Auditor", grants=[])
    h = auth(kenji)
    assert client.get(features_path("mobile"), headers=h).status_code == 200
    response = client.get(flag_path("mobile", mobile_flag), headers=h)
    assert response.status_code == 200 and response.get_json()["name"] == mobile_flag
    before = last_event_id(db)
    refused(client.post(features_path("mobile"), json={"name": "nope"}, headers=h), "CREATE_FEATURE")
    message = refused(
        client.put(flag_path("mobile", mobile_flag), json={"stale": True}, headers=h), "UPDATE_FEATURE"
    )
    assert "Your roles there (Auditor) do not grant it" in message
    patch = [{"op": "replace", "path": "/stale", "value": True}]
    refused(client.patch(flag_path("mobile", mobile_flag), json=patch, headers=h), "UPDATE_FEATURE")
    for environment in ("development", "production"):
        refused(
            client.post(toggle_path("mobile", mobile_flag, environment, "on"), headers=h),
            "UPDATE_FEATURE_ENVIRONMENT",
        )
    archive = client.delete(flag_path("mobile", mobile_flag), headers=h)
    refused(archive, "DELETE_FEATURE")
    assert_valid(archive, FLAG, "delete")
    assert last_event_id(db) == before
    # a favorite is her own: any role may
    assert client.post(favorites_path("mobile", mobile_flag), headers=h).status_code == 200


def test_read_only_role__archive_operations_name_the_project_she_sees(
    client, admin_token, kenji, give, mobile_flag
):
    client.delete(flag_path("mobile", mobile_flag), headers=auth(admin_token))
    # no role in mobile: the path names no project, and the message does not either
    message = refused(client.post(revive_path(mobile_flag), headers=auth(kenji)), "UPDATE_FEATURE")
    assert "mobile" not in message
    give("Auditor", grants=[])
    message = refused(client.post(revive_path(mobile_flag), headers=auth(kenji)), "UPDATE_FEATURE")
    assert 'project "mobile"' in message
    refused(client.delete(delete_path(mobile_flag), headers=auth(kenji)), "DELETE_FEATURE")


def test_no_role__cannot_see_the_project(client, kenji, mobile_flag):
    response = client.get(flag_path("mobile", mobile_flag), headers=auth(kenji))
    assert response.status_code == 403 and "cannot see the flags" in response.get_json()["message"]


def test_unknown_project__404_before_403(client, kenji):
    response = client.post(features_path("nowhere"), json={"name": "x"}, headers=auth(kenji))
    assert response.status_code == 404


# --- roles SCIM groups grant --------------------------------------------------------------------


def test_scim_group_role__counts_as_a_role_given_to_each_member(client, db, kenji, mobile_flag):
    scim = Scim(client, new_scim_token(db))
    scim.create_group("Release team", ["10"])  # kenji
    roles.create(db, events.COMMAND_LINE, "Dev switcher", ["UPDATE_FEATURE_ENVIRONMENT:development"])
    role_mappings.change_group_project_role(
        db,
        "Release team",
        "mobile",
        "Dev switcher",
        remove=False,
        actor=events.COMMAND_LINE,
        clock=SYSTEM_CLOCK,
    )
    h = auth(kenji)
    assert client.post(toggle_path("mobile", mobile_flag, "development", "on"), headers=h).status_code == 200
    message = refused(
        client.post(toggle_path("mobile", mobile_flag, "production", "on"), headers=h),
        "UPDATE_FEATURE_ENVIRONMENT",
    )
    assert '"production" environment' in message
    refused(client.post(features_path("mobile"), json={"name": "nope"}, headers=h), "CREATE_FEATURE")


def test_scim_group_read_only_role__sees_and_changes_nothing(client, db, kenji, mobile_flag):
    scim = Scim(client, new_scim_token(db))
    scim.create_group("Auditors", ["10"])
    roles.create(db, events.COMMAND_LINE, "Auditor")
    role_mappings.change_group_project_role(
        db, "Auditors", "mobile", "Auditor", remove=False, actor=events.COMMAND_LINE, clock=SYSTEM_CLOCK
    )
    h = auth(kenji)
    assert client.get(flag_path("mobile", mobile_flag), headers=h).status_code == 200
    refused(client.put(flag_path("mobile", mobile_flag), json={"stale": True}, headers=h), "UPDATE_FEATURE")


def test_scim_group_member__member_role__creates_flags(client, db, kenji):
    scim = Scim(client, new_scim_token(db))
    scim.create_group("Mobile devs", ["10"])
    role_mappings.change_group_project_role(
        db, "Mobile devs", "mobile", "Member", remove=False, actor=events.COMMAND_LINE, clock=SYSTEM_CLOCK
    )
    response = client.post(features_path("mobile"), json={"name": "by-group"}, headers=auth(kenji))
    assert response.status_code == 201


# --- root roles and admin tokens ----------------------------------------------------------------


@pytest.mark.parametrize("who", ["admin", "alice"])  # an admin token; alice is an Editor
def test_root_roles__hold_every_permission_everywhere(db, make_token, who, admin_token):
    token = admin_token if who == "admin" else make_token(user=who)
    caller = caller_of(db, token)
    for permission in sorted(names.PROJECT_PERMISSIONS):
        access.require(db, caller, "growth", permission, "production")
    for permission in sorted(names.ROOT_PERMISSIONS):
        access.require(db, caller, None, permission)


def test_root_permission__no_project_role_grants_it(db, victor, give):
    give("Owner", user="victor")
    with pytest.raises(Forbidden) as refusal:
        access.require(db, caller_of(db, victor), None, names.CREATE_SEGMENT)
    assert "root roles Admin and Editor hold it" in refusal.value.message


def test_environment_scoped_permission_asked_without_an_environment__needs_every_environment(db, kenji, give):
    give("Dev switcher", grants=["UPDATE_FEATURE_ENVIRONMENT:development"])
    caller = caller_of(db, kenji)
    access.require(db, caller, "mobile", names.UPDATE_FEATURE_ENVIRONMENT, "development")
    with pytest.raises(Forbidden):
        access.require(db, caller, "mobile", names.UPDATE_FEATURE_ENVIRONMENT)


def test_openapi__the_words_say_what_a_role_must_grant(openapi_document):
    needs = openapi_document["paths"][TOGGLE]["post"]["description"]
    assert "UPDATE_FEATURE_ENVIRONMENT permission in the path's environment" in needs
    assert "flagadmin role list" in needs
