"""Housekeeping loops of the catalog API, started with the server (and cancelled with its other
background tasks by ``runtime/workers.py``).

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
from lakekeeper_host.server import idempotency
from lakekeeper_host.server.tables.metrics_reports import retention_loop
from lakekeeper_host.server.tables.scan_planning import expiry_loop

log = logging.getLogger(__name__)

@hookimpl
def lakekeeper_startup(state):
    if state.settings.host.maintenance_mode == "read-only":
        return

    loops = {"idempotency-cleanup": idempotency.cleanup_loop,
             "metrics-report-retention": retention_loop,
             "scan-plan-expiry": expiry_loop}
    if not idempotency.enabled(state):
        loops.pop("idempotency-cleanup")
    state.background_tasks.extend(asyncio.create_task(loop(state), name=name) for name, loop in loops.items())
