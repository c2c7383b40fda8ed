"""Warehouse settings: rename, activate/deactivate, delete profile, protection, format versions."""

from __future__ import annotations

from typing import Any

from attrs import frozen

from lakekeeper_host.errors import already_exists, bad_request
from lakekeeper_host.serde import structure_body
from lakekeeper_host.server import events
from lakekeeper_host.server.authorize import authorize, authorize_warehouse
from lakekeeper_host.server.resolve import require_warehouse
from lakekeeper_host.server.warehouses.validation import (
    validate_delete_profile,
    validate_format_versions,
    validate_warehouse_name,
)
from lakekeeper_host.service.request import RequestMetadata
from lakekeeper_host.service.state import AppState
from lakekeeper_host.store import warehouses as warehouse_store
from lakekeeper_host.store.warehouses import WarehouseRow


@frozen
class FormatVersionPolicy:
    allowed_format_versions: list[int]
    default_format_version: int | None = None


async def rename_warehouse(state: AppState, meta: RequestMetadata, warehouse_id: str, new_name: str) -> WarehouseRow:
    warehouse = await require_warehouse(state, warehouse_id)
    await authorize_warehouse(state, meta, "rename", warehouse.id)
    validate_warehouse_name(new_name)
    other = await warehouse_store.get_warehouse_by_name(state.store, warehouse.project_id, new_name)
    if other is not None and other.id != warehouse.id:
        raise already_exists(f"Warehouse {new_name!r} already exists in the project", "WarehouseAlreadyExists")
    try:
        await warehouse_store.update_warehouse(state.store, warehouse.id, name=new_name)
    except Exception as exc:  # the unique index lost a race
        if "unique" in str(exc).lower():
            raise already_exists(
                f"Warehouse {new_name!r} already exists in the project", "WarehouseAlreadyExists"
            ) from None
        raise
    events.warehouse_renamed(state, meta, warehouse.id, new_name, warehouse.project_id, old_name=warehouse.name)
    return await require_warehouse(state, warehouse.id)


async def set_warehouse_status(state: AppState, meta: RequestMetadata, warehouse_id: str, status: str) -> WarehouseRow:
    warehouse = await require_warehouse(state, warehouse_id)
    await authorize(state, meta, "activate" if status == "active" else "deactivate", "warehouse", warehouse.id)
    if warehouse.status != status:
        await warehouse_store.update_warehouse(state.store, warehouse.id, status=status)
    return await require_warehouse(state, warehouse.id)


async def set_delete_profile(state: AppState, meta: RequestMetadata, warehouse_id: str, body: Any) -> WarehouseRow:
    if not isinstance(body, dict):
        raise bad_request("Request body must be a JSON object")
    if "delete-profile" not in body:
        raise bad_request("Invalid request body: required field missing @ body.delete-profile")
    profile = validate_delete_profile(body["delete-profile"])
    warehouse = await require_warehouse(state, warehouse_id, active_only=True)
    await authorize_warehouse(state, meta, "modify_soft_deletion", warehouse.id)
    await warehouse_store.update_warehouse(state.store, warehouse.id, delete_profile=profile)
    return await require_warehouse(state, warehouse.id)


async def set_warehouse_protection(
    state: AppState, meta: RequestMetadata, warehouse_id: str, protected: bool
) -> WarehouseRow:
    warehouse = await require_warehouse(state, warehouse_id)
    await authorize_warehouse(state, meta, "set_protection", warehouse.id)
    await warehouse_store.update_warehouse(state.store, warehouse.id, protected=protected)
    return await require_warehouse(state, warehouse.id)


async def set_format_version_policy(
    state: AppState, meta: RequestMetadata, warehouse_id: str, body: Any
) -> WarehouseRow:
    request = structure_body(body, FormatVersionPolicy)
    allowed, default = validate_format_versions(request.allowed_format_versions, request.default_format_version)
    warehouse = await require_warehouse(state, warehouse_id)
    await authorize_warehouse(state, meta, "set_format_version_policy", warehouse.id)
    await warehouse_store.update_warehouse(
        state.store, warehouse.id, allowed_format_versions=allowed, default_format_version=default
    )
    return await require_warehouse(state, warehouse.id)
