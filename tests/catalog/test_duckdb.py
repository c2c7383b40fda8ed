"""DuckDB's iceberg extension (loaded offline from the PyPI wheels, ``lakekeeper_host/engines/duckdb_util.py``)
against our catalog (issue 3): ATTACH, DDL, INSERT/UPDATE/DELETE/MERGE, CTAS and multi-table
transactions, each checked back through PyIceberg; and DuckDB reading what PyIceberg wrote.

With DuckDB 1.5.5 and its iceberg extension everything the issue asks for works. The one thing
that does not is views: the extension has no view support, ``CREATE VIEW`` in an attached Iceberg
catalog fails with ``Not implemented Error: Create View`` (:func:`test_duckdb_cannot_create_views`).
Both backends (the ``server`` fixture is parametrised).
"""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pytest
from pyiceberg.expressions import EqualTo
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType

from lakekeeper_host.engines.duckdb_util import attach_catalog, connect_duckdb

pytestmark = pytest.mark.duckdb


@pytest.fixture
def duck(server, warehouse):
    """A DuckDB connection with the fresh warehouse attached as ``lk``."""
    con = connect_duckdb()
    attach_catalog(con, "lk", server.catalog_url, warehouse["name"])
    yield con
    con.close()


def rows_of(con, sql: str) -> list[tuple]:
    return con.execute(sql).fetchall()


def pyiceberg_rows(catalog, name: str, *columns: str) -> list[tuple]:
    table = catalog.load_table(name).scan().to_arrow()
    return sorted(zip(*(table[c].to_pylist() for c in columns or table.column_names), strict=True))


def test_duckdb_creates_inserts_updates_deletes_and_reads_back(duck, catalog, server, warehouse):
    duck.execute("CREATE SCHEMA lk.shop")
    duck.execute("CREATE TABLE lk.shop.items (id INTEGER, name VARCHAR, price DOUBLE)")
    inserted = rows_of(duck, "INSERT INTO lk.shop.items VALUES (1, 'apple', 1.5), (2, 'pear', 2.0), (3, 'fig', 4.25)")
    assert inserted == [(3,)]
    assert rows_of(duck, "SELECT * FROM lk.shop.items ORDER BY id") == [
        (1, "apple", 1.5), (2, "pear", 2.0), (3, "fig", 4.25)
    ]

    assert rows_of(duck, "UPDATE lk.shop.items SET price = price * 2 WHERE id >= 2") == [(2,)]
    assert rows_of(duck, "DELETE FROM lk.shop.items WHERE name = 'apple'") == [(1,)]
    assert rows_of(duck, "SELECT * FROM lk.shop.items ORDER BY id") == [(2, "pear", 4.0), (3, "fig", 8.5)]

    # the catalog holds what DuckDB did: the namespace, the table, one snapshot per statement,
    # and PyIceberg reads the same rows (DuckDB's updates and deletes are merge-on-read delete files)
    assert catalog.list_namespaces() == [("shop",)]
    assert catalog.list_tables("shop") == [("shop", "items")]
    table = catalog.load_table("shop.items")
    assert table.metadata.format_version >= 2
    assert len(table.snapshots()) == 3
    assert pyiceberg_rows(catalog, "shop.items") == [(2, "pear", 4.0), (3, "fig", 8.5)]
    assert table.inspect.delete_files().num_rows > 0, "DuckDB's UPDATE/DELETE wrote no delete files"

    # a fresh DuckDB session (no cached state) sees the same
    other = connect_duckdb()
    try:
        attach_catalog(other, "again", server.catalog_url, warehouse["name"])
        assert rows_of(other, "SELECT id, price FROM again.shop.items ORDER BY id") == [(2, 4.0), (3, 8.5)]
    finally:
        other.close()

    duck.execute("DROP TABLE lk.shop.items")
    duck.execute("DROP SCHEMA lk.shop")
    assert catalog.list_namespaces() == []


def test_duckdb_merge_alter_ctas_and_transactions(duck, catalog):
    duck.execute("CREATE SCHEMA lk.shop")
    duck.execute("CREATE TABLE lk.shop.stock (id INTEGER, qty INTEGER)")
    duck.execute("INSERT INTO lk.shop.stock VALUES (1, 10), (2, 20)")
    merged = duck.execute(
        "MERGE INTO lk.shop.stock AS s USING (VALUES (2, 5), (3, 7)) AS c(id, qty) ON s.id = c.id "
        "WHEN MATCHED THEN UPDATE SET qty = s.qty + c.qty WHEN NOT MATCHED THEN INSERT VALUES (c.id, c.qty)"
    ).fetchall()
    assert merged == [(2,)]
    assert pyiceberg_rows(catalog, "shop.stock") == [(1, 10), (2, 25), (3, 7)]

    # schema changes are table commits; PyIceberg sees the new schema and the old data under it
    duck.execute("ALTER TABLE lk.shop.stock ADD COLUMN note VARCHAR")
    duck.execute("ALTER TABLE lk.shop.stock RENAME COLUMN qty TO quantity")
    assert [f.name for f in catalog.load_table("shop.stock").schema().fields] == ["id", "quantity", "note"]
    assert pyiceberg_rows(catalog, "shop.stock", "id", "quantity", "note") == [
        (1, 10, None), (2, 25, None), (3, 7, None)
    ]

    # CTAS: DuckDB stage-creates the table and writes its first manifest itself (this needed the
    # file storage to create the staged table's metadata directory)
    assert rows_of(duck, "CREATE TABLE lk.shop.big AS SELECT i AS id FROM range(5) r(i)") == [(5,)]
    assert pyiceberg_rows(catalog, "shop.big") == [(i,) for i in range(5)]

    # one DuckDB transaction over two tables is one POST /transactions/commit: all or nothing
    duck.execute("BEGIN")
    duck.execute("INSERT INTO lk.shop.stock VALUES (4, 1, 'new')")
    duck.execute("CREATE TABLE lk.shop.log (msg VARCHAR)")
    duck.execute("INSERT INTO lk.shop.log VALUES ('restocked')")
    assert ("shop", "log") not in catalog.list_tables("shop")  # nothing is visible before COMMIT
    duck.execute("COMMIT")
    assert pyiceberg_rows(catalog, "shop.log") == [("restocked",)]
    assert (4, 1, "new") in pyiceberg_rows(catalog, "shop.stock", "id", "quantity", "note")

    assert rows_of(duck, "TRUNCATE lk.shop.big") == [(5,)]
    assert catalog.load_table("shop.big").scan().to_arrow().num_rows == 0


def test_duckdb_reads_a_table_written_by_pyiceberg(duck, catalog):
    catalog.create_namespace("py")
    schema = Schema(
        NestedField(1, "id", LongType(), required=False), NestedField(2, "region", StringType(), required=False)
    )
    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "region"))
    table = catalog.create_table("py.events", schema, partition_spec=spec, properties={"format-version": "2"})
    table.append(pa.table({"id": pa.array([1, 2, 3], pa.int64()), "region": ["eu", "us", "eu"]}))
    first = table.current_snapshot().snapshot_id
    with table.update_schema() as update:
        update.add_column("note", StringType())
    table = catalog.load_table("py.events")
    table.append(pa.table({"id": pa.array([4], pa.int64()), "region": ["us"], "note": ["late"]}))
    table = catalog.load_table("py.events")
    table.delete(delete_filter=EqualTo("id", 2))

    assert rows_of(duck, "SELECT id, region, note FROM lk.py.events ORDER BY id") == [
        (1, "eu", None), (3, "eu", None), (4, "us", "late")
    ]
    assert rows_of(duck, "SELECT count(*) FROM lk.py.events WHERE region = 'eu'") == [(2,)]
    # time travel to PyIceberg's first snapshot: the old schema and the deleted row
    assert rows_of(duck, f"SELECT * FROM lk.py.events AT (VERSION => {first}) ORDER BY id") == [
        (1, "eu"), (2, "us"), (3, "eu")
    ]
    snapshots = rows_of(duck, "SELECT snapshot_id FROM iceberg_snapshots(lk.py.events)")
    assert sorted(s for (s,) in snapshots) == sorted(s.snapshot_id for s in catalog.load_table("py.events").snapshots())

    # and DuckDB can change PyIceberg's table, which PyIceberg then reads
    duck.execute("UPDATE lk.py.events SET note = 'seen' WHERE region = 'eu'")
    assert pyiceberg_rows(catalog, "py.events", "id", "note") == [(1, "seen"), (3, "seen"), (4, "late")]


def test_duckdb_cannot_create_views(duck):
    duck.execute("CREATE SCHEMA lk.v")
    # DuckDB's iceberg extension has no view support (no /views route in its REST client)
    with pytest.raises(duckdb.NotImplementedException, match="Not implemented Error: Create View"):
        duck.execute("CREATE VIEW lk.v.answer AS SELECT 42 AS x")
