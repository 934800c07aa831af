-- flagadmin schema for PostgreSQL (13 or newer): the same tables, columns and rules as
-- schema.sql (SQLite), in PostgreSQL's words. Applied by store/schema.py in one transaction,
-- under an advisory lock, when the database's schema version (settings row 'schema_version')
-- is older than the code's; every statement is idempotent.
-- Booleans stay 0/1 integers, as on SQLite, so that the SQL both engines share reads the same.
-- Timestamps are RFC 3339 text in UTC with milliseconds, as on SQLite: text order is time order.

CREATE TABLE IF NOT EXISTS settings (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
INSERT INTO settings (key, value) VALUES ('content_version', '0') ON CONFLICT DO NOTHING;
INSERT INTO settings (key, value) VALUES ('credentials_version', '0') ON CONFLICT DO NOTHING;

CREATE TABLE IF NOT EXISTS feature_types (
    name          TEXT PRIMARY KEY,
    lifetime_days INTEGER CHECK (lifetime_days IS NULL OR lifetime_days > 0)
);
INSERT INTO feature_types (name, lifetime_days) VALUES
    ('release', 40), ('experiment', 40), ('operational', 7),
    ('kill-switch', NULL), ('permission', NULL)
    ON CONFLICT DO NOTHING;

-- The columns after root_role are the SCIM directory's (see schema.sql): every 0/1 column NOT
-- NULL, email_primary NULL whenever email is (schema version 10).
CREATE TABLE IF NOT EXISTS users (
    id             BIGINT PRIMARY KEY,
    username       TEXT NOT NULL UNIQUE,
    name           TEXT,
    email          TEXT,
    image_url      TEXT,
    root_role      TEXT NOT NULL CHECK (root_role IN ('Admin', 'Editor', 'Viewer')),
    external_id    TEXT,
    given_name     TEXT,
    family_name    TEXT,
    formatted_name TEXT,
    email_type     TEXT,
    email_primary  INTEGER CHECK (email_primary IN (0, 1)),
    active         INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1)),
    scim_managed   INTEGER NOT NULL DEFAULT 0 CHECK (scim_managed IN (0, 1)),
    created_at     TEXT,
    last_modified  TEXT,
    version        INTEGER NOT NULL DEFAULT 1,
    deleted_at     TEXT,
    CONSTRAINT users_email_primary_needs_email CHECK (email IS NOT NULL OR email_primary IS NULL)
);
CREATE INDEX IF NOT EXISTS users_root_role ON users (root_role);

CREATE TABLE IF NOT EXISTS projects (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    description TEXT
);

CREATE TABLE IF NOT EXISTS project_members (
    project_id TEXT NOT NULL REFERENCES projects (id),
    user_id    BIGINT NOT NULL REFERENCES users (id),
    role       TEXT NOT NULL CHECK (length(role) > 0),
    PRIMARY KEY (project_id, user_id, role)
);
CREATE INDEX IF NOT EXISTS project_members_user ON project_members (user_id, project_id);
CREATE INDEX IF NOT EXISTS project_members_role ON project_members (role, project_id);

CREATE TABLE IF NOT EXISTS features (
    name               TEXT PRIMARY KEY,
    project_id         TEXT NOT NULL REFERENCES projects (id),
    type               TEXT NOT NULL REFERENCES feature_types (name),
    description        TEXT,
    stale              INTEGER NOT NULL DEFAULT 0 CHECK (stale IN (0, 1)),
    impression_data    INTEGER NOT NULL DEFAULT 0 CHECK (impression_data IN (0, 1)),
    created_at         TEXT NOT NULL,
    created_by_user_id BIGINT REFERENCES users (id),
    archived_at        TEXT CHECK (archived_at IS NULL OR archived_at >= created_at),
    last_seen_at       TEXT,
    archived_item      BYTEA
);
-- archived_item: while the flag is archived, its 4.4 object in its wire bytes (see schema.sql).
CREATE INDEX IF NOT EXISTS features_project_health
    ON features (project_id, archived_at, type, created_at, stale);
-- 4.2's flags (schema version 5): a user's live flags, and each favorite's columns, from the
-- index alone; a first dashboard no longer reads a table row per flag (bench/RESULTS.md).
-- features_creator also serves the foreign key from users (its first column).
CREATE INDEX IF NOT EXISTS features_creator
    ON features (created_by_user_id, archived_at, created_at, name, project_id, type);
CREATE INDEX IF NOT EXISTS features_name_listed ON features (name, archived_at, project_id, type, created_at);
CREATE INDEX IF NOT EXISTS features_archived_order
    ON features (archived_at DESC, name COLLATE "C") WHERE archived_at IS NOT NULL;

CREATE TABLE IF NOT EXISTS feature_environments (
    feature_name TEXT NOT NULL REFERENCES features (name),
    name         TEXT NOT NULL,
    enabled      INTEGER NOT NULL DEFAULT 0 CHECK (enabled IN (0, 1)),
    last_seen_at TEXT,
    PRIMARY KEY (feature_name, name)
);

CREATE TABLE IF NOT EXISTS favorite_features (
    user_id      BIGINT NOT NULL REFERENCES users (id),
    feature_name TEXT NOT NULL REFERENCES features (name),
    PRIMARY KEY (user_id, feature_name)
);

-- ==== Archived flags in their 4.4 wire bytes (spec 4.4, 2.6; schema version 9) =====
-- As in schema.sql: flagadmin_archived_item makes a flag's 4.4 object, the same bytes as
-- SQLite's; features.archived_item keeps it while the flag is archived, written by the triggers
-- at the end. PostgreSQL's json_build_object and json_agg put spaces after colons and commas;
-- row_to_json writes a row compactly, its columns as keys in their order, a boolean column as
-- true/false and a json column as it is, so the object is a row, and the environments are
-- joined with string_agg (no space after the comma), by name in code point order ("C").
CREATE OR REPLACE FUNCTION flagadmin_archived_item(f features) RETURNS BYTEA
LANGUAGE sql STABLE AS $$
    SELECT convert_to(CAST(row_to_json(a) AS TEXT), 'UTF8') FROM (
        SELECT f.name, f.type, f.description, f.project_id AS project, f.stale = 1 AS stale,
            f.impression_data = 1 AS "impressionData", f.created_at AS "createdAt",
            f.archived_at AS "archivedAt", f.last_seen_at AS "lastSeenAt",
            (SELECT CAST(coalesce('[' || string_agg(CAST(row_to_json(e) AS TEXT), ','
                    ORDER BY e.name COLLATE "C") || ']', '[]') AS JSON)
                FROM (SELECT fe.name, fe.last_seen_at AS "lastSeenAt", fe.enabled = 1 AS enabled
                      FROM feature_environments fe WHERE fe.feature_name = f.name) e) AS environments
    ) a
$$;
CREATE OR REPLACE VIEW archived_feature_json (name, item) AS
    SELECT f.name, flagadmin_archived_item(f) FROM features f WHERE f.archived_at IS NOT NULL;

-- ids are given explicitly, as seeds keep the reference server's: one more than the largest,
-- under the write lock 'integrations' (store/integrations.py next_id), as SQLite gives a rowid.
CREATE TABLE IF NOT EXISTS integrations (
    id           BIGINT PRIMARY KEY,
    provider     TEXT NOT NULL,
    description  TEXT,
    enabled      INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
    events       TEXT NOT NULL DEFAULT '[]',
    projects     TEXT NOT NULL DEFAULT '[]',
    environments TEXT NOT NULL DEFAULT '[]',
    parameters   TEXT NOT NULL DEFAULT '{}'
);

-- The integration event log (spec 4.1); see schema.sql. An append locks its integration's row
-- first (store/integration_events.py append_many), so that seq stays gap-free and id grows with
-- seq whichever process appends; a page is one backward seek of the (integration_id, seq) index,
-- and item holds each row's 4.1 item in its wire bytes.
CREATE TABLE IF NOT EXISTS integration_events (
    id             BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    integration_id BIGINT NOT NULL REFERENCES integrations (id),
    seq            BIGINT NOT NULL CHECK (seq > 0),
    created_at     TEXT NOT NULL,
    state          TEXT NOT NULL CHECK (state IN ('success', 'failed', 'successWithErrors')),
    item           BYTEA NOT NULL,
    UNIQUE (integration_id, seq)
);

-- As schema.sql's: type, environment and projects are of schema version 11, and the checks
-- are named so that POSTGRESQL_MIGRATIONS[10] can replace them.
CREATE TABLE IF NOT EXISTS api_tokens (
    id           BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    digest       TEXT NOT NULL UNIQUE CHECK (length(digest) = 64),
    kind         TEXT NOT NULL CONSTRAINT api_tokens_kind_check
                 CHECK (kind IN ('admin', 'personal', 'client', 'frontend')),
    user_id      BIGINT REFERENCES users (id),
    name         TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    last_used_at TEXT,
    expires_at   TEXT,
    revoked_at   TEXT,
    type         TEXT,
    environment  TEXT,
    projects     TEXT,
    CONSTRAINT api_tokens_user_of_personal CHECK ((kind = 'personal') = (user_id IS NOT NULL)),
    CONSTRAINT api_tokens_type_of_kind CHECK (CASE kind WHEN 'personal' THEN type IS NULL
                                                        WHEN 'client' THEN type IN ('client', 'backend')
                                                        ELSE type = kind END),
    CONSTRAINT api_tokens_environment_of_kind CHECK ((kind IN ('client', 'frontend')) = (environment IS NOT NULL)),
    CONSTRAINT api_tokens_projects_of_kind CHECK (projects IS NULL OR kind IN ('client', 'frontend'))
);

CREATE TABLE IF NOT EXISTS scim_tokens (
    id         BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    digest     TEXT NOT NULL UNIQUE CHECK (length(digest) = 64),
    created_at TEXT NOT NULL,
    revoked_at TEXT
);
CREATE UNIQUE INDEX IF NOT EXISTS scim_tokens_one_active
    ON scim_tokens ((revoked_at IS NULL)) WHERE revoked_at IS NULL;

-- ==== System events and their delivery ======================================================

-- System events (spec 2.3); see schema.sql. ALWAYS: ids come from the sequence only, so they
-- are never reused and only grow (SQLite: AUTOINCREMENT).
CREATE TABLE IF NOT EXISTS events (
    id                 BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    type               TEXT NOT NULL,
    created_at         TEXT NOT NULL,
    created_by         TEXT NOT NULL,
    created_by_user_id BIGINT,
    project            TEXT,
    environment        TEXT,
    feature_name       TEXT,
    data               TEXT,
    pre_data           TEXT,
    tags               TEXT,
    group_id           BIGINT
);

-- The system event log's reads (schema 11); see schema.sql. Each index is ordered by
-- (created_at, id), the log's order, so that the ids of a page are an index-only scan; the
-- broad ones include project, so that the caller's visibility is checked in the index.
CREATE INDEX IF NOT EXISTS events_created ON events (created_at, id) INCLUDE (project);
CREATE INDEX IF NOT EXISTS events_project ON events (project, created_at, id) WHERE project IS NOT NULL;
CREATE INDEX IF NOT EXISTS events_feature ON events (feature_name, created_at, id)
    WHERE feature_name IS NOT NULL;
CREATE INDEX IF NOT EXISTS events_type ON events (type, created_at, id) INCLUDE (project);
CREATE INDEX IF NOT EXISTS events_created_by ON events (created_by_user_id, created_at, id) INCLUDE (project)
    WHERE created_by_user_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS events_environment ON events (environment, created_at, id) INCLUDE (project)
    WHERE environment IS NOT NULL;
CREATE INDEX IF NOT EXISTS events_group ON events (group_id) WHERE group_id IS NOT NULL;

-- How many events each project ('' for none), type, environment and creator has; see
-- schema.sql. One statement-level trigger per kind of write, adding up the statement's rows.
CREATE TABLE IF NOT EXISTS event_counts (
    dimension TEXT NOT NULL CHECK (dimension IN ('project', 'type', 'environment', 'creator')),
    value     TEXT NOT NULL,
    events    BIGINT NOT NULL CHECK (events >= 0),
    PRIMARY KEY (dimension, value)
);
INSERT INTO event_counts (dimension, value, events)
    SELECT dimension, value, count(*) FROM (
        SELECT 'project' AS dimension, coalesce(project, '') AS value FROM events
        UNION ALL SELECT 'type', type FROM events
        UNION ALL SELECT 'environment', environment FROM events WHERE environment IS NOT NULL
        UNION ALL SELECT 'creator', created_by_user_id::text FROM events WHERE created_by_user_id IS NOT NULL
    ) r WHERE NOT EXISTS (SELECT 1 FROM event_counts) GROUP BY dimension, value;
CREATE OR REPLACE FUNCTION flagadmin_count_events() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        UPDATE event_counts c SET events = c.events - o.n
        FROM (SELECT dimension, value, count(*) AS n FROM (
            SELECT 'project' AS dimension, coalesce(project, '') AS value FROM old_events
            UNION ALL SELECT 'type', type FROM old_events
            UNION ALL SELECT 'environment', environment FROM old_events WHERE environment IS NOT NULL
            UNION ALL SELECT 'creator', created_by_user_id::text FROM old_events
                WHERE created_by_user_id IS NOT NULL
        ) r GROUP BY dimension, value) o
        WHERE c.dimension = o.dimension AND c.value = o.value;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO event_counts (dimension, value, events)
        SELECT dimension, value, count(*) FROM (
            SELECT 'project' AS dimension, coalesce(project, '') AS value FROM new_events
            UNION ALL SELECT 'type', type FROM new_events
            UNION ALL SELECT 'environment', environment FROM new_events WHERE environment IS NOT NULL
            UNION ALL SELECT 'creator', created_by_user_id::text FROM new_events
                WHERE created_by_user_id IS NOT NULL
        ) r GROUP BY dimension, value
        ON CONFLICT (dimension, value) DO UPDATE SET events = event_counts.events + EXCLUDED.events;
    END IF;
    RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS events_insert_count ON events;
CREATE TRIGGER events_insert_count AFTER INSERT ON events
    REFERENCING NEW TABLE AS new_events FOR EACH STATEMENT EXECUTE FUNCTION flagadmin_count_events();
DROP TRIGGER IF EXISTS events_delete_count ON events;
CREATE TRIGGER events_delete_count AFTER DELETE ON events
    REFERENCING OLD TABLE AS old_events FOR EACH STATEMENT EXECUTE FUNCTION flagadmin_count_events();
DROP TRIGGER IF EXISTS events_update_count ON events;
CREATE TRIGGER events_update_count AFTER UPDATE ON events
    REFERENCING OLD TABLE AS old_events NEW TABLE AS new_events FOR EACH STATEMENT
    EXECUTE FUNCTION flagadmin_count_events();

-- The outbox; see schema.sql. Claims run under the advisory lock 'integration_deliveries' and
-- take a row only if it is still due (store/deliveries.py claim).
CREATE TABLE IF NOT EXISTS integration_deliveries (
    id              BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    event_id        BIGINT NOT NULL REFERENCES events (id),
    integration_id  BIGINT NOT NULL REFERENCES integrations (id),
    webhook_id      TEXT NOT NULL,
    state           TEXT NOT NULL DEFAULT 'pending'
                    CHECK (state IN ('pending', 'in_flight', 'delivered', 'failed', 'cancelled')),
    attempts        INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_attempt_at TEXT NOT NULL,
    lease_until     TEXT,
    claim           TEXT,
    last_attempt_at TEXT,
    created_at      TEXT NOT NULL,
    finished_at     TEXT,
    UNIQUE (event_id, integration_id),
    CHECK ((state = 'in_flight') = (lease_until IS NOT NULL AND claim IS NOT NULL))
);
CREATE INDEX IF NOT EXISTS integration_deliveries_unfinished
    ON integration_deliveries (integration_id, id) WHERE state IN ('pending', 'in_flight');
CREATE INDEX IF NOT EXISTS integration_deliveries_finished
    ON integration_deliveries (finished_at) WHERE finished_at IS NOT NULL;

CREATE TABLE IF NOT EXISTS integration_options (
    integration_id BIGINT PRIMARY KEY REFERENCES integrations (id),
    created_at     TEXT,
    max_in_flight  INTEGER CHECK (max_in_flight BETWEEN 1 AND 100),
    events_keep    INTEGER CHECK (events_keep >= 1),
    events_max_age TEXT
);

-- ==== Flags changed through the API ====================================================

-- The install's environments; see schema.sql.
CREATE TABLE IF NOT EXISTS environments (
    name       TEXT PRIMARY KEY CHECK (length(name) BETWEEN 1 AND 100),
    type       TEXT NOT NULL DEFAULT 'development'
               CHECK (type IN ('development', 'test', 'preproduction', 'production')),
    sort_order INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL
);

-- Tags given to a flag when it is created; carried by its events.
CREATE TABLE IF NOT EXISTS feature_tags (
    feature_name TEXT NOT NULL REFERENCES features (name),
    type         TEXT NOT NULL CHECK (length(type) BETWEEN 2 AND 50),
    value        TEXT NOT NULL CHECK (length(value) BETWEEN 2 AND 50),
    PRIMARY KEY (feature_name, type, value)
);

CREATE INDEX IF NOT EXISTS favorite_features_feature ON favorite_features (feature_name);

-- ==== SCIM provisioning: the directory's users and groups, and the roles groups grant
-- The same rules as schema.sql's section of that name; its version triggers are at the end.

-- userName is unique whatever its case among live users. The fold is SQLite's lower(): ASCII
-- letters only. PostgreSQL's lower() folds every letter the database's locale knows, except
-- under the "C" collation: the filters and checks of store/directory.py (FOLD) write the same
-- expression, so that these indexes serve them. users.id has no sequence: seeds give ids, and
-- a SCIM-created user gets max(id) + 1 under the "directory" write lock (store/directory.py).
CREATE UNIQUE INDEX IF NOT EXISTS users_username_ci
    ON users (lower(username COLLATE "C")) WHERE deleted_at IS NULL;
CREATE UNIQUE INDEX IF NOT EXISTS users_external_id ON users (external_id) WHERE external_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS users_email_ci ON users (lower(email COLLATE "C"));

CREATE TABLE IF NOT EXISTS directory_groups (
    id            BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    display_name  TEXT NOT NULL CHECK (length(display_name) > 0),
    name_key      TEXT NOT NULL,
    external_id   TEXT,
    created_at    TEXT NOT NULL,
    last_modified TEXT NOT NULL,
    version       INTEGER NOT NULL DEFAULT 1
);
CREATE UNIQUE INDEX IF NOT EXISTS directory_groups_name_key ON directory_groups (name_key);
CREATE UNIQUE INDEX IF NOT EXISTS directory_groups_external_id
    ON directory_groups (external_id) WHERE external_id IS NOT NULL;

CREATE TABLE IF NOT EXISTS directory_group_members (
    group_id BIGINT NOT NULL REFERENCES directory_groups (id),
    user_id  BIGINT NOT NULL REFERENCES users (id),
    display  TEXT,
    PRIMARY KEY (group_id, user_id)
);
CREATE INDEX IF NOT EXISTS directory_group_members_user ON directory_group_members (user_id, group_id);

CREATE TABLE IF NOT EXISTS group_root_roles (
    group_key  TEXT PRIMARY KEY,
    group_name TEXT NOT NULL,
    root_role  TEXT NOT NULL CHECK (root_role IN ('Admin', 'Editor', 'Viewer'))
);
CREATE TABLE IF NOT EXISTS group_project_roles (
    group_key  TEXT NOT NULL,
    group_name TEXT NOT NULL,
    project_id TEXT NOT NULL,
    role       TEXT NOT NULL CHECK (length(role) > 0),
    PRIMARY KEY (group_key, project_id, role)
);
CREATE INDEX IF NOT EXISTS group_project_roles_project ON group_project_roles (project_id, role);

CREATE OR REPLACE VIEW group_granted_root_roles AS
    SELECT m.user_id, r.root_role FROM directory_group_members m
    JOIN directory_groups g ON g.id = m.group_id
    JOIN group_root_roles r ON r.group_key = g.name_key;

CREATE OR REPLACE VIEW user_root_roles AS
    SELECT u.id AS user_id, CASE
        WHEN u.root_role = 'Admin' OR EXISTS (SELECT 1 FROM group_granted_root_roles x
            WHERE x.user_id = u.id AND x.root_role = 'Admin') THEN 'Admin'
        WHEN u.root_role = 'Editor' OR EXISTS (SELECT 1 FROM group_granted_root_roles x
            WHERE x.user_id = u.id AND x.root_role = 'Editor') THEN 'Editor'
        ELSE 'Viewer' END AS root_role
    FROM users u;

CREATE OR REPLACE VIEW direct_project_roles AS
    SELECT pm.project_id, pm.user_id, pm.role FROM project_members pm
    JOIN users u ON u.id = pm.user_id
    WHERE coalesce(u.active, 1) = 1;
CREATE OR REPLACE VIEW granted_project_roles AS
    SELECT r.project_id, m.user_id, r.role FROM group_project_roles r
    JOIN directory_groups g ON g.name_key = r.group_key
    JOIN directory_group_members m ON m.group_id = g.id
    JOIN users u ON u.id = m.user_id
    WHERE coalesce(u.active, 1) = 1;
CREATE OR REPLACE VIEW project_roles AS
    SELECT project_id, user_id, role FROM direct_project_roles
    UNION ALL
    SELECT project_id, user_id, role FROM granted_project_roles;

-- ==== Version counters =======================================================================
-- One statement-level trigger per table and counter: content_version moves with every
-- statement that writes what 4.2 and 4.4 read, credentials_version with every change that can
-- invalidate a token or change whom it acts as (see schema.sql).

CREATE OR REPLACE FUNCTION flagadmin_move_credentials_version() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE settings SET value = (value::bigint + 1)::text WHERE key = 'credentials_version';
    RETURN NULL;
END $$;

-- users: as on SQLite, only the writes that 4.2 or 4.4 can show move content_version (issue
-- 13): a new Admin; a change of root role, or of the active state or displayed identity of a
-- user who is an Admin or in a project or group; a removal. The statement's transition tables
-- say which rows it changed and how.
CREATE OR REPLACE FUNCTION flagadmin_users_inserted_content_version() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM new_rows WHERE root_role = 'Admin') THEN
        UPDATE settings SET value = (value::bigint + 1)::text WHERE key = 'content_version';
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION flagadmin_users_updated_content_version() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (
        SELECT 1 FROM new_rows n LEFT JOIN old_rows o ON o.id = n.id
        WHERE o.id IS NULL OR o.root_role IS DISTINCT FROM n.root_role
            OR ((o.active, o.deleted_at, o.username, o.name, o.formatted_name, o.given_name,
                 o.family_name, o.email, o.image_url)
                IS DISTINCT FROM (n.active, n.deleted_at, n.username, n.name, n.formatted_name,
                                  n.given_name, n.family_name, n.email, n.image_url)
                AND (n.root_role = 'Admin'
                     OR EXISTS (SELECT 1 FROM project_members m WHERE m.user_id = n.id)
                     OR EXISTS (SELECT 1 FROM directory_group_members g WHERE g.user_id = n.id)))
    ) THEN
        UPDATE settings SET value = (value::bigint + 1)::text WHERE key = 'content_version';
    END IF;
    RETURN NULL;
END $$;

-- before schema version 4, every write to users moved it
DROP TRIGGER IF EXISTS users_content_version ON users;
DROP FUNCTION IF EXISTS flagadmin_move_content_version();
DROP TRIGGER IF EXISTS users_insert_content_version ON users;
CREATE TRIGGER users_insert_content_version AFTER INSERT ON users
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION flagadmin_users_inserted_content_version();
DROP TRIGGER IF EXISTS users_update_content_version ON users;
CREATE TRIGGER users_update_content_version AFTER UPDATE ON users
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION flagadmin_users_updated_content_version();

-- ==== Flags: content version (the flag tables, 4.2's and 4.4's) ===========================
-- As on SQLite, content_version moves when a statement changed at least one row of these
-- tables, and only then: SQLite's row triggers fire once per changed row, never for a
-- statement that changed none. A statement trigger fires for every statement, even one that
-- changed nothing (a second favorite, "on" twice, ON CONFLICT DO NOTHING), and would throw
-- away 4.2's and 4.4's answers for nothing; so these read the statement's transition table
-- (the rows it changed) and move the counter only when it has one. One counter update per
-- statement, not per row: a seed's thousands of rows cost one.
CREATE OR REPLACE FUNCTION flagadmin_move_content_version_if_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM changed_rows) THEN
        UPDATE settings SET value = (value::bigint + 1)::text WHERE key = 'content_version';
    END IF;
    RETURN NULL;
END $$;

-- The writes that always move it: every write to projects, memberships and favorites, a new or
-- removed flag, a removed user. A flag's update, its environments' writes and a user's insert
-- and update have the narrower triggers below and above.
DO $$
DECLARE
    target TEXT[];
    name TEXT;
BEGIN
    FOREACH target SLICE 1 IN ARRAY ARRAY[
        ['projects', 'INSERT'], ['projects', 'UPDATE'], ['projects', 'DELETE'],
        ['project_members', 'INSERT'], ['project_members', 'UPDATE'], ['project_members', 'DELETE'],
        ['favorite_features', 'INSERT'], ['favorite_features', 'UPDATE'], ['favorite_features', 'DELETE'],
        ['features', 'INSERT'], ['features', 'DELETE'], ['users', 'DELETE']] LOOP
        name := target[1] || '_' || lower(target[2]) || '_content_version';
        -- the name of an earlier version of this mirror
        IF target[1] <> 'users' THEN
            EXECUTE format('DROP TRIGGER IF EXISTS %I ON %I', target[1] || '_content_version', target[1]);
        END IF;
        EXECUTE format('DROP TRIGGER IF EXISTS %I ON %I', name, target[1]);
        EXECUTE format('CREATE TRIGGER %I AFTER %s ON %I REFERENCING %s TABLE AS changed_rows'
                       ' FOR EACH STATEMENT EXECUTE FUNCTION flagadmin_move_content_version_if_changed()',
                       name, target[2], target[1],
                       CASE WHEN target[2] = 'DELETE' THEN 'OLD' ELSE 'NEW' END);
    END LOOP;
END $$;

-- Narrower, as on SQLite: a flag's update moves content_version when the flag is
-- or was archived (4.4 shows all of it) or when a column that 4.2 reads changed; its
-- environments' writes only when the flag is archived (4.2 shows no environment).
CREATE OR REPLACE FUNCTION flagadmin_features_updated_content_version() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (
        SELECT 1 FROM new_rows n LEFT JOIN old_rows o ON o.name = n.name
        WHERE o.name IS NULL OR o.archived_at IS NOT NULL OR n.archived_at IS NOT NULL
            OR (o.project_id, o.type, o.stale, o.created_at, o.created_by_user_id)
               IS DISTINCT FROM (n.project_id, n.type, n.stale, n.created_at, n.created_by_user_id)
    ) THEN
        UPDATE settings SET value = (value::bigint + 1)::text WHERE key = 'content_version';
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION flagadmin_archived_environments_content_version() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (
        SELECT 1 FROM changed_rows c JOIN features f ON f.name = c.feature_name
        WHERE f.archived_at IS NOT NULL
    ) THEN
        UPDATE settings SET value = (value::bigint + 1)::text WHERE key = 'content_version';
    END IF;
    RETURN NULL;
END $$;

DROP TRIGGER IF EXISTS features_update_content_version ON features;
CREATE TRIGGER features_update_content_version AFTER UPDATE ON features
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION flagadmin_features_updated_content_version();
DROP TRIGGER IF EXISTS feature_environments_insert_content_version ON feature_environments;
CREATE TRIGGER feature_environments_insert_content_version AFTER INSERT ON feature_environments
    REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT
    EXECUTE FUNCTION flagadmin_archived_environments_content_version();
DROP TRIGGER IF EXISTS feature_environments_update_content_version ON feature_environments;
CREATE TRIGGER feature_environments_update_content_version AFTER UPDATE ON feature_environments
    REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT
    EXECUTE FUNCTION flagadmin_archived_environments_content_version();
DROP TRIGGER IF EXISTS feature_environments_delete_content_version ON feature_environments;
CREATE TRIGGER feature_environments_delete_content_version AFTER DELETE ON feature_environments
    REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT
    EXECUTE FUNCTION flagadmin_archived_environments_content_version();

DROP TRIGGER IF EXISTS api_tokens_credentials_version ON api_tokens;
CREATE TRIGGER api_tokens_credentials_version
    AFTER UPDATE OF digest, kind, user_id, expires_at, revoked_at, environment, projects OR DELETE ON api_tokens
    FOR EACH STATEMENT EXECUTE FUNCTION flagadmin_move_credentials_version();
DROP TRIGGER IF EXISTS users_credentials_version ON users;
CREATE TRIGGER users_credentials_version
    AFTER UPDATE OF id, root_role OR DELETE ON users
    FOR EACH STATEMENT EXECUTE FUNCTION flagadmin_move_credentials_version();

-- SCIM provisioning: what schema.sql's triggers of that section count moves both
-- counters: a group inserted or deleted, or its name_key (what role mappings follow) changed; a
-- membership added or removed; a role mapping written. As on SQLite (row triggers), only a
-- statement that changed at least one row counts: these read the statement's transition table.
-- And a change of a user's active state or deletion moves credentials_version: a deactivated
-- user's personal token fails on the very next request, in every process.
CREATE OR REPLACE FUNCTION flagadmin_move_both_versions_if_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM changed_rows) THEN
        UPDATE settings SET value = (value::bigint + 1)::text
            WHERE key IN ('content_version', 'credentials_version');
    END IF;
    RETURN NULL;
END $$;
-- A group's update counts when its id or name_key changed (schema.sql: AFTER UPDATE OF id,
-- name_key); a trigger with transition tables takes no column list, so this compares them.
CREATE OR REPLACE FUNCTION flagadmin_move_both_versions_if_group_key_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM new_rows n WHERE NOT EXISTS
               (SELECT 1 FROM old_rows o WHERE o.id = n.id AND o.name_key = n.name_key)) THEN
        UPDATE settings SET value = (value::bigint + 1)::text
            WHERE key IN ('content_version', 'credentials_version');
    END IF;
    RETURN NULL;
END $$;
DO $$
DECLARE
    t TEXT;
BEGIN
    FOREACH t IN ARRAY ARRAY['directory_groups', 'directory_group_members', 'group_root_roles',
                             'group_project_roles'] LOOP
        -- the names of earlier versions of this mirror
        EXECUTE format('DROP TRIGGER IF EXISTS %I_content_version ON %I', t, t);
        EXECUTE format('DROP TRIGGER IF EXISTS %I_credentials_version ON %I', t, t);
        EXECUTE format('DROP TRIGGER IF EXISTS %I_versions ON %I', t, t);
        EXECUTE format('DROP TRIGGER IF EXISTS %I_insert_versions ON %I', t, t);
        EXECUTE format('CREATE TRIGGER %I_insert_versions AFTER INSERT ON %I'
                       ' REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT'
                       ' EXECUTE FUNCTION flagadmin_move_both_versions_if_changed()', t, t);
        EXECUTE format('DROP TRIGGER IF EXISTS %I_delete_versions ON %I', t, t);
        EXECUTE format('CREATE TRIGGER %I_delete_versions AFTER DELETE ON %I'
                       ' REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT'
                       ' EXECUTE FUNCTION flagadmin_move_both_versions_if_changed()', t, t);
        EXECUTE format('DROP TRIGGER IF EXISTS %I_update_versions ON %I', t, t);
    END LOOP;
    -- members are never updated in a way that changes a role (display only): no update trigger
    FOREACH t IN ARRAY ARRAY['group_root_roles', 'group_project_roles'] LOOP
        EXECUTE format('CREATE TRIGGER %I_update_versions AFTER UPDATE ON %I'
                       ' REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT'
                       ' EXECUTE FUNCTION flagadmin_move_both_versions_if_changed()', t, t);
    END LOOP;
END $$;
CREATE TRIGGER directory_groups_update_versions AFTER UPDATE ON directory_groups
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION flagadmin_move_both_versions_if_group_key_changed();
-- A user's active state or deletion counts when it changed (schema.sql: WHEN OLD.active IS NOT
-- NEW.active ...), not whenever a SCIM write assigns it with the rest of the user: compared
-- through the statement's transition tables (a change of id is users_credentials_version's).
CREATE OR REPLACE FUNCTION flagadmin_move_credentials_version_if_user_state_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM new_rows n JOIN old_rows o ON o.id = n.id
               WHERE o.active IS DISTINCT FROM n.active OR o.deleted_at IS DISTINCT FROM n.deleted_at) THEN
        UPDATE settings SET value = (value::bigint + 1)::text WHERE key = 'credentials_version';
    END IF;
    RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS users_active_credentials_version ON users;
CREATE TRIGGER users_active_credentials_version AFTER UPDATE ON users
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION flagadmin_move_credentials_version_if_user_state_changed();

-- ==== Archived flags' 4.4 items ==============================================================
-- As in schema.sql: a flag's row gets its archived_item (or NULL, live) as it is written when it
-- is or was archived, in the row itself (a BEFORE trigger); a statement that writes archived
-- flags' environments makes those flags' items again. Writes to live flags and to their
-- environments write nothing here.
CREATE OR REPLACE FUNCTION flagadmin_features_archived_item() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.archived_item := CASE WHEN NEW.archived_at IS NULL THEN NULL ELSE flagadmin_archived_item(NEW) END;
    RETURN NEW;
END $$;

-- The EXISTS first: an UPDATE of no row would still fire the statement triggers of features
-- (creations write a live flag's environments, every time).
CREATE OR REPLACE FUNCTION flagadmin_archived_environments_written() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM changed_rows c JOIN features f ON f.name = c.feature_name
               WHERE f.archived_at IS NOT NULL) THEN
        UPDATE features f SET archived_item = flagadmin_archived_item(f)
            WHERE f.archived_at IS NOT NULL AND f.name IN (SELECT feature_name FROM changed_rows);
    END IF;
    RETURN NULL;
END $$;

DROP TRIGGER IF EXISTS features_insert_archived_item ON features;
CREATE TRIGGER features_insert_archived_item BEFORE INSERT ON features
    FOR EACH ROW WHEN (NEW.archived_at IS NOT NULL) EXECUTE FUNCTION flagadmin_features_archived_item();
DROP TRIGGER IF EXISTS features_update_archived_item ON features;
CREATE TRIGGER features_update_archived_item BEFORE UPDATE ON features
    FOR EACH ROW WHEN (OLD.archived_at IS NOT NULL OR NEW.archived_at IS NOT NULL)
    EXECUTE FUNCTION flagadmin_features_archived_item();
DO $$
DECLARE
    event TEXT;
BEGIN
    FOREACH event IN ARRAY ARRAY['INSERT', 'UPDATE', 'DELETE'] LOOP
        EXECUTE format('DROP TRIGGER IF EXISTS %I ON feature_environments',
                       'feature_environments_' || lower(event) || '_archived_item');
        EXECUTE format('CREATE TRIGGER %I AFTER %s ON feature_environments REFERENCING %s TABLE AS changed_rows'
                       ' FOR EACH STATEMENT EXECUTE FUNCTION flagadmin_archived_environments_written()',
                       'feature_environments_' || lower(event) || '_archived_item', event,
                       CASE WHEN event = 'DELETE' THEN 'OLD' ELSE 'NEW' END);
    END LOOP;
END $$;

-- ==== Rollout rules (schema version 11), as schema.sql's ==================================
CREATE TABLE IF NOT EXISTS strategy_types (
    name        TEXT PRIMARY KEY CHECK (length(name) BETWEEN 1 AND 100),
    title       TEXT,
    description TEXT,
    parameters  TEXT NOT NULL DEFAULT '[]',
    built_in    INTEGER NOT NULL DEFAULT 0 CHECK (built_in IN (0, 1)),
    deprecated  INTEGER NOT NULL DEFAULT 0 CHECK (deprecated IN (0, 1)),
    sort_order  INTEGER NOT NULL DEFAULT 0,
    created_at  TEXT NOT NULL
);
-- The built-in types, as schema.sql's.
INSERT INTO strategy_types (name, description, parameters, built_in, deprecated, sort_order, created_at) VALUES
    ('flexibleRollout', 'On for a percentage of users, the same users every time (sticky on a context field).',
     '[{"name":"rollout","type":"percentage","description":"Percentage of users it is on for, 0 to 100 (default 100).","required":false},{"name":"stickiness","type":"string","description":"Context field users are bucketed by: default, userId, sessionId, random or another field (default: default).","required":false},{"name":"groupId","type":"string","description":"Bucketing group: flags with the same groupId and rollout are on for the same users (default: the flag name).","required":false}]',
     1, 0, 0, '1970-01-01T00:00:00.000Z'),
    ('default', 'On for everyone: the strategy of a plain on/off flag.',
     '[]',
     1, 0, 1, '1970-01-01T00:00:00.000Z'),
    ('userWithId', 'On for the users listed.',
     '[{"name":"userIds","type":"list","description":"Comma-separated user ids.","required":true}]',
     1, 1, 2, '1970-01-01T00:00:00.000Z'),
    ('gradualRolloutUserId', 'On for a percentage of users, by user id (flexibleRollout does it and more).',
     '[{"name":"percentage","type":"percentage","description":"Percentage of users, 0 to 100.","required":true},{"name":"groupId","type":"string","description":"Bucketing group: flags with the same groupId and percentage are on for the same users.","required":true}]',
     1, 1, 3, '1970-01-01T00:00:00.000Z'),
    ('gradualRolloutSessionId', 'On for a percentage of sessions, by session id (flexibleRollout does it and more).',
     '[{"name":"percentage","type":"percentage","description":"Percentage of sessions, 0 to 100.","required":true},{"name":"groupId","type":"string","description":"Bucketing group: flags with the same groupId and percentage are on for the same sessions.","required":true}]',
     1, 1, 4, '1970-01-01T00:00:00.000Z'),
    ('gradualRolloutRandom', 'On at random for a percentage of evaluations, with no stickiness (flexibleRollout does it and more).',
     '[{"name":"percentage","type":"percentage","description":"Percentage of evaluations, 0 to 100.","required":true}]',
     1, 1, 5, '1970-01-01T00:00:00.000Z'),
    ('remoteAddress', 'On for requests from the addresses listed.',
     '[{"name":"IPs","type":"list","description":"Comma-separated IP addresses or CIDR ranges.","required":true}]',
     1, 0, 6, '1970-01-01T00:00:00.000Z'),
    ('applicationHostname', 'On on the hosts listed.',
     '[{"name":"hostNames","type":"list","description":"Comma-separated host names.","required":true}]',
     1, 0, 7, '1970-01-01T00:00:00.000Z')
    ON CONFLICT DO NOTHING;
CREATE TABLE IF NOT EXISTS segments (
    id          BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    name        TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
    description TEXT,
    project_id  TEXT REFERENCES projects (id),
    constraints TEXT NOT NULL DEFAULT '[]',
    created_at  TEXT NOT NULL,
    created_by  TEXT
);
-- Segment names are unique (the reference refuses a second one with 409).
CREATE UNIQUE INDEX IF NOT EXISTS segments_name ON segments (name);
CREATE TABLE IF NOT EXISTS feature_strategies (
    id                 TEXT PRIMARY KEY,
    feature_name       TEXT NOT NULL REFERENCES features (name),
    environment        TEXT NOT NULL REFERENCES environments (name),
    strategy_name      TEXT NOT NULL,
    title              TEXT,
    disabled           INTEGER NOT NULL DEFAULT 0 CHECK (disabled IN (0, 1)),
    sort_order         INTEGER NOT NULL DEFAULT 0,
    parameters         TEXT NOT NULL DEFAULT '{}',
    constraints        TEXT NOT NULL DEFAULT '[]',
    variants           TEXT NOT NULL DEFAULT '[]',
    created_at         TEXT NOT NULL,
    created_by_user_id BIGINT
);
CREATE INDEX IF NOT EXISTS feature_strategies_flag
    ON feature_strategies (feature_name, environment, sort_order);
CREATE INDEX IF NOT EXISTS feature_strategies_environment ON feature_strategies (environment, feature_name);
CREATE TABLE IF NOT EXISTS feature_strategy_segments (
    strategy_id TEXT NOT NULL REFERENCES feature_strategies (id),
    segment_id  BIGINT NOT NULL REFERENCES segments (id),
    PRIMARY KEY (strategy_id, segment_id)
);
CREATE INDEX IF NOT EXISTS feature_strategy_segments_segment
    ON feature_strategy_segments (segment_id, strategy_id);
CREATE TABLE IF NOT EXISTS feature_variants (
    feature_name TEXT NOT NULL REFERENCES features (name),
    environment  TEXT NOT NULL REFERENCES environments (name),
    variants     TEXT NOT NULL DEFAULT '[]',
    PRIMARY KEY (feature_name, environment)
);
CREATE TABLE IF NOT EXISTS feature_dependencies (
    child    TEXT PRIMARY KEY REFERENCES features (name),
    parent   TEXT NOT NULL REFERENCES features (name),
    enabled  INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
    variants TEXT,
    CHECK (child <> parent)
);
CREATE INDEX IF NOT EXISTS feature_dependencies_parent ON feature_dependencies (parent);

-- ==== Roles and their permissions (schema version 11), as schema.sql's ===================
CREATE TABLE IF NOT EXISTS roles (
    name        TEXT PRIMARY KEY CHECK (length(name) > 0),
    description TEXT,
    built_in    INTEGER NOT NULL DEFAULT 0 CHECK (built_in IN (0, 1)),
    created_at  TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS role_permissions (
    role        TEXT NOT NULL REFERENCES roles (name),
    permission  TEXT NOT NULL CHECK (length(permission) BETWEEN 1 AND 100),
    environment TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (role, permission, environment)
);
-- The built-in roles Owner and Member, granting what the reference server's grant (what each
-- grants and why: permissions/roles.py, whose BUILT_IN a test holds equal to these rows): Owner
-- every project permission, Member the flags' work without the project's administration, both
-- in every environment. A custom role is declared by `flagadmin role create`.
INSERT INTO roles (name, description, built_in, created_at) VALUES
    ('Owner', 'Every project permission, in every environment.', 1, to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')),
    ('Member', 'The project''s flags: create, change, archive, their strategies, environments, variants'
        || ' and dependencies, and project API tokens, in every environment; not the project itself.', 1, to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')) ON CONFLICT DO NOTHING;
INSERT INTO role_permissions (role, permission) VALUES
    ('Owner', 'CREATE_FEATURE'), ('Owner', 'CREATE_FEATURE_STRATEGY'),
    ('Owner', 'CREATE_PROJECT_API_TOKEN'), ('Owner', 'DELETE_FEATURE'),
    ('Owner', 'DELETE_FEATURE_STRATEGY'), ('Owner', 'DELETE_PROJECT'),
    ('Owner', 'DELETE_PROJECT_API_TOKEN'), ('Owner', 'READ_PROJECT_API_TOKEN'),
    ('Owner', 'UPDATE_FEATURE'), ('Owner', 'UPDATE_FEATURE_DEPENDENCY'),
    ('Owner', 'UPDATE_FEATURE_ENVIRONMENT'), ('Owner', 'UPDATE_FEATURE_ENVIRONMENT_VARIANTS'),
    ('Owner', 'UPDATE_FEATURE_STRATEGY'), ('Owner', 'UPDATE_FEATURE_VARIANTS'),
    ('Owner', 'UPDATE_PROJECT'), ('Owner', 'UPDATE_PROJECT_SEGMENT') ON CONFLICT DO NOTHING;
INSERT INTO role_permissions (role, permission)
    SELECT 'Member', permission FROM role_permissions
    WHERE role = 'Owner' AND permission NOT IN ('UPDATE_PROJECT', 'DELETE_PROJECT', 'UPDATE_PROJECT_SEGMENT') ON CONFLICT DO NOTHING;

-- ==== SDK traffic (schema version 11), as schema.sql's ===================================
CREATE TABLE IF NOT EXISTS client_applications (
    app_name    TEXT PRIMARY KEY CHECK (length(app_name) BETWEEN 1 AND 255),
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    created_by  TEXT,
    description TEXT,
    url         TEXT,
    color       TEXT,
    icon        TEXT,
    strategies  TEXT NOT NULL DEFAULT '[]',
    announced   INTEGER NOT NULL DEFAULT 0 CHECK (announced IN (0, 1))
);
CREATE TABLE IF NOT EXISTS client_instances (
    app_name    TEXT NOT NULL,
    instance_id TEXT NOT NULL,
    environment TEXT NOT NULL DEFAULT 'default',
    sdk_version TEXT,
    sdk_type    TEXT,
    client_ip   TEXT,
    created_at  TEXT NOT NULL,
    last_seen   TEXT NOT NULL,
    PRIMARY KEY (app_name, instance_id, environment)
);
CREATE TABLE IF NOT EXISTS client_application_usage (
    app_name    TEXT NOT NULL,
    project     TEXT NOT NULL,
    environment TEXT NOT NULL,
    PRIMARY KEY (app_name, project, environment)
);
CREATE TABLE IF NOT EXISTS client_metrics (
    feature_name TEXT NOT NULL,
    app_name     TEXT NOT NULL,
    environment  TEXT NOT NULL,
    hour         TEXT NOT NULL,
    yes          BIGINT NOT NULL DEFAULT 0 CHECK (yes >= 0),
    no           BIGINT NOT NULL DEFAULT 0 CHECK (no >= 0),
    variants     TEXT NOT NULL DEFAULT '{}',
    PRIMARY KEY (feature_name, app_name, environment, hour)
);
-- Pruning by age (client_metrics.py keeps two days) and the flags an application reported
-- (its detail's seenToggles); neither moves when a flush adds to a row's counts.
CREATE INDEX IF NOT EXISTS client_metrics_hour ON client_metrics (hour);
CREATE INDEX IF NOT EXISTS client_metrics_app ON client_metrics (app_name, feature_name);
CREATE TABLE IF NOT EXISTS unknown_flags (
    name         TEXT NOT NULL,
    app_name     TEXT NOT NULL,
    environment  TEXT NOT NULL,
    last_seen_at TEXT NOT NULL,
    PRIMARY KEY (name, app_name, environment)
);

-- ==== Rules revision (schema version 11), as schema.sql's ================================
-- rules_version moves with every statement that changed what GET /api/client/features can
-- answer (see schema.sql): statement triggers that read the statement's transition table, so
-- a statement that changed no row moves nothing, as SQLite's row triggers. A flag's update
-- counts only when a column the answer shows changed, a flag environment's only when its
-- switch did: last-seen times, which metrics write, leave it alone.
INSERT INTO settings (key, value) VALUES ('rules_version', '0') ON CONFLICT DO NOTHING;

CREATE OR REPLACE FUNCTION flagadmin_move_rules_version_if_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM changed_rows) THEN
        UPDATE settings SET value = (value::bigint + 1)::text WHERE key = 'rules_version';
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION flagadmin_features_updated_rules_version() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (
        SELECT 1 FROM new_rows n LEFT JOIN old_rows o ON o.name = n.name
        WHERE o.name IS NULL
            OR (o.project_id, o.type, o.description, o.stale, o.impression_data, o.archived_at)
               IS DISTINCT FROM (n.project_id, n.type, n.description, n.stale, n.impression_data, n.archived_at)
    ) THEN
        UPDATE settings SET value = (value::bigint + 1)::text WHERE key = 'rules_version';
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION flagadmin_feature_environments_updated_rules_version() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (
        SELECT 1 FROM new_rows n
        LEFT JOIN old_rows o ON o.feature_name = n.feature_name AND o.name = n.name
        WHERE o.name IS NULL OR o.enabled IS DISTINCT FROM n.enabled
    ) THEN
        UPDATE settings SET value = (value::bigint + 1)::text WHERE key = 'rules_version';
    END IF;
    RETURN NULL;
END $$;

DROP TRIGGER IF EXISTS features_update_rules_version ON features;
CREATE TRIGGER features_update_rules_version AFTER UPDATE ON features
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION flagadmin_features_updated_rules_version();
DROP TRIGGER IF EXISTS feature_environments_update_rules_version ON feature_environments;
CREATE TRIGGER feature_environments_update_rules_version AFTER UPDATE ON feature_environments
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION flagadmin_feature_environments_updated_rules_version();

-- Every other write: inserts and removals of flags and flag environments, and every write to
-- the rule tables, tags and environments.
DO $$
DECLARE
    target TEXT[];
    name TEXT;
BEGIN
    FOREACH target SLICE 1 IN ARRAY ARRAY[
        ['features', 'INSERT'], ['features', 'DELETE'],
        ['feature_environments', 'INSERT'], ['feature_environments', 'DELETE'],
        ['feature_strategies', 'INSERT'], ['feature_strategies', 'UPDATE'], ['feature_strategies', 'DELETE'],
        ['feature_strategy_segments', 'INSERT'], ['feature_strategy_segments', 'UPDATE'],
        ['feature_strategy_segments', 'DELETE'],
        ['segments', 'INSERT'], ['segments', 'UPDATE'], ['segments', 'DELETE'],
        ['feature_variants', 'INSERT'], ['feature_variants', 'UPDATE'], ['feature_variants', 'DELETE'],
        ['feature_dependencies', 'INSERT'], ['feature_dependencies', 'UPDATE'], ['feature_dependencies', 'DELETE'],
        ['feature_tags', 'INSERT'], ['feature_tags', 'UPDATE'], ['feature_tags', 'DELETE'],
        ['environments', 'INSERT'], ['environments', 'UPDATE'], ['environments', 'DELETE']] LOOP
        name := target[1] || '_' || lower(target[2]) || '_rules_version';
        EXECUTE format('DROP TRIGGER IF EXISTS %I ON %I', name, target[1]);
        EXECUTE format('CREATE TRIGGER %I AFTER %s ON %I REFERENCING %s TABLE AS changed_rows'
                       ' FOR EACH STATEMENT EXECUTE FUNCTION flagadmin_move_rules_version_if_changed()',
                       name, target[2], target[1],
                       CASE WHEN target[2] = 'DELETE' THEN 'OLD' ELSE 'NEW' END);
    END LOOP;
END $$;
