"""Deleting a warehouse (refused while it holds tables, views or namespaces unless forced)."""

from __future__ import annotations

import logging

from lakekeeper_host.errors import CatalogError, no_such_warehouse
from lakekeeper_host.server import events
from lakekeeper_host.server.authorize import authorize_warehouse, deleted
from lakekeeper_host.server.resolve import require_warehouse
from lakekeeper_host.service.request import RequestMetadata
from lakekeeper_host.service.state import AppState
from lakekeeper_host.store import namespace_admin as ns_store
from lakekeeper_host.store import tasks as task_store
from lakekeeper_host.store import warehouses as warehouse_store

log = logging.getLogger(__name__)


async def delete_warehouse(state: AppState, meta: RequestMetadata, warehouse_id: str, *, force: bool) -> None:
    """Refused when protected (unless ``force``), while namespaces remain, or while tasks are unfinished."""
    warehouse = await require_warehouse(state, warehouse_id)
    await authorize_warehouse(state, meta, "delete", warehouse.id)
    async with state.store.transaction() as tx:
        current = await warehouse_store.get_warehouse(tx, warehouse.id)
        if current is None:
            raise no_such_warehouse(f"Warehouse {warehouse_id} not found")
        if current.protected and not force:
            raise CatalogError(
                409,
                "WarehouseProtected",
                f"Warehouse {current.name!r} is protected; set protection to false or use force=true",
            )
        if await task_store.count_active_tasks(tx, current.id):
            raise CatalogError(
                409,
                "WarehouseHasUnfinishedTasks",
                f"Warehouse {current.name!r} has unfinished tasks (e.g. pending purges); wait for them or cancel them",
            )
        if await ns_store.count_namespaces(tx, current.id):
            raise CatalogError(
                409, "WarehouseNotEmpty", f"Warehouse {current.name!r} is not empty: drop its namespaces first"
            )
        await task_store.delete_warehouse_task_history(tx, current.id)
        await warehouse_store.delete_warehouse(tx, current.id)
    if current.storage_secret_id:
        try:
            await state.secrets.delete(current.storage_secret_id)
        except Exception:
            log.warning("deleting the storage secret of warehouse %s failed", current.id)
    events.warehouse_deleted(state, meta, current.id, current.name, current.project_id)
    await deleted(state, "warehouse", [current.id], current.id)
