"""Endpoint call counts (hourly buckets) and hourly warehouse table/view counts."""

from __future__ import annotations

from typing import Any

from lakekeeper_host.store.db import Executor, Row, now_ms


def _in_list(prefix: str, values: list[Any]) -> tuple[str, dict[str, Any]]:
    params = {f"{prefix}{i}": v for i, v in enumerate(values)}
    return ", ".join(f":{k}" for k in params), params


async def add_endpoint_counts(db: Executor, rows: list[dict[str, Any]]) -> None:
    """Add counts; ``rows`` hold p, w ('' = no warehouse), path, method, status, bucket, count, first."""
    t = now_ms()
    for row in rows:
        await db.execute(
            "INSERT INTO endpoint_statistics (project_id, warehouse_id, matched_path, method, status_code, "
            "bucket_start, count, created_at, updated_at) VALUES (:p, :w, :path, :method, :status, :bucket, "
            ":count, :first, NULL) ON CONFLICT (project_id, warehouse_id, matched_path, method, status_code, "
            "bucket_start) DO UPDATE SET count = endpoint_statistics.count + excluded.count, updated_at = :t",
            {**row, "t": t},
        )


async def endpoint_counts(
    db: Executor,
    *,
    project_id: str,
    warehouse_id: str | None,
    status_codes: list[int] | None,
    start: int,
    end: int,
) -> list[Row]:
    """Buckets overlapping ``[start, end)``; ``warehouse_id`` None = all, '' = unmapped only."""
    where = ["project_id = :p", "bucket_start < :end", "bucket_start + 3600000 > :start"]
    values: dict[str, Any] = {"p": project_id, "start": start, "end": end}
    if warehouse_id is not None:
        where.append("warehouse_id = :w")
        values["w"] = warehouse_id
    if status_codes:
        placeholders, params = _in_list("s", status_codes)
        where.append(f"status_code IN ({placeholders})")
        values.update(params)
    return await db.fetch_all(
        f"SELECT * FROM endpoint_statistics WHERE {' AND '.join(where)} "
        "ORDER BY bucket_start, method, matched_path, status_code",
        values,
    )


async def warehouse_projects(db: Executor, warehouse_ids: list[str]) -> dict[str, str]:
    if not warehouse_ids:
        return {}
    placeholders, params = _in_list("w", warehouse_ids)
    rows = await db.fetch_all(f"SELECT id, project_id FROM warehouse WHERE id IN ({placeholders})", params)
    return {r["id"]: r["project_id"] for r in rows}


async def warehouse_names(db: Executor, warehouse_ids: list[str]) -> dict[str, str]:
    if not warehouse_ids:
        return {}
    placeholders, params = _in_list("w", warehouse_ids)
    rows = await db.fetch_all(f"SELECT id, name FROM warehouse WHERE id IN ({placeholders})", params)
    return {r["id"]: r["name"] for r in rows}


async def upsert_warehouse_stats(db: Executor, warehouse_id: str, bucket: int, tables: int, views: int) -> None:
    """Record one hour's counts; nothing for a warehouse deleted meanwhile."""
    await db.execute(
        "INSERT INTO warehouse_statistics (warehouse_id, bucket_start, number_of_tables, number_of_views, "
        "updated_at) SELECT :w, :b, :t, :v, :now WHERE EXISTS (SELECT 1 FROM warehouse WHERE id = :w) "
        "ON CONFLICT (warehouse_id, bucket_start) DO UPDATE SET "
        "number_of_tables = excluded.number_of_tables, number_of_views = excluded.number_of_views, "
        "updated_at = excluded.updated_at",
        {"w": warehouse_id, "b": bucket, "t": tables, "v": views, "now": now_ms()},
    )


async def warehouse_stats(db: Executor, warehouse_id: str, *, before: int | None, limit: int) -> list[Row]:
    """Newest first (keyset on ``bucket_start``)."""
    sql = "SELECT * FROM warehouse_statistics WHERE warehouse_id = :w"
    values: dict[str, Any] = {"w": warehouse_id, "limit": limit}
    if before is not None:
        sql += " AND bucket_start < :before"
        values["before"] = before
    return await db.fetch_all(sql + " ORDER BY bucket_start DESC LIMIT :limit", values)


async def delete_project_statistics(db: Executor, project_id: str) -> None:
    await db.execute("DELETE FROM endpoint_statistics WHERE project_id = :p", {"p": project_id})
