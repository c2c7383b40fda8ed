-- Generic tables: see 0013_generic_tables.sql (the PostgreSQL form) for what they are.
--
-- SQLite cannot alter a CHECK constraint, and rebuilding ``tabular`` would delete the rows that
-- reference it (ON DELETE CASCADE) and drop columns a later migration added. Widening the allowed
-- values changes nothing stored, so the table's CREATE text is edited in place, as SQLite's
-- documentation describes for loosening a constraint; RESET makes this connection re-read the
-- schema, and the CREATE TABLE below bumps the schema cookie so every other connection does too.
PRAGMA writable_schema = ON;
UPDATE sqlite_master
   SET sql = replace(sql, 'CHECK (typ IN (''table'', ''view''))', 'CHECK (typ IN (''table'', ''view'', ''generic_table''))')
 WHERE type = 'table' AND name = 'tabular';
PRAGMA writable_schema = RESET;

CREATE TABLE generic_table (
    id TEXT PRIMARY KEY REFERENCES tabular(id) ON DELETE CASCADE,
    warehouse_id TEXT NOT NULL,
    format TEXT NOT NULL,
    doc TEXT,
    schema_info TEXT,
    statistics TEXT,
    properties TEXT NOT NULL DEFAULT '{}',
    created_at BIGINT NOT NULL
);
CREATE INDEX generic_table_warehouse ON generic_table (warehouse_id);
