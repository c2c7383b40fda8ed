"""loadGenericTable, loadGenericTableCredentials and listGenericTables.

A load answers Lakekeeper's ``LoadGenericTableResponse``: ``table`` (name, format, base-location,
protected, doc, properties, schema, statistics), and -- for a caller with ``read_data`` -- the
storage ``config`` and, when the warehouse vends them and the client asked
(``X-Iceberg-Access-Delegation: vended-credentials``), ``storage-credentials`` scoped to the base
location: read-only with ``read_data``, read-write-delete with ``write_data``. With
``remote-signing`` on S3 the config names the signer endpoint of this generic table.

The credentials endpoint always vends. As for Iceberg tables, a caller who may see the table but
not read its data is refused (403), one who may not see it gets 404.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from lakekeeper_host.errors import action_forbidden, no_such_generic_table
from lakekeeper_host.server import kinds
from lakekeeper_host.server.authorize import authorize, data_permission
from lakekeeper_host.server.names import namespace_to_path
from lakekeeper_host.server.resolve import current_warehouse, lookup_tabular
from lakekeeper_host.server.tabulars.listing import tabular_page
from lakekeeper_host.service.request import RequestMetadata
from lakekeeper_host.service.state import AppState
from lakekeeper_host.service.storage import DataAccess, StoragePermission, TableAccessRequest, TableConfig
from lakekeeper_host.store import generic_tables as generic_store
from lakekeeper_host.store.generic_tables import GenericTableDetails
from lakekeeper_host.store.tabulars import TabularRow
from lakekeeper_host.store.warehouses import WarehouseRow


def generic_table_json(row: TabularRow, details: GenericTableDetails) -> dict[str, Any]:
    """Lakekeeper's ``GenericTableData`` (empty/absent fields left out, as Lakekeeper serialises them)."""
    data: dict[str, Any] = {
        "name": row.name,
        "format": details.format,
        "base-location": row.location,
        "protected": bool(row.protected),
    }
    if details.doc is not None:
        data["doc"] = details.doc
    if details.properties:
        data["properties"] = details.properties
    if details.schema is not None:
        data["schema"] = details.schema
    if details.statistics is not None:
        data["statistics"] = details.statistics
    return data


async def resolve_generic_table(
    state: AppState, meta: RequestMetadata, warehouse: WarehouseRow, parts: list[str], name: str, action: str,
    *, cached: bool = False,
) -> tuple[WarehouseRow, TabularRow]:
    """The live generic table (and the warehouse as the lookup found it), after checking ``action``
    on it; 404 ``NoSuchGenericTableException`` when it is missing or the caller may not see it.
    ``cached``: reads that change nothing may take the lookup from the cache (as table loads do)."""
    found = await lookup_tabular(state, warehouse, parts, name, typ=kinds.GENERIC_TABLE, with_metadata=False,
                                 cached=cached)
    assert found.tabular is not None
    warehouse = await current_warehouse(state, warehouse, found.warehouse_version, found.warehouse_status)
    await authorize(state, meta, action, kinds.GENERIC_TABLE, found.tabular.id, warehouse.id,
                    hidden=no_such_generic_table(parts, name))
    return warehouse, found.tabular


async def _details(state: AppState, row: TabularRow, parts: list[str]) -> GenericTableDetails:
    details = await generic_store.get_details(state.store, row.id)
    if details is None:  # dropped between the two reads
        raise no_such_generic_table(parts, row.name)
    return details


def access_request(
    meta: RequestMetadata, warehouse: WarehouseRow, parts: list[str], row: TabularRow, access: DataAccess,
    permission: StoragePermission,
) -> TableAccessRequest:
    """What the warehouse storage needs to hand out access to the generic table's location."""
    namespace = quote(namespace_to_path(parts), safe="")
    return TableAccessRequest(
        table_location=row.location,
        permission=permission,
        access=access,
        warehouse_id=warehouse.id,
        tabular_id=row.id,
        refresh_credentials_endpoint=(
            f"{meta.base_uri}/lakekeeper/v1/{warehouse.id}/namespaces/{namespace}"
            f"/generic-tables/{quote(row.name, safe='')}/credentials"
        ),
        # the table-scoped signer route resolves Iceberg tables and generic tables by id alike
        signer_uri=f"{meta.base_uri}/catalog/",
        signer_endpoint=f"v1/signer/{warehouse.id}/tabular-id/{row.id}/v1/aws/s3/sign",
        soft_delete_enabled=warehouse.soft_delete_seconds is not None,
        tabular_kind=kinds.GENERIC_TABLE,
    )


async def _storage_config(
    state: AppState, meta: RequestMetadata, warehouse: WarehouseRow, parts: list[str], row: TabularRow,
    access: DataAccess, permission: StoragePermission,
) -> TableConfig:
    storage = await state.storage_for(warehouse)
    return await storage.table_config(access_request(meta, warehouse, parts, row, access, permission))


async def load_generic_table(
    state: AppState, meta: RequestMetadata, warehouse: WarehouseRow, parts: list[str], name: str, access: DataAccess
) -> dict[str, Any]:
    # ------------------------------------------------ VALIDATIONS + AUTHZ
    warehouse, row = await resolve_generic_table(state, meta, warehouse, parts, name, "get_metadata", cached=True)
    details = await _details(state, row, parts)
    permission = await data_permission(state, meta, warehouse.id, row.id, kinds.GENERIC_TABLE)

    # ------------------------------------------------ BUSINESS LOGIC
    result: dict[str, Any] = {"table": generic_table_json(row, details)}
    if permission is None:  # no data access: no config at all (as a table's load)
        return result
    config = await _storage_config(state, meta, warehouse, parts, row, access, permission)
    result["config"] = config.config
    if config.storage_credentials:
        result["storage-credentials"] = config.storage_credentials
    return result


async def load_generic_table_credentials(
    state: AppState, meta: RequestMetadata, warehouse: WarehouseRow, parts: list[str], name: str, access: DataAccess
) -> dict[str, Any]:
    """``{"storage-credentials": [...]}``: empty where the warehouse vends nothing (file storage)."""
    warehouse, row = await resolve_generic_table(state, meta, warehouse, parts, name, "get_metadata", cached=True)
    permission = await data_permission(state, meta, warehouse.id, row.id, kinds.GENERIC_TABLE)
    if permission is None:
        raise action_forbidden(kinds.GENERIC_TABLE, "read_data", row.id)
    config = await _storage_config(
        state, meta, warehouse, parts, row, access | DataAccess.VENDED_CREDENTIALS, permission
    )
    return {"storage-credentials": list(config.storage_credentials)}


async def list_generic_tables(
    state: AppState, meta: RequestMetadata, warehouse: WarehouseRow, parts: list[str], *,
    page_token: str | None, page_size: int | None,
) -> dict[str, Any]:
    """Lakekeeper's ``ListGenericTablesResponse``: identifiers with format and id, keyset paged with
    the same opaque tokens as listTables (by name, the caller's visible rows only)."""
    namespace, rows, next_token = await tabular_page(
        state, meta, warehouse, parts, kinds.GENERIC_TABLE, page_token=page_token, page_size=page_size
    )
    formats = await generic_store.formats(state.store, [r.id for r in rows])
    result: dict[str, Any] = {
        "identifiers": [
            {"namespace": list(namespace.parts), "name": r.name, "format": formats.get(r.id), "id": r.id}
            for r in rows if r.id in formats
        ],
    }
    if next_token is not None:
        result["next-page-token"] = next_token
    return result

