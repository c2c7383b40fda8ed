"""Table and view locations: defaults from the storage layout, user-supplied ones, overlap checks,
and :func:`inside_tabular`, the one test before the catalog reads or deletes a location on a client's
behalf or with its own rights: inside the table's (or view's) own location, inside the warehouse."""

from __future__ import annotations

from typing import Any

from lakekeeper_host.errors import CatalogError, bad_request
from lakekeeper_host.server.namespaces.layout import render_layout_segment, storage_layout
from lakekeeper_host.service.state import AppState
from lakekeeper_host.service.storage import (
    Storage,
    is_sublocation,
    join_location,
)
from lakekeeper_host.store import tabulars as tabular_store
from lakekeeper_host.store.namespaces import NamespaceRow
from lakekeeper_host.store.warehouses import WarehouseRow


async def default_tabular_location(
    state: AppState, warehouse: WarehouseRow, namespace: NamespaceRow, name: str, tabular_id: str
) -> str:
    """``<namespace location>/<tabular-id>`` (or the layout's ``tabular`` template), normalised."""
    storage = await state.storage_for(warehouse)
    base = namespace.properties.get("location") or storage.base_location()
    layout = storage_layout(warehouse)
    segment = tabular_id
    if layout.get("type") in ("tabular-only", "full-hierarchy"):
        segment = render_layout_segment(str(layout.get("tabular", "{uuid}")), name=name, uuid=tabular_id)
    return storage.normalize_location(join_location(base, segment))


async def default_table_location(
    state: AppState, warehouse: WarehouseRow, namespace: NamespaceRow, name: str, tabular_id: str
) -> str:
    return await default_tabular_location(state, warehouse, namespace, name, tabular_id)


def inside_tabular(storage: Storage, location: str, tabular_location: str) -> bool:
    """Whether ``location`` lies inside ``tabular_location`` (path-segment aware, scheme aliases and
    ``file:/`` spellings normalised, no ``.``/``..`` segment) and inside the warehouse.

    The catalog asks this before it reads a file a table's metadata names (register, scan planning)
    and before it deletes anything (expired metadata files, purges, failed writes): what lies
    elsewhere belongs to another table, another warehouse or the host, whatever the metadata says.
    """
    try:
        if not storage.is_allowed_location(location):
            return False
        return is_sublocation(storage.normalize_location(location), storage.normalize_location(tabular_location))
    except CatalogError:  # not even a location of this storage
        return False


def require_inside_tabular(
    storage: Storage, location: str, tabular_location: str, what: str, *, error_type: str = "InvalidLocation"
) -> None:
    """400 naming ``what`` (e.g. ``the manifest-list of snapshot 3``) unless :func:`inside_tabular`."""
    if not inside_tabular(storage, location, tabular_location):
        raise bad_request(
            f"Invalid location: {what} {location} lies outside the table location {tabular_location}", error_type
        )


async def requested_location(state: AppState, warehouse: WarehouseRow, location: str) -> str:
    """A client-chosen location, checked to lie inside the warehouse; returned normalised."""
    storage = await state.storage_for(warehouse)
    if not storage.is_allowed_location(location):
        raise bad_request(
            f"Location {location} is not allowed: it must be inside the warehouse location {storage.base_location()}",
            "InvalidLocation",
        )
    return storage.normalize_location(location)


async def check_location_available(
    db: Any, warehouse: WarehouseRow, location: str, *, exclude_id: str | None = None
) -> None:
    """409 ``LocationAlreadyTaken`` when another tabular's location overlaps ``location``."""
    taken = await tabular_store.location_conflict(db, warehouse.id, location, exclude_id=exclude_id)
    if taken is not None:
        raise CatalogError(
            409, "LocationAlreadyTaken", f"Location {location} overlaps the location {taken} of another table or view"
        )
