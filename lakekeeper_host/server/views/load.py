"""listViews / loadView / viewExists, and the response shape shared by every view operation."""

from __future__ import annotations

import json
from typing import Any

from pyiceberg.view.metadata import ViewMetadata

from lakekeeper_host.errors import no_such_view
from lakekeeper_host.server import metadata_io
from lakekeeper_host.server.authorize import authorize
from lakekeeper_host.server.resolve import lookup_tabular
from lakekeeper_host.server.tabulars.listing import list_tabular_identifiers
from lakekeeper_host.service.request import RequestMetadata
from lakekeeper_host.service.state import AppState
from lakekeeper_host.service.storage import DataAccess, Storage, StoragePermission, TableAccessRequest
from lakekeeper_host.store import tabulars as tabular_store
from lakekeeper_host.store.warehouses import WarehouseRow


async def view_config(
    state: AppState, storage: Storage, warehouse: WarehouseRow, row_id: str, location: str, access: DataAccess
) -> dict[str, str]:
    """``config`` of a LoadViewResult (read access to the view's location, like Lakekeeper)."""
    config = await storage.table_config(
        TableAccessRequest(
            table_location=location,
            permission=StoragePermission.READ,
            access=access,
            warehouse_id=warehouse.id,
            tabular_id=row_id,
            soft_delete_enabled=warehouse.soft_delete_seconds is not None,
        )
    )
    return dict(config.config)


def load_result(metadata_location: str, metadata_json: str, config: dict[str, str]) -> dict[str, Any]:
    return {"metadata-location": metadata_location, "metadata": json.loads(metadata_json), "config": config}


async def read_view_metadata(storage: Storage, location: str) -> ViewMetadata:
    """A view metadata file a client named (registerView): 404 when missing, 400 without quoting it
    when it is not view metadata."""
    raw = await metadata_io.read_file(storage, location)
    try:
        return ViewMetadata.model_validate_json(metadata_io.decode(raw))
    except metadata_io.FILE_CONTENT_ERRORS as exc:
        raise metadata_io.invalid_file(location, exc, "view") from None


async def list_views(
    state: AppState, meta: RequestMetadata, warehouse: WarehouseRow, parts: list[str], **paging: Any
) -> dict[str, Any]:
    return await list_tabular_identifiers(state, meta, warehouse, parts, "view", **paging)


async def load_view(
    state: AppState, meta: RequestMetadata, warehouse: WarehouseRow, parts: list[str], name: str, access: DataAccess
) -> dict[str, Any]:
    found = await lookup_tabular(state, warehouse, parts, name, typ="view", with_metadata=False, cached=True)
    await authorize(state, meta, "get_metadata", "view", found.tabular.id, warehouse.id,
                    hidden=no_such_view(parts, name))
    row = await tabular_store.with_current_metadata(state.store, found.tabular)
    if row is None:
        raise no_such_view(parts, name)
    storage = await state.storage_for(warehouse)
    config = await view_config(state, storage, warehouse, row.id, row.location, access)
    return load_result(row.metadata_location, row.metadata, config)


async def view_exists(
    state: AppState, meta: RequestMetadata, warehouse: WarehouseRow, parts: list[str], name: str
) -> None:
    found = await lookup_tabular(state, warehouse, parts, name, typ="view", with_metadata=False, cached=True)
    await authorize(state, meta, "get_metadata", "view", found.tabular.id, warehouse.id,
                    hidden=no_such_view(parts, name))
