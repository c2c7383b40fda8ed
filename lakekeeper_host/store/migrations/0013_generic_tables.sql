-- Generic tables (Lakekeeper's Generic Table API, /lakekeeper/v1): Lance, Parquet, Delta or any
-- other format beside Iceberg tables and views. A generic table is a ``tabular`` row of typ
-- 'generic_table' -- one name space per namespace across all three kinds, one location registry,
-- the same soft deletion, protection and purge -- plus one ``generic_table`` row with what only it
-- has: the opaque format, doc, and the free-form schema and statistics (JSON text, at most 1 MiB
-- each, checked by the server) and properties (a JSON object of strings).
--
-- PostgreSQL (this file): the column's CHECK constraint is replaced.
ALTER TABLE tabular DROP CONSTRAINT IF EXISTS tabular_typ_check;
ALTER TABLE tabular ADD CONSTRAINT tabular_typ_check CHECK (typ IN ('table', 'view', 'generic_table'));

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
