"""dropView."""

from __future__ import annotations

from lakekeeper_host.errors import no_such_view
from lakekeeper_host.server import events
from lakekeeper_host.server.authorize import authorize
from lakekeeper_host.server.resolve import resolve_table
from lakekeeper_host.server.tabulars.deletion import drop_tabular
from lakekeeper_host.service.request import RequestMetadata
from lakekeeper_host.service.state import AppState
from lakekeeper_host.store.warehouses import WarehouseRow


async def drop_view(
    state: AppState,
    meta: RequestMetadata,
    warehouse: WarehouseRow,
    parts: list[str],
    name: str,
    *,
    purge: bool,
    force: bool,
) -> None:
    _, row = await resolve_table(state, warehouse, parts, name, typ="view")
    await authorize(state, meta, "drop", "view", row.id, warehouse.id, hidden=no_such_view(parts, name))

    await drop_tabular(state, meta, warehouse, row, purge=purge, force=force)

    # ------------------------------------------------ EVENTS
    events.view_dropped(state, meta, warehouse, parts, row.name, row.id, prefix=warehouse.id)
