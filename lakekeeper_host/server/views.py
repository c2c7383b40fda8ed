"""Views of the Iceberg REST catalog: list, create, load, exists, replace (commit), drop, rename,
register.

Views are ``tabular`` rows with ``typ = 'view'``: they share one name space per namespace with
tables (the clash messages are :func:`server.context.conflict_for_existing`'s), the location rules
of tables (inside the warehouse, no overlap with another table or view) and the generic table code
for listing (:func:`server.tables.list_tabular_identifiers`) and renaming
(:func:`server.tables.rename_tabular`).

A replace is the table commit protocol for view metadata (``server/view_metadata.py``):

1. read the current view; check ``assert-view-uuid``;
2. apply the updates (ids re-used for identical schemas and versions, ``-1`` = last added);
3. write the new ``NNNNN-<uuid>[.gz].metadata.json`` to storage BEFORE the database changes;
4. compare-and-swap ``metadata_location``; losing the race deletes the file just written and
   starts again at 1 against the newer metadata (server-side retry), so a concurrent replace
   yields the next version instead of a conflict; failing requirements are 409. A COMMIT with
   an unknown outcome is settled as a table commit's (:func:`server.commit.settle_uncertain_commit`).

Like Lakekeeper, views take the table rules for properties (``write.metadata.path`` and
``write.data.path`` are server-managed) and ``purgeRequested`` defaults to true on drop.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Sequence
from typing import Any

from pyiceberg.table.update import RemovePropertiesUpdate, SetPropertiesUpdate
from pyiceberg.view.metadata import ViewMetadata

from lakekeeper_host.errors import CatalogError, bad_request, commit_failed, no_such_view, not_found
from lakekeeper_host.server import events, metadata_io
from lakekeeper_host.server import view_metadata as vm
from lakekeeper_host.server.commit import Swap, settle_uncertain_commit, validate_table_properties
from lakekeeper_host.server.context import (
    authorize,
    conflict_for_existing,
    ident,
    require_namespace,
    validate_namespace,
    validate_new_name,
)
from lakekeeper_host.server.tables import (
    check_location_available,
    default_tabular_location,
    list_tabular_identifiers,
    lookup_tabular,
    register_request,
    rename_tabular,
    requested_location,
    resolve_table,
)
from lakekeeper_host.service.state import AppState
from lakekeeper_host.service.storage import DataAccess, Storage, StoragePermission, TableAccessRequest
from lakekeeper_host.store import new_id
from lakekeeper_host.store import tabulars as tabular_store
from lakekeeper_host.store.warehouses import WarehouseRow

MAX_COMMIT_ATTEMPTS = 10


# ---------------------------------------------------------------- helpers


def _string_map(value: Any, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise bad_request(f"Invalid request body: {what} must map strings to strings @ body.{what}")
    return dict(value)


def _check_properties(keys: Sequence[str], properties: dict[str, str]) -> None:
    validate_table_properties(list(keys))
    metadata_io.codec(properties)


async def _view_config(
    state: AppState, storage: Storage, warehouse: WarehouseRow, row_id: str, location: str, access: DataAccess
) -> dict[str, str]:
    """``config`` of a LoadViewResult (read access to the view's location, like Lakekeeper)."""
    config = await storage.table_config(
        TableAccessRequest(
            table_location=location,
            permission=StoragePermission.READ,
            access=access,
            warehouse_id=warehouse.id,
            tabular_id=row_id,
            soft_delete_enabled=warehouse.soft_delete_seconds is not None,
        )
    )
    return dict(config.config)


def _result(metadata_location: str, metadata_json: str, config: dict[str, str]) -> dict[str, Any]:
    return {"metadata-location": metadata_location, "metadata": json.loads(metadata_json), "config": config}


async def _read_view_metadata(storage: Storage, location: str) -> ViewMetadata:
    try:
        raw = await storage.read(location)
    except CatalogError:
        raise
    except (FileNotFoundError, KeyError):
        raise not_found(f"Failed to open input stream for file: {location}") from None
    except OSError as exc:
        if not await storage.exists(location):
            raise not_found(f"Failed to open input stream for file: {location}") from None
        raise CatalogError(500, "StorageError", f"Failed to read {location}: {exc}") from None
    try:
        return vm.parse_view_metadata(metadata_io.decode(raw))
    except UnicodeDecodeError as exc:
        raise bad_request(f"Invalid view metadata in {location}: {exc}", "InvalidViewMetadata") from None


async def _claim_name(tx: Any, namespace_id: str, parts: Sequence[str], name: str) -> None:
    """Inside the create transaction: 409 when a table or view has the name.

    A *staged* table (an uncommitted ``stage-create``) does not keep a view from being created:
    it is removed, and its later commit fails with "View with same name already exists", as
    the Iceberg tests expect (``createTableViaTransactionThatAlreadyExistsAsView``).
    """
    current = await tabular_store.get_tabular(tx, namespace_id, name, include_staged=True)
    if current is not None and current.staged:
        await tabular_store.delete_staged(tx, namespace_id, name)
    elif current is not None:
        raise conflict_for_existing(current.typ, parts, name, "view")


# ---------------------------------------------------------------- list / load / exists


async def list_views(
    state: AppState, meta: Any, warehouse: WarehouseRow, parts: list[str], **paging: Any
) -> dict[str, Any]:
    return await list_tabular_identifiers(state, meta, warehouse, parts, "view", **paging)


async def load_view(
    state: AppState, meta: Any, warehouse: WarehouseRow, parts: list[str], name: str, access: DataAccess
) -> dict[str, Any]:
    found = await lookup_tabular(state, warehouse, parts, name, typ="view", with_metadata=False, cached=True)
    await authorize(state, meta, "get_metadata", "view", found.tabular.id, warehouse)
    row = await tabular_store.with_current_metadata(state.store, found.tabular)
    if row is None:
        raise no_such_view(parts, name)
    storage = await state.storage_for(warehouse)
    config = await _view_config(state, storage, warehouse, row.id, row.location, access)
    return _result(row.metadata_location, row.metadata, config)


async def view_exists(state: AppState, meta: Any, warehouse: WarehouseRow, parts: list[str], name: str) -> None:
    found = await lookup_tabular(state, warehouse, parts, name, typ="view", with_metadata=False, cached=True)
    await authorize(state, meta, "get_metadata", "view", found.tabular.id, warehouse)


# ---------------------------------------------------------------- create


async def create_view(
    state: AppState, meta: Any, warehouse: WarehouseRow, parts: list[str], body: Any, access: DataAccess
) -> dict[str, Any]:
    """``createView``: a new view with one version; 409 when the name is a table or view."""
    # ------------------------------------------------ VALIDATIONS
    if not isinstance(body, dict):
        raise bad_request("Invalid request body: expected a JSON object")
    name = body.get("name")
    if not isinstance(name, str):
        raise bad_request("Invalid request body: missing field `name` @ body.name")
    validate_namespace(parts)
    validate_new_name(name, "View")
    for field in ("schema", "view-version"):
        if field not in body:
            raise bad_request(f"Invalid request body: missing field `{field}` @ body.{field}")
    schema = vm.parse_schema(body["schema"])
    version = vm.parse_view_version(body["view-version"])
    if not version.representations:
        raise bad_request("View must have at least one representation.", "EmptyView")
    properties = _string_map(body.get("properties"), "properties")
    _check_properties(list(properties), properties)
    requested = body.get("location")
    if requested is not None and not isinstance(requested, str):
        raise bad_request("Invalid request body: location must be a string @ body.location")

    # ------------------------------------------------ AUTHZ
    namespace = await require_namespace(state, warehouse, parts)
    await authorize(state, meta, "create_view", "namespace", namespace.id, warehouse)
    existing = await tabular_store.get_tabular(state.store, namespace.id, name)
    if existing is not None:
        raise conflict_for_existing(existing.typ, parts, name, "view")

    # ------------------------------------------------ BUSINESS LOGIC
    storage = await state.storage_for(warehouse)
    view_id = new_id()
    if requested:
        location = await requested_location(state, warehouse, requested)
    else:
        location = await default_tabular_location(state, warehouse, namespace, name, view_id)
    metadata = vm.new_view_metadata(
        location=location, schema=schema, view_version=version, properties=properties, view_uuid=view_id
    )
    metadata_json = metadata.model_dump_json()
    metadata_location = metadata_io.next_metadata_location(location, None, properties)
    await metadata_io.write_metadata(storage, metadata_location, metadata_json)
    commit_sent = False
    try:
        async with state.store.transaction() as tx:
            await _claim_name(tx, namespace.id, parts, name)
            await check_location_available(tx, warehouse, location)
            inserted = await tabular_store.insert_tabular(
                tx, tabular_id=view_id, warehouse_id=warehouse.id, namespace_id=namespace.id, name=name,
                typ="view", location=location, metadata_location=metadata_location, metadata=metadata_json,
            )
            if not inserted:
                raise CatalogError(409, "AlreadyExistsException", f"View already exists: {ident(parts, name)}")
            commit_sent = True  # leaving the block sends COMMIT: from here on the outcome may be unknown
    except BaseException as failure:
        if not commit_sent:  # rolled back: nothing changed
            await metadata_io.delete_quietly(storage, [metadata_location])
            raise
        await settle_uncertain_commit(state, storage, [Swap(view_id, None, metadata_location)], failure, creates=True)

    # ------------------------------------------------ EVENTS
    events.view_created(state, meta, warehouse, parts, name, view_id, body, prefix=warehouse.id)
    config = await _view_config(state, storage, warehouse, view_id, location, access)
    return _result(metadata_location, metadata_json, config)


# ---------------------------------------------------------------- replace (commit)


def parse_commit(body: Any) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """(requirements, updates) of a CommitViewRequest; unknown types are 400 naming them."""
    if not isinstance(body, dict):
        raise bad_request("Invalid request body: a view commit must be a JSON object")
    if "updates" not in body:
        raise bad_request("Invalid request body: missing field `updates` @ body.updates")
    requirements = vm.parse_view_requirements(body.get("requirements"))
    updates = vm.parse_view_updates(body["updates"])
    for update in updates:
        if isinstance(update, SetPropertiesUpdate):
            _check_properties(list(update.updates), dict(update.updates))
        elif isinstance(update, RemovePropertiesUpdate):
            validate_table_properties(list(update.removals))
    return requirements, updates


async def commit_view(
    state: AppState, meta: Any, warehouse: WarehouseRow, parts: list[str], name: str, body: Any, access: DataAccess
) -> dict[str, Any]:
    """``replaceView``: apply requirements and updates with compare-and-swap and server-side retry."""
    # ------------------------------------------------ VALIDATIONS
    requirements, updates = parse_commit(body)
    storage = await state.storage_for(warehouse)

    # ------------------------------------------------ AUTHZ
    _, row = await resolve_table(state, warehouse, parts, name, typ="view")
    await authorize(state, meta, "commit", "view", row.id, warehouse)

    # ------------------------------------------------ BUSINESS LOGIC
    for attempt in range(MAX_COMMIT_ATTEMPTS):
        if attempt:
            _, row = await resolve_table(state, warehouse, parts, name, typ="view")
        base = vm.parse_view_metadata(row.metadata)
        vm.validate_requirements(requirements, base)
        metadata, changed = vm.update_view_metadata(base, updates)
        await state.contracts.check_view_updates(list(updates), metadata)
        if not changed:
            config = await _view_config(state, storage, warehouse, row.id, row.location, access)
            return _result(row.metadata_location, row.metadata, config)
        location = storage.normalize_location(metadata.location)
        moved = location != row.location
        if moved:
            location = await requested_location(state, warehouse, metadata.location)
        metadata_json = metadata.model_dump_json()
        metadata_location = metadata_io.next_metadata_location(
            location, row.metadata_location, dict(metadata.properties)
        )
        await metadata_io.write_metadata(storage, metadata_location, metadata_json)
        commit_sent = False
        try:
            async with state.store.transaction() as tx:
                if moved:
                    await check_location_available(tx, warehouse, location, exclude_id=row.id)
                swapped = await tabular_store.cas_update_metadata(
                    tx, row.id, row.metadata_location, metadata_location, metadata_json,
                    location=location if moved else None,
                )
                commit_sent = swapped  # leaving the block sends COMMIT: from here on the outcome may be unknown
        except BaseException as failure:
            if not commit_sent:  # rolled back: nothing changed
                await metadata_io.delete_quietly(storage, [metadata_location])
                raise
            await settle_uncertain_commit(state, storage, [Swap(row.id, row.metadata_location, metadata_location)],
                                          failure)
        if not swapped:
            await metadata_io.delete_quietly(storage, [metadata_location])
            await asyncio.sleep(min(0.2, 0.005 * 2**attempt) * (0.5 + random.random()))
            continue

        # ------------------------------------------------ EVENTS
        events.view_updated(state, meta, warehouse, parts, row.name, row.id, body, prefix=warehouse.id)
        config = await _view_config(state, storage, warehouse, row.id, location, access)
        return _result(metadata_location, metadata_json, config)
    # no "Commit failed: " here: the Java client puts it in front of every 409 of a commit
    raise commit_failed(
        f"View {ident(parts, name)} was changed concurrently during {MAX_COMMIT_ATTEMPTS} attempts to "
        "apply this commit; retry it"
    )


# ---------------------------------------------------------------- drop / rename


async def drop_view(
    state: AppState, meta: Any, warehouse: WarehouseRow, parts: list[str], name: str, *, purge: bool, force: bool
) -> None:
    _, row = await resolve_table(state, warehouse, parts, name, typ="view")
    await authorize(state, meta, "drop", "view", row.id, warehouse)
    from lakekeeper_host.server.deletion import drop_tabular

    await drop_tabular(state, meta, warehouse, row, purge=purge, force=force)

    # ------------------------------------------------ EVENTS
    events.view_dropped(state, meta, warehouse, parts, row.name, row.id, prefix=warehouse.id)


async def rename_view(state: AppState, meta: Any, warehouse: WarehouseRow, body: Any) -> None:
    await rename_tabular(state, meta, warehouse, "view", body)


# ---------------------------------------------------------------- register


async def register_view(
    state: AppState, meta: Any, warehouse: WarehouseRow, parts: list[str], body: Any, access: DataAccess
) -> dict[str, Any]:
    """``registerView``: a view from an existing view metadata file inside the warehouse."""
    # ------------------------------------------------ VALIDATIONS
    name, metadata_location = register_request(body)
    validate_namespace(parts)
    validate_new_name(name, "View")
    await requested_location(state, warehouse, metadata_location)

    # ------------------------------------------------ AUTHZ
    namespace = await require_namespace(state, warehouse, parts)
    await authorize(state, meta, "create_view", "namespace", namespace.id, warehouse)
    existing = await tabular_store.get_tabular(state.store, namespace.id, name)
    if existing is not None:
        raise conflict_for_existing(existing.typ, parts, name, "view")

    # ------------------------------------------------ BUSINESS LOGIC
    storage = await state.storage_for(warehouse)
    metadata = await _read_view_metadata(storage, metadata_location)
    location = await requested_location(state, warehouse, metadata.location)
    metadata_json = metadata.model_dump_json()
    commit_sent = False
    try:
        async with state.store.transaction() as tx:
            await _claim_name(tx, namespace.id, parts, name)
            await check_location_available(tx, warehouse, location)
            view_id = str(metadata.view_uuid)
            if await tabular_store.tabular_id_taken(tx, view_id):
                view_id = new_id()
            inserted = await tabular_store.insert_tabular(
                tx, tabular_id=view_id, warehouse_id=warehouse.id, namespace_id=namespace.id, name=name,
                typ="view", location=location, metadata_location=metadata_location, metadata=metadata_json,
            )
            if not inserted:
                raise CatalogError(409, "AlreadyExistsException", f"View already exists: {ident(parts, name)}")
            commit_sent = True  # leaving the block sends COMMIT: from here on the outcome may be unknown
    except BaseException as failure:
        if not commit_sent:  # rolled back: nothing changed
            raise
        # the registered file is the user's: never deleted, whatever the outcome
        swap = Swap(view_id, None, metadata_location, written=False)
        await settle_uncertain_commit(state, storage, [swap], failure, creates=True)

    # ------------------------------------------------ EVENTS
    events.view_created(state, meta, warehouse, parts, name, view_id, body, prefix=warehouse.id)
    config = await _view_config(state, storage, warehouse, view_id, location, access)
    return _result(metadata_location, metadata_json, config)

