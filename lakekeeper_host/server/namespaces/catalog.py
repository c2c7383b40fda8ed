"""The Iceberg namespace operations: list, create, load, exists, drop, update properties."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lakekeeper_host.errors import CatalogError, already_exists, bad_request, no_such_namespace, no_such_warehouse
from lakekeeper_host.server import events
from lakekeeper_host.server.authorize import authorize, created, visible_page
from lakekeeper_host.server.names import check_properties_size, validate_namespace, validate_new_namespace
from lakekeeper_host.server.namespaces.admin import drop_namespace as admin_drop
from lakekeeper_host.server.namespaces.layout import (
    LOCATION_PROPERTY,
    default_namespace_location,
    storage_layout,
    with_trailing_slash,
)
from lakekeeper_host.server.pagination import decode_page_token, encode_page_token, page_limit
from lakekeeper_host.server.resolve import require_namespace
from lakekeeper_host.service.authz import Resource
from lakekeeper_host.service.request import RequestMetadata
from lakekeeper_host.service.state import AppState
from lakekeeper_host.store import namespaces as namespace_store
from lakekeeper_host.store import new_id
from lakekeeper_host.store.namespaces import NamespaceRow
from lakekeeper_host.store.warehouses import WarehouseRow

NAMESPACE_ID_PROPERTY = "namespace_id"


MANAGED_PROPERTIES = (NAMESPACE_ID_PROPERTY, "managed_access")


def validate_property_keys(keys: Sequence[str]) -> None:
    for key in keys:
        if key != key.lower():
            raise bad_request(f"The property '{key}' is not all lowercase.", f"{key[:1].upper()}{key[1:]}NotLowercase")


def is_reserved(state: AppState, parts: Sequence[str]) -> bool:
    return bool(parts) and parts[0].lower() in state.settings.host.all_reserved_namespaces


def properties_json(namespace: NamespaceRow) -> dict[str, str]:
    return {**namespace.properties, NAMESPACE_ID_PROPERTY: namespace.id}


async def list_namespaces(
    state: AppState,
    meta: RequestMetadata,
    warehouse: WarehouseRow,
    parent: list[str] | None,
    *,
    page_token: str | None,
    page_size: int | None,
    return_uuids: bool = False,
    return_protection_status: bool = False,
) -> dict[str, Any]:
    # ------------------------------------------------ VALIDATIONS
    if parent is not None:
        validate_namespace(parent)
    after = decode_page_token(page_token, str)
    limit = page_limit(state, page_token, page_size)
    # ------------------------------------------------ AUTHZ
    parent_row = await require_namespace(state, warehouse, parent) if parent else None
    if parent_row is None:
        await authorize(state, meta, "list_namespaces", "warehouse", warehouse.id, warehouse.id,
                        hidden=no_such_warehouse(f"Warehouse {warehouse.id} not found"))
    else:
        await authorize(state, meta, "list_namespaces", "namespace", parent_row.id, warehouse.id,
                        hidden=no_such_namespace(parent or []))
    # ------------------------------------------------ BUSINESS LOGIC

    async def fetch(key: str | None, n: int, ids: frozenset[str] | None) -> list[NamespaceRow]:
        return await namespace_store.list_child_namespaces(
            state.store, warehouse.id, parent_row.id if parent_row else None, after=key, limit=n, ids=ids
        )

    rows, more = await visible_page(
        state, meta, fetch, lambda r: namespace_store.encode_namespace_name(r.parts).casefold(),
        lambda r: Resource("namespace", r.id, warehouse.id), after=after[0] if after else None, limit=limit,
        kind="namespace",
        everything=Resource("namespace", parent_row.id, warehouse.id) if parent_row is not None
        else Resource("warehouse", warehouse.id, warehouse.id),
    )
    result: dict[str, Any] = {"namespaces": [list(r.parts) for r in rows]}
    last_key = namespace_store.encode_namespace_name(rows[-1].parts).casefold() if rows else ""
    result["next-page-token"] = encode_page_token(last_key) if more else None
    if return_uuids:
        result["namespace-uuids"] = [r.id for r in rows]
    if return_protection_status:
        result["protection-status"] = [r.protected for r in rows]
    return result


async def create_namespace(
    state: AppState, meta: RequestMetadata, warehouse: WarehouseRow, body: Any
) -> dict[str, Any]:
    # ------------------------------------------------ VALIDATIONS
    if not isinstance(body, dict):
        raise bad_request("Invalid request body: expected a JSON object")
    parts = body.get("namespace")
    if not isinstance(parts, list) or not all(isinstance(p, str) for p in parts):
        raise bad_request("Invalid request body: namespace must be a list of strings @ body.namespace")
    properties = body.get("properties") or {}
    if not isinstance(properties, dict) or not all(isinstance(v, str) for v in properties.values()):
        raise bad_request("Invalid request body: properties must map strings to strings @ body.properties")
    validate_new_namespace(parts)
    validate_property_keys(list(properties))
    check_properties_size(properties, "namespace")
    if is_reserved(state, parts):
        raise bad_request("Namespace is reserved for internal use.", "ReservedNamespace")
    properties = {k: v for k, v in properties.items() if k not in MANAGED_PROPERTIES}

    # ------------------------------------------------ AUTHZ
    parent = await require_namespace(state, warehouse, parts[:-1]) if len(parts) > 1 else None
    if parent is None:
        await authorize(state, meta, "create_namespace", "warehouse", warehouse.id, warehouse.id,
                        hidden=no_such_warehouse(f"Warehouse {warehouse.id} not found"))
    else:
        await authorize(state, meta, "create_namespace", "namespace", parent.id, warehouse.id,
                        hidden=no_such_namespace(parts[:-1]))

    # ------------------------------------------------ BUSINESS LOGIC
    namespace_id = new_id()
    storage = await state.storage_for(warehouse)
    requested = properties.get(LOCATION_PROPERTY)
    if requested:
        if not storage.is_allowed_location(requested):
            raise bad_request(
                f"Location {requested} is not allowed: "
                f"it must be inside the warehouse location {storage.base_location()}",
                "InvalidLocation",
            )
        location = with_trailing_slash(requested)
    else:
        location = default_namespace_location(
            storage.base_location(), parent, parts[-1], namespace_id, storage_layout(warehouse)
        )
    properties[LOCATION_PROPERTY] = location
    async with state.store.transaction() as tx:
        if parent is not None and await namespace_store.get_namespace_by_id(tx, parent.id) is None:
            raise no_such_namespace(parts[:-1])  # dropped meanwhile
        inserted = await namespace_store.insert_namespace(
            tx,
            namespace_id=namespace_id,
            warehouse_id=warehouse.id,
            parts=parts,
            parent_id=parent.id if parent else None,
            properties=properties,
        )
    if not inserted:
        raise already_exists(f"Namespace already exists: {'.'.join(parts)}")

    # ------------------------------------------------ EVENTS
    # createNamespace
    events.namespace_created(state, meta, warehouse, parts, namespace_id, properties, prefix=warehouse.id)
    await created(state, meta, "namespace", namespace_id,
                  ("namespace", parent.id) if parent else ("warehouse", warehouse.id), warehouse.id)

    return {"namespace": list(parts), "properties": {**properties, NAMESPACE_ID_PROPERTY: namespace_id}}


async def load_namespace(
    state: AppState, meta: RequestMetadata, warehouse: WarehouseRow, parts: list[str], *, return_uuid: bool = False
) -> dict[str, Any]:
    validate_namespace(parts)
    namespace = await require_namespace(state, warehouse, parts)
    await authorize(state, meta, "get_metadata", "namespace", namespace.id, warehouse.id,
                    hidden=no_such_namespace(parts))
    result: dict[str, Any] = {"namespace": list(namespace.parts), "properties": properties_json(namespace)}
    if return_uuid:
        result["namespace-uuid"] = namespace.id
    return result


async def namespace_exists(state: AppState, meta: RequestMetadata, warehouse: WarehouseRow, parts: list[str]) -> None:
    """Returns when the namespace exists; 404 otherwise."""
    validate_namespace(parts)
    namespace = await require_namespace(state, warehouse, parts)
    await authorize(state, meta, "get_metadata", "namespace", namespace.id, warehouse.id,
                    hidden=no_such_namespace(parts))


async def drop_namespace(
    state: AppState,
    meta: RequestMetadata,
    warehouse: WarehouseRow,
    parts: list[str],
    *,
    recursive: bool = False,
    force: bool = False,
    purge: bool = False,
) -> None:
    """Drop a namespace: empty only, unless ``recursive`` (see ``server/namespaces/admin.py``)."""
    # ------------------------------------------------ VALIDATIONS
    validate_namespace(parts)
    if is_reserved(state, parts):
        raise bad_request("Cannot drop namespace which is reserved for internal use.", "ReservedNamespace")
    namespace = await require_namespace(state, warehouse, parts)
    # ------------------------------------------------ AUTHZ
    await authorize(state, meta, "delete", "namespace", namespace.id, warehouse.id, hidden=no_such_namespace(parts))
    # ------------------------------------------------ BUSINESS LOGIC

    try:
        await admin_drop(state, meta, warehouse, namespace.id, recursive=recursive, force=force, purge=purge)
    except CatalogError as error:
        if error.code == 404:  # dropped concurrently
            raise no_such_namespace(parts) from None
        raise

    # ------------------------------------------------ EVENTS
    # dropNamespace
    flags = {"recursive": recursive, "force": force, "purge": purge}
    events.namespace_dropped(state, meta, warehouse, parts, namespace.id, flags, prefix=warehouse.id)


async def update_namespace_properties(
    state: AppState, meta: RequestMetadata, warehouse: WarehouseRow, parts: list[str], body: Any
) -> dict[str, Any]:
    # ------------------------------------------------ VALIDATIONS
    validate_namespace(parts)
    if not isinstance(body, dict):
        raise bad_request("Invalid request body: expected a JSON object")
    removals = body.get("removals") or []
    updates = body.get("updates") or {}
    if not isinstance(removals, list) or not all(isinstance(k, str) for k in removals):
        raise bad_request("Invalid request body: removals must be a list of strings @ body.removals")
    if not isinstance(updates, dict) or not all(isinstance(v, str) for v in updates.values()):
        raise bad_request("Invalid request body: updates must map strings to strings @ body.updates")
    validate_property_keys([*removals, *updates])
    both = sorted(set(removals) & set(updates))
    if both:
        raise CatalogError(
            422, "UnprocessableEntityException", f"Cannot remove and update the same key: {', '.join(both)}"
        )
    if LOCATION_PROPERTY in removals:
        raise bad_request("Namespace property `location` cannot be removed.", "LocationCannotBeRemoved")
    if LOCATION_PROPERTY in updates:
        raise bad_request("Namespace property `location` cannot be updated.", "LocationCannotBeUpdated")
    updates = {k: v for k, v in updates.items() if k not in MANAGED_PROPERTIES}

    # ------------------------------------------------ AUTHZ
    namespace = await require_namespace(state, warehouse, parts)
    await authorize(state, meta, "update_properties", "namespace", namespace.id, warehouse.id,
                    hidden=no_such_namespace(parts))

    # ------------------------------------------------ BUSINESS LOGIC
    for _ in range(10):  # optimistic: re-read and retry when a concurrent update won
        properties = dict(namespace.properties)
        updated, removed, missing = [], [], []
        for key in removals:
            if key in properties:
                del properties[key]
                removed.append(key)
            else:
                missing.append(key)
        for key, value in updates.items():
            if properties.get(key) != value:
                updated.append(key)
            properties[key] = value
        check_properties_size(properties, "namespace")
        async with state.store.transaction() as tx:
            swapped = await namespace_store.replace_properties(tx, namespace.id, properties, version=namespace.version)
        if swapped:
            break
        namespace = await require_namespace(state, warehouse, parts)
    else:
        raise CatalogError(409, "ConcurrentUpdateError", "The namespace properties were changed concurrently; retry")

    # ------------------------------------------------ EVENTS
    # updateNamespaceProperties
    events.namespace_properties_updated(
        state, meta, warehouse, parts, namespace.id, updates, removals, prefix=warehouse.id
    )

    # ``missing`` is always a list: PyIceberg's response model requires it
    return {"updated": updated, "removed": removed, "missing": missing}
