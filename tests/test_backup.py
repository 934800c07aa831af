"""Online backup (``flagadmin backup``): consistent copies while the server writes, never a
half-written file, refused destinations, and docs/operations.md's restore steps."""

from __future__ import annotations

import shutil
import sqlite3
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from flagadmin.store import schema as store_schema
from flagadmin.store.backup import backup
from flagadmin.store.tokens import new_admin_token

from helpers import (
    DEMO_COUNTS,
    GENERATE,
    SCIM,
    LiveServer,
    Load,
    active_scim_tokens,
    flagadmin,
    pragma,
    table_counts,
)


def test_backup__while_the_server_writes_and_reads__consistent_copy_that_serves(
    live_server, db_path, tmp_path, make_token
):
    """`flagadmin backup` under write load (SCIM generations, spec 4.5) and reads; the copies
    are consistent, and a copy serves all five operations (spec 4.1 to 4.5)."""
    # Given: a personal token for 4.2, and a server under generation and read load
    alice = make_token(user="alice")
    admin = new_admin_token()
    server = live_server(env={"FLAGADMIN_ADMIN_TOKEN": admin})
    load = Load(server.port, admin, generators=4, readers=2, seconds=30)
    load.wait_for(generations=10, reads=10, timeout=15)
    # When: three backups are taken while the load runs
    copies = []
    try:
        for i in range(3):
            before = len(load.received)
            copy = tmp_path / "backups" / f"copy-{i}.db"
            copy.parent.mkdir(exist_ok=True)
            result = flagadmin("backup", str(copy), "--db", str(db_path))
            assert result.returncode == 0, result.stderr
            assert f"Backed up {db_path} to {copy}" in result.stdout
            copies.append(copy)
            load.wait_for(generations=before + 5, timeout=10)  # writes went on around each one
    finally:
        load.finish()
    assert set(load.generate_statuses) == {200} and set(load.read_statuses) == {200}
    # Then: each copy is a single, sound file with one active SCIM token and the demo data
    for copy in copies:
        assert not Path(f"{copy}-wal").exists()
        assert pragma(copy, "integrity_check") == "ok"
        assert pragma(copy, "user_version") == store_schema.SCHEMA_VERSION
        assert active_scim_tokens(copy) == 1
        counts = table_counts(copy)
        # the delivery threads append attempts to the demo webhooks' logs (serve's admin token
        # is an api-token-created event they take): the log only grows
        logs = "integration_events"
        assert {name: counts[name] for name in DEMO_COUNTS if name != logs} == {
            name: n for name, n in DEMO_COUNTS.items() if name != logs
        }
        assert counts[logs] >= DEMO_COUNTS[logs]
    # and the last one, restored by serving it, answers the five operations
    restored = LiveServer(copies[-1], env={"FLAGADMIN_ADMIN_TOKEN": admin})
    try:
        as_admin, as_alice = {"Authorization": admin}, {"Authorization": f"Bearer {alice}"}
        assert restored.request("GET", "/api/admin/addons/1/events?limit=5", as_admin).status == 200
        assert restored.request("GET", "/api/admin/personal-dashboard", as_alice).status == 200
        assert restored.request("GET", "/api/admin/ui-config", as_admin).status == 200
        assert restored.request("GET", "/api/admin/archive/features", as_admin).status == 200
        generated = restored.request("POST", GENERATE, as_admin)
        assert generated.status == 200
        token = generated.json()["token"]
        assert restored.request("GET", SCIM, {"Authorization": f"Bearer {token}"}).status == 200
    finally:
        restored.stop()


def test_backup__uncommitted_write_in_progress__not_waited_for_and_not_copied(db_path, tmp_path):
    """The copy is the last committed state: a writer holding the write lock neither blocks
    the backup nor leaks its uncommitted rows into it. A backup that waited for the lock would
    not end at all (the writer commits only after it): it is given a minute, only so that the
    test ends."""
    # Given: a writer in the middle of a transaction
    writer = sqlite3.connect(db_path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("INSERT INTO users (id, username, root_role) VALUES (999, 'uncommitted', 'Viewer')")
    with ThreadPoolExecutor(1) as pool:
        try:
            # When: the backup runs while the writer holds its transaction
            copying = pool.submit(backup, db_path, tmp_path / "copy.db")
            result = copying.result(timeout=60)
        finally:
            writer.execute("COMMIT")
            writer.close()
    # Then: it ended before the writer committed, with the committed rows only
    assert result.schema_version == store_schema.SCHEMA_VERSION
    assert table_counts(tmp_path / "copy.db")["users"] == DEMO_COUNTS["users"]
    assert table_counts(db_path)["users"] == DEMO_COUNTS["users"] + 1


def test_backup__existing_destination__refused_unless_force(invoke, db_path, tmp_path):
    # Given: a file where the backup should go
    existing = tmp_path / "existing.db"
    existing.write_bytes(b"keep me")
    # When / Then: refused, the file kept
    refused = invoke("backup", str(existing), db=str(db_path))
    assert refused.exit_code == 1
    assert "already exists" in refused.output and "--force" in refused.output
    assert existing.read_bytes() == b"keep me"
    # When / Then: with --force, replaced by a full copy
    forced = invoke("backup", str(existing), "--force", db=str(db_path))
    assert forced.exit_code == 0, forced.output
    assert table_counts(existing)["users"] == DEMO_COUNTS["users"]
    assert not list(tmp_path.glob(".existing.db.*.tmp"))


def test_backup__missing_database__refused_and_not_created(invoke, tmp_path):
    missing = tmp_path / "missing.db"
    result = invoke("backup", str(tmp_path / "copy.db"), db=str(missing))
    assert result.exit_code == 2
    assert "does not exist" in result.output and "flagadmin init-db" in result.output
    assert not missing.exists()
    assert not (tmp_path / "copy.db").exists()


def test_backup__restore_by_copying_over_a_stopped_database__served_again(db_path, tmp_path):
    """docs/operations.md's restore steps: stop the server, remove the database's -wal and -shm, copy
    the backup over the database file, start the server."""
    # Given: a backup, then a change made after it
    copy = tmp_path / "copy.db"
    backup(db_path, copy)
    conn = sqlite3.connect(db_path)
    conn.execute("DELETE FROM favorite_features")
    conn.commit()
    conn.close()
    # When: restored as docs/operations.md says
    for suffix in ("-wal", "-shm"):
        Path(f"{db_path}{suffix}").unlink(missing_ok=True)
    shutil.copyfile(copy, db_path)
    # Then: the data is back, and the server serves it
    assert table_counts(db_path)["favorite_features"] == DEMO_COUNTS["favorite_features"]
    admin = new_admin_token()
    server = LiveServer(db_path, env={"FLAGADMIN_ADMIN_TOKEN": admin})
    try:
        assert server.request("GET", "/api/admin/ui-config", {"Authorization": admin}).status == 200
    finally:
        server.stop()


def test_backup__every_table_holds_rows__sound_copy(db_path, tmp_path):
    """A backup of a database where every table holds rows (the demo data, plus rows in the
    tables it leaves empty) passes the copy's integrity check: on SQLite 3.40 (Debian 12's) a
    WITHOUT ROWID table with a NOT NULL column before a key column failed it (schema 10)."""
    # Given: at least one row in every table
    conn = sqlite3.connect(db_path, isolation_level=None)
    at = "2026-01-01T00:00:00.000Z"
    conn.executescript(
        "PRAGMA foreign_keys = ON; BEGIN;"
        "INSERT INTO api_tokens (digest, kind, user_id, name, created_at)"
        f" VALUES ('{'a' * 64}', 'admin', NULL, 'x', '{at}');"
        f"INSERT INTO scim_tokens (digest, created_at, revoked_at) VALUES ('{'c' * 64}', '{at}', '{at}');"
        "INSERT INTO directory_groups (display_name, name_key, created_at, last_modified)"
        f" VALUES ('Ops', 'ops', '{at}', '{at}');"
        "INSERT INTO directory_group_members (group_id, user_id) SELECT id, 1 FROM directory_groups;"
        "INSERT INTO group_root_roles VALUES ('ops', 'Ops', 'Editor');"
        "INSERT INTO group_project_roles (group_key, group_name, project_id, role)"
        " VALUES ('ops', 'Ops', 'default', 'Member');"
        f"INSERT INTO events (type, created_at, created_by) VALUES ('feature-created', '{at}', 'admin');"
        "INSERT INTO integration_deliveries"
        " (event_id, integration_id, webhook_id, next_attempt_at, created_at)"
        f" SELECT max(e.id), min(i.id), 'w', '{at}', '{at}' FROM events e, integrations i;"
        "INSERT INTO integration_options (integration_id, created_at)"
        f" SELECT min(id), '{at}' FROM integrations;"
        "INSERT INTO feature_tags (feature_name, type, value) SELECT min(name), 'simple', 'ab' FROM features;"
        f"INSERT INTO strategy_types (name, created_at) VALUES ('custom', '{at}');"
        f"INSERT INTO segments (name, created_at) VALUES ('beta', '{at}');"
        "INSERT INTO feature_strategies (id, feature_name, environment, strategy_name, created_at)"
        f" SELECT 's1', min(name), 'development', 'default', '{at}' FROM features;"
        "INSERT INTO feature_strategy_segments (strategy_id, segment_id) SELECT 's1', min(id) FROM segments;"
        "INSERT INTO feature_variants (feature_name, environment)"
        " SELECT min(name), 'development' FROM features;"
        "INSERT INTO feature_dependencies (child, parent) SELECT min(name), max(name) FROM features;"
        f"INSERT INTO roles (name, created_at) VALUES ('Auditor', '{at}');"
        "INSERT INTO role_permissions (role, permission) VALUES ('Auditor', 'UPDATE_FEATURE');"
        "INSERT INTO client_applications (app_name, created_at, updated_at)"
        f" VALUES ('shop', '{at}', '{at}');"
        "INSERT INTO client_instances (app_name, instance_id, created_at, last_seen)"
        f" VALUES ('shop', 'i1', '{at}', '{at}');"
        "INSERT INTO client_application_usage VALUES ('shop', 'default', 'development');"
        "INSERT INTO client_metrics (feature_name, app_name, environment, hour)"
        f" VALUES ('f', 'shop', 'development', '{at}');"
        "INSERT INTO unknown_flags VALUES ('nope', 'shop', 'development', '{at}');"
        "COMMIT;"
    )
    conn.close()
    empty = [name for name, n in table_counts(db_path).items() if n == 0]
    assert empty == []
    # When
    copy = tmp_path / "copy.db"
    result = flagadmin("backup", str(copy), "--db", str(db_path))
    # Then
    assert result.returncode == 0, result.stderr
    assert pragma(copy, "integrity_check") == "ok"
    assert table_counts(copy) == table_counts(db_path)
