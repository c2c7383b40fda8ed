"""PyIceberg end to end against our catalog (issue 3): the life of one table as a user lives it --
create, append, read back, evolve the schema and the partitioning, overwrite and delete by filter,
time travel -- and eight independent clients appending at once without losing a row.

Every scenario runs on both backends (the ``server`` fixture is parametrised sqlite/postgres).
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.expressions import EqualTo, GreaterThanOrEqual, In, LessThan
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import IntegerType, LongType, NestedField, StringType

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "region", StringType(), required=False),
    NestedField(3, "amount", IntegerType(), required=False),
)
ARROW_SCHEMA = pa.schema([("id", pa.int64()), ("region", pa.string()), ("amount", pa.int32())])


def batch(ids, region="eu", amount=None) -> pa.Table:
    ids = list(ids)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "region": pa.array([region] * len(ids), pa.string()),
            "amount": pa.array([amount if amount is not None else i * 10 for i in ids], pa.int32()),
        },
        schema=ARROW_SCHEMA,
    )


def sorted_rows(table: pa.Table, *columns: str) -> list[tuple]:
    names = columns or tuple(table.column_names)
    rows = zip(*(table[c].to_pylist() for c in names), strict=True)
    return sorted(rows, key=lambda r: tuple((v is None, v) for v in r))


def test_create_append_and_scan_back_equal(catalog, server, warehouse):
    catalog.create_namespace("sales")
    table = catalog.create_table("sales.orders", SCHEMA, properties={"format-version": "2"})
    assert catalog.list_tables("sales") == [("sales", "orders")]
    written = pa.concat_tables([batch(range(0, 5)), batch(range(5, 8), region="us")])
    table.append(written)

    read = catalog.load_table("sales.orders").scan().to_arrow()
    assert read.schema.names == ["id", "region", "amount"]
    assert read.sort_by("id").equals(written.sort_by("id"))
    # a filtered, projected scan is the same as filtering the written data
    us = catalog.load_table("sales.orders").scan(row_filter=EqualTo("region", "us"), selected_fields=("id",)).to_arrow()
    assert sorted(us["id"].to_pylist()) == [5, 6, 7]
    # a second client sees the same table
    other = RestCatalog("other", uri=server.catalog_url, warehouse=warehouse["name"])
    assert other.load_table("sales.orders").scan().to_arrow().num_rows == 8


def test_schema_evolution_reads_old_and_new_data(catalog):
    catalog.create_namespace("sales")
    table = catalog.create_table("sales.orders", SCHEMA)
    table.append(batch([1, 2]))

    with table.update_schema() as update:
        update.add_column("note", StringType())
        update.rename_column("amount", "total")
        update.update_column("amount", field_type=LongType())  # int -> long, a legal promotion (by the old name)
    table = catalog.load_table("sales.orders")
    assert [f.name for f in table.schema().fields] == ["id", "region", "total", "note"]
    assert table.schema().find_field("total").field_type == LongType()
    assert len(table.schemas()) == 2

    table.append(
        pa.table(
            {"id": pa.array([3], pa.int64()), "region": ["us"], "total": pa.array([30], pa.int64()), "note": ["new"]}
        )
    )
    read = catalog.load_table("sales.orders").scan().to_arrow()
    # the old files are read through the new schema: renamed column by field id, the new one is null
    assert sorted_rows(read) == [(1, "eu", 10, None), (2, "eu", 20, None), (3, "us", 30, "new")]
    assert read.schema.field("total").type == pa.int64()

    # dropping a column hides it from old and new data alike
    with table.update_schema() as update:
        update.delete_column("note")
    read = catalog.load_table("sales.orders").scan().to_arrow()
    assert read.column_names == ["id", "region", "total"] and read.num_rows == 3


def test_partition_evolution(catalog):
    catalog.create_namespace("sales")
    table = catalog.create_table("sales.orders", SCHEMA)
    table.append(batch([1, 2], region="eu"))
    with table.update_spec() as update:
        update.add_field("region", IdentityTransform(), "region")
    table = catalog.load_table("sales.orders")
    assert table.spec().spec_id == 1 and [f.name for f in table.spec().fields] == ["region"]
    table.append(pa.concat_tables([batch([3], region="eu"), batch([4, 5], region="us")]))

    table = catalog.load_table("sales.orders")
    files = list(table.inspect.files().to_pylist())
    assert sorted(f["spec_id"] for f in files) == [0, 1, 1]  # one old unpartitioned file, one per new partition
    assert sorted(table.scan().to_arrow()["id"].to_pylist()) == [1, 2, 3, 4, 5]
    # a partition filter reads the old file (it may hold any region) and prunes the new ones
    eu = table.scan(row_filter=EqualTo("region", "eu"))
    assert sorted(eu.to_arrow()["id"].to_pylist()) == [1, 2, 3]
    assert len(list(eu.plan_files())) == 2

    # and back: without the field the table is unpartitioned again -- the identical spec 0 is
    # reused (as Java does), and data of every spec still reads
    with table.update_spec() as update:
        update.remove_field("region")
    table = catalog.load_table("sales.orders")
    assert table.spec().spec_id == 0 and sorted(table.specs()) == [0, 1]
    table.append(batch([6], region="us"))
    assert sorted(catalog.load_table("sales.orders").scan().to_arrow()["id"].to_pylist()) == [1, 2, 3, 4, 5, 6]


def test_overwrite_and_delete_with_a_filter(catalog):
    catalog.create_namespace("sales")
    table = catalog.create_table("sales.orders", SCHEMA, properties={"format-version": "2"})
    table.append(pa.concat_tables([batch(range(0, 6), region="eu"), batch(range(6, 10), region="us")]))

    table.delete(delete_filter=LessThan("id", 3))
    table = catalog.load_table("sales.orders")
    assert sorted(table.scan().to_arrow()["id"].to_pylist()) == [3, 4, 5, 6, 7, 8, 9]
    assert table.current_snapshot().summary.operation.value in ("delete", "overwrite")

    # replace the US rows (and only those) with new ones
    table.overwrite(batch([100, 101], region="us", amount=7), overwrite_filter=EqualTo("region", "us"))
    read = catalog.load_table("sales.orders").scan().to_arrow()
    assert sorted_rows(read, "id", "region") == [(i, "eu") for i in (3, 4, 5)] + [(100, "us"), (101, "us")]
    assert pc.sum(read.filter(pc.equal(read["region"], "us"))["amount"]).as_py() == 14

    # an unfiltered overwrite replaces everything
    table = catalog.load_table("sales.orders")
    table.overwrite(batch([42]))
    assert catalog.load_table("sales.orders").scan().to_arrow()["id"].to_pylist() == [42]
    # deleting what matches nothing changes no rows (and PyIceberg says so)
    table = catalog.load_table("sales.orders")
    with pytest.warns(UserWarning, match="did not match any records"):
        table.delete(delete_filter=In("id", {7, 8}))
    assert catalog.load_table("sales.orders").scan().to_arrow()["id"].to_pylist() == [42]


def test_time_travel(catalog):
    catalog.create_namespace("sales")
    table = catalog.create_table("sales.orders", SCHEMA, properties={"format-version": "2"})
    table.append(batch([1, 2]))
    first = catalog.load_table("sales.orders").current_snapshot()
    table = catalog.load_table("sales.orders")
    table.append(batch([3]))
    second = catalog.load_table("sales.orders").current_snapshot()
    table = catalog.load_table("sales.orders")
    table.delete(delete_filter=EqualTo("id", 1))
    with table.update_schema() as update:
        update.add_column("note", StringType())

    table = catalog.load_table("sales.orders")
    assert sorted(table.scan().to_arrow()["id"].to_pylist()) == [2, 3]
    assert sorted(table.scan(snapshot_id=first.snapshot_id).to_arrow()["id"].to_pylist()) == [1, 2]
    assert sorted(table.scan(snapshot_id=second.snapshot_id).to_arrow()["id"].to_pylist()) == [1, 2, 3]
    # the history the catalog keeps: three snapshots, parents linked, the log in commit order
    assert [s.snapshot_id for s in table.snapshots()][:2] == [first.snapshot_id, second.snapshot_id]
    assert table.snapshot_by_id(second.snapshot_id).parent_snapshot_id == first.snapshot_id
    assert [e.snapshot_id for e in table.history()][:2] == [first.snapshot_id, second.snapshot_id]
    # a tag pins the old state by name
    table.manage_snapshots().create_tag(first.snapshot_id, "v1").commit()
    tagged = catalog.load_table("sales.orders")
    assert tagged.metadata.refs["v1"].snapshot_id == first.snapshot_id
    assert tagged.scan(snapshot_id=tagged.metadata.refs["v1"].snapshot_id).to_arrow().num_rows == 2


CLIENTS = 8
APPENDS_PER_CLIENT = 3


def test_concurrent_appends_from_eight_clients_lose_nothing(catalog, server, warehouse):
    catalog.create_namespace("sales")
    # PyIceberg retries commits itself (commit.retry.num-retries); switched off so that every 409
    # reaches the client code below, which counts it, reloads and retries
    properties = {"format-version": "2", "commit.retry.num-retries": "0"}
    catalog.create_table("sales.orders", SCHEMA, properties=properties).append(batch([-1]))
    start = threading.Barrier(CLIENTS)
    conflicts = [0] * CLIENTS

    def client(number: int) -> int:
        own = RestCatalog(f"client-{number}", uri=server.catalog_url, warehouse=warehouse["name"])
        table = own.load_table("sales.orders")
        start.wait()
        appended = 0
        for append in range(APPENDS_PER_CLIENT):
            ids = [number * 1000 + append * 100 + i for i in range(number + 1)]  # a different size per client
            for _ in range(100):
                try:
                    table.append(batch(ids, region=f"c{number}"))
                    break
                except CommitFailedException:
                    conflicts[number] += 1
                    table = own.load_table("sales.orders")
            else:
                raise AssertionError(f"client {number} could not append after 100 attempts")
            appended += len(ids)
        return appended

    with ThreadPoolExecutor(CLIENTS) as pool:
        appended = sum(pool.map(client, range(CLIENTS)))

    table = catalog.load_table("sales.orders")
    read = table.scan().to_arrow()
    assert appended == sum((n + 1) * APPENDS_PER_CLIENT for n in range(CLIENTS))
    assert read.num_rows == appended + 1
    assert len(set(read["id"].to_pylist())) == read.num_rows  # nothing twice
    # one snapshot per successful append, in one linear history
    snapshots = table.snapshots()
    assert len(snapshots) == 1 + CLIENTS * APPENDS_PER_CLIENT
    assert int(table.current_snapshot().summary["total-records"]) == appended + 1
    chain, snapshot = [], table.current_snapshot()
    while snapshot is not None:
        chain.append(snapshot.snapshot_id)
        snapshot = table.snapshot_by_id(snapshot.parent_snapshot_id) if snapshot.parent_snapshot_id else None
    assert len(chain) == len(snapshots)
    # the clients really raced: all started from the same snapshot, so all but one first append got a 409
    assert sum(conflicts) >= CLIENTS - 1
    for number in range(CLIENTS):
        mine = read.filter(pc.equal(read["region"], f"c{number}"))
        assert mine.num_rows == (number + 1) * APPENDS_PER_CLIENT
        assert pc.min(mine["id"]).as_py() >= number * 1000 and pc.max(mine["id"]).as_py() < (number + 1) * 1000
    # a filter that spans clients sees all of them
    assert table.scan(row_filter=GreaterThanOrEqual("id", 7000)).to_arrow().num_rows == 8 * APPENDS_PER_CLIENT
