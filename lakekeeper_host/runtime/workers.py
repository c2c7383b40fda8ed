"""Background workers of one server process: task-queue pollers and housekeeping loops.

Every queue in ``state.registry.task_queues`` gets ``LAKEKEEPER__TASK_<QUEUE>_WORKERS`` pollers
(built-ins: ``TASK_SOFT_DELETION_WORKERS`` (alias ``TASK_TABULAR_EXPIRATION_WORKERS``),
``TASK_TABULAR_PURGE_WORKERS``, ``TASK_LOG_CLEANUP_WORKERS``; plugin queues default to their
spec's ``default_workers``). A poller sleeps ``TASK_POLL_INTERVAL`` (+ up to 500 ms jitter) after
an empty poll and 5 s after a database error. Nothing runs in read-only maintenance mode.
"""

from __future__ import annotations

import asyncio
import logging
import random
from typing import Any

from lakekeeper_host.ids import new_id
from lakekeeper_host.registry import TaskQueueSpec
from lakekeeper_host.server.management.statistics import start_endpoint_statistics, stop_endpoint_statistics
from lakekeeper_host.server.management.tasks import claim_next, run_claimed
from lakekeeper_host.service.state import AppState

log = logging.getLogger(__name__)

DB_ERROR_BACKOFF_S = 5.0


def worker_count(state: AppState, spec: TaskQueueSpec[Any]) -> int:
    host = state.settings.host
    raw = state.settings.raw
    builtin = {
        "soft_deletion": ("task_soft_deletion_workers",),  # TASK_TABULAR_EXPIRATION_WORKERS is an alias (config)
        "tabular_purge": ("task_tabular_purge_workers",),
        "task_log_cleanup": ("task_log_cleanup_workers",),
    }
    keys = builtin.get(spec.name, (f"task_{spec.name}_workers",))
    for key in keys:
        if key in raw:
            state.settings.consumed.add(key)
            try:
                return max(0, int(str(raw[key]).strip()))
            except ValueError:
                log.error("LAKEKEEPER__%s is not a number; using the default", key.upper())
                break
    if spec.name == "soft_deletion":
        return host.task_soft_deletion_workers
    if spec.name == "tabular_purge":
        return host.task_tabular_purge_workers
    if spec.name == "task_log_cleanup":
        return host.task_log_cleanup_workers
    return spec.default_workers


async def poll_queue(state: AppState, spec: TaskQueueSpec[Any], worker_id: str) -> None:

    interval = state.settings.host.task_poll_interval.total_seconds()
    while True:
        try:
            claimed = await claim_next(state, spec.name, worker_id)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("polling queue %s failed; retrying in %.0fs", spec.name, DB_ERROR_BACKOFF_S)
            await asyncio.sleep(DB_ERROR_BACKOFF_S)
            continue
        if claimed is None:
            await asyncio.sleep(interval + random.random() * min(0.5, interval))
            continue
        try:
            outcome = await run_claimed(state, spec, claimed)
            log.debug("task %s (%s) attempt %d: %s", claimed.task.id, spec.name, claimed.task.attempt, outcome)
            if state.metrics is not None:
                state.metrics.tasks.labels(spec.name, outcome).inc()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("recording the outcome of task %s failed", claimed.task.id)
            await asyncio.sleep(DB_ERROR_BACKOFF_S)


async def _supervise(state: AppState, name: str, factory) -> None:
    """Restart a background loop that died unexpectedly."""
    while True:
        try:
            await factory()
            return
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("background loop %s crashed; restarting", name)
            await asyncio.sleep(1)


async def start(state: AppState) -> None:
    """Start the task pollers and the endpoint-statistics flusher (into ``state.background_tasks``)."""
    tasks = state.background_tasks

    start_endpoint_statistics(state)
    if state.settings.host.maintenance_mode == "read-only":
        return
    process_id = new_id()
    for spec in state.registry.unique(state.registry.task_queues):
        for index in range(worker_count(state, spec)):
            worker_id = f"{process_id}/{spec.name}/{index}"
            tasks.append(
                asyncio.create_task(
                    _supervise(state, worker_id, lambda s=spec, w=worker_id: poll_queue(state, s, w)),
                    name=f"task-worker-{spec.name}-{index}",
                )
            )


async def stop(state: AppState) -> None:
    tasks = state.background_tasks
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    tasks.clear()

    await stop_endpoint_statistics(state)
