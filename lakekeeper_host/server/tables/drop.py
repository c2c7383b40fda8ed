"""dropTable (with or without purge; soft deletion per the warehouse's delete profile)."""

from __future__ import annotations

from lakekeeper_host.errors import no_such_table
from lakekeeper_host.server import events
from lakekeeper_host.server.authorize import authorize
from lakekeeper_host.server.resolve import (
    resolve_table,
)
from lakekeeper_host.server.tabulars.deletion import drop_tabular
from lakekeeper_host.service.request import RequestMetadata
from lakekeeper_host.service.state import AppState
from lakekeeper_host.store.warehouses import WarehouseRow


async def drop_table(
    state: AppState,
    meta: RequestMetadata,
    warehouse: WarehouseRow,
    parts: list[str],
    name: str,
    *,
    purge: bool,
    force: bool,
) -> None:
    """Drop a table (staged ones too) honouring the warehouse delete profile and protection.

    ``purge`` is Lakekeeper's ``purgeRequested``, which defaults to true when the client does not
    send it (the API layer applies that default).
    """
    _, row = await resolve_table(state, warehouse, parts, name, include_staged=True)
    await authorize(state, meta, "drop", "table", row.id, warehouse.id, hidden=no_such_table(parts, name))

    await drop_tabular(state, meta, warehouse, row, purge=purge, force=force)

    # ------------------------------------------------ EVENTS
    # dropTable
    events.table_dropped(state, meta, warehouse, parts, name, row.id, prefix=warehouse.id)
