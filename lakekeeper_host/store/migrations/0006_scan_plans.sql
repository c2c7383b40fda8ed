-- Server-side scan planning: plans whose results are fetched later (asynchronous plans and
-- plans with more than one page of tasks). Rows are removed after LAKEKEEPER__SCAN_PLANNING__PLAN_TTL.

CREATE TABLE scan_plan (
    id TEXT PRIMARY KEY,
    warehouse_id TEXT NOT NULL,
    tabular_id TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('submitted', 'completed', 'failed', 'cancelled')),
    page_count INTEGER NOT NULL DEFAULT 0,
    error TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX scan_plan_status ON scan_plan (status, updated_at);

CREATE TABLE scan_plan_task (
    plan_id TEXT NOT NULL REFERENCES scan_plan(id) ON DELETE CASCADE,
    page INTEGER NOT NULL,
    content TEXT NOT NULL,
    PRIMARY KEY (plan_id, page)
);
