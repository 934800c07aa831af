"""Spec 4.2: GET /api/admin/personal-dashboard."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal

import pytest

from flagadmin.seed.documents import demo_files
from flagadmin.store import personal_dashboard
from flagadmin.timestamps import format_rfc3339

from helpers import auth, statements_of

PATH = "/api/admin/personal-dashboard"
LIFETIME_DAYS = {"release": 40, "experiment": 40, "operational": 7}


def demo() -> dict:
    return json.loads(demo_files()[0].read_text())


def expected_dashboard(username: str) -> dict:
    """The dashboard computed straight from the demo seed document, independently of SQL."""
    data = demo()
    users = {u["id"]: u for u in data["users"]}
    me = next(u for u in data["users"] if u["username"] == username)
    now = datetime.now(UTC)
    live = [f for f in data["features"] if f["archivedAt"] is None]
    favorites = {f["feature"] for f in data["favorites"] if f["userId"] == me["id"]}
    mine = [f for f in live if f["createdByUserId"] == me["id"] or f["name"] in favorites]
    mine.sort(key=lambda f: f["name"])
    mine.sort(key=lambda f: datetime.fromisoformat(f["createdAt"]), reverse=True)

    def unhealthy(f):
        days = LIFETIME_DAYS.get(f["type"])
        old = days is not None and now - datetime.fromisoformat(f["createdAt"]) >= timedelta(days=days)
        return f["stale"] or old

    projects = []
    for p in data["projects"]:
        if any(m["userId"] == me["id"] for m in p["members"]):
            flags = [f for f in live if f["project"] == p["id"]]
            bad = sum(1 for f in flags if unhealthy(f))
            percent = Decimal(100 * bad) / len(flags) if flags else Decimal(0)
            projects.append(
                {
                    "id": p["id"],
                    "name": p["name"],
                    "health": 100 - int(percent.quantize(Decimal(1), rounding=ROUND_HALF_UP)),
                    "memberCount": len({m["userId"] for m in p["members"]}),
                    "featureCount": len(flags),
                }
            )
    projects.sort(key=lambda p: (p["name"], p["id"]))
    sees_all = me["rootRole"] in ("Admin", "Editor")
    owner_ids = {
        m["userId"]
        for p in data["projects"]
        if sees_all or any(m["userId"] == me["id"] for m in p["members"])
        for m in p["members"]
        if m["role"] == "Owner"
    }
    owners = [
        {
            "ownerType": "user",
            "name": users[i].get("name") or users[i]["username"],
            "imageUrl": users[i].get("imageUrl"),
            "email": users[i].get("email"),
        }
        for i in sorted(owner_ids)
    ]
    owners.sort(key=lambda o: o["name"])
    admins = [
        {
            k: v
            for k, v in {
                "id": u["id"],
                "name": u.get("name"),
                "username": u["username"],
                "imageUrl": u.get("imageUrl"),
                "email": u.get("email"),
            }.items()
            if v is not None
        }
        for u in sorted(data["users"], key=lambda u: u["id"])
        if u["rootRole"] == "Admin"
    ]
    return {
        "admins": admins,
        "projectOwners": owners,
        "projects": projects,
        "flags": [{"name": f["name"], "project": f["project"], "type": f["type"]} for f in mine],
    }


@pytest.mark.parametrize("username", ["alice", "victor", "admin", "bob", "sam"])
def test_dashboard__demo_users__match_the_seed(client, make_token, assert_valid, username):
    # Given
    token = make_token(user=username)
    # When
    response = client.get(PATH, headers=auth(token))
    # Then
    assert response.status_code == 200
    assert_valid(response, PATH)
    assert response.get_json() == expected_dashboard(username)


def test_dashboard__alice__her_flags_live_only_each_once(client, alice):
    body = client.get(PATH, headers=auth(alice)).get_json()
    names = [f["name"] for f in body["flags"]]
    assert len(names) == len(set(names))
    assert "dark-mode" in names  # created and favorited by her: listed once
    assert "pricing-test-a" not in names  # archived
    assert "new-pricing" not in names  # favorited, but archived
    assert "checkout-v2" in names  # favorited, created by someone else


def test_dashboard__viewer__sees_only_owners_of_his_projects(client, victor):
    body = client.get(PATH, headers=auth(victor)).get_json()
    assert [p["id"] for p in body["projects"]] == ["mobile"]
    assert [o["name"] for o in body["projectOwners"]] == ["Alice Q. Example"]


def test_dashboard__admin_api_token__403_saying_a_user_is_needed(client, admin_token, assert_valid):
    response = client.get(PATH, headers=auth(admin_token))
    assert response.status_code == 403
    assert_valid(response, PATH)
    body = response.get_json()
    assert body["name"] == "NoAccessError"
    assert "personal access token" in body["message"]


def test_dashboard__no_token__401(client):
    response = client.get(PATH)
    assert response.status_code == 401
    assert response.get_json()["name"] == "AuthenticationRequired"


def ago(days: float) -> str:
    return format_rfc3339(datetime.now(UTC) - timedelta(days=days))


def test_dashboard__health__rounds_half_up_over_stale_and_potentially_stale(client, seed, make_token):
    # Given: a project of 8 live flags, 3 of them unhealthy (37.5% -> 38, health 62), an
    # archived stale flag that does not count, and a member with two roles counted once
    flags = [
        {"name": "h-stale", "type": "kill-switch", "stale": True, "createdAt": ago(1)},
        {"name": "h-old-release", "type": "release", "createdAt": ago(41)},
        {"name": "h-old-operational", "type": "operational", "createdAt": ago(7.01)},
        {"name": "h-young-operational", "type": "operational", "createdAt": ago(6.9)},
        {"name": "h-old-kill-switch", "type": "kill-switch", "createdAt": ago(400)},
        {"name": "h-old-permission", "type": "permission", "createdAt": ago(400)},
        {"name": "h-young-release", "type": "release", "createdAt": ago(39)},
        {"name": "h-young-experiment", "type": "experiment", "createdAt": ago(1)},
        {"name": "h-archived", "type": "release", "stale": True, "createdAt": ago(100), "archivedAt": ago(1)},
    ]
    seed(
        {
            "users": [{"id": 500, "username": "hana", "rootRole": "Viewer", "email": "hana@example.com"}],
            "projects": [
                {
                    "id": "health",
                    "name": "Health",
                    "members": [
                        {"userId": 500, "role": "Owner"},
                        {"userId": 500, "role": "Member"},
                        {"userId": 2, "role": "Member"},
                    ],
                },
                {"id": "empty", "name": "Empty", "members": [{"userId": 500, "role": "QA Lead"}]},
            ],
            "features": [{"project": "health", **f} for f in flags],
        },
    )
    # When
    body = client.get(PATH, headers=auth(make_token(user="hana"))).get_json()
    # Then
    assert body["projects"] == [
        {"id": "empty", "name": "Empty", "health": 100, "memberCount": 1, "featureCount": 0},
        {"id": "health", "name": "Health", "health": 62, "memberCount": 2, "featureCount": 8},
    ]
    assert body["projectOwners"] == [
        {"ownerType": "user", "name": "hana", "imageUrl": None, "email": "hana@example.com"}
    ]


def test_dashboard__owner_name__falls_back_to_username_then_email(client, seed, make_token):
    seed(
        {
            "users": [
                {"id": 600, "username": "u600", "rootRole": "Viewer", "name": "Named Person"},
                {"id": 601, "username": "u601", "rootRole": "Viewer", "name": ""},
            ],
            "projects": [
                {
                    "id": "p6",
                    "name": "P6",
                    "members": [{"userId": 600, "role": "Owner"}, {"userId": 601, "role": "Owner"}],
                }
            ],
        },
    )
    body = client.get(PATH, headers=auth(make_token(user="u600"))).get_json()
    assert [o["name"] for o in body["projectOwners"]] == ["Named Person", "u601"]


# --- the same on SQLite and PostgreSQL -------------------------------------------------


def test_projects_next_change__date_arithmetic__the_stored_format_lifetime_after_creation(db, seed):
    # Given: the youngest flag that can become potentially stale is an operational one (7 days)
    seed(
        {
            "users": [{"id": 700, "username": "ines", "rootRole": "Viewer"}],
            "projects": [{"id": "dates", "name": "Dates", "members": [{"userId": 700, "role": "Owner"}]}],
            "features": [
                {
                    "name": "d-release",
                    "project": "dates",
                    "type": "release",
                    "createdAt": "2026-02-27T23:59:59.999Z",
                },
                {
                    "name": "d-oper",
                    "project": "dates",
                    "type": "operational",
                    "createdAt": "2026-02-26T10:00:00.123Z",
                },
                {
                    "name": "d-kill",
                    "project": "dates",
                    "type": "kill-switch",
                    "createdAt": "2026-02-01T00:00:00.000Z",
                },
            ],
        }
    )
    # When: across the end of February (month lengths are the engine's business)
    lifetimes = personal_dashboard.lifetimes(db)
    _, changes = personal_dashboard.projects(db, 700, "2026-02-28T00:00:00.000Z", lifetimes)
    _, later = personal_dashboard.projects(db, 700, "2026-03-05T10:00:00.124Z", lifetimes)
    (dates,), _ = personal_dashboard.projects(db, 700, "2026-03-05T10:00:00.123Z", lifetimes)
    # Then
    assert changes == "2026-03-05T10:00:00.123Z"
    assert later == "2026-04-08T23:59:59.999Z"
    assert dates["health"] == 67  # 1 of 3: d-oper is exactly 7 days old, potentially stale


def test_dashboard_queries__ten_times_the_data__same_statement_count(db, seed):
    """4.2 takes a fixed number of statements whatever the data size (``python -m bench reads``
    counts them at two scales)."""

    def dashboard() -> None:
        personal_dashboard.admins(db)
        personal_dashboard.project_owners(db, 2, False)
        lifetimes = personal_dashboard.lifetimes(db)
        personal_dashboard.projects(db, 2, "2026-06-01T00:00:00.000Z", lifetimes)
        personal_dashboard.flags(db, 2)

    # Given: alice's dashboard on the demo data
    small = statements_of(db, dashboard)
    # When: ten times more flags she created, members and projects
    seed(
        {
            "users": [{"id": 800 + i, "username": f"many{i}", "rootRole": "Viewer"} for i in range(40)],
            "projects": [
                {
                    "id": f"many{p}",
                    "name": f"Many {p}",
                    "members": [{"userId": 2, "role": "Owner"}]
                    + [{"userId": 800 + i, "role": "Member"} for i in range(40)],
                }
                for p in range(10)
            ],
            "features": [
                {
                    "name": f"many-{n}",
                    "project": f"many{n % 10}",
                    "type": "release",
                    "createdAt": "2026-01-01T00:00:00.000Z",
                    "createdByUserId": 2,
                }
                for n in range(300)
            ],
        }
    )
    large = statements_of(db, dashboard)
    # Then: five queries (and the PRAGMA that tells whether lifetimes() may be remembered)
    queries = [[sql for sql in traced if not sql.startswith("PRAGMA")] for traced in (small, large)]
    assert len(queries[0]) == len(queries[1]) == 5


def test_projects__random_flags__health_and_next_change_match_their_definition(db, seed):
    """Spec 4.2's health over every mix of type (with and without a lifetime), stale and age,
    against the definition computed here flag by flag: unhealthy is stale, or at least the
    type's lifetime old; the next change is the moment the oldest flag that is neither reaches
    its lifetime."""
    import random

    rng = random.Random(4242)
    now = datetime(2026, 6, 1, tzinfo=UTC)
    types = ["release", "experiment", "operational", "kill-switch", "permission"]
    flags = []
    for n in range(300):
        kind = rng.choice(types)
        days = LIFETIME_DAYS.get(kind, 40)
        age = rng.choice([0.5, days - 0.001, days, days + 0.001, 3 * days])  # around the lifetime
        flags.append(
            {
                "name": f"r-{n}",
                "project": f"r{n % 7}",
                "type": kind,
                "stale": rng.random() < 0.3,
                "createdAt": format_rfc3339(now - timedelta(days=age)),
                "archivedAt": format_rfc3339(now) if rng.random() < 0.2 else None,
            }
        )
    seed(
        {
            "users": [{"id": 900, "username": "rand", "rootRole": "Viewer"}],
            "projects": [
                {"id": f"r{p}", "name": f"R{p}", "members": [{"userId": 900, "role": "Member"}]}
                for p in range(8)
            ],
            "features": flags,
        }
    )
    # When
    got, next_change = personal_dashboard.projects(
        db, 900, format_rfc3339(now), personal_dashboard.lifetimes(db)
    )
    # Then
    expected, upcoming = {}, []
    for p in range(8):
        live = [f for f in flags if f["project"] == f"r{p}" and f["archivedAt"] is None]
        bad = 0
        for f in live:
            days = LIFETIME_DAYS.get(f["type"])
            born = datetime.fromisoformat(f["createdAt"])
            old = days is not None and now - born >= timedelta(days=days)
            bad += f["stale"] or old
            if days is not None and not f["stale"] and not old:
                upcoming.append(format_rfc3339(born + timedelta(days=days)))
        percent = Decimal(100 * bad) / len(live) if live else Decimal(0)
        expected[f"r{p}"] = (len(live), 100 - int(percent.quantize(Decimal(1), rounding=ROUND_HALF_UP)))
    assert {p["id"]: (p["featureCount"], p["health"]) for p in got} == expected
    assert expected["r7"] == (0, 100)  # a project without flags
    assert next_change == min(upcoming)


@pytest.mark.parametrize("who", ["alice", "victor"])  # sees every project (shared owners), or hers
def test_dashboard__etag__same_while_unchanged_new_when_a_shared_part_changes(client, db, make_token, who):
    """The ETag is a digest of the caller's own bytes and of the shared parts' digests
    (blueprints/personal_dashboard.py): a change in the admins alone must still change it."""
    headers = auth(make_token(user=who))
    first = client.get(PATH, headers=headers)
    again = client.get(PATH, headers=headers)
    assert first.headers["ETag"] == again.headers["ETag"]
    assert client.get(PATH, headers={**headers, "If-None-Match": first.headers["ETag"]}).status_code == 304
    # When: only an admin's displayed name changes
    admin_id = first.get_json()["admins"][0]["id"]
    with db.write("users"):
        db.run("UPDATE users SET name = 'Renamed Admin' WHERE id = ?", [admin_id])
    # Then
    changed = client.get(PATH, headers={**headers, "If-None-Match": first.headers["ETag"]})
    assert changed.status_code == 200
    assert changed.headers["ETag"] != first.headers["ETag"]
    assert changed.get_json()["admins"][0]["name"] == "Renamed Admin"
    assert {k: v for k, v in changed.get_json().items() if k != "admins"} == {
        k: v for k, v in first.get_json().items() if k != "admins"
    }


def test_projects__no_flag_type_given__counts_every_live_flag_unhealthy(db):
    """The projects query still runs with no flag type at all (its thresholds then match no
    flag): nothing is healthy, and nothing becomes potentially stale later."""
    got, next_change = personal_dashboard.projects(db, 2, "2026-06-01T00:00:00.000Z", {})
    assert got  # alice has projects in the demo data
    assert all(p["health"] == (100 if p["featureCount"] == 0 else 0) for p in got)
    assert next_change is None
