"""Task queues: the ``task`` table (active tasks) and ``task_log`` (one row per finished attempt).

Claiming is safe across server processes: PostgreSQL locks the candidate row with
``FOR UPDATE SKIP LOCKED``; SQLite has a single writer (``BEGIN IMMEDIATE``), so the select and
the update of one claim can never interleave with another claim.
"""

from __future__ import annotations

from typing import Any

from attrs import frozen

from lakekeeper_host.store.db import Executor, Row, dumps, loads, new_id, now_ms

ACTIVE_STATUSES = ("scheduled", "running", "should-stop")
FINAL_STATUSES = ("success", "failed", "cancelled")


@frozen
class TaskRow:
    id: str
    project_id: str
    warehouse_id: str | None
    queue_name: str
    entity_type: str | None
    entity_id: str | None
    entity_name: list[str] | None
    status: str
    attempt: int
    scheduled_for: int
    picked_up_at: int | None
    last_heartbeat_at: int | None
    worker_id: str | None
    payload: dict[str, Any]
    progress: float
    execution_details: dict[str, Any] | None
    created_at: int
    updated_at: int | None


@frozen
class TaskLogRow:
    task_id: str
    attempt: int
    project_id: str
    warehouse_id: str | None
    queue_name: str
    entity_type: str | None
    entity_id: str | None
    entity_name: list[str] | None
    status: str
    message: str | None
    payload: dict[str, Any] | None
    execution_details: dict[str, Any] | None
    progress: float
    started_at: int | None
    finished_at: int
    created_at: int


def _name(value: str | None) -> list[str] | None:
    return None if value is None else loads(value)


def task_from_row(row: Row | None) -> TaskRow | None:
    if row is None:
        return None
    return TaskRow(
        id=row["id"],
        project_id=row["project_id"],
        warehouse_id=row["warehouse_id"],
        queue_name=row["queue_name"],
        entity_type=row["entity_type"],
        entity_id=row["entity_id"],
        entity_name=_name(row["entity_name"]),
        status=row["status"],
        attempt=row["attempt"],
        scheduled_for=row["scheduled_for"],
        picked_up_at=row["picked_up_at"],
        last_heartbeat_at=row["last_heartbeat_at"],
        worker_id=row["worker_id"],
        payload=loads(row["payload"]) or {},
        progress=float(row["progress"] or 0),
        execution_details=loads(row["execution_details"]),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


def log_from_row(row: Row) -> TaskLogRow:
    return TaskLogRow(
        task_id=row["task_id"],
        attempt=row["attempt"],
        project_id=row["project_id"],
        warehouse_id=row["warehouse_id"],
        queue_name=row["queue_name"],
        entity_type=row["entity_type"],
        entity_id=row["entity_id"],
        entity_name=_name(row["entity_name"]),
        status=row["status"],
        message=row["message"],
        payload=loads(row["payload"]),
        execution_details=loads(row["execution_details"]),
        progress=float(row["progress"] or 0),
        started_at=row["started_at"],
        finished_at=row["finished_at"],
        created_at=row["created_at"],
    )


# ---------------------------------------------------------------- scheduling


TABULAR_PURGE_QUEUE = "tabular_purge"


async def schedule_purge(
    db: Executor, *, project_id: str, warehouse_id: str, typ: str, tabular_id: str, location: str,
    name: list[str] | None = None,
) -> str | None:
    """Schedule ``tabular_purge`` for a deleted table's or view's location (inside the caller's transaction)."""
    return await schedule_task(
        db,
        project_id=project_id,
        warehouse_id=warehouse_id,
        queue_name=TABULAR_PURGE_QUEUE,
        entity_type=typ,
        entity_id=tabular_id,
        entity_name=name,
        payload={"tabular-location": location, "typ": typ},
    )


async def schedule_task(
    db: Executor,
    *,
    project_id: str,
    warehouse_id: str | None,
    queue_name: str,
    entity_type: str | None,
    entity_id: str | None,
    entity_name: list[str] | None = None,
    payload: dict[str, Any] | None = None,
    scheduled_for: int | None = None,
    task_id: str | None = None,
) -> str | None:
    """Insert a scheduled task; ``None`` when the entity already has an active task in the queue."""
    t = now_ms()
    rows = await db.fetch_all(
        "INSERT INTO task (id, project_id, warehouse_id, queue_name, entity_type, entity_id, entity_name, "
        "status, attempt, scheduled_for, payload, progress, created_at) "
        "VALUES (:id, :p, :w, :q, :et, :eid, :en, 'scheduled', 0, :sf, :payload, 0, :t) "
        "ON CONFLICT (queue_name, entity_type, entity_id) DO NOTHING RETURNING id",
        {
            "id": task_id or new_id(),
            "p": project_id,
            "w": warehouse_id,
            "q": queue_name,
            "et": entity_type,
            "eid": entity_id,
            "en": dumps(entity_name) if entity_name is not None else None,
            "sf": t if scheduled_for is None else scheduled_for,
            "payload": dumps(payload or {}),
            "t": t,
        },
    )
    return rows[0]["id"] if rows else None


# ---------------------------------------------------------------- claiming and running


async def claim_task(
    db: Executor, queue_name: str, *, worker_id: str, default_heartbeat_timeout_s: int
) -> ClaimedTask | None:
    """Claim the next due task of a queue: scheduled ones, or running ones whose worker went silent.

    Must run inside a write transaction. A stale attempt is logged as ``failed`` ("Attempt timed
    out.") before the task is claimed again with ``attempt + 1``.
    """
    t = now_ms()
    lock = " FOR UPDATE OF t SKIP LOCKED" if db.is_postgres else ""
    row = await db.fetch_one(
        "SELECT t.*, COALESCE(c.max_seconds_since_last_heartbeat, :timeout) AS heartbeat_timeout "
        "FROM task t LEFT JOIN task_queue_config c "
        "ON c.project_id = t.project_id AND c.warehouse_id = COALESCE(t.warehouse_id, '') "
        "AND c.queue_name = t.queue_name "
        "WHERE t.queue_name = :q AND t.scheduled_for <= :now AND ("
        "t.status = 'scheduled' OR (t.status <> 'scheduled' AND t.last_heartbeat_at < "
        ":now - 1000 * COALESCE(c.max_seconds_since_last_heartbeat, :timeout))) "
        "ORDER BY t.scheduled_for, t.id LIMIT 1" + lock,
        {"q": queue_name, "now": t, "timeout": default_heartbeat_timeout_s},
    )
    task = task_from_row(row)
    if task is None:
        return None
    if task.status != "scheduled" and task.attempt > 0:
        await insert_log(db, task, "failed", "Attempt timed out.", finished_at=t)
    claimed = await db.fetch_one(
        "UPDATE task SET status = 'running', attempt = attempt + 1, picked_up_at = :now, "
        "last_heartbeat_at = :now, worker_id = :worker, progress = 0, updated_at = :now "
        "WHERE id = :id AND attempt = :attempt RETURNING *",
        {"now": t, "worker": worker_id, "id": task.id, "attempt": task.attempt},
    )
    claimed_task = task_from_row(claimed)
    if claimed_task is None:
        return None
    return ClaimedTask(claimed_task, int(row["heartbeat_timeout"]))


@frozen
class ClaimedTask:
    task: TaskRow
    heartbeat_timeout_s: int


async def heartbeat(
    db: Executor,
    task_id: str,
    attempt: int,
    *,
    progress: float | None = None,
    execution_details: dict[str, Any] | None = None,
) -> str | None:
    """Refresh the heartbeat of our attempt; returns the task status, or ``None`` if the attempt is no
    longer ours (cancelled, finished, or re-claimed after a timeout)."""
    values: dict[str, Any] = {"id": task_id, "attempt": attempt, "now": now_ms()}
    sets = "last_heartbeat_at = :now, updated_at = :now"
    if progress is not None:
        sets += ", progress = :progress"
        values["progress"] = float(progress)
    if execution_details is not None:
        sets += ", execution_details = :details"
        values["details"] = dumps(execution_details)
    row = await db.fetch_one(
        f"UPDATE task SET {sets} WHERE id = :id AND attempt = :attempt "
        "AND status IN ('running', 'should-stop') RETURNING status",
        values,
    )
    return None if row is None else row["status"]


async def insert_log(
    db: Executor,
    task: TaskRow,
    status: str,
    message: str | None,
    *,
    attempt: int | None = None,
    finished_at: int | None = None,
) -> None:
    t = finished_at or now_ms()
    await db.execute(
        "INSERT INTO task_log (task_id, attempt, project_id, warehouse_id, queue_name, entity_type, entity_id, "
        "entity_name, status, message, payload, execution_details, progress, started_at, finished_at, created_at) "
        "VALUES (:id, :attempt, :p, :w, :q, :et, :eid, :en, :status, :message, :payload, :details, :progress, "
        ":started, :finished, :created) ON CONFLICT (task_id, attempt) DO NOTHING",
        {
            "id": task.id,
            "attempt": task.attempt if attempt is None else attempt,
            "p": task.project_id,
            "w": task.warehouse_id,
            "q": task.queue_name,
            "et": task.entity_type,
            "eid": task.entity_id,
            "en": dumps(task.entity_name) if task.entity_name is not None else None,
            "status": status,
            "message": message,
            "payload": dumps(task.payload),
            "details": dumps(task.execution_details) if task.execution_details is not None else None,
            "progress": task.progress,
            "started": task.picked_up_at,
            "finished": t,
            "created": task.created_at,
        },
    )


async def finish_task(db: Executor, task: TaskRow, status: str, message: str | None) -> bool:
    """Move our attempt to ``task_log`` with a final status; False if the attempt was not ours anymore."""
    row = await db.fetch_one(
        "DELETE FROM task WHERE id = :id AND attempt = :attempt AND status IN ('running', 'should-stop') "
        "RETURNING *",
        {"id": task.id, "attempt": task.attempt},
    )
    if row is None:
        return False
    await insert_log(db, task_from_row(row), status, message)
    return True


async def fail_attempt(db: Executor, task: TaskRow, message: str, *, max_retries: int) -> str | None:
    """Record a failed attempt: retry (back to ``scheduled``) or give up after ``max_retries`` attempts.

    Returns ``"retry"``, ``"failed"``, or ``None`` when the attempt was not ours anymore.
    """
    current = task_from_row(
        await db.fetch_one(
            "SELECT * FROM task WHERE id = :id AND attempt = :attempt AND status IN ('running', 'should-stop')",
            {"id": task.id, "attempt": task.attempt},
        )
    )
    if current is None:
        return None
    if current.attempt >= max_retries:
        await db.execute("DELETE FROM task WHERE id = :id", {"id": task.id})
        await insert_log(db, current, "failed", message)
        return "failed"
    await insert_log(db, current, "failed", message)
    await db.execute(
        "UPDATE task SET status = 'scheduled', worker_id = NULL, picked_up_at = NULL, updated_at = :now "
        "WHERE id = :id",
        {"id": task.id, "now": now_ms()},
    )
    return "retry"


async def reschedule(
    db: Executor, task: TaskRow, scheduled_for: int, payload: dict[str, Any] | None = None, message: str | None = None
) -> bool:
    """A successful run of a periodic task: log success and schedule the next run (same task id)."""
    row = await db.fetch_one(
        "SELECT * FROM task WHERE id = :id AND attempt = :attempt AND status IN ('running', 'should-stop')",
        {"id": task.id, "attempt": task.attempt},
    )
    if row is None:
        return False
    await insert_log(db, task_from_row(row), "success", message)
    await db.execute(
        "UPDATE task SET status = 'scheduled', worker_id = NULL, picked_up_at = NULL, "
        "scheduled_for = :sf, payload = COALESCE(:payload, payload), progress = 0, updated_at = :now "
        "WHERE id = :id",
        {"id": task.id, "sf": scheduled_for, "now": now_ms(),
         "payload": dumps(payload) if payload is not None else None},
    )
    return True


# ---------------------------------------------------------------- control


async def get_task(db: Executor, task_id: str) -> TaskRow | None:
    return task_from_row(await db.fetch_one("SELECT * FROM task WHERE id = :id", {"id": task_id}))


async def get_active_entity_task(db: Executor, queue_name: str, entity_type: str, entity_id: str) -> TaskRow | None:
    """The entity's active task on a queue (there is at most one)."""
    return task_from_row(
        await db.fetch_one(
            "SELECT * FROM task WHERE queue_name = :q AND entity_type = :et AND entity_id = :eid",
            {"q": queue_name, "et": entity_type, "eid": entity_id},
        )
    )


async def get_task_logs(db: Executor, task_id: str, limit: int | None = None) -> list[TaskLogRow]:
    sql = "SELECT * FROM task_log WHERE task_id = :id ORDER BY attempt DESC"
    values: dict[str, Any] = {"id": task_id}
    if limit is not None:
        sql += " LIMIT :limit"
        values["limit"] = limit
    return [log_from_row(r) for r in await db.fetch_all(sql, values)]


async def cancel_task(db: Executor, task_id: str, message: str = "Cancelled") -> bool:
    """Terminal ``cancelled``; a running attempt's worker notices on its next heartbeat."""
    row = await db.fetch_one("DELETE FROM task WHERE id = :id RETURNING *", {"id": task_id})
    if row is None:
        return False
    task = task_from_row(row)
    # a scheduled task's attempt number is the last finished one; the cancelled one is the next
    attempt = task.attempt if task.status != "scheduled" else task.attempt + 1
    await insert_log(db, task, "cancelled", message, attempt=attempt)
    return True


async def cancel_entity_tasks(
    db: Executor, entity_ids: list[str], *, queue_names: tuple[str, ...] | None = None, message: str = "Cancelled"
) -> int:
    """Cancel the active tasks of entities (undrop cancels the expiration, a namespace drop its children's)."""
    if not entity_ids:
        return 0
    cancelled = 0
    for entity_id in entity_ids:
        rows = await db.fetch_all("SELECT id, queue_name FROM task WHERE entity_id = :e", {"e": entity_id})
        for row in rows:
            if queue_names is None or row["queue_name"] in queue_names:
                cancelled += await cancel_task(db, row["id"], message)
    return cancelled


async def request_stop(db: Executor, task_id: str) -> bool:
    rows = await db.fetch_all(
        "UPDATE task SET status = 'should-stop', updated_at = :now WHERE id = :id AND status = 'running' "
        "RETURNING id",
        {"id": task_id, "now": now_ms()},
    )
    return bool(rows)


async def set_scheduled_for(
    db: Executor, task_id: str, scheduled_for: int, payload: dict[str, Any] | None = None
) -> bool:
    rows = await db.fetch_all(
        "UPDATE task SET scheduled_for = :sf, status = 'scheduled', payload = COALESCE(:payload, payload), "
        "updated_at = :now WHERE id = :id AND status IN ('scheduled', 'should-stop') RETURNING id",
        {
            "id": task_id,
            "sf": scheduled_for,
            "now": now_ms(),
            "payload": dumps(payload) if payload is not None else None,
        },
    )
    return bool(rows)


async def count_active_tasks(db: Executor, warehouse_id: str) -> int:
    return int(
        await db.fetch_val("SELECT COUNT(*) FROM task WHERE warehouse_id = :w", {"w": warehouse_id}) or 0
    )


async def count_active_project_tasks(db: Executor, project_id: str, queue_names: tuple[str, ...]) -> int:
    rows = await db.fetch_all(
        "SELECT queue_name, COUNT(*) AS n FROM task WHERE project_id = :p GROUP BY queue_name", {"p": project_id}
    )
    return sum(int(r["n"]) for r in rows if r["queue_name"] in queue_names)


async def delete_logs_before(db: Executor, project_id: str, cutoff: int) -> int:
    rows = await db.fetch_all(
        "DELETE FROM task_log WHERE project_id = :p AND finished_at < :cutoff RETURNING task_id",
        {"p": project_id, "cutoff": cutoff},
    )
    return len(rows)


async def delete_project_tasks(db: Executor, project_id: str) -> None:
    await db.execute("DELETE FROM task WHERE project_id = :p", {"p": project_id})
    await db.execute("DELETE FROM task_log WHERE project_id = :p", {"p": project_id})
    await db.execute("DELETE FROM task_queue_config WHERE project_id = :p", {"p": project_id})


async def delete_warehouse_task_history(db: Executor, warehouse_id: str) -> None:
    await db.execute("DELETE FROM task_log WHERE warehouse_id = :w", {"w": warehouse_id})
    await db.execute("DELETE FROM task_queue_config WHERE warehouse_id = :w", {"w": warehouse_id})


# ---------------------------------------------------------------- listing


async def list_tasks(
    db: Executor,
    *,
    project_id: str,
    warehouse_id: str | None,
    queue_names: list[str] | None,
    statuses: list[str] | None,
    entity_ids: list[str] | None,
    created_after: int | None,
    created_before: int | None,
    after: tuple[int, str] | None,
    limit: int,
) -> list[TaskRow | TaskLogRow]:
    """Active tasks and the latest attempt of finished ones, newest first (keyset on created_at, id).

    ``statuses`` use the storage names (scheduled, running, should-stop, success, failed, cancelled).
    """
    active_status = [s for s in (statuses or ACTIVE_STATUSES) if s in ACTIVE_STATUSES]
    final_status = [s for s in (statuses or FINAL_STATUSES) if s in FINAL_STATUSES]
    values: dict[str, Any] = {"p": project_id, "limit": limit}
    common = ["project_id = :p"]
    if warehouse_id is not None:
        common.append("warehouse_id = :w")
        values["w"] = warehouse_id
    else:
        common.append("warehouse_id IS NULL")
    for prefix, items in (("q", queue_names), ("e", entity_ids)):
        if items:
            names = [f":{prefix}{i}" for i in range(len(items))]
            column = "queue_name" if prefix == "q" else "entity_id"
            common.append(f"{column} IN ({', '.join(names)})")
            values.update({f"{prefix}{i}": v for i, v in enumerate(items)})
    if created_after is not None:
        common.append("created_at >= :ca")
        values["ca"] = created_after
    if created_before is not None:
        common.append("created_at < :cb")
        values["cb"] = created_before
    if after is not None:
        common.append("(created_at < :kc OR (created_at = :kc AND id < :kid))")
        values["kc"], values["kid"] = after

    results: list[Any] = []
    if active_status:
        where = common + [f"status IN ({', '.join(f':as{i}' for i in range(len(active_status)))})"]
        active_values = {**values, **{f"as{i}": s for i, s in enumerate(active_status)}}
        rows = await db.fetch_all(
            f"SELECT * FROM task WHERE {' AND '.join(where)} ORDER BY created_at DESC, id DESC LIMIT :limit",
            active_values,
        )
        results.extend(task_from_row(r) for r in rows)
    if final_status:
        log_where = [c.replace("id < :kid", "task_id < :kid") for c in common]
        log_where.append(f"status IN ({', '.join(f':fs{i}' for i in range(len(final_status)))})")
        final_values = {**values, **{f"fs{i}": s for i, s in enumerate(final_status)}}
        # the newest attempt of each finished task that is not active anymore
        rows = await db.fetch_all(
            f"SELECT * FROM task_log l WHERE {' AND '.join(log_where)} "
            "AND NOT EXISTS (SELECT 1 FROM task a WHERE a.id = l.task_id) "
            "AND attempt = (SELECT MAX(attempt) FROM task_log m WHERE m.task_id = l.task_id) "
            "ORDER BY created_at DESC, task_id DESC LIMIT :limit",
            final_values,
        )
        results.extend(log_from_row(r) for r in rows)
    results.sort(key=lambda r: (r.created_at, getattr(r, "id", None) or r.task_id), reverse=True)
    return results[:limit]


# ---------------------------------------------------------------- queue configuration


async def get_queue_config(
    db: Executor, project_id: str, warehouse_id: str | None, queue_name: str
) -> tuple[dict[str, Any], int | None] | None:
    row = await db.fetch_one(
        "SELECT config, max_seconds_since_last_heartbeat FROM task_queue_config "
        "WHERE project_id = :p AND warehouse_id = :w AND queue_name = :q",
        {"p": project_id, "w": warehouse_id or "", "q": queue_name},
    )
    if row is None:
        return None
    return loads(row["config"]) or {}, row["max_seconds_since_last_heartbeat"]


async def set_queue_config(
    db: Executor,
    project_id: str,
    warehouse_id: str | None,
    queue_name: str,
    config: dict[str, Any],
    max_seconds_since_last_heartbeat: int | None,
) -> None:
    await db.execute(
        "INSERT INTO task_queue_config (project_id, warehouse_id, queue_name, config, "
        "max_seconds_since_last_heartbeat, updated_at) VALUES (:p, :w, :q, :c, :m, :t) "
        "ON CONFLICT (project_id, warehouse_id, queue_name) DO UPDATE SET config = excluded.config, "
        "max_seconds_since_last_heartbeat = excluded.max_seconds_since_last_heartbeat, "
        "updated_at = excluded.updated_at",
        {
            "p": project_id,
            "w": warehouse_id or "",
            "q": queue_name,
            "c": dumps(config),
            "m": max_seconds_since_last_heartbeat,
            "t": now_ms(),
        },
    )


async def entity_tasks(db: Executor, entity_id: str, queue_name: str) -> list[TaskRow]:
    """Every task of one queue about one entity (a table or view), in any state."""
    rows = await db.fetch_all(
        "SELECT * FROM task WHERE entity_id = :e AND queue_name = :q", {"e": entity_id, "q": queue_name}
    )
    return [task_from_row(r) for r in rows]
