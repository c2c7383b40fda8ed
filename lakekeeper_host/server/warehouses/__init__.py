"""Warehouses: validation (the storage check pipeline), create, lookup, settings, storage changes, delete."""

from __future__ import annotations

from lakekeeper_host.server.warehouses.create import create_warehouse, validate_creation
from lakekeeper_host.server.warehouses.delete import delete_warehouse
from lakekeeper_host.server.warehouses.lookup import get_warehouse, list_warehouses
from lakekeeper_host.server.warehouses.settings import (
    rename_warehouse,
    set_delete_profile,
    set_format_version_policy,
    set_warehouse_protection,
    set_warehouse_status,
)
from lakekeeper_host.server.warehouses.storage import update_credential, update_storage, validate_access
from lakekeeper_host.server.warehouses.validation import effective_format_versions

__all__ = [
    "create_warehouse",
    "delete_warehouse",
    "effective_format_versions",
    "get_warehouse",
    "list_warehouses",
    "rename_warehouse",
    "set_delete_profile",
    "set_format_version_policy",
    "set_warehouse_protection",
    "set_warehouse_status",
    "update_credential",
    "update_storage",
    "validate_access",
    "validate_creation",
]
