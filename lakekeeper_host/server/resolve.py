"""Resolving what a request is about: project, warehouse, namespace, table, view or generic table; a missing
one is a 404."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from lakekeeper_host.errors import (
    CatalogError,
    bad_request,
    no_such_generic_table,
    no_such_namespace,
    no_such_table,
    no_such_view,
    no_such_warehouse,
)
from lakekeeper_host.server.names import validate_name, validate_namespace
from lakekeeper_host.service.state import AppState
from lakekeeper_host.store import namespaces as namespace_store
from lakekeeper_host.store import tabulars as tabular_store
from lakekeeper_host.store import warehouses as warehouse_store
from lakekeeper_host.store.namespaces import NamespaceRow
from lakekeeper_host.store.tabulars import TabularRow
from lakekeeper_host.store.warehouses import WarehouseRow


def resolve_project_id(state: AppState, header_value: str | None, explicit: str | None = None) -> str:
    """Project from an explicit value, ``x-project-id``, or the default project."""
    project_id = explicit or header_value
    if project_id:
        try:
            return str(uuid.UUID(project_id))
        except ValueError:
            raise bad_request(f"Invalid project id {project_id!r}: expected a UUID", "InvalidProjectId") from None
    if state.settings.host.enable_default_project:
        return state.settings.host.default_project_id
    raise CatalogError(
        400, "NoProjectIdProvided", "No project given: set the x-project-id header (default project is disabled)"
    )


async def require_warehouse(
    state: AppState, warehouse_id: str, *, active_only: bool = False, cached: bool = False
) -> WarehouseRow:
    """The warehouse with this id; 404 when it is missing (or inactive, with ``active_only``).

    ``cached`` reads through the per-process warehouse cache (catalog routes, which re-check the
    row's version with every query through :func:`current_warehouse`).
    """
    try:
        warehouse_id = str(uuid.UUID(warehouse_id))
    except (ValueError, TypeError):
        raise no_such_warehouse(f"Warehouse {warehouse_id} not found") from None
    get = warehouse_store.get_warehouse_cached if cached else warehouse_store.get_warehouse
    warehouse = await get(state.store, warehouse_id)
    if warehouse is None or (active_only and not warehouse.is_active):
        raise no_such_warehouse(f"Warehouse {warehouse_id} not found")
    return warehouse


async def catalog_warehouse(state: AppState, prefix: str | None) -> WarehouseRow:
    """The ACTIVE warehouse named by a catalog route's ``{prefix}`` (its id); 400 without one."""
    if not prefix:
        raise bad_request("No prefix specified. The warehouse-id must be provided as prefix in the URL.",
                          "NoPrefixProvided")
    return await require_warehouse(state, prefix, active_only=True, cached=True)


async def current_warehouse(state: AppState, warehouse: WarehouseRow, version: int, status: str) -> WarehouseRow:
    """``warehouse`` (maybe from the cache) checked against the ``version``/``status`` a query just
    read: a newer row (changed on another replica) is fetched; inactive or gone is a 404."""
    if warehouse.version == version and status == "active":
        return warehouse
    return await refresh_warehouse(state, warehouse.id)


async def refresh_warehouse(state: AppState, warehouse_id: str) -> WarehouseRow:
    """The active warehouse as the database has it now (re-cached); 404 when inactive or gone."""
    warehouse_store.forget_warehouse(state.store, warehouse_id)
    fresh = await warehouse_store.get_warehouse_cached(state.store, warehouse_id)
    if fresh is None or not fresh.is_active:
        raise no_such_warehouse(f"Warehouse {warehouse_id} not found")
    return fresh


async def get_namespace(state: AppState, warehouse: WarehouseRow, parts: Sequence[str]) -> NamespaceRow | None:
    return await namespace_store.get_namespace(state.store, warehouse.id, parts)


async def require_namespace(state: AppState, warehouse: WarehouseRow, parts: Sequence[str]) -> NamespaceRow:
    """The namespace, or 404 ``NoSuchNamespaceException`` "Namespace does not exist: a.b"."""
    namespace = await get_namespace(state, warehouse, parts)
    if namespace is None:
        raise no_such_namespace(parts)
    return namespace


def tabular_not_found(typ: str, namespace: Sequence[str], name: str) -> CatalogError:
    if typ == "generic_table":
        return no_such_generic_table(namespace, name)
    return no_such_table(namespace, name) if typ == "table" else no_such_view(namespace, name)


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
        raise tabular_not_found(typ, parts, name)
    return found


async def resolve_table(
    state: AppState, warehouse: WarehouseRow, parts: list[str], name: str, *, typ: str = "table",
    include_staged: bool = False,
) -> tuple[NamespaceRow, TabularRow]:
    """Namespace and live row of a table/view; 404 ``NoSuch<Table|View>Exception`` when either is missing."""
    found = await lookup_tabular(state, warehouse, parts, name, typ=typ, include_staged=include_staged)
    assert found.namespace is not None and found.tabular is not None
    return found.namespace, found.tabular
