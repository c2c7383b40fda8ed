"""The server's own task queues (soft deletion, purge, task-log cleanup, table maintenance),
registered through the same hook as a plugin's."""

from lakekeeper_host import hookimpl
from lakekeeper_host.server.management.maintenance import ensure_planners, task_queue_spec
from lakekeeper_host.server.management.tasks import builtin_task_queues


@hookimpl
def lakekeeper_task_queues():
    return [*builtin_task_queues(), task_queue_spec()]


@hookimpl
async def lakekeeper_startup(state):
    # a maintenance planner that gave up (e.g. retries exhausted during an outage) is back after a restart
    await ensure_planners(state)
