"""What a task handler works with: the task, its :class:`TaskContext`, and what it returns.

A queue is a ``TaskQueueSpec`` (registry.py); its ``handler(task, ctx)`` runs one attempt and returns a
message (success), a :class:`Reschedule` (success, run again later: periodic tasks), or raises (the
attempt failed and is retried). ``server/management/tasks.py`` claims tasks and runs the handlers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from attrs import define, frozen

from lakekeeper_host.store import tasks as task_store
from lakekeeper_host.store.tasks import TaskRow

if TYPE_CHECKING:
    from lakekeeper_host.service.state import AppState

__all__ = ["Reschedule", "TaskContext", "TaskLost", "TaskOutcome", "TaskRow"]


@frozen
class Reschedule:
    """Returned by a periodic handler: the attempt succeeded, run again at ``scheduled_for`` (epoch ms)."""

    scheduled_for: int
    message: str | None = None
    payload: dict[str, Any] | None = None


# what a handler returns: a message for the task log, a Reschedule, or nothing
TaskOutcome = str | Reschedule | None


class TaskLost(Exception):
    """The attempt is not ours anymore (cancelled, or re-claimed after a heartbeat timeout)."""


@define
class TaskContext:
    """What a handler gets besides the task: the app state and heartbeats."""

    state: AppState
    task: TaskRow
    should_stop: bool = False
    # set by the heartbeat loop right before it cancels the handler
    abort_reason: BaseException | None = None

    async def heartbeat(self, progress: float | None = None, execution_details: dict[str, Any] | None = None) -> None:
        """Report progress; raises :class:`TaskLost` when the task was cancelled or taken over."""
        async with self.state.store.transaction() as tx:
            status = await task_store.heartbeat(
                tx, self.task.id, self.task.attempt, progress=progress, execution_details=execution_details
            )
        if status is None:
            raise TaskLost(self.task.id)
        self.should_stop = status == "should-stop"
