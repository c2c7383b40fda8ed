"""Stored scan plans (``scan_plan``) and their pages of file scan tasks (``scan_plan_task``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from attrs import frozen

from lakekeeper_host.store.db import Executor, dumps, loads, now_ms


@frozen
class ScanPlanRow:
    id: str
    warehouse_id: str
    tabular_id: str
    status: str
    page_count: int
    error: dict[str, Any] | None
    created_at: int
    updated_at: int


def _plan(row) -> ScanPlanRow | None:
    if row is None:
        return None
    return ScanPlanRow(
        id=row["id"],
        warehouse_id=row["warehouse_id"],
        tabular_id=row["tabular_id"],
        status=row["status"],
        page_count=row["page_count"],
        error=loads(row["error"]),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


async def insert_plan(
    db: Executor, plan_id: str, warehouse_id: str, tabular_id: str, *, status: str, page_count: int = 0
) -> None:
    now = now_ms()
    await db.execute(
        "INSERT INTO scan_plan (id, warehouse_id, tabular_id, status, page_count, error, created_at, updated_at)"
        " VALUES (:id, :w, :t, :status, :pages, NULL, :now, :now)",
        {"id": plan_id, "w": warehouse_id, "t": tabular_id, "status": status, "pages": page_count, "now": now},
    )


async def insert_pages(db: Executor, plan_id: str, pages: Iterable[dict[str, Any]]) -> None:
    for page, content in enumerate(pages):
        await db.execute(
            "INSERT INTO scan_plan_task (plan_id, page, content) VALUES (:p, :n, :c)",
            {"p": plan_id, "n": page, "c": dumps(content)},
        )


async def get_plan(db: Executor, plan_id: str) -> ScanPlanRow | None:
    return _plan(await db.fetch_one("SELECT * FROM scan_plan WHERE id = :id", {"id": plan_id}))


async def get_page(db: Executor, plan_id: str, page: int) -> dict[str, Any] | None:
    content = await db.fetch_val(
        "SELECT content FROM scan_plan_task WHERE plan_id = :p AND page = :n", {"p": plan_id, "n": page}
    )
    return loads(content)


async def finish_plan(
    db: Executor, plan_id: str, *, status: str, page_count: int = 0, error: dict[str, Any] | None = None
) -> None:
    await db.execute(
        "UPDATE scan_plan SET status = :status, page_count = :pages, error = :error, updated_at = :now"
        " WHERE id = :id AND status = 'submitted'",
        {
            "id": plan_id,
            "status": status,
            "pages": page_count,
            "error": dumps(error) if error else None,
            "now": now_ms(),
        },
    )


async def cancel_plan(db: Executor, plan_id: str) -> None:
    await db.execute("DELETE FROM scan_plan_task WHERE plan_id = :id", {"id": plan_id})
    await db.execute(
        "UPDATE scan_plan SET status = 'cancelled', page_count = 0, updated_at = :now WHERE id = :id",
        {"id": plan_id, "now": now_ms()},
    )


async def fail_stale_submitted(db: Executor, before_ms: int, *, running: set[str], error: dict[str, Any]) -> int:
    """Mark submitted plans not updated since ``before_ms`` (and not running here) as failed."""
    rows = await db.fetch_all(
        "SELECT id FROM scan_plan WHERE status = 'submitted' AND updated_at < :before", {"before": before_ms}
    )
    stale = [r["id"] for r in rows if r["id"] not in running]
    for plan_id in stale:
        await finish_plan(db, plan_id, status="failed", error=error)
    return len(stale)


async def delete_finished_before(db: Executor, before_ms: int) -> int:
    rows = await db.fetch_all(
        "SELECT id FROM scan_plan WHERE status <> 'submitted' AND updated_at < :before", {"before": before_ms}
    )
    for row in rows:
        await db.execute("DELETE FROM scan_plan_task WHERE plan_id = :id", {"id": row["id"]})
        await db.execute("DELETE FROM scan_plan WHERE id = :id", {"id": row["id"]})
    return len(rows)
