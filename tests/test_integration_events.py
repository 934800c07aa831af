"""Spec 4.1: GET /api/admin/addons/{id}/events."""

from __future__ import annotations

import orjson
import pytest

from flagadmin.seed.documents import demo_files
from flagadmin.store import integration_events

from helpers import ARCHIVE_AS_IN_VERSION_8, LOG_AS_IN_VERSION_6, LOG_AS_IN_VERSION_7, auth

PATH = "/api/admin/addons/{id}/events"


def events(client, token, query="", integration=1):
    return client.get(f"/api/admin/addons/{integration}/events{query}", headers=auth(token))


def test_events__default_page__fifty_newest_first(client, admin_token, assert_valid):
    # When
    response = events(client, admin_token)
    # Then
    assert response.status_code == 200
    assert_valid(response, PATH)
    items = response.get_json()["integrationEvents"]
    assert len(items) == 50
    ids = [int(item["id"]) for item in items]
    assert ids == sorted(ids, reverse=True)
    assert {item["integrationId"] for item in items} == {1}
    assert all(isinstance(item["id"], str) and item["id"].isdigit() for item in items)


def test_events__limit_and_offset__pages_tile_the_whole_log(client, admin_token):
    # Given: the whole log of integration 1 (79 events in the demo dataset)
    whole = events(client, admin_token, "?limit=1000").get_json()["integrationEvents"]
    assert len(whole) == 79
    # When: read in pages of 30
    pages = [
        events(client, admin_token, f"?limit=30&offset={offset}").get_json()["integrationEvents"]
        for offset in (0, 30, 60, 90)
    ]
    # Then
    assert [len(p) for p in pages] == [30, 30, 19, 0]
    assert [e["id"] for p in pages for e in p] == [e["id"] for e in whole]


def test_events__small_page__starts_at_offset(client, admin_token):
    whole = events(client, admin_token).get_json()["integrationEvents"]
    page = events(client, admin_token, "?limit=2&offset=1").get_json()["integrationEvents"]
    assert [e["id"] for e in page] == [e["id"] for e in whole[1:3]]


def test_events__event_object__kept_exactly_as_seeded(client, admin_token, db):
    # Given: the newest event of integration 2 in the demo seed document, and its stored item
    (demo,) = demo_files()
    seeded = [e for e in orjson.loads(demo.read_bytes())["integrationEvents"] if e["integrationId"] == 2][-1]
    stored = db.value("SELECT item FROM integration_events WHERE integration_id = 2 ORDER BY id DESC LIMIT 1")
    # When
    response = events(client, admin_token, "?limit=1", integration=2)
    item = response.get_json()["integrationEvents"][0]
    # Then: the page is the stored item, byte for byte, and the item the seeded event
    assert response.data == b'{"integrationEvents":[' + bytes(stored) + b"]}"
    assert item["event"] == seeded["event"]
    assert item["details"] == seeded["details"]
    assert (item["createdAt"], item["stateDetails"]) == (seeded["createdAt"], seeded["stateDetails"])
    assert item["state"] == "successWithErrors" == seeded["state"]
    assert orjson.loads(stored)["id"] == item["id"]


def test_events__all_three_states__in_integrations_one_and_two(client, admin_token):
    states = set()
    for integration in (1, 2):
        page = events(client, admin_token, "?limit=1000", integration=integration).get_json()
        states |= {e["state"] for e in page["integrationEvents"]}
    assert states == {"success", "failed", "successWithErrors"}


@pytest.mark.parametrize(
    ("query", "parameter"),
    [
        ("?limit=0", "limit"),
        ("?limit=1001", "limit"),
        ("?limit=abc", "limit"),
        ("?limit=", "limit"),
        ("?limit=1e3", "limit"),
        ("?limit=0x10", "limit"),
        ("?limit=-1", "limit"),
        ("?limit=+5", "limit"),
        ("?limit=1_0", "limit"),
        ("?limit=%201", "limit"),
        ("?offset=-1", "offset"),
        ("?offset=", "offset"),
        ("?offset=1.5", "offset"),
        ("?offset=" + "9" * 30, "offset"),
        ("?limit=1&limit=2", "limit"),
        ("?limt=5", "limt"),
    ],
)
def test_events__bad_parameter__400_naming_it(client, admin_token, assert_valid, query, parameter):
    response = events(client, admin_token, query)
    assert response.status_code == 400
    assert_valid(response, PATH)
    body = response.get_json()
    assert body["name"] == "BadDataError"
    assert parameter in body["message"]
    assert body["details"] and all(parameter in d["message"] for d in body["details"])


@pytest.mark.parametrize(
    ("query", "said"),
    [("limit=\xff", "limit"), ("offset=1\xc3", "offset"), ("\xff=1", "is unknown here")],
    ids=["raw-ff-value", "cut-utf8-value", "raw-ff-name"],
)
def test_events__raw_bytes_not_utf8_in_the_query__400_naming_the_parameter(
    client, admin_token, assert_valid, query, said
):
    """Waitress refuses such a request line itself (tests/test_hostile.py); another WSGI server
    may pass the bytes on (PEP 3333: one character per byte). They stay percent-encoded in
    the parameter's text, which then fails validation: 400, not a failed decoding's 500."""
    response = client.get(
        PATH.format(id=1), headers=auth(admin_token), environ_overrides={"QUERY_STRING": query}
    )
    assert response.status_code == 400
    assert_valid(response, PATH)
    assert response.get_json()["name"] == "BadDataError"
    assert said in response.get_json()["message"]


@pytest.mark.parametrize("integration", ["999", "abc", "1.5", "-1", "01x", "%00", "1%20OR%201=1", "..%2F1"])
def test_events__unknown_integration__404(client, admin_token, assert_valid, integration):
    response = client.get(f"/api/admin/addons/{integration}/events", headers=auth(admin_token))
    assert response.status_code == 404
    assert_valid(response, PATH)
    assert response.get_json()["name"] == "NotFoundError"


def test_events__admin_user_token__allowed(client, admin_user):
    assert events(client, admin_user).status_code == 200


@pytest.mark.parametrize("who", ["alice", "victor"])
def test_events__editor_or_viewer__403_naming_admin_permission(client, request, assert_valid, who):
    response = events(client, request.getfixturevalue(who))
    assert response.status_code == 403
    assert_valid(response, PATH)
    body = response.get_json()
    assert body["name"] == "NoAccessError"
    assert '"ADMIN"' in body["message"]


def test_events__no_token__401(client, assert_valid):
    response = client.get("/api/admin/addons/1/events")
    assert response.status_code == 401
    assert_valid(response, PATH)
    assert response.get_json()["name"] == "AuthenticationRequired"


def test_events__new_event_loaded__first_page_shows_it(client, seed, admin_token):
    """Pages are kept by log head: an appended event moves the head, so no stale page."""
    # Given: the first page, read (and kept) once
    before = events(client, admin_token, "?limit=5").get_json()["integrationEvents"]
    # When: one more event is loaded for integration 1
    event = {
        "id": 999,
        "createdAt": "2026-11-22T01:00:00.000Z",
        "type": "feature-created",
        "createdBy": "admin",
    }
    seed(
        {
            "integrationEvents": [
                {
                    "integrationId": 1,
                    "createdAt": "2026-11-22T01:00:01.000Z",
                    "state": "success",
                    "stateDetails": "ok",
                    "event": event,
                    "details": {},
                }
            ]
        }
    )
    after = events(client, admin_token, "?limit=5").get_json()["integrationEvents"]
    # Then: the new event leads, and the rest moved down by one
    assert after[0]["event"] == event
    assert [e["id"] for e in after[1:]] == [e["id"] for e in before[:4]]


@pytest.mark.parametrize("integration", [2**63 - 1, 10**18, 2**62 + 7])
def test_events__integration_id_up_to_2_to_the_63__served(
    client, seed, admin_token, assert_valid, integration
):
    """The seed accepts integration ids up to 2^63-1; 4.1 serves them (19 digits)."""
    # Given: an integration with a 19-digit id and one event
    seed(
        {
            "integrations": [{"id": integration, "provider": "webhook"}],
            "integrationEvents": [
                {
                    "integrationId": integration,
                    "createdAt": "2026-11-22T01:00:01.000Z",
                    "state": "failed",
                    "stateDetails": "Webhook request failed with status code: 500.",
                    "event": {
                        "id": 5,
                        "createdAt": "2026-11-22T01:00:00Z",
                        "type": "feature-created",
                        "createdBy": "a",
                    },
                    "details": {},
                }
            ],
        }
    )
    # When
    response = events(client, admin_token, integration=integration)
    # Then
    assert response.status_code == 200
    assert_valid(response, PATH)
    assert [e["integrationId"] for e in response.get_json()["integrationEvents"]] == [integration]
    assert events(client, admin_token, integration=2**63).status_code == 404


def test_page_query__deep_offset__one_index_seek_on_either_engine(db):
    """A page at any offset is one seek, read backwards, with no sort and no scan:
    on PostgreSQL of the ``(integration_id, seq)`` index; on SQLite (schema 8) of the
    table itself, clustered by log, as one range of its rowid ``log_key``."""
    # Given: integration 1 with a long log, and the planner's statistics up to date
    entry = integration_events.Entry(1, "2026-11-22T02:00:00.000Z", "success", "ok", '{"id":1}', "{}")
    with db.write():
        integration_events.append_many(db, [entry] * 5000)
    db.run("ANALYZE integration_events")
    top = integration_events.head(db, 1).head
    # When: the page at offset 4,000 is read, its statement recorded, then explained
    sent: list[str] = []
    db.trace(sent.append)
    page = integration_events.page(db, 1, top, 50, 4000)
    db.trace(None)
    (statement,) = sent
    if db.dialect == "postgresql":
        plan = "\n".join(db.values(f"EXPLAIN {statement}"))
        # Then
        assert "Index Scan Backward using integration_events_integration_id_seq_key" in plan, plan
        assert "seq <=" in plan.split("Index Cond:")[1], plan
        assert "Seq Scan" not in plan and "Sort" not in plan, plan
    else:
        plan = "\n".join(row["detail"] for row in db.all(f"EXPLAIN QUERY PLAN {statement}"))
        # Then
        assert "SEARCH integration_events USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)" in plan, plan
        assert "TEMP B-TREE" not in plan, plan
    ids = [int(orjson.loads(item)["id"]) for item in page]
    assert ids == sorted(ids, reverse=True)
    assert len(page) == 50


#: The page query of schema version 6, which built each item by concatenation on every request.
VERSION_6_PAGE = {
    "sqlite": (
        """SELECT CAST('{"id":"' || id || '","integrationId":' || integration_id"""
        """ || ',"createdAt":"' || created_at || '","state":' || json_quote(state)"""
        """ || ',"stateDetails":' || json_quote(state_details) || ',"event":' || event"""
        """ || ',"details":' || details || '}' AS BLOB)"""
        " FROM integration_events WHERE integration_id = ? AND seq <= ? ORDER BY seq DESC LIMIT ?"
    ),
    "postgresql": (
        """SELECT convert_to('{"id":"' || id || '","integrationId":' || integration_id"""
        """ || ',"createdAt":"' || created_at || '","state":' || to_json(state)::text"""
        """ || ',"stateDetails":' || to_json(state_details)::text || ',"event":' || event"""
        """ || ',"details":' || details || '}', 'UTF8')"""
        " FROM integration_events WHERE integration_id = ? AND seq <= ? ORDER BY seq DESC LIMIT ?"
    ),
}


def test_upgrade_from_6__every_page_keeps_its_bytes__items_stored(db, database, client, admin_token):
    """The real 6 -> 7 upgrade, on either engine: the log's rows get their 4.1 item stored in
    its wire bytes, made by the concatenation that version 6's page query ran on every request,
    so each page is the same bytes before and after; event, details and state_details go, and
    rows appended afterwards carry their item too."""
    from flagadmin.store import schema as store_schema

    # Given: the demo log, with a row whose free text needs JSON quoting, as version 6 kept it
    with db.write():
        integration_events.append(
            db,
            2,
            created_at="2026-11-24T10:00:00.000Z",
            state="failed",
            state_details='HTTP 500: "oops"\nline two \\ \u00e9\u4e2d\u2028',
            event='{"id":7,"type":"feature-created"}',
            details='{"status":500}',
        )
        for statement in LOG_AS_IN_VERSION_6[db.dialect] + ARCHIVE_AS_IN_VERSION_8[db.dialect]:
            db.run(statement)
        if db.dialect == "sqlite":
            db.run("PRAGMA user_version = 6")
        else:
            db.run("UPDATE settings SET value = '6' WHERE key = 'schema_version'")
    bounds = {n: integration_events.head(db, n) for n in (1, 2)}
    before = {
        (n, offset): b",".join(
            bytes(i) for i in db.column(VERSION_6_PAGE[db.dialect], [n, b.head - offset, 20])
        )
        for n, b in bounds.items()
        for offset in (0, 20, 40)
    }
    # When
    assert store_schema.ensure_schema(database) == 6
    # Then
    after = {
        (n, offset): b",".join(integration_events.page(db, n, b.head, 20, offset))
        for n, b in bounds.items()
        for offset in (0, 20, 40)
    }
    assert after == before
    assert all(after.values())
    newest = orjson.loads(integration_events.page(db, 2, bounds[2].head, 1, 0)[0])
    assert newest["stateDetails"] == 'HTTP 500: "oops"\nline two \\ \u00e9\u4e2d\u2028'
    columns = (
        [r["name"] for r in db.all("SELECT name FROM pragma_table_info('integration_events')")]
        if db.dialect == "sqlite"
        else list(
            db.values(
                "SELECT column_name FROM information_schema.columns"
                " WHERE table_name = 'integration_events' ORDER BY ordinal_position"
            )
        )
    )
    clustered = ["log_key"] if db.dialect == "sqlite" else []  # schema 8, SQLite's clustered log
    assert columns == [*clustered, "id", "integration_id", "seq", "created_at", "state", "item"]
    with db.write():
        item = integration_events.append(
            db,
            1,
            created_at="2026-11-24T11:00:00.000Z",
            state="success",
            state_details="ok",
            event="{}",
            details="{}",
        )
    assert events(client, admin_token, "?limit=1").data == b'{"integrationEvents":[' + item + b"]}"


def test_append__free_texts_need_quoting__item_is_json_of_the_values(db, client, admin_token):
    """An item is made once, when its row is appended (spec 2.2): quotes, backslashes, control
    characters and non-ASCII text in ``stateDetails`` come out as JSON of the same string, and
    ``event`` and ``details`` exactly as recorded."""
    # Given
    text = 'say "hi"\\ \t\r\n\x01 \u00e9\u4e2d\U0001f600'
    with db.write():
        item = integration_events.append(
            db,
            1,
            created_at="2026-11-24T12:00:00.000Z",
            state="successWithErrors",
            state_details=text,
            event=b'{"id":9,"type":"feature-updated","data":{"k":"\\u00e9"}}',
            details=b'{"body":"x"}',
        )
    # When
    response = events(client, admin_token, "?limit=1")
    # Then
    assert response.data == b'{"integrationEvents":[' + item + b"]}"
    (served,) = response.get_json()["integrationEvents"]
    assert served["stateDetails"] == text
    assert served["state"] == "successWithErrors"
    assert b'"event":{"id":9,"type":"feature-updated","data":{"k":"\\u00e9"}}' in item
    assert served["details"] == {"body": "x"}


def add_integration(db, integration_id: int) -> None:
    """A webhook configuration with id ``integration_id`` and no log, as a seed may give it."""
    with db.write("integrations"):
        db.run(
            "INSERT INTO integrations (id, provider, description, enabled, events, projects, environments,"
            " parameters) VALUES (?, 'webhook', 'test', 1, '[]', '[]', '[]', '{}')",
            [integration_id],
        )


def append_rows(db, integration_id: int, n: int) -> list[bytes]:
    entry = integration_events.Entry(integration_id, "2026-11-25T01:00:00.000Z", "success", "ok", "{}", "{}")
    with db.write("integration_events"):
        return integration_events.append_many(db, [entry] * n)


def test_log__integration_id_of_64_bits__paged_and_deleted_whole(db, client, admin_token):
    """Schema 8: the log is clustered by a small log number, not by the integration's
    id, so a configuration whose id is the largest 64-bit value (a seed may give any id) has a
    log like any other: appended, paged newest first at any offset, deleted with its
    configuration."""
    # Given
    big = 2**63 - 1
    add_integration(db, big)
    items = append_rows(db, big, 120)
    # When
    first = events(client, admin_token, "?limit=50", integration=big)
    deep = events(client, admin_token, "?limit=50&offset=100", integration=big)
    # Then
    assert first.status_code == deep.status_code == 200
    assert first.data == b'{"integrationEvents":[' + b",".join(reversed(items[-50:])) + b"]}"
    assert deep.data == b'{"integrationEvents":[' + b",".join(reversed(items[:20])) + b"]}"
    assert events(client, admin_token, integration=1).get_json()["integrationEvents"][0]["integrationId"] == 1
    # and deleting the configuration deletes its log (and frees its log number on SQLite)
    assert client.delete(f"/api/admin/addons/{big}", headers=auth(admin_token)).status_code in (200, 202, 204)
    assert db.value("SELECT count(*) FROM integration_events WHERE integration_id = ?", [big]) == 0
    if db.dialect == "sqlite":
        assert db.value("SELECT count(*) FROM integration_logs WHERE integration_id = ?", [big]) == 0


def test_log_numbers__largest_taken__lowest_free_one_given(db_path, db, client, admin_token):
    """SQLite, schema 8: log numbers go up by one, and once the largest (2^23 - 1) is taken, a
    new log gets the lowest free number; its rows and pages are its own."""
    # Given: the demo's logs (1 and 2), and a log holding the largest number
    add_integration(db, 30)
    add_integration(db, 31)
    with db.write("integration_events"):
        db.run(
            "INSERT INTO integration_logs (integration_id, log_no) VALUES (30, ?)",
            [integration_events.MAX_LOG_NO],
        )
    taken = set(db.values("SELECT log_no FROM integration_logs"))
    # When: integration 31 logs its first rows
    items = append_rows(db, 31, 3)
    # Then
    log_no = db.value("SELECT log_no FROM integration_logs WHERE integration_id = 31")
    assert log_no == min(set(range(1, 10)) - taken)
    assert db.value("SELECT min(log_key) FROM integration_events WHERE integration_id = 31") == (
        log_no * integration_events.LOG_KEY_SPAN + 1
    )
    assert events(client, admin_token, integration=31).data == (
        b'{"integrationEvents":[' + b",".join(reversed(items)) + b"]}"
    )
    assert append_rows(db, 999, 1) == []  # no such configuration: no row, no log number
    assert db.value("SELECT count(*) FROM integration_logs WHERE integration_id = 999") == 0


def test_upgrade_from_7__log_clustered_by_integration__every_page_keeps_its_bytes(db_path, db, database):
    """The real 7 -> 8 upgrade (SQLite; on PostgreSQL it changes nothing): the log is built
    again with each integration's rows together in seq order (rowid ``log_key``), every page
    is the same bytes before and after, and appends go on from each log's head."""
    from flagadmin.store import schema as store_schema

    # Given: the demo log interleaved with a third integration's, as version 7 kept it
    add_integration(db, 7)
    for _ in range(3):
        append_rows(db, 7, 30)
        append_rows(db, 1, 10)
    with db.write():
        for statement in LOG_AS_IN_VERSION_7 + ARCHIVE_AS_IN_VERSION_8["sqlite"]:
            db.run(statement)
        db.run("PRAGMA user_version = 7")
    bounds = {n: integration_events.head(db, n) for n in (1, 2, 7)}
    version_7_page = (
        "SELECT item FROM integration_events WHERE integration_id = ? AND seq <= ? ORDER BY seq DESC LIMIT ?"
    )
    before = {
        (n, offset): db.column(version_7_page, [n, b.head - offset, 25])
        for n, b in bounds.items()
        for offset in (0, 25, 60)
    }
    # When
    assert store_schema.ensure_schema(database) == 7
    # Then
    after = {
        (n, offset): integration_events.page(db, n, b.head, 25, offset)
        for n, b in bounds.items()
        for offset in (0, 25, 60)
    }
    assert after == before
    assert all(after[(n, 0)] for n in bounds) and after[(1, 60)] and after[(7, 60)]
    numbers = {
        r["integration_id"]: r["log_no"]
        for r in db.all("SELECT integration_id, log_no FROM integration_logs")
    }
    logged = set(db.values("SELECT DISTINCT integration_id FROM integration_events"))
    assert set(numbers) == logged and {1, 2, 7} <= logged
    assert sorted(numbers.values()) == list(range(1, len(numbers) + 1))
    rows = db.all("SELECT log_key, integration_id, seq FROM integration_events ORDER BY log_key")
    assert [(r["integration_id"], r["seq"]) for r in rows] == sorted(
        (r["integration_id"], r["seq"]) for r in rows
    )
    assert all(
        r["log_key"] == numbers[r["integration_id"]] * integration_events.LOG_KEY_SPAN + r["seq"]
        for r in rows
    )
    appended = append_rows(db, 7, 1)
    assert orjson.loads(appended[0])["id"] == str(db.value("SELECT max(id) FROM integration_events"))
    assert db.value("SELECT max(seq) FROM integration_events WHERE integration_id = 7") == bounds[7].head + 1
