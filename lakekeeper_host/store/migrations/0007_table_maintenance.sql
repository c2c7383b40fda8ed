-- Per-table overrides of the warehouse maintenance policy (the `table_maintenance` queue config):
-- a partial policy JSON merged over the warehouse's. Rows go with their table.

CREATE TABLE table_maintenance_policy (
    table_id TEXT PRIMARY KEY REFERENCES tabular(id) ON DELETE CASCADE,
    warehouse_id TEXT NOT NULL,
    policy TEXT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX table_maintenance_policy_warehouse ON table_maintenance_policy (warehouse_id);
