"""Test-only task queue ``test_slow``: logs every start/end to the file named in the payload.

Payload: ``{"log-file": path, "sleep": s, "sleep-first-attempt": s}``. Loaded by a test server
through a real ``lakekeeper`` entry point (see tests/management/conftest.py).
"""

from __future__ import annotations

import asyncio
import json
import os
import time

from lakekeeper_host import hookimpl
from lakekeeper_host.registry import TaskQueueSpec


def _log(path: str, event: str, task) -> None:
    line = json.dumps({"event": event, "task": task.id, "attempt": task.attempt, "pid": os.getpid(), "t": time.time()})
    with open(path, "a") as fh:
        fh.write(line + "\n")


async def run_slow(task, ctx) -> str:
    path = task.payload["log-file"]
    _log(path, "start", task)
    seconds = task.payload.get("sleep-first-attempt", 0) if task.attempt == 1 else task.payload.get("sleep", 0)
    await asyncio.sleep(seconds)
    if task.payload.get("fail-attempts", 0) >= task.attempt:
        _log(path, "fail", task)
        raise RuntimeError(f"planned failure of attempt {task.attempt}")
    _log(path, "end", task)
    return f"slept {seconds}s"


@hookimpl
def lakekeeper_task_queues():
    return [TaskQueueSpec(name="test_slow", handler=run_slow, user_schedulable=True, default_workers=2)]
