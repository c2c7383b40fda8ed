"""Idempotency records: one row per (warehouse, principal, Idempotency-Key).

A row is *in flight* while ``http_status`` is NULL and *finalized* once the outcome is stored.
``created_at`` is the claim time while in flight and the finalization time afterwards, so the
advertised lifetime counts from the moment the client could have seen the response. ``route`` and
``request_hash`` identify the request that claimed the key (``server/idempotency.py``).
"""

from __future__ import annotations

from attrs import frozen

from lakekeeper_host.store.db import Executor, dumps, loads, now_ms


@frozen
class IdempotencyClaim:
    """Who claims which key for what: the request a record is bound to."""

    warehouse_id: str
    principal: str
    key: str
    operation: str
    route: str
    request_hash: str


@frozen
class IdempotencyRecord:
    warehouse_id: str
    principal: str
    idempotency_key: str
    operation: str
    route: str
    request_hash: str
    http_status: int | None
    response: dict | None
    created_at: int

    @property
    def in_flight(self) -> bool:
        return self.http_status is None


_KEY = "warehouse_id = :w AND principal = :p AND idempotency_key = :k"


def _ids(warehouse_id: str, principal: str, key: str) -> dict[str, str]:
    return {"w": warehouse_id, "p": principal, "k": key}


def _record(row) -> IdempotencyRecord | None:
    if row is None:
        return None
    return IdempotencyRecord(
        warehouse_id=row["warehouse_id"],
        principal=row["principal"],
        idempotency_key=row["idempotency_key"],
        operation=row["operation"],
        route=row["route"],
        request_hash=row["request_hash"],
        http_status=row["http_status"],
        response=loads(row["response"]),
        created_at=row["created_at"],
    )


async def try_insert(db: Executor, claim: IdempotencyClaim) -> bool:
    """Claim the key as in flight; False when a record exists already."""
    row = await db.fetch_one(
        "INSERT INTO idempotency_record (warehouse_id, principal, idempotency_key, operation, route, request_hash,"
        " http_status, response, created_at) VALUES (:w, :p, :k, :op, :route, :hash, NULL, NULL, :now)"
        " ON CONFLICT (warehouse_id, principal, idempotency_key) DO NOTHING RETURNING idempotency_key",
        {**_ids(claim.warehouse_id, claim.principal, claim.key), "op": claim.operation, "route": claim.route,
         "hash": claim.request_hash, "now": now_ms()},
    )
    return row is not None


async def get(db: Executor, warehouse_id: str, principal: str, key: str) -> IdempotencyRecord | None:
    row = await db.fetch_one(f"SELECT * FROM idempotency_record WHERE {_KEY}", _ids(warehouse_id, principal, key))
    return _record(row)


async def take_over(db: Executor, record: IdempotencyRecord, claim: IdempotencyClaim) -> bool:
    """Re-claim an expired or abandoned record for ``claim``; False when another request changed it first."""
    row = await db.fetch_one(
        "UPDATE idempotency_record SET operation = :op, route = :route, request_hash = :hash, http_status = NULL,"
        f" response = NULL, created_at = :now WHERE {_KEY} AND created_at = :seen"
        " AND COALESCE(http_status, -1) = :status RETURNING idempotency_key",
        {
            **_ids(record.warehouse_id, record.principal, record.idempotency_key),
            "op": claim.operation,
            "route": claim.route,
            "hash": claim.request_hash,
            "now": now_ms(),
            "seen": record.created_at,
            "status": -1 if record.http_status is None else record.http_status,
        },
    )
    return row is not None


async def finalize(db: Executor, claim: IdempotencyClaim, http_status: int, response: dict) -> None:
    await db.execute(
        "UPDATE idempotency_record SET http_status = :status, response = :response, created_at = :now"
        f" WHERE {_KEY} AND http_status IS NULL",
        {**_ids(claim.warehouse_id, claim.principal, claim.key), "status": http_status, "response": dumps(response),
         "now": now_ms()},
    )


async def release(db: Executor, claim: IdempotencyClaim) -> None:
    """Forget an in-flight claim whose outcome must not be replayed (5xx, crash)."""
    await db.execute(
        f"DELETE FROM idempotency_record WHERE {_KEY} AND http_status IS NULL",
        _ids(claim.warehouse_id, claim.principal, claim.key),
    )


async def delete_older_than(db: Executor, cutoff_ms: int) -> int:
    rows = await db.fetch_all(
        "DELETE FROM idempotency_record WHERE created_at < :cutoff RETURNING idempotency_key",
        {"cutoff": cutoff_ms},
    )
    return len(rows)
