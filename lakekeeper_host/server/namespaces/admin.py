"""Namespace administration: recursive drop, move/rename, protection (Lakekeeper §9.3, §9.4).

How the catalog's ``DELETE /catalog/v1/{prefix}/namespaces/{namespace}`` route uses this module::

    from lakekeeper_host.server.namespaces.admin import drop_namespace
    await drop_namespace(state, meta, warehouse, namespace_id,
                         recursive=query_bool("recursive"), force=query_bool("force"),
                         purge=query_bool("purge"))

It may call it for every drop, or only when ``recursive=true`` and keep its own non-recursive
path. ``drop_namespace`` enforces: reserved namespaces (400 ``ReservedNamespace``), protection
(409 ``NamespaceProtected`` / ``ChildNamespaceProtected`` / ``ChildTabularProtected`` unless
``force``), non-recursive emptiness counting soft-deleted tabulars too (409
``NamespaceNotEmpty``), recursive drop on a soft-delete warehouse only with ``force``
(400 ``NamespaceDeleteNotAllowed``), running expirations underneath (409
``NamespaceHasRunningTabularExpirations``). A recursive drop hard-deletes every child namespace
and tabular in one transaction, cancels their open tasks, and with ``purge=true`` schedules
``tabular_purge`` for every child table and view. The caller emits the ``dropNamespace`` event.
"""

from __future__ import annotations

import uuid
from typing import Any

from lakekeeper_host.errors import CatalogError, already_exists, bad_request, namespace_not_empty, not_found
from lakekeeper_host.server import events, kinds
from lakekeeper_host.server.authorize import authorize, authorize_warehouse, checking_actor, deleted, moved
from lakekeeper_host.server.names import validate_new_namespace
from lakekeeper_host.server.resolve import require_warehouse
from lakekeeper_host.service.request import RequestMetadata
from lakekeeper_host.service.state import AppState
from lakekeeper_host.store import namespace_admin as ns_store
from lakekeeper_host.store import tasks as task_store
from lakekeeper_host.store.db import Executor

NAMESPACE_SEPARATOR = "\x1f"


# ---------------------------------------------------------------- names


def _catalog_codec(name: str):
    """The catalog store's own name encoding, when it provides one."""
    try:
        from lakekeeper_host.store import namespaces as catalog_namespaces
    except ImportError:
        return None
    return getattr(catalog_namespaces, name, None)


def decode_name(stored: str) -> list[str]:
    """The namespace parts of a stored ``namespace.name``."""
    decode = _catalog_codec("decode_namespace_name")
    return list(decode(stored)) if decode is not None else stored.split(NAMESPACE_SEPARATOR)


def encode_name(parts: list[str]) -> tuple[str, str]:
    """(name, name_key) for storing namespace ``parts``."""
    encode = _catalog_codec("encode_namespace_name")
    name = encode(parts) if encode is not None else NAMESPACE_SEPARATOR.join(parts)
    return name, name.casefold()


async def namespace_parts(db: Executor, namespace_id: str) -> list[str]:
    row = await ns_store.get_namespace_by_id(db, namespace_id)
    return [] if row is None else decode_name(row["name"])


def is_reserved(state: AppState, parts: list[str]) -> bool:
    return bool(parts) and parts[0].lower() in state.settings.host.all_reserved_namespaces


# ---------------------------------------------------------------- drop


async def drop_namespace(
    state: AppState,
    meta: RequestMetadata,
    warehouse: Any,
    namespace_id: str,
    *,
    recursive: bool = False,
    force: bool = False,
    purge: bool = False,
) -> None:
    """Drop a namespace of ``warehouse`` (a ``WarehouseRow``); see the module docstring."""
    namespaces, tabulars = await _drop_subtree(
        state, warehouse, namespace_id, recursive=recursive, force=force, purge=purge
    )
    # AUTHZ: everything dropped is gone for good (a recursive drop never soft-deletes)
    for tab in tabulars:
        await deleted(state, tab["typ"], [tab["id"]], warehouse.id)
    await deleted(state, "namespace", [n["id"] for n in namespaces], warehouse.id)


async def _drop_subtree(
    state: AppState, warehouse: Any, namespace_id: str, *, recursive: bool, force: bool, purge: bool
) -> tuple[list[Any], list[Any]]:
    """The transaction of :func:`drop_namespace`; returns the namespaces and tabulars it deleted."""
    async with state.store.transaction() as tx:
        # ------------------------------------------------ VALIDATIONS
        row = await ns_store.get_namespace_row(tx, warehouse.id, namespace_id)
        if row is None:
            raise not_found(f"Namespace {namespace_id} does not exist", "NoSuchNamespaceException")
        parts = decode_name(row["name"])
        if is_reserved(state, parts):
            raise bad_request(f"Namespace {'.'.join(parts)} is reserved and cannot be dropped", "ReservedNamespace")
        if row["protected"] and not force:
            raise CatalogError(
                409, "NamespaceProtected", f"Namespace {'.'.join(parts)} is protected; use force=true to drop it"
            )
        namespaces = await ns_store.subtree_namespaces(tx, namespace_id)
        tabulars = await ns_store.subtree_tabulars(tx, namespace_id)
        if not recursive:
            if len(namespaces) > 1 or tabulars:
                raise namespace_not_empty(parts)
            await ns_store.delete_subtree(tx, namespace_id, [])
            return namespaces, []
        if warehouse.soft_delete_seconds is not None and not force:
            raise bad_request(
                "Recursive drop is not allowed in a warehouse with soft deletion unless force=true",
                "NamespaceDeleteNotAllowed",
            )
        if not force:
            child = next((n for n in namespaces if n["id"] != namespace_id and n["protected"]), None)
            if child is not None:
                raise CatalogError(
                    409,
                    "ChildNamespaceProtected",
                    f"Namespace {'.'.join(decode_name(child['name']))} below is protected; use force=true",
                )
            tab = next((t for t in tabulars if t["protected"] and t["deleted_at"] is None), None)
            if tab is not None:
                raise CatalogError(
                    409,
                    "ChildTabularProtected",
                    f"{kinds.label(tab['typ'])} {tab['name']!r} below is protected; use force=true",
                )
        ids = [t["id"] for t in tabulars]
        if await ns_store.running_tasks_for(tx, ids, "soft_deletion"):
            raise CatalogError(
                409,
                "NamespaceHasRunningTabularExpirations",
                "A table, view or generic table below this namespace is being expired right now; retry shortly",
            )

        # ------------------------------------------------ BUSINESS LOGIC
        await task_store.cancel_entity_tasks(tx, ids, message="Cancelled by recursive namespace drop")
        await ns_store.delete_subtree(tx, namespace_id, ids)
        if purge:
            names = {n["id"]: decode_name(n["name"]) for n in namespaces}
            for tab in tabulars:
                await task_store.schedule_purge(
                    tx,
                    project_id=warehouse.project_id,
                    warehouse_id=warehouse.id,
                    typ=tab["typ"],
                    tabular_id=tab["id"],
                    location=tab["location"],
                    name=[*names.get(tab["namespace_id"], []), tab["name"]],
                )
    return namespaces, tabulars


# ---------------------------------------------------------------- move / rename


def _validate_destination(state: AppState, destination: Any) -> list[str]:
    if not isinstance(destination, list) or not all(isinstance(p, str) for p in destination):
        raise bad_request("Invalid request body: destination must be a list of strings @ body.destination")
    if not destination:
        raise bad_request("destination must not be empty", "InvalidNamespace")
    validate_new_namespace(destination)  # the rules of a new namespace (server/names.py)
    if is_reserved(state, destination):
        raise bad_request(f"Namespace {destination[0]!r} is reserved", "ReservedNamespace")
    return list(destination)


async def move_namespace(
    state: AppState,
    meta: RequestMetadata,
    warehouse_id: str,
    namespace_id: str,
    destination: Any,
    *,
    force: bool = False,
) -> dict[str, Any]:
    """Move/rename a namespace to the full path ``destination``.

    Same parent + new last element = rename; a single element = move to the root. Namespaces with
    child namespaces cannot move (409 ``NamespaceHasChildren``); an existing destination is 409;
    protected namespaces need ``force`` (protection is kept). Moving to the current path is a no-op.
    Contained tables and views keep their ids and locations.
    """
    warehouse = await require_warehouse(state, warehouse_id, active_only=True)
    target = _validate_destination(state, destination)
    await _authorize_move(state, meta, warehouse, namespace_id, target)
    async with state.store.transaction() as tx:
        row = await ns_store.get_namespace_row(tx, warehouse.id, namespace_id)
        if row is None:
            raise not_found(f"Namespace {namespace_id} does not exist", "NoSuchNamespaceException")
        current = decode_name(row["name"])
        if [p.casefold() for p in current] == [p.casefold() for p in target] and current == target:
            return _move_result(target, row["id"], row["parent_id"])
        if is_reserved(state, current):
            raise bad_request(f"Namespace {'.'.join(current)} is reserved and cannot be moved", "ReservedNamespace")
        if row["protected"] and not force:
            raise CatalogError(409, "NamespaceProtected", f"Namespace {'.'.join(current)} is protected; use force=true")
        if await ns_store.count_children(tx, namespace_id):
            raise CatalogError(
                409, "NamespaceHasChildren", f"Namespace {'.'.join(current)} has child namespaces and cannot be moved"
            )
        name, key = encode_name(target)
        existing = await ns_store.get_namespace_by_key(tx, warehouse.id, key)
        if existing is not None and existing["id"] != namespace_id:
            raise already_exists(f"Namespace {'.'.join(target)} already exists", "NamespaceAlreadyExists")
        parent_id = None
        if len(target) > 1:
            _, parent_key = encode_name(target[:-1])
            parent = await ns_store.get_namespace_by_key(tx, warehouse.id, parent_key)
            if parent is None:
                raise not_found(
                    f"Parent namespace {'.'.join(target[:-1])} does not exist", "NoSuchNamespaceException"
                )
            parent_id = parent["id"]
        await ns_store.move_namespace(tx, namespace_id, name=name, name_key=key, parent_id=parent_id)
    events.namespace_moved(state, meta, warehouse, current, namespace_id, target, prefix=warehouse.id)
    if parent_id != row["parent_id"]:
        new_parent = ("namespace", parent_id) if parent_id else ("warehouse", warehouse.id)
        await moved(state, "namespace", namespace_id, new_parent, warehouse.id)
    return _move_result(target, namespace_id, parent_id)


async def _authorize_move(
    state: AppState, meta: RequestMetadata, warehouse: Any, namespace_id: str, target: list[str]
) -> None:
    """AUTHZ (Lakekeeper): ``move`` on the namespace, and on its new parent (warehouse or namespace)
    ``create_namespace`` and ``accept_moved_namespace`` -- the moved namespace takes the new parent's
    grants. Checked before the transaction, so no database lock waits for the authorizer."""
    if checking_actor(state, meta) is None:
        return
    await authorize(state, meta, "move", "namespace", namespace_id, warehouse.id,
                    hidden=not_found(f"Namespace {namespace_id} does not exist", "NoSuchNamespaceException"))
    if len(target) == 1:
        for action in ("create_namespace", "accept_moved_namespace"):
            await authorize_warehouse(state, meta, action, warehouse.id)
        return
    _, parent_key = encode_name(target[:-1])
    parent = await ns_store.get_namespace_by_key(state.store, warehouse.id, parent_key)
    if parent is not None:  # a missing parent is reported by the move itself
        for action in ("create_namespace", "accept_moved_namespace"):
            await authorize(state, meta, action, "namespace", parent["id"], warehouse.id,
                            hidden=not_found(f"Parent namespace {'.'.join(target[:-1])} does not exist",
                                             "NoSuchNamespaceException"))


def _move_result(parts: list[str], namespace_id: str, parent_id: str | None) -> dict[str, Any]:
    return {"namespace": parts, "namespace-id": namespace_id, "parent-namespace-id": parent_id}


def parse_uuid(value: str, what: str) -> str:
    try:
        return str(uuid.UUID(value))
    except ValueError:
        raise bad_request(f"Invalid {what}: {value!r} is not a UUID") from None
