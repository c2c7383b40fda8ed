"""``GET /catalog/v1/config?warehouse=[<project-id>/]<name>`` (Lakekeeper ``server/config.rs``).

The response tells a client which warehouse it talks to and where: ``defaults.prefix`` is the
warehouse id, ``defaults.rest-page-size`` the default page size, ``overrides.uri`` the catalog
base URL, and ``endpoints`` every Iceberg operation this server serves -- derived from the routes
actually mounted, so an operation appears as soon as some module serves it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from lakekeeper_host.errors import CatalogError, no_such_warehouse
from lakekeeper_host.server.authorize import authorize
from lakekeeper_host.server.idempotency import advertised_lifetime
from lakekeeper_host.server.resolve import resolve_project_id
from lakekeeper_host.service.request import RequestMetadata
from lakekeeper_host.service.state import AppState
from lakekeeper_host.store import warehouses as warehouse_store

CATALOG_MOUNT = "/catalog"

# Every operation of the Iceberg REST spec, in the spec's own notation.
SPEC_ENDPOINTS = (
    "GET /v1/{prefix}/namespaces",
    "POST /v1/{prefix}/namespaces",
    "GET /v1/{prefix}/namespaces/{namespace}",
    "HEAD /v1/{prefix}/namespaces/{namespace}",
    "DELETE /v1/{prefix}/namespaces/{namespace}",
    "POST /v1/{prefix}/namespaces/{namespace}/properties",
    "GET /v1/{prefix}/namespaces/{namespace}/tables",
    "POST /v1/{prefix}/namespaces/{namespace}/tables",
    "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "POST /v1/{prefix}/namespaces/{namespace}/register",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics",
    "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/unregister",
    "POST /v1/{prefix}/tables/rename",
    "POST /v1/{prefix}/transactions/commit",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan",
    "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan/{plan-id}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan/{plan-id}",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/tasks",
    "GET /v1/{prefix}/namespaces/{namespace}/views",
    "POST /v1/{prefix}/namespaces/{namespace}/views",
    "GET /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "HEAD /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "POST /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "POST /v1/{prefix}/views/rename",
    "POST /v1/{prefix}/namespaces/{namespace}/register-view",
)

_VARIABLE = re.compile(r"<(?:[a-z_]+:)?([a-z_]+)>")


def served_endpoints(routes: Iterable[tuple[str, Iterable[str]]]) -> list[str]:
    """The spec endpoints among ``(rule, methods)`` of the mounted routes, in spec order.

    A rule ``/catalog/v1/<prefix>/namespaces/<namespace>`` is the spec path
    ``/v1/{prefix}/namespaces/{namespace}`` (``plan_id`` -> ``{plan-id}``).
    """
    offered = set()
    for rule, methods in routes:
        if not rule.startswith(CATALOG_MOUNT + "/v1/"):
            continue
        path = _VARIABLE.sub(lambda m: "{" + m.group(1).replace("_", "-") + "}", rule[len(CATALOG_MOUNT):])
        for method in methods:
            offered.add(f"{method} {path}")
    return [endpoint for endpoint in SPEC_ENDPOINTS if endpoint in offered]


def parse_warehouse_argument(state: AppState, meta: RequestMetadata, value: str | None) -> tuple[str, str]:
    """``[<project-id>/]<name>`` -> (project id, warehouse name)."""
    if not value:
        raise CatalogError(
            400, "GetConfigNoWarehouseProvided", "No warehouse specified. Please specify the 'warehouse' parameter."
        )
    project, sep, name = value.partition("/")
    if sep:  # warehouse names contain no '/', so the part before one is a project id
        return resolve_project_id(state, None, project), name
    return resolve_project_id(state, meta.project_id), value


async def get_config(
    state: AppState, meta: RequestMetadata, warehouse_argument: str | None, routes: Iterable[tuple[str, Iterable[str]]]
) -> dict[str, Any]:
    # ------------------------------------------------ VALIDATIONS
    project_id, name = parse_warehouse_argument(state, meta, warehouse_argument)
    warehouse = await warehouse_store.get_warehouse_by_name(state.store, project_id, name)
    if warehouse is None or not warehouse.is_active:
        raise no_such_warehouse(f"Warehouse {name} not found")
    # ------------------------------------------------ AUTHZ
    await authorize(state, meta, "get_config", "warehouse", warehouse.id, warehouse.id,
                    hidden=no_such_warehouse(f"Warehouse {name} not found"))
    # ------------------------------------------------ BUSINESS LOGIC
    storage = await state.storage_for(warehouse)
    defaults = {
        **storage.catalog_defaults(soft_delete_enabled=warehouse.soft_delete_seconds is not None),
        "prefix": warehouse.id,
        "rest-page-size": str(state.settings.host.pagination_size_default),
    }
    config = {
        "defaults": defaults,
        "overrides": {"uri": f"{meta.base_uri}{CATALOG_MOUNT}"},
        "endpoints": served_endpoints(routes),
    }

    lifetime = advertised_lifetime(state)
    if lifetime:
        config["idempotency-key-lifetime"] = lifetime
    return config
