"""What registering a table and registering a view share: the new catalog row for a metadata file."""

from __future__ import annotations

from lakekeeper_host.errors import CatalogError
from lakekeeper_host.ids import new_id
from lakekeeper_host.server.names import ident
from lakekeeper_host.server.tabulars.locations import check_location_available
from lakekeeper_host.store import tabulars as tabular_store
from lakekeeper_host.store.db import Executor
from lakekeeper_host.store.warehouses import WarehouseRow


async def insert_registered(
    tx: Executor, warehouse: WarehouseRow, namespace_id: str, parts: list[str], name: str, *, typ: str,
    uuid: str, location: str, metadata_location: str, metadata_json: str,
) -> str:
    """Insert the row of a registered table or view and return its id: the metadata's own uuid unless
    another tabular has it already; 409 when the name is taken."""
    await check_location_available(tx, warehouse, location)
    tabular_id = new_id() if await tabular_store.tabular_id_taken(tx, uuid) else uuid
    inserted = await tabular_store.insert_tabular(
        tx, tabular_id=tabular_id, warehouse_id=warehouse.id, namespace_id=namespace_id, name=name,
        typ=typ, location=location, metadata_location=metadata_location, metadata=metadata_json,
    )
    if not inserted:
        label = "Table" if typ == "table" else "View"
        raise CatalogError(409, "AlreadyExistsException", f"{label} already exists: {ident(parts, name)}")
    return tabular_id
