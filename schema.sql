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

CREATE TABLE IF NOT EXISTS users (
    id        INTEGER PRIMARY KEY,
    username  TEXT NOT NULL UNIQUE,
    name      TEXT,
    email     TEXT,
    image_url TEXT,
    root_role TEXT NOT NULL CHECK (root_role IN ('Admin', 'Editor', 'Viewer'))
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
    last_seen_at       TEXT
);
-- Covers the per-project counts and health of spec 4.2 without touching the table.
CREATE INDEX IF NOT EXISTS features_project_health
    ON features (project_id, archived_at, type, created_at, stale);
CREATE INDEX IF NOT EXISTS features_creator ON features (created_by_user_id, created_at);
CREATE INDEX IF NOT EXISTS features_archived ON features (archived_at) WHERE archived_at IS NOT NULL;

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
-- "offset k, newest first" is the row with seq = max(seq) - k: an index seek, whatever k.
-- event and details are compact JSON text, kept exactly as given.
CREATE TABLE IF NOT EXISTS integration_events (
    id             INTEGER PRIMARY KEY,
    integration_id INTEGER NOT NULL REFERENCES integrations (id),
    seq            INTEGER NOT NULL CHECK (seq > 0),
    created_at     TEXT NOT NULL,
    state          TEXT NOT NULL CHECK (state IN ('success', 'failed', 'successWithErrors')),
    state_details  TEXT NOT NULL,
    event          TEXT NOT NULL,
    details        TEXT NOT NULL,
    UNIQUE (integration_id, seq)
);

-- API tokens (spec 5). Only the SHA-256 digest of a token is stored.
CREATE TABLE IF NOT EXISTS api_tokens (
    id           INTEGER PRIMARY KEY,
    digest       TEXT NOT NULL UNIQUE CHECK (length(digest) = 64),
    kind         TEXT NOT NULL CHECK (kind IN ('admin', 'personal')),
    user_id      INTEGER REFERENCES users (id),
    name         TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    last_used_at TEXT,
    expires_at   TEXT,
    revoked_at   TEXT,
    CHECK ((kind = 'admin') = (user_id IS NULL))
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
-- compact JSON text (or NULL).
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
    tags               TEXT
);

-- The outbox: one row per (event, integration) whose filters matched when the event was
-- written, in the same transaction. Delivery workers claim rows and record each attempt in
-- integration_events (4.1).
CREATE TABLE IF NOT EXISTS integration_deliveries (
    id              INTEGER PRIMARY KEY,
    event_id        INTEGER NOT NULL REFERENCES events (id),
    integration_id  INTEGER NOT NULL REFERENCES integrations (id),
    webhook_id      TEXT NOT NULL UNIQUE,
    state           TEXT NOT NULL DEFAULT 'pending'
                    CHECK (state IN ('pending', 'in_flight', 'delivered', 'failed', 'cancelled')),
    attempts        INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_attempt_at TEXT NOT NULL,
    lease_until     TEXT,
    created_at      TEXT NOT NULL,
    finished_at     TEXT,
    UNIQUE (event_id, integration_id)
);
CREATE INDEX IF NOT EXISTS integration_deliveries_due
    ON integration_deliveries (state, next_attempt_at);
CREATE INDEX IF NOT EXISTS integration_deliveries_integration
    ON integration_deliveries (integration_id, state);

-- ==== Version counters =======================================================================

-- content_version counts every change to the data that 4.2 and 4.4 read: every write to
-- these tables moves it, so an answer computed at one content version holds until it moves.
CREATE TRIGGER IF NOT EXISTS users_insert_content_version AFTER INSERT ON users
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'content_version'; END;
CREATE TRIGGER IF NOT EXISTS users_update_content_version AFTER UPDATE ON users
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
CREATE TRIGGER IF NOT EXISTS features_update_content_version AFTER UPDATE ON features
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'content_version'; END;
CREATE TRIGGER IF NOT EXISTS features_delete_content_version AFTER DELETE ON features
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'content_version'; END;
CREATE TRIGGER IF NOT EXISTS feature_environments_insert_content_version AFTER INSERT ON feature_environments
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'content_version'; END;
CREATE TRIGGER IF NOT EXISTS feature_environments_update_content_version AFTER UPDATE ON feature_environments
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'content_version'; END;
CREATE TRIGGER IF NOT EXISTS feature_environments_delete_content_version AFTER DELETE ON feature_environments
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
    AFTER UPDATE OF digest, kind, user_id, expires_at, revoked_at ON api_tokens
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'credentials_version'; END;
CREATE TRIGGER IF NOT EXISTS api_tokens_delete_credentials_version AFTER DELETE ON api_tokens
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'credentials_version'; END;
CREATE TRIGGER IF NOT EXISTS users_update_credentials_version AFTER UPDATE OF id, root_role ON users
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'credentials_version'; END;
CREATE TRIGGER IF NOT EXISTS users_delete_credentials_version AFTER DELETE ON users
    BEGIN UPDATE settings SET value = value + 1 WHERE key = 'credentials_version'; END;
