"""Spec 4.4: GET /api/admin/archive/features (deprecated, still served)."""

from __future__ import annotations

import json

import pytest

from flagadmin.seed.documents import demo_files

from helpers import ARCHIVE_AS_IN_VERSION_8, auth

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


# --- the same document on both engines ---------------------------------------------

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
    from flagadmin.seed.documents import load_documents, load_files
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
    assert b'"stale":true' in on_sqlite[0][[json.loads(t)["name"] for t in on_sqlite[0]].index("B-tie")]
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


# --- the stored items (schema version 9) -------------------------------------------


def stored_and_made(db) -> tuple[dict, dict]:
    """Every stored 4.4 item (``features.archived_item``), and every item the database makes
    from the flags as they are now (the view ``archived_feature_json``), by flag name. A live
    flag has none stored."""
    live_with_item = "SELECT count(*) FROM features WHERE archived_at IS NULL AND archived_item IS NOT NULL"
    assert db.value(live_with_item) == 0
    stored = db.all("SELECT name, archived_item AS item FROM features WHERE archived_item IS NOT NULL")
    made = db.all("SELECT name, item FROM archived_feature_json")
    return {r["name"]: bytes(r["item"]) for r in stored}, {r["name"]: bytes(r["item"]) for r in made}


def test_archive__stored_items__in_the_shape_and_key_order_of_the_response_schema(db):
    """The database builds each 4.4 item (``archived_feature_json``, ``flagadmin_archived_item``):
    each stored item is byte for byte what ``ArchivedFeatureSchema`` dumps from it, so the bytes
    sent keep to the schema the OpenAPI document shows, keys in its order."""
    import orjson

    from flagadmin.blueprints.archived_features import ArchivedFeatureSchema

    stored = [
        bytes(item)
        for item in db.column("SELECT archived_item FROM features WHERE archived_item IS NOT NULL")
    ]
    assert len(stored) >= 10
    schema = ArchivedFeatureSchema()
    assert [orjson.dumps(schema.dump(orjson.loads(item))) for item in stored] == stored


def test_archive__stored_items__made_again_by_every_write_to_an_archived_flag(client, alice, db, admin_token):
    """Spec 4.4 from stored items: after each kind of write (through the API, and straight to
    the tables as a seed or a future write path would), the stored items are exactly what the
    view makes, and 4.4 serves them."""
    from flag_helpers import features_path

    seeded = archived_in_seed()[0]["name"]

    def check(present: str | None = None, absent: str | None = None) -> dict:
        stored, made = stored_and_made(db)
        assert stored == made
        assert len(stored) >= len(archived_in_seed())
        served = {f["name"]: f for f in client.get(PATH, headers=auth(admin_token)).get_json()["features"]}
        assert set(served) == set(stored)
        if present is not None:
            assert present in stored
        if absent is not None:
            assert absent not in stored
        return served

    # Given: the demo data, stored as the view makes it
    check(present=seeded)
    # When / Then: a new live flag is not stored; archived, it is
    response = client.post(features_path("default"), json={"name": "kept-1"}, headers=auth(alice))
    assert response.status_code == 201
    check(absent="kept-1")
    assert client.delete(features_path("default") + "/kept-1", headers=auth(alice)).status_code == 202
    assert check(present="kept-1")["kept-1"]["environments"] != []
    # writes straight to an archived flag and to its environments
    for statement in (
        "UPDATE features SET description = 'now \"quoted\"\nand two lines', stale = 1 - stale WHERE name = ?",
        "UPDATE feature_environments SET enabled = 1 - enabled, last_seen_at = '2026-12-01T00:00:00.000Z'"
        " WHERE feature_name = ?",
        "INSERT INTO feature_environments (feature_name, name, enabled) VALUES (?, 'added', 1)",
        "DELETE FROM feature_environments WHERE feature_name = ? AND name = 'added'",
    ):
        with db.write():
            db.run(statement, [seeded])
        check(present=seeded)
    served = check()[seeded]
    assert served["description"] == 'now "quoted"\nand two lines'
    assert [e["name"] for e in served["environments"]] == sorted(e["name"] for e in served["environments"])
    # revived, it leaves; archived again and deleted for good, it leaves too
    assert client.post("/api/admin/archive/revive/kept-1", headers=auth(alice)).status_code == 200
    check(absent="kept-1")
    assert client.delete(features_path("default") + "/kept-1", headers=auth(alice)).status_code == 202
    check(present="kept-1")
    assert client.delete("/api/admin/archive/kept-1", headers=auth(alice)).status_code == 200
    check(absent="kept-1")
    # moved to another project straight in the table, the item moves with it (its key changes)
    moved_to = db.value(
        "SELECT id FROM projects WHERE id <> (SELECT project_id FROM features WHERE name = ?)", [seeded]
    )
    with db.write():
        db.run("UPDATE features SET project_id = ? WHERE name = ?", [moved_to, seeded])
    assert check(present=seeded)[seeded]["project"] == moved_to


def test_ensure_schema__version_8_database__archived_flags_stored_and_4_4_unchanged(
    engine, database, db, client, admin_token, victor
):
    """The real 8 -> 9 upgrade on either engine: a database without the stored items gets the
    column, its triggers, and an item for every archived flag; 4.4 serves the same bytes as
    before, and features_archived_order replaces features_archived."""
    from flagadmin.store import schema

    # Given: the answers of 4.4, then the database taken back to version 8
    before = {who: client.get(PATH, headers=auth(who)).get_data() for who in (admin_token, victor)}
    with db.write():
        for statement in ARCHIVE_AS_IN_VERSION_8[engine]:
            db.run(statement)
        if engine == "postgresql":
            db.run("UPDATE settings SET value = '8' WHERE key = 'schema_version'")
    if engine == "sqlite":
        db.run("PRAGMA user_version = 8")
    # When
    found = schema.ensure_schema(database)
    # Then: every archived flag stored, as the view makes it, and the same answers
    assert found == 8
    stored, made = stored_and_made(db)
    assert stored == made
    assert len(stored) == db.value("SELECT count(*) FROM features WHERE archived_at IS NOT NULL") > 0
    indexes = "sqlite_master WHERE type = 'index' AND" if engine == "sqlite" else "pg_indexes WHERE"
    name = "name" if engine == "sqlite" else "indexname"
    assert db.value(f"SELECT count(*) FROM {indexes} {name} = 'features_archived'") == 0
    assert db.value(f"SELECT count(*) FROM {indexes} {name} = 'features_archived_order'") == 1
    from flagadmin.app import create_app

    fresh = create_app({"DATABASE": database, "TESTING": True}).test_client()
    assert {who: fresh.get(PATH, headers=auth(who)).get_data() for who in (admin_token, victor)} == before
