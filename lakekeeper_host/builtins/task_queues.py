"""Built-in task queues (soft deletion, purge, task-log cleanup, table maintenance) register here."""

from lakekeeper_host import hookimpl


@hookimpl
def lakekeeper_task_queues():
    from lakekeeper_host.server.tasks import builtin_task_queues

    return builtin_task_queues()


@hookimpl
async def lakekeeper_startup(state):
    # a maintenance planner that gave up (e.g. retries exhausted during an outage) is back after a restart
    from lakekeeper_host.server.maintenance import ensure_planners

    await ensure_planners(state)
