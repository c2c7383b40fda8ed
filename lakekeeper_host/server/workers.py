"""Background workers of one server process (task queues, housekeeping)."""

from __future__ import annotations

import asyncio
import logging

from lakekeeper_host.service.state import AppState

log = logging.getLogger(__name__)


async def start(state: AppState) -> None:
    """Start every background loop registered in ``state.extras['background']``."""
    state.extras.setdefault("background_tasks", [])
    if state.settings.host.maintenance_mode == "read-only":
        return
    for factory in state.extras.get("background", []):
        state.extras["background_tasks"].append(asyncio.create_task(factory(state)))


async def stop(state: AppState) -> None:
    tasks = state.extras.get("background_tasks", [])
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
