-- Idempotency records belong to one caller and are bound to the request that claimed them
-- (issue 30): a key is looked up per (warehouse, principal), and a record remembers the route and a
-- fingerprint of the request, so a key replays only the same caller's same request. Records live for
-- the advertised lifetime (minutes), so the table is recreated instead of converted: keys claimed
-- before the upgrade are forgotten, and a retry under one runs the operation again.
DROP TABLE idempotency_record;
CREATE TABLE idempotency_record (
    warehouse_id TEXT NOT NULL,
    principal TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    operation TEXT NOT NULL,
    route TEXT NOT NULL,
    request_hash TEXT NOT NULL,
    http_status INTEGER,
    response TEXT,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (warehouse_id, principal, idempotency_key)
);
CREATE INDEX idempotency_created ON idempotency_record (created_at);
