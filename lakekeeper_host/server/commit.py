"""Table commits: ``POST .../tables/{table}`` and ``POST .../transactions/commit``.

The protocol (Lakekeeper §3.2, Iceberg ``CatalogHandlers.commit``):

1. read the current metadata of every table in the request;
2. check the requirements against it -- a failure is a 409 ``CommitFailedException`` with the
   Java wording ("Requirement failed: current schema changed: expected id 0 != 1");
3. apply the updates (pyiceberg's update logic, plus the Java server's id re-use for schemas,
   specs and sort orders, format version 3, and lenient removals);
4. write each new metadata file to storage -- BEFORE the database changes;
5. in ONE database transaction, compare-and-swap every table's ``metadata_location``;
6. if any swap loses a race, roll back, delete the files just written and start again at 1:
   when the requirements still hold against the newer metadata, the updates are re-applied to
   it (server-side retry); when they do not, step 2 answers 409. Never a 500 for a conflict.
7. a failure before the COMMIT is sent changed nothing: the files are deleted. A failure of the
   COMMIT itself (connection lost, request cancelled by ``MAX_REQUEST_TIME``) has an unknown
   outcome: :func:`settle_uncertain_commit` reads the tables again to find out, and only deletes
   the files when the swap certainly did not land; when it cannot tell, the files stay and the
   answer is 500 ``CommitStateUnknownException`` (clients then keep their own files too).
   The create paths (createTable, registerTable, createView, registerView) settle their INSERT
   the same way.

A request with no effective change writes nothing and returns the current metadata.
Committing ``assert-create`` to a staged table (``stage-create``) builds the metadata from empty
and un-stages the row; with no row at all the table is created by the commit.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import random
import time
import uuid
from collections.abc import Sequence
from typing import Annotated, Any, Literal, Union, get_args

from attrs import define, frozen
from pydantic import Field, TypeAdapter, ValidationError
from pyiceberg.exceptions import ResolveError
from pyiceberg.schema import Schema
from pyiceberg.table.metadata import TableMetadata, TableMetadataV1, TableMetadataV2, TableMetadataV3
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER
from pyiceberg.table.update import (
    AddPartitionSpecUpdate,
    AddSchemaUpdate,
    AddSortOrderUpdate,
    AssertCreate,
    AssertCurrentSchemaId,
    AssertDefaultSortOrderId,
    AssertDefaultSpecId,
    AssertLastAssignedFieldId,
    AssertLastAssignedPartitionId,
    AssertRefSnapshotId,
    AssertTableUUID,
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
    SetPropertiesUpdate,
    TableRequirement,
    TableUpdate,
    UpgradeFormatVersionUpdate,
    _apply_table_update,
    _TableMetadataUpdateContext,
    _update_table_metadata_log,
)
from pyiceberg.typedef import IcebergBaseModel

from lakekeeper_host.errors import (
    CatalogError,
    bad_request,
    commit_failed,
    commit_state_unknown,
    no_such_namespace,
    no_such_table,
    service_unavailable,
)
from lakekeeper_host.server import events, metadata_io
from lakekeeper_host.server.context import (
    conflict_for_existing,
    ident,
    refresh_warehouse,
    validate_name,
    validate_namespace,
)
from lakekeeper_host.service.state import AppState
from lakekeeper_host.service.storage import Storage
from lakekeeper_host.store import new_id
from lakekeeper_host.store import tabulars as tabular_store
from lakekeeper_host.store.cache import PARSED_WEIGHT
from lakekeeper_host.store.tabulars import TabularRow
from lakekeeper_host.store.warehouses import WarehouseRow

log = logging.getLogger(__name__)

MAX_COMMIT_ATTEMPTS = 10
SUPPORTED_FORMAT_VERSIONS = (1, 2, 3)



class AddEncryptionKeyUpdate(IcebergBaseModel):
    """``add-encryption-key`` (spec, format v3); pyiceberg 0.12 has no model for it."""

    action: Literal["add-encryption-key"] = Field(default="add-encryption-key")
    encryption_key: metadata_io.EncryptedKey = Field(alias="encryption-key")


class RemoveEncryptionKeyUpdate(IcebergBaseModel):
    """``remove-encryption-key`` (spec, format v3)."""

    action: Literal["remove-encryption-key"] = Field(default="remove-encryption-key")
    key_id: str = Field(alias="key-id")


# pyiceberg's discriminated union of table updates plus the two above
_UPDATES = TypeAdapter(
    list[
        Annotated[
            Union[*get_args(get_args(TableUpdate)[0]), AddEncryptionKeyUpdate, RemoveEncryptionKeyUpdate],  # noqa: UP007
            Field(discriminator="action"),
        ]
    ]
)
_REQUIREMENTS = TypeAdapter(list[TableRequirement])
_KNOWN_ACTIONS = {
    "assign-uuid", "upgrade-format-version", "add-schema", "set-current-schema", "add-spec",
    "set-default-spec", "add-sort-order", "set-default-sort-order", "add-snapshot", "set-snapshot-ref",
    "remove-snapshots", "remove-snapshot-ref", "set-location", "set-properties", "remove-properties",
    "set-statistics", "remove-statistics", "set-partition-statistics", "remove-partition-statistics",
    "remove-partition-specs", "remove-schemas", "add-encryption-key", "remove-encryption-key",
}  # fmt: skip
_KNOWN_REQUIREMENTS = {
    "assert-create", "assert-table-uuid", "assert-ref-snapshot-id", "assert-last-assigned-field-id",
    "assert-current-schema-id", "assert-last-assigned-partition-id", "assert-default-spec-id",
    "assert-default-sort-order-id",
}  # fmt: skip
# write.metadata.* keys a client may set; the rest (and write.data.path*) are server-managed
ALLOWED_WRITE_METADATA_PROPERTIES = (
    metadata_io.PREVIOUS_VERSIONS_MAX,
    metadata_io.DELETE_AFTER_COMMIT,
    metadata_io.CODEC_PROPERTY,
)


# ---------------------------------------------------------------- request parsing


@frozen
class TableChange:
    """One table's part of a commit: identifier, requirements, updates (and the raw JSON)."""

    namespace: tuple[str, ...]
    name: str
    requirements: tuple[Any, ...]
    updates: tuple[Any, ...]
    raw: dict[str, Any]

    @property
    def creates(self) -> bool:
        return any(isinstance(r, AssertCreate) for r in self.requirements)


def parse_change(body: Any, *, namespace: Sequence[str] | None = None, name: str | None = None) -> TableChange:
    """A ``CommitTableRequest``. ``namespace``/``name`` come from the URL when given; otherwise
    (``transactions/commit``) the body's ``identifier`` is required."""
    if not isinstance(body, dict):
        raise bad_request("Invalid request body: a commit must be a JSON object")
    identifier = body.get("identifier")
    if namespace is None or name is None:
        if not isinstance(identifier, dict):
            raise bad_request("Invalid request body: every table change needs an identifier @ body.identifier")
        namespace, name = _identifier(identifier)
    validate_namespace(namespace)
    validate_name(name)
    updates = _parse_list(body.get("updates"), "updates", "action", _KNOWN_ACTIONS, _UPDATES, required=True)
    requirements = _parse_list(
        body.get("requirements"), "requirements", "type", _KNOWN_REQUIREMENTS, _REQUIREMENTS, required=False
    )
    validate_property_updates(updates)
    return TableChange(tuple(namespace), name, tuple(requirements), tuple(updates), body)


def _identifier(value: dict[str, Any]) -> tuple[list[str], str]:
    namespace, name = value.get("namespace"), value.get("name")
    if not isinstance(namespace, list) or not all(isinstance(p, str) for p in namespace):
        raise bad_request("Invalid request body: identifier.namespace must be a list of strings")
    if not isinstance(name, str):
        raise bad_request("Invalid request body: identifier.name must be a string")
    return list(namespace), name


def _parse_list(raw: Any, what: str, tag: str, known: set[str], adapter: TypeAdapter, *, required: bool) -> list[Any]:
    if raw is None:
        if required:
            raise bad_request(f"Invalid request body: missing field `{what}`")
        return []
    if not isinstance(raw, list):
        raise bad_request(f"Invalid request body: `{what}` must be a list")
    for item in raw:
        kind = item.get(tag) if isinstance(item, dict) else None
        if kind not in known:
            noun = "table update action" if tag == "action" else "table requirement type"
            raise bad_request(f"Unsupported {noun}: {kind!r}")
    try:
        return adapter.validate_python(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        raise bad_request(f"Invalid {what}: {first.get('msg')} at {where}") from None


def validate_table_properties(keys: Sequence[str]) -> None:
    """Server-managed keys may not be set or removed (Lakekeeper: 409 ``FailedToSetProperties``)."""
    for key in keys:
        managed = (
            key.startswith("write.metadata")
            and key not in ALLOWED_WRITE_METADATA_PROPERTIES
            and not key.startswith("write.metadata.metrics.")
        ) or key.startswith("write.data.path")
        if managed:
            raise CatalogError(409, "FailedToSetProperties", f"Properties contain unsupported property: '{key}'")


def validate_property_updates(updates: Sequence[Any]) -> None:
    for update in updates:
        if isinstance(update, SetPropertiesUpdate):
            validate_table_properties(list(update.updates))
        elif isinstance(update, RemovePropertiesUpdate):
            validate_table_properties(list(update.removals))


# ---------------------------------------------------------------- requirements (Java wording)


def _fail(message: str) -> CatalogError:
    return commit_failed(message)


def check_requirement(requirement: Any, base: TableMetadata | None) -> None:
    """Validate one requirement; the messages are those of Iceberg's ``UpdateRequirement``."""
    if isinstance(requirement, AssertCreate):
        if base is not None:
            raise _fail("Requirement failed: table already exists")
        return
    if isinstance(requirement, (AssertLastAssignedFieldId, AssertLastAssignedPartitionId)) and base is None:
        return  # Java: vacuous on a table being created
    if base is None:
        raise _fail("Requirement failed: current table metadata is missing")
    if isinstance(requirement, AssertTableUUID):
        if str(requirement.uuid).lower() != str(base.table_uuid).lower():
            raise _fail(f"Requirement failed: UUID does not match: expected {base.table_uuid} != {requirement.uuid}")
    elif isinstance(requirement, AssertRefSnapshotId):
        ref = base.refs.get(requirement.ref)
        if ref is not None:
            kind = "branch" if str(ref.snapshot_ref_type).lower().endswith("branch") else "tag"
            if requirement.snapshot_id is None:
                raise _fail(f"Requirement failed: {kind} {requirement.ref} was created concurrently")
            if requirement.snapshot_id != ref.snapshot_id:
                raise _fail(
                    f"Requirement failed: {kind} {requirement.ref} has changed: "
                    f"expected id {requirement.snapshot_id} != {ref.snapshot_id}"
                )
        elif requirement.snapshot_id is not None:
            raise _fail(
                f"Requirement failed: branch or tag {requirement.ref} is missing, expected {requirement.snapshot_id}"
            )
    elif isinstance(requirement, AssertLastAssignedFieldId):
        if base.last_column_id != requirement.last_assigned_field_id:
            raise _fail(
                "Requirement failed: last assigned field id changed: "
                f"expected id {requirement.last_assigned_field_id} != {base.last_column_id}"
            )
    elif isinstance(requirement, AssertCurrentSchemaId):
        if base.current_schema_id != requirement.current_schema_id:
            raise _fail(
                "Requirement failed: current schema changed: "
                f"expected id {requirement.current_schema_id} != {base.current_schema_id}"
            )
    elif isinstance(requirement, AssertLastAssignedPartitionId):
        if base.last_partition_id != requirement.last_assigned_partition_id:
            raise _fail(
                "Requirement failed: last assigned partition id changed: "
                f"expected id {requirement.last_assigned_partition_id} != {base.last_partition_id}"
            )
    elif isinstance(requirement, AssertDefaultSpecId):
        if base.default_spec_id != requirement.default_spec_id:
            raise _fail(
                "Requirement failed: default partition spec changed: "
                f"expected id {requirement.default_spec_id} != {base.default_spec_id}"
            )
    elif isinstance(requirement, AssertDefaultSortOrderId):
        if base.default_sort_order_id != requirement.default_sort_order_id:
            raise _fail(
                "Requirement failed: default sort order changed: "
                f"expected id {requirement.default_sort_order_id} != {base.default_sort_order_id}"
            )


# ---------------------------------------------------------------- applying updates


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
        for update in updates:
            metadata = _apply(update, metadata, ctx)
        if not ctx.has_changes():
            return start, False
        if base is not None and base_location:
            metadata = _update_table_metadata_log(metadata, base_location, base.last_updated_ms)
        if base is None or base.last_updated_ms == metadata.last_updated_ms:
            metadata = metadata.model_copy(update={"last_updated_ms": int(time.time() * 1000)})
        metadata.spec().check_compatible(metadata.schema())
        metadata.sort_order().check_compatible(metadata.schema())
        metadata = revalidated(metadata)
    except CatalogError:
        raise
    except (ValueError, ValidationError, ResolveError, KeyError, TypeError, AttributeError) as exc:
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
    if isinstance(exc, ValidationError):
        errors = exc.errors()
        return "; ".join(str(e.get("msg")) for e in errors[:3]) if errors else str(exc)
    return str(exc)


# ---------------------------------------------------------------- the commit loop


@frozen
class CommitResult:
    """The outcome for one table: its row (before), the new metadata and where it was written."""

    row: TabularRow
    metadata: TableMetadata
    metadata_json: str
    metadata_location: str
    changed: bool


@define
class _Pending:
    change: TableChange
    namespace_id: str
    row: TabularRow | None
    base: TableMetadata | None
    metadata: TableMetadata
    metadata_json: str = ""
    metadata_location: str = ""
    changed: bool = True
    table_location: str = ""
    written: bool = False


class _LostRace(Exception):
    """A compare-and-swap found the table changed: roll back and try again."""

    def __init__(self, change: TableChange):
        super().__init__(ident(change.namespace, change.name))
        self.change = change


class _StaleWarehouse(Exception):
    """The warehouse row (maybe cached) is older than the database's: re-read it and start again."""


def _remember_parsed(state: AppState, metadata_location: str, metadata: TableMetadata, json_size: int) -> None:
    """Parsed metadata by location (immutable, so shared read-only): the next commit of the table
    on this replica skips reading and parsing it."""
    state.store.caches.metadata.put("parsed", metadata_location, metadata, json_size * PARSED_WEIGHT)


async def commit_tables(
    state: AppState, meta: Any, warehouse: WarehouseRow, changes: Sequence[TableChange]
) -> list[CommitResult]:
    """Commit every change atomically (all tables or none); see the module docstring."""
    # ------------------------------------------------ VALIDATIONS
    seen = set()
    for change in changes:
        key = (tuple(p.casefold() for p in change.namespace), change.name.casefold())
        if key in seen:
            raise bad_request(f"Table {ident(change.namespace, change.name)} appears more than once in the transaction",
                              "DuplicateTableInTransaction")
        seen.add(key)
    storage = await state.storage_for(warehouse)
    from lakekeeper_host.server.warehouses import effective_format_versions

    allowed, _ = effective_format_versions(warehouse)

    # ------------------------------------------------ BUSINESS LOGIC
    contended = changes[0]
    for attempt in range(MAX_COMMIT_ATTEMPTS):
        try:
            pending = [await _prepare(state, warehouse, storage, change, allowed) for change in changes]
        except _StaleWarehouse:  # changed on another replica: its storage profile may be new
            warehouse = await refresh_warehouse(state, warehouse.id)
            storage = await state.storage_for(warehouse)
            allowed, _ = effective_format_versions(warehouse)
            continue
        for item in pending:  # checkers see the CURRENT metadata (None: the commit creates the table)
            await state.contracts.check_table_updates(list(item.change.updates), item.base)
        commit_sent = False
        try:
            for item in pending:
                if item.changed:
                    await metadata_io.write_metadata(storage, item.metadata_location, item.metadata_json)
                    item.written = True
            async with state.store.transaction() as tx:
                for item in pending:
                    if item.changed:
                        await _swap(tx, warehouse, storage, item)
                commit_sent = True  # leaving the block sends COMMIT: from here on the outcome may be unknown
        except _LostRace as lost:
            await metadata_io.delete_quietly(storage, [p.metadata_location for p in pending if p.written])
            contended = lost.change
            await asyncio.sleep(min(0.2, 0.005 * 2**attempt) * (0.5 + random.random()))
            continue
        except BaseException as failure:
            if not commit_sent:  # rolled back: nothing changed
                await metadata_io.delete_quietly(storage, [p.metadata_location for p in pending if p.written])
                raise
            await settle_uncertain_commit(state, storage, [_swapped(p) for p in pending if p.changed], failure)
        for item in pending:
            if item.changed:
                tabular_store.remember_metadata(state.store, item.metadata_location, item.metadata_json)
                _remember_parsed(state, item.metadata_location, item.metadata, len(item.metadata_json))
        for item in pending:  # best effort, after the commit is durable
            if item.changed and item.base is not None:
                await metadata_io.delete_quietly(
                    storage,
                    metadata_io.expired_files(
                        item.base, item.row.metadata_location, item.metadata, item.metadata_location
                    ),
                )

        # ------------------------------------------------ EVENTS
        # updateTable: one per changed table, in request order
        events.tables_updated(
            state, meta, warehouse,
            [(p.change.namespace, p.change.name, p.row.id, p.change.raw) for p in pending if p.changed],
            prefix=warehouse.id,
        )  # fmt: skip
        return [_result(item) for item in pending]
    # no "Commit failed: " here: the Java client puts it in front of every 409 of a commit
    raise commit_failed(
        f"Table {ident(contended.namespace, contended.name)} was changed concurrently during "
        f"{MAX_COMMIT_ATTEMPTS} attempts to apply this commit; retry it"
    )


# ---------------------------------------------------------------- a COMMIT with an unknown outcome

# how long the re-read of an uncertain commit may take before the answer is "unknown"
VERIFY_SECONDS = 10.0


@frozen
class Swap:
    """One compare-and-swap of a transaction: the tabular, the location it expected (None: it was
    created or un-staged), the metadata file it was pointed at (None: a ``stage-create`` row) and
    whether this request wrote that file (False: a registered file is the user's, never deleted)."""

    tabular_id: str
    expected_location: str | None
    new_location: str | None
    written: bool = True


def _swapped(item: _Pending) -> Swap:
    assert item.row is not None  # set by _swap for a created table
    expected = None if item.base is None else item.row.metadata_location
    return Swap(item.row.id, expected, item.metadata_location)


def _landed(swap: Swap, row: TabularRow | None) -> bool | None:
    """Did ``swap`` land, judging by the tabular's row now? None: cannot tell.

    Another commit may already have followed ours, so the metadata log counts too: log entries
    are dropped oldest first, so ours (newer than the location we replaced) outlives that one.
    """
    if row is None:  # our INSERT would have made the row (ids are never re-used)
        return False if swap.expected_location is None else None
    if row.metadata_location == swap.new_location:
        return True
    if row.metadata_location == swap.expected_location:
        return False
    try:
        history = [e.get("metadata-file") for e in json.loads(row.metadata or "{}").get("metadata-log", [])]
    except (ValueError, AttributeError):
        return None
    if swap.new_location in history:
        return True
    if swap.expected_location is not None and swap.expected_location in history:
        return False
    return None


async def _read_rows(state: AppState, ids: list[str]) -> list[TabularRow | None]:
    # a write transaction: the primary, never a lagging read replica
    async with state.store.transaction() as tx:
        return [await tabular_store.get_tabular_by_id(tx, tabular_id) for tabular_id in ids]


async def commit_outcome(state: AppState, swaps: Sequence[Swap]) -> bool | None:
    """Whether one transaction's swaps landed (all, or -- atomic -- none); None: cannot tell."""
    try:
        # its own task: a fresh connection, not the one the failed COMMIT was sent on
        reading = asyncio.ensure_future(_read_rows(state, [s.tabular_id for s in swaps]))
        rows = await asyncio.wait_for(reading, VERIFY_SECONDS)
    except (Exception, asyncio.CancelledError) as exc:
        log.warning("could not re-read the tables of an uncertain commit: %r", exc)
        return None
    outcomes = {_landed(swap, row) for swap, row in zip(swaps, rows, strict=True)}
    return outcomes.pop() if len(outcomes) == 1 else None


async def settle_uncertain_commit(
    state: AppState, storage: Storage, swaps: Sequence[Swap], failure: BaseException, *, creates: bool = False
) -> None:
    """After the database COMMIT itself failed: returns when the commit landed after all (the
    caller answers success), deletes the new files and re-raises ``failure`` (a cancellation) or
    answers 409 when it did not, and keeps them and answers 500 ``CommitStateUnknownException``
    when the database cannot tell.

    A cancelled COMMIT (``MAX_REQUEST_TIME``) is settled too: a 408 would make a client delete
    the files of a commit that may have landed.

    ``creates``: the request is a create or register endpoint, whose clients read a 409 as
    "already exists" (Java's table error handler): one that did not land is a 503
    ``ServiceUnavailableException`` instead -- nothing was created, a retry is safe.
    """
    landed = await commit_outcome(state, swaps)
    if landed:
        log.warning("the COMMIT failed (%r) but the commit landed: answering success", failure)
        return
    if landed is False:
        await metadata_io.delete_quietly(storage, [s.new_location for s in swaps if s.written and s.new_location])
        if not isinstance(failure, Exception):
            raise failure
        message = f"The database did not complete the {'request' if creates else 'commit'} ({_describe(failure)}); "
        if creates:
            raise service_unavailable(message + "nothing was created or changed, retry it") from failure
        raise commit_failed(message + "nothing was changed, retry it") from failure
    outcome = "the commit may or may not have been applied; reload the table before retrying"
    if creates:
        outcome = "the table or view may or may not have been created or registered; load it before retrying"
    raise commit_state_unknown(
        f"The database connection failed while committing ({_describe(failure)}) and the outcome could "
        f"not be read back: {outcome}"
    ) from failure


def _describe(failure: BaseException) -> str:
    if isinstance(failure, asyncio.CancelledError):
        return "the request was cancelled"
    return f"{type(failure).__name__}: {failure}" if str(failure) else type(failure).__name__


def _result(item: _Pending) -> CommitResult:
    assert item.row is not None
    return CommitResult(item.row, item.metadata, item.metadata_json, item.metadata_location, item.changed)


async def _prepare(
    state: AppState, warehouse: WarehouseRow, storage: Storage, change: TableChange, allowed: Sequence[int]
) -> _Pending:
    """Read the current state of one table and compute its new metadata (no writes)."""
    found = await tabular_store.find_tabular(
        state.store, warehouse.id, change.namespace, change.name, include_staged=True, with_metadata=False
    )
    namespace, row = found.namespace, found.tabular
    if namespace is None:
        if change.creates:
            raise no_such_namespace(change.namespace)
        raise no_such_table(change.namespace, change.name)
    if found.warehouse_version != warehouse.version or found.warehouse_status != "active":
        raise _StaleWarehouse()
    if row is not None and row.typ != "table":
        if change.creates:
            raise conflict_for_existing(row.typ, change.namespace, change.name, "table")
        raise no_such_table(change.namespace, change.name)
    if row is None and not change.creates:
        raise no_such_table(change.namespace, change.name)
    base = None
    if row is not None and not row.staged:
        base = state.store.caches.metadata.get("parsed", row.metadata_location)
        if base is None:
            row = await tabular_store.with_current_metadata(state.store, row)
            if row is None:  # dropped meanwhile
                raise no_such_table(change.namespace, change.name)
            base = metadata_io.parse(row.metadata)
            _remember_parsed(state, row.metadata_location, base, len(row.metadata))
    for requirement in change.requirements:
        check_requirement(requirement, base)
    metadata, changed = apply_updates(
        base,
        change.updates,
        base_location=None if row is None else row.metadata_location,
        allowed_format_versions=allowed,
        storage=storage,
    )
    if base is None and not changed:
        raise bad_request(f"Cannot create table {ident(change.namespace, change.name)} from a commit without updates")
    item = _Pending(change, namespace.id, row, base, metadata, changed=changed)
    if not item.changed:
        row = await tabular_store.with_current_metadata(state.store, row)
        if row is None:
            raise no_such_table(change.namespace, change.name)
        item.row = row
        item.metadata_json = row.metadata or metadata_io.to_json(metadata)
        item.metadata_location = row.metadata_location or ""
        return item
    if base is None:  # a create: the location is the staged one unless the client chose another
        default = row.location if row is not None else None
        if not metadata.location:
            if default is None:
                from lakekeeper_host.server.tables import default_table_location

                default = await default_table_location(state, warehouse, namespace, change.name, new_id())
            metadata = metadata.model_copy(update={"location": default})
        item.metadata = metadata
    item.table_location = storage.normalize_location(item.metadata.location)
    item.metadata_json = metadata_io.to_json(item.metadata)
    item.metadata_location = metadata_io.next_metadata_location(
        item.table_location, None if row is None else row.metadata_location, dict(item.metadata.properties)
    )
    return item


async def _swap(tx: Any, warehouse: WarehouseRow, storage: Storage, item: _Pending) -> None:
    """The compare-and-swap of one table inside the commit transaction."""
    row = item.row
    moved = row is None or item.table_location != row.location
    if moved:
        taken = await tabular_store.location_conflict(
            tx, warehouse.id, item.table_location, exclude_id=None if row is None else row.id
        )
        if taken is not None:
            raise CatalogError(
                409,
                "LocationAlreadyTaken",
                f"Location {item.table_location} overlaps the location {taken} of another table or view",
            )
    if row is None:
        tabular_id = str(item.metadata.table_uuid)
        if await tabular_store.tabular_id_taken(tx, tabular_id):
            tabular_id = new_id()
        inserted = await tabular_store.insert_tabular(
            tx,
            tabular_id=tabular_id,
            warehouse_id=warehouse.id,
            namespace_id=item.namespace_id,
            name=item.change.name,
            typ="table",
            location=item.table_location,
            metadata_location=item.metadata_location,
            metadata=item.metadata_json,
        )
        if not inserted:
            raise _LostRace(item.change)
        item.row = await tabular_store.get_tabular_by_id(tx, tabular_id)
        return
    swapped = await tabular_store.cas_update_metadata(
        tx,
        row.id,
        None if row.staged else row.metadata_location,
        item.metadata_location,
        item.metadata_json,
        location=item.table_location if moved else None,
    )
    if not swapped:
        raise _LostRace(item.change)


def new_table_uuid() -> uuid.UUID:
    return uuid.UUID(new_id())
