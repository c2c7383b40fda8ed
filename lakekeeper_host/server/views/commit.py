"""replaceView: apply view updates with the same write-then-swap protocol as table commits."""

from __future__ import annotations

import asyncio
import random
from typing import Any

from pyiceberg.table.update import RemovePropertiesUpdate, SetPropertiesUpdate

from lakekeeper_host.errors import bad_request, commit_failed, no_such_view
from lakekeeper_host.server import events, metadata_io
from lakekeeper_host.server.authorize import authorize
from lakekeeper_host.server.names import check_properties_size, ident
from lakekeeper_host.server.resolve import resolve_table
from lakekeeper_host.server.settled_write import Swap, settled_write
from lakekeeper_host.server.tables.commit.parse import validate_table_properties
from lakekeeper_host.server.tabulars.locations import check_location_available, requested_location
from lakekeeper_host.server.views import metadata as vm
from lakekeeper_host.server.views.create import check_view_properties
from lakekeeper_host.server.views.load import load_result, view_config
from lakekeeper_host.service.request import RequestMetadata
from lakekeeper_host.service.state import AppState
from lakekeeper_host.service.storage import DataAccess
from lakekeeper_host.store import tabulars as tabular_store
from lakekeeper_host.store.warehouses import WarehouseRow

MAX_COMMIT_ATTEMPTS = 10


def parse_commit(body: Any) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """(requirements, updates) of a CommitViewRequest; unknown types are 400 naming them."""
    if not isinstance(body, dict):
        raise bad_request("Invalid request body: a view commit must be a JSON object")
    if "updates" not in body:
        raise bad_request("Invalid request body: missing field `updates` @ body.updates")
    requirements = vm.parse_view_requirements(body.get("requirements"))
    updates = vm.parse_view_updates(body["updates"])
    for update in updates:
        if isinstance(update, SetPropertiesUpdate):
            check_view_properties(list(update.updates), dict(update.updates))
        elif isinstance(update, RemovePropertiesUpdate):
            validate_table_properties(list(update.removals))
    return requirements, updates


async def commit_view(
    state: AppState,
    meta: RequestMetadata,
    warehouse: WarehouseRow,
    parts: list[str],
    name: str,
    body: Any,
    access: DataAccess,
) -> dict[str, Any]:
    """``replaceView``: apply requirements and updates with compare-and-swap and server-side retry."""
    # ------------------------------------------------ VALIDATIONS
    requirements, updates = parse_commit(body)
    storage = await state.storage_for(warehouse)

    # ------------------------------------------------ AUTHZ
    _, row = await resolve_table(state, warehouse, parts, name, typ="view")
    await authorize(state, meta, "commit", "view", row.id, warehouse.id, hidden=no_such_view(parts, name))

    # ------------------------------------------------ BUSINESS LOGIC
    for attempt in range(MAX_COMMIT_ATTEMPTS):
        if attempt:
            _, row = await resolve_table(state, warehouse, parts, name, typ="view")
        base = vm.parse_view_metadata(row.metadata)
        vm.validate_requirements(requirements, base)
        metadata, changed = vm.update_view_metadata(base, updates)
        if changed:
            check_properties_size(metadata.properties, "view")
        await state.contracts.check_view_updates(list(updates), metadata)
        if not changed:
            config = await view_config(state, storage, warehouse, row.id, row.location, access)
            return load_result(row.metadata_location, row.metadata, config)
        location = storage.normalize_location(metadata.location)
        moved = location != row.location
        if moved:
            location = await requested_location(state, warehouse, metadata.location)
        metadata_json = metadata.model_dump_json()
        metadata_location = metadata_io.next_metadata_location(
            location, row.metadata_location, dict(metadata.properties)
        )
        await metadata_io.write_metadata(storage, metadata_location, metadata_json)
        async with settled_write(state, storage, files=[(metadata_location, location)]) as write:
            if moved:
                await check_location_available(write.tx, warehouse, location, exclude_id=row.id)
            swapped = await tabular_store.cas_update_metadata(
                write.tx,
                row.id,
                row.metadata_location,
                metadata_location,
                metadata_json,
                location=location if moved else None,
            )
            if swapped:
                write.expect(Swap(row.id, row.metadata_location, metadata_location, tabular_location=location))
        if not swapped:
            await metadata_io.delete_quietly(storage, [(metadata_location, location)])
            await asyncio.sleep(min(0.2, 0.005 * 2**attempt) * (0.5 + random.random()))
            continue

        # ------------------------------------------------ EVENTS
        events.view_updated(state, meta, warehouse, parts, row.name, row.id, body, prefix=warehouse.id)
        config = await view_config(state, storage, warehouse, row.id, location, access)
        return load_result(metadata_location, metadata_json, config)
    # no "Commit failed: " here: the Java client puts it in front of every 409 of a commit
    raise commit_failed(
        f"View {ident(parts, name)} was changed concurrently during {MAX_COMMIT_ATTEMPTS} attempts to "
        "apply this commit; retry it"
    )
