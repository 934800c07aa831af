"""Build a large flagadmin database for the benchmarks, directly with bulk SQL inserts.

Reference size (``--scale 1.0``): 10,000 users, 1,000 projects, 100,000 flags (half archived,
two environments each), 20 favorites per user, 10 integrations with 1,000,000 integration
events (600,000 of them in integration 1, so that offset 500,000 exists), and the caller
``heavy`` (root role Viewer, so visibility filtering is exercised) who is a member of 200
projects and created 500 flags. Every count scales with ``--scale``. The integrations keep
their whole log (:data:`KEEP_ALL`), so that a server started on the database by hand does not
delete the fixed data.

Usage: ``python bench/generate.py --scale 1.0 --db bench/data/bench.db``. Writes the database
and, next to it, ``<db stem>.json`` with an admin token, a personal token for ``heavy`` and the
counts (the run script reads it), and ``<db stem>.users.json`` with personal tokens of 1,000
distinct project members (traffic.py; :func:`ensure_user_tokens` adds them to an older
database).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson

from flagadmin.store import connect, integration_events, schema, tokens

#: Reference counts, multiplied by ``--scale``.
USERS = 10_000
PROJECTS = 1_000
FLAGS = 100_000
INTEGRATION_EVENTS = 1_000_000
#: Counts that do not scale, so that heavy's share stays the same at every scale (heavy's
#: projects are capped by the number of projects).
INTEGRATIONS = 10
FAVORITES_PER_USER = 20
HEAVY_PROJECTS = 200
HEAVY_FLAGS = 500
MEMBERS_PER_PROJECT = 10

FLAG_TYPES = ("release", "experiment", "operational", "kill-switch", "permission")
ENVIRONMENTS = ("development", "production")
CHUNK = 20_000

#: One real event object (spec 2.3), from unleash-server 8.2.0's webhook integration log
#: (shared/fixtures/unleash-8.2.0/integration-events.json); id, times and names vary per row.
EVENT_TEMPLATE = {
    "id": 184,
    "data": {
        "name": "new-pricing",
        "type": "experiment",
        "stale": False,
        "project": "default",
        "archived": False,
        "createdAt": "2026-11-22T00:16:07.304Z",
        "description": "Pricing page experiment (round 2)",
        "impressionData": True,
    },
    "tags": [],
    "type": "feature-metadata-updated",
    "groupId": "01M809RTKQRQYFQEEW2KA99T8A",
    "preData": {
        "name": "new-pricing",
        "type": "experiment",
        "stale": False,
        "project": "default",
        "archived": False,
        "createdAt": "2026-11-22T00:16:07.304Z",
        "description": "Pricing page experiment",
        "impressionData": False,
    },
    "project": "default",
    "createdAt": "2026-11-22T00:16:20.599Z",
    "createdBy": "admin",
    "groupType": "transaction",
    "environment": None,
    "featureName": "new-pricing",
    "createdByUserId": 1,
}
EVENT_TYPES = ("feature-metadata-updated", "feature-updated", "feature-stale-on", "feature-tagged")
#: (state, stateDetails, share in thousandths), as the fixture's webhook integration wrote them.
STATES = (
    ("success", "Webhook request was successful with status code: 200.", 900),
    ("failed", "Webhook request failed with status code: 500.", 70),
    (
        "successWithErrors",
        "Could not parse the JSON in the customHeaders parameter.\n"
        "Webhook request was successful with status code: 200.",
        30,
    ),
)
DETAILS_HEAD = '{"url":"http://127.0.0.1:9099/hook","body":'
DETAILS_TAIL = ',"contentType":"application/json"}'


def scaled(count: int, scale: float) -> int:
    """Return ``count * scale`` rounded, at least 1."""
    return max(1, round(count * scale))


def rfc3339(moment: datetime) -> str:
    """Format an aware UTC datetime as flagadmin stores timestamps."""
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


class Progress:
    """One status line on stderr: table, rows done, elapsed seconds."""

    def __init__(self) -> None:
        self.start = time.monotonic()
        self.tty = sys.stderr.isatty()
        self.last = 0.0

    def show(self, table: str, done: int, total: int, *, final: bool = False) -> None:
        """Show progress; on a non-terminal, print at most one line per 5 s plus the final one."""
        now = time.monotonic()
        percent = 100 * done // max(total, 1)
        line = f"{table:<20} {done:>10,}/{total:<10,} {percent:3d}%  {now - self.start:6.1f} s"
        if self.tty:
            sys.stderr.write("\r" + line + ("\n" if final else ""))
            sys.stderr.flush()
        elif final or now - self.last >= 5:
            print(line, file=sys.stderr, flush=True)
            self.last = now


def insert(conn: sqlite3.Connection, progress: Progress, table: str, rows, total: int) -> None:
    """Insert ``rows`` (tuples of the first columns of ``table``, in order; columns added later,
    at the end, keep their defaults) in chunks, showing progress."""
    done = 0
    chunk: list[tuple] = []
    sql = ""
    for row in rows:
        chunk.append(row)
        if not sql:
            columns = [c[1] for c in conn.execute(f"PRAGMA table_info({table})")][: len(row)]
            sql = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(row))})"
        if len(chunk) == CHUNK:
            conn.executemany(sql, chunk)
            done += len(chunk)
            chunk.clear()
            if done < total:
                progress.show(table, done, total)
    if chunk:
        conn.executemany(sql, chunk)
    progress.show(table, done + len(chunk), total, final=True)


def user_rows(n_users: int, heavy_id: int):
    """Users 1..n: 1% Admin, 29% Editor, the rest Viewer; ``heavy`` is the last, a Viewer."""
    for uid in range(1, n_users + 1):
        if uid == heavy_id:
            yield (uid, "heavy", "Heavy User", "heavy@example.com", None, "Viewer")
            continue
        role = "Admin" if uid % 100 == 0 else "Editor" if uid % 100 < 30 else "Viewer"
        avatar = f"https://gravatar.com/avatar/{uid:064x}?s=42&d=retro&r=g"
        name = None if uid % 7 == 0 else f"User {uid:05d}"
        yield (uid, f"user{uid:05d}", name, f"user{uid:05d}@example.com", avatar, role)


def project_ids(n_projects: int) -> list[str]:
    """Return the project ids, ``project-0000`` onwards."""
    return [f"project-{p:04d}" for p in range(n_projects)]


def member_rows(rng: random.Random, projects: list[str], n_users: int, heavy_id: int):
    """One Owner and several Members per project, a custom role in every tenth, and ``heavy``
    as Member of :data:`HEAVY_PROJECTS` projects spread over the list."""
    step = max(1, len(projects) // HEAVY_PROJECTS)
    heavy_in = set(projects[::step][:HEAVY_PROJECTS])
    for p, pid in enumerate(projects):
        owner = rng.randrange(1, n_users)
        rows = {(pid, owner, "Owner")}
        rows.update((pid, rng.randrange(1, n_users), "Member") for _ in range(MEMBERS_PER_PROJECT))
        if p % 10 == 0:
            rows.add((pid, owner, "Developer"))
        if pid in heavy_in:
            rows.add((pid, heavy_id, "Member"))
        yield from sorted(rows)


def is_heavy_flag(i: int, n_flags: int) -> bool:
    """:data:`HEAVY_FLAGS` flags spread evenly are heavy's, alternately live and archived."""
    step = max(2, n_flags // HEAVY_FLAGS)
    return i % step == (0 if (i // step) % 2 == 0 else 1)


def flag_rows(rng: random.Random, n_flags: int, projects: list[str], n_users: int, heavy_id: int, now):
    """Flags ``flag-000000`` onwards; odd-numbered ones are archived."""
    for i in range(n_flags):
        created = now - timedelta(days=730) + timedelta(seconds=i * 63_000_000 // n_flags)
        archived = rfc3339(min(now, created + timedelta(days=rng.randrange(1, 30)))) if i % 2 else None
        creator = heavy_id if is_heavy_flag(i, n_flags) else rng.randrange(1, n_users)
        yield (
            f"flag-{i:06d}",
            projects[i % len(projects)],
            FLAG_TYPES[i % len(FLAG_TYPES)],
            None if i % 11 == 0 else f"Flag {i} controls part of the checkout flow",
            int(i % 20 == 0),
            int(i % 10 == 0),
            rfc3339(created),
            creator,
            archived,
            rfc3339(created + timedelta(days=1)) if i % 3 == 0 else None,
        )


def environment_rows(n_flags: int, now):
    """Two environments (development, production) per flag."""
    seen = rfc3339(now - timedelta(hours=6))
    for i in range(n_flags):
        name = f"flag-{i:06d}"
        yield (name, "development", int(i % 2 == 0), seen if i % 4 == 0 else None)
        yield (name, "production", int(i % 3 == 0), seen if i % 5 == 0 else None)


def favorite_rows(rng: random.Random, n_users: int, n_flags: int):
    """:data:`FAVORITES_PER_USER` distinct random flags per user."""
    for uid in range(1, n_users + 1):
        for i in sorted(rng.sample(range(n_flags), min(FAVORITES_PER_USER, n_flags))):
            yield (uid, f"flag-{i:06d}")


def integration_rows():
    """:data:`INTEGRATIONS` webhook configurations subscribed to feature events."""
    events = json.dumps(list(EVENT_TYPES), separators=(",", ":"))
    params = '{"url":"http://127.0.0.1:9099/hook","contentType":"application/json"}'
    for n in range(1, INTEGRATIONS + 1):
        yield (n, "webhook", f"Webhook {n}", 1, events, "[]", "[]", params)


#: Retention of each generated configuration's log (``integration_options``: events_keep,
#: events_max_age): every row, for a century. The logs are fixed data spread over the 30 days
#: before the build; with the instance's defaults (10,000 rows, 30 days), the first sweep of any
#: server started on the database would delete most of them (procs.RETENTION sets the same for
#: the servers the benchmarks start, for databases built before this).
KEEP_ALL = (1_000_000_000, "P36500D")


def integration_option_rows():
    """flagadmin's options of the :data:`INTEGRATIONS` configurations: :data:`KEEP_ALL`, the
    rest the instance's defaults (no creation time, the default deliveries in flight)."""
    for n in range(1, INTEGRATIONS + 1):
        yield (n, None, None, *KEEP_ALL)


def integration_of(i: int) -> int:
    """Integration of the i-th event: 6 of every 10 go to integration 1, the rest round-robin."""
    j = i % 10
    if j < 6:
        return 1
    return 2 + ((i // 10) * 4 + (j - 6)) % (INTEGRATIONS - 1)


def event_rows(n_events: int, n_flags: int, projects: list[str], now, counts: dict[int, int]):
    """Integration events, oldest first (ids interleaved across integrations, as deliveries
    append them), over the last 30 days; fills ``counts`` per integration. Each row starts with
    its ``log_key`` (the log number of integration n is n, see ``integration_logs``)."""
    start = now - timedelta(days=30)
    step_ms = 30 * 86_400_000 // max(n_events, 1)
    template = dict(EVENT_TEMPLATE)
    states = [s for s in STATES for _ in range(s[2])]
    for i in range(n_events):
        integration = integration_of(i)
        counts[integration] = counts.get(integration, 0) + 1
        at = start + timedelta(milliseconds=i * step_ms)
        flag = f"flag-{(i * 7919) % n_flags:06d}"
        project = projects[(i * 7919) % n_flags % len(projects)]
        template["id"] = i + 1
        template["type"] = EVENT_TYPES[i % len(EVENT_TYPES)]
        template["createdAt"] = rfc3339(at - timedelta(milliseconds=230))
        template["featureName"] = flag
        template["project"] = project
        template["createdByUserId"] = 1 + i % 97
        template["createdBy"] = f"user{1 + i % 97:05d}@example.com"
        event = orjson.dumps(template).decode()
        state, state_details, _ = states[i % 1000]
        created_at = rfc3339(at)
        yield (
            integration * integration_events.LOG_KEY_SPAN + counts[integration],  # log_no = integration id
            i + 1,
            integration,
            counts[integration],
            created_at,
            state,
            integration_events.item(
                i + 1,
                integration_events.Entry(
                    integration, created_at, state, state_details, event, DETAILS_HEAD + event + DETAILS_TAIL
                ),
            ),
        )


def build(path: Path, scale: float, seed: int = 42) -> dict:
    """Create the database at ``path`` (replacing it) and return what was generated."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    schema.ensure_schema(path)
    rng = random.Random(seed)
    now = datetime.now(UTC).replace(microsecond=0)
    n_users, n_flags, n_events = scaled(USERS, scale), scaled(FLAGS, scale), scaled(INTEGRATION_EVENTS, scale)
    projects = project_ids(scaled(PROJECTS, scale))
    heavy_id = n_users
    counts: dict[int, int] = {}
    progress = Progress()

    conn = sqlite3.connect(path, isolation_level=None)
    # Bulk load: no journal (a failed build is simply rebuilt), WAL again afterwards.
    conn.execute("PRAGMA journal_mode = OFF")
    conn.execute("PRAGMA synchronous = OFF")
    conn.execute("PRAGMA cache_size = -262144")
    conn.execute("BEGIN")
    members = list(member_rows(rng, projects, n_users, heavy_id))
    tables = (
        ("users", user_rows(n_users, heavy_id), n_users),
        ("projects", [(p, f"Project {p[8:]}", f"Team project {p}") for p in projects], len(projects)),
        ("project_members", members, len(members)),
        ("features", flag_rows(rng, n_flags, projects, n_users, heavy_id, now), n_flags),
        ("feature_environments", environment_rows(n_flags, now), 2 * n_flags),
        ("favorite_features", favorite_rows(rng, n_users, n_flags), n_users * FAVORITES_PER_USER),
        ("integrations", integration_rows(), INTEGRATIONS),
        ("integration_options", integration_option_rows(), INTEGRATIONS),
        ("integration_logs", [(n, n) for n in range(1, INTEGRATIONS + 1)], INTEGRATIONS),
        ("integration_events", event_rows(n_events, n_flags, projects, now, counts), n_events),
    )
    for table, rows, total in tables:
        insert(conn, progress, table, rows, total)
    conn.execute("COMMIT")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.close()

    db = connect(path)
    try:
        admin_token, heavy_token = tokens.new_admin_token(), tokens.new_personal_token()
        tokens.insert_token(db, admin_token, kind="admin", name="bench admin")
        tokens.insert_token(db, heavy_token, kind="personal", user_id=heavy_id, name="bench heavy")
        archived = db.value("SELECT count(*) FROM features WHERE archived_at IS NOT NULL")
        heavy_projects = db.value(
            "SELECT count(DISTINCT project_id) FROM project_members WHERE user_id = ?", [heavy_id]
        )
        heavy_created = db.value("SELECT count(*) FROM features WHERE created_by_user_id = ?", [heavy_id])
    finally:
        db.close()
    return {
        "scale": scale,
        "admin_token": admin_token,
        "heavy_token": heavy_token,
        "heavy_user_id": heavy_id,
        "heavy_root_role": "Viewer",
        "heavy_projects": heavy_projects,
        "heavy_created_flags": heavy_created,
        "users": n_users,
        "projects": len(projects),
        "flags": n_flags,
        "archived_flags": archived,
        "integration_events": n_events,
        "events_per_integration": {str(k): v for k, v in sorted(counts.items())},
        "seconds": round(time.monotonic() - progress.start, 1),
        "bytes": os.path.getsize(path),
    }


def meta_path(db_path: Path) -> Path:
    """Return the JSON file written next to ``db_path`` (tokens and counts)."""
    return db_path.with_suffix(".json")


#: Personal tokens made for distinct users (bench/traffic.py: 4.2 and token checks in rotation).
USER_TOKENS = 1_000


def user_tokens_path(db_path: Path) -> Path:
    """Return the JSON file of the distinct users' tokens, next to ``db_path``."""
    return db_path.with_suffix(".users.json")


def ensure_user_tokens(db_path: Path, count: int = USER_TOKENS, seed: int = 42) -> list[dict]:
    """Personal access tokens (spec 5) for up to ``count`` distinct users who hold a role in
    at least one project (``heavy`` left out), chosen at random with ``seed``, in user id
    order. They are stored as digests like every token; the plain tokens go to
    :func:`user_tokens_path` as ``[{"user_id", "username", "root_role", "projects", "token"},
    ...]``. Made once: when that file exists and its first token is in the database, it is
    returned as it is; otherwise new tokens are made and the file is rewritten.
    """
    path = user_tokens_path(db_path)
    db = connect(db_path)
    try:
        if path.exists():
            users = json.loads(path.read_text())
            if users and db.value(
                "SELECT count(*) FROM api_tokens WHERE digest = ?", [tokens.digest(users[0]["token"])]
            ):
                return users
        heavy = db.value("SELECT id FROM users WHERE username = 'heavy'")
        members = db.all(
            "SELECT u.id AS user_id, u.username, u.root_role, count(DISTINCT m.project_id) AS projects"
            " FROM users u JOIN project_members m ON m.user_id = u.id"
            " WHERE u.id <> ? GROUP BY u.id, u.username, u.root_role ORDER BY u.id",
            [heavy or 0],
        )
        chosen = sorted(
            random.Random(seed).sample(members, min(count, len(members))), key=lambda u: u["user_id"]
        )
        with db.write("api_tokens"):
            for user in chosen:
                user["token"] = tokens.new_personal_token()
                tokens.insert_token(
                    db, user["token"], kind="personal", user_id=user["user_id"], name="bench traffic"
                )
    finally:
        db.close()
    path.write_text(json.dumps(chosen, indent=1) + "\n")
    return chosen


def main(argv: list[str] | None = None) -> None:
    """Command line: build the database and write its JSON file."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="1.0 = reference size (default)")
    parser.add_argument("--db", type=Path, default=Path(__file__).parent / "data" / "bench.db")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args(argv)
    meta = build(args.db, args.scale, args.seed)
    meta_path(args.db).write_text(json.dumps(meta, indent=2) + "\n")
    user_tokens_path(args.db).unlink(missing_ok=True)
    ensure_user_tokens(args.db)
    print(
        f"{args.db}: {meta['bytes'] / 2**20:,.0f} MiB in {meta['seconds']} s "
        f"(scale {args.scale}); tokens and counts in {meta_path(args.db)}"
    )


if __name__ == "__main__":
    main()
