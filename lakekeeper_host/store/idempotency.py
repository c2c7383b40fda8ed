"""Idempotency records: one row per (warehouse, Idempotency-Key).

A row is *in flight* while ``http_status`` is NULL and *finalized* once the outcome is stored.
``created_at`` is the claim time while in flight and the finalization time afterwards, so the
advertised lifetime counts from the moment the client could have seen the response.
"""

from __future__ import annotations

from attrs import frozen

from lakekeeper_host.store.db import Executor, dumps, loads, now_ms


@frozen
class IdempotencyRecord:
    warehouse_id: str
    idempotency_key: str
    operation: str
    http_status: int | None
    response: dict | None
    created_at: int

    @property
    def in_flight(self) -> bool:
        return self.http_status is None


def _record(row) -> IdempotencyRecord | None:
    if row is None:
        return None
    return IdempotencyRecord(
        warehouse_id=row["warehouse_id"],
        idempotency_key=row["idempotency_key"],
        operation=row["operation"],
        http_status=row["http_status"],
        response=loads(row["response"]),
        created_at=row["created_at"],
    )


async def try_insert(db: Executor, warehouse_id: str, key: str, operation: str) -> bool:
    """Claim ``key`` as in flight; False when a record exists already."""
    row = await db.fetch_one(
        "INSERT INTO idempotency_record (warehouse_id, idempotency_key, operation, http_status, response, created_at)"
        " VALUES (:w, :k, :op, NULL, NULL, :now)"
        " ON CONFLICT (warehouse_id, idempotency_key) DO NOTHING RETURNING idempotency_key",
        {"w": warehouse_id, "k": key, "op": operation, "now": now_ms()},
    )
    return row is not None


async def get(db: Executor, warehouse_id: str, key: str) -> IdempotencyRecord | None:
    row = await db.fetch_one(
        "SELECT * FROM idempotency_record WHERE warehouse_id = :w AND idempotency_key = :k",
        {"w": warehouse_id, "k": key},
    )
    return _record(row)


async def take_over(db: Executor, record: IdempotencyRecord, operation: str) -> bool:
    """Re-claim an expired or abandoned record; False when another request changed it first."""
    row = await db.fetch_one(
        "UPDATE idempotency_record SET operation = :op, http_status = NULL, response = NULL, created_at = :now"
        " WHERE warehouse_id = :w AND idempotency_key = :k AND created_at = :seen"
        " AND COALESCE(http_status, -1) = :status RETURNING idempotency_key",
        {
            "w": record.warehouse_id,
            "k": record.idempotency_key,
            "op": operation,
            "now": now_ms(),
            "seen": record.created_at,
            "status": -1 if record.http_status is None else record.http_status,
        },
    )
    return row is not None


async def finalize(db: Executor, warehouse_id: str, key: str, http_status: int, response: dict) -> None:
    await db.execute(
        "UPDATE idempotency_record SET http_status = :status, response = :response, created_at = :now"
        " WHERE warehouse_id = :w AND idempotency_key = :k AND http_status IS NULL",
        {"w": warehouse_id, "k": key, "status": http_status, "response": dumps(response), "now": now_ms()},
    )


async def release(db: Executor, warehouse_id: str, key: str) -> None:
    """Forget an in-flight claim whose outcome must not be replayed (5xx, crash)."""
    await db.execute(
        "DELETE FROM idempotency_record WHERE warehouse_id = :w AND idempotency_key = :k AND http_status IS NULL",
        {"w": warehouse_id, "k": key},
    )


async def delete_older_than(db: Executor, cutoff_ms: int) -> int:
    rows = await db.fetch_all(
        "DELETE FROM idempotency_record WHERE created_at < :cutoff RETURNING idempotency_key",
        {"cutoff": cutoff_ms},
    )
    return len(rows)
