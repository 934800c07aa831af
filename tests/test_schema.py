"""Storage: every connection's durability settings, and schema versions: real upgrades,
upgrades that succeed and fail (rolled back whole), new files, newer databases refused."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from flagadmin.store import connect
from flagadmin.store import schema as store_schema

from helpers import fingerprint, flagadmin, log_as_in_version_6, pragma, table_counts, users_as_in_version_2


def test_connect__every_connection__wal_and_durable_commits(db_path):
    """docs/operations.md "Durability": what makes a 200 durable beyond a process crash (which
    the SIGKILL tests above cover) is WAL plus a synced log: synchronous=NORMAL with the group
    commit of WalSync on a WAL database (tests/test_group_commit.py)."""
    with connect(db_path) as conn:
        assert conn.pragma("journal_mode") == "wal"
        assert conn.pragma("synchronous") == 1  # NORMAL, the WAL synced by WalSync
        assert conn.pragma("foreign_keys") == 1


def test_connect__file_not_in_wal_mode__synchronous_full(tmp_path):
    """A file that is not (yet) in WAL mode has no WAL to sync afterwards: SQLite syncs each
    commit itself (FULL)."""
    path = tmp_path / "plain.db"
    sqlite3.connect(path).close()
    with connect(path) as conn:
        assert conn.pragma("journal_mode") == "delete"
        assert conn.pragma("synchronous") == 2  # FULL


ADD_NICKNAME = "ALTER TABLE users ADD COLUMN nickname TEXT;\nUPDATE users SET nickname = 'n-' || username;\n"


def columns(path: Path, table: str) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        return [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
    finally:
        conn.close()


CURRENT = store_schema.SCHEMA_VERSION
NEXT = CURRENT + 1


def test_ensure_schema__migration_to_next_version_succeeds__upgraded_and_data_intact(db_path, monkeypatch):
    # Given: a database at the current version with the demo data, and code one version ahead
    counts = table_counts(db_path)
    monkeypatch.setattr(store_schema, "SCHEMA_VERSION", NEXT)
    monkeypatch.setattr(store_schema, "MIGRATIONS", (*store_schema.MIGRATIONS, ADD_NICKNAME))
    # When
    found = store_schema.ensure_schema(db_path)
    # Then: upgraded, the migration's change is there, and nothing else changed
    assert found == CURRENT
    assert pragma(db_path, "user_version") == NEXT
    assert "nickname" in columns(db_path, "users")
    conn = sqlite3.connect(db_path)
    assert conn.execute("SELECT nickname FROM users WHERE username = 'alice'").fetchone() == ("n-alice",)
    conn.close()
    assert table_counts(db_path) == counts
    assert pragma(db_path, "integrity_check") == "ok"
    # and a second run is harmless
    assert store_schema.ensure_schema(db_path) == NEXT


def test_ensure_schema__migration_fails_halfway__old_version_and_nothing_of_it_left(db_path, monkeypatch):
    """The upgrade runs in one transaction: the statements that succeeded before the failing
    one are rolled back with it."""
    # Given: a migration whose fourth statement fails, after a CREATE, an ALTER and an UPDATE
    before = fingerprint(db_path)
    monkeypatch.setattr(store_schema, "SCHEMA_VERSION", NEXT)
    monkeypatch.setattr(
        store_schema,
        "MIGRATIONS",
        (
            *store_schema.MIGRATIONS,
            "CREATE TABLE audit_log (id INTEGER PRIMARY KEY);\n"
            + ADD_NICKNAME
            + "INSERT INTO nowhere VALUES (1);",
        ),
    )
    # When / Then: refused with a message that says the file was not changed
    with pytest.raises(
        store_schema.SchemaError, match=rf"from version {CURRENT} to {NEXT} failed \(no such table: nowhere\)"
    ):
        store_schema.ensure_schema(db_path)
    assert pragma(db_path, "user_version") == CURRENT
    assert "audit_log" not in table_counts(db_path)
    assert "nickname" not in columns(db_path, "users")
    assert fingerprint(db_path) == before
    assert pragma(db_path, "integrity_check") == "ok"


def test_init_db__migration_fails__clean_message_nonzero_exit(invoke, db_path, monkeypatch):
    # Given
    monkeypatch.setattr(store_schema, "SCHEMA_VERSION", NEXT)
    monkeypatch.setattr(
        store_schema, "MIGRATIONS", (*store_schema.MIGRATIONS, "ALTER TABLE nowhere ADD COLUMN x TEXT;")
    )
    # When
    result = invoke("init-db", db=str(db_path))
    # Then: a message, not a traceback
    assert result.exit_code == 1
    assert "failed (no such table: nowhere)" in result.output
    assert "not changed" in result.output
    assert "Traceback" not in result.output
    assert pragma(db_path, "user_version") == CURRENT


def test_ensure_schema__new_file__gets_schema_sql_without_migrations(tmp_path, monkeypatch):
    """A new database is created from schema.sql, the current schema; the migrations, which
    change existing tables, are for existing databases only."""
    # Given: code one version ahead whose migration alters a table
    monkeypatch.setattr(store_schema, "SCHEMA_VERSION", NEXT)
    monkeypatch.setattr(store_schema, "MIGRATIONS", (*store_schema.MIGRATIONS, ADD_NICKNAME))
    path = tmp_path / "new.db"
    # When
    found = store_schema.ensure_schema(path)
    # Then
    assert found == 0
    assert pragma(path, "user_version") == NEXT
    assert "users" in table_counts(path)


def _content_triggers(conn) -> int:
    return conn.execute("SELECT count(*) FROM sqlite_master WHERE type = 'trigger'").fetchone()[0]


def test_ensure_schema__version_1_database__upgraded_to_version_counters_and_triggers(db_path):
    """The real upgrade from version 1: features_project_health replaces features_project,
    and the version rows and their triggers appear, in one transaction, data intact."""
    # Given: the demo database taken back to version 1's shape
    conn = sqlite3.connect(db_path)
    log_as_in_version_6(conn)
    for (trigger,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall():
        conn.execute(f"DROP TRIGGER {trigger}")
    users_as_in_version_2(conn)
    conn.executescript(
        "DROP INDEX features_project_health;"
        "CREATE INDEX features_project ON features (project_id, archived_at);"
        "DELETE FROM settings WHERE key IN ('content_version', 'credentials_version');"
        "PRAGMA user_version = 1;"
    )
    conn.close()
    counts = table_counts(db_path)
    # When
    found = store_schema.ensure_schema(db_path)
    # Then
    assert found == 1
    assert pragma(db_path, "user_version") == CURRENT
    conn = sqlite3.connect(db_path)
    indexes = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    triggers = _content_triggers(conn)
    version = conn.execute("SELECT value FROM settings WHERE key = 'content_version'").fetchone()[0]
    conn.execute("UPDATE features SET stale = 1 WHERE name = 'dark-mode'")
    bumped = conn.execute("SELECT value FROM settings WHERE key = 'content_version'").fetchone()[0]
    conn.rollback()
    conn.close()
    assert "features_project_health" in indexes and "features_project" not in indexes
    fresh = db_path.parent / "fresh.db"
    store_schema.ensure_schema(fresh)
    assert triggers == _content_triggers(sqlite3.connect(fresh))
    assert int(bumped) == int(version) + 1
    assert table_counts(db_path) == {**counts, "settings": counts["settings"] + 2}


def test_ensure_schema__version_2_database__data_version_becomes_content_version(db_path):
    """The real 2 -> 3 upgrade: the counter keeps its value under its new name, the old
    triggers go, the new ones (content and credentials) count."""
    # Given: the demo database taken back to version 2's shape, its counter at 41
    conn = sqlite3.connect(db_path)
    log_as_in_version_6(conn)
    for (trigger,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall():
        conn.execute(f"DROP TRIGGER {trigger}")
    users_as_in_version_2(conn)
    for table in store_schema.CONTENT_TABLES:
        for change in ("insert", "update", "delete"):
            conn.execute(
                f"CREATE TRIGGER {table}_{change}_version AFTER {change.upper()} ON {table}"
                " BEGIN UPDATE settings SET value = value + 1 WHERE key = 'data_version'; END"
            )
    conn.executescript(
        "DELETE FROM settings WHERE key IN ('content_version', 'credentials_version');"
        "INSERT INTO settings (key, value) VALUES ('data_version', 41);"
        "PRAGMA user_version = 2;"
    )
    conn.close()
    # When
    assert store_schema.ensure_schema(db_path) == 2
    # Then
    conn = sqlite3.connect(db_path)
    names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
    counters = "SELECT key, value FROM settings WHERE key LIKE '%version' AND key <> 'rules_version'"
    values = dict(conn.execute(counters).fetchall())
    conn.execute("UPDATE users SET root_role = 'Admin' WHERE username = 'sam'")
    after = dict(conn.execute(counters).fetchall())
    conn.rollback()
    conn.close()
    assert not any(
        name.endswith("_version")
        and not name.endswith(("_content_version", "_credentials_version", "_rules_version"))
        for name in names
    )
    assert {k: int(v) for k, v in values.items()} == {"content_version": 41, "credentials_version": 0}
    assert {k: int(v) for k, v in after.items()} == {"content_version": 42, "credentials_version": 1}


def test_ensure_schema__version_5_database__state_triggers_count_real_changes_only(db_path):
    """The real 5 -> 6 upgrade: a user's active state and a group's key move the version
    counters when their value changes, not whenever a write assigns them."""
    # Given: the demo database with version 5's two unconditional triggers
    conn = sqlite3.connect(db_path)
    log_as_in_version_6(conn)
    conn.executescript(
        "DROP TRIGGER users_update_active_credentials_version;"
        "DROP TRIGGER directory_groups_update_versions;"
        "CREATE TRIGGER users_update_active_credentials_version AFTER UPDATE OF active, deleted_at ON users"
        " BEGIN UPDATE settings SET value = value + 1 WHERE key = 'credentials_version'; END;"
        "CREATE TRIGGER directory_groups_update_versions AFTER UPDATE OF id, name_key ON directory_groups"
        " BEGIN UPDATE settings SET value = value + 1"
        " WHERE key IN ('content_version', 'credentials_version'); END;"
        "PRAGMA user_version = 5;"
    )
    conn.close()
    # When
    assert store_schema.ensure_schema(db_path) == 5
    # Then
    conn = sqlite3.connect(db_path)

    def credentials() -> int:
        return int(conn.execute("SELECT value FROM settings WHERE key = 'credentials_version'").fetchone()[0])

    before = credentials()
    conn.execute("UPDATE users SET active = active, deleted_at = deleted_at WHERE username = 'alice'")
    unchanged = credentials()
    conn.execute("UPDATE users SET active = 0 WHERE username = 'alice'")
    deactivated = credentials()
    conn.execute(
        "INSERT INTO directory_groups (display_name, name_key, created_at, last_modified)"
        " VALUES ('Ops', 'ops', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')"
    )
    group_before = credentials()
    conn.execute("UPDATE directory_groups SET name_key = name_key, external_id = 'x' WHERE name_key = 'ops'")
    group_unchanged = credentials()
    conn.execute("UPDATE directory_groups SET name_key = 'ops team' WHERE name_key = 'ops'")
    group_renamed = credentials()
    conn.rollback()
    conn.close()
    assert pragma(db_path, "user_version") == CURRENT
    assert (unchanged, deactivated) == (before, before + 1)
    assert (group_unchanged, group_renamed) == (group_before, group_before + 1)


def test_serve__newer_database__exits_nonzero_with_message_and_file_untouched(db_path):
    # Given: a database written by a newer flagadmin
    conn = sqlite3.connect(db_path)
    conn.execute(f"PRAGMA user_version = {store_schema.SCHEMA_VERSION + 1}")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    before = db_path.read_bytes()
    # When
    result = flagadmin("serve", "--db", str(db_path), "--port", "0", timeout=30)
    # Then
    assert result.returncode != 0
    assert "newer" in result.stderr and "not changed" in result.stderr
    assert "Traceback" not in result.stderr
    assert db_path.read_bytes() == before


def test_ensure_schema__version_3_database__content_version_triggers_narrowed(db_path):
    """The real 3 -> 4 upgrade: the content_version triggers of a version 3 file,
    which fire on every write to users, features and feature_environments, are replaced by
    the narrow ones: a live flag's description no longer moves the version, its stale flag
    does."""
    # Given: the database taken back to version 3's unconditional triggers
    conn = sqlite3.connect(db_path)
    log_as_in_version_6(conn)
    for name, event, table in (
        ("users_insert", "INSERT", "users"),
        ("users_update", "UPDATE", "users"),
        ("features_update", "UPDATE", "features"),
        ("feature_environments_insert", "INSERT", "feature_environments"),
        ("feature_environments_update", "UPDATE", "feature_environments"),
        ("feature_environments_delete", "DELETE", "feature_environments"),
    ):
        conn.execute(f"DROP TRIGGER {name}_content_version")
        conn.execute(
            f"CREATE TRIGGER {name}_content_version AFTER {event} ON {table}"
            " BEGIN UPDATE settings SET value = value + 1 WHERE key = 'content_version'; END"
        )
    conn.execute("PRAGMA user_version = 3")
    conn.commit()
    conn.close()
    # When
    found = store_schema.ensure_schema(db_path)
    # Then
    assert found == 3
    conn = sqlite3.connect(db_path)
    version = "SELECT value FROM settings WHERE key = 'content_version'"
    before = int(conn.execute(version).fetchone()[0])
    live = "SELECT name FROM features WHERE archived_at IS NULL LIMIT 1"
    conn.execute(f"UPDATE features SET description = 'x' WHERE name = ({live})")
    assert int(conn.execute(version).fetchone()[0]) == before
    conn.execute(f"UPDATE features SET stale = 1 - stale WHERE name = ({live})")
    assert int(conn.execute(version).fetchone()[0]) == before + 1
    conn.rollback()
    conn.close()


def test_ensure_schema__version_4_database__features_creator_covers_the_dashboard_flags(db_path):
    """The real 4 -> 5 upgrade: features_creator gets 4.2's columns and
    features_name_listed is added, so a user's flags and favorites are read from indexes alone;
    project roles check "active" in the partial index users_inactive, and still drop the roles
    of a deactivated user."""
    # Given: the database taken back to version 4's indexes
    conn = sqlite3.connect(db_path)
    log_as_in_version_6(conn)
    conn.execute("DROP INDEX features_creator")
    conn.execute("DROP INDEX features_name_listed")
    conn.execute("CREATE INDEX features_creator ON features (created_by_user_id, created_at)")
    conn.execute("DROP VIEW direct_project_roles")
    conn.execute(
        "CREATE VIEW direct_project_roles AS SELECT pm.project_id, pm.user_id, pm.role"
        " FROM project_members pm JOIN users u ON u.id = pm.user_id WHERE coalesce(u.active, 1) = 1"
    )
    conn.execute("DROP INDEX users_inactive")
    conn.execute("PRAGMA user_version = 4")
    conn.commit()
    conn.close()
    # When
    found = store_schema.ensure_schema(db_path)
    # Then
    assert found == 4
    conn = sqlite3.connect(db_path)
    try:
        indexed = {
            name: [row[2] for row in conn.execute(f"PRAGMA index_info({name})")]
            for name in ("features_creator", "features_name_listed")
        }
        assert indexed == {
            "features_creator": [
                "created_by_user_id",
                "archived_at",
                "created_at",
                "name",
                "project_id",
                "type",
            ],
            "features_name_listed": ["name", "archived_at", "project_id", "type", "created_at"],
        }
        assert pragma(db_path, "user_version") == store_schema.SCHEMA_VERSION
        from flagadmin.store.personal_dashboard import _SQL

        plan = " | ".join(
            row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + _SQL["flags"]["sqlite"], {"user_id": 1})
        )
        assert "COVERING INDEX features_creator" in plan
        assert "COVERING INDEX features_name_listed" in plan
        view = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'direct_project_roles'").fetchone()[0]
        assert "INDEXED BY users_inactive" in view
        member = "SELECT user_id FROM project_members LIMIT 1"
        roles = f"SELECT count(*) FROM project_roles WHERE user_id = ({member})"
        assert conn.execute(roles).fetchone()[0] > 0
        conn.execute(f"UPDATE users SET active = 0 WHERE id = ({member})")
        assert conn.execute(roles).fetchone()[0] == 0
        conn.rollback()
    finally:
        conn.close()
