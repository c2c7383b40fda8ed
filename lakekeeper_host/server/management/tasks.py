"""Task queues: the built-in queues, running one claimed task, and the management operations.

A queue is a ``TaskQueueSpec`` (registry.py) contributed through ``lakekeeper_task_queues``; its
``handler(task, ctx)`` runs one attempt (``service/tasks.py``: what it gets and returns). A failed
attempt is retried up to ``LAKEKEEPER__TASK_MAX_RETRIES`` attempts. The worker heartbeats while the handler runs; a task
whose worker dies is picked up again once its heartbeat is older than the queue's
``max-seconds-since-last-heartbeat``.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from attrs import frozen

from lakekeeper_host.config.types import parse_duration
from lakekeeper_host.errors import CatalogError, bad_request, not_found
from lakekeeper_host.ids import now_ms
from lakekeeper_host.registry import TaskQueueSpec, normalize_name
from lakekeeper_host.serde import structure_body
from lakekeeper_host.server import kinds, pagination
from lakekeeper_host.server.authorize import authorize_project, authorize_warehouse
from lakekeeper_host.server.pagination import decode_page_token, encode_page_token
from lakekeeper_host.server.resolve import require_warehouse, resolve_project_id
from lakekeeper_host.server.tabulars.deletion import entity_name, expire_tabular, purge_tabular
from lakekeeper_host.service.request import RequestMetadata
from lakekeeper_host.service.state import AppState
from lakekeeper_host.service.tasks import Reschedule, TaskContext, TaskLost, TaskOutcome
from lakekeeper_host.store import tabular_admin
from lakekeeper_host.store import tasks as task_store
from lakekeeper_host.store import warehouses as warehouse_store
from lakekeeper_host.store.tasks import TaskLogRow, TaskRow  # the records list_tasks and get_task return

log = logging.getLogger(__name__)

SOFT_DELETION = "soft_deletion"
TABULAR_PURGE = "tabular_purge"
TASK_LOG_CLEANUP = "task_log_cleanup"
# Lakekeeper's heartbeat timeouts per built-in queue (seconds)
DEFAULT_HEARTBEAT_TIMEOUTS = {SOFT_DELETION: 120, TABULAR_PURGE: 3600, TASK_LOG_CLEANUP: 3600}
# project-scoped queues (their tasks have no warehouse)
PROJECT_QUEUES = frozenset({TASK_LOG_CLEANUP})


@frozen
class TaskRuntimeConfig:
    """``LAKEKEEPER__TASK_MAX_RETRIES`` and the endpoint-statistics flush interval."""

    # attempts of a task before it is given up (the last error stays in its log)
    # example: 3
    task_max_retries: int = 5
    # how often the per-endpoint call counts (management statistics) are written to the database
    # example: PT1M
    endpoint_stat_flush_interval: timedelta = timedelta(seconds=30)


# ---------------------------------------------------------------- built-in queues


@frozen
class EmptyQueueConfig:
    """``soft_deletion`` and ``tabular_purge`` have no queue-specific settings."""


@frozen
class TaskLogCleanupConfig:
    """``{"cleanup-period": "P1D", "retention-period": "P90D"}`` (ISO-8601 durations, at least one day)."""

    cleanup_period: str = "P1D"
    retention_period: str = "P90D"

    def check(self) -> None:
        for name in ("cleanup_period", "retention_period"):
            key = name.replace("_", "-")
            try:
                duration = parse_duration(getattr(self, name))
            except ValueError as exc:
                raise ValueError(f"{exc} @ body.{key}") from None
            if duration < timedelta(days=1):
                raise ValueError(f"{key} must be at least one day (P1D) @ body.{key}")


async def _soft_deletion(task: TaskRow, ctx: TaskContext) -> str:

    return await expire_tabular(ctx.state, task)


async def _tabular_purge(task: TaskRow, ctx: TaskContext) -> str:

    return await purge_tabular(ctx.state, task)


async def _task_log_cleanup(task: TaskRow, ctx: TaskContext) -> Reschedule:
    config = await effective_queue_config(ctx.state, task.project_id, None, TASK_LOG_CLEANUP)
    retention = parse_duration(config.retention_period)
    period = parse_duration(config.cleanup_period)
    cutoff = now_ms() - int(retention.total_seconds() * 1000)
    async with ctx.state.store.transaction() as tx:
        removed = await task_store.delete_logs_before(tx, task.project_id, cutoff)
    return Reschedule(now_ms() + int(period.total_seconds() * 1000), f"Removed {removed} task log entries")


def builtin_task_queues() -> list[TaskQueueSpec[Any]]:
    """The OSS queues: soft_deletion, tabular_purge, task_log_cleanup (table_maintenance on Spark is
    registered beside them by ``server.builtin_queues``: its handler builds on this module)."""
    return [
        TaskQueueSpec(name=SOFT_DELETION, handler=_soft_deletion, config_cls=EmptyQueueConfig),
        TaskQueueSpec(name=TABULAR_PURGE, handler=_tabular_purge, config_cls=EmptyQueueConfig),
        TaskQueueSpec(name=TASK_LOG_CLEANUP, handler=_task_log_cleanup, config_cls=TaskLogCleanupConfig),
    ]


async def ensure_task_log_cleanup(state: AppState, project_id: str) -> None:
    """Schedule the project's periodic task-log cleanup (once; a no-op when it exists)."""
    if TASK_LOG_CLEANUP not in state.registry.task_queues:
        return
    async with state.store.transaction() as tx:
        await task_store.schedule_task(
            tx,
            project_id=project_id,
            warehouse_id=None,
            queue_name=TASK_LOG_CLEANUP,
            entity_type="project",
            entity_id=project_id,
            entity_name=[],
        )


# ---------------------------------------------------------------- running one attempt


def runtime_config(state: AppState) -> TaskRuntimeConfig:
    return state.settings.section(TaskRuntimeConfig)


def default_heartbeat_timeout(state: AppState, queue_name: str) -> int:
    return DEFAULT_HEARTBEAT_TIMEOUTS.get(queue_name, state.settings.host.task_max_seconds_since_last_heartbeat)


async def claim_next(state: AppState, queue_name: str, worker_id: str) -> task_store.ClaimedTask | None:
    async with state.store.transaction() as tx:
        return await task_store.claim_task(
            tx,
            queue_name,
            worker_id=worker_id,
            default_heartbeat_timeout_s=default_heartbeat_timeout(state, queue_name),
        )


async def run_claimed(state: AppState, spec: TaskQueueSpec[Any], claimed: task_store.ClaimedTask) -> str:
    """Run one attempt with a heartbeat alongside; record the outcome. Returns the outcome name."""
    task = claimed.task
    ctx = TaskContext(state=state, task=task)
    interval = max(0.1, min(10.0, claimed.heartbeat_timeout_s / 4))
    handler = asyncio.create_task(spec.handler(task, ctx), name=f"task-{spec.name}-{task.id}")
    beat = asyncio.create_task(_heartbeat_loop(ctx, handler, interval))
    outcome: TaskOutcome = None
    error: BaseException | None = None
    try:
        outcome = await handler
    except asyncio.CancelledError:
        if ctx.abort_reason is None:  # this worker is shutting down: the task times out elsewhere
            beat.cancel()
            raise
        error = ctx.abort_reason
    except Exception as exc:  # any handler failure is a failed attempt
        error = exc
    finally:
        beat.cancel()
        await asyncio.gather(beat, return_exceptions=True)

    async with state.store.transaction() as tx:
        if isinstance(error, TaskLost):
            log.info("task %s (%s) attempt %d was cancelled or taken over", task.id, spec.name, task.attempt)
            return "lost"
        if isinstance(error, _Stopped):
            result = await task_store.fail_attempt(
                tx, task, "Stopped on request", max_retries=runtime_config(state).task_max_retries
            )
            return "stopped" if result else "lost"
        if error is not None:
            message = f"{type(error).__name__}: {error}"
            log.warning("task %s (%s) attempt %d failed: %s", task.id, spec.name, task.attempt, message)
            result = await task_store.fail_attempt(
                tx, task, message, max_retries=runtime_config(state).task_max_retries
            )
            return result or "lost"
        if isinstance(outcome, Reschedule):
            ok = await task_store.reschedule(tx, task, outcome.scheduled_for, outcome.payload, outcome.message)
            return "rescheduled" if ok else "lost"
        ok = await task_store.finish_task(tx, task, "success", outcome if isinstance(outcome, str) else None)
        return "success" if ok else "lost"


class _Stopped(Exception):
    pass


async def _heartbeat_loop(ctx: TaskContext, handler: asyncio.Task, interval: float) -> None:
    """Heartbeat until the handler ends; cancel it when the task was lost or a stop was requested."""
    while not handler.done():
        await asyncio.sleep(interval)
        if handler.done():
            return
        try:
            await ctx.heartbeat()
        except TaskLost as exc:
            ctx.abort_reason = exc
            handler.cancel()
            return
        except Exception:  # a database hiccup: try again on the next beat
            log.exception("heartbeat of task %s failed", ctx.task.id)
            continue
        if ctx.should_stop:
            ctx.abort_reason = _Stopped()
            handler.cancel()
            return


# ---------------------------------------------------------------- management: queue config


def require_queue(state: AppState, queue_name: str, *, project_level: bool | None = None) -> TaskQueueSpec[Any]:
    spec = state.registry.task_queues.get(normalize_name(queue_name))
    if spec is None or (project_level is not None and (spec.name in PROJECT_QUEUES) != project_level):
        names = sorted(
            s.name for s in state.registry.unique(state.registry.task_queues)
            if project_level is None or (s.name in PROJECT_QUEUES) == project_level
        )
        raise bad_request(f"Queue '{queue_name}' not found! Existing queues: [{', '.join(names)}]", "QueueNotFound")
    return spec


def parse_queue_config(spec: TaskQueueSpec[Any], config: Any) -> Any:
    if not isinstance(config, dict):
        raise bad_request(
            "Invalid request body: queue-config must be an object @ body.queue-config", "InvalidQueueConfig"
        )
    if spec.config_cls is None:
        return config
    try:
        parsed = structure_body(config, spec.config_cls)
        check = getattr(parsed, "check", None)
        if check is not None:
            check()
        return parsed
    except (CatalogError, ValueError) as exc:
        message = exc.message if isinstance(exc, CatalogError) else str(exc)
        raise bad_request(
            f"Failed to deserialize queue config for queue-name '{spec.name}': {message}", "InvalidQueueConfig"
        ) from None


async def effective_queue_config(state: AppState, project_id: str, warehouse_id: str | None, queue_name: str) -> Any:
    spec = require_queue(state, queue_name)
    stored = await task_store.get_queue_config(state.store, project_id, warehouse_id, queue_name)
    return parse_queue_config(spec, stored[0] if stored else {})


# ---------------------------------------------------------------- management: who may, where

# the action each management operation asks for: on the warehouse, or on the project (warehouse_id None)
_ACTIONS = {
    "get_queue_config": ("get_task_queue_config", "get_task_queue_config"),
    "set_queue_config": ("modify_task_queue_config", "modify_task_queue_config"),
    "schedule": ("control_all_tasks", "control_all_tasks"),
    "read_tasks": ("get_all_tasks", "get_project_tasks"),
    "control_tasks": ("control_all_tasks", "control_project_tasks"),
}


async def task_scope(
    state: AppState, meta: RequestMetadata, warehouse_id: str | None, operation: str
) -> tuple[str, str | None]:
    """AUTHZ: (project id, warehouse id) the operation works in, once the caller may do it there.

    With a warehouse id, on that active warehouse; without, on the caller's project (project-level
    queues and tasks).
    """
    if warehouse_id is None:
        project_id = resolve_project_id(state, meta.project_id)
        await authorize_project(state, meta, _ACTIONS[operation][1], project_id)
        return project_id, None
    return await _warehouse_scope(state, meta, warehouse_id, operation)


async def _warehouse_scope(
    state: AppState, meta: RequestMetadata, warehouse_id: str, operation: str
) -> tuple[str, str]:
    warehouse = await require_warehouse(state, warehouse_id, active_only=True)
    await authorize_warehouse(state, meta, _ACTIONS[operation][0], warehouse.id)
    return warehouse.project_id, warehouse.id


async def get_queue_config(
    state: AppState, meta: RequestMetadata, warehouse_id: str | None, queue_name: str
) -> dict[str, Any]:
    """A queue's stored configuration, in a warehouse or (``warehouse_id`` None) the caller's project."""
    project_id, warehouse_id = await task_scope(state, meta, warehouse_id, "get_queue_config")
    spec = require_queue(state, queue_name, project_level=warehouse_id is None)
    stored = await task_store.get_queue_config(state.store, project_id, warehouse_id, spec.name)
    config, max_seconds = stored if stored else ({}, None)
    return {"queue-config": {**config, "queue-name": spec.name}, "max-seconds-since-last-heartbeat": max_seconds}


async def set_queue_config(
    state: AppState, meta: RequestMetadata, warehouse_id: str | None, queue_name: str, body: Any
) -> None:
    project_id, warehouse_id = await task_scope(state, meta, warehouse_id, "set_queue_config")
    spec = require_queue(state, queue_name, project_level=warehouse_id is None)
    if not isinstance(body, dict):
        raise bad_request("Request body must be a JSON object")
    if "queue-config" not in body:
        raise bad_request("Invalid request body: required field missing @ body.queue-config")
    config = parse_queue_config(spec, body["queue-config"])
    max_seconds = body.get("max-seconds-since-last-heartbeat")
    if max_seconds is not None and (
        not isinstance(max_seconds, int) or isinstance(max_seconds, bool) or max_seconds < 1
    ):
        raise bad_request(
            "Invalid request body: expected a positive integer @ body.max-seconds-since-last-heartbeat"
        )
    async with state.store.transaction() as tx:
        await task_store.set_queue_config(tx, project_id, warehouse_id, spec.name, body["queue-config"], max_seconds)
    if spec.on_config_set is not None:
        await spec.on_config_set(state, project_id, warehouse_id, config)


# ---------------------------------------------------------------- management: listing, details, control

API_STATUS = {
    "scheduled": "SCHEDULED",
    "running": "RUNNING",
    "should-stop": "STOPPING",
    "success": "SUCCESS",
    "failed": "FAILED",
    "cancelled": "CANCELLED",
}
STORE_STATUS = {v: k for k, v in API_STATUS.items()}


def parse_time(value: Any, field: str) -> int:
    if not isinstance(value, str):
        raise bad_request(f"Invalid request body: expected an RFC 3339 timestamp @ body.{field}")
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise bad_request(f"Invalid request body: not an RFC 3339 timestamp: {value!r} @ body.{field}") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return int(parsed.timestamp() * 1000)


def _string_list(body: dict, field: str) -> list[str] | None:
    value = body.get(field)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise bad_request(f"Invalid request body: expected a list of strings @ body.{field}")
    return value


ENTITY_ID_KEYS = {"table": "table-id", "view": "view-id", "generic-table": "generic-table-id",
                  "warehouse": "warehouse-id", "project": "project-id"}


def parse_entity(entity: Any, field: str) -> tuple[str, str]:
    """``{"type": "table", "table-id": ...}`` (also view, generic-table, warehouse, project) -> (type,
    id); a generic table's type is its kind, ``generic_table``."""
    if not isinstance(entity, dict) or not isinstance(entity.get("type"), str):
        raise bad_request(f"Invalid request body: expected an entity object with a type @ body.{field}")
    typ = entity["type"]
    key = ENTITY_ID_KEYS.get(typ)
    if key is None:
        raise bad_request(f"Invalid request body: unknown entity type {typ!r} @ body.{field}.type")
    value = entity.get(key, entity.get("id"))
    if not isinstance(value, str):
        raise bad_request(f"Invalid request body: required field missing @ body.{field}.{key}")
    return kinds.from_wire(typ) or typ, value


def entity_json(entity_type: str | None, entity_id: str | None, warehouse_id: str | None) -> dict[str, Any]:
    """A task's entity as Lakekeeper writes it: ``{"type": "generic-table", "generic-table-id": ...}``."""
    typ = kinds.wire(entity_type or "warehouse")
    entity = {"type": typ, ENTITY_ID_KEYS.get(typ, f"{typ}-id"): entity_id}
    if warehouse_id:
        entity["warehouse-id"] = warehouse_id
    return entity


def _task_uuid(value: str) -> str:
    return str(uuid.UUID(value))


async def list_tasks(
    state: AppState, meta: RequestMetadata, warehouse_id: str | None, body: Any
) -> tuple[list[TaskRow | TaskLogRow], str | None]:
    project_id, warehouse_id = await task_scope(state, meta, warehouse_id, "read_tasks")
    if body is None:
        body = {}
    if not isinstance(body, dict):
        raise bad_request("Request body must be a JSON object")
    queue_names = _string_list(body, "queue-name")
    statuses = _string_list(body, "status")
    store_statuses = None
    if statuses is not None:
        unknown = [s for s in statuses if s.upper() not in STORE_STATUS]
        if unknown:
            raise bad_request(
                f"Invalid request body: unknown status {unknown[0]!r}; expected one of "
                f"{', '.join(STORE_STATUS)} @ body.status"
            )
        store_statuses = [STORE_STATUS[s.upper()] for s in statuses]
    entity_ids = None
    if body.get("entities") is not None:
        if not isinstance(body["entities"], list):
            raise bad_request("Invalid request body: expected a list @ body.entities")
        if len(body["entities"]) > 100:
            raise bad_request("Cannot filter by more than 100 entities at once.", "TooManyEntities")
        entity_ids = [parse_entity(e, f"entities[{i}]")[1] for i, e in enumerate(body["entities"])]
        if not entity_ids:
            return [], None
    if queue_names is not None and not queue_names:
        return [], None
    created_after = parse_time(body["created-after"], "created-after") if body.get("created-after") else None
    created_before = parse_time(body["created-before"], "created-before") if body.get("created-before") else None
    requested_size = body.get("page-size")
    if requested_size is not None and (not isinstance(requested_size, int) or isinstance(requested_size, bool)):
        raise bad_request("Invalid request body: expected an integer @ body.page-size")
    limit = pagination.page_size(state, requested_size)
    token = body.get("page-token")
    if token is not None and not isinstance(token, str):
        raise bad_request("Invalid request body: expected a string @ body.page-token")
    rows = await task_store.list_tasks(
        state.store,
        project_id=project_id,
        warehouse_id=warehouse_id,
        queue_names=queue_names,
        statuses=store_statuses,
        entity_ids=entity_ids,
        created_after=created_after,
        created_before=created_before,
        after=decode_page_token(token, int, _task_uuid),
        limit=limit,
    )
    next_token = None
    if len(rows) == limit:
        last = rows[-1]
        next_token = encode_page_token(last.created_at, getattr(last, "id", None) or last.task_id)
    return rows, next_token


async def get_task(
    state: AppState, meta: RequestMetadata, warehouse_id: str | None, task_id: str, num_attempts: int
) -> tuple[TaskRow | TaskLogRow, list[TaskLogRow]]:
    project_id, warehouse_id = await task_scope(state, meta, warehouse_id, "read_tasks")
    try:
        task_id = str(uuid.UUID(task_id))
    except ValueError:
        raise not_found(f"Task with id {task_id} not found", "TaskNotFound") from None
    # the task row and its log are two reads: a worker finishing an attempt between them would show
    # a finished attempt on a task still RUNNING. Reading the row again around the log makes it one
    # state (an attempt's end changes the row and the log in one transaction).
    active = await task_store.get_task(state.store, task_id)
    for _ in range(5):
        logs = await task_store.get_task_logs(state.store, task_id)
        again = await task_store.get_task(state.store, task_id)
        if again == active:
            break
        active = again
    current: TaskRow | TaskLogRow | None = active
    attempts = logs
    if active is None:
        if not logs:
            raise not_found(f"Task with id {task_id} not found", "TaskNotFound")
        current, attempts = logs[0], logs[1:]
    if current.project_id != project_id or current.warehouse_id != warehouse_id:
        raise not_found(f"Task with id {task_id} not found", "TaskNotFound")
    return current, attempts[: max(0, num_attempts)]


async def control_tasks(state: AppState, meta: RequestMetadata, warehouse_id: str | None, body: Any) -> None:
    project_id, warehouse_id = await task_scope(state, meta, warehouse_id, "control_tasks")
    if not isinstance(body, dict):
        raise bad_request("Request body must be a JSON object")
    task_ids = body.get("task-ids")
    if not isinstance(task_ids, list) or not all(isinstance(t, str) for t in task_ids):
        raise bad_request("Invalid request body: expected a list of task ids @ body.task-ids")
    if len(task_ids) > 100:
        raise bad_request("Cannot control more than 100 tasks at once.", "TooManyTasks")
    action = body.get("action")
    if not isinstance(action, dict):
        raise bad_request("Invalid request body: required field missing @ body.action")
    action_type = action.get("action-type", action.get("action"))
    if action_type not in ("stop", "cancel", "run-now", "run-at"):
        raise bad_request(
            "Invalid request body: action-type must be stop, cancel, run-now or run-at @ body.action.action-type"
        )
    scheduled_for = None
    if action_type == "run-at":
        if "scheduled-for" not in action:
            raise bad_request("Invalid request body: required field missing @ body.action.scheduled-for")
        scheduled_for = parse_time(action["scheduled-for"], "action.scheduled-for")
    ids = []
    for raw in task_ids:
        try:
            ids.append(str(uuid.UUID(raw)))
        except ValueError:
            raise bad_request(f"Invalid request body: not a task id: {raw!r} @ body.task-ids") from None
    if not ids:
        return
    async with state.store.transaction() as tx:
        tasks = {}
        for task_id in ids:
            task = await task_store.get_task(tx, task_id)
            if task is None or task.project_id != project_id or task.warehouse_id != warehouse_id:
                raise not_found(f"Task with id {task_id} not found or not active", "TaskNotFound")
            tasks[task_id] = task
        for task_id, task in tasks.items():
            if action_type == "stop":
                await task_store.request_stop(tx, task_id)
            elif action_type == "cancel":
                if task.queue_name == SOFT_DELETION and task.entity_id:
                    # cancelling an expiration restores the table (Lakekeeper: requires undrop)

                    await tabular_admin.clear_deleted(tx, task.entity_id)
                await task_store.cancel_task(tx, task_id, "Cancelled by request")
            elif action_type == "run-now":
                await task_store.set_scheduled_for(tx, task_id, now_ms())
            else:
                await task_store.set_scheduled_for(tx, task_id, scheduled_for)


async def schedule_task(
    state: AppState, meta: RequestMetadata, warehouse_id: str, queue_name: str, body: Any
) -> str:
    """Manually schedule a task on a user-schedulable queue (the built-in ones are not)."""
    project_id, warehouse_id = await _warehouse_scope(state, meta, warehouse_id, "schedule")
    spec = state.registry.task_queues.get(normalize_name(queue_name))
    if spec is None:
        names = sorted(s.name for s in state.registry.unique(state.registry.task_queues))
        raise not_found(f"Queue '{queue_name}' not found. Registered queues: [{', '.join(names)}]", "QueueNotFound")
    if not spec.user_schedulable:
        names = sorted(s.name for s in state.registry.unique(state.registry.task_queues) if s.user_schedulable)
        raise bad_request(
            f"Queue '{queue_name}' is not user-schedulable. Schedulable queues: [{', '.join(names)}]",
            "QueueNotUserSchedulable",
        )
    if not isinstance(body, dict):
        raise bad_request("Request body must be a JSON object")
    if "entity" not in body:
        raise bad_request("Invalid request body: required field missing @ body.entity")
    entity_type, entity_id = parse_entity(body["entity"], "entity")
    scheduled_for = parse_time(body["scheduled-for"], "scheduled-for") if body.get("scheduled-for") else None
    payload = body.get("payload") or {}
    if not isinstance(payload, dict):
        raise bad_request("Invalid request body: payload must be an object @ body.payload", "InvalidTaskPayload")
    entity_name = await _entity_name(state, warehouse_id, entity_type, entity_id)
    async with state.store.transaction() as tx:
        task_id = await task_store.schedule_task(
            tx,
            project_id=project_id,
            warehouse_id=warehouse_id,
            queue_name=spec.name,
            entity_type=entity_type,
            entity_id=entity_id,
            entity_name=entity_name,
            payload=payload,
            scheduled_for=scheduled_for,
        )
    if task_id is None:
        raise CatalogError(
            409,
            "TaskAlreadyActive",
            f"A task on queue '{spec.name}' is already active for this entity. "
            "Use POST /task/list to find it; POST /task/control to retime or cancel it.",
        )
    return task_id


async def _entity_name(state: AppState, warehouse_id: str, entity_type: str, entity_id: str) -> list[str]:

    if entity_type == "warehouse":
        warehouse = await warehouse_store.get_warehouse(state.store, entity_id)
        if warehouse is None or warehouse.id != warehouse_id:
            raise not_found(f"Warehouse {entity_id} does not exist", "WarehouseNotFound")
        return [warehouse.name]
    if entity_type in kinds.KINDS:
        tabular = await tabular_admin.get_tabular_info(state.store, warehouse_id, entity_id)
        if tabular is None or tabular.typ != entity_type:
            raise not_found(f"{kinds.label(entity_type)} {entity_id} does not exist",
                            f"{kinds.error_label(entity_type)}NotFound")

        return await entity_name(state.store, tabular.namespace_id, tabular.name)
    raise bad_request(f"Tasks cannot be scheduled for entity type {entity_type!r}", "UnsupportedEntity")
