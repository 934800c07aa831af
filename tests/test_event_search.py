"""``GET /api/admin/search/events`` (Unleash 8.2.0's event search): each filter in the
reference's operator syntax (``IS:value``, ``IS_ANY_OF:a,b``), the dates (``IS:yyyy-MM-dd``,
UTC days, both ends included), the free text, the paging and its ``total``, who sees what, and
a clear 400 for every malformed filter or page, never a 500.

Through HTTP on the demo database, on either engine. The events are written by
``events.record`` at moments the test chooses, as every change records them; every 200 is
checked against the reference's ``eventSearchResponseSchema`` and every answer against the
OpenAPI document.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flagadmin import events

from flag_helpers import assert_reference
from helpers import ManualClock, auth, examples

SEARCH = "/api/admin/search/events"


def record(db, event_type: str, *, at: datetime, actor=events.ADMIN_TOKEN, **fields) -> int:
    """Record one event in a transaction of its own at ``at``, as a change records it; its id."""
    with db.write("test"):
        return events.record(db, event_type, actor, clock=ManualClock(at), **fields)


def record_many(db, specs: list[dict], *, start: datetime, step_s: float) -> list[int]:
    """Record one event per spec (``type`` and ``events.record``'s keywords), ``step_s`` apart
    from ``start``; their ids, oldest first."""
    return [
        record(
            db,
            spec["type"],
            at=start + timedelta(seconds=i * step_s),
            **{k: v for k, v in spec.items() if k != "type"},
        )
        for i, spec in enumerate(specs)
    ]


def log_ids(db, where: str = "1 = 1") -> list[int]:
    """The ids of the events that ``where`` matches, newest first (the log's order)."""
    return db.column(f"SELECT id FROM events WHERE {where} ORDER BY created_at DESC, id DESC")


DAY = datetime(2026, 2, 27, 23, 0, tzinfo=UTC)
ALICE = events.Actor("alice", 2)


@pytest.fixture
def kenji(make_token) -> str:
    """Personal token of kenji (Viewer, Member of payments and growth)."""
    return make_token(user="kenji")


@pytest.fixture
def log(db) -> dict[str, list[int]]:
    """A log of 36 events over three days around the end of February 2026 (a UTC day
    boundary every 12 events), in three projects and of none, by the admin token and alice;
    returns the ids by kind."""
    specs = []
    for i in range(36):
        if i % 6 == 5:
            specs.append({"type": "user-created", "data": {"email": f"User{i}@Example.com"}})
            continue
        specs.append(
            {
                "type": ("feature-created", "feature-updated", "feature-environment-enabled")[i % 3],
                "project": ("mobile", "growth", "payments")[i % 4 % 3],
                "feature_name": f"flag-{i % 5}",
                "environment": "production" if i % 3 == 2 else None,
                "actor": ALICE if i % 2 else events.ADMIN_TOKEN,
                "data": {"name": f"flag-{i % 5}", "note": "50%_off" if i == 7 else "plain"},
                "pre_data": {"name": "Old-Name"} if i == 8 else None,
                "tags": [{"type": "simple", "value": "Team-Blue"}] if i == 9 else None,
            }
        )
    ids = record_many(db, specs, start=DAY, step_s=2 * 3600)
    return {"all": ids}


def search(client, token: str, query: str = "", status: int = 200) -> dict:
    """The search's answer for ``query`` (a query string without ``?``); checks the status,
    the OpenAPI document and, for a 200, the reference's schema."""
    response = client.get(f"{SEARCH}?{query}", headers=auth(token))
    assert response.status_code == status, response.get_data()[:500]
    body = response.get_json()
    if status == 200:
        assert_reference(body, "eventSearchResponseSchema")
    return body


def ids_of(body: dict) -> list[int]:
    return [e["id"] for e in body["events"]]


# --- order, paging, total ---------------------------------------------------------------------


def test_search__no_filter__newest_first_50_and_the_total(client, admin_token, db, log, assert_valid):
    response = client.get(SEARCH, headers=auth(admin_token))
    assert_valid(response, SEARCH)
    body = response.get_json()
    assert ids_of(body) == log_ids(db)[:50]
    assert body["total"] == db.value("SELECT count(*) FROM events")


def test_search__each_event__label_and_markdown_summary(client, admin_token, log):
    event = search(client, admin_token, "type=IS:feature-environment-enabled&limit=1")["events"][0]
    assert event["label"] == "Flag environment enabled"
    assert event["summary"].startswith(f"**{event['createdBy']}**: Flag environment enabled, flag **")
    assert "in environment **production**" in event["summary"]


@pytest.mark.parametrize("limit", [1, 7, 50])
def test_search__pages__make_the_whole_log_in_order(client, admin_token, db, log, limit):
    # Both ways of walking the log (from the newest end and, past the middle, from the oldest)
    expected = log_ids(db)
    got, offset = [], 0
    while offset < len(expected) + limit:
        body = search(client, admin_token, f"limit={limit}&offset={offset}")
        assert body["total"] == len(expected)
        got += ids_of(body)
        offset += limit
    assert got == expected


@settings(max_examples=examples(40), deadline=None, suppress_health_check=list(HealthCheck))
@given(
    offset=st.integers(0, 40),
    limit=st.integers(1, 40),
    who=st.sampled_from(["admin_token", "alice", "victor"]),
)
def test_search__any_page_of_any_caller__the_slice_of_what_she_sees(
    request, client, db, log, offset, limit, who
):
    token = request.getfixturevalue(who)
    everything = search(client, token, "limit=1000")
    body = search(client, token, f"limit={limit}&offset={offset}")
    assert ids_of(body) == ids_of(everything)[offset : offset + limit]
    assert body["total"] == everything["total"] == len(ids_of(everything))


def test_search__offset_past_the_end__no_events_and_the_total(client, admin_token, db, log):
    body = search(client, admin_token, "offset=1000000")
    assert body == {"events": [], "total": db.value("SELECT count(*) FROM events")}


def test_search__limit_1000__accepted(client, admin_token, log):
    assert len(search(client, admin_token, "limit=1000")["events"]) == len(log["all"])


@pytest.mark.parametrize(
    "query",
    [
        "limit=0",
        "limit=1001",
        "limit=-1",
        "limit=abc",
        "limit=1e3",
        "limit=",
        "offset=-1",
        "offset=x",
        "offset=1.5",
    ],
)
def test_search__bad_paging__400_naming_it(client, admin_token, query, assert_valid):
    response = client.get(f"{SEARCH}?{query}", headers=auth(admin_token))
    assert_valid(response, SEARCH)
    assert response.status_code == 400
    assert query.split("=")[0] in response.get_json()["message"]


# --- each filter --------------------------------------------------------------------------------


def test_search__id__is_and_is_any_of(client, admin_token, log):
    a, b = log["all"][3], log["all"][20]
    assert ids_of(search(client, admin_token, f"id=IS:{a}")) == [a]
    assert ids_of(search(client, admin_token, f"id=IS_ANY_OF:{a},{b}")) == [b, a]
    assert search(client, admin_token, "id=IS:99999999999999999999999") == {"events": [], "total": 0}


def test_search__group_id__the_events_of_one_transaction(client, admin_token, db, log):
    with db.write("test"):
        together = [
            events.record(db, "feature-updated", events.ADMIN_TOKEN, project="mobile") for _ in range(3)
        ]
    group = db.value("SELECT group_id FROM events WHERE id = ?", [together[0]])
    body = search(client, admin_token, f"groupId=IS:{group}")
    assert sorted(ids_of(body)) == together
    assert {e["groupId"] for e in body["events"]} == {str(group)}
    other = db.value("SELECT group_id FROM events WHERE id = ?", [log["all"][0]])
    assert search(client, admin_token, f"groupId=IS_ANY_OF:{group},{other}")["total"] == 4


@pytest.mark.parametrize(
    ("parameter", "value", "where"),
    [
        ("feature", "IS:flag-2", "feature_name = 'flag-2'"),
        ("feature", "IS_ANY_OF:flag-2,flag-4", "feature_name IN ('flag-2', 'flag-4')"),
        ("project", "IS:growth", "project = 'growth'"),
        ("project", "IS_ANY_OF:growth,payments", "project IN ('growth', 'payments')"),
        ("type", "IS:feature-updated", "type = 'feature-updated'"),
        ("type", "IS_ANY_OF:feature-updated,user-created", "type IN ('feature-updated', 'user-created')"),
        ("createdBy", "IS:2", "created_by_user_id = 2"),
        ("createdBy", "IS:-42", "created_by_user_id = -42"),
        ("createdBy", "IS_ANY_OF:2,-42", "created_by_user_id IN (2, -42)"),
        ("environment", "IS:production", "environment = 'production'"),
        # IS with several values matches any of them, as the reference reads it
        ("project", "IS:growth,mobile", "project IN ('growth', 'mobile')"),
        # a value that names nothing matches nothing
        ("type", "IS:no-such-type", "1 = 0"),
        ("project", "IS:nope", "1 = 0"),
    ],
)
def test_search__filter__exactly_the_matching_events(client, admin_token, db, log, parameter, value, where):
    body = search(client, admin_token, f"{parameter}={value}&limit=1000")
    assert ids_of(body) == log_ids(db, where)
    assert body["total"] == len(log_ids(db, where))


def test_search__filters_together__all_of_them_hold(client, admin_token, db, log):
    body = search(
        client, admin_token, "project=IS:mobile&type=IS_ANY_OF:feature-created,feature-updated&createdBy=IS:2"
    )
    where = "project = 'mobile' AND type IN ('feature-created', 'feature-updated') AND created_by_user_id = 2"
    assert ids_of(body) == log_ids(db, where)
    assert body["total"] == len(log_ids(db, where)) > 0


def test_search__from_to__utc_days_both_included(client, admin_token, db, log):
    # DAY is 2026-02-27 23:00 UTC; events every two hours
    body = search(client, admin_token, "from=IS:2026-02-28&to=IS:2026-02-28&limit=1000")
    day = log_ids(db, "created_at >= '2026-02-28' AND created_at < '2026-03-01'")
    assert ids_of(body) == day and len(day) == 12
    assert {e["createdAt"][:10] for e in body["events"]} == {"2026-02-28"}
    since = search(client, admin_token, "from=IS:2026-03-01&limit=1000")
    assert ids_of(since) == log_ids(db, "created_at >= '2026-03-01'")
    until = search(client, admin_token, "to=IS:2026-02-27&limit=1000")
    assert ids_of(until) == log_ids(db, "created_at < '2026-02-28'")
    assert search(client, admin_token, "from=IS:2026-03-02&to=IS:2026-03-01")["total"] == 0


@pytest.mark.parametrize("day", ["IS:2024-02-29", "IS:2000-02-29", "IS:9999-12-31", "IS:0001-01-01"])
def test_search__date__every_day_of_the_calendar__accepted(client, admin_token, day):
    search(client, admin_token, f"from={day}&to={day}")


def test_search__query__data_previous_data_or_tags__any_case(client, admin_token, db, log):
    def found(text: str) -> list[int]:
        return ids_of(search(client, admin_token, f"query={text}&limit=1000"))

    assert found("user5@example.com") == [log["all"][5]]  # recorded as User5@Example.com
    assert found("OLD-name") == [log["all"][8]]
    assert found("team-blue") == [log["all"][9]]
    # % and _ are themselves, not patterns
    assert found("50%25_off") == [log["all"][7]]
    assert found("50%25") == [log["all"][7]]
    assert found("5__off") == []
    # empty: no condition
    assert search(client, admin_token, "query=")["total"] == db.value("SELECT count(*) FROM events")


# --- who sees what ------------------------------------------------------------------------------


def test_search__viewer__the_events_of_her_projects_only(client, victor, db, log):
    body = search(client, victor, "limit=1000")
    assert ids_of(body) == log_ids(db, "project = 'mobile'")
    assert body["total"] == len(ids_of(body)) > 0


def test_search__editor__every_project_but_no_event_of_none(client, alice, db, log):
    body = search(client, alice, "limit=1000")
    assert ids_of(body) == log_ids(db, "project IS NOT NULL")
    assert body["total"] == len(ids_of(body))


def test_search__admin__events_of_no_project_too(client, admin_user, db, log):
    body = search(client, admin_user, "type=IS:user-created&limit=1000")
    assert ids_of(body) == log_ids(db, "type = 'user-created'") and body["total"] == 6
    assert search(client, admin_user, "limit=1000")["total"] == db.value("SELECT count(*) FROM events")


def test_search__viewer__a_project_she_does_not_see__403(client, victor, log, assert_valid):
    response = client.get(f"{SEARCH}?project=IS:growth", headers=auth(victor))
    assert_valid(response, SEARCH)
    assert response.status_code == 403
    assert '"growth"' in response.get_json()["message"]


def test_search__viewer__projects_some_of_which_she_sees__those(client, victor, db, log):
    body = search(client, victor, "project=IS_ANY_OF:growth,mobile&limit=1000")
    assert ids_of(body) == log_ids(db, "project = 'mobile'")


def test_search__viewer_with_filters__still_only_her_projects(client, kenji, db, log):
    body = search(client, kenji, "type=IS:feature-updated&limit=1000")
    where = "type = 'feature-updated' AND project IN ('payments', 'growth')"
    assert ids_of(body) == log_ids(db, where)
    assert body["total"] == len(log_ids(db, where)) > 0
    assert search(client, kenji, "type=IS:user-created")["total"] == 0


def test_search__viewer_of_no_project__nothing(client, seed, make_token, log):
    seed({"users": [{"id": 50, "username": "nobody", "email": "nobody@example.com", "rootRole": "Viewer"}]})
    assert search(client, make_token(user="nobody"), "limit=1000") == {"events": [], "total": 0}


# --- malformed filters --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ("type=IS_NOT:feature-created", "IS_NOT"),
        ("type=is:feature-created", "type"),
        ("type=feature-created", "type"),
        ("type=IS:", "type"),
        ("type=IS_ANY_OF:a,,b", "type"),
        ("type=IS_ANY_OF:a,", "type"),
        ("project=INCLUDE:mobile", "INCLUDE"),
        ("id=IS:abc", "id"),
        ("id=IS:-1", "id"),
        ("id=IS:1.5", "id"),
        ("groupId=IS:01HQVX5K8P9EXAMPLE123456", "groupId"),
        ("createdBy=IS:alice", "createdBy"),
        ("from=IS:2024-02-30", "from"),
        ("from=IS:2023-02-29", "from"),
        ("from=IS:2024-13-01", "from"),
        ("from=IS:2024/01/01", "from"),
        ("from=2024-01-01", "from"),
        ("to=IS_ANY_OF:2024-01-01", "to"),
        ("to=IS:2024-1-1", "to"),
        ("to=IS:yesterday", "to"),
        ("feature=IS:a%00b", "feature"),
        ("query=" + "x" * 201, "query"),
        ("sortOrder=asc", "sortOrder"),
        ("type=IS:a&type=IS:b", "type"),
    ],
)
def test_search__malformed__400_naming_the_parameter(client, admin_token, query, named, assert_valid):
    response = client.get(f"{SEARCH}?{query}", headers=auth(admin_token))
    assert_valid(response, SEARCH)
    assert response.status_code == 400, response.get_data()[:300]
    body = response.get_json()
    assert body["name"] == "BadDataError"
    assert named in body["message"]


def test_search__several_malformed__each_named(client, admin_token):
    body = search(client, admin_token, "type=IS_NOT:x&from=IS:2024-02-30&id=IS:x", status=400)
    assert [d["message"].split(":")[0] for d in body["details"]] == ["id", "type", "from"]


def test_search__too_many_values__400(client, admin_token):
    values = ",".join(str(i) for i in range(1, 1002))
    body = search(client, admin_token, f"id=IS_ANY_OF:{values}", status=400)
    assert "1000" in body["message"]
    assert search(client, admin_token, f"id=IS_ANY_OF:{values.rsplit(',', 1)[0]}")["total"] == 0


def test_search__nothing_a_hostile_value_does__500(client, admin_token, log):
    # values of every kind of character, long, and oversize numbers: an answer, never a 500
    for query in (
        "feature=IS:" + "%C3%A9" * 500,
        "project=IS_ANY_OF:" + ",".join(["%27%22%5C"] * 50),
        "query=%25%5F%5C%27",
        "createdBy=IS:-99999999999999999999999",
        "groupId=IS:0",
        "environment=IS:%F0%9F%98%80",
    ):
        response = client.get(f"{SEARCH}?{query}", headers=auth(admin_token))
        assert response.status_code in (200, 400), (query, response.get_data()[:300])


def test_search__record__a_written_event_is_found_at_once(client, admin_token, db, log):
    new = record(db, "feature-archived", project="growth", feature_name="flag-1", at=DAY + timedelta(days=5))
    assert ids_of(search(client, admin_token, "limit=1"))[0] == new
