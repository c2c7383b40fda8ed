"""Namespaces and table lifecycle from Spark (Iceberg 1.10 Java REST client) against our catalog."""

from __future__ import annotations

import time
from pathlib import Path
from urllib.parse import urlparse

import pytest

pytestmark = pytest.mark.spark


def test_nested_namespaces_and_properties(spark, spark_catalog, catalog, rows):
    c = spark_catalog
    spark.sql(f"CREATE NAMESPACE {c}.sales COMMENT 'all of sales' WITH DBPROPERTIES ('steward' = 'ana')")
    spark.sql(f"CREATE NAMESPACE {c}.sales.eu")
    spark.sql(f"CREATE NAMESPACE {c}.sales.eu.`north & south`")
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {c}.sales.eu")  # already there: a no-op
    with pytest.raises(Exception, match="already exists"):
        spark.sql(f"CREATE NAMESPACE {c}.sales.eu")

    assert rows(f"SHOW NAMESPACES IN {c}") == [("sales",)]
    assert rows(f"SHOW NAMESPACES IN {c}.sales") == [("sales.eu",)]
    assert rows(f"SHOW NAMESPACES IN {c}.sales.eu") == [("sales.eu.`north & south`",)]
    assert catalog.list_namespaces(("sales", "eu")) == [("sales", "eu", "north & south")]

    # properties: set from Spark, seen by Spark and by PyIceberg
    spark.sql(f"ALTER NAMESPACE {c}.sales SET DBPROPERTIES ('steward' = 'bo', 'team' = 'finance')")
    described = dict(rows(f"DESCRIBE NAMESPACE EXTENDED {c}.sales"))
    assert described["Comment"] == "all of sales"
    assert "(steward,bo)" in described["Properties"] and "(team,finance)" in described["Properties"]
    properties = catalog.load_namespace_properties(("sales",))
    assert properties["steward"] == "bo" and properties["team"] == "finance" and properties["comment"] == "all of sales"
    assert properties["location"].startswith("file://")

    # an empty namespace can be dropped; a non-empty one cannot
    spark.sql(f"CREATE TABLE {c}.sales.eu.orders (id BIGINT) USING iceberg")
    # the 409 reaches Spark as Iceberg's NamespaceNotEmptyException, which Spark reports as its own
    with pytest.raises(Exception, match="SCHEMA_NOT_EMPTY|NonEmptyNamespace|NamespaceNotEmpty") as info:
        spark.sql(f"DROP NAMESPACE {c}.sales.eu")
    assert "AlreadyExists" not in str(info.value)
    spark.sql(f"DROP NAMESPACE {c}.sales.eu.`north & south`")
    assert rows(f"SHOW NAMESPACES IN {c}.sales.eu") == []
    spark.sql(f"DROP NAMESPACE IF EXISTS {c}.sales.eu.`north & south`")
    assert rows(f"SHOW TABLES IN {c}.sales.eu") == [("sales.eu", "orders", False)]


def test_create_insert_select_partitioned(spark, spark_catalog, catalog, rows):
    c = spark_catalog
    spark.sql(f"CREATE NAMESPACE {c}.db")
    spark.sql(
        f"CREATE TABLE {c}.db.events (id BIGINT NOT NULL, kind STRING, at TIMESTAMP) USING iceberg "
        "PARTITIONED BY (kind, days(at)) TBLPROPERTIES ('format-version' = '2', 'purpose' = 'testing')"
    )
    spark.sql(
        f"INSERT INTO {c}.db.events VALUES (1, 'click', TIMESTAMP '2025-01-01 10:00:00'), "
        "(2, 'view', TIMESTAMP '2025-01-02 11:00:00'), (3, 'click', TIMESTAMP '2025-01-02 12:00:00')"
    )
    spark.sql(f"INSERT INTO {c}.db.events VALUES (4, 'view', TIMESTAMP '2025-01-03 00:00:00')")
    assert rows(f"SELECT id, kind FROM {c}.db.events WHERE kind = 'click'") == [(1, "click"), (3, "click")]
    assert rows(f"SELECT count(*) FROM {c}.db.events") == [(4,)]
    assert rows(f"SHOW TABLES IN {c}.db") == [("db", "events", False)]

    table = catalog.load_table(("db", "events"))
    assert table.format_version == 2
    assert table.properties["purpose"] == "testing"
    assert [(f.name, str(f.transform)) for f in table.spec().fields] == [("kind", "identity"), ("at_day", "day")]
    assert len(table.snapshots()) == 2
    assert table.location().startswith("file://")

    # INSERT OVERWRITE replaces only the partitions it writes (dynamic overwrite)
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    try:
        spark.sql(f"INSERT OVERWRITE {c}.db.events VALUES (5, 'view', TIMESTAMP '2025-01-02 18:00:00')")
    finally:
        spark.conf.unset("spark.sql.sources.partitionOverwriteMode")
    assert rows(f"SELECT id FROM {c}.db.events") == [(1,), (3,), (4,), (5,)]

    # table properties set and unset through commits
    spark.sql(f"ALTER TABLE {c}.db.events SET TBLPROPERTIES ('owner.team' = 'web', 'purpose' = 'prod')")
    spark.sql(f"ALTER TABLE {c}.db.events UNSET TBLPROPERTIES ('owner.team')")
    assert dict(rows(f"SHOW TBLPROPERTIES {c}.db.events"))["purpose"] == "prod"
    table = catalog.load_table(("db", "events"))
    assert table.properties["purpose"] == "prod" and "owner.team" not in table.properties
    assert [s.summary.operation.value for s in table.snapshots()] == ["append", "append", "overwrite"]

    # the table (and its namespace) exist once, case-insensitively
    with pytest.raises(Exception, match="already exists"):
        spark.sql(f"CREATE TABLE {c}.db.EVENTS (id BIGINT) USING iceberg")
    spark.sql(f"CREATE TABLE IF NOT EXISTS {c}.db.events (other STRING) USING iceberg")
    assert [f.name for f in catalog.load_table(("db", "events")).schema().fields] == ["id", "kind", "at"]


def test_ctas_create_or_replace_and_replace_table(spark, spark_catalog, catalog, rows):
    c = spark_catalog
    spark.sql(f"CREATE NAMESPACE {c}.db")
    spark.sql(f"CREATE TABLE {c}.db.src (id INT, name STRING) USING iceberg")
    spark.sql(f"INSERT INTO {c}.db.src VALUES (1, 'a'), (2, 'b'), (3, 'c')")

    # CTAS (stage-create + assert-create commit)
    spark.sql(f"CREATE TABLE {c}.db.copy USING iceberg PARTITIONED BY (name) AS SELECT * FROM {c}.db.src WHERE id < 3")
    assert rows(f"SELECT * FROM {c}.db.copy") == [(1, "a"), (2, "b")]
    with pytest.raises(Exception, match="already exists"):
        spark.sql(f"CREATE TABLE {c}.db.copy USING iceberg AS SELECT * FROM {c}.db.src")
    created = catalog.load_table(("db", "copy"))
    assert created.spec().fields[0].name == "name"

    # CREATE OR REPLACE ... AS SELECT keeps the table (uuid, history) and swaps schema, spec and data
    spark.sql(
        f"CREATE OR REPLACE TABLE {c}.db.copy USING iceberg AS "
        f"SELECT id * 10 AS id10, upper(name) AS name, true AS flag FROM {c}.db.src"
    )
    assert rows(f"SELECT * FROM {c}.db.copy") == [(10, "A", True), (20, "B", True), (30, "C", True)]
    replaced = catalog.load_table(("db", "copy"))
    assert replaced.metadata.table_uuid == created.metadata.table_uuid
    assert [f.name for f in replaced.schema().fields] == ["id10", "name", "flag"]
    assert replaced.spec().is_unpartitioned()
    assert len(replaced.snapshots()) == 2  # the CTAS snapshot stays in history

    # CREATE OR REPLACE on a missing table creates it
    spark.sql(f"CREATE OR REPLACE TABLE {c}.db.fresh USING iceberg AS SELECT 7 AS seven")
    assert rows(f"SELECT * FROM {c}.db.fresh") == [(7,)]

    # REPLACE TABLE without AS SELECT: a new empty schema on the same table
    spark.sql(f"REPLACE TABLE {c}.db.copy (key STRING, value DOUBLE) USING iceberg PARTITIONED BY (key)")
    assert rows(f"SELECT * FROM {c}.db.copy") == []
    spark.sql(f"INSERT INTO {c}.db.copy VALUES ('x', 1.5)")
    assert rows(f"SELECT * FROM {c}.db.copy") == [("x", 1.5)]
    again = catalog.load_table(("db", "copy"))
    assert again.metadata.table_uuid == created.metadata.table_uuid
    assert [f.name for f in again.schema().fields] == ["key", "value"]
    assert len(again.schemas()) == 3

    # REPLACE of a table that does not exist is an error, not a create
    with pytest.raises(Exception, match="cannot be found"):
        spark.sql(f"REPLACE TABLE {c}.db.missing (x INT) USING iceberg")


def test_rename_table_across_namespaces(spark, spark_catalog, catalog, rows):
    c = spark_catalog
    spark.sql(f"CREATE NAMESPACE {c}.staging")
    spark.sql(f"CREATE NAMESPACE {c}.prod")
    spark.sql(f"CREATE TABLE {c}.staging.orders (id INT) USING iceberg")
    spark.sql(f"INSERT INTO {c}.staging.orders VALUES (1), (2)")
    location = catalog.load_table(("staging", "orders")).location()

    spark.sql(f"ALTER TABLE {c}.staging.orders RENAME TO prod.orders_v1")
    assert rows(f"SHOW TABLES IN {c}.staging") == []
    assert rows(f"SHOW TABLES IN {c}.prod") == [("prod", "orders_v1", False)]
    assert rows(f"SELECT * FROM {c}.prod.orders_v1") == [(1,), (2,)]
    assert catalog.load_table(("prod", "orders_v1")).location() == location  # a rename moves no files
    spark.sql(f"INSERT INTO {c}.prod.orders_v1 VALUES (3)")
    assert rows(f"SELECT count(*) FROM {c}.prod.orders_v1") == [(3,)]

    spark.sql(f"CREATE TABLE {c}.staging.orders (id INT) USING iceberg")
    with pytest.raises(Exception, match="already exists"):
        spark.sql(f"ALTER TABLE {c}.staging.orders RENAME TO prod.orders_v1")
    with pytest.raises(Exception, match="(?i)namespace does not exist"):
        spark.sql(f"ALTER TABLE {c}.staging.orders RENAME TO nowhere.orders")


def test_drop_table_and_drop_purge(spark, spark_catalog, catalog, warehouse, rows):
    c = spark_catalog
    spark.sql(f"CREATE NAMESPACE {c}.db")
    for name in ("dropped", "purged"):
        spark.sql(f"CREATE TABLE {c}.db.{name} (id INT, part STRING) USING iceberg PARTITIONED BY (part)")
        spark.sql(f"INSERT INTO {c}.db.{name} VALUES (1, 'a'), (2, 'b')")
        spark.sql(f"INSERT INTO {c}.db.{name} VALUES (3, 'a')")
    locations = {
        name: Path(urlparse(catalog.load_table(("db", name)).location()).path) for name in ("dropped", "purged")
    }
    for location in locations.values():
        assert location.is_relative_to(warehouse["root"])
        assert list(location.rglob("*.parquet")) and list(location.rglob("*.metadata.json"))

    spark.sql(f"DROP TABLE {c}.db.dropped")
    spark.sql(f"DROP TABLE {c}.db.purged PURGE")
    assert rows(f"SHOW TABLES IN {c}.db") == []
    for name in ("dropped", "purged"):
        with pytest.raises(Exception, match="cannot be found"):
            spark.sql(f"SELECT * FROM {c}.db.{name}")
    spark.sql(f"DROP TABLE IF EXISTS {c}.db.purged")

    # PURGE removes every file of the table. A plain DROP does too: like Lakekeeper, the catalog
    # treats its tables as managed (Spark sends no purgeRequested, which defaults to true).
    for location in locations.values():
        _wait_until(lambda root=location: not any(p.is_file() for p in root.rglob("*")), what=f"{location} emptied")

    # the name is free again
    spark.sql(f"CREATE TABLE {c}.db.purged (id INT) USING iceberg")
    assert rows(f"SELECT * FROM {c}.db.purged") == []


def _wait_until(condition, *, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def test_special_names_and_paged_listings(spark, spark_catalog, server, warehouse, catalog, rows):
    from lakekeeper_host.engines.spark import add_catalog

    c = spark_catalog
    namespace, table = "`team a/b & c`", "`sales 2025 % = , ü`"
    spark.sql(f"CREATE NAMESPACE {c}.{namespace}")
    # like Lakekeeper: '+' is refused because clients encode a space as '+'
    with pytest.raises(Exception, match="BadRequestException.*cannot contain '\\+'"):
        spark.sql(f"CREATE TABLE {c}.{namespace}.`a+b` (id INT) USING iceberg")
    spark.sql(f"CREATE TABLE {c}.{namespace}.{table} (id INT) USING iceberg")
    spark.sql(f"INSERT INTO {c}.{namespace}.{table} VALUES (1)")
    assert rows(f"SELECT * FROM {c}.{namespace}.{table}") == [(1,)]
    assert catalog.list_tables(("team a/b & c",)) == [("team a/b & c", "sales 2025 % = , ü")]
    spark.sql(f"ALTER TABLE {c}.{namespace}.{table} RENAME TO {namespace}.`ünïcödé ✓`")
    assert rows(f"SELECT * FROM {c}.{namespace}.`ünïcödé ✓`") == [(1,)]

    # a client asking for pages of two walks every page of tables and namespaces
    catalog.create_namespace(("paged",))
    schema = catalog.load_table(("team a/b & c", "ünïcödé ✓")).schema()
    for i in range(5):
        catalog.create_namespace(("paged", f"child_{i}"))
        catalog.create_table(("team a/b & c", f"t{i}"), schema=schema)
    paged = add_catalog(
        spark, server.catalog_url, warehouse["name"], catalog_name=f"{c}_paged", extra={
            f"spark.sql.catalog.{c}_paged.rest-page-size": "2"
        }
    )  # fmt: skip
    assert [name for _, name, _ in rows(f"SHOW TABLES IN {paged}.{namespace}")] == [
        "t0", "t1", "t2", "t3", "t4", "ünïcödé ✓",
    ]  # fmt: skip
    assert rows(f"SHOW NAMESPACES IN {paged}.paged") == [(f"paged.child_{i}",) for i in range(5)]


def test_table_locations_and_protected_properties(spark, spark_catalog, warehouse, catalog, rows):
    c = spark_catalog
    root = Path(warehouse["root"])
    spark.sql(f"CREATE NAMESPACE {c}.db")

    # a client-chosen location inside the warehouse is used as given
    spark.sql(f"CREATE TABLE {c}.db.placed (id INT) USING iceberg LOCATION 'file://{root}/custom/placed'")
    spark.sql(f"INSERT INTO {c}.db.placed VALUES (1)")
    assert urlparse(catalog.load_table(("db", "placed")).location()).path == f"{root}/custom/placed"
    assert list((root / "custom" / "placed" / "data").rglob("*.parquet"))

    # outside the warehouse, or overlapping another table's location, is refused
    with pytest.raises(Exception, match="BadRequestException.*must be inside the warehouse location"):
        spark.sql(f"CREATE TABLE {c}.db.outside (id INT) USING iceberg LOCATION '{root.parent}/elsewhere'")
    with pytest.raises(Exception, match="already exists"):  # 409 LocationAlreadyTaken, as Lakekeeper
        spark.sql(f"CREATE TABLE {c}.db.nested (id INT) USING iceberg LOCATION 'file://{root}/custom/placed/x'")
    with pytest.raises(Exception, match="BadRequestException.*must be inside the warehouse location"):
        spark.sql(f"ALTER TABLE {c}.db.placed SET LOCATION '{root.parent}/elsewhere'")

    # moving a table inside the warehouse is a commit; new files land at the new location
    spark.sql(f"ALTER TABLE {c}.db.placed SET LOCATION 'file://{root}/moved'")
    spark.sql(f"INSERT INTO {c}.db.placed VALUES (2)")
    assert rows(f"SELECT * FROM {c}.db.placed") == [(1,), (2,)]
    assert list((root / "moved" / "data").rglob("*.parquet"))
    assert catalog.load_table(("db", "placed")).metadata_location.startswith(f"file://{root}/moved/metadata/")

    # the catalog owns where files go: the write paths cannot be redirected
    for key in ("write.data.path", "write.metadata.path"):
        with pytest.raises(Exception, match=f"unsupported property: '{key}'"):
            spark.sql(f"ALTER TABLE {c}.db.placed SET TBLPROPERTIES ('{key}' = 'file://{root}/redirect')")
    # metadata housekeeping properties are allowed and honoured
    spark.sql(
        f"ALTER TABLE {c}.db.placed SET TBLPROPERTIES ('write.metadata.previous-versions-max' = '1', "
        "'write.metadata.delete-after-commit.enabled' = 'true', 'write.metadata.compression-codec' = 'gzip')"
    )
    spark.sql(f"INSERT INTO {c}.db.placed VALUES (3)")
    table = catalog.load_table(("db", "placed"))
    assert table.metadata_location.endswith(".gz.metadata.json")
    assert len(table.metadata.metadata_log) == 1
    assert sorted(p.name for p in (root / "moved" / "metadata").glob("*.metadata.json")) == sorted(
        urlparse(location).path.rsplit("/", 1)[1]
        for location in (table.metadata_location, table.metadata.metadata_log[0].metadata_file)
    )
    assert rows(f"SELECT * FROM {c}.db.placed") == [(1,), (2,), (3,)]
