"""createView."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lakekeeper_host.errors import CatalogError, bad_request, no_such_namespace
from lakekeeper_host.ids import new_id
from lakekeeper_host.server import events, metadata_io
from lakekeeper_host.server.authorize import authorize, created
from lakekeeper_host.server.names import (
    check_properties_size,
    conflict_for_existing,
    ident,
    validate_namespace,
    validate_new_name,
)
from lakekeeper_host.server.resolve import require_namespace
from lakekeeper_host.server.settled_write import Swap, settled_write
from lakekeeper_host.server.spec_json import invalid
from lakekeeper_host.server.tables.commit.parse import validate_table_properties
from lakekeeper_host.server.tabulars.locations import (
    check_location_available,
    default_tabular_location,
    requested_location,
)
from lakekeeper_host.server.tabulars.staged import forget_staged, remove_staged
from lakekeeper_host.server.views import metadata as vm
from lakekeeper_host.server.views.load import load_result, view_config
from lakekeeper_host.service.request import RequestMetadata
from lakekeeper_host.service.state import AppState
from lakekeeper_host.service.storage import DataAccess
from lakekeeper_host.store import tabulars as tabular_store
from lakekeeper_host.store.warehouses import WarehouseRow


def _string_map(value: Any, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise bad_request(f"Invalid request body: {what} must map strings to strings @ body.{what}")
    return dict(value)


def check_view_properties(keys: Sequence[str], properties: dict[str, str]) -> None:
    validate_table_properties(list(keys))
    check_properties_size(properties, "view")
    metadata_io.codec(properties)


async def claim_view_name(tx: Any, namespace_id: str, parts: Sequence[str], name: str) -> str | None:
    """Inside the create transaction: 409 when a table or view has the name.

    A *staged* table (an uncommitted ``stage-create``) does not keep a view from being created:
    it is removed, and its later commit fails with "View with same name already exists", as
    the Iceberg tests expect (``createTableViaTransactionThatAlreadyExistsAsView``). Returns the
    removed staged table's id (for :func:`forget_staged` after the commit).
    """
    current = await tabular_store.get_tabular(tx, namespace_id, name, include_staged=True)
    if current is not None and current.staged:
        return await remove_staged(tx, namespace_id, name)
    if current is not None:
        raise conflict_for_existing(current.typ, parts, name, "view")
    return None


async def create_view(
    state: AppState, meta: RequestMetadata, warehouse: WarehouseRow, parts: list[str], body: Any, access: DataAccess
) -> dict[str, Any]:
    """``createView``: a new view with one version; 409 when the name is a table or view."""
    # ------------------------------------------------ VALIDATIONS
    if not isinstance(body, dict):
        raise bad_request("Invalid request body: expected a JSON object")
    name = body.get("name")
    if name is None:
        raise bad_request("Invalid request body: missing field `name` @ body.name")
    if not isinstance(name, str):
        raise invalid("name", "must be a string")
    validate_namespace(parts)
    validate_new_name(name, "View")
    for field in ("schema", "view-version"):
        if field not in body:
            raise bad_request(f"Invalid request body: missing field `{field}` @ body.{field}")
    schema = vm.parse_schema(body["schema"])
    version = vm.parse_view_version(body["view-version"])
    if not version.representations:
        raise bad_request("View must have at least one representation.", "EmptyView")
    properties = _string_map(body.get("properties"), "properties")
    check_view_properties(list(properties), properties)
    requested = body.get("location")
    if requested is not None and not isinstance(requested, str):
        raise bad_request("Invalid request body: location must be a string @ body.location")

    # ------------------------------------------------ AUTHZ
    namespace = await require_namespace(state, warehouse, parts)
    await authorize(state, meta, "create_view", "namespace", namespace.id, warehouse.id,
                    hidden=no_such_namespace(parts))
    existing = await tabular_store.get_tabular(state.store, namespace.id, name)
    if existing is not None:
        raise conflict_for_existing(existing.typ, parts, name, "view")

    # ------------------------------------------------ BUSINESS LOGIC
    storage = await state.storage_for(warehouse)
    view_id = new_id()
    if requested:
        location = await requested_location(state, warehouse, requested)
    else:
        location = await default_tabular_location(state, warehouse, namespace, name, view_id)
    metadata = vm.new_view_metadata(
        location=location, schema=schema, view_version=version, properties=properties, view_uuid=view_id
    )
    metadata_json = metadata.model_dump_json()
    metadata_location = metadata_io.next_metadata_location(location, None, properties)
    await metadata_io.write_metadata(storage, metadata_location, metadata_json)
    async with settled_write(state, storage, files=[(metadata_location, location)], creates=True) as write:
        replaced = await claim_view_name(write.tx, namespace.id, parts, name)
        await check_location_available(write.tx, warehouse, location)
        inserted = await tabular_store.insert_tabular(
            write.tx, tabular_id=view_id, warehouse_id=warehouse.id, namespace_id=namespace.id, name=name,
            typ="view", location=location, metadata_location=metadata_location, metadata=metadata_json,
        )
        if not inserted:
            raise CatalogError(409, "AlreadyExistsException", f"View already exists: {ident(parts, name)}")
        write.expect(Swap(view_id, None, metadata_location, tabular_location=location))

    # ------------------------------------------------ EVENTS
    events.view_created(state, meta, warehouse, parts, name, view_id, body, prefix=warehouse.id)
    await forget_staged(state, replaced, warehouse.id)
    await created(state, meta, "view", view_id, ("namespace", namespace.id), warehouse.id)
    config = await view_config(state, storage, warehouse, view_id, location, access)
    return load_result(metadata_location, metadata_json, config)
