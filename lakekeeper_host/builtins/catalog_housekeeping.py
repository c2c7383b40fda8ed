"""Built-in housekeeping loops of the catalog API, started and stopped with the server.

* idempotency records older than lifetime + grace period are removed
  (``LAKEKEEPER__IDEMPOTENCY__*``);
* stored metrics reports beyond their retention are removed (``LAKEKEEPER__METRICS_REPORTS__*``);
* finished or abandoned asynchronous scan plans are forgotten.

Nothing runs in read-only maintenance mode.
"""

from __future__ import annotations

import asyncio
import logging

from lakekeeper_host import hookimpl

log = logging.getLogger(__name__)

_TASKS = "catalog_housekeeping_tasks"


@hookimpl
def lakekeeper_startup(state):
    if state.settings.host.maintenance_mode == "read-only":
        return
    from lakekeeper_host.server import idempotency, metrics_reports, scan_planning

    loops = {"idempotency-cleanup": idempotency.cleanup_loop,
             "metrics-report-retention": metrics_reports.retention_loop,
             "scan-plan-expiry": scan_planning.expiry_loop}
    if not idempotency.enabled(state):
        loops.pop("idempotency-cleanup")
    state.extras[_TASKS] = [asyncio.create_task(loop(state), name=name) for name, loop in loops.items()]


@hookimpl
async def lakekeeper_shutdown(state):
    tasks = state.extras.pop(_TASKS, [])
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
