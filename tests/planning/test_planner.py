"""The scan planner (server/tables/scan_planning.py) against tables written by PyIceberg, without a server."""

from __future__ import annotations

import asyncio
import datetime

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import _PLANNING_RESPONSE_ADAPTER
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.expressions import And, EqualTo, GreaterThanOrEqual, In, Not
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table import FileScanTask
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import DateType, LongType, NestedField, StringType

from lakekeeper_host.builtins.storage_file import FileProfile, FileStorage
from lakekeeper_host.errors import CatalogError
from lakekeeper_host.server.tables import scan_planning as sp

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "cat", StringType(), required=False),
    NestedField(3, "d", DateType(), required=False),
)
SPEC = PartitionSpec(
    PartitionField(2, 1000, IdentityTransform(), "cat"), PartitionField(3, 1001, IdentityTransform(), "d")
)


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    root = tmp_path_factory.mktemp("planning")
    catalog = SqlCatalog("t", uri=f"sqlite:///{root}/cat.db", warehouse=f"file://{root}/wh")
    catalog.create_namespace("ns")
    tbl = catalog.create_table("ns.t", SCHEMA, partition_spec=SPEC, properties={"format-version": "2"})
    for batch in range(3):
        ids = [batch * 10 + i for i in range(6)]
        tbl.append(
            pa.table(
                {
                    "id": pa.array(ids, pa.int64()),
                    "cat": ["a", "b", "c", "a", "b", "c"],
                    "d": [datetime.date(2024, 1, 1 + batch)] * 6,
                }
            )
        )
    tbl = catalog.load_table("ns.t")
    tbl.root = str(root)
    return tbl


def plan(table, body, page_size=None):
    async def run():
        request = sp.parse_plan_request(body, table.metadata)
        storage = FileStorage(FileProfile(root=table.root))
        io = sp.StorageFileIO(storage, asyncio.get_running_loop(), table.metadata.location)
        planner = sp.Planner(request, io)
        return await asyncio.to_thread(planner.plan)

    return asyncio.run(run())


def client_side_files(table, row_filter):
    return sorted(t.file.file_path for t in table.scan(row_filter=row_filter).plan_files())


@pytest.mark.parametrize(
    "row_filter",
    [
        EqualTo("cat", "a"),
        And(EqualTo("cat", "b"), GreaterThanOrEqual("id", 10)),
        In("d", {datetime.date(2024, 1, 2), datetime.date(2024, 1, 3)}),
        Not(EqualTo("cat", "c")),
    ],
)
def test_server_plan_finds_the_same_files_as_pyiceberg(table, row_filter):
    result = plan(table, {"filter": row_filter.model_dump(mode="json")})
    files = sorted(t["data-file"]["file-path"] for t in result["file-scan-tasks"])
    assert files == client_side_files(table, row_filter)
    assert files  # the filters all match something


def test_the_response_is_what_pyiceberg_parses(table):
    result = plan(table, {"filter": EqualTo("cat", "a").model_dump(mode="json")})
    parsed = _PLANNING_RESPONSE_ADAPTER.validate_python({"status": "completed", **result, "plan-tasks": []})
    tasks = [FileScanTask.from_rest_response(t, parsed.delete_files) for t in parsed.file_scan_tasks]
    assert {t.file.file_path for t in tasks} == set(client_side_files(table, EqualTo("cat", "a")))
    first = result["file-scan-tasks"][0]["data-file"]
    assert first["file-format"] == "parquet" and first["content"] == "data"
    # partition values use the spec's JSON form: identity(date) is an ISO date
    assert first["partition"][0] == "a" and first["partition"][1].startswith("2024-01-0")


def test_without_a_filter_everything_is_planned(table):
    result = plan(table, {})
    assert len(result["file-scan-tasks"]) == 9
    assert all("residual-filter" not in t for t in result["file-scan-tasks"])


def test_time_travel_plans_an_older_snapshot(table):
    first_snapshot = table.metadata.snapshots[0].snapshot_id
    result = plan(table, {"snapshot-id": first_snapshot})
    assert len(result["file-scan-tasks"]) == 3


def test_incremental_append_scan(table):
    snapshots = [s.snapshot_id for s in table.metadata.snapshots]
    result = plan(table, {"start-snapshot-id": snapshots[0], "end-snapshot-id": snapshots[2]})
    assert {t["data-file"]["partition"][1] for t in result["file-scan-tasks"]} == {"2024-01-02", "2024-01-03"}


def test_requested_stats_are_decoded(table):
    result = plan(table, {"filter": EqualTo("cat", "a").model_dump(mode="json"), "stats-fields": ["id"]})
    data_file = result["file-scan-tasks"][0]["data-file"]
    assert data_file["lower-bounds"]["keys"] == [1]
    assert isinstance(data_file["lower-bounds"]["values"][0], int)
    assert set(data_file["value-counts"]["keys"]) == {1}


@pytest.mark.parametrize(
    "body,message",
    [
        ({"filter": {"type": "eq", "term": "nope", "value": 1}}, "Invalid filter"),
        ({"filter": {"type": "bogus", "term": "id", "value": 1}}, "unknown expression type(s) 'bogus'"),
        ({"select": ["id", "nope"]}, "Invalid select"),
        ({"snapshot-id": 42}, "Cannot find snapshot with ID 42"),
        ({"start-snapshot-id": 1}, "end-snapshot-id is required"),
        ({"stats-fields": ["nope"]}, "Invalid stats-fields"),
        ([], "JSON object"),
    ],
)
def test_bad_requests_are_400_with_a_reason(table, body, message):
    with pytest.raises(CatalogError) as info:
        sp.parse_plan_request(body, table.metadata)
    assert info.value.code == 400
    assert message in info.value.message


def test_pages_carry_their_own_delete_files():
    deletes = [{"file-path": f"d{i}"} for i in range(3)]
    tasks = [
        {"data-file": {"file-path": "a"}, "delete-file-references": [2]},
        {"data-file": {"file-path": "b"}},
        {"data-file": {"file-path": "c"}, "delete-file-references": [0, 2]},
    ]
    pages = sp.paginate({"file-scan-tasks": tasks, "delete-files": deletes}, 2)
    assert len(pages) == 2
    assert pages[0]["delete-files"] == [{"file-path": "d2"}]
    assert pages[0]["file-scan-tasks"][0]["delete-file-references"] == [0]
    assert pages[1]["delete-files"] == [{"file-path": "d0"}, {"file-path": "d2"}]
    assert pages[1]["file-scan-tasks"][0]["delete-file-references"] == [0, 1]
    single = {"file-scan-tasks": tasks, "delete-files": deletes}
    assert sp.paginate(single, 3) == [single]
