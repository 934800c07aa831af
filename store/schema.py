"""Creating the database from ``schema.sql`` and upgrading older schemas.

Durability: the database runs in WAL mode, and a write returns only once its commit is on disk
(``synchronous=NORMAL`` plus the group commit of :class:`~flagadmin.store.engine.WalSync`: one
``fdatasync`` of the WAL shared by the commits made meanwhile), so a committed transaction
survives a crash of the process or of the machine (power loss included, as far as the disk
honours fsync).

It is over 400 lines because every upgrade of the schema since version 1, on both engines,
lives here: an upgrade is never removed, so that any older database can be brought up to date.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import sqlite_utils
from sqlite_utils.create_table_parser import Check

from ..timestamps import now_rfc3339
from .engine import Connection, StoreError, connect

#: Version of the schema this code writes and reads, kept in ``PRAGMA user_version``.
SCHEMA_VERSION = 11

#: Tables whose every write moves the content version (``settings.content_version``).
CONTENT_TABLES = (
    "users",
    "projects",
    "project_members",
    "features",
    "feature_environments",
    "favorite_features",
)

#: Upgrades from version N-1 to N, as SQL run before ``schema.sql`` (which then creates
#: whatever is missing). Index 0 upgrades 0 (a new, empty file) to 1 and is empty.
MIGRATIONS: tuple[str, ...] = (
    "",
    # 1 -> 2: features_project_health replaces features_project; schema.sql adds it, the
    # version row and its triggers.
    "DROP INDEX IF EXISTS features_project;",
    # 2 -> 3: data_version is renamed content_version (what it counts), with new triggers
    # from schema.sql; credentials_version and its triggers are new.
    "".join(
        f"DROP TRIGGER IF EXISTS {table}_{change}_version;"
        for table in CONTENT_TABLES
        for change in ("insert", "update", "delete")
    )
    + "UPDATE settings SET key = 'content_version' WHERE key = 'data_version';"
    # SCIM provisioning: the directory's columns of users; existing users are active
    # and not SCIM-managed. Their indexes (userName unique whatever its case, externalId
    # unique), the new tables, views and triggers come from schema.sql, run right after.
    + "ALTER TABLE users ADD COLUMN external_id TEXT;"
    + "ALTER TABLE users ADD COLUMN given_name TEXT;"
    + "ALTER TABLE users ADD COLUMN family_name TEXT;"
    + "ALTER TABLE users ADD COLUMN formatted_name TEXT;"
    + "ALTER TABLE users ADD COLUMN email_type TEXT;"
    + "ALTER TABLE users ADD COLUMN email_primary INTEGER CHECK (email_primary IN (0, 1));"
    + "ALTER TABLE users ADD COLUMN active INTEGER DEFAULT 1 CHECK (active IN (0, 1));"
    + "ALTER TABLE users ADD COLUMN scim_managed INTEGER NOT NULL DEFAULT 0 CHECK (scim_managed IN (0, 1));"
    + "ALTER TABLE users ADD COLUMN created_at TEXT;"
    + "ALTER TABLE users ADD COLUMN last_modified TEXT;"
    + "ALTER TABLE users ADD COLUMN version INTEGER NOT NULL DEFAULT 1;"
    + "ALTER TABLE users ADD COLUMN deleted_at TEXT;",
    # 3 -> 4: content_version no longer moves for writes that 4.2 and 4.4 cannot show (issue
    # 13); schema.sql creates the triggers again with their conditions.
    "".join(
        f"DROP TRIGGER IF EXISTS {trigger}_content_version;"
        for trigger in (
            "users_insert",
            "users_update",
            "features_update",
            "feature_environments_insert",
            "feature_environments_update",
            "feature_environments_delete",
        )
    ),
    # 4 -> 5: features_creator covers 4.2's flags query (schema.sql creates it again with its
    # new columns, and features_name_listed beside it); the two arms of project_roles check
    # "active" in the new partial index users_inactive.
    "DROP INDEX IF EXISTS features_creator;"
    "DROP VIEW IF EXISTS direct_project_roles;"
    "DROP VIEW IF EXISTS granted_project_roles;",
    # 5 -> 6: a user's active state and a group's key move the version counters only when their
    # value changes, not whenever a SCIM write assigns them; schema.sql creates the
    # two triggers again with that condition.
    "DROP TRIGGER IF EXISTS users_update_active_credentials_version;"
    "DROP TRIGGER IF EXISTS directory_groups_update_versions;",
    # 6 -> 7: the integration event log keeps each row's 4.1 item in its wire bytes (item)
    # instead of event, details and state_details. The table is built again (SQLite
    # cannot drop those columns), each item made by the concatenation that 4.1's page query ran
    # for every request until now, so every page keeps its bytes.
    "CREATE TABLE integration_events_v7 ("
    " id INTEGER PRIMARY KEY,"
    " integration_id INTEGER NOT NULL REFERENCES integrations (id),"
    " seq INTEGER NOT NULL CHECK (seq > 0),"
    " created_at TEXT NOT NULL,"
    " state TEXT NOT NULL CHECK (state IN ('success', 'failed', 'successWithErrors')),"
    " item BLOB NOT NULL CHECK (typeof(item) = 'blob'),"
    " UNIQUE (integration_id, seq));"
    "INSERT INTO integration_events_v7 (id, integration_id, seq, created_at, state, item)"
    " SELECT id, integration_id, seq, created_at, state,"
    """ CAST('{"id":"' || id || '","integrationId":' || integration_id || ',"createdAt":"' || created_at"""
    """ || '","state":' || json_quote(state) || ',"stateDetails":' || json_quote(state_details)"""
    """ || ',"event":' || event || ',"details":' || details || '}' AS BLOB)"""
    " FROM integration_events ORDER BY id;"
    "DROP TABLE integration_events;"
    # A plain RENAME checks every view of the schema, and an upgrade from before version 5 has
    # views whose tables schema.sql only makes afterwards: the legacy rename renames this table
    # (and its own index) alone; no view or trigger names integration_events.
    "PRAGMA legacy_alter_table = ON;"
    "ALTER TABLE integration_events_v7 RENAME TO integration_events;"
    "PRAGMA legacy_alter_table = OFF;",
    # 7 -> 8: the log is clustered by integration: each integration with log rows
    # gets a log number (1, 2, 3, ... in id order), and the table is built again with its rowid
    # log_key = log number * 2^40 + seq, rows inserted in that order. Same rows, same items.
    "CREATE TABLE IF NOT EXISTS integration_logs ("
    " integration_id INTEGER PRIMARY KEY REFERENCES integrations (id),"
    " log_no INTEGER NOT NULL UNIQUE CHECK (log_no BETWEEN 1 AND 8388607));"
    "DELETE FROM integration_logs;"
    "INSERT INTO integration_logs (integration_id, log_no)"
    " SELECT integration_id, row_number() OVER (ORDER BY integration_id)"
    " FROM (SELECT DISTINCT integration_id FROM integration_events);"
    "CREATE TABLE integration_events_v8 ("
    " log_key INTEGER PRIMARY KEY,"
    " id INTEGER NOT NULL UNIQUE,"
    " integration_id INTEGER NOT NULL REFERENCES integrations (id),"
    " seq INTEGER NOT NULL CHECK (seq BETWEEN 1 AND 1099511627775),"
    " created_at TEXT NOT NULL,"
    " state TEXT NOT NULL CHECK (state IN ('success', 'failed', 'successWithErrors')),"
    " item BLOB NOT NULL CHECK (typeof(item) = 'blob'),"
    " UNIQUE (integration_id, seq),"
    " CHECK (log_key % 1099511627776 = seq));"
    "INSERT INTO integration_events_v8 (log_key, id, integration_id, seq, created_at, state, item)"
    " SELECT l.log_no * 1099511627776 + e.seq, e.id, e.integration_id, e.seq, e.created_at, e.state, e.item"
    " FROM integration_events e JOIN integration_logs l ON l.integration_id = e.integration_id"
    " ORDER BY 1;"
    "DROP TABLE integration_events;"
    "PRAGMA legacy_alter_table = ON;"
    "ALTER TABLE integration_events_v8 RENAME TO integration_events;"
    "PRAGMA legacy_alter_table = OFF;",
    # 8 -> 9: archived flags keep their 4.4 object in its wire bytes (features.archived_item).
    # schema.sql makes the view and the triggers that write it, FILLS[9] fills it;
    # features_archived_order replaces features_archived (4.4's order, names included), and
    # features_update_content_version is made again with the columns it watches (not
    # archived_item, which the new triggers write).
    "ALTER TABLE features ADD COLUMN archived_item BLOB"
    " CHECK (archived_item IS NULL OR typeof(archived_item) = 'blob');"
    "DROP INDEX IF EXISTS features_archived;"
    "DROP TRIGGER IF EXISTS features_update_content_version;",
    # 9 -> 10: no stored state outside what the schema allows. A user's active state is never
    # NULL (it was "never stated", read as active everywhere: it becomes 1), and emails' primary
    # is stated only beside an email; REBUILDS[10] then builds users again with those rules.
    "UPDATE users SET active = 1 WHERE active IS NULL;"
    "UPDATE users SET email_primary = NULL WHERE email IS NULL;",
    # 10 -> 11: rollout rules, roles and SDK traffic: new tables, which schema.sql makes.
    "",
)

#: The description of the roles the upgrade to version 11 declares (:data:`FILLS`); it also
#: tells them from roles declared since (no quote in it: it is written into the SQL).
UPGRADE_11_ROLES = (
    "Declared by the upgrade to schema version 11 with the rights every role had before: every "
    "project permission in every environment."
)

#: Upgrades that need what ``schema.sql`` (or ``schema.postgresql.sql``) makes: for version N,
#: SQL run right after the schema file when a database is upgraded from before N, in the same
#: transaction. Both engines read the same text: it names only tables and views that both
#: schema files make. A new database needs none of it (it has no rows to carry over).
FILLS: dict[int, str] = {
    # 9: every archived flag's 4.4 item, made by the view that the triggers make them with.
    9: "UPDATE features SET archived_item ="
    " (SELECT j.item FROM archived_feature_json j WHERE j.name = features.name)"
    " WHERE archived_at IS NOT NULL;",
    # 11: project roles get permissions. Before, any role, whatever its name, let its holders
    # change everything in the project; the schema file declares Owner and Member, and every
    # other role name that users hold (project_members) or SCIM groups grant
    # (group_project_roles) is declared here as a custom role with the rights it had: every
    # project permission in every environment (Owner's rows). An operator narrows one with
    # `flagadmin role update` (docs/permissions.md). A new database has only Owner and Member.
    11: "INSERT INTO roles (name, description, built_in, created_at)"
    f" SELECT u.role, '{UPGRADE_11_ROLES}', 0, (SELECT o.created_at FROM roles o WHERE o.name = 'Owner')"
    " FROM (SELECT role FROM project_members UNION SELECT role FROM group_project_roles) u"
    " WHERE NOT EXISTS (SELECT 1 FROM roles r WHERE r.name = u.role);"
    "INSERT INTO role_permissions (role, permission, environment)"
    " SELECT r.name, o.permission, o.environment FROM roles r"
    " JOIN role_permissions o ON o.role = 'Owner'"
    f" WHERE r.built_in = 0 AND r.description = '{UPGRADE_11_ROLES}' AND NOT EXISTS (SELECT 1"
    " FROM role_permissions x WHERE x.role = r.name AND x.permission = o.permission"
    " AND x.environment = o.environment);",
}


def _rebuild_users(conn: Connection) -> None:
    """10: ``users`` built again by sqlite-utils' ``table.transform()`` (which copies the rows,
    the column and table constraints and the indexes; ``schema.sql`` then makes the dropped
    triggers again): ``active`` NOT NULL DEFAULT 1, and the table CHECK that ``email_primary``
    is NULL without an email."""
    _transform(
        conn,
        "users",
        not_null={"active"},
        defaults={"active": 1},
        checks=(EMAIL_PRIMARY_NEEDS_EMAIL,),
    )


def _rebuild_group_project_roles(conn: Connection) -> None:
    """10: ``group_project_roles`` built again with its primary key's columns first.

    SQLite 3.40.x (Debian 12's, and the one-file binary's) reports a WITHOUT ROWID table whose
    NOT NULL column is declared before a primary key column as "NULL value in
    group_project_roles.group_name" in ``PRAGMA integrity_check`` once it holds rows, so
    ``flagadmin backup`` refused sound databases. ``table.transform()`` cannot rebuild a WITHOUT
    ROWID table (it copies the rowid, and makes a rowid table), so this one is SQL: a copy, the
    old table dropped, the copy renamed (legacy rename: views are left as they are). A
    database from before version 3 has no such table yet: ``schema.sql`` makes it as it is now.
    """
    if not conn.value("SELECT count(*) FROM sqlite_master WHERE name = 'group_project_roles'"):
        return
    for statement in (
        "CREATE TABLE group_project_roles_v10 ("
        " group_key TEXT NOT NULL, project_id TEXT NOT NULL,"
        " role TEXT NOT NULL CHECK (length(role) > 0), group_name TEXT NOT NULL,"
        " PRIMARY KEY (group_key, project_id, role)) WITHOUT ROWID",
        "INSERT INTO group_project_roles_v10 (group_key, project_id, role, group_name)"
        " SELECT group_key, project_id, role, group_name FROM group_project_roles",
        "DROP TABLE group_project_roles",
        "PRAGMA legacy_alter_table = ON",
        "ALTER TABLE group_project_roles_v10 RENAME TO group_project_roles",
        "PRAGMA legacy_alter_table = OFF",
    ):
        conn.run(statement)


#: The columns of ``api_tokens`` before schema version 11, which every older database has.
_API_TOKEN_COLUMNS_10 = "id, digest, kind, user_id, name, created_at, last_used_at, expires_at, revoked_at"


def _rebuild_api_tokens(conn: Connection) -> None:
    """11: ``api_tokens`` built again with the kinds ``client`` and ``frontend`` and the columns
    ``type``, ``environment`` and ``projects`` (an API token's reference type and scope). SQL,
    as :func:`_rebuild_group_project_roles`: the kind's CHECK is a column constraint and the
    user's is replaced, neither of which ``table.transform()`` rewrites. Every row is copied
    (an admin token's ``type`` is ``admin``); the triggers the drop takes are made again by
    ``schema.sql``. A table that has the new columns already (a database made by this schema
    and marked older, as the upgrade tests make them) keeps their values."""
    columns = {row["name"] for row in conn.all("SELECT name FROM pragma_table_info('api_tokens')")}
    if not columns:
        return
    scope = (
        "type, environment, projects"
        if {"type", "environment", "projects"} <= columns
        else "CASE kind WHEN 'admin' THEN 'admin' END, NULL, NULL"
    )
    for statement in (
        "CREATE TABLE api_tokens_v11 ("
        " id INTEGER PRIMARY KEY,"
        " digest TEXT NOT NULL UNIQUE CHECK (length(digest) = 64),"
        " kind TEXT NOT NULL CHECK (kind IN ('admin', 'personal', 'client', 'frontend')),"
        " user_id INTEGER REFERENCES users (id),"
        " name TEXT NOT NULL, created_at TEXT NOT NULL, last_used_at TEXT, expires_at TEXT,"
        " revoked_at TEXT, type TEXT, environment TEXT, projects TEXT,"
        " CHECK ((kind = 'personal') = (user_id IS NOT NULL)),"
        " CHECK (CASE kind WHEN 'personal' THEN type IS NULL"
        " WHEN 'client' THEN type IN ('client', 'backend') ELSE type = kind END),"
        " CHECK ((kind IN ('client', 'frontend')) = (environment IS NOT NULL)),"
        " CHECK (projects IS NULL OR (kind IN ('client', 'frontend') AND json_valid(projects))))",
        f"INSERT INTO api_tokens_v11 ({_API_TOKEN_COLUMNS_10}, type, environment, projects)"
        f" SELECT {_API_TOKEN_COLUMNS_10}, {scope} FROM api_tokens ORDER BY id",
        "DROP TABLE api_tokens",
        "PRAGMA legacy_alter_table = ON",
        "ALTER TABLE api_tokens_v11 RENAME TO api_tokens",
        "PRAGMA legacy_alter_table = OFF",
    ):
        conn.run(statement)


def _add_event_groups(conn: Connection) -> None:
    """11: ``events.group_id``, the transaction group of each event (the reference's
    ``groupId``; NULL for the events already there). A step rather than a migration's
    ``ALTER TABLE``, which SQLite cannot make conditional: a table that has the column already
    (a database made by this schema and marked older, as the upgrade tests make them) keeps it.
    The log's indexes and ``event_counts`` come from ``schema.sql``."""
    columns = {row["name"] for row in conn.all("SELECT name FROM pragma_table_info('events')")}
    if columns and "group_id" not in columns:
        conn.run("ALTER TABLE events ADD COLUMN group_id INTEGER")


#: The table CHECK of ``users`` that an email's primary flag needs the email (schema version 10).
EMAIL_PRIMARY_NEEDS_EMAIL = "email IS NOT NULL OR email_primary IS NULL"

#: Upgrades that rebuild tables on SQLite, for version N: run after the :data:`MIGRATIONS` up to
#: the current version and before ``schema.sql`` (which makes again the triggers that a dropped
#: table took with it and the tables still missing), in the upgrade's one transaction.
REBUILDS: dict[int, tuple[Callable[[Connection], None], ...]] = {
    10: (_rebuild_users, _rebuild_group_project_roles),
    11: (_rebuild_api_tokens, _add_event_groups),
}


class _Transformed(sqlite_utils.db.Table):
    """A table that sqlite-utils' ``transform()`` builds again with ``added`` table CHECKs
    besides the ones it copies (``transform()`` copies a table's CHECKs; it has no parameter
    that adds one)."""

    def __init__(self, db: sqlite_utils.Database, name: str, added: tuple[str, ...]):
        super().__init__(db, name)
        self._added = [Check(check) for check in added]

    @property
    def checks(self) -> list[Check]:
        return [*super().checks, *self._added]


def _transform(conn: Connection, table: str, *, checks: tuple[str, ...] = (), **changes: Any) -> None:
    """Build ``table`` again with sqlite-utils' ``table.transform(**changes)`` inside the open
    transaction, adding the table CHECKs ``checks``: the rows are copied, and a row that breaks
    a new rule fails the upgrade (rolled back)."""
    database = conn.table(table).db
    _Transformed(database, table, checks).transform(**changes)


#: What a new install starts with, as the reference server's does: the project ``default`` and
#: the environments ``development`` and ``production``, so that a first flag can be created
#: without a seed. Made only in a new database (an upgrade adds nothing to an existing one);
#: a seed that declares them identically still loads (store/seed.py).
NEW_INSTALL_PROJECT = {"id": "default", "name": "Default", "description": "Default project"}
NEW_INSTALL_ENVIRONMENTS = (
    {"name": "development", "type": "development", "sort_order": 0},
    {"name": "production", "type": "production", "sort_order": 0},
)


def new_install_sql(now: str) -> str:
    """The SQL (both engines) that writes :data:`NEW_INSTALL_PROJECT` and
    :data:`NEW_INSTALL_ENVIRONMENTS`, created at ``now`` (RFC 3339, no quote in it)."""
    project = NEW_INSTALL_PROJECT
    environments = ", ".join(
        f"('{e['name']}', '{e['type']}', {e['sort_order']}, '{now}')" for e in NEW_INSTALL_ENVIRONMENTS
    )
    return (
        "INSERT INTO projects (id, name, description)"
        f" VALUES ('{project['id']}', '{project['name']}', '{project['description']}');"
        f"INSERT INTO environments (name, type, sort_order, created_at) VALUES {environments};"
    )


def fills(found: int) -> str:
    """The :data:`FILLS` of an upgrade from version ``found`` (none for a new database)."""
    if not found:
        return ""
    return "".join(FILLS.get(version, "") for version in range(found + 1, SCHEMA_VERSION + 1))


#: The same versioned migrations on PostgreSQL, by the same version numbers: N-1 -> N as SQL
#: run before ``schema.postgresql.sql``. PostgreSQL support begins at version 3, so a
#: PostgreSQL database is either new (version 0: the schema alone) or at 3 or later.
POSTGRESQL_MIGRATIONS: tuple[str, ...] = (
    "",
    "",
    "",
    # 3 -> 4: the schema file replaces the content_version triggers of users, features and
    # feature_environments with narrower ones.
    "",
    # 4 -> 5: as on SQLite, features_creator is made again with 4.2's columns.
    "DROP INDEX IF EXISTS features_creator;",
    # 5 -> 6: the schema file replaces users_active_credentials_version with one that compares
    # the rows' old and new state.
    "",
    # 6 -> 7: as on SQLite, each row's 4.1 item is stored in its wire bytes (item), made by the
    # concatenation the page query used to run, and event, details and state_details go.
    "ALTER TABLE integration_events ADD COLUMN item BYTEA;"
    """UPDATE integration_events SET item = convert_to('{"id":"' || id || '","integrationId":'"""
    """ || integration_id || ',"createdAt":"' || created_at || '","state":' || to_json(state)::text"""
    """ || ',"stateDetails":' || to_json(state_details)::text || ',"event":' || event"""
    """ || ',"details":' || details || '}', 'UTF8');"""
    "ALTER TABLE integration_events ALTER COLUMN item SET NOT NULL,"
    " DROP COLUMN state_details, DROP COLUMN event, DROP COLUMN details;",
    # 7 -> 8: nothing. The SQLite log is clustered by integration (log_key); PostgreSQL's heap
    # keeps no order, and a page stays one backward scan of the (integration_id, seq) index.
    "",
    # 8 -> 9: as on SQLite, features.archived_item, written by the schema file's triggers and
    # filled by FILLS[9]; features_archived_order replaces features_archived.
    "ALTER TABLE features ADD COLUMN IF NOT EXISTS archived_item BYTEA;"
    "DROP INDEX IF EXISTS features_archived;",
    # 9 -> 10: as on SQLite, active is never NULL and emails' primary needs an email. (The
    # layout of group_project_roles is SQLite's concern only.)
    "UPDATE users SET active = 1 WHERE active IS NULL;"
    "UPDATE users SET email_primary = NULL WHERE email IS NULL;"
    "ALTER TABLE users ALTER COLUMN active SET NOT NULL;"
    # dropped first if there: a database made by this schema file and then marked older (as
    # the upgrade tests make them) has it already
    "ALTER TABLE users DROP CONSTRAINT IF EXISTS users_email_primary_needs_email;"
    "ALTER TABLE users ADD CONSTRAINT users_email_primary_needs_email"
    " CHECK (email IS NOT NULL OR email_primary IS NULL);",
    # 10 -> 11: as on SQLite, new tables; and api_tokens takes the kinds client and frontend
    # with their scope (type, environment, projects), its checks replaced by named ones (each
    # dropped first if there, as in 9 -> 10).
    # events.group_id, the transaction group of each event (SQLite: REBUILDS[11]).
    "ALTER TABLE events ADD COLUMN IF NOT EXISTS group_id BIGINT;"
    "ALTER TABLE api_tokens ADD COLUMN IF NOT EXISTS type TEXT,"
    " ADD COLUMN IF NOT EXISTS environment TEXT, ADD COLUMN IF NOT EXISTS projects TEXT;"
    "UPDATE api_tokens SET type = 'admin' WHERE kind = 'admin' AND type IS NULL;"
    "ALTER TABLE api_tokens DROP CONSTRAINT IF EXISTS api_tokens_check,"
    " DROP CONSTRAINT IF EXISTS api_tokens_kind_check,"
    " DROP CONSTRAINT IF EXISTS api_tokens_user_of_personal,"
    " DROP CONSTRAINT IF EXISTS api_tokens_type_of_kind,"
    " DROP CONSTRAINT IF EXISTS api_tokens_environment_of_kind,"
    " DROP CONSTRAINT IF EXISTS api_tokens_projects_of_kind;"
    "ALTER TABLE api_tokens"
    " ADD CONSTRAINT api_tokens_kind_check CHECK (kind IN ('admin', 'personal', 'client', 'frontend')),"
    " ADD CONSTRAINT api_tokens_user_of_personal CHECK ((kind = 'personal') = (user_id IS NOT NULL)),"
    " ADD CONSTRAINT api_tokens_type_of_kind CHECK (CASE kind WHEN 'personal' THEN type IS NULL"
    " WHEN 'client' THEN type IN ('client', 'backend') ELSE type = kind END),"
    " ADD CONSTRAINT api_tokens_environment_of_kind"
    " CHECK ((kind IN ('client', 'frontend')) = (environment IS NOT NULL)),"
    " ADD CONSTRAINT api_tokens_projects_of_kind CHECK (projects IS NULL OR kind IN ('client', 'frontend'));",
)

#: Name of the session advisory lock under which PostgreSQL schema upgrades run, so that hosts
#: starting together do not race (the first upgrades, the others then find it done).
SCHEMA_LOCK = "flagadmin schema"


class SchemaError(Exception):
    """The database cannot be used by this version (too new, not a database, unreachable)."""


def schema_sql() -> str:
    """Return the text of ``schema.sql`` as shipped with the package."""
    return resources.files("flagadmin").joinpath("schema.sql").read_text(encoding="utf-8")


def postgresql_schema_sql() -> str:
    """Return the text of ``store/schema.postgresql.sql`` as shipped with the package."""
    return resources.files("flagadmin.store").joinpath("schema.postgresql.sql").read_text(encoding="utf-8")


def ensure_schema(path: str | Path) -> int:
    """Create the database at ``path`` (a SQLite file, or a PostgreSQL URL) if missing, or
    upgrade it to :data:`SCHEMA_VERSION`.

    The upgrade runs in one transaction: it all happens or none of it. A database written by a
    newer flagadmin is refused and left untouched. Returns the schema version found before.

    :raise SchemaError: the database is newer than this code, not a flagadmin database,
        cannot be reached, or the upgrade failed (and was rolled back).
    """
    from . import is_postgresql

    if is_postgresql(path):
        return _ensure_postgresql(str(path))
    try:
        conn = connect(path)
    except StoreError as exc:
        raise SchemaError(f"{path} cannot be opened as a flagadmin database: {exc}") from exc
    try:
        found = _user_version(conn, path)
        if found > SCHEMA_VERSION:
            raise SchemaError(
                f"{path} has schema version {found}, newer than the {SCHEMA_VERSION} this "
                f"flagadmin understands: upgrade flagadmin, or use another --db. "
                f"The file was not changed."
            )
        conn.pragma("journal_mode = WAL")
        if found < SCHEMA_VERSION:
            _upgrade(conn, path, found)
        return found
    finally:
        conn.close()


def _upgrade(conn: Connection, path: str | Path, found: int) -> None:
    # A new file (version 0) gets schema.sql alone, which is the current schema: the
    # migrations change tables that do not exist yet.
    upgrade = "".join(MIGRATIONS[found:SCHEMA_VERSION]) if found else ""
    versions = range(found + 1, SCHEMA_VERSION + 1)
    rebuilds = [step for version in versions for step in REBUILDS.get(version, ())]
    try:
        # one transaction, its statements run one by one (executescript would commit it
        # before the rebuilds, which run from Python)
        with conn.write("schema"):
            for statement in statements(upgrade):
                conn.run(statement)
            if found:
                for rebuild in rebuilds:
                    rebuild(conn)
            new_install = "" if found else new_install_sql(now_rfc3339())
            for statement in statements(schema_sql() + fills(found) + new_install):
                conn.run(statement)
            conn.run(f"PRAGMA user_version = {SCHEMA_VERSION}")
    except BaseException as exc:
        conn.rollback()
        if isinstance(exc, StoreError | sqlite3.Error | sqlite_utils.db.TransformError):
            raise SchemaError(
                f"{path}: upgrading the schema from version {found} to {SCHEMA_VERSION} "
                f"failed ({exc}); the upgrade was rolled back and the file was not changed."
            ) from exc
        raise


def statements(script: str) -> Iterator[str]:
    """The statements of the SQLite ``script``, one by one, each ending with its ``;``: split
    where :func:`sqlite3.complete_statement` says one is whole (a ``;`` inside a string, a
    comment or a trigger's body does not end it). Text after the last one (comments) is left."""
    pending = ""
    for piece in script.split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \t\n;"):
                yield pending
            pending = ""


def _user_version(conn: Connection, path: str | Path) -> int:
    try:
        return conn.pragma("user_version")
    except StoreError as exc:
        raise SchemaError(f"{path} is not a flagadmin database: {exc}") from exc


def redacted(url: str) -> str:
    """``url`` without its password, for messages."""
    import re

    return re.sub(r"(://[^:/@]*):[^@]*@", r"\1:***@", url)


def _ensure_postgresql(url: str) -> int:
    """:func:`ensure_schema` on PostgreSQL: under a session advisory lock, read the version
    (settings row ``schema_version``), refuse a newer one, and run the migrations and
    ``schema.postgresql.sql`` in one transaction."""
    from .postgresql import advisory_key, connect_once

    where = redacted(url)
    try:
        conn = connect_once(url)
    except StoreError as exc:
        raise SchemaError(f"{where} cannot be reached: {exc}") from exc
    key = advisory_key(SCHEMA_LOCK)
    try:
        conn.value("SELECT pg_advisory_lock(?)", [key])
        try:
            has_settings = conn.value("SELECT to_regclass('settings') IS NOT NULL")
            found = 0
            if has_settings:
                stored = conn.value("SELECT value FROM settings WHERE key = 'schema_version'")
                found = int(stored) if stored is not None else 0
            if found > SCHEMA_VERSION:
                raise SchemaError(
                    f"{where} has schema version {found}, newer than the {SCHEMA_VERSION} this "
                    f"flagadmin understands: upgrade flagadmin, or use another --db. "
                    f"The database was not changed."
                )
            if found < SCHEMA_VERSION:
                upgrade = "".join(POSTGRESQL_MIGRATIONS[found:SCHEMA_VERSION]) if found else ""
                try:
                    conn.script(
                        "BEGIN;\n"
                        + upgrade
                        + "\n"
                        + postgresql_schema_sql()
                        + fills(found)
                        + ("" if found else new_install_sql(now_rfc3339()))
                        + "\nINSERT INTO settings (key, value) VALUES ('schema_version', "
                        + f"'{SCHEMA_VERSION}') ON CONFLICT (key) DO UPDATE SET value = excluded.value;"
                        + "\nCOMMIT;"
                    )
                except Exception as exc:
                    conn.rollback()
                    raise SchemaError(
                        f"{where}: upgrading the schema from version {found} to {SCHEMA_VERSION} "
                        f"failed ({exc}); the upgrade was rolled back and the database was not changed."
                    ) from exc
            return found
        finally:
            conn.value("SELECT pg_advisory_unlock(?)", [key])
    finally:
        conn.close()
