"""Built-in task queues (soft deletion, purge, task-log cleanup) register here."""

from lakekeeper_host import hookimpl


@hookimpl
def lakekeeper_task_queues():
    from lakekeeper_host.server.tasks import builtin_task_queues

    return builtin_task_queues()
