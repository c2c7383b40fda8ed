"""renameTable / renameView / renameGenericTable (tables, views and generic tables share one name space)."""

from __future__ import annotations

from typing import Any

from lakekeeper_host.errors import CatalogError, bad_request, no_such_namespace
from lakekeeper_host.server import events, kinds
from lakekeeper_host.server.authorize import authorize, moved
from lakekeeper_host.server.names import (
    ident,
    validate_namespace,
    validate_new_name,
)
from lakekeeper_host.server.resolve import (
    get_namespace,
    resolve_table,
    tabular_not_found,
)
from lakekeeper_host.server.tabulars.staged import forget_staged, remove_staged
from lakekeeper_host.service.contracts import RenameDestination, TabularView
from lakekeeper_host.service.request import RequestMetadata
from lakekeeper_host.service.state import AppState
from lakekeeper_host.store import tabulars as tabular_store
from lakekeeper_host.store.warehouses import WarehouseRow


def parse_rename(body: Any) -> tuple[list[str], str, list[str], str]:
    """``{source: {namespace, name}, destination: {namespace, name}}``."""
    if not isinstance(body, dict):
        raise bad_request("Invalid request body: expected a JSON object")
    out = []
    for key in ("source", "destination"):
        value = body.get(key)
        if not isinstance(value, dict):
            raise bad_request(f"Invalid request body: missing field `{key}` @ body.{key}")
        namespace, name = value.get("namespace"), value.get("name")
        if (
            not isinstance(namespace, list)
            or not all(isinstance(p, str) for p in namespace)
            or not isinstance(name, str)
        ):
            raise bad_request(f"Invalid request body: {key} must be {{namespace: [..], name: ..}} @ body.{key}")
        out.extend([namespace, name])
    return out[0], out[1], out[2], out[3]


async def authorize_tabular_rename(
    state: AppState, meta: RequestMetadata, kind: str, object_id: str, warehouse_id: str,
    source_namespace_id: str, destination_namespace_id: str, *,
    hidden_source: CatalogError, hidden_destination: CatalogError,
) -> None:
    """The rights a rename of a ``kind`` (``table``, ``view``; any tabular whose authorizer kind has
    ``rename``/``move`` and whose namespaces have ``create_<kind>``) needs.

    Within its namespace: ``rename`` on the object and ``create_<kind>`` in the namespace (Lakekeeper).
    Into another namespace the object *moves* and takes that namespace's grants: whoever may act
    there gets the same rights on it, the mover included -- an owner of the destination would
    become its owner. So a move needs ``move`` on the object (grant authority and modify: the move
    hands nobody a right the mover could not grant anyway) and ``accept_moved_tabular`` on the
    destination (it arrives with its own grants; under managed access only a grant manager accepts
    it), as Lakekeeper's model 4.x and as a namespace move (``move`` / ``accept_moved_namespace``).
    """
    moving = destination_namespace_id != source_namespace_id
    await authorize(state, meta, "move" if moving else "rename", kind, object_id, warehouse_id, hidden=hidden_source)
    await authorize(state, meta, f"create_{kind}", "namespace", destination_namespace_id, warehouse_id,
                    hidden=hidden_destination)
    if moving:
        await authorize(state, meta, "accept_moved_tabular", "namespace", destination_namespace_id, warehouse_id,
                        hidden=hidden_destination)


async def rename_tabular(state: AppState, meta: RequestMetadata, warehouse: WarehouseRow, typ: str, body: Any) -> None:
    """Rename/move a table, view or generic table (``typ``) within the warehouse (across namespaces too).

    Messages as the Iceberg tests expect: a missing source is "Table does not exist: ns.t", a
    missing destination namespace "Namespace does not exist: ns", a taken destination
    "Cannot rename ns.a to ns.b. Table already exists" (or "View already exists", "Generic table
    already exists").
    """
    # ------------------------------------------------ VALIDATIONS
    source_ns, source_name, dest_ns, dest_name = parse_rename(body)
    validate_namespace(dest_ns)
    validate_new_name(dest_name, kinds.error_label(typ))
    _, row = await resolve_table(state, warehouse, source_ns, source_name, typ=typ)
    destination = await get_namespace(state, warehouse, dest_ns)
    if destination is None:
        raise no_such_namespace(dest_ns)

    # ------------------------------------------------ AUTHZ
    await authorize_tabular_rename(
        state, meta, typ, row.id, warehouse.id, row.namespace_id, destination.id,
        hidden_source=tabular_not_found(typ, source_ns, source_name), hidden_destination=no_such_namespace(dest_ns),
    )
    await state.contracts.check_rename(TabularView.of(row), RenameDestination(tuple(dest_ns), dest_name))

    # ------------------------------------------------ BUSINESS LOGIC
    replaced = None
    async with state.store.transaction() as tx:
        taken = await tabular_store.get_tabular(tx, destination.id, dest_name, include_staged=True)
        if taken is not None and taken.id != row.id:
            if taken.staged:
                replaced = await remove_staged(tx, destination.id, dest_name)
            else:
                raise CatalogError(
                    409,
                    "AlreadyExistsException",
                    f"Cannot rename {ident(source_ns, source_name)} to {ident(dest_ns, dest_name)}. "
                    f"{kinds.label(taken.typ)} already exists",
                )
        if not await tabular_store.rename_tabular(tx, row.id, destination.id, dest_name):
            raise tabular_not_found(typ, source_ns, source_name)

    # ------------------------------------------------ EVENTS
    # renameTable / renameView / renameGenericTable
    events.tabular_renamed(state, meta, warehouse, source_ns, source_name, row.id, typ, body, prefix=warehouse.id)
    await forget_staged(state, replaced, warehouse.id)
    if destination.id != row.namespace_id:
        await moved(state, typ, row.id, ("namespace", destination.id), warehouse.id)


async def rename_view(state: AppState, meta: RequestMetadata, warehouse: WarehouseRow, body: Any) -> None:
    await rename_tabular(state, meta, warehouse, "view", body)


async def rename_generic_table(state: AppState, meta: RequestMetadata, warehouse: WarehouseRow, body: Any) -> None:
    await rename_tabular(state, meta, warehouse, kinds.GENERIC_TABLE, body)
