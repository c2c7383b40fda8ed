"""Table maintenance: per-table policy overrides, and what the queue's planner needs to know.

The warehouse policy itself is the ``table_maintenance`` row of ``task_queue_config``
(store/tasks.py); the tasks are ordinary ``task`` / ``task_log`` rows.
"""

from __future__ import annotations

from typing import Any

from attrs import frozen

from lakekeeper_host.store.db import Executor, dumps, loads, now_ms
from lakekeeper_host.store.tasks import TaskRow, task_from_row


@frozen
class PolicyOverride:
    table_id: str
    policy: dict[str, Any]
    updated_at: int


@frozen
class LiveTable:
    id: str
    namespace_id: str
    name: str


async def get_override(db: Executor, table_id: str) -> PolicyOverride | None:
    row = await db.fetch_one(
        "SELECT table_id, policy, updated_at FROM table_maintenance_policy WHERE table_id = :t", {"t": table_id}
    )
    return None if row is None else PolicyOverride(row["table_id"], loads(row["policy"]), row["updated_at"])


async def set_override(db: Executor, warehouse_id: str, table_id: str, policy: dict[str, Any]) -> PolicyOverride:
    updated_at = now_ms()
    await db.execute(
        "INSERT INTO table_maintenance_policy (table_id, warehouse_id, policy, updated_at) VALUES (:t, :w, :p, :u) "
        "ON CONFLICT (table_id) DO UPDATE SET policy = excluded.policy, updated_at = excluded.updated_at",
        {"t": table_id, "w": warehouse_id, "p": dumps(policy), "u": updated_at},
    )
    return PolicyOverride(table_id, policy, updated_at)


async def delete_override(db: Executor, table_id: str) -> bool:
    rows = await db.fetch_all(
        "DELETE FROM table_maintenance_policy WHERE table_id = :t RETURNING table_id", {"t": table_id}
    )
    return bool(rows)


async def list_overrides(db: Executor, warehouse_id: str) -> dict[str, dict[str, Any]]:
    rows = await db.fetch_all(
        "SELECT table_id, policy FROM table_maintenance_policy WHERE warehouse_id = :w", {"w": warehouse_id}
    )
    return {row["table_id"]: loads(row["policy"]) for row in rows}


async def list_live_tables(db: Executor, warehouse_id: str) -> list[LiveTable]:
    """Tables that exist (not dropped, not staged): the ones maintenance can run on."""
    rows = await db.fetch_all(
        "SELECT id, namespace_id, name FROM tabular WHERE warehouse_id = :w AND typ = 'table' "
        "AND deleted_at IS NULL AND NOT staged ORDER BY id",
        {"w": warehouse_id},
    )
    return [LiveTable(row["id"], row["namespace_id"], row["name"]) for row in rows]


async def active_table_tasks(db: Executor, warehouse_id: str, queue_name: str) -> dict[str, TaskRow]:
    """The active task of each table on the queue, by table id."""
    rows = await db.fetch_all(
        "SELECT * FROM task WHERE warehouse_id = :w AND queue_name = :q AND entity_type = 'table'",
        {"w": warehouse_id, "q": queue_name},
    )
    tasks = [task_from_row(row) for row in rows]
    return {task.entity_id: task for task in tasks if task is not None and task.entity_id}


async def last_finished(db: Executor, warehouse_id: str, queue_name: str) -> dict[str, int]:
    """When each entity's last attempt on the queue ended (epoch ms)."""
    rows = await db.fetch_all(
        "SELECT entity_id, MAX(finished_at) AS finished FROM task_log WHERE warehouse_id = :w AND queue_name = :q "
        "GROUP BY entity_id",
        {"w": warehouse_id, "q": queue_name},
    )
    return {row["entity_id"]: int(row["finished"]) for row in rows}


async def warehouses_to_plan(db: Executor, queue_name: str) -> list[tuple[str, str]]:
    """(project id, warehouse id) of every warehouse with a maintenance policy or a table override."""
    rows = await db.fetch_all(
        "SELECT project_id, warehouse_id FROM task_queue_config WHERE queue_name = :q AND warehouse_id <> '' "
        "UNION SELECT w.project_id, w.id FROM warehouse w WHERE EXISTS "
        "(SELECT 1 FROM table_maintenance_policy p WHERE p.warehouse_id = w.id)",
        {"q": queue_name},
    )
    return [(row["project_id"], row["warehouse_id"]) for row in rows]
