"""registerView: adopt an existing view metadata file as a new view."""

from __future__ import annotations

from typing import Any

from lakekeeper_host.errors import no_such_namespace
from lakekeeper_host.server import events
from lakekeeper_host.server.authorize import authorize, created
from lakekeeper_host.server.names import conflict_for_existing, validate_namespace, validate_new_name
from lakekeeper_host.server.resolve import require_namespace
from lakekeeper_host.server.settled_write import Swap, settled_write
from lakekeeper_host.server.tables.register import register_request
from lakekeeper_host.server.tabulars.locations import requested_location
from lakekeeper_host.server.tabulars.register import (
    check_registered_paths,
    check_registrable_file,
    insert_registered,
)
from lakekeeper_host.server.tabulars.staged import forget_staged
from lakekeeper_host.server.views.create import claim_view_name
from lakekeeper_host.server.views.load import load_result, read_view_metadata, view_config
from lakekeeper_host.service.request import RequestMetadata
from lakekeeper_host.service.state import AppState
from lakekeeper_host.service.storage import DataAccess
from lakekeeper_host.store import tabulars as tabular_store
from lakekeeper_host.store.warehouses import WarehouseRow


async def register_view(
    state: AppState, meta: RequestMetadata, warehouse: WarehouseRow, parts: list[str], body: Any, access: DataAccess
) -> dict[str, Any]:
    """``registerView``: a view from an existing view metadata file inside the warehouse."""
    # ------------------------------------------------ VALIDATIONS
    name, metadata_location = register_request(body)
    validate_namespace(parts)
    validate_new_name(name, "View")
    await requested_location(state, warehouse, metadata_location)

    # ------------------------------------------------ AUTHZ
    namespace = await require_namespace(state, warehouse, parts)
    await authorize(state, meta, "create_view", "namespace", namespace.id, warehouse.id,
                    hidden=no_such_namespace(parts))
    existing = await tabular_store.get_tabular(state.store, namespace.id, name)
    if existing is not None:
        raise conflict_for_existing(existing.typ, parts, name, "view")

    # ------------------------------------------------ BUSINESS LOGIC
    storage = await state.storage_for(warehouse)
    await check_registrable_file(state, warehouse, storage, metadata_location)
    metadata = await read_view_metadata(storage, metadata_location)
    location = await requested_location(state, warehouse, metadata.location)
    check_registered_paths(storage, metadata_location, location)
    metadata_json = metadata.model_dump_json()
    async with settled_write(state, storage, creates=True) as write:
        replaced = await claim_view_name(write.tx, namespace.id, parts, name)
        view_id = await insert_registered(
            write.tx, warehouse, namespace.id, parts, name, typ="view", uuid=str(metadata.view_uuid),
            location=location, metadata_location=metadata_location, metadata_json=metadata_json,
        )
        # the registered file is the user's: never deleted, whatever the outcome
        write.expect(Swap(view_id, None, metadata_location, written=False))

    # ------------------------------------------------ EVENTS
    events.view_created(state, meta, warehouse, parts, name, view_id, body, prefix=warehouse.id)
    await forget_staged(state, replaced, warehouse.id)
    await created(state, meta, "view", view_id, ("namespace", namespace.id), warehouse.id)
    config = await view_config(state, storage, warehouse, view_id, location, access)
    return load_result(metadata_location, metadata_json, config)
