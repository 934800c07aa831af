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


# --- the same document on both engines (issue 12) ---------------------------------------------

#: Archived flags whose JSON is easy to get wrong: names that order differently bytewise and
#: by a language's collation, archived at the same moment (ties by name); a description with
#: every character JSON escapes and some it does not; environments out of order, on and off,
#: seen and never seen; no environment at all.
AWKWARD = {
    "projects": [{"id": "awkward", "name": "Awkward", "members": [{"userId": 3, "role": "Member"}]}],
    "features": [
        {
            "name": name,
            "project": "awkward",
            "type": "kill-switch",
            "description": description,
            "stale": name.startswith("B"),
            "impressionData": name.startswith("_"),
            "createdAt": "2026-01-01T00:00:00.000Z",
            "archivedAt": "2026-12-24T10:00:00.000Z",
            "lastSeenAt": "2026-12-23T08:00:00.500Z" if name == "a-tie" else None,
            "environments": environments,
        }
        for name, description, environments in [
            ("b-tie", 'say "hi" \\ here\nand\tthere\x01\x1f\x7f é 😀 \u2028 </script>', []),
            ("B-tie", None, [{"name": "production", "enabled": True}]),
            (
                "a-tie",
                "",
                [
                    {"name": "zz-last", "enabled": True, "lastSeenAt": "2026-12-20T00:00:00.000Z"},
                    {"name": "Prod", "enabled": False},
                    {"name": "development", "enabled": True},
                    {"name": "_under", "enabled": False},
                ],
            ),
            ("_tie", "plain", [{"name": "QA", "enabled": True}]),
        ]
    ],
}


def test_archive__same_data_on_sqlite_and_postgresql__byte_for_byte_the_same_body(
    postgres_server, database, db, seed, tmp_path, make_app
):
    # Given: the demo data and the awkward flags in a SQLite file and in PostgreSQL
    from flagadmin.app import create_app
    from flagadmin.seed_documents import load_documents, load_files
    from flagadmin.store import archived_features, connect, schema, tokens

    sqlite_path = str(tmp_path / "same.db")
    schema.ensure_schema(sqlite_path)
    with connect(sqlite_path) as sqlite_conn:
        load_files(sqlite_conn, demo_files())
        load_documents(sqlite_conn, [AWKWARD])
    seed(AWKWARD)

    def answers(target: str, conn) -> tuple[list[str], list[str], bytes]:
        everyone = list(archived_features.archived_features_json(conn, None, True))
        victor = list(archived_features.archived_features_json(conn, 3, False))
        token = tokens.new_admin_token()
        tokens.insert_token(conn, token, kind="admin", name="same")
        app = create_app({"DATABASE": target, "TESTING": True})
        response = app.test_client().get(PATH, headers=auth(token))
        assert response.status_code == 200
        return everyone, victor, response.get_data()

    # When
    with connect(sqlite_path) as sqlite_conn:
        on_sqlite = answers(sqlite_path, sqlite_conn)
    on_postgresql = answers(database, db)

    # Then: the same bytes, flag by flag and as a whole
    assert on_postgresql[0] == on_sqlite[0]
    assert on_postgresql[1] == on_sqlite[1]
    assert on_postgresql[2] == on_sqlite[2]
    # and what they are is what spec 2.6 and the rules of order say
    served = json.loads(on_sqlite[2])["features"]
    ties = [f["name"] for f in served if f["archivedAt"] == "2026-12-24T10:00:00.000Z"]
    assert ties == ["B-tie", "_tie", "a-tie", "b-tie"]
    a_tie = next(f for f in served if f["name"] == "a-tie")
    assert [e["name"] for e in a_tie["environments"]] == ["Prod", "_under", "development", "zz-last"]
    assert a_tie["description"] is None and a_tie["lastSeenAt"] == "2026-12-23T08:00:00.500Z"
    b_tie = next(f for f in served if f["name"] == "b-tie")
    assert b_tie["description"] == AWKWARD["features"][0]["description"] and b_tie["environments"] == []
    assert '"stale":true' in on_sqlite[0][[json.loads(t)["name"] for t in on_sqlite[0]].index("B-tie")]
    assert {json.loads(t)["name"] for t in on_sqlite[1]} >= {"B-tie", "_tie", "a-tie", "b-tie"}


def test_archive__bodies_abandoned_mid_stream__connections_come_back_and_the_next_answer_is_whole(
    make_app, seed, admin_token
):
    # Given: more archived flags than one chunk of the body holds, and a pool of 2 connections
    from flagadmin.blueprints.archived_features import ROWS_PER_CHUNK

    many = ROWS_PER_CHUNK + 100
    seed(
        {
            "features": [
                {
                    "name": f"bulk-{n:04d}",
                    "project": "default",
                    "type": "release",
                    "createdAt": "2026-01-01T00:00:00.000Z",
                    "archivedAt": "2026-02-01T00:00:00.000Z",
                    "environments": [{"name": "development", "enabled": n % 2 == 0}],
                }
                for n in range(many)
            ]
        }
    )
    client = make_app(config={"POOL_SIZE": 2, "ARCHIVE_KEEP_WHOLE_FLAGS": 0}).test_client()
    # When: five clients go away after the first flags of the body
    for _ in range(5):
        response = client.get(PATH, headers=auth(admin_token), buffered=False)
        chunks = iter(response.response)
        assert next(chunks).startswith(b'{"version":2,"features":[')
        assert next(chunks).startswith(b'{"name":')
        response.close()
    # Then: the next request is answered, whole
    response = client.get(PATH, headers=auth(admin_token))
    assert response.status_code == 200
    names = [f["name"] for f in response.get_json()["features"]]
    assert len([n for n in names if n.startswith("bulk-")]) == many
