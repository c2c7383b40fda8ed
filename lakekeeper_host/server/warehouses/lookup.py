"""Reading warehouses for the management API: the list a caller may see, one warehouse's metadata."""

from __future__ import annotations

from collections.abc import Sequence

from lakekeeper_host.server.authorize import authorize_project, authorize_warehouse, visible
from lakekeeper_host.server.resolve import require_warehouse
from lakekeeper_host.service.authz import Resource
from lakekeeper_host.service.request import RequestMetadata
from lakekeeper_host.service.state import AppState
from lakekeeper_host.store import warehouses as warehouse_store
from lakekeeper_host.store.warehouses import WarehouseRow


async def list_warehouses(
    state: AppState, meta: RequestMetadata, project_id: str, statuses: Sequence[str]
) -> list[WarehouseRow]:
    """The project's warehouses in one of ``statuses`` that the caller may see."""
    await authorize_project(state, meta, "list_warehouses", project_id)
    return await visible(
        state,
        meta,
        await warehouse_store.list_warehouses(state.store, project_id, list(statuses)),
        lambda w: Resource("warehouse", w.id, w.id),
    )


async def get_warehouse(state: AppState, meta: RequestMetadata, warehouse_id: str) -> WarehouseRow:
    """The warehouse, for a caller allowed its metadata (active or not)."""
    warehouse = await require_warehouse(state, warehouse_id)
    await authorize_warehouse(state, meta, "get_metadata", warehouse.id)
    return warehouse
