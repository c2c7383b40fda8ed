"""Task queues: scheduling, claiming, heartbeats and the built-in queue handlers."""

from __future__ import annotations

from lakekeeper_host.registry import TaskQueueSpec


def builtin_task_queues() -> list[TaskQueueSpec]:
    """The OSS queues: soft_deletion, tabular_purge, task_log_cleanup."""
    return []
