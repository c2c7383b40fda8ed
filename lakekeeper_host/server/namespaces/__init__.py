"""Namespaces: the catalog operations, the management operations (drop, move) and location layout."""

from __future__ import annotations

from lakekeeper_host.server.namespaces.catalog import (
    create_namespace,
    drop_namespace,
    list_namespaces,
    load_namespace,
    namespace_exists,
    update_namespace_properties,
)

__all__ = [
    "create_namespace",
    "drop_namespace",
    "list_namespaces",
    "load_namespace",
    "namespace_exists",
    "update_namespace_properties",
]
