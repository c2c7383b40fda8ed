"""loadTable / tableExists: metadata, the client config and vended credentials, and the ETag."""

from __future__ import annotations

import json
from collections.abc import Sequence
from json.encoder import encode_basestring_ascii
from typing import Any
from urllib.parse import quote

from lakekeeper_host.errors import CatalogError, bad_request, no_such_table, not_found
from lakekeeper_host.server.authorize import authorize, data_permission
from lakekeeper_host.server.names import (
    namespace_to_path,
)
from lakekeeper_host.server.resolve import (
    current_warehouse,
    lookup_tabular,
    tabular_not_found,
)
from lakekeeper_host.server.tables.etag import (
    StorageShape,
    etag_of,
    match_not_modified,
    parse_if_none_match,
    shape_hash,
    table_etag,
)
from lakekeeper_host.service.request import RequestMetadata
from lakekeeper_host.service.state import AppState
from lakekeeper_host.service.storage import (
    DataAccess,
    Storage,
    StoragePermission,
    TableAccessRequest,
    TableConfig,
)
from lakekeeper_host.store import tabulars as tabular_store
from lakekeeper_host.store.tabulars import TabularRow
from lakekeeper_host.store.warehouses import WarehouseRow

SNAPSHOT_MODES = ("all", "refs")


def access_request(
    meta: RequestMetadata, warehouse: WarehouseRow, namespace: Sequence[str], name: str, row: TabularRow, location: str,
    access: DataAccess, permission: StoragePermission,
) -> TableAccessRequest:
    base = f"{meta.base_uri}/catalog"
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


async def table_config_for(
    state: AppState,
    meta: RequestMetadata,
    warehouse: WarehouseRow,
    namespace: Sequence[str],
    name: str,
    row: TabularRow,
    location: str,
    access: DataAccess,
    permission: StoragePermission | None,
) -> TableConfig | None:
    """The storage ``config`` (and vended credentials) of a load response; None -- no ``config``
    at all -- for a caller without data access (Lakekeeper omits it)."""
    if permission is None:
        return None
    storage = await state.storage_for(warehouse)
    return await storage.table_config(
        access_request(meta, warehouse, namespace, name, row, location, access, permission)
    )


def load_result_json(metadata_location: str | None, metadata_json: str, config: TableConfig | None) -> str:
    """``LoadTableResult`` as JSON text; the metadata JSON is spliced in without re-parsing.
    ``config=None`` (no data access) leaves out ``config`` and ``storage-credentials``."""
    # json.dumps of a str or None, without the encoder's set-up (the same bytes)
    location = "null" if metadata_location is None else encode_basestring_ascii(metadata_location)
    head = '{"metadata-location":' + location
    if config is None:
        return f'{head},"metadata":{metadata_json}}}'
    if not config.config and not config.storage_credentials:
        return f'{head},"metadata":{metadata_json},"config":{{}}}}'
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


def _storage_shape(
    warehouse: WarehouseRow, access: DataAccess, permission: StoragePermission | None
) -> StorageShape | None:
    """The storage inputs of a response; None for one without ``config`` (no data access). The
    permission is part of it, so a reader's tag never stands for a writer's credentials."""
    return None if permission is None else StorageShape(access, permission, warehouse.version)


def load_etag(
    warehouse: WarehouseRow,
    metadata_location: str,
    access: DataAccess,
    *,
    snapshots: str = "all",
    expires_at_ms: int | None = None,
    permission: StoragePermission | None = StoragePermission.READ_WRITE_DELETE,
) -> str:
    """The ETag a load of this metadata answers. Create, register and commit responses carry the same
    tag (their callers write), so a writer's next load with it is a 304 until the table changes."""
    return table_etag(
        warehouse.id,
        metadata_location,
        snapshots=snapshots,
        storage=_storage_shape(warehouse, access, permission),
        expires_at_ms=expires_at_ms,
    )


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
    meta: RequestMetadata,
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
    await authorize(state, meta, "get_metadata", "table", found.tabular.id, warehouse.id,
                    hidden=no_such_table(parts, name))
    row = await tabular_store.with_current_metadata(state.store, found.tabular)
    if row is None:
        raise tabular_not_found("table", parts, name)
    storage = await state.storage_for(warehouse)
    if not await metadata_file_present(state, storage, row.metadata_location):
        raise not_found(f"Failed to open input stream for file: {row.metadata_location}")
    permission = await data_permission(state, meta, warehouse.id, row.id)
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
    etag = etag_of(current, expires_at_ms)  # = load_etag(...): the same inputs, hashed once
    metadata_json = row.metadata if mode == "all" else refs_only_cached(state, row.metadata_location, row.metadata)
    return load_result_json(row.metadata_location, metadata_json, config), etag


async def table_exists(
    state: AppState, meta: RequestMetadata, warehouse: WarehouseRow, parts: list[str], name: str
) -> None:
    """Returns when the table exists; 404 otherwise."""
    found = await lookup_tabular(state, warehouse, parts, name, with_metadata=False, cached=True)
    await authorize(state, meta, "get_metadata", "table", found.tabular.id, warehouse.id,
                    hidden=no_such_table(parts, name))
