"""Tables of the Iceberg REST catalog: list, create, load, exists, drop, register, rename, metrics.

Commits live in ``server/commit.py``. Several functions here are generic over ``typ``
(``table``/``view``) so views reuse them: :func:`list_tabular_identifiers`,
:func:`rename_tabular`, :func:`check_location_available`, :func:`default_tabular_location`.

Semantics worth knowing (Lakekeeper §2.7, §9.1, §9.5):

* a table's location is ``<namespace location>/<table-id>`` (flat default layout), or a
  client-chosen location inside the warehouse that overlaps no other table or view and is empty;
* a load in a missing namespace is 404 ``NoSuchTableException`` (Java resolves metadata tables
  that way); a staged table is invisible to load and list;
* ``purgeRequested`` defaults to **true**: Lakekeeper treats every table as managed.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError
from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC, PartitionSpec
from pyiceberg.schema import Schema, _SetFreshIDs, pre_order_visit
from pyiceberg.table.metadata import TableMetadata, new_table_metadata
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER, SortOrder
from pyiceberg.types import StructType

from lakekeeper_host.errors import CatalogError, bad_request, no_such_namespace, no_such_table, no_such_view, not_found
from lakekeeper_host.server import events, metadata_io
from lakekeeper_host.server.commit import Swap, settle_uncertain_commit, validate_table_properties
from lakekeeper_host.server.context import (
    authorize,
    conflict_for_existing,
    current_warehouse,
    decode_page_token,
    encode_page_token,
    get_namespace,
    ident,
    namespace_to_path,
    page_limit,
    require_namespace,
    validate_name,
    validate_namespace,
    validate_new_name,
)
from lakekeeper_host.server.etag import StorageShape, match_not_modified, parse_if_none_match, shape_hash, table_etag
from lakekeeper_host.server.namespaces import render_layout_segment, storage_layout
from lakekeeper_host.service.authz import Resource
from lakekeeper_host.service.state import AppState
from lakekeeper_host.service.storage import (
    DataAccess,
    Storage,
    StoragePermission,
    TableAccessRequest,
    TableConfig,
    join_location,
)
from lakekeeper_host.store import new_id
from lakekeeper_host.store import tabulars as tabular_store
from lakekeeper_host.store.namespaces import NamespaceRow
from lakekeeper_host.store.tabulars import TabularRow
from lakekeeper_host.store.warehouses import WarehouseRow

SNAPSHOT_MODES = ("all", "refs")


def _not_found(typ: str, namespace: Sequence[str], name: str) -> CatalogError:
    return no_such_table(namespace, name) if typ == "table" else no_such_view(namespace, name)


# ---------------------------------------------------------------- locations


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


# ---------------------------------------------------------------- load results


def access_request(
    meta: Any, warehouse: WarehouseRow, namespace: Sequence[str], name: str, row: TabularRow, location: str,
    access: DataAccess, permission: StoragePermission,
) -> TableAccessRequest:
    base = f"{meta.base_uri}/catalog"
    from urllib.parse import quote

    return TableAccessRequest(
        table_location=location,
        permission=permission,
        access=access,
        warehouse_id=warehouse.id,
        tabular_id=row.id,
        refresh_credentials_endpoint=(
            f"{base}/v1/{warehouse.id}/namespaces/{quote(namespace_to_path(namespace), safe='')}"
            f"/tables/{quote(name, safe='')}/credentials"
        ),
        signer_uri=f"{base}/",
        signer_endpoint=f"v1/signer/{warehouse.id}/tabular-id/{row.id}/v1/aws/s3/sign",
        soft_delete_enabled=warehouse.soft_delete_seconds is not None,
    )


async def data_permission(
    state: AppState, meta: Any, warehouse: WarehouseRow, tabular_id: str
) -> StoragePermission | None:
    """What the caller may do with the table's files (Lakekeeper ``StoragePermissions``):
    read-write-delete with ``write_data``, read with only ``read_data``, None with neither.

    Vended credentials and the signer follow the same two actions, so a reader never gets
    credentials that could write. Internal calls (no actor) get everything, as in ``authorize``.
    """
    actor = getattr(meta, "actor", None)
    if actor is None:
        return StoragePermission.READ_WRITE_DELETE
    resource = Resource("table", tabular_id, warehouse.id)
    if await state.authorizer.is_allowed(actor, "write_data", resource):
        return StoragePermission.READ_WRITE_DELETE
    if await state.authorizer.is_allowed(actor, "read_data", resource):
        return StoragePermission.READ
    return None


async def table_config_for(
    state: AppState, meta: Any, warehouse: WarehouseRow, namespace: Sequence[str], name: str, row: TabularRow,
    location: str, access: DataAccess, permission: StoragePermission | None,
) -> TableConfig | None:
    """The storage ``config`` (and vended credentials) of a load response; None -- no ``config``
    at all -- for a caller without data access (Lakekeeper omits it)."""
    if permission is None:
        return None
    storage = await state.storage_for(warehouse)
    return await storage.table_config(
        access_request(meta, warehouse, namespace, name, row, location, access, permission)
    )


def load_result_json(
    metadata_location: str | None, metadata_json: str, config: TableConfig | None
) -> str:
    """``LoadTableResult`` as JSON text; the metadata JSON is spliced in without re-parsing.
    ``config=None`` (no data access) leaves out ``config`` and ``storage-credentials``."""
    head = json.dumps({"metadata-location": metadata_location}, separators=(",", ":"))[:-1]
    if config is None:
        return f'{head},"metadata":{metadata_json}}}'
    tail: dict[str, Any] = {"config": config.config}
    if config.storage_credentials:
        tail["storage-credentials"] = config.storage_credentials
    return f'{head},"metadata":{metadata_json},{json.dumps(tail, separators=(",", ":"))[1:]}'


def refs_only(metadata_json: str) -> str:
    """The metadata with only the snapshots a branch or tag references (``snapshots=refs``)."""
    data = json.loads(metadata_json)
    referenced = {ref.get("snapshot-id") for ref in (data.get("refs") or {}).values()}
    if data.get("current-snapshot-id") not in (None, -1):
        referenced.add(data["current-snapshot-id"])
    data["snapshots"] = [s for s in data.get("snapshots") or [] if s.get("snapshot-id") in referenced]
    return json.dumps(data, separators=(",", ":"))


# ---------------------------------------------------------------- list


async def list_tabular_identifiers(
    state: AppState,
    meta: Any,
    warehouse: WarehouseRow,
    parts: list[str],
    typ: str,
    *,
    page_token: str | None,
    page_size: int | None,
    return_uuids: bool = False,
    return_protection_status: bool = False,
) -> dict[str, Any]:
    """``{identifiers, next-page-token}`` for tables or views (keyset pagination, opaque tokens)."""
    validate_namespace(parts)
    after = decode_page_token(page_token, 2)
    limit = page_limit(state, page_token, page_size)
    namespace = await require_namespace(state, warehouse, parts)
    await authorize(state, meta, f"list_{typ}s", "namespace", namespace.id, warehouse)
    rows = await tabular_store.list_tabulars(state.store, namespace.id, typ, after=after, limit=limit + 1)
    more = len(rows) > limit
    rows = rows[:limit]
    result: dict[str, Any] = {
        "identifiers": [{"namespace": list(namespace.parts), "name": r.name} for r in rows],
        "next-page-token": encode_page_token(rows[-1].name.casefold(), rows[-1].id) if more and rows else None,
    }
    if return_uuids:
        result[f"{typ}-uuids"] = [r.id for r in rows]
    if return_protection_status:
        result["protection-status"] = [r.protected for r in rows]
    return result


# ---------------------------------------------------------------- create


def _parse_model(cls: Any, value: Any, what: str) -> Any:
    try:
        return cls.model_validate(value)
    except (ValidationError, ValueError, TypeError) as exc:
        raise bad_request(f"Invalid request body: {what}: {exc}") from None


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
    from lakekeeper_host.server.warehouses import effective_format_versions

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


def _storage_shape(
    warehouse: WarehouseRow, access: DataAccess, permission: StoragePermission | None
) -> StorageShape | None:
    """The storage inputs of a response; None for one without ``config`` (no data access). The
    permission is part of it, so a reader's tag never stands for a writer's credentials."""
    return None if permission is None else StorageShape(access, permission, warehouse.version)


def load_etag(
    warehouse: WarehouseRow, metadata_location: str, access: DataAccess, *, snapshots: str = "all",
    expires_at_ms: int | None = None, permission: StoragePermission | None = StoragePermission.READ_WRITE_DELETE,
) -> str:
    """The ETag a load of this metadata answers. Create, register and commit responses carry the same
    tag (their callers write), so a writer's next load with it is a 304 until the table changes."""
    return table_etag(warehouse.id, metadata_location, snapshots=snapshots,
                      storage=_storage_shape(warehouse, access, permission), expires_at_ms=expires_at_ms)


async def create_table(
    state: AppState, meta: Any, warehouse: WarehouseRow, parts: list[str], body: Any, access: DataAccess
) -> tuple[str, str | None]:
    """Create (or stage) a table; returns (LoadTableResult JSON, ETag or None for staged)."""
    # ------------------------------------------------ VALIDATIONS
    if not isinstance(body, dict):
        raise bad_request("Invalid request body: expected a JSON object")
    name = body.get("name")
    if not isinstance(name, str):
        raise bad_request("Invalid request body: missing field `name` @ body.name")
    validate_namespace(parts)
    validate_new_name(name)
    if "schema" not in body:
        raise bad_request("Invalid request body: missing field `schema` @ body.schema")
    schema = _parse_model(Schema, body["schema"], "schema")
    spec = UNPARTITIONED_PARTITION_SPEC
    if body.get("partition-spec"):
        spec = _parse_model(PartitionSpec, body["partition-spec"], "partition-spec")
    order = UNSORTED_SORT_ORDER
    if body.get("write-order"):
        order = _parse_model(SortOrder, body["write-order"], "write-order")
    properties = body.get("properties") or {}
    if not isinstance(properties, dict) or not all(isinstance(v, str) for v in properties.values()):
        raise bad_request("Invalid request body: properties must map strings to strings @ body.properties")
    properties = dict(properties)
    validate_table_properties(list(properties))
    metadata_io.codec(properties)
    stage_create = bool(body.get("stage-create"))
    format_version = format_version_for(warehouse, properties)

    # ------------------------------------------------ AUTHZ
    namespace = await require_namespace(state, warehouse, parts)
    await authorize(state, meta, "create_table", "namespace", namespace.id, warehouse)
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
    except (ValueError, ValidationError, KeyError) as exc:
        raise bad_request(f"Invalid table definition: {exc}") from None
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
    commit_sent = False
    try:
        async with state.store.transaction() as tx:
            current = await tabular_store.get_tabular(tx, namespace.id, name, include_staged=True)
            if current is not None and not current.staged:
                raise conflict_for_existing(current.typ, parts, name, "table")
            if current is not None:  # a staged table of that name is replaced (Lakekeeper)
                await tabular_store.delete_staged(tx, namespace.id, name)
            await check_location_available(tx, warehouse, location)
            inserted = await tabular_store.insert_tabular(
                tx, tabular_id=tabular_id, warehouse_id=warehouse.id, namespace_id=namespace.id, name=name,
                typ="table", location=location, metadata_location=metadata_location, metadata=metadata_json,
                staged=stage_create,
            )
            if not inserted:
                raise CatalogError(409, "AlreadyExistsException", f"Table already exists: {ident(parts, name)}")
            row = await tabular_store.get_tabular_by_id(tx, tabular_id)
            commit_sent = True  # leaving the block sends COMMIT: from here on the outcome may be unknown
    except BaseException as failure:
        if not commit_sent:  # rolled back: nothing changed
            if metadata_location:
                await metadata_io.delete_quietly(storage, [metadata_location])
            raise
        swap = Swap(tabular_id, None, metadata_location)  # None: a staged table has no file yet
        await settle_uncertain_commit(state, storage, [swap], failure, creates=True)

    tabular_store.remember_metadata(state.store, metadata_location, metadata_json)

    # ------------------------------------------------ EVENTS
    # createTable (not for stage-create: the table exists only after its first commit)
    if not stage_create:
        events.table_created(state, meta, warehouse, parts, name, row.id, body, prefix=warehouse.id)

    # the creator gets read-write-delete credentials (Lakekeeper), whatever its data grants
    config = await storage.table_config(
        access_request(meta, warehouse, parts, name, row, location, access, StoragePermission.READ_WRITE_DELETE)
    )
    etag = None
    if metadata_location:
        etag = load_etag(warehouse, metadata_location, access, expires_at_ms=config.expires_at_ms)
    return load_result_json(metadata_location, metadata_json, config), etag


# ---------------------------------------------------------------- load / exists


async def lookup_tabular(
    state: AppState, warehouse: WarehouseRow, parts: list[str], name: str, *, typ: str = "table",
    include_staged: bool = False, with_metadata: bool = True, cached: bool = False,
) -> tabular_store.TabularLookup:
    """Namespace and live row of a table/view in one query; 404 ``NoSuch<Table|View>Exception``
    when either is missing. ``with_metadata=False``: see :func:`tabular_store.with_current_metadata`;
    ``cached``: see :func:`tabular_store.find_tabular` (reads that change nothing)."""
    validate_namespace(parts)
    validate_name(name)
    found = await tabular_store.find_tabular(state.store, warehouse.id, parts, name, typ,
                                             include_staged=include_staged, with_metadata=with_metadata,
                                             cached=cached)
    if found.namespace is None or found.tabular is None:
        raise _not_found(typ, parts, name)
    return found


async def resolve_table(
    state: AppState, warehouse: WarehouseRow, parts: list[str], name: str, *, typ: str = "table",
    include_staged: bool = False,
) -> tuple[NamespaceRow, TabularRow]:
    """Namespace and live row of a table/view; 404 ``NoSuch<Table|View>Exception`` when either is missing."""
    found = await lookup_tabular(state, warehouse, parts, name, typ=typ, include_staged=include_staged)
    assert found.namespace is not None and found.tabular is not None
    return found.namespace, found.tabular


def refs_only_cached(state: AppState, metadata_location: str, metadata_json: str) -> str:
    """:func:`refs_only`, computed once per metadata file (the cache is keyed by its location)."""
    cache = state.store.caches.metadata
    body = cache.get("refs", metadata_location)
    if body is None:
        body = refs_only(metadata_json)
        cache.put("refs", metadata_location, body, len(body))
    return body


async def metadata_file_present(state: AppState, storage: Storage, location: str) -> bool:
    """The table's current metadata file is in storage. Asked at most every 30 s per file (see
    ``StoreCaches.present_files``): on S3 it is a HEAD request, too dear for every load."""
    present = state.store.caches.present_files
    if present.get(location):
        return True
    found = await storage.exists(location)
    if found:
        present.put(location, True)
    return found


async def load_table(
    state: AppState,
    meta: Any,
    warehouse: WarehouseRow,
    parts: list[str],
    name: str,
    *,
    snapshots: str | None,
    access: DataAccess,
    if_none_match: str | None = None,
) -> tuple[str | None, str]:
    """(LoadTableResult JSON, ETag); the JSON is None when ``If-None-Match`` matched (answer 304)."""
    mode = (snapshots or "all").lower()
    if mode not in SNAPSHOT_MODES:
        raise bad_request(f"Invalid snapshots mode {snapshots!r}: use 'all' or 'refs'")
    # one query finds namespace, table and the warehouse's current version; the metadata JSON
    # comes from the cache keyed by its (immutable) location when this process has seen it
    try:
        found = await lookup_tabular(state, warehouse, parts, name, with_metadata=False, cached=True)
    except CatalogError as error:
        # Spark probes `ns.table.branch_x` as a table and needs a 404 to treat it as a branch,
        # also when the namespace is then one level too deep (Lakekeeper answers 404 there too)
        if error.type == "NamespaceDepthExceeded":
            error.code = 404
        raise
    warehouse = await current_warehouse(state, warehouse, found.warehouse_version, found.warehouse_status)
    await authorize(state, meta, "get_metadata", "table", found.tabular.id, warehouse)
    row = await tabular_store.with_current_metadata(state.store, found.tabular)
    if row is None:
        raise _not_found("table", parts, name)
    storage = await state.storage_for(warehouse)
    if not await metadata_file_present(state, storage, row.metadata_location):
        raise not_found(f"Failed to open input stream for file: {row.metadata_location}")
    permission = await data_permission(state, meta, warehouse, row.id)
    config = await table_config_for(state, meta, warehouse, parts, row.name, row, row.location, access, permission)
    expires_at_ms = config.expires_at_ms if config is not None else None
    current = shape_hash(
        warehouse.id, row.metadata_location, snapshots=mode, storage=_storage_shape(warehouse, access, permission)
    )
    tags = parse_if_none_match(if_none_match)
    if tags:
        async def vends() -> bool:
            return config is not None and (bool(config.storage_credentials) or expires_at_ms is not None)

        matched = await match_not_modified(tags, current, vends_credentials=vends)
        if matched is not None:
            return None, matched
    etag = load_etag(warehouse, row.metadata_location, access, snapshots=mode, expires_at_ms=expires_at_ms,
                     permission=permission)
    metadata_json = row.metadata if mode == "all" else refs_only_cached(state, row.metadata_location, row.metadata)
    return load_result_json(row.metadata_location, metadata_json, config), etag


async def table_exists(state: AppState, meta: Any, warehouse: WarehouseRow, parts: list[str], name: str) -> None:
    """Returns when the table exists; 404 otherwise."""
    found = await lookup_tabular(state, warehouse, parts, name, with_metadata=False, cached=True)
    await authorize(state, meta, "get_metadata", "table", found.tabular.id, warehouse)


# ---------------------------------------------------------------- drop


async def drop_table(
    state: AppState, meta: Any, warehouse: WarehouseRow, parts: list[str], name: str, *, purge: bool, force: bool
) -> None:
    """Drop a table (staged ones too) honouring the warehouse delete profile and protection.

    ``purge`` is Lakekeeper's ``purgeRequested``, which defaults to true when the client does not
    send it (the API layer applies that default).
    """
    _, row = await resolve_table(state, warehouse, parts, name, include_staged=True)
    await authorize(state, meta, "drop", "table", row.id, warehouse)
    from lakekeeper_host.server.deletion import drop_tabular

    await drop_tabular(state, meta, warehouse, row, purge=purge, force=force)

    # ------------------------------------------------ EVENTS
    # dropTable
    events.table_dropped(state, meta, warehouse, parts, name, row.id, prefix=warehouse.id)


# ---------------------------------------------------------------- register


def register_request(body: Any) -> tuple[str, str]:
    """``name`` and ``metadata-location`` of a registerTable/registerView body; 400 naming the field."""
    if not isinstance(body, dict):
        raise bad_request("Invalid request body: expected a JSON object")
    name, metadata_location = body.get("name"), body.get("metadata-location")
    if not isinstance(name, str):
        raise bad_request("Invalid request body: missing field `name` @ body.name")
    if not isinstance(metadata_location, str) or not metadata_location:
        raise bad_request("Invalid request body: missing field `metadata-location` @ body.metadata-location")
    return name, metadata_location


async def register_table(
    state: AppState, meta: Any, warehouse: WarehouseRow, parts: list[str], body: Any, access: DataAccess
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
    await authorize(state, meta, "create_table", "namespace", namespace.id, warehouse)
    existing = await tabular_store.get_tabular(state.store, namespace.id, name)
    if existing is not None and (existing.typ != "table" or not overwrite):
        raise conflict_for_existing(existing.typ, parts, name, "table")

    # ------------------------------------------------ BUSINESS LOGIC
    storage = await state.storage_for(warehouse)
    metadata, _ = await metadata_io.read_metadata(storage, metadata_location)
    from lakekeeper_host.server.warehouses import effective_format_versions

    allowed, _ = effective_format_versions(warehouse)
    if metadata.format_version not in allowed:
        raise bad_request(
            f"Format version {metadata.format_version} is not allowed in this warehouse", "FormatVersionNotAllowed"
        )
    location = await requested_location(state, warehouse, metadata.location)
    metadata_json = metadata_io.to_json(metadata)
    commit_sent = False
    try:
        async with state.store.transaction() as tx:
            current = await tabular_store.get_tabular(tx, namespace.id, name, include_staged=True)
            if current is not None and current.staged:
                await tabular_store.delete_staged(tx, namespace.id, name)
                current = None
            if current is not None:
                if current.typ != "table" or not overwrite:
                    raise conflict_for_existing(current.typ, parts, name, "table")
                await check_location_available(tx, warehouse, location, exclude_id=current.id)
                if not await tabular_store.cas_update_metadata(
                    tx, current.id, current.metadata_location, metadata_location, metadata_json, location=location
                ):
                    raise CatalogError(
                        409, "CommitFailedException", f"Table {ident(parts, name)} was changed concurrently"
                    )
                tabular_id = current.id
            else:
                await check_location_available(tx, warehouse, location)
                tabular_id = str(metadata.table_uuid)
                if await tabular_store.tabular_id_taken(tx, tabular_id):
                    tabular_id = new_id()
                inserted = await tabular_store.insert_tabular(
                    tx, tabular_id=tabular_id, warehouse_id=warehouse.id, namespace_id=namespace.id, name=name,
                    typ="table", location=location, metadata_location=metadata_location, metadata=metadata_json,
                )
                if not inserted:
                    raise CatalogError(409, "AlreadyExistsException", f"Table already exists: {ident(parts, name)}")
            row = await tabular_store.get_tabular_by_id(tx, tabular_id)
            commit_sent = True  # leaving the block sends COMMIT: from here on the outcome may be unknown
    except BaseException as failure:
        if not commit_sent:  # rolled back: nothing changed
            raise
        # the registered file is the user's: never deleted, whatever the outcome
        expected = None if current is None else current.metadata_location
        swap = Swap(tabular_id, expected, metadata_location, written=False)
        await settle_uncertain_commit(state, storage, [swap], failure, creates=True)

    # ------------------------------------------------ EVENTS
    # registerTable
    events.table_registered(state, meta, warehouse, parts, name, row.id, body, prefix=warehouse.id)

    config = await storage.table_config(
        access_request(meta, warehouse, parts, name, row, location, access, StoragePermission.READ_WRITE_DELETE)
    )
    etag = load_etag(warehouse, metadata_location, access, expires_at_ms=config.expires_at_ms)
    return load_result_json(metadata_location, metadata_json, config), etag


# ---------------------------------------------------------------- rename


def parse_rename(body: Any) -> tuple[list[str], str, list[str], str]:
    """``{source: {namespace, name}, destination: {namespace, name}}``."""
    if not isinstance(body, dict):
        raise bad_request("Invalid request body: expected a JSON object")
    out = []
    for key in ("source", "destination"):
        value = body.get(key)
        if not isinstance(value, dict):
            raise bad_request(f"Invalid request body: missing field `{key}` @ body.{key}")
        namespace, name = value.get("namespace"), value.get("name")
        if (
            not isinstance(namespace, list)
            or not all(isinstance(p, str) for p in namespace)
            or not isinstance(name, str)
        ):
            raise bad_request(f"Invalid request body: {key} must be {{namespace: [..], name: ..}} @ body.{key}")
        out.extend([namespace, name])
    return out[0], out[1], out[2], out[3]


async def rename_tabular(state: AppState, meta: Any, warehouse: WarehouseRow, typ: str, body: Any) -> None:
    """Rename/move a table or view within the warehouse (across namespaces too).

    Messages as the Iceberg tests expect: a missing source is "Table does not exist: ns.t", a
    missing destination namespace "Namespace does not exist: ns", a taken destination
    "Cannot rename ns.a to ns.b. Table already exists" (or "View already exists").
    """
    # ------------------------------------------------ VALIDATIONS
    source_ns, source_name, dest_ns, dest_name = parse_rename(body)
    validate_namespace(dest_ns)
    label = "Table" if typ == "table" else "View"
    validate_new_name(dest_name, label)
    _, row = await resolve_table(state, warehouse, source_ns, source_name, typ=typ)
    destination = await get_namespace(state, warehouse, dest_ns)
    if destination is None:
        raise no_such_namespace(dest_ns)

    # ------------------------------------------------ AUTHZ
    await authorize(state, meta, "rename", typ, row.id, warehouse)
    await authorize(state, meta, f"create_{typ}", "namespace", destination.id, warehouse)
    await state.contracts.check_rename(row, {"namespace": list(dest_ns), "name": dest_name})

    # ------------------------------------------------ BUSINESS LOGIC
    async with state.store.transaction() as tx:
        taken = await tabular_store.get_tabular(tx, destination.id, dest_name, include_staged=True)
        if taken is not None and taken.id != row.id:
            if taken.staged:
                await tabular_store.delete_staged(tx, destination.id, dest_name)
            else:
                taken_label = "Table" if taken.typ == "table" else "View"
                raise CatalogError(
                    409,
                    "AlreadyExistsException",
                    f"Cannot rename {ident(source_ns, source_name)} to {ident(dest_ns, dest_name)}. "
                    f"{taken_label} already exists",
                )
        if not await tabular_store.rename_tabular(tx, row.id, destination.id, dest_name):
            raise _not_found(typ, source_ns, source_name)

    # ------------------------------------------------ EVENTS
    # renameTable / renameView
    renamed = events.view_renamed if typ == "view" else events.table_renamed
    renamed(state, meta, warehouse, source_ns, source_name, row.id, body, prefix=warehouse.id)


# ---------------------------------------------------------------- metrics


REPORT_TYPES = ("scan-report", "commit-report")


async def report_metrics(
    state: AppState, meta: Any, warehouse: WarehouseRow, parts: list[str], name: str, body: Any
) -> None:
    """Store a ScanReport/CommitReport for a table (``server/metrics_reports.py``)."""
    _, row = await resolve_table(state, warehouse, parts, name)
    from lakekeeper_host.server import metrics_reports

    await metrics_reports.report_metrics(state, meta, warehouse_id=warehouse.id, tabular_id=row.id, body=body)
