"""Stored states the schema does not allow (schema version 10), on both engines: every 0/1
column refuses NULL and any other value, an email's primary flag needs the email, and a
database of version 9 is upgraded to those rules with its rows (NULL active becomes 1)."""

from __future__ import annotations

import re
import sqlite3

import pytest

from flagadmin.store import connect
from flagadmin.store import schema as store_schema

#: SQLite's table_info, the same for a new and an upgraded database apart from defaults' quoting.
TABLE_INFO = 'SELECT name, type, "notnull", pk FROM pragma_table_info(?) ORDER BY cid'


def boolean_columns(schema: str) -> list[tuple[str, str, str]]:
    """Every ``(table, column, line)`` whose column is checked ``IN (0, 1)`` in ``schema``."""
    found, table = [], None
    for line in schema.splitlines():
        created = re.match(r"CREATE TABLE IF NOT EXISTS (\w+)", line)
        if created:
            table = created.group(1)
        checked = re.match(r"\s+(\w+)\s+INTEGER\b.*CHECK \((\w+) IN \(0, 1\)\)", line)
        if checked and table:
            found.append((table, checked.group(1), line))
    return found


@pytest.mark.parametrize("schema", ["sqlite", "postgresql"])
def test_schema_files__every_0_1_column__not_null(schema):
    """The class, in both schema files: a column checked IN (0, 1) is also NOT NULL (a CHECK
    lets NULL through), so a boolean is true or false, never null."""
    text = store_schema.schema_sql() if schema == "sqlite" else store_schema.postgresql_schema_sql()
    columns = boolean_columns(text)
    assert {column for _, column, _ in columns} >= {
        "active",
        "scim_managed",
        "stale",
        "impression_data",
        "enabled",
        "email_primary",
    }
    nullable = [line.strip() for _, c, line in columns if "NOT NULL" not in line and c != "email_primary"]
    assert nullable == []


def _refused(conn, sql: str, params=()) -> bool:
    try:
        with conn.write():
            conn.run(sql, params)
    except Exception:  # a constraint: StoreError, or the engine's own error for a program's bug
        return True
    return False


@pytest.mark.parametrize(
    ("table", "column", "where"),
    [
        ("users", "active", "username = 'alice'"),
        ("users", "scim_managed", "username = 'alice'"),
        ("features", "stale", "name = (SELECT min(name) FROM features)"),
        ("features", "impression_data", "name = (SELECT min(name) FROM features)"),
        ("feature_environments", "enabled", "feature_name = (SELECT min(name) FROM features)"),
        ("integrations", "enabled", "id = (SELECT min(id) FROM integrations)"),
    ],
)
def test_boolean_column__null_or_2__refused(database, table, column, where):
    """Every 0/1 column of the demo database refuses NULL and 2 (either engine)."""
    with connect(database) as conn:
        assert _refused(conn, f"UPDATE {table} SET {column} = NULL WHERE {where}")
        assert _refused(conn, f"UPDATE {table} SET {column} = 2 WHERE {where}")
        assert not _refused(conn, f"UPDATE {table} SET {column} = 1 - {column} WHERE {where}")


def test_users__email_primary_without_email__refused(database):
    """emails' primary is stated only beside an email; a new user is active unless told."""
    with connect(database) as conn:
        assert _refused(conn, "UPDATE users SET email = NULL, email_primary = 1 WHERE username = 'alice'")
        cleared = "UPDATE users SET email = NULL, email_primary = NULL WHERE username = 'alice'"
        assert not _refused(conn, cleared)
        with conn.write():
            conn.run("INSERT INTO users (id, username, root_role) VALUES (990, 'newcomer', 'Viewer')")
        assert conn.value("SELECT active FROM users WHERE id = 990") == 1


def _as_in_version_9(database: str, engine: str) -> None:
    """Take the demo database back to version 9's users (active NULL allowed, no email rule)
    and, on SQLite, group_project_roles' old column order; store the states version 9 let in."""
    if engine == "postgresql":
        with connect(database) as conn, conn.write():
            conn.run("ALTER TABLE users ALTER COLUMN active DROP NOT NULL")
            conn.run("ALTER TABLE users DROP CONSTRAINT users_email_primary_needs_email")
            conn.run("UPDATE settings SET value = '9' WHERE key = 'schema_version'")
    else:
        raw = sqlite3.connect(database, isolation_level=None)
        old_users = raw.execute("SELECT sql FROM sqlite_master WHERE name = 'users'").fetchone()[0]
        old_users = old_users.replace("active         INTEGER NOT NULL DEFAULT 1", "active INTEGER DEFAULT 1")
        old_users = old_users.replace(",\n    CHECK (email IS NOT NULL OR email_primary IS NULL)", "")
        assert "active INTEGER DEFAULT 1" in old_users and "email IS NOT NULL" not in old_users
        raw.executescript(
            "PRAGMA foreign_keys = OFF; BEGIN;"
            + old_users.replace("users (", "users_v9 (", 1)
            + ";INSERT INTO users_v9 SELECT * FROM users; DROP TABLE users;"
            "PRAGMA legacy_alter_table = ON; ALTER TABLE users_v9 RENAME TO users;"
            "CREATE TABLE group_project_roles_v9 (group_key TEXT NOT NULL, group_name TEXT NOT NULL,"
            " project_id TEXT NOT NULL, role TEXT NOT NULL CHECK (length(role) > 0),"
            " PRIMARY KEY (group_key, project_id, role)) WITHOUT ROWID;"
            "DROP TABLE group_project_roles;"
            "ALTER TABLE group_project_roles_v9 RENAME TO group_project_roles;"
            "PRAGMA legacy_alter_table = OFF; COMMIT;"
        )
        raw.executescript(store_schema.schema_sql())  # the indexes and triggers the drops took
        raw.execute("PRAGMA user_version = 9")
        raw.close()
    with connect(database) as conn, conn.write():
        conn.run("UPDATE users SET active = NULL WHERE username = 'alice'")
        conn.run("UPDATE users SET email = NULL, email_primary = 1 WHERE username = 'bob'")
        conn.run(
            "INSERT INTO group_project_roles (group_key, group_name, project_id, role)"
            " VALUES ('ops', 'Ops', 'default', 'Member')"
        )


def test_ensure_schema__version_9_database__upgraded_to_the_rules_with_its_rows(database, engine, tmp_path):
    """The real 9 -> 10 upgrade on either engine: NULL active becomes 1, a primary flag without
    an email goes, the rules hold afterwards, every row is kept; on SQLite the rebuilt tables
    are those of a new database (columns, indexes, triggers) and the file passes
    integrity_check with group_project_roles holding rows."""
    # Given
    _as_in_version_9(database, engine)
    with connect(database) as conn:
        users_before = conn.value("SELECT count(*) FROM users")
    # When
    assert store_schema.ensure_schema(database) == 9
    # Then
    with connect(database) as conn:
        assert conn.value("SELECT count(*) FROM users") == users_before
        assert conn.value("SELECT active FROM users WHERE username = 'alice'") == 1
        assert conn.value("SELECT email_primary FROM users WHERE username = 'bob'") is None
        assert conn.value("SELECT count(*) FROM group_project_roles") == 1
        assert _refused(conn, "UPDATE users SET active = NULL WHERE username = 'alice'")
        assert _refused(conn, "UPDATE users SET email_primary = 1 WHERE username = 'bob'")
        assert _refused(conn, "UPDATE users SET root_role = 'Owner' WHERE username = 'bob'")
    if engine == "postgresql":
        return
    new = tmp_path / "new.db"
    store_schema.ensure_schema(new)
    upgraded, fresh = sqlite3.connect(database), sqlite3.connect(new)
    try:
        assert upgraded.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert upgraded.execute("PRAGMA user_version").fetchone()[0] == store_schema.SCHEMA_VERSION
        objects = "SELECT type, name, tbl_name FROM sqlite_master ORDER BY name"
        assert upgraded.execute(objects).fetchall() == fresh.execute(objects).fetchall()
        for table in ("users", "group_project_roles"):
            columns = upgraded.execute(TABLE_INFO, [table]).fetchall()
            assert columns == fresh.execute(TABLE_INFO, [table]).fetchall()
    finally:
        upgraded.close()
        fresh.close()


def test_schema__without_rowid_tables__primary_key_columns_first(tmp_path):
    """The class behind backups refused on SQLite 3.40: every WITHOUT ROWID table declares its
    primary key's columns first, in the key's order (see schema.sql's group_project_roles)."""
    path = tmp_path / "new.db"
    store_schema.ensure_schema(path)
    conn = sqlite3.connect(path)
    try:
        tables = [
            name
            for name, sql in conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'")
            if "WITHOUT ROWID" in sql.upper()
        ]
        assert len(tables) >= 5
        for table in tables:
            info = conn.execute("SELECT name, pk FROM pragma_table_info(?) ORDER BY cid", [table]).fetchall()
            keys = sorted((pk, name) for name, pk in info if pk)
            assert [name for name, _ in info[: len(keys)]] == [name for _, name in keys], table
    finally:
        conn.close()
