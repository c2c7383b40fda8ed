"""Dropping and undropping tables and views (Lakekeeper §9.1, §9.2).

The catalog API calls :func:`drop_tabular` from its DELETE table/view routes after resolving the
row and checking that the caller may drop it; the management API calls :func:`undrop_tabulars`.

Semantics:

* ``purge`` -- remove the files too. Lakekeeper treats every table as *managed*: the catalog
  route passes ``purge=True`` unless the client sent ``purgeRequested=false``.
* ``force`` -- bypass protection **and** soft deletion (immediate hard delete).
* warehouse ``delete-profile`` ``soft``: the row gets ``deleted_at``, disappears from the catalog
  and a ``soft_deletion`` task is scheduled at drop time + ``expiration-seconds``; when it runs it
  hard-deletes the row and, if purge was requested, schedules ``tabular_purge``.
* ``hard`` (default): the row is deleted now; with purge a ``tabular_purge`` task removes the
  files asynchronously through the warehouse storage.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable
from typing import Any

from lakekeeper_host.errors import CatalogError, bad_request, not_found
from lakekeeper_host.serde import iso_timestamp
from lakekeeper_host.server import events, kinds, pagination
from lakekeeper_host.server.authorize import authorize, authorize_warehouse, deleted, visible
from lakekeeper_host.server.namespaces.admin import decode_name, namespace_parts
from lakekeeper_host.server.pagination import decode_page_token, encode_page_token
from lakekeeper_host.server.resolve import require_warehouse
from lakekeeper_host.server.search import SEARCH_CANDIDATES, SEARCH_RESULTS, distance, search_scope
from lakekeeper_host.server.tabulars.locations import inside_tabular
from lakekeeper_host.service.authz import Resource
from lakekeeper_host.service.contracts import TabularView
from lakekeeper_host.service.request import RequestMetadata
from lakekeeper_host.service.state import AppState
from lakekeeper_host.store import tabular_admin
from lakekeeper_host.store import tabulars as tabular_store
from lakekeeper_host.store import tasks as task_store
from lakekeeper_host.store import warehouses as warehouse_store
from lakekeeper_host.store.db import Executor
from lakekeeper_host.store.tabulars import TabularRow
from lakekeeper_host.store.warehouses import WarehouseRow

log = logging.getLogger(__name__)

SOFT_DELETION_QUEUE = "soft_deletion"


def _typ(tabular: Any) -> str:
    return str(getattr(tabular, "typ", "table"))


def protected_error(tabular: Any) -> CatalogError:
    kind = _typ(tabular)
    return CatalogError(
        409,
        f"{kinds.error_label(kind)}Protected",
        f"{kinds.label(kind)} {tabular.name!r} is protected and cannot be dropped; set protection to false or "
        "use force=true",
    )


async def entity_name(db: Executor, namespace_id: str, name: str) -> list[str]:
    """``[*namespace parts, name]`` for task listings."""

    return [*await namespace_parts(db, namespace_id), name]


async def schedule_purge(db: Executor, *, project_id: str, warehouse_id: str, tabular: Any,
                         name: list[str] | None = None) -> str | None:
    return await task_store.schedule_purge(
        db, project_id=project_id, warehouse_id=warehouse_id, typ=_typ(tabular), tabular_id=tabular.id,
        location=tabular.location, name=name,
    )


# ---------------------------------------------------------------- drop


async def drop_tabular(
    state: AppState, meta: RequestMetadata, warehouse: WarehouseRow, tabular: TabularRow, *, purge: bool, force: bool
) -> None:
    """Drop one live table, view or generic table of ``warehouse`` (a ``WarehouseRow``).

    ``tabular`` is the catalog's row object (``id, namespace_id, name, typ, location, protected``...).
    Raises 409 ``TableProtected``/``ViewProtected``/``GenericTableProtected`` for protected rows
    without ``force``, 404 when a concurrent drop won. Runs ``ContractCheckers.check_drop`` first.
    The caller emits the catalog event (``dropTable``/``dropView``/``dropGenericTable``) after this
    returns.
    """
    # ------------------------------------------------ VALIDATIONS
    if getattr(tabular, "protected", False) and not force:
        raise protected_error(tabular)
    await state.contracts.check_drop(TabularView.of(tabular))

    # ------------------------------------------------ BUSINESS LOGIC
    soft_seconds = warehouse.soft_delete_seconds
    # a staged table has no metadata file yet (a generic table never has one: it is not staged)
    staged = bool(getattr(tabular, "staged", False)) or (
        _typ(tabular) == kinds.TABLE and getattr(tabular, "metadata_location", "") is None
    )
    purged_metadata = None
    soft = soft_seconds is not None and not force and not staged
    async with state.store.transaction() as tx:
        name = await entity_name(tx, tabular.namespace_id, tabular.name)
        if soft:
            dropped = await tabular_admin.soft_delete(tx, tabular.id, force=force)
            if dropped is None:
                await _raise_gone(tx, warehouse.id, tabular)
            await task_store.schedule_task(
                tx,
                project_id=warehouse.project_id,
                warehouse_id=warehouse.id,
                queue_name=SOFT_DELETION_QUEUE,
                entity_type=_typ(tabular),
                entity_id=tabular.id,
                entity_name=name,
                payload={"deletion-kind": "purge" if purge else "default", "typ": _typ(tabular)},
                scheduled_for=dropped.deleted_at + soft_seconds * 1000,
            )
        else:
            dropped = await tabular_admin.hard_delete(tx, tabular.id, force=force)
            if dropped is None:
                await _raise_gone(tx, warehouse.id, tabular)
            # a stale expiration/purge of an earlier incarnation must not linger
            await task_store.cancel_entity_tasks(tx, [tabular.id], queue_names=(SOFT_DELETION_QUEUE,))
            if purge:
                await schedule_purge(
                    tx, project_id=warehouse.project_id, warehouse_id=warehouse.id, tabular=dropped, name=name
                )
                purged_metadata = dropped.metadata_location
    # AUTHZ: a soft-deleted tabular keeps its grants until it expires (undrop brings them back)
    if not soft:
        await deleted(state, _typ(tabular), [tabular.id], warehouse.id)
    if purged_metadata:
        await _remove_last_metadata_file(state, warehouse, purged_metadata, dropped.location)


async def _remove_last_metadata_file(state: AppState, warehouse: Any, metadata_location: str, location: str) -> None:
    """Delete the dropped table's current metadata file now, before the drop is answered.

    Spark's ``DROP TABLE ... PURGE`` drops the table and then deletes its files client-side, but
    only while that metadata file exists. Removing it here hands the whole purge to the
    ``tabular_purge`` task instead of letting Spark read manifests the task is deleting.
    A registered table's metadata file may lie elsewhere: only what the purge would remove is.
    """
    try:
        storage = await state.storage_for(warehouse)
        if inside_tabular(storage, metadata_location, location):
            await storage.delete(metadata_location)
    except Exception:  # noqa: BLE001 - best effort: the purge task removes the file anyway
        log.warning("Could not remove %s of a purged table early", metadata_location, exc_info=True)


async def _raise_gone(db: Executor, warehouse_id: str, tabular: Any) -> None:
    current = await tabular_admin.get_tabular_info(db, warehouse_id, tabular.id)
    if current is not None and current.protected:
        raise protected_error(current)
    raise not_found(f"{kinds.label(_typ(tabular))} {tabular.name!r} does not exist",
                    f"NoSuch{kinds.error_label(_typ(tabular))}Exception")


# ---------------------------------------------------------------- undrop


def _target(item: Any) -> tuple[str, str]:
    """(kind, id) of an undrop target ``{"type": "table"|"view"|"generic-table", "id": ...}``."""
    if isinstance(item, dict):
        typ, tabular_id = str(item.get("type")), str(item.get("id"))
    else:
        typ, tabular_id = str(item.type), str(item.id)
    return kinds.from_wire(typ) or typ, tabular_id


async def undrop_tabulars(
    state: AppState, meta: RequestMetadata, warehouse_id: str, targets: Iterable[Any]
) -> list[Any]:
    """Restore soft-deleted tables, views and generic tables: clear ``deleted_at`` and cancel their
    pending expiration.

    The warehouse must be active and usable by the caller, and each target undroppable by them (one
    they may not see is "not found"). ``targets`` are ``{"type": "table"|"view"|"generic-table",
    "id": ...}`` items. All or nothing: an unknown id is a 404, a name taken meanwhile by a live
    table or view a 409, an expiration already running a 409. Returns the restored rows and
    publishes one ``undropTabulars`` event per row.
    """
    targets = list(targets)
    warehouse = await require_warehouse(state, warehouse_id, active_only=True)
    warehouse_id = warehouse.id
    await authorize_warehouse(state, meta, "use", warehouse_id)
    for item in targets:
        wire_type = str(item.get("type") if isinstance(item, dict) else item.type)
        kind, tabular_id = kinds.from_wire(wire_type), _target(item)[1]
        if kind is None:
            raise bad_request(f"targets[].type must be 'table', 'view' or 'generic-table', got {wire_type!r}")
        await authorize(state, meta, "undrop", kind, tabular_id, warehouse_id,
                        hidden=not_found(f"{kinds.label(kind)} {tabular_id} not found", "TabularNotFound"))
    wanted = [_target(t) for t in targets]
    for index, (typ, tabular_id) in enumerate(wanted):
        if typ not in kinds.KINDS:
            raise bad_request(f"targets[].type must be 'table', 'view' or 'generic-table', got {kinds.wire(typ)!r}")
        try:
            wanted[index] = (typ, str(uuid.UUID(tabular_id)))
        except ValueError:
            raise bad_request(
                f"Invalid request body: {tabular_id!r} is not a UUID @ body.targets[{index}].id"
            ) from None
    restored = []
    names: list[list[str]] = []
    async with state.store.transaction() as tx:
        for typ, tabular_id in wanted:
            row = await tabular_admin.get_tabular_info(tx, warehouse_id, tabular_id, include_deleted=True)
            if row is None or row.deleted_at is None or row.typ != typ:
                raise not_found(f"No soft-deleted {kinds.label(typ).lower()} with id {tabular_id}", "TabularNotFound")
            if await tabular_admin.live_name_taken(tx, row.namespace_id, row.name):
                raise CatalogError(
                    409,
                    "TabularAlreadyExists",
                    f"Cannot undrop {kinds.label(typ).lower()} {row.name!r}: a table, view or generic table "
                    "with that name exists in its namespace",
                )
            for task in await task_store.entity_tasks(tx, tabular_id, SOFT_DELETION_QUEUE):
                if task.status != "scheduled":
                    raise CatalogError(
                        409, "TabularExpirationRunning",
                        f"The expiration of {kinds.label(typ).lower()} {row.name!r} is already running",
                    )
                await task_store.cancel_task(tx, task.id, "Cancelled by undrop")
            await tabular_admin.clear_deleted(tx, tabular_id)
            restored.append(row)
            names.append(await entity_name(tx, row.namespace_id, row.name))

    # ------------------------------------------------ EVENTS

    events.tabulars_undropped(
        state,
        meta,
        warehouse_id,
        [{"id": r.id, "name": r.name, "typ": r.typ, "namespace": n[:-1]} for r, n in zip(restored, names, strict=True)],
    )
    return restored


# ---------------------------------------------------------------- task handlers


async def expire_tabular(state: AppState, task: task_store.TaskRow) -> str:
    """``soft_deletion`` handler: hard-delete the soft-deleted row; schedule the purge if requested."""
    async with state.store.transaction() as tx:
        dropped = await tabular_admin.hard_delete(tx, task.entity_id, force=True, deleted=True)
        if dropped is None:
            return "Tabular no longer soft-deleted (undropped or already removed)"
        purge = task.payload.get("deletion-kind") == "purge"
        if purge:
            await schedule_purge(
                tx,
                project_id=task.project_id,
                warehouse_id=dropped.warehouse_id,
                tabular=dropped,
                name=task.entity_name,
            )
    await deleted(state, _typ(dropped), [dropped.id], dropped.warehouse_id)
    return "Expired; purge scheduled" if purge else "Expired"


async def purge_tabular(state: AppState, task: task_store.TaskRow) -> str:
    """``tabular_purge`` handler: delete every file under the tabular's location.

    Nothing is deleted when the location is no table location of the warehouse (a row from before
    that was checked), or when a table or view now lives at or under it: it was created or
    registered there after the drop (the location was free again), and its files are its own.
    """

    location = task.payload.get("tabular-location")
    if not location:
        return "Nothing to purge (no location)"
    warehouse = await warehouse_store.get_warehouse(state.store, task.warehouse_id)
    if warehouse is None:
        return "Warehouse no longer exists"
    storage = await state.storage_for(warehouse)
    if not inside_tabular(storage, location, location):
        log.warning("not purging %s: it is no table location inside warehouse %s", location, warehouse.id)
        return f"Not purged: {location} is no table location inside the warehouse"
    taken = await tabular_store.location_conflict(state.store, warehouse.id, storage.normalize_location(location))
    if taken is not None:
        log.warning("not purging %s: the table or view at %s lives there now", location, taken)
        return f"Not purged: the location of the table or view at {taken} overlaps {location}"
    removed = await storage.delete_prefix(location)
    return f"Removed {removed} file(s) under {location}"


# ---------------------------------------------------------------- listing


async def list_deleted_tabulars(
    state: AppState,
    meta: RequestMetadata,
    warehouse_id: str,
    *,
    namespace_id: str | None,
    page_token: str | None,
    page_size: int | None,
) -> tuple[list[dict[str, Any]], str | None]:
    """Soft-deleted tables, views and generic tables with their expiration (``GET .../deleted-tabulars``)."""

    warehouse = await require_warehouse(state, warehouse_id, active_only=True)
    await authorize_warehouse(state, meta, "list_deleted_tabulars", warehouse.id)
    limit = pagination.page_size(state, page_size)
    after = decode_page_token(page_token, int, str)
    rows = await tabular_admin.list_deleted(
        state.store, warehouse.id, namespace_id=namespace_id, after=after, limit=limit
    )
    next_token = encode_page_token(rows[-1]["deleted_at"], rows[-1]["id"]) if len(rows) == limit else None
    rows = await visible(state, meta, rows, lambda r: Resource(r["typ"], r["id"], warehouse.id))
    seconds = warehouse.soft_delete_seconds or 0
    items = [
        {
            "id": row["id"],
            "name": row["name"],
            "namespace": decode_name(row["namespace_name"]),
            "typ": kinds.wire(row["typ"]),
            "warehouse-id": warehouse.id,
            "created-at": iso_timestamp(row["created_at"]),
            "deleted-at": iso_timestamp(row["deleted_at"]),
            "expiration-date": iso_timestamp(row["expiration_date"] or row["deleted_at"] + seconds * 1000),
        }
        for row in rows
    ]
    return items, next_token


# ---------------------------------------------------------------- search


async def search_tabulars(state: AppState, meta: RequestMetadata, warehouse_id: str, body: Any) -> list[dict[str, Any]]:
    """``POST .../search-tabular``: substring match on the names of tables, views, generic tables and
    namespaces, or an exact id.

    Lakekeeper ranks by trigram distance; here ``distance`` is the share of the name not matched
    (0 = the search is the whole name), lower is better.
    """

    warehouse, term, everything = await search_scope(state, meta, warehouse_id, body)
    rows = await tabular_admin.search_tabulars(
        state.store, warehouse.id, term, limit=SEARCH_RESULTS if everything else SEARCH_CANDIDATES)
    if not everything:
        rows = await visible(state, meta, rows, lambda r: Resource(r["typ"], r["id"], warehouse.id))
    results = []
    for row in rows[:SEARCH_RESULTS]:
        parts = decode_name(row["namespace_name"])
        results.append(
            {
                "namespace-name": parts,
                "tabular-name": row["name"],
                "tabular-id": {"type": kinds.wire(row["typ"]), "id": row["id"]},
                "distance": distance(term, ".".join([*parts, row["name"]]), row["id"]),
            }
        )
    return sorted(results, key=lambda r: r["distance"])
