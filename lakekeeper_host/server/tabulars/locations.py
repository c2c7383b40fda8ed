"""Table and view locations: defaults from the storage layout, user-supplied ones, overlap checks."""

from __future__ import annotations

from typing import Any

from lakekeeper_host.errors import CatalogError, bad_request
from lakekeeper_host.server.namespaces.layout import render_layout_segment, storage_layout
from lakekeeper_host.service.state import AppState
from lakekeeper_host.service.storage import (
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
