-- Management: endpoint-statistics timestamps and hourly warehouse statistics.

ALTER TABLE endpoint_statistics ADD COLUMN created_at BIGINT;
ALTER TABLE endpoint_statistics ADD COLUMN updated_at BIGINT;

CREATE TABLE warehouse_statistics (
    warehouse_id TEXT NOT NULL REFERENCES warehouse(id) ON DELETE CASCADE,
    bucket_start BIGINT NOT NULL,
    number_of_tables BIGINT NOT NULL,
    number_of_views BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (warehouse_id, bucket_start)
);

CREATE INDEX endpoint_statistics_window ON endpoint_statistics (project_id, bucket_start);
