"""dropGenericTable: the shared drop of tables and views (soft deletion, protection, purge).

``purgeRequested`` (default true, as for Iceberg tables: the catalog manages the location) removes
every file under the generic table's base location -- nothing outside it -- once the row is gone
for good: at once with a ``hard`` delete profile, when the soft deletion expires with ``soft``.
``force`` bypasses protection and soft deletion.
"""

from __future__ import annotations

from lakekeeper_host.server import events
from lakekeeper_host.server.generic_tables.load import resolve_generic_table
from lakekeeper_host.server.tabulars.deletion import drop_tabular
from lakekeeper_host.service.request import RequestMetadata
from lakekeeper_host.service.state import AppState
from lakekeeper_host.store.warehouses import WarehouseRow


async def drop_generic_table(
    state: AppState, meta: RequestMetadata, warehouse: WarehouseRow, parts: list[str], name: str, *, purge: bool,
    force: bool,
) -> None:
    warehouse, row = await resolve_generic_table(state, meta, warehouse, parts, name, "drop")

    await drop_tabular(state, meta, warehouse, row, purge=purge, force=force)

    # ------------------------------------------------ EVENTS
    events.generic_table_dropped(state, meta, warehouse, parts, row.name, row.id, prefix=warehouse.id)
