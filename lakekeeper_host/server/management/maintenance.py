"""Table maintenance on Spark: the ``table_maintenance`` queue, its policy and its scheduling.

* Policy: the warehouse's ``table_maintenance`` queue config (``POST .../task-queue/table_maintenance/config``)
  is the warehouse policy; ``POST .../table/{table-id}/maintenance`` stores a partial per-table
  override merged over it (spark_maintenance.MaintenancePolicy is the shape).
* Scheduling: while any table of a warehouse has maintenance enabled, a planner task (entity: the
  warehouse) runs every ``LAKEKEEPER__TABLE_MAINTENANCE__PLANNING_INTERVAL`` and schedules a task
  for each enabled table that has none. A table task reschedules itself ``interval`` after each
  successful run while its policy stays enabled. Policy changes run the planner at once, which
  also cancels the scheduled periodic runs of tables that are now disabled. Manual runs
  (``.../maintenance/run``) use the same task, flagged to run whatever the policy says.
* Execution: each table task runs ``python -m lakekeeper_host.engines.spark_maintenance`` as a separate
  process (the Spark driver), which reaches this catalog like any client. The server only awaits
  the process, so its event loop never blocks; the heartbeat keeps running meanwhile. A failed
  job raises, and the task engine retries it up to ``LAKEKEEPER__TASK_MAX_RETRIES`` attempts.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import sys
import uuid
from datetime import timedelta
from typing import Any

from attrs import field, frozen

from lakekeeper_host.config.types import Secret
from lakekeeper_host.engines.spark import JarsMode
from lakekeeper_host.engines.spark_maintenance import (
    RESULT_MARKER,
    CatalogAccess,
    MaintenanceJob,
    MaintenancePolicy,
    SparkJobSettings,
    TableResult,
    parse_policy,
    policy_json,
    summarize,
)
from lakekeeper_host.errors import bad_request, not_found
from lakekeeper_host.registry import TaskQueueSpec
from lakekeeper_host.serde import WIRE, iso_timestamp
from lakekeeper_host.server.authorize import authorize_warehouse
from lakekeeper_host.server.resolve import require_warehouse
from lakekeeper_host.server.tabulars.deletion import entity_name
from lakekeeper_host.service.request import RequestMetadata
from lakekeeper_host.service.state import AppState
from lakekeeper_host.service.tasks import Reschedule, TaskContext
from lakekeeper_host.store import maintenance as maintenance_store
from lakekeeper_host.store import now_ms, tabular_admin
from lakekeeper_host.store import tasks as task_store
from lakekeeper_host.store import warehouses as warehouse_store
from lakekeeper_host.store.tabulars import TabularRow
from lakekeeper_host.store.tasks import TaskRow

log = logging.getLogger(__name__)

TABLE_MAINTENANCE = "table_maintenance"
# task payload flag: run even if the policy is disabled (a periodic task of a disabled table ends instead)
MANUAL_RUN = "manual"
STDERR_TAIL_LINES = 20


# ---------------------------------------------------------------- configuration


@frozen
class TableMaintenanceConfig:
    """``LAKEKEEPER__TABLE_MAINTENANCE__*``: where the Spark jobs run and how they reach the catalog."""

    # local[*], spark://host:7077, or any master URL Spark accepts
    # example: spark://spark-master:7077
    spark_master: str = "local[*]"
    # where the Iceberg jars come from: auto (local when all present, else Maven), offline, online
    spark_jars_mode: JarsMode = "auto"
    # extra Spark settings as JSON
    # example: {"spark.driver.host": "10.0.0.5", "spark.executor.memory": "4g"}
    spark_conf: dict[str, str] = field(factory=dict)
    # the catalog the jobs use (unset: this server's own, LAKEKEEPER__BASE_URI or the listen address)
    # example: https://lakekeeper.example.com/catalog
    catalog_uri: str | None = None
    # bearer token the jobs send to the catalog (authenticated servers)
    # example: eyJhbGciOi...
    token: Secret | None = None
    # OAuth2 client_id:client_secret the jobs exchange for tokens (with OAUTH2_SERVER_URI)
    # example: maintenance:s3cret
    credential: Secret | None = None
    # token endpoint for CREDENTIAL
    # example: https://idp.example.com/realms/lakekeeper/protocol/openid-connect/token
    oauth2_server_uri: str | None = None
    # scope asked for with CREDENTIAL
    # example: lakekeeper
    scope: str | None = None
    # a job (one Spark driver) running longer is stopped and its attempt fails
    # example: PT4H
    job_timeout: timedelta = timedelta(hours=2)
    # how often the queue looks for tables due for maintenance
    # example: PT15M
    planning_interval: timedelta = timedelta(minutes=5)


@frozen
class Section:
    # table maintenance on Spark
    table_maintenance: TableMaintenanceConfig = TableMaintenanceConfig()


def maintenance_config(state: AppState) -> TableMaintenanceConfig:
    return state.settings.section(Section).table_maintenance


def catalog_access(state: AppState, warehouse_name: str) -> CatalogAccess:

    config = maintenance_config(state)
    return CatalogAccess(
        uri=config.catalog_uri or state.settings.own_base_uri + "/catalog",
        warehouse=warehouse_name,
        token=config.token.get() if config.token else None,
        credential=config.credential.get() if config.credential else None,
        oauth2_server_uri=config.oauth2_server_uri,
        scope=config.scope,
    )


def spark_settings(state: AppState) -> SparkJobSettings:
    config = maintenance_config(state)
    return SparkJobSettings(master=config.spark_master, jars_mode=config.spark_jars_mode, conf=dict(config.spark_conf))


# ---------------------------------------------------------------- the queue


def task_queue_spec() -> TaskQueueSpec[MaintenancePolicy]:
    # one worker: every attempt is a Spark driver of its own (LAKEKEEPER__TASK_TABLE_MAINTENANCE_WORKERS)
    return TaskQueueSpec(
        name=TABLE_MAINTENANCE,
        handler=run_task,
        config_cls=MaintenancePolicy,
        default_workers=1,
        on_config_set=on_warehouse_policy_set,
    )


async def run_task(task: TaskRow, ctx: TaskContext) -> str | Reschedule:
    if task.entity_type == "warehouse":
        return await plan_warehouse(ctx.state, task)
    return await maintain_table(ctx, task)


async def warehouse_policy_layer(state: AppState, project_id: str, warehouse_id: str) -> dict[str, Any]:
    stored = await task_store.get_queue_config(state.store, project_id, warehouse_id, TABLE_MAINTENANCE)
    return stored[0] if stored else {}


async def effective_policy(state: AppState, project_id: str, warehouse_id: str, table_id: str) -> MaintenancePolicy:
    override = await maintenance_store.get_override(state.store, table_id)
    base = await warehouse_policy_layer(state, project_id, warehouse_id)
    return parse_policy(base, override.policy if override else {})


async def plan_warehouse(state: AppState, task: TaskRow) -> str | Reschedule:
    """Schedule a task for every enabled table without one, cancel the periodic runs of disabled
    tables (manual runs stay); run again while anything is enabled."""
    warehouse = await warehouse_store.get_warehouse(state.store, task.entity_id or "")
    if warehouse is None:
        return "Warehouse no longer exists; planning stopped"
    base = await warehouse_policy_layer(state, warehouse.project_id, warehouse.id)
    overrides = await maintenance_store.list_overrides(state.store, warehouse.id)
    active = await maintenance_store.active_table_tasks(state.store, warehouse.id, TABLE_MAINTENANCE)
    cancelled = 0
    for table_id, table_task in active.items():
        if table_task.status == "scheduled" and not table_task.payload.get(MANUAL_RUN):
            if not parse_policy(base, overrides.get(table_id, {})).enabled:
                async with state.store.transaction() as tx:
                    cancelled += await task_store.cancel_task(tx, table_task.id, "Maintenance disabled by policy")
    if not _any_enabled(base, overrides):
        return f"Maintenance is disabled for every table; cancelled {cancelled} scheduled run(s); planning stopped"
    next_planning = now_ms() + _ms(maintenance_config(state).planning_interval)
    if not warehouse.is_active:
        return Reschedule(next_planning, "Warehouse is inactive; nothing scheduled")
    last_runs = await maintenance_store.last_finished(state.store, warehouse.id, TABLE_MAINTENANCE)
    scheduled = 0
    for table in await maintenance_store.list_live_tables(state.store, warehouse.id):
        policy = parse_policy(base, overrides.get(table.id, {}))
        if not policy.enabled or table.id in active:
            continue
        # a table whose task ended (failed for good, or ran while disabled) waits out its interval
        due = max(now_ms(), last_runs[table.id] + _ms(policy.interval_delta)) if table.id in last_runs else now_ms()
        name = await entity_name(state.store, table.namespace_id, table.name)
        async with state.store.transaction() as tx:
            created = await task_store.schedule_task(
                tx, project_id=warehouse.project_id, warehouse_id=warehouse.id, queue_name=TABLE_MAINTENANCE,
                entity_type="table", entity_id=table.id, entity_name=name, scheduled_for=due,
            )  # fmt: skip
        scheduled += created is not None
    return Reschedule(next_planning, f"Scheduled maintenance of {scheduled} table(s), cancelled {cancelled}")


def _any_enabled(base: dict[str, Any], overrides: dict[str, dict[str, Any]]) -> bool:
    return parse_policy(base).enabled or any(parse_policy(base, override).enabled for override in overrides.values())


async def maintain_table(ctx: TaskContext, task: TaskRow) -> str | Reschedule:
    state = ctx.state
    warehouse = await warehouse_store.get_warehouse(state.store, task.warehouse_id or "")
    table = await tabular_admin.get_tabular_info(state.store, task.warehouse_id or "", task.entity_id or "")
    if warehouse is None or table is None or table.typ != "table":
        return "Table no longer exists; nothing to maintain"
    if not warehouse.is_active:
        return "Warehouse is inactive; not maintained"
    policy = await effective_policy(state, warehouse.project_id, warehouse.id, table.id)
    if not policy.enabled and not task.payload.get(MANUAL_RUN):
        return "Maintenance is disabled by policy; not run"
    name = await entity_name(state.store, table.namespace_id, table.name)
    job = MaintenanceJob(
        catalog=catalog_access(state, warehouse.name), policy=policy, spark=spark_settings(state), tables=(tuple(name),)
    )
    # fresh details for this attempt (a failed attempt is logged with them)
    await ctx.heartbeat(progress=0.0, execution_details={"spark-master": job.spark.master, "table": name})
    (result,) = await run_job_process(job, maintenance_config(state).job_timeout)
    if result.error:
        raise MaintenanceJobFailed(result.error)
    figures = result.figures or {}
    await ctx.heartbeat(progress=1.0, execution_details={"spark-master": job.spark.master, "table": name, **figures})
    message = summarize(figures)
    if policy.enabled:  # the next periodic run; a manual flag does not carry over
        return Reschedule(now_ms() + _ms(policy.interval_delta), message, payload={})
    return message


class MaintenanceJobFailed(Exception):
    """The Spark job reported an error, exited without a result, or ran out of time."""


async def run_job_process(job: MaintenanceJob, timeout: timedelta) -> list[TableResult]:
    """Run the job as ``python -m lakekeeper_host.engines.spark_maintenance`` and return its results.

    The process leads its own process group, so the Spark JVM it starts is stopped with it when
    the attempt is cancelled (stop request, lost task, shutdown) or times out.
    """
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "lakekeeper_host.engines.spark_maintenance",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )  # fmt: skip
    try:
        stdout, stderr = await asyncio.wait_for(
            process.communicate(json.dumps(WIRE.unstructure(job)).encode()), timeout.total_seconds()
        )
    except TimeoutError:
        raise MaintenanceJobFailed(f"Spark job did not finish within {timeout}") from None
    finally:
        if process.returncode is None:
            await _stop_process_group(process)
    outcome = _result_line(stdout.decode(errors="replace"))
    if outcome is None:
        tail = [line for line in stderr.decode(errors="replace").splitlines() if line.strip()][-STDERR_TAIL_LINES:]
        log.warning("maintenance job exited with %s without a result:\n%s", process.returncode, "\n".join(tail))
        raise MaintenanceJobFailed(
            f"Spark job exited with code {process.returncode} without a result: {tail[-1] if tail else 'no output'}"
        )
    if "error" in outcome:
        raise MaintenanceJobFailed(outcome["error"])
    return [WIRE.structure(r, TableResult) for r in outcome["results"]]


def _result_line(stdout: str) -> dict[str, Any] | None:
    for line in reversed(stdout.splitlines()):
        if line.startswith(RESULT_MARKER):
            return json.loads(line[len(RESULT_MARKER) :])
    return None


async def _stop_process_group(process: asyncio.subprocess.Process) -> None:
    for sig, grace in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        try:
            await asyncio.wait_for(process.wait(), grace)
            return
        except TimeoutError:
            continue


def _ms(delta: timedelta) -> int:
    return int(delta.total_seconds() * 1000)


# ---------------------------------------------------------------- scheduling the planners


async def ensure_planner(state: AppState, project_id: str, warehouse_id: str, warehouse_name: str) -> None:
    """Make sure the warehouse's planner task exists (due now); a no-op when it does."""
    async with state.store.transaction() as tx:
        existing = await task_store.get_active_entity_task(tx, TABLE_MAINTENANCE, "warehouse", warehouse_id)
        if existing is None:
            await task_store.schedule_task(
                tx, project_id=project_id, warehouse_id=warehouse_id, queue_name=TABLE_MAINTENANCE,
                entity_type="warehouse", entity_id=warehouse_id, entity_name=[warehouse_name],
            )  # fmt: skip
        elif existing.status == "scheduled":
            # a policy change takes effect now, not at the next planning interval
            await task_store.set_scheduled_for(tx, existing.id, now_ms())


async def on_warehouse_policy_set(
    state: AppState, project_id: str, warehouse_id: str | None, policy: MaintenancePolicy
) -> None:
    if warehouse_id is None:
        return
    warehouse = await warehouse_store.get_warehouse(state.store, warehouse_id)
    if warehouse is not None:
        await ensure_planner(state, project_id, warehouse_id, warehouse.name)


async def ensure_planners(state: AppState) -> None:
    """At startup: every warehouse with a policy or an override has its planner (it may have given up)."""
    if TABLE_MAINTENANCE not in state.registry.task_queues or state.settings.host.maintenance_mode == "read-only":
        return
    for project_id, warehouse_id in await maintenance_store.warehouses_to_plan(state.store, TABLE_MAINTENANCE):
        warehouse = await warehouse_store.get_warehouse(state.store, warehouse_id)
        base = await warehouse_policy_layer(state, project_id, warehouse_id)
        overrides = await maintenance_store.list_overrides(state.store, warehouse_id)
        if warehouse is not None and _any_enabled(base, overrides):
            await ensure_planner(state, project_id, warehouse_id, warehouse.name)


# ---------------------------------------------------------------- management: per-table policy and runs


async def _require_table(state: AppState, warehouse_id: str, table_id: str) -> TabularRow:
    try:
        table_id = str(uuid.UUID(table_id))
    except ValueError:
        raise not_found(f"Table {table_id} not found", "TableNotFound") from None
    table = await tabular_admin.get_tabular_info(state.store, warehouse_id, table_id)
    if table is None or table.typ != "table":
        raise not_found(f"Table {table_id} not found", "TableNotFound")
    return table


async def _table_policy_json(state: AppState, project_id: str, warehouse_id: str, table_id: str) -> dict[str, Any]:

    override = await maintenance_store.get_override(state.store, table_id)
    base = await warehouse_policy_layer(state, project_id, warehouse_id)
    return {
        "table-id": table_id,
        "policy": override.policy if override else {},
        "effective-policy": policy_json(parse_policy(base, override.policy if override else {})),
        "updated-at": iso_timestamp(override.updated_at) if override else None,
    }


async def get_table_policy(state: AppState, meta: RequestMetadata, warehouse_id: str, table_id: str) -> dict[str, Any]:
    warehouse = await require_warehouse(state, warehouse_id, active_only=True)
    await authorize_warehouse(state, meta, "get_task_queue_config", warehouse.id)
    table = await _require_table(state, warehouse.id, table_id)
    return await _table_policy_json(state, warehouse.project_id, warehouse.id, table.id)


async def set_table_policy(
    state: AppState, meta: RequestMetadata, warehouse_id: str, table_id: str, body: Any
) -> dict[str, Any]:
    """VALIDATIONS: the override alone names a bad field; AUTHZ: warehouse queue config rights."""
    warehouse = await require_warehouse(state, warehouse_id, active_only=True)
    await authorize_warehouse(state, meta, "modify_task_queue_config", warehouse.id)
    table = await _require_table(state, warehouse.id, table_id)
    parse_policy(body)
    async with state.store.transaction() as tx:
        await maintenance_store.set_override(tx, warehouse.id, table.id, body)
    # the planner schedules the table now, or cancels its periodic run when this disabled it
    await ensure_planner(state, warehouse.project_id, warehouse.id, warehouse.name)
    return await _table_policy_json(state, warehouse.project_id, warehouse.id, table.id)


async def delete_table_policy(state: AppState, meta: RequestMetadata, warehouse_id: str, table_id: str) -> None:
    warehouse = await require_warehouse(state, warehouse_id, active_only=True)
    await authorize_warehouse(state, meta, "modify_task_queue_config", warehouse.id)
    table = await _require_table(state, warehouse.id, table_id)
    async with state.store.transaction() as tx:
        await maintenance_store.delete_override(tx, table.id)
    await ensure_planner(state, warehouse.project_id, warehouse.id, warehouse.name)


def parse_run_request(body: Any) -> list[str] | None:
    """``{"table-ids": [...]}``; no body or no ``table-ids``: every table of the warehouse."""
    if body is None:
        return None
    if not isinstance(body, dict):
        raise bad_request("Request body must be a JSON object")
    unknown = sorted(set(body) - {"table-ids"})
    if unknown:
        raise bad_request(f"Invalid request body: extra fields found ({', '.join(unknown)}) @ body")
    table_ids = body.get("table-ids")
    if table_ids is not None and (not isinstance(table_ids, list) or not all(isinstance(t, str) for t in table_ids)):
        raise bad_request("Invalid request body: expected a list of table ids @ body.table-ids")
    return table_ids


async def run_now(
    state: AppState, meta: RequestMetadata, warehouse_id: str, table_ids: list[str] | None
) -> list[dict[str, Any]]:
    """Maintain tables now (all live tables of the warehouse when ``table_ids`` is None).

    A table that already has a task gets it moved to now; the response says which attempt number
    the run will be, so a caller can wait for exactly that attempt.
    """
    warehouse = await require_warehouse(state, warehouse_id, active_only=True)
    await authorize_warehouse(state, meta, "control_all_tasks", warehouse.id)
    if table_ids is None:
        live = await maintenance_store.list_live_tables(state.store, warehouse.id)
        tables = [(t.id, t.namespace_id, t.name) for t in live]
    else:
        tables = []
        for table_id in table_ids:
            table = await _require_table(state, warehouse.id, table_id)
            tables.append((table.id, table.namespace_id, table.name))
    runs = []
    for table_id, namespace_id, name in tables:
        full_name = await entity_name(state.store, namespace_id, name)
        async with state.store.transaction() as tx:
            task = await task_store.get_active_entity_task(tx, TABLE_MAINTENANCE, "table", table_id)
            if task is None:
                task_id = await task_store.schedule_task(
                    tx, project_id=warehouse.project_id, warehouse_id=warehouse.id, queue_name=TABLE_MAINTENANCE,
                    entity_type="table", entity_id=table_id, entity_name=full_name, payload={MANUAL_RUN: True},
                )  # fmt: skip
                attempt = 1
            else:
                task_id = task.id
                if task.status == "scheduled":
                    await task_store.set_scheduled_for(tx, task.id, now_ms(), {**task.payload, MANUAL_RUN: True})
                    attempt = task.attempt + 1
                else:  # running now: that attempt is the run
                    attempt = task.attempt
        runs.append({"task-id": task_id, "table-id": table_id, "entity-name": full_name, "attempt": attempt})
    return runs
