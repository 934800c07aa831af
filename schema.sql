-- flagadmin schema. Applied with executescript on every start; every statement is
-- idempotent (IF NOT EXISTS / INSERT OR IGNORE), so applying it twice is harmless.
-- The schema version lives in PRAGMA user_version and is managed by store/schema.py.
-- Timestamps are RFC 3339 text in UTC with milliseconds ("2026-11-22T00:13:28.676Z"),
-- so text order is time order.

CREATE TABLE IF NOT EXISTS settings (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
-- Two version counters, each moved by the triggers at the end: content_version by every change
-- to the data that 4.2 and 4.4 read, credentials_version by every change to who a token is.
-- Answers computed at one version stay valid while it is unchanged (ETags, caches).
INSERT OR IGNORE INTO settings (key, value) VALUES ('content_version', 0);
INSERT OR IGNORE INTO settings (key, value) VALUES ('credentials_version', 0);

-- Flag types and their expected lifetime (spec 4.2: "potentially stale" once a flag is
-- at least this old). NULL lifetime: never potentially stale.
CREATE TABLE IF NOT EXISTS feature_types (
    name          TEXT PRIMARY KEY,
    lifetime_days INTEGER CHECK (lifetime_days IS NULL OR lifetime_days > 0)
);
INSERT OR IGNORE INTO feature_types (name, lifetime_days) VALUES
    ('release', 40), ('experiment', 40), ('operational', 7),
    ('kill-switch', NULL), ('permission', NULL);

-- name is the displayed name (SCIM displayName). The columns after root_role are the SCIM
-- directory's (the 2 -> 3 migration adds them to older files): a user that SCIM has
-- never written has scim_managed 0 and keeps working as before. Every 0/1 column is NOT NULL
-- (schema version 10: active NULL, "never stated", became 1, which it counted as); email_primary
-- is NULL exactly when nothing says whether the email is primary, and never without an email.
-- A user that SCIM deletes keeps its row (a tombstone: deleted_at set, active 0, username
-- renamed, external_id cleared), so that both can be provisioned again.
CREATE TABLE IF NOT EXISTS users (
    id             INTEGER PRIMARY KEY,
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
    CHECK (email IS NOT NULL OR email_primary IS NULL)
);
CREATE INDEX IF NOT EXISTS users_root_role ON users (root_role);

CREATE TABLE IF NOT EXISTS projects (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    description TEXT
);

-- A user may hold several roles in one project; "Owner" and "Member" are built in,
-- any other name is a custom role.
CREATE TABLE IF NOT EXISTS project_members (
    project_id TEXT NOT NULL REFERENCES projects (id),
    user_id    INTEGER NOT NULL REFERENCES users (id),
    role       TEXT NOT NULL CHECK (length(role) > 0),
    PRIMARY KEY (project_id, user_id, role)
) WITHOUT ROWID;
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
    created_by_user_id INTEGER REFERENCES users (id),
    archived_at        TEXT CHECK (archived_at IS NULL OR archived_at >= created_at),
    last_seen_at       TEXT,
    archived_item      BLOB CHECK (archived_item IS NULL OR typeof(archived_item) = 'blob')
);
-- archived_item: while the flag is archived, its 4.4 object in its wire bytes (NULL while it is
-- live), made by the database, by the triggers of "Archived flags' 4.4 items" below (schema
-- version 9).
-- Covers the per-project counts and health of spec 4.2 without touching the table.
CREATE INDEX IF NOT EXISTS features_project_health
    ON features (project_id, archived_at, type, created_at, stale);
-- 4.2's flags (schema version 5): a user's live flags, and each favorite's columns, from the
-- index alone; a first dashboard no longer reads a table row per flag (bench/RESULTS.md).
-- features_creator also serves the foreign key from users (its first column).
CREATE INDEX IF NOT EXISTS features_creator
    ON features (created_by_user_id, archived_at, created_at, name, project_id, type);
CREATE INDEX IF NOT EXISTS features_name_listed ON features (name, archived_at, project_id, type, created_at);
-- 4.4's order for a caller who sees every project: most recently archived first, then by name.
CREATE INDEX IF NOT EXISTS features_archived_order ON features (archived_at DESC, name) WHERE archived_at IS NOT NULL;

CREATE TABLE IF NOT EXISTS feature_environments (
    feature_name TEXT NOT NULL REFERENCES features (name),
    name         TEXT NOT NULL,
    enabled      INTEGER NOT NULL DEFAULT 0 CHECK (enabled IN (0, 1)),
    last_seen_at TEXT,
    PRIMARY KEY (feature_name, name)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS favorite_features (
    user_id      INTEGER NOT NULL REFERENCES users (id),
    feature_name TEXT NOT NULL REFERENCES features (name),
    PRIMARY KEY (user_id, feature_name)
) WITHOUT ROWID;

-- ==== Archived flags in their 4.4 wire bytes (spec 4.4, 2.6; schema version 9) =====
-- archived_feature_json makes each archived flag's 4.4 object: every field of spec 2.6, keys in
-- its order, compact, environments by name. features.archived_item keeps it (the triggers of
-- "Archived flags' 4.4 items" below), so that 4.4 reads stored bytes instead of building every
-- flag for every request. A 0/1 column is a JSON boolean through json('true'), a constant
-- that SQLite evaluates once per statement.
CREATE VIEW IF NOT EXISTS archived_feature_json (name, item) AS
    SELECT f.name, CAST(json_object(
        'name', f.name, 'type', f.type, 'description', f.description, 'project', f.project_id,
        'stale', CASE WHEN f.stale = 1 THEN json('true') ELSE json('false') END,
        'impressionData', CASE WHEN f.impression_data = 1 THEN json('true') ELSE json('false') END,
        'createdAt', f.created_at, 'archivedAt', f.archived_at, 'lastSeenAt', f.last_seen_at,
        'environments', json((SELECT json_group_array(json_object('name', e.name,
                'lastSeenAt', e.last_seen_at,
                'enabled', CASE WHEN e.enabled = 1 THEN json('true') ELSE json('false') END))
            FROM (SELECT * FROM feature_environments WHERE feature_name = f.name ORDER BY name) e)))
        AS BLOB)
    FROM features f WHERE f.archived_at IS NOT NULL;

-- events, projects, environments and parameters are JSON text, kept as given.
CREATE TABLE IF NOT EXISTS integrations (
    id           INTEGER PRIMARY KEY,
    provider     TEXT NOT NULL,
    description  TEXT,
    enabled      INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
    events       TEXT NOT NULL DEFAULT '[]',
    projects     TEXT NOT NULL DEFAULT '[]',
    environments TEXT NOT NULL DEFAULT '[]',
    parameters   TEXT NOT NULL DEFAULT '{}'
);

-- The integration event log (spec 4.1). id is global and increasing (a later event has a
-- higher id); seq numbers the events of one integration 1, 2, 3, ... without gaps, so that
-- "offset k, newest first" is the row with seq = max(seq) - k: a seek, whatever k.
-- item is the row's 4.1 item in its wire bytes (spec 2.2: id, integrationId, createdAt, state,
-- stateDetails, event, details as recorded), made once when the row is appended
-- (store/integration_events.py), so that a page is a join of stored bytes.
--
-- The table is clustered by log (schema version 8): its rowid, log_key, is the log's
-- number (integration_logs) times 2^40 plus seq, so one integration's rows lie together in seq
-- order and a page is one range of the table's own b-tree (about 25 neighbouring pages for 50
-- rows of 1.7 KB), not 50 lookups scattered among every other integration's rows. log numbers
-- are small (1 to 2^23 - 1; a deleted log frees its number, given again once the largest is
-- taken) whatever the integration's id, which seeds may set to any 64-bit value; seq stays
-- below 2^40 (a million events a day for three thousand years). The (integration_id, seq)
-- index serves the head, retention, deletes and the foreign key; id's index the next id.
CREATE TABLE IF NOT EXISTS integration_logs (
    integration_id INTEGER PRIMARY KEY REFERENCES integrations (id),
    log_no         INTEGER NOT NULL UNIQUE CHECK (log_no BETWEEN 1 AND 8388607)
);

CREATE TABLE IF NOT EXISTS integration_events (
    log_key        INTEGER PRIMARY KEY,
    id             INTEGER NOT NULL UNIQUE,
    integration_id INTEGER NOT NULL REFERENCES integrations (id),
    seq            INTEGER NOT NULL CHECK (seq BETWEEN 1 AND 1099511627775),
    created_at     TEXT NOT NULL,
    state          TEXT NOT NULL CHECK (state IN ('success', 'failed', 'successWithErrors')),
    item           BLOB NOT NULL CHECK (typeof(item) = 'blob'),
    UNIQUE (integration_id, seq),
    CHECK (log_key % 1099511627776 = seq)
);

-- API tokens (spec 5). Only the SHA-256 digest of a token is stored. kind: admin (the admin
-- API, as Admin), personal (the admin API, as its user), client (the Client API of backend
-- SDKs) or frontend (the Frontend API); type is the reference server's name of an API token's
-- kind as it was created (a client token made as "backend" stays "backend"; NULL for personal
-- tokens). A client or frontend token reads one environment, and the projects of the JSON list
-- projects (NULL: every project). Schema version 11 added type, environment and projects
-- (REBUILDS[11] builds the table again on an upgrade).
CREATE TABLE IF NOT EXISTS api_tokens (
    id           INTEGER PRIMARY KEY,
    digest       TEXT NOT NULL UNIQUE CHECK (length(digest) = 64),
    kind         TEXT NOT NULL CHECK (kind IN ('admin', 'personal', 'client', 'frontend')),
    user_id      INTEGER REFERENCES users (id),
    name         TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    last_used_at TEXT,
    expires_at   TEXT,
    revoked_at   TEXT,
    type         TEXT,
    environment  TEXT,
    projects     TEXT,
    CHECK ((kind = 'personal') = (user_id IS NOT NULL)),
    CHECK (CASE kind WHEN 'personal' THEN type IS NULL
                     WHEN 'client' THEN type IN ('client', 'backend')
                     ELSE type = kind END),
    CHECK ((kind IN ('client', 'frontend')) = (environment IS NOT NULL)),
    CHECK (projects IS NULL OR (kind IN ('client', 'frontend') AND json_valid(projects)))
);

-- SCIM tokens (spec 4.5). Only digests are stored; the partial unique index lets at most
-- one token be active (not revoked) at any time.
CREATE TABLE IF NOT EXISTS scim_tokens (
    id         INTEGER PRIMARY KEY,
    digest     TEXT NOT NULL UNIQUE CHECK (length(digest) = 64),
    created_at TEXT NOT NULL,
    revoked_at TEXT
);
CREATE UNIQUE INDEX IF NOT EXISTS scim_tokens_one_active
    ON scim_tokens (revoked_at IS NULL) WHERE revoked_at IS NULL;

-- ==== System events and their delivery (spec 2.3, 6; issue: live events) ================

-- System events (spec 2.3): every change flagadmin makes, written in the transaction of the
-- change. AUTOINCREMENT: an id is never reused, so ids only grow. data, pre_data and tags are
-- compact JSON text (or NULL). group_id (schema 11) is the same for every event of one write
-- transaction (the reference's groupId; NULL for the events recorded before version 11).
CREATE TABLE IF NOT EXISTS events (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    type               TEXT NOT NULL,
    created_at         TEXT NOT NULL,
    created_by         TEXT NOT NULL,
    created_by_user_id INTEGER,
    project            TEXT,
    environment        TEXT,
    feature_name       TEXT,
    data               TEXT,
    pre_data           TEXT,
    tags               TEXT,
    group_id           INTEGER
);

-- The system event log's reads (store/event_log.py; schema 11): newest first by created_at,
-- then id. One index per filter of the search, each in that order (created_at, then the id:
-- the rowid that SQLite adds at the end, or named where project follows), so that a filter's
-- page, a date range within it included, is one backward range of its index; the broad ones
-- end in project, so that the caller's visibility is checked on the index entry and a page
-- or a count reads no row it skips. An event without a project, flag, creator or environment
-- has no entry in that one's index (no filter asks for NULL). None for the free text.
CREATE INDEX IF NOT EXISTS events_created ON events (created_at, id, project);
CREATE INDEX IF NOT EXISTS events_project ON events (project, created_at) WHERE project IS NOT NULL;
CREATE INDEX IF NOT EXISTS events_feature ON events (feature_name, created_at) WHERE feature_name IS NOT NULL;
CREATE INDEX IF NOT EXISTS events_type ON events (type, created_at, id, project);
CREATE INDEX IF NOT EXISTS events_created_by ON events (created_by_user_id, created_at, id, project)
    WHERE created_by_user_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS events_environment ON events (environment, created_at, id, project)
    WHERE environment IS NOT NULL;
CREATE INDEX IF NOT EXISTS events_group ON events (group_id) WHERE group_id IS NOT NULL;

-- How many events each project ('' for the events of no project), each type, each
-- environment and each creator's user id has, kept by the triggers below in the transaction
-- of every event: the log's total, a project's, the caller's visible projects' and a single
-- filter's are sums of a few rows instead of counts of the log (store/event_log.py). Filled
-- once from the events already there when the table is new (an upgrade to 11).
CREATE TABLE IF NOT EXISTS event_counts (
    dimension TEXT NOT NULL CHECK (dimension IN ('project', 'type', 'environment', 'creator')),
    value     TEXT NOT NULL,
    events    INTEGER NOT NULL CHECK (events >= 0),
    PRIMARY KEY (dimension, value)
) WITHOUT ROWID;
INSERT INTO event_counts (dimension, value, events)
    SELECT dimension, value, count(*) FROM (
        SELECT 'project' AS dimension, coalesce(project, '') AS value FROM events
        UNION ALL SELECT 'type', type FROM events
        UNION ALL SELECT 'environment', environment FROM events WHERE environment IS NOT NULL
        UNION ALL SELECT 'creator', created_by_user_id FROM events WHERE created_by_user_id IS NOT NULL
    ) WHERE NOT EXISTS (SELECT 1 FROM event_counts) GROUP BY dimension, value;
-- Each count: an UPDATE of its row, then an INSERT only when there was none (changes() is the
-- last statement's of this trigger): a third cheaper than one upsert of the four rows.
CREATE TRIGGER IF NOT EXISTS events_insert_count AFTER INSERT ON events BEGIN
    UPDATE event_counts SET events = events + 1 WHERE dimension = 'project' AND value = coalesce(NEW.project, '');
    INSERT INTO event_counts SELECT 'project', coalesce(NEW.project, ''), 1 WHERE changes() = 0;
    UPDATE event_counts SET events = events + 1 WHERE dimension = 'type' AND value = NEW.type;
    INSERT INTO event_counts SELECT 'type', NEW.type, 1 WHERE changes() = 0;
    UPDATE event_counts SET events = events + 1 WHERE dimension = 'environment' AND value = NEW.environment;
    INSERT INTO event_counts SELECT 'environment', NEW.environment, 1
        WHERE changes() = 0 AND NEW.environment IS NOT NULL;
    UPDATE event_counts SET events = events + 1
        WHERE dimension = 'creator' AND value = CAST(NEW.created_by_user_id AS TEXT);
    INSERT INTO event_counts SELECT 'creator', CAST(NEW.created_by_user_id AS TEXT), 1
        WHERE changes() = 0 AND NEW.created_by_user_id IS NOT NULL;
END;
CREATE TRIGGER IF NOT EXISTS events_delete_count AFTER DELETE ON events BEGIN
    UPDATE event_counts SET events = events - 1 WHERE dimension = 'project' AND value = coalesce(OLD.project, '');
    UPDATE event_counts SET events = events - 1 WHERE dimension = 'type' AND value = OLD.type;
    UPDATE event_counts SET events = events - 1 WHERE dimension = 'environment' AND value = OLD.environment;
    UPDATE event_counts SET events = events - 1
        WHERE dimension = 'creator' AND value = CAST(OLD.created_by_user_id AS TEXT);
END;
CREATE TRIGGER IF NOT EXISTS events_update_count AFTER UPDATE OF project, type, environment, created_by_user_id
    ON events BEGIN
    UPDATE event_counts SET events = events - 1 WHERE dimension = 'project' AND value = coalesce(OLD.project, '');
    UPDATE event_counts SET events = events - 1 WHERE dimension = 'type' AND value = OLD.type;
    UPDATE event_counts SET events = events - 1 WHERE dimension = 'environment' AND value = OLD.environment;
    UPDATE event_counts SET events = events - 1
        WHERE dimension = 'creator' AND value = CAST(OLD.created_by_user_id AS TEXT);
    UPDATE event_counts SET events = events + 1 WHERE dimension = 'project' AND value = coalesce(NEW.project, '');
    INSERT INTO event_counts SELECT 'project', coalesce(NEW.project, ''), 1 WHERE changes() = 0;
    UPDATE event_counts SET events = events + 1 WHERE dimension = 'type' AND value = NEW.type;
    INSERT INTO event_counts SELECT 'type', NEW.type, 1 WHERE changes() = 0;
    UPDATE event_counts SET events = events + 1 WHERE dimension = 'environment' AND value = NEW.environment;
    INSERT INTO event_counts SELECT 'environment', NEW.environment, 1
        WHERE changes() = 0 AND NEW.environment IS NOT NULL;
    UPDATE event_counts SET events = events + 1
        WHERE dimension = 'creator' AND value = CAST(NEW.created_by_user_id AS TEXT);
    INSERT INTO event_counts SELECT 'creator', CAST(NEW.created_by_user_id AS TEXT), 1
        WHERE changes() = 0 AND NEW.created_by_user_id IS NOT NULL;
END;

-- The outbox: one row per (event, integration) whose filters matched when the event was
-- written, in the same transaction. Delivery workers claim rows (state in_flight, a lease that
-- ends at lease_until, and their claim token) and record each attempt in integration_events
-- (4.1). A lease that ends before its attempt is recorded (a killed worker) makes the row
-- claimable again: nothing is lost. webhook_id is the same on every attempt (128 random bits:
-- unique without an index, which every change would pay for at a random place).
CREATE TABLE IF NOT EXISTS integration_deliveries (
    id              INTEGER PRIMARY KEY,
    event_id        INTEGER NOT NULL REFERENCES events (id),
    integration_id  INTEGER NOT NULL REFERENCES integrations (id),
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
-- The unfinished deliveries of each integration in event order: the claim reads the first
-- few of each integration (its window of maxInFlight), nothing else.
CREATE INDEX IF NOT EXISTS integration_deliveries_unfinished
    ON integration_deliveries (integration_id, id) WHERE state IN ('pending', 'in_flight');
-- Finished deliveries by age, for their retention.
CREATE INDEX IF NOT EXISTS integration_deliveries_finished
    ON integration_deliveries (finished_at) WHERE finished_at IS NOT NULL;

-- flagadmin's own settings of an integration configuration, beside the reference server's
-- fields in integrations: when it was created, how many of its deliveries may be under way at
-- once, and how long its log (4.1) keeps rows. NULL: the instance's default (FLAGADMIN_*).
CREATE TABLE IF NOT EXISTS integration_options (
    integration_id INTEGER PRIMARY KEY REFERENCES integrations (id),
    created_at     TEXT,
    max_in_flight  INTEGER CHECK (max_in_flight BETWEEN 1 AND 100),
    events_keep    INTEGER CHECK (events_keep >= 1),
    events_max_age TEXT
);

-- ==== Flags changed through the API ====================================================

-- The install's environments (seeds, `flagadmin environment add`). A flag is created with a
-- feature_environments row per environment, disabled. type is the reference server's kind of
-- environment; sort_order orders them in answers (then name).
CREATE TABLE IF NOT EXISTS environments (
    name       TEXT PRIMARY KEY CHECK (length(name) BETWEEN 1 AND 100),
    type       TEXT NOT NULL DEFAULT 'development'
               CHECK (type IN ('development', 'test', 'preproduction', 'production')),
    sort_order INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL
);

-- Tags given to a flag when it is created (createFeatureSchema's tags); carried by its events.
CREATE TABLE IF NOT EXISTS feature_tags (
    feature_name TEXT NOT NULL REFERENCES features (name),
    type         TEXT NOT NULL CHECK (length(type) BETWEEN 2 AND 50),
    value        TEXT NOT NULL CHECK (length(value) BETWEEN 2 AND 50),
    PRIMARY KEY (feature_name, type, value)
) WITHOUT ROWID;

-- Deleting an archived flag removes its favorites: found by flag, not by user.
CREATE INDEX IF NOT EXISTS favorite_features_feature ON favorite_features (feature_name);

-- ==== SCIM provisioning: the directory's users and groups, and the roles groups grant

-- userName is unique whatever its case (RFC 7643 caseExact false) among live users, and so is
-- a user's externalId; lower() folds ASCII letters (SQLite's lower), the same fold the
-- filters use.
CREATE UNIQUE INDEX IF NOT EXISTS users_username_ci ON users (lower(username)) WHERE deleted_at IS NULL;
CREATE UNIQUE INDEX IF NOT EXISTS users_external_id ON users (external_id) WHERE external_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS users_email_ci ON users (lower(email));

-- Groups, created by SCIM only (RFC 7643 section 4.2). A deleted group is removed; the
-- AUTOINCREMENT id (the SCIM id is "group-" and it) is never given to another group. name_key
-- is lower(display_name), kept as a column so that the role mappings join on it by index.
CREATE TABLE IF NOT EXISTS directory_groups (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
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

-- Members of a group; display is the member's display text as the client sent it, if it did.
CREATE TABLE IF NOT EXISTS directory_group_members (
    group_id INTEGER NOT NULL REFERENCES directory_groups (id),
    user_id  INTEGER NOT NULL REFERENCES users (id),
    display  TEXT,
    PRIMARY KEY (group_id, user_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS directory_group_members_user ON directory_group_members (user_id, group_id);

-- What a group grants, owned by flagadmin (command line `flagadmin group-role`, admin API
-- /api/admin/group-roles), never by the directory: keyed by the group's displayName folded by
-- lower(), so a mapping may name a group SCIM has not created yet.
CREATE TABLE IF NOT EXISTS group_root_roles (
    group_key  TEXT PRIMARY KEY,
    group_name TEXT NOT NULL,
    root_role  TEXT NOT NULL CHECK (root_role IN ('Admin', 'Editor', 'Viewer'))
);
-- A WITHOUT ROWID table declares its primary key's columns first, in the key's order: SQLite
-- 3.40's integrity_check reports a NOT NULL column declared before one of them as holding NULL
-- (schema version 10 built this table again in this order; tests/test_stored_states.py holds
-- every such table to it).
CREATE TABLE IF NOT EXISTS group_project_roles (
    group_key  TEXT NOT NULL,
    project_id TEXT NOT NULL,
    role       TEXT NOT NULL CHECK (length(role) > 0),
    group_name TEXT NOT NULL,
    PRIMARY KEY (group_key, project_id, role)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS group_project_roles_project ON group_project_roles (project_id, role);

-- The root roles users get through their groups.
CREATE VIEW IF NOT EXISTS group_granted_root_roles AS
    SELECT m.user_id, r.root_role FROM directory_group_members m
    JOIN directory_groups g ON g.id = m.group_id
    JOIN group_root_roles r ON r.group_key = g.name_key;

-- A user's effective root role: the highest of its own and its groups' (Admin > Editor > Viewer).
CREATE VIEW IF NOT EXISTS user_root_roles AS
    SELECT u.id AS user_id, CASE
        WHEN u.root_role = 'Admin' OR EXISTS (SELECT 1 FROM group_granted_root_roles x
            WHERE x.user_id = u.id AND x.root_role = 'Admin') THEN 'Admin'
        WHEN u.root_role = 'Editor' OR EXISTS (SELECT 1 FROM group_granted_root_roles x
            WHERE x.user_id = u.id AND x.root_role = 'Editor') THEN 'Editor'
        ELSE 'Viewer' END AS root_role
    FROM users u;

-- Every role an active user holds in a project: given directly (project_members) or through a
-- group mapped to the project (group_project_roles). Every reader of project roles (4.2, 4.4,
-- visibility, permission checks) reads project_roles, so both kinds count the same everywhere;
-- a deactivated or deleted user holds none (its rows stay, for a reactivation). Its two arms
-- are views too: SQLite pushes an equality (user_id = ?) into a UNION view, not an IN
-- (subquery), so a query filtering by a list of projects filters each arm itself.
--
-- "Active" is checked in users_inactive, a partial index holding only the deactivated and
-- deleted users (active is 0 or 1, and the foreign keys guarantee the user exists): a
-- role costs one probe of that small index, where a join read the user's row (schema version
-- 5; on the reference data, counting heavy's 2,499 roles on a new connection fell from 3.8 to
-- 2.1 ms, bench/RESULTS.md). INDEXED BY keeps SQLite from reading the row by its rowid instead.
CREATE INDEX IF NOT EXISTS users_inactive ON users (id) WHERE active = 0;
CREATE VIEW IF NOT EXISTS direct_project_roles AS
    SELECT pm.project_id, pm.user_id, pm.role FROM project_members pm
    WHERE NOT EXISTS (SELECT 1 FROM users u INDEXED BY users_inactive WHERE u.id = pm.user_id AND u.active = 0);
CREATE VIEW IF NOT EXISTS granted_project_roles AS
    SELECT r.project_id, m.user_id, r.role FROM group_project_roles r
    JOIN directory_groups g ON g.name_key = r.group_key
    JOIN directory_group_members m ON m.group_id = g.id
    WHERE NOT EXISTS (SELECT 1 FROM users u INDEXED BY users_inactive WHERE u.id = m.user_id AND u.active = 0);
CREATE VIEW IF NOT EXISTS project_roles AS
    SELECT project_id, user_id, role FROM direct_project_roles
    UNION ALL
    SELECT project_id, user_id, role FROM granted_project_roles;

-- Every write here can change what 4.2 shows (admins, projects, memberCount, owners) and whom a
-- token acts as (effective root role), so it moves both version counters; so does a change of
-- a user's active state (deactivation: its personal tokens stop working at once). An update
-- counts only when the value changed, not whenever the column is assigned: a SCIM PUT or PATCH
-- writes every column of the user, and moving credentials_version for a new displayName would
-- send every cached token back to the database (schema version 6).
CREATE TRIGGER IF NOT EXISTS directory_groups_insert_versions AFTER INSERT ON directory_groups
    BEGIN UPDATE settings SET value = value + 1 WHERE key IN ('content_version', 'credentials_version'); END;
CREATE TRIGGER IF NOT EXISTS directory_groups_update_versions AFTER UPDATE OF id, name_key ON directory_groups
    WHEN OLD.id IS NOT NEW.id OR OLD.name_key IS NOT NEW.name_key
    BEGIN UPDATE settings SET value = value + 1 WHERE key IN ('content_version', 'credentials_version'); END;
CREATE TRIGGER IF NOT EXISTS directory_groups_delete_versions AFTER DELETE ON directory_groups
    BEGIN UPDATE settings SET value = value + 1 WHERE key IN ('content_version', 'credentials_version'); END;
CREATE TRIGGER IF NOT EXISTS directory_group_members_insert_versions AFTER INSERT ON directory_group_members
    BEGIN UPDATE settings SET value = value + 1 WHERE key IN ('content_version', 'credentials_version'); END;
CREATE TRIGGER IF NOT EXISTS directory_group_members_delete_versions AFTER DELETE ON directory_group_members
    BEGIN UPDATE settings SET value = value + 1 WHERE key IN ('content_version', 'credentials_version'); END;
CREATE TRIGGER IF NOT EXISTS group_root_roles_insert_versions AFTER INSERT ON group_root_roles
    BEGIN UPDATE settings SET value = value + 1 WHERE key IN ('content_version', 'credentials_version'); END;
CREATE TRIGGER IF NOT EXISTS group_root_roles_update_versions AFTER UPDATE ON group_root_roles
    BEGIN UPDATE settings SET value = value + 1 WHERE key IN ('content_version', 'credentials_version'); END;
CREATE TRIGGER IF NOT EXISTS group_root_roles_delete_versions AFTER DELETE ON group_root_roles
    BEGIN UPDATE settings SET value = value + 1 WHERE key IN ('content_version', 'credentials_version'); END;
CREATE TRIGGER IF NOT EXISTS group_project_roles_insert_versions AFTER INSERT ON group_project_roles
    BEGIN UPDATE settings SET value = value + 1 WHERE key IN ('content_version', 'credentials_version'); END;
CREATE TRIGGER IF NOT EXISTS group_project_roles_update_versions AFTER UPDATE ON group_project_roles
    BEGIN UPDATE settings SET value = value + 1 WHERE key IN ('content_version', 'credentials_version'); END;
CREATE TRIGGER IF NOT EXISTS group_project_roles_delete_versions AFTER DELETE ON group_project_roles
    BEGIN UPDATE settings SET value = value + 1 WHERE key IN ('content_version', 'credentials_version'); END;
CREATE TRIGGER IF NOT EXISTS users_update_active_credentials_version
    AFTER UPDATE OF active, deleted_at ON users
    WHEN OLD.active IS NOT NEW.active OR OLD.deleted_at IS NOT NEW.deleted_at
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'credentials_version'; END;

-- ==== Archived flags' 4.4 items ==============================================================
-- Each write to an archived flag (or to one that becomes or stops being archived) and to an
-- archived flag's environments makes its archived_item again from the view, in the same
-- transaction (NULL once the flag is live again). Writes to live flags cost nothing here.
-- The update triggers of features (this one and features_update_content_version) name every
-- column of features but archived_item, so that the writes of archived_item here fire neither
-- (a column added to features must be added to both lists).
CREATE TRIGGER IF NOT EXISTS features_insert_archived_item AFTER INSERT ON features
    WHEN NEW.archived_at IS NOT NULL
    BEGIN UPDATE features SET archived_item = (SELECT item FROM archived_feature_json WHERE name = NEW.name)
        WHERE name = NEW.name; END;
CREATE TRIGGER IF NOT EXISTS features_update_archived_item
    AFTER UPDATE OF name, project_id, type, description, stale, impression_data, created_at,
        created_by_user_id, archived_at, last_seen_at ON features
    WHEN OLD.archived_at IS NOT NULL OR NEW.archived_at IS NOT NULL
    BEGIN UPDATE features SET archived_item = (SELECT item FROM archived_feature_json WHERE name = NEW.name)
        WHERE name = NEW.name; END;
CREATE TRIGGER IF NOT EXISTS feature_environments_insert_archived_item AFTER INSERT ON feature_environments
    WHEN EXISTS (SELECT 1 FROM features WHERE name = NEW.feature_name AND archived_at IS NOT NULL)
    BEGIN UPDATE features SET archived_item = (SELECT item FROM archived_feature_json WHERE name = NEW.feature_name)
        WHERE name = NEW.feature_name; END;
CREATE TRIGGER IF NOT EXISTS feature_environments_update_archived_item AFTER UPDATE ON feature_environments
    WHEN EXISTS (SELECT 1 FROM features WHERE name IN (OLD.feature_name, NEW.feature_name) AND archived_at IS NOT NULL)
    BEGIN UPDATE features SET archived_item = (SELECT item FROM archived_feature_json j WHERE j.name = features.name)
        WHERE name IN (OLD.feature_name, NEW.feature_name); END;
CREATE TRIGGER IF NOT EXISTS feature_environments_delete_archived_item AFTER DELETE ON feature_environments
    WHEN EXISTS (SELECT 1 FROM features WHERE name = OLD.feature_name AND archived_at IS NOT NULL)
    BEGIN UPDATE features SET archived_item = (SELECT item FROM archived_feature_json WHERE name = OLD.feature_name)
        WHERE name = OLD.feature_name; END;

-- ==== Version counters =======================================================================

-- content_version counts every change to the data that 4.2 and 4.4 read, so an answer
-- computed at one content version holds until it moves. Writes to projects, memberships and
-- favorites always move it. Writes that neither 4.2 nor 4.4 can show do not (the
-- answers stay cached across them): a new user who is not an Admin (no project role yet); a
-- change to a user's SCIM bookkeeping (externalId, emails' type, version, lastModified), or to
-- the name, email or picture of a user who is neither an Admin nor in any project or group;
-- a change to a live flag's description, impression data or last-seen time (4.2 shows none of
-- them; 4.4 shows archived flags only); the environments of a live flag.
CREATE TRIGGER IF NOT EXISTS users_insert_content_version AFTER INSERT ON users
    WHEN NEW.root_role = 'Admin'
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'content_version'; END;
CREATE TRIGGER IF NOT EXISTS users_update_content_version AFTER UPDATE ON users
    WHEN OLD.id IS NOT NEW.id OR OLD.root_role IS NOT NEW.root_role
        OR ((OLD.active IS NOT NEW.active OR OLD.deleted_at IS NOT NEW.deleted_at
                OR OLD.username IS NOT NEW.username OR OLD.name IS NOT NEW.name
                OR OLD.formatted_name IS NOT NEW.formatted_name
                OR OLD.given_name IS NOT NEW.given_name OR OLD.family_name IS NOT NEW.family_name
                OR OLD.email IS NOT NEW.email OR OLD.image_url IS NOT NEW.image_url)
            AND (NEW.root_role = 'Admin'
                OR EXISTS (SELECT 1 FROM project_members WHERE user_id = NEW.id)
                OR EXISTS (SELECT 1 FROM directory_group_members WHERE user_id = NEW.id)))
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'content_version'; END;
CREATE TRIGGER IF NOT EXISTS users_delete_content_version AFTER DELETE ON users
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'content_version'; END;
CREATE TRIGGER IF NOT EXISTS projects_insert_content_version AFTER INSERT ON projects
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'content_version'; END;
CREATE TRIGGER IF NOT EXISTS projects_update_content_version AFTER UPDATE ON projects
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'content_version'; END;
CREATE TRIGGER IF NOT EXISTS projects_delete_content_version AFTER DELETE ON projects
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'content_version'; END;
CREATE TRIGGER IF NOT EXISTS project_members_insert_content_version AFTER INSERT ON project_members
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'content_version'; END;
CREATE TRIGGER IF NOT EXISTS project_members_update_content_version AFTER UPDATE ON project_members
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'content_version'; END;
CREATE TRIGGER IF NOT EXISTS project_members_delete_content_version AFTER DELETE ON project_members
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'content_version'; END;
CREATE TRIGGER IF NOT EXISTS features_insert_content_version AFTER INSERT ON features
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'content_version'; END;
CREATE TRIGGER IF NOT EXISTS features_update_content_version
    AFTER UPDATE OF name, project_id, type, description, stale, impression_data, created_at,
        created_by_user_id, archived_at, last_seen_at ON features
    WHEN OLD.archived_at IS NOT NULL OR NEW.archived_at IS NOT NULL
        OR OLD.name IS NOT NEW.name OR OLD.project_id IS NOT NEW.project_id
        OR OLD.type IS NOT NEW.type OR OLD.stale IS NOT NEW.stale
        OR OLD.created_at IS NOT NEW.created_at
        OR OLD.created_by_user_id IS NOT NEW.created_by_user_id
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'content_version'; END;
CREATE TRIGGER IF NOT EXISTS features_delete_content_version AFTER DELETE ON features
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'content_version'; END;
CREATE TRIGGER IF NOT EXISTS feature_environments_insert_content_version AFTER INSERT ON feature_environments
    WHEN EXISTS (SELECT 1 FROM features WHERE name = NEW.feature_name AND archived_at IS NOT NULL)
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'content_version'; END;
CREATE TRIGGER IF NOT EXISTS feature_environments_update_content_version AFTER UPDATE ON feature_environments
    WHEN EXISTS (SELECT 1 FROM features WHERE name = NEW.feature_name AND archived_at IS NOT NULL)
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'content_version'; END;
CREATE TRIGGER IF NOT EXISTS feature_environments_delete_content_version AFTER DELETE ON feature_environments
    WHEN EXISTS (SELECT 1 FROM features WHERE name = OLD.feature_name AND archived_at IS NOT NULL)
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'content_version'; END;
CREATE TRIGGER IF NOT EXISTS favorite_features_insert_content_version AFTER INSERT ON favorite_features
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'content_version'; END;
CREATE TRIGGER IF NOT EXISTS favorite_features_update_content_version AFTER UPDATE ON favorite_features
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'content_version'; END;
CREATE TRIGGER IF NOT EXISTS favorite_features_delete_content_version AFTER DELETE ON favorite_features
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'content_version'; END;

-- credentials_version counts every change that can turn a valid API token into an invalid one
-- or change whom it acts as: a token revoked, re-dated or removed, a user's root role changed
-- or the user removed (a new token invalidates nothing: unknown tokens are never kept). A token found valid stays valid while it does not move.
CREATE TRIGGER IF NOT EXISTS api_tokens_update_credentials_version
    AFTER UPDATE OF digest, kind, user_id, expires_at, revoked_at, environment, projects ON api_tokens
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'credentials_version'; END;
CREATE TRIGGER IF NOT EXISTS api_tokens_delete_credentials_version AFTER DELETE ON api_tokens
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'credentials_version'; END;
CREATE TRIGGER IF NOT EXISTS users_update_credentials_version AFTER UPDATE OF id, root_role ON users
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'credentials_version'; END;
CREATE TRIGGER IF NOT EXISTS users_delete_credentials_version AFTER DELETE ON users
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'credentials_version'; END;

-- ==== Rollout rules (schema version 11) ==================================================
-- What decides who gets a flag, on the reference server's admin paths: strategy types,
-- a flag environment's strategies (with constraints, segments and variants), segments, the
-- environment's variants and the flag's dependency. JSON columns hold compact JSON text in the
-- reference's wire shapes, normalised on write (flagadmin.rules).

-- Strategy types: the built-ins every SDK evaluates and custom ones (POST /api/admin/strategies).
-- parameters: [{name, type, description, required}].
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
-- The built-in types, which every SDK evaluates (their parameter names are the SDKs'); they
-- cannot be changed or deleted, only deprecated. userWithId and the gradualRollout types start
-- deprecated, as the reference server had them before it stopped listing them.
INSERT OR IGNORE INTO strategy_types (name, description, parameters, built_in, deprecated, sort_order, created_at) VALUES
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
;

-- Segments: named lists of constraints, global (project_id NULL) or of one project.
-- constraints: [{contextName, operator, values, value?, inverted, caseInsensitive}].
CREATE TABLE IF NOT EXISTS segments (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    name        TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
    description TEXT,
    project_id  TEXT REFERENCES projects (id),
    constraints TEXT NOT NULL DEFAULT '[]',
    created_at  TEXT NOT NULL,
    created_by  TEXT
);
-- Segment names are unique (the reference refuses a second one with 409).
CREATE UNIQUE INDEX IF NOT EXISTS segments_name ON segments (name);

-- A flag environment's strategies, in sort_order then id. id is a UUID (as the reference's).
-- parameters: {name: string}; constraints as segments'; variants: [{name, weight, weightType,
-- stickiness, payload?}].
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
    created_by_user_id INTEGER
);
CREATE INDEX IF NOT EXISTS feature_strategies_flag
    ON feature_strategies (feature_name, environment, sort_order);
CREATE INDEX IF NOT EXISTS feature_strategies_environment ON feature_strategies (environment, feature_name);

-- The segments a strategy uses (in use: the segment cannot be deleted).
CREATE TABLE IF NOT EXISTS feature_strategy_segments (
    strategy_id TEXT NOT NULL REFERENCES feature_strategies (id),
    segment_id  INTEGER NOT NULL REFERENCES segments (id),
    PRIMARY KEY (strategy_id, segment_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS feature_strategy_segments_segment
    ON feature_strategy_segments (segment_id, strategy_id);

-- A flag's variants in one environment (PUT .../variants-batch), normalised and sorted by name:
-- [{name, weight, weightType, stickiness, payload?, overrides?}].
CREATE TABLE IF NOT EXISTS feature_variants (
    feature_name TEXT NOT NULL REFERENCES features (name),
    environment  TEXT NOT NULL REFERENCES environments (name),
    variants     TEXT NOT NULL DEFAULT '[]',
    PRIMARY KEY (feature_name, environment)
) WITHOUT ROWID;

-- A flag's dependency on its one parent (same project, one level). enabled 0: the parent must
-- be off; variants: JSON array of the parent's variant names, or NULL.
CREATE TABLE IF NOT EXISTS feature_dependencies (
    child    TEXT PRIMARY KEY REFERENCES features (name),
    parent   TEXT NOT NULL REFERENCES features (name),
    enabled  INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
    variants TEXT,
    CHECK (child <> parent)
);
CREATE INDEX IF NOT EXISTS feature_dependencies_parent ON feature_dependencies (parent);

-- ==== Roles and their permissions (schema version 11) ===================================
-- Project roles: Owner and Member built in, custom ones declared with `flagadmin role create`.
-- A permission of role_permissions with environment '' holds in every environment.
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
) WITHOUT ROWID;
-- The built-in roles Owner and Member, granting what the reference server's grant (what each
-- grants and why: permissions/roles.py, whose BUILT_IN a test holds equal to these rows): Owner
-- every project permission, Member the flags' work without the project's administration, both
-- in every environment. A custom role is declared by `flagadmin role create`.
INSERT OR IGNORE INTO roles (name, description, built_in, created_at) VALUES
    ('Owner', 'Every project permission, in every environment.', 1, strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    ('Member', 'The project''s flags: create, change, archive, their strategies, environments, variants'
        || ' and dependencies, and project API tokens, in every environment; not the project itself.', 1, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));
INSERT OR IGNORE INTO role_permissions (role, permission) VALUES
    ('Owner', 'CREATE_FEATURE'), ('Owner', 'CREATE_FEATURE_STRATEGY'),
    ('Owner', 'CREATE_PROJECT_API_TOKEN'), ('Owner', 'DELETE_FEATURE'),
    ('Owner', 'DELETE_FEATURE_STRATEGY'), ('Owner', 'DELETE_PROJECT'),
    ('Owner', 'DELETE_PROJECT_API_TOKEN'), ('Owner', 'READ_PROJECT_API_TOKEN'),
    ('Owner', 'UPDATE_FEATURE'), ('Owner', 'UPDATE_FEATURE_DEPENDENCY'),
    ('Owner', 'UPDATE_FEATURE_ENVIRONMENT'), ('Owner', 'UPDATE_FEATURE_ENVIRONMENT_VARIANTS'),
    ('Owner', 'UPDATE_FEATURE_STRATEGY'), ('Owner', 'UPDATE_FEATURE_VARIANTS'),
    ('Owner', 'UPDATE_PROJECT'), ('Owner', 'UPDATE_PROJECT_SEGMENT');
INSERT OR IGNORE INTO role_permissions (role, permission)
    SELECT 'Member', permission FROM role_permissions
    WHERE role = 'Owner' AND permission NOT IN ('UPDATE_PROJECT', 'DELETE_PROJECT', 'UPDATE_PROJECT_SEGMENT');

-- ==== SDK traffic: applications, instances, metrics (schema version 11) ==================
-- Written in batches off the request path (flagadmin.clients), never by a request itself.
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
) WITHOUT ROWID;
-- Which projects and environments each application reads (applications' usage).
CREATE TABLE IF NOT EXISTS client_application_usage (
    app_name    TEXT NOT NULL,
    project     TEXT NOT NULL,
    environment TEXT NOT NULL,
    PRIMARY KEY (app_name, project, environment)
) WITHOUT ROWID;
-- Hourly counts per flag, application and environment (hour: RFC 3339 of the hour's start).
-- variants: {name: count} as JSON text.
CREATE TABLE IF NOT EXISTS client_metrics (
    feature_name TEXT NOT NULL,
    app_name     TEXT NOT NULL,
    environment  TEXT NOT NULL,
    hour         TEXT NOT NULL,
    yes          INTEGER NOT NULL DEFAULT 0 CHECK (yes >= 0),
    no           INTEGER NOT NULL DEFAULT 0 CHECK (no >= 0),
    variants     TEXT NOT NULL DEFAULT '{}',
    PRIMARY KEY (feature_name, app_name, environment, hour)
) WITHOUT ROWID;
-- Pruning by age (client_metrics.py keeps two days) and the flags an application reported
-- (its detail's seenToggles); neither moves when a flush adds to a row's counts.
CREATE INDEX IF NOT EXISTS client_metrics_hour ON client_metrics (hour);
CREATE INDEX IF NOT EXISTS client_metrics_app ON client_metrics (app_name, feature_name);
-- Names reported in metrics that are no flag (the reference's unknown flags).
CREATE TABLE IF NOT EXISTS unknown_flags (
    name         TEXT NOT NULL,
    app_name     TEXT NOT NULL,
    environment  TEXT NOT NULL,
    last_seen_at TEXT NOT NULL,
    PRIMARY KEY (name, app_name, environment)
) WITHOUT ROWID;

-- ==== Rules revision (schema version 11) ==================================================
-- rules_version counts every change to what GET /api/client/features can answer (and what the
-- Frontend API and OFREP evaluate, from the same answer: flagadmin.clients.features), so an
-- answer computed at one rules version holds until it moves. It moves with a flag's insert or
-- removal and a change to a column the answer shows (name, project, type, description, stale,
-- impression data, archived or not), a flag environment's switch (and its insert or removal),
-- and every write to strategies and their segments, segments, environment variants,
-- dependencies, tags (the tag filter) and environments. Last-seen times, which metrics write
-- every few seconds, do not move it.
INSERT OR IGNORE INTO settings (key, value) VALUES ('rules_version', 0);
CREATE TRIGGER IF NOT EXISTS features_insert_rules_version AFTER INSERT ON features
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'rules_version'; END;
CREATE TRIGGER IF NOT EXISTS features_update_rules_version
    AFTER UPDATE OF name, project_id, type, description, stale, impression_data, archived_at ON features
    WHEN OLD.name IS NOT NEW.name OR OLD.project_id IS NOT NEW.project_id OR OLD.type IS NOT NEW.type
        OR OLD.description IS NOT NEW.description OR OLD.stale IS NOT NEW.stale
        OR OLD.impression_data IS NOT NEW.impression_data OR OLD.archived_at IS NOT NEW.archived_at
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'rules_version'; END;
CREATE TRIGGER IF NOT EXISTS features_delete_rules_version AFTER DELETE ON features
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'rules_version'; END;
CREATE TRIGGER IF NOT EXISTS feature_environments_insert_rules_version AFTER INSERT ON feature_environments
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'rules_version'; END;
CREATE TRIGGER IF NOT EXISTS feature_environments_update_rules_version
    AFTER UPDATE OF feature_name, name, enabled ON feature_environments
    WHEN OLD.feature_name IS NOT NEW.feature_name OR OLD.name IS NOT NEW.name OR OLD.enabled IS NOT NEW.enabled
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'rules_version'; END;
CREATE TRIGGER IF NOT EXISTS feature_environments_delete_rules_version AFTER DELETE ON feature_environments
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'rules_version'; END;
CREATE TRIGGER IF NOT EXISTS feature_strategies_insert_rules_version AFTER INSERT ON feature_strategies
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'rules_version'; END;
CREATE TRIGGER IF NOT EXISTS feature_strategies_update_rules_version AFTER UPDATE ON feature_strategies
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'rules_version'; END;
CREATE TRIGGER IF NOT EXISTS feature_strategies_delete_rules_version AFTER DELETE ON feature_strategies
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'rules_version'; END;
CREATE TRIGGER IF NOT EXISTS feature_strategy_segments_insert_rules_version AFTER INSERT ON feature_strategy_segments
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'rules_version'; END;
CREATE TRIGGER IF NOT EXISTS feature_strategy_segments_update_rules_version AFTER UPDATE ON feature_strategy_segments
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'rules_version'; END;
CREATE TRIGGER IF NOT EXISTS feature_strategy_segments_delete_rules_version AFTER DELETE ON feature_strategy_segments
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'rules_version'; END;
CREATE TRIGGER IF NOT EXISTS segments_insert_rules_version AFTER INSERT ON segments
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'rules_version'; END;
CREATE TRIGGER IF NOT EXISTS segments_update_rules_version AFTER UPDATE ON segments
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'rules_version'; END;
CREATE TRIGGER IF NOT EXISTS segments_delete_rules_version AFTER DELETE ON segments
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'rules_version'; END;
CREATE TRIGGER IF NOT EXISTS feature_variants_insert_rules_version AFTER INSERT ON feature_variants
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'rules_version'; END;
CREATE TRIGGER IF NOT EXISTS feature_variants_update_rules_version AFTER UPDATE ON feature_variants
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'rules_version'; END;
CREATE TRIGGER IF NOT EXISTS feature_variants_delete_rules_version AFTER DELETE ON feature_variants
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'rules_version'; END;
CREATE TRIGGER IF NOT EXISTS feature_dependencies_insert_rules_version AFTER INSERT ON feature_dependencies
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'rules_version'; END;
CREATE TRIGGER IF NOT EXISTS feature_dependencies_update_rules_version AFTER UPDATE ON feature_dependencies
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'rules_version'; END;
CREATE TRIGGER IF NOT EXISTS feature_dependencies_delete_rules_version AFTER DELETE ON feature_dependencies
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'rules_version'; END;
CREATE TRIGGER IF NOT EXISTS feature_tags_insert_rules_version AFTER INSERT ON feature_tags
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'rules_version'; END;
CREATE TRIGGER IF NOT EXISTS feature_tags_update_rules_version AFTER UPDATE ON feature_tags
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'rules_version'; END;
CREATE TRIGGER IF NOT EXISTS feature_tags_delete_rules_version AFTER DELETE ON feature_tags
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'rules_version'; END;
CREATE TRIGGER IF NOT EXISTS environments_insert_rules_version AFTER INSERT ON environments
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'rules_version'; END;
CREATE TRIGGER IF NOT EXISTS environments_update_rules_version AFTER UPDATE ON environments
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'rules_version'; END;
CREATE TRIGGER IF NOT EXISTS environments_delete_rules_version AFTER DELETE ON environments
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'rules_version'; END;
