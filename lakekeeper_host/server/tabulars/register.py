"""What registering a table and registering a view share: where the metadata file may lie, what
it may name, and the new catalog row for it.

A registered file is the client's text: the catalog reads it only where no other table or view
lives, and adopts it only when it lies inside the location it declares, and everything else it
names does too (the catalog later reads those files for scan planning and deletes them when they
expire). Otherwise 400 ``InvalidLocation``, the same answer whether the file exists or not.
"""

from __future__ import annotations

from collections.abc import Iterable

from lakekeeper_host.errors import CatalogError, bad_request
from lakekeeper_host.ids import new_id
from lakekeeper_host.server.names import ident
from lakekeeper_host.server.tabulars.locations import check_location_available, require_inside_tabular
from lakekeeper_host.service.state import AppState
from lakekeeper_host.service.storage import Storage
from lakekeeper_host.store import tabulars as tabular_store
from lakekeeper_host.store.db import Executor
from lakekeeper_host.store.warehouses import WarehouseRow


async def check_registrable_file(
    state: AppState, warehouse: WarehouseRow, storage: Storage, metadata_location: str, *, exclude_id: str | None = None
) -> None:
    """Before the file is read: it may not lie in another tabular's folder (``exclude_id``: the
    table an ``overwrite`` replaces, whose own folder is fine)."""
    taken = await tabular_store.location_conflict(
        state.store, warehouse.id, storage.normalize_location(metadata_location), exclude_id=exclude_id
    )
    if taken is not None:
        raise bad_request(
            f"Invalid location: the metadata file {metadata_location} lies inside the location of another "
            "table or view",
            "InvalidLocation",
        )


def check_registered_paths(
    storage: Storage, metadata_location: str, location: str, named: Iterable[tuple[str, str]] = ()
) -> None:
    """After the file is read: it lies inside the ``location`` it declares, and so does every file it names."""
    require_inside_tabular(storage, metadata_location, location, "the metadata file")
    for what, path in named:
        require_inside_tabular(storage, path, location, what)


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
