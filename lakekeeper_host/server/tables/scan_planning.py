"""Server-side scan planning (spec ``planTableScan``, ``fetchPlanningResult``, ``cancelPlanning``,
``fetchScanTasks``) -- something neither Lakekeeper nor Polaris serves.

The server reads the table's manifests with pyiceberg (``ManifestGroupPlanner``: partition
summaries, partition and metrics evaluators, the position-delete index; equality deletes matched by
sequence number, partition and column bounds as Java does) through the warehouse's
own ``Storage`` -- so it works for every storage plugin without handing the server credentials --
and answers spec ``FileScanTask`` JSON (data file, delete-file references, residual filter).

* Small plans are **synchronous**: ``completed`` with the tasks inline. When there are more than
  ``max_tasks_per_page`` tasks, the first page is inline and the rest are ``plan-tasks`` tokens
  the client redeems with ``fetchScanTasks``.
* Plans that must read at least ``async_min_manifests`` data manifests are **asynchronous**:
  ``submitted`` with a ``plan-id``; the planning runs in the background and
  ``fetchPlanningResult`` answers ``submitted`` until it is ``completed`` (or ``failed``);
  ``cancelPlanning`` stops it. PyIceberg 0.12 only understands ``completed``, so keep its tables
  under the threshold.
* Pages of multi-page and asynchronous plans are stored (``scan_plan``/``scan_plan_task``, so every
  server process can answer them) until ``plan_ttl`` after completion.
* Bad requests -- an unknown column in ``filter`` or ``select``, a malformed expression, an
  unknown snapshot -- are 400 ``IllegalArgumentException`` naming the problem.

Configuration: ``LAKEKEEPER__SCAN_PLANNING__{MAX_TASKS_PER_PAGE, ASYNC_MIN_MANIFESTS,
PLAN_TTL, PLANNING_TIMEOUT}``.
"""

from __future__ import annotations

import asyncio
import io
import logging
import struct
import uuid
from collections.abc import Sequence
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

from attrs import field, frozen, validators
from pydantic import ValidationError
from pyiceberg.conversions import from_bytes
from pyiceberg.expressions import AlwaysTrue, And, BooleanExpression, BoundNotStartsWith, BoundStartsWith, Not, Or
from pyiceberg.expressions.visitors import bind
from pyiceberg.io import FileIO, InputFile, OutputFile
from pyiceberg.manifest import (
    DataFile,
    DataFileContent,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
)
from pyiceberg.schema import Schema
from pyiceberg.table import ManifestGroupPlanner
from pyiceberg.table.delete_file_index import DeleteFileIndex
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.snapshots import Operation, Snapshot
from pyiceberg.types import (
    DateType,
    DecimalType,
    IcebergType,
    IntegerType,
    LongType,
    StringType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)
from pyiceberg.utils.datetime import days_to_date, micros_to_time, micros_to_timestamp, micros_to_timestamptz

from lakekeeper_host.errors import CatalogError, bad_request, illegal_argument, no_such_table, not_found
from lakekeeper_host.server import metadata_io
from lakekeeper_host.server.authorize import authorize, data_permission
from lakekeeper_host.server.resolve import resolve_table
from lakekeeper_host.server.tables.load import table_config_for
from lakekeeper_host.server.tabulars.locations import inside_tabular
from lakekeeper_host.service.request import RequestMetadata
from lakekeeper_host.service.state import AppState
from lakekeeper_host.service.storage import Storage
from lakekeeper_host.store import scan_plans as plan_store
from lakekeeper_host.store.db import now_ms

log = logging.getLogger(__name__)

IO_TIMEOUT_S = 300


# ---------------------------------------------------------------- configuration


@frozen
class ScanPlanningConfig:
    # file scan tasks per answer page (the rest follow by plan tasks)
    # example: 500
    max_tasks_per_page: int = field(default=1000, validator=validators.ge(1))
    # a table with at least this many manifests is planned in the background (the client polls the plan)
    # example: 16
    async_min_manifests: int = field(default=64, validator=validators.ge(1))
    # how long a finished plan can be fetched
    # example: PT30M
    plan_ttl: timedelta = timedelta(minutes=10)
    # a plan taking longer fails
    # example: PT30M
    planning_timeout: timedelta = timedelta(minutes=10)


@frozen
class Section:
    # server-side scan planning (POST .../plan)
    scan_planning: ScanPlanningConfig = ScanPlanningConfig()


def planning_config(state: AppState) -> ScanPlanningConfig:
    return state.settings.section(Section).scan_planning


ENDPOINTS = (
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan",
    "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan/{plan-id}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan/{plan-id}",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/tasks",
)


# ---------------------------------------------------------------- FileIO over the warehouse storage


class StorageFileIO(FileIO):
    """A read-only pyiceberg ``FileIO`` over a warehouse ``Storage``, confined to one table.

    pyiceberg plans synchronously (in a worker thread); each read hops back to the server's event
    loop, where the storage plugin does its asynchronous IO. The manifest list and the manifests
    it names are the client's files: a location outside ``table_location`` is never read (it could
    be another table's manifest, or any file the server can read), and a missing one is a 400.
    """

    def __init__(self, storage: Storage, loop: asyncio.AbstractEventLoop, table_location: str):
        super().__init__({})
        self.storage = storage
        self.loop = loop
        self.table_location = table_location

    def check(self, location: str) -> None:
        if not inside_tabular(self.storage, location, self.table_location):
            raise bad_request(
                f"Cannot plan scan: the table's metadata names {location}, which lies outside the table "
                f"location {self.table_location}",
                "InvalidLocation",
            )

    def read(self, location: str) -> bytes:
        self.check(location)
        future = asyncio.run_coroutine_threadsafe(self.storage.read(location), self.loop)
        try:
            return future.result(IO_TIMEOUT_S)
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            raise illegal_argument(f"Cannot plan scan: the table's file {location} does not exist") from None
        except CatalogError:
            raise
        except OSError as exc:
            raise CatalogError(500, "StorageError", f"Failed to read {location}: {exc}") from None

    def new_input(self, location: str) -> InputFile:
        return _StorageInputFile(location, self)

    def new_output(self, location: str) -> OutputFile:  # pragma: no cover - planning never writes
        raise NotImplementedError("scan planning reads only")

    def delete(self, location: str | InputFile | OutputFile) -> None:  # pragma: no cover
        raise NotImplementedError("scan planning reads only")


class _StorageInputFile(InputFile):
    def __init__(self, location: str, file_io: StorageFileIO):
        super().__init__(location)
        self._io = file_io
        self._data: bytes | None = None

    def _content(self) -> bytes:
        if self._data is None:
            self._data = self._io.read(self.location)
        return self._data

    def __len__(self) -> int:
        return len(self._content())

    def exists(self) -> bool:
        self._io.check(self.location)
        future = asyncio.run_coroutine_threadsafe(self._io.storage.exists(self.location), self._io.loop)
        return bool(future.result(IO_TIMEOUT_S))

    def open(self, seekable: bool = True) -> io.BytesIO:
        return io.BytesIO(self._content())


# ---------------------------------------------------------------- the request


@frozen
class PlanRequest:
    """A validated ``PlanTableScanRequest`` against one table's metadata."""

    metadata: TableMetadata
    snapshot: Snapshot | None
    schema: Schema
    row_filter: BooleanExpression
    case_sensitive: bool
    selected: tuple[str, ...] | None
    stats_field_ids: frozenset[int]
    start_snapshot_id: int | None = None


def parse_plan_request(body: Any, metadata: TableMetadata) -> PlanRequest:
    """Parse and check a plan request; every problem is a 400 that says what is wrong."""
    if not isinstance(body, dict):
        raise illegal_argument("Request body must be a JSON object")
    # pyiceberg's parser reports a malformed filter in Python terms, or fills in what is missing
    # (an "in" without "values" matches nothing): check the shape first and say what is wrong in JSON terms
    problem = _filter_problem(body.get("filter"))
    if problem is not None:
        raise illegal_argument(f"Invalid filter: {problem}")
    try:
        # pyiceberg.catalog (requests, YAML config) is imported by the first plan, not at startup
        from pyiceberg.catalog.rest.scan_planning import PlanTableScanRequest

        request = PlanTableScanRequest.model_validate(body)
    except ValidationError as exc:
        raise illegal_argument(f"Invalid scan plan request: {_pydantic_message(exc)}") from None
    except (TypeError, ValueError) as exc:
        raise illegal_argument(f"Invalid filter: {exc}") from None

    # ------------------------------------------------ snapshot
    if request.start_snapshot_id is not None:
        for snapshot_id in (request.start_snapshot_id, request.end_snapshot_id):
            if metadata.snapshot_by_id(snapshot_id) is None:
                raise illegal_argument(f"Cannot find snapshot with ID {snapshot_id}")
        snapshot = metadata.snapshot_by_id(request.end_snapshot_id)
        if not _is_ancestor(metadata, request.start_snapshot_id, snapshot):
            raise illegal_argument(
                f"Starting snapshot (exclusive) {request.start_snapshot_id} is not an ancestor of end snapshot "
                f"{request.end_snapshot_id}"
            )
    elif request.snapshot_id is not None:
        snapshot = metadata.snapshot_by_id(request.snapshot_id)
        if snapshot is None:
            raise illegal_argument(f"Cannot find snapshot with ID {request.snapshot_id}")
    else:
        snapshot = metadata.current_snapshot()

    schema = metadata.schema()
    if request.use_snapshot_schema and snapshot is not None and snapshot.schema_id is not None:
        schema = next((s for s in metadata.schemas if s.schema_id == snapshot.schema_id), schema)
    if schema.schema_id != metadata.current_schema_id:
        metadata = metadata.model_copy(update={"current_schema_id": schema.schema_id})

    # ------------------------------------------------ filter and projection
    row_filter = request.filter if request.filter is not None else AlwaysTrue()
    try:
        bound = bind(schema, row_filter, request.case_sensitive)
    except (ValueError, TypeError) as exc:
        raise illegal_argument(f"Invalid filter: {exc}") from None
    _check_prefix_predicates(bound)
    selected = tuple(request.select) if request.select else None
    if selected and "*" not in selected:
        try:
            schema.select(*selected, case_sensitive=request.case_sensitive)
        except ValueError as exc:
            raise illegal_argument(f"Invalid select: {exc}") from None
    stats_ids = set()
    for name in request.stats_fields or ():
        known = _has_field(schema, name, request.case_sensitive)
        found = schema.find_field(name, request.case_sensitive) if known else None
        if found is None:
            raise illegal_argument(f"Invalid stats-fields: cannot find field {name!r} in {schema}")
        stats_ids.add(found.field_id)

    return PlanRequest(
        metadata=metadata,
        snapshot=snapshot,
        schema=schema,
        row_filter=row_filter,
        case_sensitive=request.case_sensitive,
        selected=selected,
        stats_field_ids=frozenset(stats_ids),
        start_snapshot_id=request.start_snapshot_id,
    )


def _has_field(schema: Schema, name: str, case_sensitive: bool) -> bool:
    try:
        schema.find_field(name, case_sensitive)
        return True
    except ValueError:
        return False


def _pydantic_message(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors():
        location = ".".join(str(p) for p in error.get("loc", ()))
        parts.append(f"{error.get('msg')} at {location}" if location else str(error.get("msg")))
    return "; ".join(parts)


# the spec's expression types and the fields each one needs
_EXPRESSION_FIELDS: dict[str, tuple[str, ...]] = {
    "true": (), "false": (),
    "and": ("left", "right"), "or": ("left", "right"), "not": ("child",),
    **{t: ("term",) for t in ("is-null", "not-null", "is-nan", "not-nan")},
    **{t: ("term", "value") for t in ("eq", "not-eq", "lt", "lt-eq", "gt", "gt-eq", "starts-with", "not-starts-with")},
    **{t: ("term", "values") for t in ("in", "not-in")},
}


def _filter_problem(raw: Any) -> str | None:
    """What is wrong with a filter pyiceberg could not parse, in the request's terms (or None)."""
    unknown = sorted(t for t in _expression_types(raw) if t not in _EXPRESSION_FIELDS)
    if unknown:
        return f"unknown expression type(s) {', '.join(map(repr, unknown))}"
    return _shape_problem(raw, "filter")


def _expression_types(raw: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(raw, dict):
        if isinstance(raw.get("type"), str):
            found.add(raw["type"])
        for key in ("left", "right", "child"):
            found |= _expression_types(raw.get(key))
    return found


def _shape_problem(raw: Any, path: str) -> str | None:
    if isinstance(raw, bool) or raw is None:
        return None
    if not isinstance(raw, dict) or not isinstance(raw.get("type"), str):
        return f"{path} must be an expression object with a 'type', got {raw!r}"
    kind = raw["type"]
    for name in _EXPRESSION_FIELDS[kind]:
        if name not in raw:
            return f"{kind!r} at {path} needs {name!r}"
    for name in ("left", "right", "child"):
        if name in _EXPRESSION_FIELDS[kind]:
            problem = _shape_problem(raw[name], f"{path}.{name}")
            if problem is not None:
                return problem
    if "term" in _EXPRESSION_FIELDS[kind] and not isinstance(raw["term"], str):
        return f"{path}.term must be a column name; transform terms are not supported, got {raw['term']!r}"
    if "values" in _EXPRESSION_FIELDS[kind] and not isinstance(raw["values"], list):
        return f"{path}.values must be a list, got {raw['values']!r}"
    return None


def _check_prefix_predicates(expression: BooleanExpression) -> None:
    """starts-with compares strings: on another column type it is a bad request, not a planner crash."""
    if isinstance(expression, (And, Or)):
        _check_prefix_predicates(expression.left)
        _check_prefix_predicates(expression.right)
    elif isinstance(expression, Not):
        _check_prefix_predicates(expression.child)
    elif isinstance(expression, (BoundStartsWith, BoundNotStartsWith)):
        field = expression.term.ref().field
        if not isinstance(field.field_type, StringType):
            raise illegal_argument(
                f"Invalid filter: {'starts-with' if isinstance(expression, BoundStartsWith) else 'not-starts-with'} "
                f"needs a string column, {field.name!r} is {field.field_type}"
            )


def _is_ancestor(metadata: TableMetadata, ancestor_id: int, snapshot: Snapshot | None) -> bool:
    while snapshot is not None:
        if snapshot.snapshot_id == ancestor_id:
            return True
        snapshot = metadata.snapshot_by_id(snapshot.parent_snapshot_id) if snapshot.parent_snapshot_id else None
    return False


# ---------------------------------------------------------------- planning (synchronous, in a thread)


class Planner:
    """Reads the manifests of one plan request and produces spec ``FileScanTask`` JSON."""

    def __init__(self, request: PlanRequest, file_io: FileIO):
        self.request = request
        self.io = file_io
        self.group = ManifestGroupPlanner(
            table_metadata=request.metadata,
            io=file_io,
            row_filter=request.row_filter,
            case_sensitive=request.case_sensitive,
        )

    def manifests(self) -> list[ManifestFile]:
        """The manifests of the snapshot that may hold matching files (partition summaries)."""
        snapshot = self.request.snapshot
        if snapshot is None:
            return []
        evaluators: dict[int, Any] = {}
        kept = []
        for manifest in snapshot.manifests(self.io):
            spec_id = manifest.partition_spec_id
            if spec_id not in evaluators:
                evaluators[spec_id] = self.group._build_manifest_evaluator(spec_id)
            if evaluators[spec_id](manifest):
                kept.append(manifest)
        return kept

    def plan(self, manifests: Sequence[ManifestFile] | None = None) -> dict[str, list[dict[str, Any]]]:
        """``{"file-scan-tasks": [...], "delete-files": [...]}`` for the whole request."""
        manifests = self.manifests() if manifests is None else list(manifests)
        if self.request.start_snapshot_id is not None:
            entries = self._incremental_append_entries(manifests)
        else:
            entries = [e for group in self.group.plan_manifest_entries(manifests) for e in group]

        data_entries: list[ManifestEntry] = []
        position_deletes = DeleteFileIndex()
        equality_deletes: list[ManifestEntry] = []
        for entry in entries:
            content = entry.data_file.content
            if content == DataFileContent.DATA:
                data_entries.append(entry)
            elif content == DataFileContent.POSITION_DELETES:
                position_deletes.add_delete_file(entry, partition_key=entry.data_file.partition)
            elif content == DataFileContent.EQUALITY_DELETES:
                equality_deletes.append(entry)

        residuals: dict[int, Any] = {}
        delete_files: list[dict[str, Any]] = []
        delete_index: dict[str, int] = {}
        tasks = []
        for entry in data_entries:
            data_file = entry.data_file
            sequence = entry.sequence_number or 0
            deletes = list(position_deletes.for_data_file(sequence, data_file, partition_key=data_file.partition))
            deletes += [d.data_file for d in equality_deletes if self._equality_delete_applies(d, entry)]
            references = []
            for delete in sorted(deletes, key=lambda d: d.file_path):
                if delete.file_path not in delete_index:
                    delete_index[delete.file_path] = len(delete_files)
                    delete_files.append(self._content_file(delete))
                references.append(delete_index[delete.file_path])
            if data_file.spec_id not in residuals:
                residuals[data_file.spec_id] = self.group._build_residual_evaluator(data_file.spec_id)
            residual = residuals[data_file.spec_id](data_file).residual_for(data_file.partition)
            task: dict[str, Any] = {"data-file": self._content_file(data_file)}
            if references:
                task["delete-file-references"] = references
            if not isinstance(residual, AlwaysTrue):
                task["residual-filter"] = residual.model_dump(mode="json")
            tasks.append(task)
        return {"file-scan-tasks": tasks, "delete-files": delete_files}

    # ------------------------------------------------ details

    def _incremental_append_entries(self, manifests: Sequence[ManifestFile]) -> list[ManifestEntry]:
        """Data files added by ``append`` snapshots in (start, end] (an incremental append scan)."""
        metadata = self.request.metadata
        appended: set[int] = set()
        snapshot = self.request.snapshot
        while snapshot is not None and snapshot.snapshot_id != self.request.start_snapshot_id:
            if snapshot.summary is None or snapshot.summary.operation == Operation.APPEND:
                appended.add(snapshot.snapshot_id)
            snapshot = metadata.snapshot_by_id(snapshot.parent_snapshot_id) if snapshot.parent_snapshot_id else None
        wanted = [m for m in manifests if m.content == ManifestContent.DATA and m.added_snapshot_id in appended]
        return [
            e
            for group in self.group.plan_manifest_entries(wanted)
            for e in group
            if e.status == ManifestEntryStatus.ADDED and e.snapshot_id in appended
        ]

    def _equality_delete_applies(self, delete: ManifestEntry, data: ManifestEntry) -> bool:
        if (delete.sequence_number or 0) <= (data.sequence_number or 0):
            return False
        spec = self.request.metadata.specs().get(delete.data_file.spec_id)
        if spec is not None and not spec.is_unpartitioned():
            same_partition = (
                delete.data_file.spec_id == data.data_file.spec_id
                and delete.data_file.partition == data.data_file.partition
            )
            if not same_partition:
                return False
        return self._may_hold_deleted_values(delete.data_file, data.data_file)

    def _may_hold_deleted_values(self, delete: DataFile, data: DataFile) -> bool:
        """False when the column bounds prove no row of ``data`` equals a deleted row (Java's
        DeleteFileIndex prunes the same way): readers then skip applying that delete file.
        Anything unknown -- a missing bound, a type without a safe order, nulls on both sides -- may match."""
        schema = self.request.metadata.schema()
        for field_id in delete.equality_ids or ():
            try:
                field_type = schema.find_type(field_id)
            except ValueError:
                continue
            if not isinstance(field_type, _ORDERED_TYPES):
                continue
            if _may_have_nulls(data, field_id) and _may_have_nulls(delete, field_id):
                continue  # a null in a delete file deletes nulls
            bounds = [
                _bound(f, attr, field_id, field_type)
                for f in (data, delete)
                for attr in ("lower_bounds", "upper_bounds")
            ]
            if None in bounds:
                continue
            data_lower, data_upper, delete_lower, delete_upper = bounds
            if data_upper < delete_lower or delete_upper < data_lower:
                return False
        return True

    def _content_file(self, data_file: DataFile) -> dict[str, Any]:
        metadata = self.request.metadata
        spec = metadata.specs().get(data_file.spec_id)
        partition_types = [f.field_type for f in spec.partition_type(self.request.schema).fields] if spec else []
        partition = [
            single_value_json(partition_types[i] if i < len(partition_types) else None, value)
            for i, value in enumerate(data_file.partition or ())
        ]
        content = {
            DataFileContent.DATA: "data",
            DataFileContent.POSITION_DELETES: "position-deletes",
            DataFileContent.EQUALITY_DELETES: "equality-deletes",
        }[data_file.content]
        out: dict[str, Any] = {
            "spec-id": data_file.spec_id,
            "partition": partition,
            "content": content,
            "file-path": data_file.file_path,
            "file-format": str(data_file.file_format.value).lower(),
            "file-size-in-bytes": data_file.file_size_in_bytes,
            "record-count": data_file.record_count,
        }
        if data_file.key_metadata:
            out["key-metadata"] = bytes(data_file.key_metadata).hex()
        if data_file.split_offsets:
            out["split-offsets"] = list(data_file.split_offsets)
        if data_file.sort_order_id is not None:
            out["sort-order-id"] = data_file.sort_order_id
        if content == "data":
            first_row_id = getattr(data_file, "first_row_id", None)
            if first_row_id is not None:
                out["first-row-id"] = first_row_id
            out.update(self._stats(data_file))
        elif content == "position-deletes":
            for attr, key in (
                ("referenced_data_file", "referenced-data-file"),
                ("content_offset", "content-offset"),
                ("content_size_in_bytes", "content-size-in-bytes"),
            ):
                value = getattr(data_file, attr, None)
                if value is not None:
                    out[key] = value
        else:
            out["equality-ids"] = list(data_file.equality_ids or [])
        return out

    def _stats(self, data_file: DataFile) -> dict[str, Any]:
        wanted = self.request.stats_field_ids
        if not wanted:
            return {}
        out: dict[str, Any] = {}
        for attr, key in (
            ("column_sizes", "column-sizes"),
            ("value_counts", "value-counts"),
            ("null_value_counts", "null-value-counts"),
            ("nan_value_counts", "nan-value-counts"),
        ):
            values = {k: v for k, v in (getattr(data_file, attr, None) or {}).items() if k in wanted}
            if values:
                out[key] = {"keys": list(values), "values": list(values.values())}
        for attr, key in (("lower_bounds", "lower-bounds"), ("upper_bounds", "upper-bounds")):
            keys, values = [], []
            for field_id, raw in (getattr(data_file, attr, None) or {}).items():
                if field_id not in wanted:
                    continue
                try:
                    field_type = self.request.schema.find_type(field_id)
                    values.append(single_value_json(field_type, from_bytes(field_type, raw)))
                    keys.append(field_id)
                except (ValueError, TypeError):
                    continue
            if keys:
                out[key] = {"keys": keys, "values": values}
        return out


# types whose bound values compare in Python exactly as Iceberg orders them (strings: UTF-8 byte
# order is code point order; truncated string bounds stay outside the true range)
_ORDERED_TYPES = (IntegerType, LongType, DateType, TimeType, TimestampType, TimestamptzType, StringType, DecimalType)


def _may_have_nulls(content_file: DataFile, field_id: int) -> bool:
    counts = content_file.null_value_counts or {}
    return counts.get(field_id) is None or counts[field_id] > 0


def _bound(content_file: DataFile, attribute: str, field_id: int, field_type: IcebergType) -> Any:
    raw = (getattr(content_file, attribute, None) or {}).get(field_id)
    return None if raw is None else from_bytes(field_type, raw)


def single_value_json(iceberg_type: IcebergType | None, value: Any) -> Any:
    """A partition value or bound in the spec's single-value JSON form."""
    if value is None:
        return None
    if isinstance(iceberg_type, DateType) and isinstance(value, int):
        return days_to_date(value).isoformat()
    if isinstance(iceberg_type, TimeType) and isinstance(value, int):
        return micros_to_time(value).isoformat()
    if isinstance(iceberg_type, TimestamptzType) and isinstance(value, int):
        return micros_to_timestamptz(value).isoformat()
    if isinstance(iceberg_type, TimestampType) and isinstance(value, int):
        return micros_to_timestamp(value).isoformat()
    if isinstance(iceberg_type, UUIDType) and isinstance(value, bytes):
        return str(uuid.UUID(bytes=value))
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    if isinstance(value, Decimal) or isinstance(iceberg_type, DecimalType):
        return str(value)
    if isinstance(value, (date, datetime, time)):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    return value


def paginate(plan: dict[str, list[dict[str, Any]]], page_size: int) -> list[dict[str, list[dict[str, Any]]]]:
    """Split a plan into pages of at most ``page_size`` tasks, each with its own delete files."""
    tasks, deletes = plan["file-scan-tasks"], plan["delete-files"]
    if len(tasks) <= page_size:
        return [plan]
    pages = []
    for start in range(0, len(tasks), page_size):
        local: dict[int, int] = {}
        page_deletes: list[dict[str, Any]] = []
        page_tasks = []
        for task in tasks[start : start + page_size]:
            references = task.get("delete-file-references")
            if references:
                task = dict(task)
                remapped = []
                for index in references:
                    if index not in local:
                        local[index] = len(page_deletes)
                        page_deletes.append(deletes[index])
                    remapped.append(local[index])
                task["delete-file-references"] = remapped
            page_tasks.append(task)
        pages.append({"file-scan-tasks": page_tasks, "delete-files": page_deletes})
    return pages


# ---------------------------------------------------------------- BUSINESS LOGIC


def plan_task_token(plan_id: str, page: int) -> str:
    return f"{plan_id}:{page}"


def _parse_token(token: Any) -> tuple[str, int]:
    if not isinstance(token, str) or ":" not in token:
        raise not_found(f"Plan task does not exist: {token}", "NoSuchPlanTaskException")
    plan_id, _, page = token.rpartition(":")
    try:
        return plan_id, int(page)
    except ValueError:
        raise not_found(f"Plan task does not exist: {token}", "NoSuchPlanTaskException") from None


def _completed(plan_id: str | None, first_page: dict[str, Any], page_count: int) -> dict[str, Any]:
    response: dict[str, Any] = {"status": "completed"}
    if plan_id is not None:
        response["plan-id"] = plan_id
    response["file-scan-tasks"] = first_page["file-scan-tasks"]
    response["delete-files"] = first_page["delete-files"]
    response["plan-tasks"] = [plan_task_token(plan_id, n) for n in range(1, page_count)] if plan_id else []
    return response


async def plan_table_scan(
    state: AppState, *, warehouse_id: str, tabular_id: str, storage: Storage, metadata: TableMetadata, body: Any,
    table_location: str,
) -> dict[str, Any]:
    """``planTableScan``: a completed plan, or a submitted one for large scans."""
    # ------------------------------------------------ VALIDATIONS
    config = planning_config(state)
    request = parse_plan_request(body, metadata)

    # ------------------------------------------------ BUSINESS LOGIC
    planner = Planner(request, StorageFileIO(storage, asyncio.get_running_loop(), table_location))
    manifests = await _in_thread(planner.manifests)
    data_manifests = sum(1 for m in manifests if m.content == ManifestContent.DATA)
    if data_manifests >= config.async_min_manifests:
        plan_id = str(uuid.uuid4())
        async with state.store.transaction() as tx:
            await plan_store.insert_plan(tx, plan_id, warehouse_id, tabular_id, status="submitted")
        running = state.scan_plans
        running[plan_id] = asyncio.create_task(
            _plan_in_background(state, plan_id, planner, manifests, config), name=f"scan-plan-{plan_id}"
        )
        return {"status": "submitted", "plan-id": plan_id}

    plan = await _run_planner(planner, manifests)
    pages = paginate(plan, config.max_tasks_per_page)
    if len(pages) == 1:
        return _completed(None, pages[0], 1)
    plan_id = str(uuid.uuid4())
    async with state.store.transaction() as tx:
        await plan_store.insert_plan(tx, plan_id, warehouse_id, tabular_id, status="completed", page_count=len(pages))
        await plan_store.insert_pages(tx, plan_id, pages)
    return _completed(plan_id, pages[0], len(pages))


async def _run_planner(planner: Planner, manifests: list[ManifestFile]) -> dict[str, Any]:
    return await _in_thread(planner.plan, manifests)


# what decoding a file that is no manifest (list) raises in pyiceberg's Avro reader
_UNREADABLE = (EOFError, KeyError, IndexError, TypeError, UnicodeDecodeError, OSError, struct.error)
_NOT_A_MANIFEST = "Cannot plan scan: a file of the table is not a valid manifest or manifest list"


async def _in_thread(fn: Any, *args: Any) -> Any:
    """Run a planning step in a worker thread: a file of the table that is no manifest (list) is a 400
    (its content is not quoted: the storage errors are CatalogErrors already)."""
    try:
        return await asyncio.to_thread(fn, *args)
    except CatalogError:
        raise
    except _UNREADABLE:
        raise illegal_argument(_NOT_A_MANIFEST) from None
    except ValueError as exc:
        raise illegal_argument(f"Cannot plan scan: {exc}") from None


async def _plan_in_background(
    state: AppState, plan_id: str, planner: Planner, manifests: list[ManifestFile], config: ScanPlanningConfig
) -> None:
    try:
        plan = await asyncio.wait_for(_run_planner(planner, manifests), config.planning_timeout.total_seconds())
        pages = paginate(plan, config.max_tasks_per_page)
        async with state.store.transaction() as tx:
            if await plan_store.get_plan(tx, plan_id) is None:
                return  # cancelled meanwhile
            await plan_store.insert_pages(tx, plan_id, pages)
            await plan_store.finish_plan(tx, plan_id, status="completed", page_count=len(pages))
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        error = exc.to_model()["error"] if isinstance(exc, CatalogError) else {
            "message": f"Scan planning failed: {exc}", "type": type(exc).__name__, "code": 500
        }
        if not isinstance(exc, CatalogError):
            log.exception("scan plan %s failed", plan_id)
        try:
            async with state.store.transaction() as tx:
                await plan_store.finish_plan(tx, plan_id, status="failed", error=error)
        except Exception:
            log.exception("recording the failure of scan plan %s failed", plan_id)
    finally:
        state.scan_plans.pop(plan_id, None)


async def _owned_plan(state: AppState, plan_id: str, tabular_id: str) -> plan_store.ScanPlanRow:
    plan = await plan_store.get_plan(state.store, plan_id)
    if plan is None or plan.tabular_id != tabular_id:
        raise not_found(f"Plan does not exist: {plan_id}", "NoSuchPlanIdException")
    return plan


async def fetch_planning_result(state: AppState, *, tabular_id: str, plan_id: str) -> dict[str, Any]:
    plan = await _owned_plan(state, plan_id, tabular_id)
    if plan.status == "submitted":
        return {"status": "submitted", "plan-id": plan.id}
    if plan.status == "failed":
        failure = {"message": "Scan planning failed", "type": "InternalServerError", "code": 500}
        return {"status": "failed", "error": plan.error or failure}
    if plan.status == "cancelled":
        return {"status": "cancelled"}
    first = await plan_store.get_page(state.store, plan.id, 0) or {"file-scan-tasks": [], "delete-files": []}
    return _completed(plan.id, first, plan.page_count)


async def cancel_planning(state: AppState, *, tabular_id: str, plan_id: str) -> None:
    await _owned_plan(state, plan_id, tabular_id)
    task = state.scan_plans.pop(plan_id, None)
    if task is not None:
        task.cancel()
    async with state.store.transaction() as tx:
        await plan_store.cancel_plan(tx, plan_id)


async def fetch_scan_tasks(state: AppState, *, tabular_id: str, plan_task: Any) -> dict[str, Any]:
    plan_id, page = _parse_token(plan_task)
    plan = await plan_store.get_plan(state.store, plan_id)
    content = await plan_store.get_page(state.store, plan_id, page) if plan is not None else None
    if plan is None or plan.tabular_id != tabular_id or plan.status != "completed" or content is None:
        raise not_found(f"Plan task does not exist: {plan_task}", "NoSuchPlanTaskException")
    return {"file-scan-tasks": content["file-scan-tasks"], "delete-files": content["delete-files"], "plan-tasks": []}


# ---------------------------------------------------------------- the catalog operations


async def _resolve(state: AppState, meta: RequestMetadata, warehouse: Any, parts: list[str], name: str) -> Any:
    """The table, for a caller who may read its data: a plan names the data files (403 for a caller
    who may only see the table, the usual 404 for one who may not)."""
    _, row = await resolve_table(state, warehouse, parts, name)
    await authorize(state, meta, "read_data", "table", row.id, warehouse.id, hidden=no_such_table(parts, name))
    return row


async def plan_for_table(
    state: AppState, meta: RequestMetadata, warehouse: Any, parts: list[str], name: str, body: Any, access: Any
) -> dict[str, Any]:
    """``planTableScan`` of one table; vended credentials ride along on a completed plan."""

    row = await _resolve(state, meta, warehouse, parts, name)
    storage = await state.storage_for(warehouse)
    response = await plan_table_scan(
        state,
        warehouse_id=warehouse.id,
        tabular_id=row.id,
        storage=storage,
        metadata=metadata_io.parse(row.metadata),
        body=body,
        table_location=row.location,
    )
    if response["status"] == "completed":
        # credentials scoped by the caller's data permission, as a load's are
        permission = await data_permission(state, meta, warehouse.id, row.id)
        config = await table_config_for(state, meta, warehouse, parts, row.name, row, row.location, access, permission)
        if config is not None and config.storage_credentials:
            response["storage-credentials"] = list(config.storage_credentials)
    return response


async def planning_result_for_table(
    state: AppState, meta: RequestMetadata, warehouse: Any, parts: list[str], name: str, plan_id: str
) -> dict[str, Any]:
    row = await _resolve(state, meta, warehouse, parts, name)
    return await fetch_planning_result(state, tabular_id=row.id, plan_id=plan_id)


async def cancel_planning_for_table(
    state: AppState, meta: RequestMetadata, warehouse: Any, parts: list[str], name: str, plan_id: str
) -> None:
    row = await _resolve(state, meta, warehouse, parts, name)
    await cancel_planning(state, tabular_id=row.id, plan_id=plan_id)


async def scan_tasks_for_table(
    state: AppState, meta: RequestMetadata, warehouse: Any, parts: list[str], name: str, body: Any
) -> dict[str, Any]:
    row = await _resolve(state, meta, warehouse, parts, name)
    if not isinstance(body, dict) or "plan-task" not in body:
        raise illegal_argument("Invalid request body: missing field `plan-task`")
    return await fetch_scan_tasks(state, tabular_id=row.id, plan_task=body["plan-task"])


# ---------------------------------------------------------------- expiry


async def expire_plans(state: AppState) -> int:
    config = planning_config(state)
    now = now_ms()
    async with state.store.transaction() as tx:
        interrupted = await plan_store.fail_stale_submitted(
            tx,
            now - int(config.planning_timeout.total_seconds() * 1000) * 2,
            running=set(state.scan_plans),
            error={"message": "Scan planning was interrupted", "type": "PlanningInterrupted", "code": 500},
        )
        removed = await plan_store.delete_finished_before(tx, now - int(config.plan_ttl.total_seconds() * 1000))
    return interrupted + removed


async def expiry_loop(state: AppState) -> None:
    interval = min(60.0, max(1.0, planning_config(state).plan_ttl.total_seconds() / 4))
    while True:
        try:
            await expire_plans(state)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("scan plan expiry failed")
        await asyncio.sleep(interval)

