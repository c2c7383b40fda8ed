"""Spark and PyIceberg on the same tables through our catalog (same warehouse, both directions)."""

from __future__ import annotations

import datetime
from decimal import Decimal

import pyarrow as pa
import pytest
from pyiceberg.types import StringType

pytestmark = pytest.mark.spark

UTC = datetime.UTC


def test_spark_writes_pyiceberg_reads(spark, spark_catalog, catalog):
    c = spark_catalog
    spark.sql(f"CREATE NAMESPACE {c}.shop")
    spark.sql(
        f"CREATE TABLE {c}.shop.orders (id BIGINT, customer STRING, price DECIMAL(10, 2), paid BOOLEAN, day DATE, "
        "at TIMESTAMP, tags ARRAY<STRING>, attrs MAP<STRING, INT>, point STRUCT<x: DOUBLE, y: DOUBLE>) "
        "USING iceberg PARTITIONED BY (day)"
    )
    spark.sql(
        f"INSERT INTO {c}.shop.orders VALUES "
        "(1, 'ana', 12.50, true, DATE '2025-05-01', TIMESTAMP '2025-05-01 10:00:00 UTC', array('new', 'vip'), "
        "map('n', 1), named_struct('x', 1.0D, 'y', -2.5D)), "
        "(2, 'bo', 0.99, false, DATE '2025-05-02', TIMESTAMP '2025-05-02 23:59:59.123456 UTC', array(), map(), "
        "named_struct('x', 0.0D, 'y', 0.0D)), "
        "(3, NULL, NULL, NULL, DATE '2025-05-02', NULL, NULL, NULL, NULL)"
    )
    spark_rows = [
        (r.id, r.customer, r.price, r.paid, r.day, r.at_micros, r.tags, r.attrs, r.point and tuple(r.point))
        for r in spark.sql(
            f"SELECT *, unix_micros(at) AS at_micros FROM {c}.shop.orders ORDER BY id"
        ).collect()
    ]

    table = catalog.load_table(("shop", "orders"))
    arrow = table.scan().to_arrow().sort_by("id")
    pyiceberg_rows = [
        (
            r["id"], r["customer"], r["price"], r["paid"], r["day"],
            None if r["at"] is None else _micros(r["at"]),
            r["tags"], None if r["attrs"] is None else dict(r["attrs"]),
            None if r["point"] is None else (r["point"]["x"], r["point"]["y"]),
        )
        for r in arrow.to_pylist()
    ]  # fmt: skip
    assert pyiceberg_rows == spark_rows
    assert pyiceberg_rows[0] == (
        1, "ana", Decimal("12.50"), True, datetime.date(2025, 5, 1),
        _micros(datetime.datetime(2025, 5, 1, 10, tzinfo=UTC)), ["new", "vip"], {"n": 1}, (1.0, -2.5),
    )  # fmt: skip
    assert pyiceberg_rows[1][5] == _micros(datetime.datetime(2025, 5, 2, 23, 59, 59, 123456, tzinfo=UTC))
    # partition pruning in PyIceberg works on the spec Spark wrote
    assert table.scan(row_filter="day = '2025-05-02'").to_arrow().num_rows == 2


def test_pyiceberg_writes_spark_reads(spark, spark_catalog, catalog, rows):
    c = spark_catalog
    catalog.create_namespace(("lake",))
    data = pa.table(
        {
            "id": pa.array([1, 2, 3], pa.int64()),
            "name": pa.array(["x", None, "z"], pa.string()),
            "score": pa.array([0.5, 1.5, None], pa.float64()),
            "day": pa.array([datetime.date(2025, 1, 1), datetime.date(2025, 1, 2), None], pa.date32()),
            "at": pa.array(
                [datetime.datetime(2025, 1, 1, 12, tzinfo=UTC), None, datetime.datetime(2025, 1, 3, tzinfo=UTC)],
                pa.timestamp("us", tz="UTC"),
            ),
            "labels": pa.array([["a"], [], None], pa.list_(pa.string())),
        }
    )
    table = catalog.create_table(("lake", "readings"), schema=data.schema)
    table.append(data)

    t = f"{c}.lake.readings"
    assert [
        (r.id, r.name, r.score, r.day, r.at_micros, r.labels)
        for r in spark.sql(f"SELECT *, unix_micros(at) AS at_micros FROM {t} ORDER BY id").collect()
    ] == [
        (1, "x", 0.5, datetime.date(2025, 1, 1), _micros(datetime.datetime(2025, 1, 1, 12, tzinfo=UTC)), ["a"]),
        (2, None, 1.5, datetime.date(2025, 1, 2), None, []),
        (3, "z", None, None, _micros(datetime.datetime(2025, 1, 3, tzinfo=UTC)), None),
    ]

    # PyIceberg evolves the schema and appends again; Spark sees both at once
    with table.update_schema() as update:
        update.add_column("unit", StringType())
    table = catalog.load_table(("lake", "readings"))
    table.append(
        pa.table({
            "id": pa.array([4], pa.int64()), "name": ["w"], "score": [2.0],
            "day": pa.array([datetime.date(2025, 1, 4)], pa.date32()),
            "at": pa.array([None], pa.timestamp("us", tz="UTC")),
            "labels": pa.array([["b", "c"]], pa.list_(pa.string())),
            "unit": ["kg"],
        })
    )  # fmt: skip
    spark.sql(f"REFRESH TABLE {t}")  # Spark's catalog caches loaded tables (cache-enabled, 30 s)
    assert rows(f"SELECT id, unit FROM {t} WHERE id >= 3") == [(3, None), (4, "kg")]

    # Spark commits on top of PyIceberg's snapshots; PyIceberg reads Spark's row back
    spark.sql(f"INSERT INTO {t} VALUES (5, 'spark', NULL, NULL, NULL, NULL, 'm')")
    spark.sql(f"UPDATE {t} SET score = 9.0 WHERE id = 1")
    final = catalog.load_table(("lake", "readings"))
    assert len(final.snapshots()) == 4
    assert sorted((r["id"], r["score"], r["unit"]) for r in final.scan(selected_fields=("id", "score", "unit"))
                  .to_arrow().to_pylist()) == [
        (1, 9.0, None), (2, 1.5, None), (3, None, None), (4, 2.0, "kg"), (5, None, "m"),
    ]  # fmt: skip


def _micros(moment: datetime.datetime) -> int:
    return (moment - datetime.datetime(1970, 1, 1, tzinfo=UTC)) // datetime.timedelta(microseconds=1)


def test_spark_reads_and_writes_a_table_whose_metadata_has_encryption_keys(spark, spark_catalog, server, warehouse):
    """The Java parser reads the ``encryption-keys`` our commits write (format v3); the keys are
    metadata only here (no table encryption configured), so Spark reads and writes the table."""
    import httpx

    c = spark_catalog
    spark.sql(f"CREATE NAMESPACE {c}.vault")
    spark.sql(f"CREATE TABLE {c}.vault.notes (id BIGINT) USING iceberg TBLPROPERTIES ('format-version' = '3')")
    key = {"key-id": "k1", "encrypted-key-metadata": "AAECAw==", "encrypted-by-id": "kms-master"}
    url = f"{server.url}/catalog/v1/{warehouse['id']}/namespaces/vault/tables/notes"
    added = httpx.post(url, json={"updates": [{"action": "add-encryption-key", "encryption-key": key}]}, timeout=30)
    assert added.status_code == 200, added.text
    spark.sql(f"REFRESH TABLE {c}.vault.notes")
    spark.sql(f"INSERT INTO {c}.vault.notes VALUES (1), (2)")
    assert spark.sql(f"SELECT count(*) FROM {c}.vault.notes").collect()[0][0] == 2
    # Spark's own commit (the Java client sends the whole new metadata's changes) kept the key
    assert httpx.get(url, timeout=30).json()["metadata"]["encryption-keys"] == [key]
