"""Table commits: ``POST .../tables/{table}`` and ``POST .../transactions/commit``.

The protocol (Lakekeeper §3.2, Iceberg ``CatalogHandlers.commit``):

1. read the current metadata of every table in the request;
2. check the requirements against it -- a failure is a 409 ``CommitFailedException`` with the
   Java wording ("Requirement failed: current schema changed: expected id 0 != 1");
3. apply the updates (pyiceberg's update logic, plus the Java server's id re-use for schemas,
   specs and sort orders, format version 3, and lenient removals);
4. write each new metadata file to storage -- BEFORE the database changes;
5. in ONE database transaction, compare-and-swap every table's ``metadata_location``;
6. if any swap loses a race, roll back, delete the files just written and start again at 1:
   when the requirements still hold against the newer metadata, the updates are re-applied to
   it (server-side retry); when they do not, step 2 answers 409. Never a 500 for a conflict.
7. a failure before the COMMIT is sent changed nothing: the files are deleted. A failure of the
   COMMIT itself (connection lost, request cancelled by ``MAX_REQUEST_TIME``) has an unknown
   outcome: :func:`settled_write` settles it, reading the tables again to find out; it only deletes
   the files when the swap certainly did not land; when it cannot tell, the files stay and the
   answer is 500 ``CommitStateUnknownException`` (clients then keep their own files too).
   The create paths (createTable, registerTable, createView, registerView) and view commits go
   through the same :func:`settled_write`.

A request with no effective change writes nothing and returns the current metadata.
Committing ``assert-create`` to a staged table (``stage-create``) builds the metadata from empty
and un-stages the row; with no row at all the table is created by the commit.
"""

from __future__ import annotations

import asyncio
import logging
import random
import uuid
from collections.abc import Sequence
from typing import Any

from attrs import define, frozen
from pyiceberg.table.metadata import TableMetadata

from lakekeeper_host.errors import (
    CatalogError,
    bad_request,
    commit_failed,
    no_such_namespace,
    no_such_table,
)
from lakekeeper_host.ids import new_id
from lakekeeper_host.server import events, metadata_io
from lakekeeper_host.server.authorize import authorize, checking_actor, created
from lakekeeper_host.server.names import conflict_for_existing, ident
from lakekeeper_host.server.resolve import refresh_warehouse
from lakekeeper_host.server.settled_write import Swap, settled_write
from lakekeeper_host.server.tables.commit.parse import TableChange
from lakekeeper_host.server.tables.commit.requirements import check_requirement
from lakekeeper_host.server.tables.commit.updates import apply_updates, named_files
from lakekeeper_host.server.tabulars.locations import default_table_location, require_inside_tabular
from lakekeeper_host.server.warehouses.validation import effective_format_versions
from lakekeeper_host.service.request import RequestMetadata
from lakekeeper_host.service.state import AppState
from lakekeeper_host.service.storage import Storage
from lakekeeper_host.store import tabulars as tabular_store
from lakekeeper_host.store.cache import PARSED_WEIGHT
from lakekeeper_host.store.tabulars import TabularRow
from lakekeeper_host.store.warehouses import WarehouseRow

log = logging.getLogger(__name__)


MAX_COMMIT_ATTEMPTS = 10


@frozen
class CommitResult:
    """The outcome for one table: its row (before), the new metadata and where it was written."""

    row: TabularRow
    metadata: TableMetadata
    metadata_json: str
    metadata_location: str
    changed: bool


@define
class _Pending:
    change: TableChange
    namespace_id: str
    row: TabularRow | None
    base: TableMetadata | None
    metadata: TableMetadata
    metadata_json: str = ""
    metadata_location: str = ""
    changed: bool = True
    table_location: str = ""
    written: bool = False
    inserted: bool = False  # the commit created the row (not an un-staged ``stage-create``)


class _LostRace(Exception):
    """A compare-and-swap found the table changed: roll back and try again."""

    def __init__(self, change: TableChange):
        super().__init__(ident(change.namespace, change.name))
        self.change = change


class _StaleWarehouse(Exception):
    """The warehouse row (maybe cached) is older than the database's: re-read it and start again."""


def _remember_parsed(state: AppState, metadata_location: str, metadata: TableMetadata, json_size: int) -> None:
    """Parsed metadata by location (immutable, so shared read-only): the next commit of the table
    on this replica skips reading and parsing it."""
    state.store.caches.metadata.put("parsed", metadata_location, metadata, json_size * PARSED_WEIGHT)


async def commit_tables(
    state: AppState, meta: RequestMetadata, warehouse: WarehouseRow, changes: Sequence[TableChange]
) -> list[CommitResult]:
    """Commit every change atomically (all tables or none); see the module docstring."""
    # ------------------------------------------------ VALIDATIONS
    seen = set()
    for change in changes:
        key = (tuple(p.casefold() for p in change.namespace), change.name.casefold())
        if key in seen:
            raise bad_request(f"Table {ident(change.namespace, change.name)} appears more than once in the transaction",
                              "DuplicateTableInTransaction")
        seen.add(key)
    storage = await state.storage_for(warehouse)

    allowed, _ = effective_format_versions(warehouse)

    # ------------------------------------------------ AUTHZ
    if checking_actor(state, meta) is not None:
        for change in changes:
            await _authorize_change(state, meta, warehouse, change)

    # ------------------------------------------------ BUSINESS LOGIC
    contended = changes[0]
    for attempt in range(MAX_COMMIT_ATTEMPTS):
        try:
            pending = [await _prepare(state, warehouse, storage, change, allowed) for change in changes]
        except _StaleWarehouse:  # changed on another replica: its storage profile may be new
            warehouse = await refresh_warehouse(state, warehouse.id)
            storage = await state.storage_for(warehouse)
            allowed, _ = effective_format_versions(warehouse)
            continue
        for item in pending:  # checkers see the CURRENT metadata (None: the commit creates the table)
            await state.contracts.check_table_updates(list(item.change.updates), item.base)
        try:
            for item in pending:
                if item.changed:
                    await metadata_io.write_metadata(storage, item.metadata_location, item.metadata_json)
                    item.written = True
        except BaseException:
            written = [(p.metadata_location, p.table_location) for p in pending if p.written]
            await metadata_io.delete_quietly(storage, written)
            raise
        try:
            written = [(p.metadata_location, p.table_location) for p in pending if p.written]
            async with settled_write(state, storage, files=written) as write:
                for item in pending:
                    if item.changed:
                        await _swap(write.tx, warehouse, storage, item)
                        write.expect(_swapped(item))
        except _LostRace as lost:  # rolled back; settled_write deleted our files
            contended = lost.change
            await asyncio.sleep(min(0.2, 0.005 * 2**attempt) * (0.5 + random.random()))
            continue
        for item in pending:
            if item.changed:
                tabular_store.remember_metadata(state.store, item.metadata_location, item.metadata_json)
                _remember_parsed(state, item.metadata_location, item.metadata, len(item.metadata_json))
                if item.row is not None and item.base is not None and item.row.metadata_location:
                    # superseded here; the next commit starts from the new one (another replica's
                    # commit moves the location on, so a stale parse is never picked up by location)
                    state.store.caches.metadata.forget("parsed", item.row.metadata_location)
        for item in pending:  # best effort, after the commit is durable; only inside the table's location
            if item.changed and item.base is not None:
                expired = metadata_io.expired_files(
                    item.base, item.row.metadata_location, item.metadata, item.metadata_location
                )
                await metadata_io.delete_quietly(storage, [(f, item.table_location) for f in expired])

        # ------------------------------------------------ EVENTS
        # updateTable: one per changed table, in request order
        events.tables_updated(
            state, meta, warehouse,
            [(p.change.namespace, p.change.name, p.row.id, p.change.raw) for p in pending if p.changed],
            prefix=warehouse.id,
        )  # fmt: skip
        for item in pending:  # a table created by this commit (staged ones were recorded at stage-create)
            if item.inserted:
                await created(state, meta, "table", item.row.id, ("namespace", item.namespace_id), warehouse.id)
        return [_result(item) for item in pending]
    # no "Commit failed: " here: the Java client puts it in front of every 409 of a commit
    raise commit_failed(
        f"Table {ident(contended.namespace, contended.name)} was changed concurrently during "
        f"{MAX_COMMIT_ATTEMPTS} attempts to apply this commit; retry it"
    )


async def _authorize_change(
    state: AppState, meta: RequestMetadata, warehouse: WarehouseRow, change: TableChange
) -> None:
    """``commit`` on an existing table; ``create_table`` on the namespace for one the commit creates.
    What the caller may not see answers as missing (a missing one is left to :func:`_prepare`)."""
    found = await tabular_store.find_tabular(
        state.store, warehouse.id, change.namespace, change.name,
        include_staged=True, with_metadata=False, cached=True,
    )
    if found.namespace is None or (found.tabular is not None and found.tabular.typ != "table"):
        return
    if found.tabular is None or found.tabular.staged:
        if change.creates:
            await authorize(state, meta, "create_table", "namespace", found.namespace.id, warehouse.id,
                            hidden=no_such_namespace(change.namespace))
        return
    await authorize(state, meta, "commit", "table", found.tabular.id, warehouse.id,
                    hidden=no_such_table(change.namespace, change.name))


def _swapped(item: _Pending) -> Swap:
    assert item.row is not None  # set by _swap for a created table
    expected = None if item.base is None else item.row.metadata_location
    return Swap(item.row.id, expected, item.metadata_location, tabular_location=item.table_location)


def _result(item: _Pending) -> CommitResult:
    assert item.row is not None
    return CommitResult(item.row, item.metadata, item.metadata_json, item.metadata_location, item.changed)


async def _prepare(
    state: AppState, warehouse: WarehouseRow, storage: Storage, change: TableChange, allowed: Sequence[int]
) -> _Pending:
    """Read the current state of one table and compute its new metadata (no writes)."""
    found = await tabular_store.find_tabular(
        state.store, warehouse.id, change.namespace, change.name, include_staged=True, with_metadata=False
    )
    namespace, row = found.namespace, found.tabular
    if namespace is None:
        if change.creates:
            raise no_such_namespace(change.namespace)
        raise no_such_table(change.namespace, change.name)
    if found.warehouse_version != warehouse.version or found.warehouse_status != "active":
        raise _StaleWarehouse()
    if row is not None and row.typ != "table":
        if change.creates:
            raise conflict_for_existing(row.typ, change.namespace, change.name, "table")
        raise no_such_table(change.namespace, change.name)
    if row is None and not change.creates:
        raise no_such_table(change.namespace, change.name)
    base = None
    if row is not None and not row.staged:
        base = state.store.caches.metadata.get("parsed", row.metadata_location)
        if base is None:
            row = await tabular_store.with_current_metadata(state.store, row)
            if row is None:  # dropped meanwhile
                raise no_such_table(change.namespace, change.name)
            base = metadata_io.parse(row.metadata)
            _remember_parsed(state, row.metadata_location, base, len(row.metadata))
    for requirement in change.requirements:
        check_requirement(requirement, base)
    metadata, changed = apply_updates(
        base,
        change.updates,
        base_location=None if row is None else row.metadata_location,
        allowed_format_versions=allowed,
        storage=storage,
    )
    if base is None and not changed:
        raise bad_request(f"Cannot create table {ident(change.namespace, change.name)} from a commit without updates")
    item = _Pending(change, namespace.id, row, base, metadata, changed=changed)
    if not item.changed:
        row = await tabular_store.with_current_metadata(state.store, row)
        if row is None:
            raise no_such_table(change.namespace, change.name)
        item.row = row
        item.metadata_json = row.metadata or metadata_io.to_json(metadata)
        item.metadata_location = row.metadata_location or ""
        return item
    if base is None:  # a create: the location is the staged one unless the client chose another
        default = row.location if row is not None else None
        if not metadata.location:
            if default is None:

                default = await default_table_location(state, warehouse, namespace, change.name, new_id())
            metadata = metadata.model_copy(update={"location": default})
        item.metadata = metadata
    item.table_location = storage.normalize_location(item.metadata.location)
    for what, location in named_files(change.updates):  # what the catalog would later read or delete
        require_inside_tabular(storage, location, item.table_location, what, error_type="BadRequestException")
    item.metadata_json = metadata_io.to_json(item.metadata)
    item.metadata_location = metadata_io.next_metadata_location(
        item.table_location, None if row is None else row.metadata_location, dict(item.metadata.properties)
    )
    return item


async def _swap(tx: Any, warehouse: WarehouseRow, storage: Storage, item: _Pending) -> None:
    """The compare-and-swap of one table inside the commit transaction."""
    row = item.row
    moved = row is None or item.table_location != row.location
    if moved:
        taken = await tabular_store.location_conflict(
            tx, warehouse.id, item.table_location, exclude_id=None if row is None else row.id
        )
        if taken is not None:
            raise CatalogError(
                409,
                "LocationAlreadyTaken",
                f"Location {item.table_location} overlaps the location {taken} of another table or view",
            )
    if row is None:
        tabular_id = str(item.metadata.table_uuid)
        if await tabular_store.tabular_id_taken(tx, tabular_id):
            tabular_id = new_id()
        inserted = await tabular_store.insert_tabular(
            tx,
            tabular_id=tabular_id,
            warehouse_id=warehouse.id,
            namespace_id=item.namespace_id,
            name=item.change.name,
            typ="table",
            location=item.table_location,
            metadata_location=item.metadata_location,
            metadata=item.metadata_json,
        )
        if not inserted:
            raise _LostRace(item.change)
        item.row = await tabular_store.get_tabular_by_id(tx, tabular_id)
        item.inserted = True
        return
    swapped = await tabular_store.cas_update_metadata(
        tx,
        row.id,
        None if row.staged else row.metadata_location,
        item.metadata_location,
        item.metadata_json,
        location=item.table_location if moved else None,
    )
    if not swapped:
        raise _LostRace(item.change)


def new_table_uuid() -> uuid.UUID:
    return uuid.UUID(new_id())
