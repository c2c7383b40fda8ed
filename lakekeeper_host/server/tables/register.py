"""registerTable: adopt an existing metadata file as a new table."""

from __future__ import annotations

from typing import Any

from lakekeeper_host.errors import CatalogError, bad_request, no_such_namespace, no_such_table
from lakekeeper_host.server import events, metadata_io
from lakekeeper_host.server.authorize import authorize, created, data_permission
from lakekeeper_host.server.names import (
    conflict_for_existing,
    ident,
    validate_namespace,
    validate_new_name,
)
from lakekeeper_host.server.resolve import (
    require_namespace,
)
from lakekeeper_host.server.settled_write import Swap, settled_write
from lakekeeper_host.server.tables.load import load_etag, load_result_json, table_config_for
from lakekeeper_host.server.tabulars.locations import check_location_available, requested_location
from lakekeeper_host.server.tabulars.register import (
    check_registered_paths,
    check_registrable_file,
    insert_registered,
)
from lakekeeper_host.server.tabulars.staged import forget_staged, remove_staged
from lakekeeper_host.server.warehouses.validation import effective_format_versions
from lakekeeper_host.service.request import RequestMetadata
from lakekeeper_host.service.state import AppState
from lakekeeper_host.service.storage import (
    DataAccess,
    StoragePermission,
)
from lakekeeper_host.store import tabulars as tabular_store
from lakekeeper_host.store.warehouses import WarehouseRow


def register_request(body: Any) -> tuple[str, str]:
    """``name`` and ``metadata-location`` of a registerTable/registerView body; 400 naming the field."""
    if not isinstance(body, dict):
        raise bad_request("Invalid request body: expected a JSON object")
    name, metadata_location = body.get("name"), body.get("metadata-location")
    for field, value in (("name", name), ("metadata-location", metadata_location)):
        if value is None or value == "":
            raise bad_request(f"Invalid request body: missing field `{field}` @ body.{field}")
        if not isinstance(value, str):
            raise bad_request(f"Invalid request body: `{field}` must be a string @ body.{field}")
    return name, metadata_location


async def register_table(
    state: AppState, meta: RequestMetadata, warehouse: WarehouseRow, parts: list[str], body: Any, access: DataAccess
) -> tuple[str, str]:
    """Register a table from an existing metadata file (``overwrite`` replaces a table's pointer)."""
    # ------------------------------------------------ VALIDATIONS
    name, metadata_location = register_request(body)
    overwrite = body.get("overwrite", False)
    if not isinstance(overwrite, bool):
        raise bad_request("Invalid request body: overwrite must be a boolean @ body.overwrite")
    validate_namespace(parts)
    validate_new_name(name)
    await requested_location(state, warehouse, metadata_location)

    # ------------------------------------------------ AUTHZ
    namespace = await require_namespace(state, warehouse, parts)
    await authorize(state, meta, "create_table", "namespace", namespace.id, warehouse.id,
                    hidden=no_such_namespace(parts))
    existing = await tabular_store.get_tabular(state.store, namespace.id, name)
    if existing is not None and (existing.typ != "table" or not overwrite):
        raise conflict_for_existing(existing.typ, parts, name, "table")
    if existing is not None:
        # replacing a table's metadata is a commit to that table, by whoever may commit to it; the
        # caller does not become its owner (a create in the namespace must not take a table over)
        await authorize(state, meta, "commit", "table", existing.id, warehouse.id, hidden=no_such_table(parts, name))

    # ------------------------------------------------ BUSINESS LOGIC
    storage = await state.storage_for(warehouse)
    replacing = existing.id if existing is not None else None
    await check_registrable_file(state, warehouse, storage, metadata_location, exclude_id=replacing)
    metadata, _ = await metadata_io.read_metadata(storage, metadata_location)

    allowed, _ = effective_format_versions(warehouse)
    if metadata.format_version not in allowed:
        raise bad_request(
            f"Format version {metadata.format_version} is not allowed in this warehouse", "FormatVersionNotAllowed"
        )
    location = await requested_location(state, warehouse, metadata.location)
    check_registered_paths(storage, metadata_location, location, metadata_io.referenced_files(metadata))
    metadata_json = metadata_io.to_json(metadata)
    replaced = None
    async with settled_write(state, storage, creates=True) as write:
        current = await tabular_store.get_tabular(write.tx, namespace.id, name, include_staged=True)
        if current is not None and current.staged:
            replaced = await remove_staged(write.tx, namespace.id, name)
            current = None
        if current is not None:
            if current.typ != "table" or not overwrite:
                raise conflict_for_existing(current.typ, parts, name, "table")
            await check_location_available(write.tx, warehouse, location, exclude_id=current.id)
            if current.id != (existing.id if existing is not None else None):  # appeared after the check
                await authorize(state, meta, "commit", "table", current.id, warehouse.id,
                                hidden=no_such_table(parts, name))
            if not await tabular_store.cas_update_metadata(
                write.tx, current.id, current.metadata_location, metadata_location, metadata_json, location=location
            ):
                raise CatalogError(
                    409, "CommitFailedException", f"Table {ident(parts, name)} was changed concurrently"
                )
            tabular_id = current.id
        else:
            tabular_id = await insert_registered(
                write.tx, warehouse, namespace.id, parts, name, typ="table", uuid=str(metadata.table_uuid),
                location=location, metadata_location=metadata_location, metadata_json=metadata_json,
            )
        row = await tabular_store.get_tabular_by_id(write.tx, tabular_id)
        # the registered file is the user's: never deleted, whatever the outcome
        expected = None if current is None else current.metadata_location
        write.expect(Swap(tabular_id, expected, metadata_location, written=False))

    # ------------------------------------------------ EVENTS
    # registerTable
    events.table_registered(state, meta, warehouse, parts, name, row.id, body, prefix=warehouse.id)
    await forget_staged(state, replaced, warehouse.id)
    if current is None:  # a new table: the caller owns it
        await created(state, meta, "table", row.id, ("namespace", namespace.id), warehouse.id)
        permission: StoragePermission | None = StoragePermission.READ_WRITE_DELETE
    else:
        permission = await data_permission(state, meta, warehouse.id, row.id)

    config = await table_config_for(state, meta, warehouse, parts, name, row, location, access, permission)
    etag = load_etag(warehouse, metadata_location, access, expires_at_ms=config.expires_at_ms if config else None,
                     permission=permission)
    return load_result_json(metadata_location, metadata_json, config), etag
