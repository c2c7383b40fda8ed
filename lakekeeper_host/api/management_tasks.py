"""Management API: task queues and tasks (warehouse-scoped and project-scoped)."""

from __future__ import annotations

from typing import Any

from quart import Blueprint

from lakekeeper_host.api.common import empty, json_body, json_response, metadata, optional_json_body, query_int, state
from lakekeeper_host.serde import iso_timestamp
from lakekeeper_host.server.management import tasks
from lakekeeper_host.server.management.tasks import TaskLogRow, TaskRow

blueprint = Blueprint("management_tasks", __name__, url_prefix="/management/v1")

DEFAULT_ATTEMPTS = 5


def entity_json(row: TaskRow | TaskLogRow) -> dict[str, Any]:
    return tasks.entity_json(row.entity_type, row.entity_id, row.warehouse_id)


def _duration(ms: int | None) -> str | None:
    if ms is None:
        return None
    return f"PT{ms / 1000:.3f}S".replace(".000S", "S")


def task_json(row: TaskRow | TaskLogRow) -> dict[str, Any]:
    if isinstance(row, TaskRow):
        return {
            "task-id": row.id,
            "project-id": row.project_id,
            "warehouse-id": row.warehouse_id,
            "queue-name": row.queue_name,
            "entity": entity_json(row),
            "entity-name": row.entity_name or [],
            "status": tasks.API_STATUS[row.status],
            "scheduled-for": iso_timestamp(row.scheduled_for),
            "picked-up-at": iso_timestamp(row.picked_up_at),
            "attempt": row.attempt,
            "last-heartbeat-at": iso_timestamp(row.last_heartbeat_at),
            "progress": row.progress,
            "parent-task-id": None,
            "created-at": iso_timestamp(row.created_at),
            "updated-at": iso_timestamp(row.updated_at),
        }
    return {
        "task-id": row.task_id,
        "project-id": row.project_id,
        "warehouse-id": row.warehouse_id,
        "queue-name": row.queue_name,
        "entity": entity_json(row),
        "entity-name": row.entity_name or [],
        "status": tasks.API_STATUS[row.status],
        "scheduled-for": iso_timestamp(row.started_at or row.finished_at),
        "picked-up-at": iso_timestamp(row.started_at),
        "attempt": row.attempt,
        "last-heartbeat-at": None,
        "progress": row.progress,
        "parent-task-id": None,
        "created-at": iso_timestamp(row.created_at),
        "updated-at": iso_timestamp(row.finished_at),
    }


def attempt_json(row: TaskLogRow) -> dict[str, Any]:
    return {
        "attempt": row.attempt,
        "status": tasks.API_STATUS[row.status],
        "scheduled-for": iso_timestamp(row.started_at or row.finished_at),
        "started-at": iso_timestamp(row.started_at),
        "duration": _duration(row.finished_at - row.started_at) if row.started_at else None,
        "message": row.message,
        "created-at": iso_timestamp(row.finished_at),
        "progress": row.progress,
        "execution-details": row.execution_details,
    }


def _num_attempts() -> int:
    attempts = query_int("numAttempts")
    return DEFAULT_ATTEMPTS if attempts is None else attempts


def details_json(current: TaskRow | TaskLogRow, attempts: list[TaskLogRow]) -> dict[str, Any]:
    result = task_json(current)
    result["task-data"] = current.payload or {}
    result["execution-details"] = current.execution_details
    if isinstance(current, TaskLogRow):
        result["message"] = current.message
    result["attempts"] = [attempt_json(a) for a in attempts]
    return result


# ---------------------------------------------------------------- warehouse queues and tasks


@blueprint.get("/warehouse/<warehouse_id>/task-queue/<queue_name>/config")
async def get_queue_config(warehouse_id: str, queue_name: str):
    return json_response(await tasks.get_queue_config(state(), metadata(), warehouse_id, queue_name))


@blueprint.post("/warehouse/<warehouse_id>/task-queue/<queue_name>/config")
async def set_queue_config(warehouse_id: str, queue_name: str):
    await tasks.set_queue_config(state(), metadata(), warehouse_id, queue_name, await json_body())
    return empty(204)


@blueprint.post("/warehouse/<warehouse_id>/task-queue/<queue_name>/schedule")
async def schedule_task(warehouse_id: str, queue_name: str):
    task_id = await tasks.schedule_task(state(), metadata(), warehouse_id, queue_name, await json_body())
    return json_response({"task-id": task_id})


@blueprint.post("/warehouse/<warehouse_id>/task/list")
async def list_tasks(warehouse_id: str):
    rows, next_token = await tasks.list_tasks(state(), metadata(), warehouse_id, await optional_json_body())
    return json_response({"tasks": [task_json(r) for r in rows], "next-page-token": next_token})


@blueprint.get("/warehouse/<warehouse_id>/task/by-id/<task_id>")
async def get_task(warehouse_id: str, task_id: str):
    current, history = await tasks.get_task(state(), metadata(), warehouse_id, task_id, _num_attempts())
    return json_response(details_json(current, history))


@blueprint.post("/warehouse/<warehouse_id>/task/control")
async def control_tasks(warehouse_id: str):
    await tasks.control_tasks(state(), metadata(), warehouse_id, await json_body())
    return empty(204)


# ---------------------------------------------------------------- project queues and tasks (warehouse_id None)


@blueprint.get("/project/task-queue/<queue_name>/config")
async def get_project_queue_config(queue_name: str):
    return json_response(await tasks.get_queue_config(state(), metadata(), None, queue_name))


@blueprint.post("/project/task-queue/<queue_name>/config")
async def set_project_queue_config(queue_name: str):
    await tasks.set_queue_config(state(), metadata(), None, queue_name, await json_body())
    return empty(204)


@blueprint.post("/project/task/list")
async def list_project_tasks():
    rows, next_token = await tasks.list_tasks(state(), metadata(), None, await optional_json_body())
    return json_response({"tasks": [task_json(r) for r in rows], "next-page-token": next_token})


@blueprint.get("/project/task/by-id/<task_id>")
async def get_project_task(task_id: str):
    current, history = await tasks.get_task(state(), metadata(), None, task_id, _num_attempts())
    return json_response(details_json(current, history))


@blueprint.post("/project/task/control")
async def control_project_tasks():
    await tasks.control_tasks(state(), metadata(), None, await json_body())
    return empty(204)
