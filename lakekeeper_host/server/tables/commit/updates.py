"""Applying commit updates to table metadata: pyiceberg's update logic plus the Java server's id
re-use for schemas, specs and sort orders, format version 3 and lenient removals."""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError
from pyiceberg.exceptions import ResolveError
from pyiceberg.exceptions import ValidationError as IcebergValidationError
from pyiceberg.schema import Schema
from pyiceberg.table.metadata import TableMetadata, TableMetadataV1, TableMetadataV2, TableMetadataV3
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER
from pyiceberg.table.update import (
    AddPartitionSpecUpdate,
    AddSchemaUpdate,
    AddSnapshotUpdate,
    AddSortOrderUpdate,
    RemovePartitionSpecsUpdate,
    RemovePartitionStatisticsUpdate,
    RemovePropertiesUpdate,
    RemoveSchemasUpdate,
    RemoveSnapshotsUpdate,
    RemoveStatisticsUpdate,
    SetCurrentSchemaUpdate,
    SetDefaultSortOrderUpdate,
    SetDefaultSpecUpdate,
    SetLocationUpdate,
    SetPartitionStatisticsUpdate,
    SetPropertiesUpdate,
    SetStatisticsUpdate,
    UpgradeFormatVersionUpdate,
    _apply_table_update,
    _TableMetadataUpdateContext,
    _update_table_metadata_log,
)

from lakekeeper_host.errors import (
    CatalogError,
    bad_request,
)
from lakekeeper_host.server import metadata_io
from lakekeeper_host.server.names import check_properties_size
from lakekeeper_host.server.spec_json import check_sources, reason, schema_columns
from lakekeeper_host.server.tables.commit.parse import AddEncryptionKeyUpdate, RemoveEncryptionKeyUpdate
from lakekeeper_host.service.storage import Storage

SUPPORTED_FORMAT_VERSIONS = (1, 2, 3)


class _Context(_TableMetadataUpdateContext):
    """pyiceberg's change tracking plus the ids this commit assigned (for ``-1`` = last added)."""

    def __init__(self, *, allowed_format_versions: Sequence[int], storage: Storage | None) -> None:
        super().__init__()
        self.allowed_format_versions = allowed_format_versions
        self.storage = storage
        self.last_added_schema_id: int | None = None
        self.last_added_spec_id: int | None = None
        self.last_added_order_id: int | None = None
        # id the client gave an added schema/spec/order -> id it got here
        self.schema_ids: dict[int, int] = {}
        self.spec_ids: dict[int, int] = {}
        self.order_ids: dict[int, int] = {}


def empty_metadata() -> TableMetadata:
    """The base a table is built from by a create transaction (pyiceberg's convention)."""
    return TableMetadataV1.model_construct(last_column_id=-1, schema=Schema())


@functools.singledispatch
def _apply(update: Any, metadata: TableMetadata, ctx: _Context) -> TableMetadata:
    return _apply_table_update(update, metadata, ctx)


@_apply.register
def _(update: UpgradeFormatVersionUpdate, metadata: TableMetadata, ctx: _Context) -> TableMetadata:
    target = update.format_version
    if target not in SUPPORTED_FORMAT_VERSIONS:
        raise ValueError(f"Unsupported table format version: {target}")
    if target < metadata.format_version:
        raise ValueError(f"Cannot downgrade v{metadata.format_version} table to v{target}")
    if target == metadata.format_version:
        return metadata
    data = dict(metadata)
    data["format_version"] = target
    if target >= 3 and data.get("next_row_id") is None:
        data["next_row_id"] = 0  # row lineage starts with the upgrade
    ctx.add_update(update)
    return {2: TableMetadataV2, 3: TableMetadataV3}[target].model_construct(**data)


@_apply.register
def _(update: AddEncryptionKeyUpdate, metadata: TableMetadata, ctx: _Context) -> TableMetadata:
    if metadata.format_version < 3:
        raise ValueError(
            f"Cannot add an encryption key to a v{metadata.format_version} table: encryption keys need format version 3"
        )
    keys = list(getattr(metadata, "encryption_keys", None) or [])
    if any(key.key_id == update.encryption_key.key_id for key in keys):
        return metadata  # Java: a key id that is already there changes nothing
    ctx.add_update(update)
    data = dict(metadata)
    data["encryption_keys"] = [*keys, update.encryption_key]
    return metadata_io.TableMetadataV3WithKeys.model_construct(**data)


@_apply.register
def _(update: RemoveEncryptionKeyUpdate, metadata: TableMetadata, ctx: _Context) -> TableMetadata:
    keys = list(getattr(metadata, "encryption_keys", None) or [])
    kept = [key for key in keys if key.key_id != update.key_id]
    if len(kept) == len(keys):
        return metadata  # Java: removing a key that is not there changes nothing
    ctx.add_update(update)
    return metadata.model_copy(update={"encryption_keys": kept or None})


def _same_schema(one: Schema, two: Schema) -> bool:
    return one == two  # pyiceberg compares fields and identifier ids, not the schema id


@_apply.register
def _(update: AddSchemaUpdate, metadata: TableMetadata, ctx: _Context) -> TableMetadata:
    schema = update.schema_
    for existing in metadata.schemas:
        if _same_schema(existing, schema):  # Java re-uses the id of an identical schema
            ctx.schema_ids[schema.schema_id] = existing.schema_id
            ctx.last_added_schema_id = existing.schema_id
            return metadata
    assigned = max((s.schema_id for s in metadata.schemas), default=-1) + 1
    ctx.schema_ids[schema.schema_id] = assigned
    ctx.last_added_schema_id = assigned
    fresh = schema.model_copy(update={"schema_id": assigned})
    return _apply_table_update(AddSchemaUpdate(schema=fresh), metadata, ctx)


@_apply.register
def _(update: SetCurrentSchemaUpdate, metadata: TableMetadata, ctx: _Context) -> TableMetadata:
    schema_id = update.schema_id
    if schema_id == -1:
        if ctx.last_added_schema_id is None:
            raise ValueError("Cannot set current schema to last added schema: no schema has been added")
        schema_id = ctx.last_added_schema_id
    else:
        schema_id = ctx.schema_ids.get(schema_id, schema_id)
    return _apply_table_update(SetCurrentSchemaUpdate(schema_id=schema_id), metadata, ctx)


def _spec_key(spec: Any) -> tuple:
    return tuple((f.source_id, str(f.transform), f.name) for f in spec.fields)


@_apply.register
def _(update: AddPartitionSpecUpdate, metadata: TableMetadata, ctx: _Context) -> TableMetadata:
    spec = update.spec
    for existing in metadata.partition_specs:
        if _spec_key(existing) == _spec_key(spec):  # Java: compatible spec -> same id
            ctx.spec_ids[spec.spec_id] = existing.spec_id
            ctx.last_added_spec_id = existing.spec_id
            return metadata
    assigned = max((s.spec_id for s in metadata.partition_specs), default=-1) + 1
    ctx.spec_ids[spec.spec_id] = assigned
    ctx.last_added_spec_id = assigned
    return _apply_table_update(
        AddPartitionSpecUpdate(spec=spec.model_copy(update={"spec_id": assigned})), metadata, ctx
    )


@_apply.register
def _(update: SetDefaultSpecUpdate, metadata: TableMetadata, ctx: _Context) -> TableMetadata:
    spec_id = update.spec_id
    if spec_id == -1:
        if ctx.last_added_spec_id is None:
            raise ValueError("Cannot set default partition spec to last added spec: no spec has been added")
        spec_id = ctx.last_added_spec_id
    else:
        spec_id = ctx.spec_ids.get(spec_id, spec_id)
    return _apply_table_update(SetDefaultSpecUpdate(spec_id=spec_id), metadata, ctx)


@_apply.register
def _(update: AddSortOrderUpdate, metadata: TableMetadata, ctx: _Context) -> TableMetadata:
    order = update.sort_order
    if not order.fields:  # the unsorted order always has id 0
        assigned = UNSORTED_SORT_ORDER.order_id
        ctx.order_ids[order.order_id] = assigned
        ctx.last_added_order_id = assigned
        if any(o.order_id == assigned for o in metadata.sort_orders):
            return metadata
        return _apply_table_update(AddSortOrderUpdate(sort_order=UNSORTED_SORT_ORDER), metadata, ctx)
    for existing in metadata.sort_orders:
        if tuple(existing.fields) == tuple(order.fields):
            ctx.order_ids[order.order_id] = existing.order_id
            ctx.last_added_order_id = existing.order_id
            return metadata
    assigned = max([o.order_id for o in metadata.sort_orders] + [0]) + 1
    ctx.order_ids[order.order_id] = assigned
    ctx.last_added_order_id = assigned
    fresh = order.model_copy(update={"order_id": assigned})
    return _apply_table_update(AddSortOrderUpdate(sort_order=fresh), metadata, ctx)


@_apply.register
def _(update: SetDefaultSortOrderUpdate, metadata: TableMetadata, ctx: _Context) -> TableMetadata:
    order_id = update.sort_order_id
    if order_id == -1:
        if ctx.last_added_order_id is None:
            raise ValueError("Cannot set default sort order to last added order: no sort order has been added")
        order_id = ctx.last_added_order_id
    else:
        order_id = ctx.order_ids.get(order_id, order_id)
    return _apply_table_update(SetDefaultSortOrderUpdate(sort_order_id=order_id), metadata, ctx)


@_apply.register
def _(update: SetLocationUpdate, metadata: TableMetadata, ctx: _Context) -> TableMetadata:
    if ctx.storage is not None and not ctx.storage.is_allowed_location(update.location):
        raise bad_request(
            f"Location {update.location} is not allowed: it must be inside the warehouse location "
            f"{ctx.storage.base_location()}",
            "InvalidLocation",
        )
    current = getattr(metadata, "location", None)  # absent while building from empty
    if current and update.location.rstrip("/") == current.rstrip("/"):
        return metadata
    return _apply_table_update(SetLocationUpdate(location=update.location.rstrip("/")), metadata, ctx)


@_apply.register
def _(update: RemovePropertiesUpdate, metadata: TableMetadata, ctx: _Context) -> TableMetadata:
    present = [key for key in update.removals if key in metadata.properties]
    if not present:  # Java ignores keys that are not set
        return metadata
    return _apply_table_update(RemovePropertiesUpdate(removals=present), metadata, ctx)


@_apply.register
def _(update: RemoveSnapshotsUpdate, metadata: TableMetadata, ctx: _Context) -> TableMetadata:
    existing = {s.snapshot_id for s in metadata.snapshots}
    ids = [i for i in update.snapshot_ids if i in existing]  # already expired concurrently: fine
    if not ids:
        return metadata
    metadata = _apply_table_update(RemoveSnapshotsUpdate(snapshot_ids=ids), metadata, ctx)
    # Java drops the partition statistics of removed snapshots too (pyiceberg 0.12 only the statistics)
    kept = [s for s in metadata.partition_statistics if s.snapshot_id not in ids]
    if len(kept) != len(metadata.partition_statistics):
        metadata = metadata.model_copy(update={"partition_statistics": kept})
    return metadata


@_apply.register
def _(update: RemoveStatisticsUpdate, metadata: TableMetadata, ctx: _Context) -> TableMetadata:
    if not any(s.snapshot_id == update.snapshot_id for s in metadata.statistics):
        return metadata  # Java: removing statistics that are not there changes nothing
    return _apply_table_update(update, metadata, ctx)


@_apply.register
def _(update: RemovePartitionStatisticsUpdate, metadata: TableMetadata, ctx: _Context) -> TableMetadata:
    if not any(s.snapshot_id == update.snapshot_id for s in metadata.partition_statistics):
        return metadata
    return _apply_table_update(update, metadata, ctx)


@_apply.register
def _(update: RemoveSchemasUpdate, metadata: TableMetadata, ctx: _Context) -> TableMetadata:
    existing = {s.schema_id for s in metadata.schemas}
    ids = [i for i in update.schema_ids if i in existing]
    if not ids:
        return metadata
    return _apply_table_update(RemoveSchemasUpdate(schema_ids=ids), metadata, ctx)


@_apply.register
def _(update: RemovePartitionSpecsUpdate, metadata: TableMetadata, ctx: _Context) -> TableMetadata:
    existing = {s.spec_id for s in metadata.partition_specs}
    ids = [i for i in update.spec_ids if i in existing]
    if not ids:
        return metadata
    return _apply_table_update(RemovePartitionSpecsUpdate(spec_ids=ids), metadata, ctx)


# table properties that cannot change once set (Lakekeeper; the Iceberg spec's catalog security
# requirements for encryption): setting the same value again is fine, a different value or a removal is not
IMMUTABLE_TABLE_PROPERTIES = ("encryption.key-id",)


def _check_immutable_properties(update: Any, previous: dict[str, str]) -> None:
    """Against the properties the table had before this commit (as Lakekeeper: the first commit that sets
    an immutable property may set it)."""
    if isinstance(update, SetPropertiesUpdate):
        for key, value in previous.items():
            if key in update.updates and update.updates[key] != value:
                raise bad_request(f"Cannot modify immutable property '{key}'", "ImmutablePropertyModification")
    elif isinstance(update, RemovePropertiesUpdate):
        for key in previous:
            if key in update.removals:
                raise bad_request(f"Cannot remove immutable property '{key}'", "ImmutablePropertyRemoval")


def _check_source_columns(update: Any, metadata: TableMetadata, path: str) -> None:
    """A new spec or sort order must use columns of the schema current at that point of the commit."""
    if isinstance(update, AddPartitionSpecUpdate):
        fields, where = update.spec.fields, f"{path}.spec"
    elif isinstance(update, AddSortOrderUpdate):
        fields, where = update.sort_order.fields, f"{path}.sort-order"
    else:
        return
    if not fields or not getattr(metadata, "schemas", None):
        return  # a table being built from empty metadata has no schema yet: the final check covers it
    check_sources(fields, schema_columns(metadata.schema()), where)


def named_files(updates: Sequence[Any]) -> list[tuple[str, str]]:
    """``(what, location)`` of the files a commit's updates point the table at (each must lie inside it)."""
    named = []
    for update in updates:
        if isinstance(update, AddSnapshotUpdate):
            snapshot = update.snapshot
            named.append((f"the manifest-list of snapshot {snapshot.snapshot_id}", snapshot.manifest_list))
        elif isinstance(update, SetStatisticsUpdate):
            statistics = update.statistics
            named.append((f"the statistics-path of snapshot {statistics.snapshot_id}", statistics.statistics_path))
        elif isinstance(update, SetPartitionStatisticsUpdate):
            statistics = update.partition_statistics
            named.append(
                (f"the partition statistics-path of snapshot {statistics.snapshot_id}", statistics.statistics_path)
            )
    return named


def apply_updates(
    base: TableMetadata | None,
    updates: Sequence[Any],
    *,
    base_location: str | None,
    allowed_format_versions: Sequence[int] = SUPPORTED_FORMAT_VERSIONS,
    storage: Storage | None = None,
) -> tuple[TableMetadata, bool]:
    """(new metadata, changed). ``base=None`` builds a new table from empty metadata.

    Invalid updates are 400 ``BadRequestException``; a format version outside the warehouse
    policy is 400 ``FormatVersionNotAllowed``.
    """
    ctx = _Context(allowed_format_versions=allowed_format_versions, storage=storage)
    start = base if base is not None else empty_metadata()
    metadata = start
    try:
        immutable = {key: start.properties[key] for key in IMMUTABLE_TABLE_PROPERTIES if key in start.properties}
        for index, update in enumerate(updates):
            _check_immutable_properties(update, immutable)
            _check_source_columns(update, metadata, f"updates[{index}]")
            metadata = _apply(update, metadata, ctx)
        if not ctx.has_changes():
            return start, False
        if base is not None and base_location:
            metadata = _update_table_metadata_log(metadata, base_location, base.last_updated_ms)
        if base is None or base.last_updated_ms == metadata.last_updated_ms:
            metadata = metadata.model_copy(update={"last_updated_ms": int(time.time() * 1000)})
        metadata.spec().check_compatible(metadata.schema())
        metadata.sort_order().check_compatible(metadata.schema())
        if base is None or metadata.properties is not base.properties:
            check_properties_size(metadata.properties, "table")
        metadata = revalidated(metadata)
    except CatalogError:
        raise
    except (ValueError, ValidationError, IcebergValidationError, ResolveError, KeyError, TypeError,
            AttributeError) as exc:
        raise bad_request(f"Invalid table update: {_message(exc)}", "InvalidTableUpdate") from None
    if (base is None or metadata.format_version != base.format_version) and (
        metadata.format_version not in allowed_format_versions
    ):
        raise bad_request(
            f"Format version {metadata.format_version} is not allowed in this warehouse "
            f"(allowed: {', '.join(map(str, allowed_format_versions))})",
            "FormatVersionNotAllowed",
        )
    return metadata, True


def revalidated(metadata: TableMetadata) -> TableMetadata:
    """The metadata built again through its model's validators (schema, spec and sort-order ids, refs).

    The nested snapshots, schemas and specs are already-validated objects, which pydantic takes as
    they are: a commit costs the same whatever the length of the table's history (dumping and
    re-parsing the whole document cost a third of a commit at a few hundred snapshots).
    """
    model = type(metadata)
    data = {field.alias or name: getattr(metadata, name) for name, field in model.model_fields.items()}
    if metadata.format_version == 1:
        # v1's validators read the partition specs as JSON (they derive last-partition-id from them)
        data["partition-specs"] = [spec.model_dump() for spec in metadata.partition_specs]
    return model.model_validate(data)


def _message(exc: Exception) -> str:
    return reason(exc)
