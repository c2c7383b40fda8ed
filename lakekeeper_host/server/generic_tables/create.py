"""createGenericTable: a new ``tabular`` row of kind ``generic_table`` and its details.

Request (Lakekeeper's ``CreateGenericTableRequest``, kebab-case): ``name``, ``format``
(``^[a-z][a-z0-9_-]{0,63}$``), optional ``base-location``, ``doc``, ``properties`` (strings to
strings), ``schema`` and ``statistics`` (any JSON, at most 1 MiB each). The answer is a
``LoadGenericTableResponse`` without ``config`` or credentials (Lakekeeper): a writer loads the
table with ``X-Iceberg-Access-Delegation`` to get them.

A client-chosen ``base-location`` must lie inside the warehouse and overlap no other table, view
or generic table (live, staged or soft-deleted); it need not be empty, so data written before
(a Parquet drop, a Lance dataset) can be cataloged where it is.
"""

from __future__ import annotations

import json
import re
from typing import Any

from lakekeeper_host.errors import CatalogError, bad_request, no_such_namespace
from lakekeeper_host.ids import new_id
from lakekeeper_host.server import events, kinds
from lakekeeper_host.server.authorize import authorize, created
from lakekeeper_host.server.generic_tables.load import generic_table_json
from lakekeeper_host.server.names import conflict_for_existing, ident, validate_namespace
from lakekeeper_host.server.resolve import require_namespace
from lakekeeper_host.server.tabulars.locations import (
    check_location_available,
    default_tabular_location,
    requested_location,
)
from lakekeeper_host.server.tabulars.staged import forget_staged, remove_staged
from lakekeeper_host.service.request import RequestMetadata
from lakekeeper_host.service.state import AppState
from lakekeeper_host.store import generic_tables as generic_store
from lakekeeper_host.store import tabulars as tabular_store
from lakekeeper_host.store.generic_tables import GenericTableDetails
from lakekeeper_host.store.warehouses import WarehouseRow

FORMAT = re.compile(r"[a-z][a-z0-9_-]{0,63}")
MAX_BLOB_BYTES = 1024 * 1024  # schema and statistics, each (Lakekeeper's limit)


def _invalid(field: str, why: str) -> CatalogError:
    return bad_request(f"Invalid request body: {field} {why} @ body.{field}")


def _optional_string(body: dict[str, Any], field: str) -> str | None:
    value = body.get(field)
    if value is not None and not isinstance(value, str):
        raise _invalid(field, "must be a string")
    return value


def _blob(body: dict[str, Any], field: str) -> Any:
    value = body.get(field)
    if value is None:
        return None
    size = len(json.dumps(value, separators=(",", ":")).encode())
    if size > MAX_BLOB_BYTES:
        raise bad_request(
            f"Generic table {field} payload of {size} bytes exceeds the {MAX_BLOB_BYTES}-byte limit.",
            "PayloadTooLarge",
        )
    return value


def parse_create(body: Any) -> tuple[str, GenericTableDetails, str | None]:
    """(name, details with an empty id, base-location) of a create request; 400 when malformed."""
    if not isinstance(body, dict):
        raise bad_request("Invalid request body: expected a JSON object")
    name, format_ = body.get("name"), body.get("format")
    if not isinstance(name, str):
        raise _invalid("name", "is required and must be a string")
    if not name:
        raise bad_request("Generic table name cannot be empty", "InvalidName")
    if "+" in name:
        raise bad_request("Generic table name cannot contain '+' character.", "InvalidName")
    if not isinstance(format_, str) or FORMAT.fullmatch(format_) is None:
        raise bad_request(
            "Generic table format must start with a lowercase letter, contain only lowercase letters, digits, "
            "'_' or '-', and be at most 64 characters.",
            "InvalidFormat",
        )
    properties = body.get("properties") or {}
    if not isinstance(properties, dict) or not all(isinstance(v, str) for v in properties.values()):
        raise _invalid("properties", "must map strings to strings")
    details = GenericTableDetails(
        id="", format=format_, doc=_optional_string(body, "doc"), schema=_blob(body, "schema"),
        statistics=_blob(body, "statistics"), properties=dict(properties),
    )
    return name, details, _optional_string(body, "base-location")


async def create_generic_table(
    state: AppState, meta: RequestMetadata, warehouse: WarehouseRow, parts: list[str], body: Any
) -> dict[str, Any]:
    """Create a generic table; returns its ``LoadGenericTableResponse`` (no config, no credentials)."""
    # ------------------------------------------------ VALIDATIONS
    validate_namespace(parts)
    name, details, base_location = parse_create(body)

    # ------------------------------------------------ AUTHZ
    namespace = await require_namespace(state, warehouse, parts)
    await authorize(state, meta, "create_generic_table", "namespace", namespace.id, warehouse.id,
                    hidden=no_such_namespace(parts))
    existing = await tabular_store.get_tabular(state.store, namespace.id, name)
    if existing is not None:
        raise _taken(existing.typ, parts, name)

    # ------------------------------------------------ BUSINESS LOGIC
    tabular_id = new_id()
    if base_location:
        location = await requested_location(state, warehouse, base_location)
    else:
        location = await default_tabular_location(state, warehouse, namespace, name, tabular_id)
    replaced = None
    async with state.store.transaction() as tx:
        current = await tabular_store.get_tabular(tx, namespace.id, name, include_staged=True)
        if current is not None and not current.staged:
            raise _taken(current.typ, parts, name)
        if current is not None:  # a staged table of that name gives way, as to a table or view
            replaced = await remove_staged(tx, namespace.id, name)
        await check_location_available(tx, warehouse, location)
        inserted = await tabular_store.insert_tabular(
            tx, tabular_id=tabular_id, warehouse_id=warehouse.id, namespace_id=namespace.id, name=name,
            typ=kinds.GENERIC_TABLE, location=location, metadata_location=None, metadata=None,
        )
        if not inserted:
            raise _taken(kinds.GENERIC_TABLE, parts, name)
        await generic_store.insert_details(
            tx, tabular_id=tabular_id, warehouse_id=warehouse.id, format=details.format, doc=details.doc,
            schema=details.schema, statistics=details.statistics, properties=details.properties,
        )
        row = await tabular_store.get_tabular_by_id(tx, tabular_id)
    assert row is not None

    # ------------------------------------------------ EVENTS
    events.generic_table_created(state, meta, warehouse, parts, name, row.id, body, prefix=warehouse.id)
    await forget_staged(state, replaced, warehouse.id)
    await created(state, meta, kinds.GENERIC_TABLE, row.id, ("namespace", namespace.id), warehouse.id)
    return {"table": generic_table_json(row, details)}


def _taken(kind_found: str, parts: list[str], name: str) -> CatalogError:
    """409: Lakekeeper's ``GenericTableAlreadyExists`` for a generic table of that name, the shared
    wording for a table or view."""
    if kind_found == kinds.GENERIC_TABLE:
        return CatalogError(409, "GenericTableAlreadyExists", f"Generic table already exists: {ident(parts, name)}")
    return conflict_for_existing(kind_found, parts, name, kinds.GENERIC_TABLE)
