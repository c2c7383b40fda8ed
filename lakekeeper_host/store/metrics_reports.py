"""Stored ScanReport/CommitReport payloads (``metrics_report``), newest first."""

from __future__ import annotations

from typing import Any

from attrs import frozen

from lakekeeper_host.store.db import Executor, dumps, loads, new_id, now_ms


@frozen
class MetricsReportRow:
    id: str
    warehouse_id: str
    tabular_id: str
    report_type: str
    snapshot_id: int | None
    report: dict[str, Any]
    created_at: int


def _row(row) -> MetricsReportRow:
    return MetricsReportRow(
        id=row["id"],
        warehouse_id=row["warehouse_id"],
        tabular_id=row["tabular_id"],
        report_type=row["report_type"],
        snapshot_id=row["snapshot_id"],
        report=loads(row["report"]),
        created_at=row["created_at"],
    )


async def insert_report(
    db: Executor, *, warehouse_id: str, tabular_id: str, report_type: str, snapshot_id: int | None,
    report: dict[str, Any], keep_per_table: int,
) -> str:
    """Store one report and trim the table's reports to the newest ``keep_per_table``."""
    report_id = new_id()
    await db.execute(
        "INSERT INTO metrics_report (id, warehouse_id, tabular_id, report_type, snapshot_id, report, created_at)"
        " VALUES (:id, :w, :t, :type, :snap, :report, :now)",
        {"id": report_id, "w": warehouse_id, "t": tabular_id, "type": report_type, "snap": snapshot_id,
         "report": dumps(report), "now": now_ms()},
    )
    await db.execute(
        "DELETE FROM metrics_report WHERE tabular_id = :t AND id NOT IN"
        " (SELECT id FROM metrics_report WHERE tabular_id = :t ORDER BY id DESC LIMIT :keep)",
        {"t": tabular_id, "keep": keep_per_table},
    )
    return report_id


async def list_reports(
    db: Executor,
    *,
    warehouse_id: str,
    tabular_id: str,
    report_type: str | None = None,
    snapshot_id: int | None = None,
    created_after: int | None = None,
    created_before: int | None = None,
    before_id: str | None = None,
    limit: int,
) -> list[MetricsReportRow]:
    """Reports of one table, newest first; ``before_id`` continues after a page (keyset)."""
    clauses = ["warehouse_id = :w", "tabular_id = :t"]
    values: dict[str, Any] = {"w": warehouse_id, "t": tabular_id, "limit": limit}
    for column, key, op, value in (
        ("report_type", "type", "=", report_type),
        ("snapshot_id", "snap", "=", snapshot_id),
        ("created_at", "after", ">=", created_after),
        ("created_at", "before", "<", created_before),
        ("id", "cursor", "<", before_id),
    ):
        if value is not None:
            clauses.append(f"{column} {op} :{key}")
            values[key] = value
    rows = await db.fetch_all(
        f"SELECT * FROM metrics_report WHERE {' AND '.join(clauses)} ORDER BY id DESC LIMIT :limit", values
    )
    return [_row(r) for r in rows]


async def delete_older_than(db: Executor, cutoff_ms: int) -> int:
    rows = await db.fetch_all(
        "DELETE FROM metrics_report WHERE created_at < :cutoff RETURNING id", {"cutoff": cutoff_ms}
    )
    return len(rows)


async def delete_for_tabulars(db: Executor, tabular_ids: list[str]) -> None:
    """Forget the reports of deleted tables (callers chunk long lists)."""
    if tabular_ids:
        params = {f"t{i}": v for i, v in enumerate(tabular_ids)}
        placeholders = ", ".join(":" + k for k in params)
        await db.execute(f"DELETE FROM metrics_report WHERE tabular_id IN ({placeholders})", params)
