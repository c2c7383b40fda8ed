"""Protection of namespaces, tables, views and generic tables (Lakekeeper §9.3).

Protected objects cannot be dropped without ``force``; the drop paths (server/tabulars/deletion.py,
server/namespaces/admin.py, warehouse delete) enforce it. Warehouse protection lives in
server/warehouses/settings.py.
"""

from __future__ import annotations

import uuid
from typing import Any

from lakekeeper_host.errors import not_found
from lakekeeper_host.serde import iso_timestamp
from lakekeeper_host.server import kinds
from lakekeeper_host.server.authorize import authorize
from lakekeeper_host.server.resolve import require_warehouse
from lakekeeper_host.service.request import RequestMetadata
from lakekeeper_host.service.state import AppState
from lakekeeper_host.store import namespace_admin as ns_store
from lakekeeper_host.store import tabular_admin


def _uuid_or_404(value: str, what: str) -> str:
    try:
        return str(uuid.UUID(value))
    except ValueError:
        raise not_found(f"{what} {value} not found", f"{what}NotFound") from None


def protection_json(protected: bool, updated_at: int | None) -> dict[str, Any]:

    # `updated_at` as Lakekeeper writes it (its ProtectionResponse has no kebab-case rename); `updated-at`
    # kept for this server's earlier clients
    updated = iso_timestamp(updated_at)
    return {"protected": bool(protected), "updated_at": updated, "updated-at": updated}


async def get_tabular_protection(
    state: AppState, meta: RequestMetadata, warehouse_id: str, tabular_id: str, typ: str
) -> dict[str, Any]:
    warehouse = await require_warehouse(state, warehouse_id, active_only=True)
    label = kinds.error_label(typ)
    row = await tabular_admin.get_tabular_info(state.store, warehouse.id, _uuid_or_404(tabular_id, label))
    if row is None or row.typ != typ:
        raise not_found(f"{label} {tabular_id} not found", f"{label}NotFound")
    await authorize(state, meta, "get_metadata", typ, row.id, warehouse.id,
                    hidden=not_found(f"{label} {tabular_id} not found", f"{label}NotFound"))
    return protection_json(row.protected, row.updated_at)


async def set_tabular_protection(
    state: AppState, meta: RequestMetadata, warehouse_id: str, tabular_id: str, typ: str, protected: bool
) -> dict[str, Any]:
    warehouse = await require_warehouse(state, warehouse_id, active_only=True)
    label = kinds.error_label(typ)
    await authorize(state, meta, "set_protection", typ, tabular_id, warehouse.id,
                    hidden=not_found(f"{label} {tabular_id} not found", f"{label}NotFound"))
    async with state.store.transaction() as tx:
        row = await tabular_admin.set_protection(tx, warehouse.id, _uuid_or_404(tabular_id, label), typ, protected)
    if row is None:
        raise not_found(f"{label} {tabular_id} not found", f"{label}NotFound")
    return protection_json(row.protected, row.updated_at)


async def get_namespace_protection(
    state: AppState, meta: RequestMetadata, warehouse_id: str, namespace_id: str
) -> dict[str, Any]:
    warehouse = await require_warehouse(state, warehouse_id, active_only=True)
    row = await ns_store.get_namespace_row(state.store, warehouse.id, _uuid_or_404(namespace_id, "Namespace"))
    if row is None:
        raise not_found(f"Namespace {namespace_id} not found", "NamespaceNotFound")
    await authorize(state, meta, "get_metadata", "namespace", namespace_id, warehouse.id,
                    hidden=not_found(f"Namespace {namespace_id} not found", "NamespaceNotFound"))
    return protection_json(row["protected"], row["updated_at"])


async def set_namespace_protection(
    state: AppState, meta: RequestMetadata, warehouse_id: str, namespace_id: str, protected: bool
) -> dict[str, Any]:
    warehouse = await require_warehouse(state, warehouse_id, active_only=True)
    await authorize(state, meta, "set_protection", "namespace", namespace_id, warehouse.id,
                    hidden=not_found(f"Namespace {namespace_id} not found", "NamespaceNotFound"))
    async with state.store.transaction() as tx:
        row = await ns_store.set_namespace_protection(
            tx, warehouse.id, _uuid_or_404(namespace_id, "Namespace"), protected
        )
    if row is None:
        raise not_found(f"Namespace {namespace_id} not found", "NamespaceNotFound")
    return protection_json(row["protected"], row["updated_at"])
