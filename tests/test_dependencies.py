"""Dependencies between flags on the reference server's paths (``.../features/{child}/dependencies``):
one parent, one level, same project, never itself, the parent live; ``enabled: false`` stored
without variants; what a flag's read shows (``dependencies``, ``children``); the options the
reference lists; the events written; and every bad case refused with 400, nothing stored.

Demo data (seed/demo.json): project default holds checkout-v2, dark-mode, search-ranking,
beta-access... (old-checkout is archived); mobile holds mobile-dark-mode...; alice is an
Editor, kenji a Viewer and Member of payments and growth.
"""

from __future__ import annotations

import pytest

from flagadmin.events import COMMAND_LINE
from flagadmin.refusals import Conflict
from flagadmin.rules import dependencies as rule_dependencies
from flagadmin.store import dependencies as store_dependencies
from flagadmin.timestamps import SYSTEM_CLOCK

from flag_helpers import assert_reference, example_of, flag_path, last_event_id, recorded
from helpers import auth


def dependencies_path(child: str, project: str = "default") -> str:
    return f"{flag_path(project, child)}/dependencies"


def depend(client, token, child, parent, project="default", **extra):
    return client.post(
        dependencies_path(child, project), json={"feature": parent, **extra}, headers=auth(token)
    )


def flag(client, token, name, project="default"):
    return client.get(flag_path(project, name), headers=auth(token)).get_json()


def rows(db) -> list:
    return db.all("SELECT child, parent, enabled, variants FROM feature_dependencies ORDER BY child")


def test_add__200_no_body_flag_reads_show_both_sides_and_event(client, alice, db, assert_valid):
    # When
    response = depend(client, alice, "dark-mode", "checkout-v2")
    # Then
    assert response.status_code == 200 and response.data == b""
    assert_valid(response, "/api/admin/projects/{projectId}/features/{child}/dependencies", "post")
    child, parent = flag(client, alice, "dark-mode"), flag(client, alice, "checkout-v2")
    assert_reference(child, "featureSchema")
    assert_reference(parent, "featureSchema")
    assert child["dependencies"] == [{"feature": "checkout-v2", "enabled": True, "variants": []}]
    assert child["children"] == [] and parent["children"] == ["dark-mode"] and parent["dependencies"] == []
    (event,) = recorded(db, "feature-dependency-added", limit=1)
    assert event["featureName"] == "dark-mode" and event["project"] == "default"
    assert event["data"] == {"feature": "checkout-v2", "enabled": True}


def test_add__enabled_false__stored_without_variants(client, alice, db):
    response = depend(client, alice, "dark-mode", "checkout-v2", enabled=False, variants=["blue"])
    assert response.status_code == 200
    assert rows(db) == [{"child": "dark-mode", "parent": "checkout-v2", "enabled": 0, "variants": None}]
    assert flag(client, alice, "dark-mode")["dependencies"] == [
        {"feature": "checkout-v2", "enabled": False, "variants": []}
    ]
    (event,) = recorded(db, "feature-dependency-added", limit=1)
    assert event["data"] == {"feature": "checkout-v2", "enabled": False}


def test_add__with_variants__kept_and_shown(client, alice, db):
    depend(client, alice, "dark-mode", "checkout-v2", variants=["blue", "red"])
    assert flag(client, alice, "dark-mode")["dependencies"] == [
        {"feature": "checkout-v2", "enabled": True, "variants": ["blue", "red"]}
    ]
    (event,) = recorded(db, "feature-dependency-added", limit=1)
    assert event["data"]["variants"] == ["blue", "red"]


def test_add__second_parent_replaces_the_first_and_same_again_records_nothing(client, alice, db):
    depend(client, alice, "dark-mode", "checkout-v2")
    assert depend(client, alice, "dark-mode", "search-ranking").status_code == 200
    assert [(r["child"], r["parent"]) for r in rows(db)] == [("dark-mode", "search-ranking")]
    assert flag(client, alice, "checkout-v2")["children"] == []
    before = last_event_id(db)
    assert depend(client, alice, "dark-mode", "search-ranking").status_code == 200
    assert last_event_id(db) == before


@pytest.mark.parametrize(
    ("child", "body", "field"),
    [
        ("dark-mode", {"feature": "dark-mode"}, "feature"),
        ("dark-mode", {"feature": "no-such-flag"}, "feature"),
        ("dark-mode", {"feature": "old-checkout"}, "feature"),  # archived
        ("dark-mode", {"feature": "mobile-dark-mode"}, "feature"),  # another project
        ("dark-mode", {"feature": ""}, "feature"),
        ("dark-mode", {}, "feature"),
        ("dark-mode", {"feature": 42}, "feature"),
        ("dark-mode", {"feature": "checkout-v2", "enabled": "yes"}, "enabled"),
        ("dark-mode", {"feature": "checkout-v2", "variants": "blue"}, "variants"),
        ("dark-mode", {"feature": "checkout-v2", "variants": [1]}, "variants"),
        ("dark-mode", {"feature": "checkout-v2", "variants": ["a b"]}, "variants.0"),
        ("dark-mode", {"feature": "checkout-v2", "variants": ["v"] * 1001}, "variants"),
        ("dark-mode", {"feature": "checkout-v2", "colour": "red"}, "colour"),
    ],
)
def test_add__bad_cases__400_naming_the_field_and_nothing_stored(client, alice, db, child, body, field):
    before = last_event_id(db)
    response = client.post(dependencies_path(child), json=body, headers=auth(alice))
    assert response.status_code == 400, response.get_json()
    assert any(d["message"].startswith(field) for d in response.get_json()["details"]), response.get_json()
    assert rows(db) == [] and last_event_id(db) == before


def test_add__chains_and_cycles__400_and_nothing_stored(client, alice, db):
    # Given: dark-mode depends on checkout-v2
    depend(client, alice, "dark-mode", "checkout-v2")
    before = last_event_id(db)
    # a parent cannot get a parent, a child cannot become a parent, and so no cycle forms
    for child, parent in [
        ("checkout-v2", "search-ranking"),  # checkout-v2 has a child
        ("search-ranking", "dark-mode"),  # dark-mode has a parent
        ("checkout-v2", "dark-mode"),  # the cycle back
    ]:
        response = depend(client, alice, child, parent)
        assert response.status_code == 400, (child, parent, response.get_json())
        assert "Transitive dependency" in response.get_json()["message"]
    assert [(r["child"], r["parent"]) for r in rows(db)] == [("dark-mode", "checkout-v2")]
    assert last_event_id(db) == before


def test_add__unknown_child_or_project__404_archived_child__409(client, alice, db):
    assert depend(client, alice, "no-such-flag", "checkout-v2").status_code == 404
    assert depend(client, alice, "dark-mode", "checkout-v2", project="no-such-project").status_code == 404
    assert depend(client, alice, "old-checkout", "checkout-v2").status_code == 409
    assert rows(db) == []


def test_add__without_the_permission__403(client, make_token, db):
    kenji = make_token(user="kenji")
    assert depend(client, kenji, "dark-mode", "checkout-v2").status_code == 403
    assert rows(db) == []


def test_remove_one__200_event_then_again_200_and_nothing_recorded(client, alice, db):
    depend(client, alice, "dark-mode", "checkout-v2")
    response = client.delete(f"{dependencies_path('dark-mode')}/checkout-v2", headers=auth(alice))
    assert response.status_code == 200 and response.data == b"" and rows(db) == []
    (event,) = recorded(db, "feature-dependency-removed", limit=1)
    assert event["data"] == {"feature": "checkout-v2"} and event["featureName"] == "dark-mode"
    before = last_event_id(db)
    again = client.delete(f"{dependencies_path('dark-mode')}/checkout-v2", headers=auth(alice))
    assert again.status_code == 200 and last_event_id(db) == before


def test_remove_all__200_and_event(client, alice, db):
    depend(client, alice, "dark-mode", "checkout-v2")
    response = client.delete(dependencies_path("dark-mode"), headers=auth(alice))
    assert response.status_code == 200 and rows(db) == []
    (event,) = recorded(db, "feature-dependencies-removed", limit=1)
    assert event["featureName"] == "dark-mode"
    assert flag(client, alice, "dark-mode")["dependencies"] == []


def test_options__possible_parents_parent_variants_and_whether_any_exist(client, alice, db):
    exists = client.get("/api/admin/projects/default/dependencies", headers=auth(alice))
    assert exists.status_code == 200 and exists.get_json() is False
    depend(client, alice, "dark-mode", "checkout-v2")
    client.put(
        f"{flag_path('default', 'checkout-v2')}/variants-batch",
        json={
            "variants": [{"name": "red", "weight": 0}, {"name": "blue", "weight": 0}],
            "environments": ["production"],
        },
        headers=auth(alice),
    )
    # When
    parents = client.get(f"{flag_path('default', 'search-ranking')}/parents", headers=auth(alice))
    variants = client.get(f"{flag_path('default', 'checkout-v2')}/parent-variants", headers=auth(alice))
    exists = client.get("/api/admin/projects/default/dependencies", headers=auth(alice))
    # Then: live flags of default, not itself, not one that has a parent (dark-mode)
    assert parents.status_code == 200
    names = parents.get_json()
    assert "search-ranking" not in names and "dark-mode" not in names and "old-checkout" not in names
    assert "checkout-v2" in names and names == sorted(names) and "mobile-dark-mode" not in names
    assert_reference(variants.get_json(), "parentVariantOptionsSchema")
    assert variants.get_json() == ["blue", "red"]
    assert exists.get_json() is True


def test_archive_hooks__a_parent_with_live_children_refused_and_a_child_forgets_its_parent(client, alice, db):
    depend(client, alice, "dark-mode", "checkout-v2")
    with pytest.raises(Conflict) as refused:
        rule_dependencies.refuse_archiving_a_parent(db, "checkout-v2")
    assert "dark-mode" in refused.value.message
    rule_dependencies.refuse_archiving_a_parent(db, "dark-mode")
    with db.write():
        rule_dependencies.forget_on_archive(db, COMMAND_LINE, "default", "dark-mode", SYSTEM_CLOCK)
    assert rows(db) == []
    (event,) = recorded(db, "feature-dependencies-removed", limit=1)
    assert event["featureName"] == "dark-mode"


def test_archive__a_parent_with_live_children_409_nothing_archived__a_child_forgets_its_parent(
    client, alice, db
):
    # Given: dark-mode depends on checkout-v2
    depend(client, alice, "dark-mode", "checkout-v2")
    # When: the parent is archived through the API
    refused = client.delete(flag_path("default", "checkout-v2"), headers=auth(alice))
    # Then: 409 naming the child, and the parent stays live
    assert refused.status_code == 409
    assert "dark-mode" in refused.get_json()["message"]
    assert flag(client, alice, "checkout-v2")["archived"] is False
    # When: the child is archived, its dependency goes with an event
    assert client.delete(flag_path("default", "dark-mode"), headers=auth(alice)).status_code == 202
    assert rows(db) == []
    (event,) = recorded(db, "feature-dependencies-removed", limit=1)
    assert event["featureName"] == "dark-mode"
    # and the parent can be archived now
    assert client.delete(flag_path("default", "checkout-v2"), headers=auth(alice)).status_code == 202


def test_store__delete_flag_clears_both_sides(client, alice, db):
    depend(client, alice, "dark-mode", "checkout-v2")
    with db.write():
        store_dependencies.delete_flag(db, "checkout-v2")
    assert rows(db) == []


def test_add__body_built_from_the_reference_schema__200(client, alice, db):
    body = {**example_of("createDependentFeatureSchema"), "feature": "checkout-v2"}
    assert_reference(body, "createDependentFeatureSchema")
    response = client.post(dependencies_path("dark-mode"), json=body, headers=auth(alice))
    assert response.status_code == 200, response.get_json()
    assert_reference(flag(client, alice, "dark-mode")["dependencies"][0], "dependentFeatureSchema")
