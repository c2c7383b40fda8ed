"""Iceberg views from Spark 3.5 (Iceberg 1.10 runtime, the Java REST client) against our catalog."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.spark


def names(rows) -> set[str]:
    return {r["viewName"] for r in rows}


def test_spark_view_lifecycle(spark, spark_catalog, views):
    c = spark_catalog
    spark.sql(f"CREATE NAMESPACE {c}.db")
    spark.sql(f"CREATE TABLE {c}.db.sales (id BIGINT, region STRING, amount DOUBLE) USING iceberg")
    spark.sql(f"INSERT INTO {c}.db.sales VALUES (1, 'eu', 10.0), (2, 'us', 20.0), (3, 'eu', 5.5)")

    # create and select
    spark.sql(f"CREATE VIEW {c}.db.eu_sales AS SELECT id, amount FROM {c}.db.sales WHERE region = 'eu'")
    assert sorted(tuple(r) for r in spark.sql(f"SELECT * FROM {c}.db.eu_sales").collect()) == [(1, 10.0), (3, 5.5)]
    loaded = views.load((("db",), "eu_sales"))["metadata"]
    current = next(v for v in loaded["versions"] if v["version-id"] == loaded["current-version-id"])
    (representation,) = current["representations"]
    assert representation["dialect"] == "spark" and "region = 'eu'" in representation["sql"]

    # CREATE OR REPLACE changes the query (a new version, same view)
    spark.sql(f"CREATE OR REPLACE VIEW {c}.db.eu_sales AS SELECT id, amount * 2 AS doubled FROM {c}.db.sales "
              "WHERE region = 'eu'")
    assert sorted(tuple(r) for r in spark.sql(f"SELECT * FROM {c}.db.eu_sales").collect()) == [(1, 20.0), (3, 11.0)]
    replaced = views.load((("db",), "eu_sales"))["metadata"]
    assert replaced["view-uuid"] == loaded["view-uuid"] and replaced["current-version-id"] == 2
    assert [e["version-id"] for e in replaced["version-log"]] == [1, 2]

    # CREATE VIEW IF NOT EXISTS twice: the second is a no-op
    spark.sql(f"CREATE VIEW IF NOT EXISTS {c}.db.us_sales AS SELECT * FROM {c}.db.sales WHERE region = 'us'")
    spark.sql(f"CREATE VIEW IF NOT EXISTS {c}.db.us_sales AS SELECT 42 AS nothing")
    assert [tuple(r) for r in spark.sql(f"SELECT id FROM {c}.db.us_sales").collect()] == [(2,)]

    assert names(spark.sql(f"SHOW VIEWS IN {c}.db").collect()) == {"eu_sales", "us_sales"}
    assert {r["tableName"] for r in spark.sql(f"SHOW TABLES IN {c}.db").collect()} == {"sales"}

    # rename, then drop
    spark.sql(f"ALTER VIEW {c}.db.eu_sales RENAME TO {c}.db.europe")
    assert names(spark.sql(f"SHOW VIEWS IN {c}.db").collect()) == {"europe", "us_sales"}
    assert sorted(tuple(r) for r in spark.sql(f"SELECT * FROM {c}.db.europe").collect()) == [(1, 20.0), (3, 11.0)]
    spark.sql(f"ALTER VIEW {c}.db.europe SET TBLPROPERTIES ('team' = 'finance')")
    assert views.load((("db",), "europe"))["metadata"]["properties"]["team"] == "finance"

    spark.sql(f"DROP VIEW {c}.db.europe")
    spark.sql(f"DROP VIEW IF EXISTS {c}.db.europe")
    assert names(spark.sql(f"SHOW VIEWS IN {c}.db").collect()) == {"us_sales"}
    assert not views.exists((("db",), "europe"))

    # a view name is not a table name
    with pytest.raises(Exception, match="already exists"):
        spark.sql(f"CREATE TABLE {c}.db.us_sales (x INT) USING iceberg")
