"""createTable (and stage-create): fresh metadata with ids assigned as the Java server assigns them."""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import ValidationError
from pyiceberg.exceptions import ValidationError as IcebergValidationError
from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC, PartitionSpec
from pyiceberg.schema import Schema, _SetFreshIDs, pre_order_visit
from pyiceberg.table.metadata import TableMetadata, new_table_metadata
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER, SortOrder
from pyiceberg.types import StructType

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
from lakekeeper_host.server.resolve import (
    require_namespace,
)
from lakekeeper_host.server.settled_write import Swap, settled_write
from lakekeeper_host.server.spec_json import check_partition_spec, check_schema, check_sort_order, invalid, reason
from lakekeeper_host.server.tables.commit.parse import validate_table_properties
from lakekeeper_host.server.tables.load import access_request, load_etag, load_result_json
from lakekeeper_host.server.tabulars.locations import (
    check_location_available,
    default_tabular_location,
    requested_location,
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


def _required(body: dict[str, Any], key: str) -> Any:
    if key not in body or body[key] is None:
        raise invalid(key, "is required")
    return body[key]


def _parse_model(cls: Any, value: Any, what: str) -> Any:
    try:
        return cls.model_validate(value)
    except (ValidationError, ValueError, TypeError, IcebergValidationError) as exc:
        raise bad_request(f"Invalid request body: {reason(exc, what)}") from None


class _FreshIdsKeepingDefaults(_SetFreshIDs):
    """pyiceberg's fresh-id assignment, but keeping ``initial-default``/``write-default`` (v3)."""

    def struct(self, struct: StructType, field_results: list[Any]) -> StructType:
        new_ids = [self._get_and_increment(f.field_id) for f in struct.fields]
        return StructType(
            *(
                f.model_copy(update={"field_id": new_id, "field_type": result()})
                for new_id, f, result in zip(new_ids, struct.fields, field_results, strict=True)
            )
        )


def new_metadata(
    schema: Schema, spec: PartitionSpec, order: SortOrder, location: str, properties: dict[str, str], table_uuid: str
) -> TableMetadata:
    """Create-time metadata with fresh ids (as the Java server assigns them); v3 starts row lineage."""
    metadata = new_table_metadata(schema, spec, order, location, properties, uuid.UUID(table_uuid))
    if metadata.format_version >= 2:
        fresh = pre_order_visit(schema, _FreshIdsKeepingDefaults())
        fresh = fresh.model_copy(update={"schema_id": metadata.current_schema_id})
        metadata = metadata.model_copy(update={"schemas": [fresh]})
    if metadata.format_version >= 3 and metadata.next_row_id is None:
        metadata = metadata.model_copy(update={"next_row_id": 0})
    return metadata


def format_version_for(warehouse: WarehouseRow, properties: dict[str, str]) -> int:
    """The requested ``format-version`` (or the warehouse default), checked against its policy."""

    allowed, default = effective_format_versions(warehouse)
    raw = properties.get("format-version")
    if raw is None:
        return default
    try:
        version = int(raw)
    except ValueError:
        raise bad_request(f"Invalid format-version {raw!r}", "InvalidFormatVersion") from None
    if version not in allowed:
        raise bad_request(
            f"Format version {version} is not allowed in this warehouse (allowed: {', '.join(map(str, allowed))})",
            "FormatVersionNotAllowed",
        )
    return version


async def create_table(
    state: AppState, meta: RequestMetadata, warehouse: WarehouseRow, parts: list[str], body: Any, access: DataAccess
) -> tuple[str, str | None]:
    """Create (or stage) a table; returns (LoadTableResult JSON, ETag or None for staged)."""
    # ------------------------------------------------ VALIDATIONS
    if not isinstance(body, dict):
        raise bad_request("Invalid request body: expected a JSON object")
    name = _required(body, "name")
    if not isinstance(name, str):
        raise invalid("name", "must be a string")
    validate_namespace(parts)
    validate_new_name(name)
    columns = check_schema(_required(body, "schema"), "schema")
    schema = _parse_model(Schema, body["schema"], "schema")
    spec = UNPARTITIONED_PARTITION_SPEC
    if body.get("partition-spec"):
        check_partition_spec(body["partition-spec"], "partition-spec", columns)
        spec = _parse_model(PartitionSpec, body["partition-spec"], "partition-spec")
    order = UNSORTED_SORT_ORDER
    if body.get("write-order"):
        check_sort_order(body["write-order"], "write-order", columns)
        order = _parse_model(SortOrder, body["write-order"], "write-order")
    for key, kind in (("location", str), ("stage-create", bool)):
        if body.get(key) is not None and not isinstance(body[key], kind):
            raise invalid(key, "must be a string" if kind is str else "must be true or false")
    properties = body.get("properties") or {}
    if not isinstance(properties, dict) or not all(isinstance(v, str) for v in properties.values()):
        raise bad_request("Invalid request body: properties must map strings to strings @ body.properties")
    properties = dict(properties)
    validate_table_properties(list(properties))
    check_properties_size(properties, "table")
    metadata_io.codec(properties)
    stage_create = bool(body.get("stage-create"))
    format_version = format_version_for(warehouse, properties)

    # ------------------------------------------------ AUTHZ
    namespace = await require_namespace(state, warehouse, parts)
    await authorize(state, meta, "create_table", "namespace", namespace.id, warehouse.id,
                    hidden=no_such_namespace(parts))
    existing = await tabular_store.get_tabular(state.store, namespace.id, name)
    if existing is not None:
        raise conflict_for_existing(existing.typ, parts, name, "table")

    # ------------------------------------------------ BUSINESS LOGIC
    storage = await state.storage_for(warehouse)
    tabular_id = new_id()
    if body.get("location"):
        location = await requested_location(state, warehouse, str(body["location"]))
    else:
        location = await default_tabular_location(state, warehouse, namespace, name, tabular_id)
    try:
        metadata = new_metadata(
            schema, spec, order, location, {**properties, "format-version": str(format_version)}, tabular_id
        )
    except (ValueError, ValidationError, KeyError, IcebergValidationError) as exc:
        raise bad_request(f"Invalid table definition: {reason(exc)}") from None
    if not await storage.is_empty(location):
        raise bad_request(  # Lakekeeper's words (its InvalidLocationError)
            f"Invalid location `{location}`: Unexpected files in location, tabular locations have to be empty",
            "InvalidLocation",
        )
    metadata_json = metadata_io.to_json(metadata)
    metadata_location = None
    if not stage_create:
        metadata_location = metadata_io.next_metadata_location(location, None, dict(metadata.properties))
        await metadata_io.write_metadata(storage, metadata_location, metadata_json)
    replaced = None
    async with settled_write(state, storage, files=[(metadata_location, location)], creates=True) as write:
        current = await tabular_store.get_tabular(write.tx, namespace.id, name, include_staged=True)
        if current is not None and not current.staged:
            raise conflict_for_existing(current.typ, parts, name, "table")
        if current is not None:  # a staged table of that name is replaced (Lakekeeper)
            replaced = await remove_staged(write.tx, namespace.id, name)
        await check_location_available(write.tx, warehouse, location)
        inserted = await tabular_store.insert_tabular(
            write.tx, tabular_id=tabular_id, warehouse_id=warehouse.id, namespace_id=namespace.id, name=name,
            typ="table", location=location, metadata_location=metadata_location, metadata=metadata_json,
            staged=stage_create,
        )
        if not inserted:
            raise CatalogError(409, "AlreadyExistsException", f"Table already exists: {ident(parts, name)}")
        row = await tabular_store.get_tabular_by_id(write.tx, tabular_id)
        # None: a staged table has no file yet
        write.expect(Swap(tabular_id, None, metadata_location, tabular_location=location))

    tabular_store.remember_metadata(state.store, metadata_location, metadata_json)

    # ------------------------------------------------ EVENTS
    # createTable (not for stage-create: the table exists only after its first commit)
    if not stage_create:
        events.table_created(state, meta, warehouse, parts, name, row.id, body, prefix=warehouse.id)
    await forget_staged(state, replaced, warehouse.id)
    await created(state, meta, "table", row.id, ("namespace", namespace.id), warehouse.id)

    # the creator gets read-write-delete credentials (Lakekeeper), whatever its data grants
    config = await storage.table_config(
        access_request(meta, warehouse, parts, name, row, location, access, StoragePermission.READ_WRITE_DELETE)
    )
    etag = None
    if metadata_location:
        etag = load_etag(warehouse, metadata_location, access, expires_at_ms=config.expires_at_ms)
    return load_result_json(metadata_location, metadata_json, config), etag
