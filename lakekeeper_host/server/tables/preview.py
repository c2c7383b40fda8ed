"""A table's first rows and its column statistics, read on the server (the console's Data tab).

``GET /management/v1/warehouse/{warehouse_id}/table/{table_id}/preview`` answers one page of rows of
the current snapshot, of a chosen snapshot (``snapshotId``) or of a branch or tag (``ref``);
``.../column-statistics`` sums up what the manifests record per column (value, null and NaN counts,
lower and upper bounds, sizes) and the file and row counts. Neither endpoint is Lakekeeper's.

Both read what a client with the caller's data permission could read, and nothing more:

* AUTHZ: the caller must see the table (else 404, as for a missing one) and may read its data
  (``data_permission``, the rule vended credentials follow; else 403);
* the files are read with pyiceberg through the warehouse's own storage (:class:`StorageFileIO`),
  scoped to the table's location like a vended credential: a manifest naming a file elsewhere (another
  table's, say) is refused, never read.

A page token pins the snapshot and the position (file, row), so paging is stable while the table
changes. Files are read whole; one larger than ``MAX_FILE_BYTES`` is refused rather than loaded.
"""

from __future__ import annotations

import asyncio
import math
import uuid
from collections.abc import Iterator
from datetime import date, datetime, time
from decimal import Decimal
from typing import Any

from pyiceberg.conversions import from_bytes
from pyiceberg.expressions import AlwaysTrue
from pyiceberg.manifest import DataFileContent, ManifestEntry
from pyiceberg.schema import Schema, index_by_id
from pyiceberg.table import DataScan
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.snapshots import Snapshot
from pyiceberg.types import DoubleType, FloatType, PrimitiveType

from lakekeeper_host.errors import CatalogError, bad_request, forbidden, not_found
from lakekeeper_host.server import metadata_io
from lakekeeper_host.server.authorize import authorize, data_permission
from lakekeeper_host.server.pagination import decode_page_token, encode_page_token
from lakekeeper_host.server.resolve import require_warehouse
from lakekeeper_host.server.tables.scan_planning import StorageFileIO, single_value_json
from lakekeeper_host.server.tabulars.locations import inside_tabular
from lakekeeper_host.service.request import RequestMetadata
from lakekeeper_host.service.state import AppState
from lakekeeper_host.store import tabular_admin
from lakekeeper_host.store import tabulars as tabular_store

DEFAULT_ROWS = 50
MAX_ROWS = 500  # rows per page
MAX_FILE_BYTES = 256 * 1024 * 1024  # a data file read whole for a preview
MAX_TEXT = 1000  # characters of one string value shown; bytes are shown as hex of at most half that


class FileOutsideTable(CatalogError):
    def __init__(self, location: str) -> None:
        super().__init__(403, "ForbiddenException",
                         f"The table's metadata names a file outside the table's location: {location}; not read")


class ScopedFileIO(StorageFileIO):
    """:class:`StorageFileIO` (confined to the table's location, the scope a vended credential for the
    table would have) whose refusal is the preview's 403 rather than scan planning's 400."""

    def check(self, location: str) -> None:
        if not inside_tabular(self.storage, location, self.table_location):
            raise FileOutsideTable(location)


# ---------------------------------------------------------------- VALIDATIONS + AUTHZ


async def _readable_table(
    state: AppState, meta: RequestMetadata, warehouse_id: str, table_id: str
) -> tuple[Any, Any, TableMetadata]:
    """(warehouse, row, metadata) of a table whose data the caller may read."""
    warehouse = await require_warehouse(state, warehouse_id, active_only=True)
    missing = not_found(f"Table {table_id} not found", "TableNotFound")
    try:
        table_id = str(uuid.UUID(table_id))
    except ValueError:
        raise missing from None
    row = await tabular_admin.get_tabular_info(state.store, warehouse.id, table_id)
    if row is None or row.typ != "table" or row.staged:
        raise missing
    await authorize(state, meta, "get_metadata", "table", row.id, warehouse.id, hidden=missing)
    if await data_permission(state, meta, warehouse.id, row.id) is None:
        raise forbidden(f"Not allowed to read data on table {row.id}")
    row = await tabular_store.with_current_metadata(state.store, row)
    if row is None or row.metadata is None:
        raise missing
    return warehouse, row, metadata_io.parse(row.metadata)


def choose_snapshot(metadata: TableMetadata, snapshot_id: int | None, ref: str | None) -> Snapshot | None:
    """The snapshot asked for (by id, or a branch's or tag's head), else the current one; None for a table
    without snapshots."""
    if snapshot_id is not None and ref:
        raise bad_request("Give either snapshotId or ref, not both")
    if ref:
        found = metadata.refs.get(ref)
        if found is None:
            raise not_found(f"Table has no branch or tag {ref!r}", "NoSuchReference")
        snapshot_id = found.snapshot_id
    if snapshot_id is not None:
        snapshot = metadata.snapshot_by_id(snapshot_id)
        if snapshot is None:
            raise bad_request(f"Table has no snapshot {snapshot_id}", "NoSuchSnapshot")
        return snapshot
    return metadata.current_snapshot()


# ---------------------------------------------------------------- values as JSON


def json_value(value: Any) -> Any:
    """A value read by pyarrow as JSON: times as ISO-8601, decimals as text, bytes as hex, NaN as text."""
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, str):
        return value if len(value) <= MAX_TEXT else value[:MAX_TEXT] + "…"
    if isinstance(value, (datetime, date, time)):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, (bytes, bytearray)):
        shown = bytes(value[: MAX_TEXT // 2]).hex()
        return shown if len(value) <= MAX_TEXT // 2 else shown + "…"
    if isinstance(value, dict):
        return {str(key): json_value(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        # a map column arrives as a list of (key, value) pairs
        return [json_value(item) for item in value]
    return str(value)


def _columns(schema: Schema) -> list[dict[str, Any]]:
    return [{"field-id": field.field_id, "name": field.name, "type": str(field.field_type),
             "required": field.required} for field in schema.fields]


# ---------------------------------------------------------------- rows


def read_rows(
    metadata: TableMetadata, io: ScopedFileIO, snapshot: Snapshot | None, start: tuple[int, int], limit: int
) -> tuple[Schema, list[list[Any]], tuple[int, int] | None]:
    """Rows from position ``start`` (file index, row in that file) on, in file path order; the position
    after them, None at the end. Runs in a worker thread (pyiceberg reads synchronously)."""
    scan = DataScan(table_metadata=metadata, io=io, snapshot_id=snapshot.snapshot_id if snapshot else None)
    schema = scan.projection()
    if snapshot is None:
        return schema, [], None
    # pyarrow only here: imported at start-up it adds ~50 MB RSS and ~0.4 s to every server (bench rss_idle_mb)
    from pyiceberg.io.pyarrow import ArrowScan

    tasks = sorted(scan.plan_files(), key=lambda task: task.file.file_path)
    rows: list[list[Any]] = []
    names = [field.name for field in schema.fields]
    file_index, skip = start
    while file_index < len(tasks):
        task = tasks[file_index]
        if task.file.file_size_in_bytes > MAX_FILE_BYTES:
            raise bad_request(
                f"Data file {task.file.file_path} has {task.file.file_size_in_bytes} bytes, more than a preview reads "
                f"({MAX_FILE_BYTES}); query the table with an engine", "PreviewFileTooLarge")
        batches = iter(ArrowScan(metadata, io, schema, AlwaysTrue()).to_record_batches([task]))
        position = 0  # rows of this file (deletes applied) before the current batch
        for batch in batches:
            first, position = position, position + batch.num_rows
            if position <= skip:
                continue
            wanted = batch.slice(max(0, skip - first), limit - len(rows))
            columns = [wanted.column(name).to_pylist() for name in names]
            rows += [[json_value(column[i]) for column in columns] for i in range(wanted.num_rows)]
            if len(rows) == limit:
                taken = max(skip, first) + wanted.num_rows
                more = taken < position or next(batches, None) is not None or file_index + 1 < len(tasks)
                return schema, rows, ((file_index, taken) if more else None)
        file_index, skip = file_index + 1, 0
    return schema, rows, None


async def preview(
    state: AppState, meta: RequestMetadata, warehouse_id: str, table_id: str, *, snapshot_id: int | None = None,
    ref: str | None = None, page_token: str | None = None, page_size: int | None = None,
) -> dict[str, Any]:
    """One page of rows: ``{snapshot-id, columns, rows, next-page-token}`` (rows as lists in column order)."""
    # ------------------------------------------------ VALIDATIONS + AUTHZ
    warehouse, row, metadata = await _readable_table(state, meta, warehouse_id, table_id)
    limit = max(1, min(page_size or DEFAULT_ROWS, MAX_ROWS))
    token = decode_page_token(page_token, int, int, int)
    if token is not None:
        snapshot_id, ref = token[0], None
    snapshot = choose_snapshot(metadata, snapshot_id, ref)
    start = (token[1], token[2]) if token is not None else (0, 0)

    # ------------------------------------------------ BUSINESS LOGIC
    storage = await state.storage_for(warehouse)
    io = ScopedFileIO(storage, asyncio.get_running_loop(), row.location)
    schema, rows, after = await asyncio.to_thread(read_rows, metadata, io, snapshot, start, limit)
    return {
        "snapshot-id": snapshot.snapshot_id if snapshot else None,
        "schema-id": schema.schema_id,
        "columns": _columns(schema),
        "rows": rows,
        "next-page-token": encode_page_token(snapshot.snapshot_id, *after) if snapshot and after else None,
    }


# ---------------------------------------------------------------- column statistics


def _entries(metadata: TableMetadata, io: ScopedFileIO, snapshot: Snapshot) -> Iterator[ManifestEntry]:
    for manifest in snapshot.manifests(io):
        yield from manifest.fetch_manifest_entry(io, discard_deleted=True)


def summarize_columns(metadata: TableMetadata, io: ScopedFileIO, snapshot: Snapshot | None) -> dict[str, Any]:
    """What the manifests of ``snapshot`` record, summed over its live data files (worker thread)."""
    schema = metadata.schema_by_id(snapshot.schema_id) if snapshot and snapshot.schema_id is not None else None
    schema = schema or metadata.schema()
    fields = {field_id: field for field_id, field in index_by_id(schema).items()
              if isinstance(field.field_type, PrimitiveType)}
    totals = {"data-files": 0, "delete-files": 0, "record-count": 0, "deleted-record-count": 0,
              "file-size-in-bytes": 0, "delete-file-size-in-bytes": 0}
    columns: dict[int, dict[str, Any]] = {
        field_id: {"values": 0, "nulls": 0, "nans": 0, "size": 0, "lower": None, "upper": None,
                   "has": {"values": True, "nulls": True, "nans": True, "size": True, "bounds": True}}
        for field_id in fields}
    for entry in _entries(metadata, io, snapshot) if snapshot else ():
        data_file = entry.data_file
        if data_file.content != DataFileContent.DATA:
            totals["delete-files"] += 1
            totals["deleted-record-count"] += data_file.record_count
            totals["delete-file-size-in-bytes"] += data_file.file_size_in_bytes
            continue
        totals["data-files"] += 1
        totals["record-count"] += data_file.record_count
        totals["file-size-in-bytes"] += data_file.file_size_in_bytes
        for field_id, column in columns.items():
            _add_file(column, data_file, field_id, fields[field_id].field_type)
    return {
        "snapshot-id": snapshot.snapshot_id if snapshot else None,
        "schema-id": schema.schema_id,
        **totals,
        "columns": [_column_json(schema, field_id, fields[field_id], column) for field_id, column in columns.items()],
    }


def _add_file(column: dict[str, Any], data_file: Any, field_id: int, field_type: Any) -> None:
    has = column["has"]
    for key, attribute in (("values", "value_counts"), ("nulls", "null_value_counts"),
                           ("nans", "nan_value_counts"), ("size", "column_sizes")):
        found = (getattr(data_file, attribute, None) or {}).get(field_id)
        if found is None:
            has[key] = False
        else:
            column[key] += found
    values = (data_file.value_counts or {}).get(field_id)
    nulls = (data_file.null_value_counts or {}).get(field_id)
    only_nulls = values is not None and nulls is not None and values == nulls
    for key, attribute, better in (("lower", "lower_bounds", min), ("upper", "upper_bounds", max)):
        raw = (getattr(data_file, attribute, None) or {}).get(field_id)
        if raw is None:
            has["bounds"] = has["bounds"] and only_nulls  # a file of nulls only has no bounds, rightly
            continue
        try:
            value = from_bytes(field_type, raw)
            column[key] = value if column[key] is None else better(column[key], value)
        except (ValueError, TypeError):
            has["bounds"] = False


def _column_json(schema: Schema, field_id: int, field: Any, column: dict[str, Any]) -> dict[str, Any]:
    has = column["has"]
    floating = isinstance(field.field_type, (FloatType, DoubleType))
    return {
        "field-id": field_id,
        "name": schema.find_column_name(field_id) or field.name,
        "type": str(field.field_type),
        "value-count": column["values"] if has["values"] else None,
        "null-count": column["nulls"] if has["nulls"] else None,
        "nan-count": column["nans"] if has["nans"] and floating else None,
        "column-size-in-bytes": column["size"] if has["size"] else None,
        "lower-bound": json_value(single_value_json(field.field_type, column["lower"])),
        "upper-bound": json_value(single_value_json(field.field_type, column["upper"])),
        # false when a file recorded no bound for values it holds: the true bounds may lie further out
        "bounds-complete": has["bounds"],
    }


async def column_statistics(
    state: AppState, meta: RequestMetadata, warehouse_id: str, table_id: str, *, snapshot_id: int | None = None,
    ref: str | None = None,
) -> dict[str, Any]:
    # ------------------------------------------------ VALIDATIONS + AUTHZ
    warehouse, row, metadata = await _readable_table(state, meta, warehouse_id, table_id)
    snapshot = choose_snapshot(metadata, snapshot_id, ref)

    # ------------------------------------------------ BUSINESS LOGIC
    storage = await state.storage_for(warehouse)
    io = ScopedFileIO(storage, asyncio.get_running_loop(), row.location)
    return await asyncio.to_thread(summarize_columns, metadata, io, snapshot)
