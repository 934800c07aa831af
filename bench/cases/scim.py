"""scim: the SCIM service provider in process: time and SQL statements of

1. ``GET /scim/v2/Users?filter=userName eq "..."`` with ``--users`` users in the database
   (an identity provider's existence check before every create);
2. a group ``PATCH`` adding ``--members`` members in one operation (Okta's and Entra's way),
   and the same with one operation per member (authentik's way), from an empty group each time;
3. ``GET /scim/v2/Groups/{id}`` of a group of ``--group-size`` members (the whole member list),
   and the same with ``excludedAttributes=members`` (as Entra reads groups);
4. the personal dashboard (4.2) of a user whose project roles all come from groups, at the
   group size and at a tenth of it: the statement counts must be equal.

Requests go through the Flask test client of one app (no network: what is measured is the
app and SQLite). Times are the median of ``--repeats`` runs after one warm-up. Statements are
counted on a freshly created app, traced as the reads case counts 4.2's; the tracer repeats a
statement for each trigger step it runs, and those repeats are counted apart. The database is
built with bulk SQL (store functions) in a temporary folder, or at ``--db``.

The ceilings are structural rather than timed: a PATCH of N members in one operation must not
cost N times the statements of one member, and the dashboard's statement count must not grow
with the group size. Results: ``<out>/scim.{json,md}``.

Usage (from the repository root)::

    python -m bench scim                       # reference size: 10,000 users
    python -m bench scim --quick               # 2,000 users, a PATCH of 200, a group of 2,000
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from bench import lib
from flagadmin.app import create_app
from flagadmin.config import settings_from_env
from flagadmin.store import connect, schema, scim_tokens, tokens
from flagadmin.store import directory as store_directory
from flagadmin.store.scim_filter import group_scim_id
from flagadmin.web.database import connection

BASE = "/scim/v2"
NOW = "2026-01-01T00:00:00.000Z"


def build(db_path: Path, users: int, group_size: int) -> dict:
    """Create the database: ``users`` SCIM users, one project, a group of ``group_size``
    members (``Everyone``) mapped to Member of it, a personal token of one member, a SCIM
    token. Returns the ids and tokens the cases need."""
    schema.ensure_schema(db_path)
    with connect(db_path) as conn:
        rows = [
            {
                "username": f"bench{i:06d}",
                "email": f"bench{i:06d}@example.com",
                "email_type": "work",
                "active": 1,
            }
            for i in range(1, users + 1)
        ]
        with conn.write("bench"):
            store_directory.bulk_insert_users(conn, rows, NOW)
            conn.run("INSERT INTO projects (id, name) VALUES ('bench', 'Bench')")
        ids = list(conn.values("SELECT id FROM users ORDER BY id"))
        with conn.write("bench"):
            everyone = store_directory.insert_group(conn, "Everyone", None, NOW)
            store_directory.write_members(conn, everyone, dict.fromkeys(ids[:group_size]))
            small = store_directory.insert_group(conn, "Tenth", None, NOW)
            store_directory.write_members(conn, small, dict.fromkeys(ids[: max(1, group_size // 10)]))
            empty = store_directory.insert_group(conn, "Target", None, NOW)
            store_directory.add_project_role_of_group(conn, "Everyone", "bench", "Member")
            store_directory.add_project_role_of_group(conn, "Tenth", "bench", "Owner")
        personal = tokens.new_personal_token()
        tokens.insert_token(conn, personal, kind="personal", user_id=ids[0], name="bench")
        scim = scim_tokens.generate(conn)
    return {
        "ids": ids,
        "everyone": everyone,
        "small": small,
        "target": empty,
        "scim": scim,
        "personal": personal,
    }


def _config(db_path: Path) -> dict:
    return {"DATABASE": str(db_path), "SETTINGS": replace(settings_from_env({}), git_revision="bench")}


def traced(db_path: Path, method: str, path: str, headers: dict, body: bytes | None = None) -> dict:
    """One request through a freshly created app (its connection opened for it): status and
    the statements it ran (``statements``: the request's own; ``trigger_statements``: those
    its triggers ran)."""
    app = create_app(_config(db_path))
    seen: list[str] = []
    with app.app_context():
        conn = connection()
    conn.trace(seen.append)
    try:
        response = app.test_client().open(path, method=method, headers=headers, data=body)
        response.get_data()
    finally:
        conn.trace(None)
    # The tracer reports a statement again for each trigger step it runs: runs of the same
    # text are one statement of the request, the repeats its triggers' work.
    own = [text for i, text in enumerate(seen) if i == 0 or text != seen[i - 1]]
    return {
        "status": response.status_code,
        "statements": len(own),
        "trigger_statements": len(seen) - len(own),
    }


def timed(fn, repeats: int, before=None) -> float:
    """Median seconds of ``repeats`` calls of ``fn`` (``before()`` runs untimed before each)."""
    times = []
    for _ in range(repeats + 1):  # the first one warms up and is dropped
        if before:
            before()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times[1:])


def run(args: argparse.Namespace) -> dict:
    """Build the database and measure every case; a temporary folder is removed after."""
    if args.db is not None:
        return measure(args, Path(args.db))
    with tempfile.TemporaryDirectory(prefix="flagadmin-scim-bench-") as folder:
        return measure(args, Path(folder) / "scim-bench.db")


def measure(args: argparse.Namespace, db_path: Path) -> dict:
    """The cases of the module docstring, on a database built at ``db_path``."""
    started = time.perf_counter()
    data = build(db_path, args.users, args.group_size)
    built_s = time.perf_counter() - started
    headers = {"Authorization": f"Bearer {data['scim']}", "Content-Type": "application/scim+json"}
    client = create_app(_config(db_path)).test_client()
    results: dict = {
        "users": args.users,
        "members": args.members,
        "group_size": args.group_size,
        "build_s": built_s,
    }

    # 1. filter at N users
    wanted = f"bench{args.users // 2:06d}"
    list_path = f'{BASE}/Users?filter=userName eq "{wanted.upper()}"'

    def list_users():
        response = client.get(list_path, headers=headers)
        assert response.status_code == 200 and response.get_json()["totalResults"] == 1, response.get_data()[
            :200
        ]

    results["filter_users"] = {
        "median_ms": 1000 * timed(list_users, args.repeats),
        **traced(db_path, "GET", list_path, headers),
    }

    # 2. PATCH adding M members to an empty group
    patch_path = f"{BASE}/Groups/{group_scim_id(data['target'])}"
    added = [{"value": str(i)} for i in data["ids"][-args.members :]]
    patch = json.dumps(
        {
            "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
            "Operations": [{"op": "add", "path": "members", "value": added}],
        }
    ).encode()
    empty = json.dumps(
        {
            "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
            "Operations": [{"op": "replace", "path": "members", "value": []}],
        }
    ).encode()

    def add_members():
        response = client.patch(patch_path, headers=headers, data=patch)
        assert response.status_code == 204, response.get_data()[:300]

    def reset():
        client.patch(patch_path, headers=headers, data=empty)

    results["patch_add_members"] = {
        "median_ms": 1000 * timed(add_members, args.repeats, before=reset),
        "body_bytes": len(patch),
    }
    reset()
    results["patch_add_members"].update(traced(db_path, "PATCH", patch_path, headers, patch))

    # 2b. the same members, one operation each (authentik, whose PATCH chunk is bulk.maxOperations)
    one_each = json.dumps(
        {
            "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
            "Operations": [{"op": "add", "path": "members", "value": [member]} for member in added],
        }
    ).encode()

    def add_one_each():
        response = client.patch(patch_path, headers=headers, data=one_each)
        assert response.status_code == 204, response.get_data()[:300]

    results["patch_add_members_one_per_operation"] = {
        "median_ms": 1000 * timed(add_one_each, args.repeats, before=reset),
        "body_bytes": len(one_each),
    }
    reset()
    results["patch_add_members_one_per_operation"].update(
        traced(db_path, "PATCH", patch_path, headers, one_each)
    )

    # 3. reading the big group
    group_path = f"{BASE}/Groups/{group_scim_id(data['everyone'])}"
    body_size = {}

    def read(path: str, key: str):
        def go():
            response = client.get(path, headers=headers)
            assert response.status_code == 200
            body_size[key] = len(response.get_data())

        return go

    for key, path in (
        ("read_group", group_path),
        ("read_group_without_members", f"{group_path}?excludedAttributes=members"),
    ):
        results[key] = {
            "median_ms": 1000 * timed(read(path, key), args.repeats),
            **traced(db_path, "GET", path, headers),
        }
        results[key]["body_bytes"] = body_size[key]

    # 4. 4.2 statements for a user whose roles come from groups, at two group sizes
    dashboard = {"Authorization": data["personal"]}
    counts = {}
    for name, group in (("group_size", data["everyone"]), ("tenth", data["small"])):
        with connect(db_path) as conn, conn.write("bench"):
            conn.run(
                "UPDATE group_project_roles SET group_key = lower(?) WHERE role = 'Member'",
                [conn.value("SELECT display_name FROM directory_groups WHERE id = ?", [group])],
            )
        traced(db_path, "GET", "/api/admin/personal-dashboard", dashboard)  # records the token's use
        counts[name] = traced(db_path, "GET", "/api/admin/personal-dashboard", dashboard)
    results["dashboard_statements"] = counts
    results["dashboard_statements_equal"] = (
        counts["group_size"]["statements"] == counts["tenth"]["statements"]
        and counts["group_size"]["status"] == 200
    )
    return results


def main(argv: list[str]) -> None:
    """Run the case (see the module's docstring); exit 1 when the dashboard's counts differ."""
    parser = argparse.ArgumentParser(
        prog="python -m bench scim",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawTextHelpFormatter,
    )
    lib.add_common_options(parser, db=False, rounds=None, seconds=None)
    parser.add_argument("--users", type=int, default=10_000, help="users in the database (default 10000)")
    parser.add_argument("--members", type=int, default=1_000, help="members one PATCH adds (default 1000)")
    parser.add_argument(
        "--group-size", type=int, default=10_000, help="members of the group read (default 10000)"
    )
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per case (default 5)")
    parser.add_argument("--db", help="database file to build (default: a temporary folder)")
    args = parser.parse_args(argv)
    if args.quick:
        args.users, args.members, args.group_size, args.repeats = 2000, 200, 2000, 3
    if args.members > args.users or args.group_size > args.users:
        parser.error("--members and --group-size must not exceed --users")
    tree = lib.measured_tree(args)
    results = {**tree, "command": lib.command_line(), "machine": lib.machine(), **run(args)}
    lines = [
        "# scim",
        "",
        f"`{results['command']}`",
        "",
        lib.machine_line(results["machine"]),
        "",
        f"{args.users} users, PATCH of {args.members} members, group of {args.group_size};"
        f" database built in {results['build_s']:.1f} s",
        "",
    ]
    for key, label in (
        ("filter_users", "GET /Users?filter=userName eq"),
        ("patch_add_members", f"PATCH /Groups/id adding {args.members}"),
        ("patch_add_members_one_per_operation", f"PATCH /Groups/id adding {args.members}, 1 per op"),
        ("read_group", f"GET /Groups/id ({args.group_size} members)"),
        ("read_group_without_members", "GET /Groups/id?excludedAttributes=members"),
    ):
        case = results[key]
        lines.append(
            f"- {label}: {case['median_ms']:.1f} ms median, {case['statements']} statements"
            f" (+{case['trigger_statements']} in triggers), status {case['status']}"
        )
    counts = results["dashboard_statements"]
    lines.append(
        f"- 4.2 of a user with group-granted roles: {counts['group_size']['statements']} statements "
        f"(group of {args.group_size}) / {counts['tenth']['statements']} (a tenth): "
        + ("equal" if results["dashboard_statements_equal"] else "NOT EQUAL")
    )
    lib.write_results(args.out, "scim", results, "\n".join(lines) + "\n")
    if not results["dashboard_statements_equal"]:
        raise SystemExit(1)
