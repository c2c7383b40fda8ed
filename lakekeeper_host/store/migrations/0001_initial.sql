-- Lakekeeper host schema v1. Portable between SQLite (embedded) and PostgreSQL.
-- Timestamps are epoch milliseconds; JSON is stored as text; *_key columns hold the
-- case-folded identifier so names are case-insensitive and case-preserving.

CREATE TABLE lk_server (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    server_id TEXT NOT NULL,
    bootstrapped_at BIGINT,
    terms_accepted BOOLEAN NOT NULL DEFAULT FALSE,
    created_at BIGINT NOT NULL
);

CREATE TABLE project (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT
);

CREATE TABLE warehouse (
    id TEXT PRIMARY KEY,
    project_id TEXT NOT NULL REFERENCES project(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    name_key TEXT NOT NULL,
    storage_profile TEXT NOT NULL,
    storage_secret_id TEXT,
    status TEXT NOT NULL DEFAULT 'active',
    delete_profile TEXT NOT NULL,
    protected BOOLEAN NOT NULL DEFAULT FALSE,
    allowed_format_versions TEXT,
    default_format_version INTEGER,
    version BIGINT NOT NULL DEFAULT 1,
    created_at BIGINT NOT NULL,
    updated_at BIGINT,
    UNIQUE (project_id, name_key)
);

CREATE TABLE namespace (
    id TEXT PRIMARY KEY,
    warehouse_id TEXT NOT NULL REFERENCES warehouse(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    name_key TEXT NOT NULL,
    parent_id TEXT REFERENCES namespace(id) ON DELETE CASCADE,
    properties TEXT NOT NULL DEFAULT '{}',
    protected BOOLEAN NOT NULL DEFAULT FALSE,
    version BIGINT NOT NULL DEFAULT 1,
    created_at BIGINT NOT NULL,
    updated_at BIGINT,
    UNIQUE (warehouse_id, name_key)
);
CREATE INDEX namespace_children ON namespace (warehouse_id, parent_id, name_key);

CREATE TABLE tabular (
    id TEXT PRIMARY KEY,
    warehouse_id TEXT NOT NULL REFERENCES warehouse(id) ON DELETE CASCADE,
    namespace_id TEXT NOT NULL REFERENCES namespace(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    name_key TEXT NOT NULL,
    typ TEXT NOT NULL CHECK (typ IN ('table', 'view')),
    location TEXT NOT NULL,
    metadata_location TEXT,
    metadata TEXT,
    staged BOOLEAN NOT NULL DEFAULT FALSE,
    protected BOOLEAN NOT NULL DEFAULT FALSE,
    deleted_at BIGINT,
    version BIGINT NOT NULL DEFAULT 1,
    created_at BIGINT NOT NULL,
    updated_at BIGINT
);
CREATE UNIQUE INDEX tabular_active_name ON tabular (namespace_id, name_key) WHERE deleted_at IS NULL;
CREATE INDEX tabular_listing ON tabular (namespace_id, typ, name_key, id);
CREATE INDEX tabular_location ON tabular (warehouse_id, location);
CREATE INDEX tabular_deleted ON tabular (warehouse_id, deleted_at);

CREATE TABLE secret (
    id TEXT PRIMARY KEY,
    ciphertext TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT
);

CREATE TABLE users (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    name_key TEXT NOT NULL,
    email TEXT,
    user_type TEXT NOT NULL,
    last_updated_with TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT,
    deleted_at BIGINT
);

CREATE TABLE role (
    id TEXT PRIMARY KEY,
    project_id TEXT NOT NULL REFERENCES project(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    name_key TEXT NOT NULL,
    description TEXT,
    provider_id TEXT NOT NULL,
    source_id TEXT NOT NULL,
    version BIGINT NOT NULL DEFAULT 1,
    created_at BIGINT NOT NULL,
    updated_at BIGINT,
    UNIQUE (project_id, provider_id, source_id)
);

CREATE TABLE role_member (
    role_id TEXT NOT NULL REFERENCES role(id) ON DELETE CASCADE,
    member_type TEXT NOT NULL CHECK (member_type IN ('user', 'role')),
    member_id TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (role_id, member_type, member_id)
);

CREATE TABLE task (
    id TEXT PRIMARY KEY,
    project_id TEXT NOT NULL,
    warehouse_id TEXT,
    queue_name TEXT NOT NULL,
    entity_type TEXT,
    entity_id TEXT,
    entity_name TEXT,
    status TEXT NOT NULL,
    attempt INTEGER NOT NULL DEFAULT 0,
    scheduled_for BIGINT NOT NULL,
    picked_up_at BIGINT,
    last_heartbeat_at BIGINT,
    worker_id TEXT,
    payload TEXT NOT NULL DEFAULT '{}',
    progress REAL NOT NULL DEFAULT 0,
    execution_details TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT
);
CREATE UNIQUE INDEX task_one_per_entity ON task (queue_name, entity_type, entity_id);
CREATE INDEX task_poll ON task (queue_name, status, scheduled_for);
CREATE INDEX task_warehouse ON task (warehouse_id, queue_name);

CREATE TABLE task_log (
    task_id TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    project_id TEXT NOT NULL,
    warehouse_id TEXT,
    queue_name TEXT NOT NULL,
    entity_type TEXT,
    entity_id TEXT,
    entity_name TEXT,
    status TEXT NOT NULL,
    message TEXT,
    payload TEXT,
    execution_details TEXT,
    progress REAL NOT NULL DEFAULT 0,
    started_at BIGINT,
    finished_at BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (task_id, attempt)
);
CREATE INDEX task_log_warehouse ON task_log (warehouse_id, queue_name, finished_at);

CREATE TABLE task_queue_config (
    project_id TEXT NOT NULL,
    warehouse_id TEXT NOT NULL,
    queue_name TEXT NOT NULL,
    config TEXT NOT NULL,
    max_seconds_since_last_heartbeat INTEGER,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (project_id, warehouse_id, queue_name)
);

CREATE TABLE idempotency_record (
    warehouse_id TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    operation TEXT NOT NULL,
    http_status INTEGER,
    response TEXT,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (warehouse_id, idempotency_key)
);
CREATE INDEX idempotency_created ON idempotency_record (created_at);

CREATE TABLE endpoint_statistics (
    project_id TEXT NOT NULL,
    warehouse_id TEXT NOT NULL,
    matched_path TEXT NOT NULL,
    method TEXT NOT NULL,
    status_code INTEGER NOT NULL,
    bucket_start BIGINT NOT NULL,
    count BIGINT NOT NULL,
    PRIMARY KEY (project_id, warehouse_id, matched_path, method, status_code, bucket_start)
);

CREATE TABLE metrics_report (
    id TEXT PRIMARY KEY,
    warehouse_id TEXT NOT NULL,
    tabular_id TEXT NOT NULL,
    report_type TEXT NOT NULL,
    snapshot_id BIGINT,
    report TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX metrics_report_table ON metrics_report (tabular_id, created_at);
