"""Spec 4.4: GET /api/admin/archive/features (deprecated, still served)."""

from __future__ import annotations

import json

import pytest

from flagadmin.seed_documents import demo_files

from helpers import auth

PATH = "/api/admin/archive/features"
FIELDS = {
    "name",
    "type",
    "description",
    "project",
    "stale",
    "impressionData",
    "createdAt",
    "archivedAt",
    "lastSeenAt",
    "environments",
}


def archived_in_seed(projects: set[str] | None = None) -> list[dict]:
    data = json.loads(demo_files()[0].read_text())
    return [
        f
        for f in data["features"]
        if f["archivedAt"] is not None and (projects is None or f["project"] in projects)
    ]


def test_archive__admin_token__every_archived_flag_newest_first(client, admin_token, assert_valid):
    response = client.get(PATH, headers=auth(admin_token))
    assert response.status_code == 200
    assert_valid(response, PATH)
    body = response.get_json()
    assert body["version"] == 2
    features = body["features"]
    expected = archived_in_seed()
    assert len(expected) >= 10
    assert {f["name"] for f in features} == {f["name"] for f in expected}
    assert [f["archivedAt"] for f in features] == sorted((f["archivedAt"] for f in features), reverse=True)
    assert all(set(f) == FIELDS for f in features)


def test_archive__record__carries_seeded_values(client, admin_token):
    seeded = {f["name"]: f for f in archived_in_seed()}
    for served in client.get(PATH, headers=auth(admin_token)).get_json()["features"]:
        source = seeded[served["name"]]
        assert served["project"] == source["project"]
        assert served["type"] == source["type"]
        assert served["stale"] == source.get("stale", False)
        assert served["description"] == (source.get("description") or None)
        assert sorted(e["name"] for e in served["environments"]) == sorted(
            e["name"] for e in source.get("environments", [])
        )
        assert all(set(e) == {"name", "lastSeenAt", "enabled"} for e in served["environments"])


def test_archive__viewer__only_projects_with_a_role(client, victor):
    features = client.get(PATH, headers=auth(victor)).get_json()["features"]
    assert {f["name"] for f in features} == {f["name"] for f in archived_in_seed({"mobile"})}


@pytest.mark.parametrize("who", ["alice", "admin_user"])
def test_archive__editor_or_admin__sees_all_projects(client, request, who):
    features = client.get(PATH, headers=auth(request.getfixturevalue(who))).get_json()["features"]
    assert len(features) == len(archived_in_seed())


def test_archive__operation__deprecated_in_openapi(openapi_document):
    assert openapi_document["paths"][PATH]["get"]["deprecated"] is True


def test_archive__no_token__401(client, assert_valid):
    response = client.get(PATH)
    assert response.status_code == 401
    assert_valid(response, PATH)
