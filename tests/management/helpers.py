"""Helpers shared by the management tests."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

from lakekeeper_host.testing.server import create_file_warehouse


def new_file_warehouse(server_url: str, tmp_path_factory, **kwargs) -> dict:
    name = f"wh-{uuid.uuid4().hex[:10]}"
    root = str(tmp_path_factory.mktemp(name))
    warehouse_id = create_file_warehouse(server_url, name, root, **kwargs)
    return {"name": name, "id": warehouse_id, "root": root}


def wait_for(predicate: Callable[[], object], timeout: float = 30, interval: float = 0.1, what: str = "condition"):
    """Poll until ``predicate()`` is truthy; returns its value (no timing assertions, just a deadline)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(interval)
