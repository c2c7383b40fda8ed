"""Management API: warehouses, storage validation, soft-deleted tabulars, protection, namespace move."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from attrs import frozen
from quart import Blueprint, request

from lakekeeper_host.api.common import (
    empty,
    json_body,
    json_response,
    metadata,
    optional_json_body,
    query_bool,
    query_int,
    state,
)
from lakekeeper_host.errors import bad_request
from lakekeeper_host.serde import iso_timestamp, structure_body
from lakekeeper_host.server import kinds, search, warehouses
from lakekeeper_host.server.management import statistics
from lakekeeper_host.server.namespaces import admin as namespace_admin
from lakekeeper_host.server.resolve import resolve_project_id
from lakekeeper_host.server.tabulars import deletion, protection
from lakekeeper_host.server.tabulars.protection import get_tabular_protection, protection_json, set_tabular_protection
from lakekeeper_host.server.warehouses.create import CreateWarehouse

if TYPE_CHECKING:
    from lakekeeper_host.store.warehouses import WarehouseRow

blueprint = Blueprint("management_warehouses", __name__, url_prefix="/management/v1")

WAREHOUSE_STATUSES = ("active", "inactive")


@frozen
class RenameRequest:
    new_name: str


@frozen
class ProtectionRequest:
    protected: bool


@frozen
class UndropTarget:
    type: str
    id: str


@frozen
class UndropRequest:
    targets: list[UndropTarget]


def warehouse_json(warehouse: WarehouseRow) -> dict[str, Any]:
    allowed, default = warehouses.effective_format_versions(warehouse)
    return {
        "id": warehouse.id,
        "warehouse-id": warehouse.id,
        "name": warehouse.name,
        "project-id": warehouse.project_id,
        "storage-profile": warehouse.storage_profile,
        "delete-profile": warehouse.delete_profile,
        "status": warehouse.status,
        "protected": warehouse.protected,
        "allowed-format-versions": allowed,
        "default-format-version": default,
        "updated-at": iso_timestamp(warehouse.updated_at),
    }


def project_id(explicit: str | None = None) -> str:
    return resolve_project_id(state(), metadata().project_id, explicit)


# ---------------------------------------------------------------- create, validate, list, get


@blueprint.post("/warehouse")
async def create_warehouse():
    body = structure_body(await json_body(), CreateWarehouse)
    warehouse = await warehouses.create_warehouse(state(), project_id(body.project_id), body, metadata())
    return json_response(warehouse_json(warehouse), 201)


@blueprint.post("/warehouse-creation-validation")
async def validate_warehouse_creation():
    body = await json_body()
    explicit = body.get("project-id") if isinstance(body, dict) and isinstance(body.get("project-id"), str) else None
    return json_response(await warehouses.validate_creation(state(), metadata(), project_id(explicit), body))


@blueprint.get("/warehouse")
async def list_warehouses():
    statuses = request.args.getlist("warehouseStatus") or ["active"]
    for status in statuses:
        if status not in WAREHOUSE_STATUSES:
            raise bad_request(f"Query parameter warehouseStatus must be active or inactive, got {status!r}")
    project = project_id(request.args.get("projectId"))
    found = await warehouses.list_warehouses(state(), metadata(), project, statuses)
    return json_response({"warehouses": [warehouse_json(w) for w in found]})


@blueprint.get("/warehouse/<warehouse_id>")
async def get_warehouse(warehouse_id: str):
    warehouse = await warehouses.get_warehouse(state(), metadata(), warehouse_id)
    return json_response(warehouse_json(warehouse))


@blueprint.delete("/warehouse/<warehouse_id>")
async def delete_warehouse(warehouse_id: str):
    await warehouses.delete_warehouse(state(), metadata(), warehouse_id, force=query_bool("force"))
    return empty(204)


# ---------------------------------------------------------------- simple updates


@blueprint.post("/warehouse/<warehouse_id>/rename")
async def rename_warehouse(warehouse_id: str):
    body = structure_body(await json_body(), RenameRequest)
    warehouse = await warehouses.rename_warehouse(state(), metadata(), warehouse_id, body.new_name)
    return json_response(warehouse_json(warehouse))


@blueprint.post("/warehouse/<warehouse_id>/deactivate")
async def deactivate_warehouse(warehouse_id: str):
    await warehouses.set_warehouse_status(state(), metadata(), warehouse_id, "inactive")
    return empty(200)  # Lakekeeper answers 200 with no body


@blueprint.post("/warehouse/<warehouse_id>/activate")
async def activate_warehouse(warehouse_id: str):
    await warehouses.set_warehouse_status(state(), metadata(), warehouse_id, "active")
    return empty(200)


@blueprint.post("/warehouse/<warehouse_id>/delete-profile")
async def set_delete_profile(warehouse_id: str):
    warehouse = await warehouses.set_delete_profile(state(), metadata(), warehouse_id, await json_body())
    return json_response(warehouse_json(warehouse))


@blueprint.post("/warehouse/<warehouse_id>/format-version-policy")
async def set_format_version_policy(warehouse_id: str):
    warehouse = await warehouses.set_format_version_policy(state(), metadata(), warehouse_id, await json_body())
    return json_response(warehouse_json(warehouse))


@blueprint.get("/warehouse/<warehouse_id>/protection")
async def get_warehouse_protection(warehouse_id: str):
    warehouse = await warehouses.get_warehouse(state(), metadata(), warehouse_id)
    return json_response(protection_json(warehouse.protected, warehouse.updated_at))


@blueprint.post("/warehouse/<warehouse_id>/protection")
async def set_warehouse_protection(warehouse_id: str):
    body = structure_body(await json_body(), ProtectionRequest)
    warehouse = await warehouses.set_warehouse_protection(state(), metadata(), warehouse_id, body.protected)
    return json_response(protection_json(warehouse.protected, warehouse.updated_at))


# ---------------------------------------------------------------- storage


@blueprint.post("/warehouse/<warehouse_id>/storage")
async def update_storage(warehouse_id: str):
    warehouse = await warehouses.update_storage(state(), metadata(), warehouse_id, await json_body())
    return json_response(warehouse_json(warehouse))


@blueprint.post("/warehouse/<warehouse_id>/storage-credential")
async def update_storage_credential(warehouse_id: str):
    body = await optional_json_body()
    warehouse = await warehouses.update_credential(state(), metadata(), warehouse_id, {} if body is None else body)
    return json_response(warehouse_json(warehouse))


@blueprint.post("/warehouse/<warehouse_id>/storage/validate-profile")
async def validate_storage_profile(warehouse_id: str):
    report = await warehouses.update_storage(state(), metadata(), warehouse_id, await json_body(), dry_run=True)
    return json_response(report)


@blueprint.post("/warehouse/<warehouse_id>/storage/validate-credential")
async def validate_storage_credential(warehouse_id: str):
    body = await optional_json_body()
    credential = {} if body is None else body
    report = await warehouses.update_credential(state(), metadata(), warehouse_id, credential, dry_run=True)
    return json_response(report)


@blueprint.post("/warehouse/<warehouse_id>/storage/validate-access")
async def validate_storage_access(warehouse_id: str):
    return json_response(await warehouses.validate_access(state(), metadata(), warehouse_id))


# ---------------------------------------------------------------- statistics


@blueprint.get("/warehouse/<warehouse_id>/statistics")
async def warehouse_statistics(warehouse_id: str):
    token = request.args.get("page_token") or request.args.get("pageToken")
    size = query_int("page_size") or query_int("pageSize")
    return json_response(await statistics.warehouse_statistics(state(), metadata(), warehouse_id, token, size))


# ---------------------------------------------------------------- soft-deleted tabulars


@blueprint.get("/warehouse/<warehouse_id>/deleted-tabulars")
async def list_deleted_tabulars(warehouse_id: str):
    namespace_id = request.args.get("namespaceId") or None
    items, next_token = await deletion.list_deleted_tabulars(
        state(),
        metadata(),
        warehouse_id,
        namespace_id=namespace_id,
        page_token=request.args.get("pageToken") or None,
        page_size=query_int("pageSize"),
    )
    return json_response({"tabulars": items, "next-page-token": next_token})


@blueprint.post("/warehouse/<warehouse_id>/deleted-tabulars/undrop")
@blueprint.post("/warehouse/<warehouse_id>/deleted_tabulars/undrop")
async def undrop_tabulars(warehouse_id: str):
    body = structure_body(await json_body(), UndropRequest)
    await deletion.undrop_tabulars(state(), metadata(), warehouse_id, body.targets)
    return empty(204)


@blueprint.post("/warehouse/<warehouse_id>/search-tabular")
async def search_tabular(warehouse_id: str):
    found = await deletion.search_tabulars(state(), metadata(), warehouse_id, await json_body())
    return json_response({"tabulars": found})


@blueprint.post("/warehouse/<warehouse_id>/search-namespace")
async def search_namespace(warehouse_id: str):
    """Namespaces whose name contains the search string (an extension beside Lakekeeper's search-tabular)"""
    found = await search.search_namespaces(state(), metadata(), warehouse_id, await json_body())
    return json_response({"namespaces": found})


# ---------------------------------------------------------------- protection of namespaces, tables, views


@blueprint.get("/warehouse/<warehouse_id>/table/<table_id>/protection")
async def get_table_protection(warehouse_id: str, table_id: str):
    return json_response(await get_tabular_protection(state(), metadata(), warehouse_id, table_id, "table"))


@blueprint.post("/warehouse/<warehouse_id>/table/<table_id>/protection")
async def set_table_protection(warehouse_id: str, table_id: str):
    body = structure_body(await json_body(), ProtectionRequest)
    return json_response(
        await set_tabular_protection(state(), metadata(), warehouse_id, table_id, "table", body.protected)
    )


@blueprint.get("/warehouse/<warehouse_id>/view/<view_id>/protection")
async def get_view_protection(warehouse_id: str, view_id: str):
    return json_response(await get_tabular_protection(state(), metadata(), warehouse_id, view_id, "view"))


@blueprint.post("/warehouse/<warehouse_id>/view/<view_id>/protection")
async def set_view_protection(warehouse_id: str, view_id: str):
    body = structure_body(await json_body(), ProtectionRequest)
    return json_response(
        await set_tabular_protection(state(), metadata(), warehouse_id, view_id, "view", body.protected)
    )


@blueprint.get("/warehouse/<warehouse_id>/generic-table/<generic_table_id>/protection")
async def get_generic_table_protection(warehouse_id: str, generic_table_id: str):
    return json_response(
        await get_tabular_protection(state(), metadata(), warehouse_id, generic_table_id, kinds.GENERIC_TABLE)
    )


@blueprint.post("/warehouse/<warehouse_id>/generic-table/<generic_table_id>/protection")
async def set_generic_table_protection(warehouse_id: str, generic_table_id: str):
    body = structure_body(await json_body(), ProtectionRequest)
    return json_response(await set_tabular_protection(
        state(), metadata(), warehouse_id, generic_table_id, kinds.GENERIC_TABLE, body.protected
    ))


@blueprint.get("/warehouse/<warehouse_id>/namespace/<namespace_id>/protection")
async def get_namespace_protection(warehouse_id: str, namespace_id: str):
    return json_response(await protection.get_namespace_protection(state(), metadata(), warehouse_id, namespace_id))


@blueprint.post("/warehouse/<warehouse_id>/namespace/<namespace_id>/protection")
async def set_namespace_protection(warehouse_id: str, namespace_id: str):
    body = structure_body(await json_body(), ProtectionRequest)
    return json_response(
        await protection.set_namespace_protection(state(), metadata(), warehouse_id, namespace_id, body.protected)
    )


@blueprint.post("/warehouse/<warehouse_id>/namespace/<namespace_id>/move")
async def move_namespace(warehouse_id: str, namespace_id: str):
    body = await json_body()
    if not isinstance(body, dict):
        raise bad_request("Request body must be a JSON object")
    if "destination" not in body:
        raise bad_request("Invalid request body: required field missing @ body.destination")
    force = body.get("force", False)
    if not isinstance(force, bool):
        raise bad_request("Invalid request body: expected bool @ body.force")
    result = await namespace_admin.move_namespace(
        state(), metadata(), warehouse_id, namespace_id, body["destination"], force=force
    )
    return json_response(result)
