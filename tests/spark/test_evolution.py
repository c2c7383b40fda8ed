"""Schema and partition evolution from Spark's ALTER TABLE, committed through our catalog."""

from __future__ import annotations

import datetime
from decimal import Decimal

import pytest

pytestmark = pytest.mark.spark


def test_schema_evolution(spark, spark_catalog, catalog, rows):
    c = spark_catalog
    t = f"{c}.db.people"
    spark.sql(f"CREATE NAMESPACE {c}.db")
    spark.sql(
        f"CREATE TABLE {t} (id INT NOT NULL, name STRING, score FLOAT, amount DECIMAL(9, 2), "
        "address STRUCT<street: STRING, city: STRING>, legacy STRING) USING iceberg"
    )
    spark.sql(f"INSERT INTO {t} VALUES (1, 'ana', 1.5, 10.25, named_struct('street', 'Main 1', 'city', 'Oslo'), 'x')")
    ids_before = {f.name: f.field_id for f in catalog.load_table(("db", "people")).schema().fields}

    spark.sql(f"ALTER TABLE {t} ADD COLUMN email STRING COMMENT 'contact' AFTER name")
    spark.sql(f"ALTER TABLE {t} ADD COLUMN address.zip STRING")  # a field inside the nested struct
    spark.sql(f"ALTER TABLE {t} RENAME COLUMN name TO full_name")
    spark.sql(f"ALTER TABLE {t} RENAME COLUMN address.city TO town")
    spark.sql(f"ALTER TABLE {t} ALTER COLUMN id TYPE BIGINT")  # widen int -> long
    spark.sql(f"ALTER TABLE {t} ALTER COLUMN score TYPE DOUBLE")  # widen float -> double
    spark.sql(f"ALTER TABLE {t} ALTER COLUMN amount TYPE DECIMAL(18, 2)")  # widen precision
    spark.sql(f"ALTER TABLE {t} DROP COLUMN legacy")
    spark.sql(f"ALTER TABLE {t} ALTER COLUMN id DROP NOT NULL")

    spark.sql(
        f"INSERT INTO {t} VALUES (3000000000, 'bo', 'bo@example.com', 2.25, 99999999.99, "
        "named_struct('street', 'Side 2', 'town', 'Rome', 'zip', '00100'))"
    )
    assert [tuple(r) for r in spark.sql(f"SELECT * FROM {t} ORDER BY id").collect()] == [
        (1, "ana", None, 1.5, Decimal("10.25"), ("Main 1", "Oslo", None)),
        (3000000000, "bo", "bo@example.com", 2.25, Decimal("99999999.99"), ("Side 2", "Rome", "00100")),
    ]
    assert rows(f"SELECT address.town FROM {t} WHERE address.zip IS NULL") == [("Oslo",)]
    with pytest.raises(Exception, match="(?i)legacy"):
        spark.sql(f"SELECT legacy FROM {t}").collect()

    # the catalog holds the evolved schema: field ids kept, new ids for new fields, types widened
    schema = catalog.load_table(("db", "people")).schema()
    fields = {f.name: f for f in schema.fields}
    assert list(fields) == ["id", "full_name", "email", "score", "amount", "address"]
    assert fields["id"].field_id == ids_before["id"] and str(fields["id"].field_type) == "long"
    assert not fields["id"].required
    assert fields["full_name"].field_id == ids_before["name"]
    assert str(fields["score"].field_type) == "double" and str(fields["amount"].field_type) == "decimal(18, 2)"
    assert fields["email"].doc == "contact" and fields["email"].field_id > max(ids_before.values())
    assert [f.name for f in fields["address"].field_type.fields] == ["street", "town", "zip"]
    assert len(catalog.load_table(("db", "people")).schemas()) > 1


def test_partition_evolution(spark, spark_catalog, catalog, rows):
    c = spark_catalog
    t = f"{c}.db.orders"
    spark.sql(f"CREATE NAMESPACE {c}.db")
    spark.sql(
        f"CREATE TABLE {t} (id BIGINT, region STRING, `order date` DATE, at TIMESTAMP) USING iceberg "
        "PARTITIONED BY (region)"
    )
    spark.sql(f"INSERT INTO {t} VALUES (1, 'eu', DATE '2025-03-01', TIMESTAMP '2025-03-01 08:00:00')")

    spark.sql(f"ALTER TABLE {t} ADD PARTITION FIELD bucket(4, id) AS id_bucket")
    spark.sql(f"ALTER TABLE {t} ADD PARTITION FIELD days(at)")
    spark.sql(f"INSERT INTO {t} VALUES (2, 'us', DATE '2025-03-02', TIMESTAMP '2025-03-02 09:00:00')")

    spark.sql(f"ALTER TABLE {t} DROP PARTITION FIELD region")
    spark.sql(f"ALTER TABLE {t} DROP PARTITION FIELD days(at)")
    spark.sql(f"ALTER TABLE {t} ADD PARTITION FIELD `order date`")  # identity on a column with a space
    spark.sql(f"INSERT INTO {t} VALUES (3, 'eu', DATE '2025-03-03', TIMESTAMP '2025-03-03 10:00:00')")

    assert rows(f"SELECT id, region, `order date` FROM {t}") == [
        (1, "eu", datetime.date(2025, 3, 1)),
        (2, "us", datetime.date(2025, 3, 2)),
        (3, "eu", datetime.date(2025, 3, 3)),
    ]
    assert rows(f"SELECT id FROM {t} WHERE `order date` = DATE '2025-03-03'") == [(3,)]
    assert rows(f"SELECT id FROM {t} WHERE region = 'eu'") == [(1,), (3,)]

    # one data file per spec, each partitioned by the spec it was written with
    # (every ALTER adds a spec: 0 initial, 1 +bucket, 2 +days, 3 -region, 4 -days, 5 +order date)
    files = spark.sql(f"SELECT spec_id, partition FROM {t}.files ORDER BY spec_id").collect()
    assert [f.spec_id for f in files] == [0, 2, 5]
    assert files[0].partition.asDict() == {"region": "eu", "id_bucket": None, "at_day": None, "order date": None}
    assert files[1].partition["region"] == "us" and files[1].partition["at_day"] == datetime.date(2025, 3, 2)
    assert files[2].partition["order date"] == datetime.date(2025, 3, 3) and files[2].partition["region"] is None

    table = catalog.load_table(("db", "orders"))
    assert sorted(table.specs()) == [0, 1, 2, 3, 4, 5]
    assert table.spec().spec_id == 5
    current = [(f.name, str(f.transform)) for f in table.spec().fields]
    assert current == [("id_bucket", "bucket[4]"), ("order date", "identity")]
    source_names = {table.schema().find_field(f.source_id).name for f in table.spec().fields}
    assert source_names == {"id", "order date"}
    # field ids of a spec are never reused: the new identity field got a fresh id
    assert table.spec().fields[-1].field_id == max(f.field_id for s in table.specs().values() for f in s.fields)

    # REPLACE PARTITION FIELD and a write order go through the same kind of commit
    spark.sql(f"ALTER TABLE {t} REPLACE PARTITION FIELD id_bucket WITH bucket(8, id) AS id_b8")
    spark.sql(f"ALTER TABLE {t} WRITE ORDERED BY id DESC")
    spark.sql(f"INSERT INTO {t} VALUES (4, 'us', DATE '2025-03-04', TIMESTAMP '2025-03-04 11:00:00')")
    assert rows(f"SELECT count(*) FROM {t}") == [(4,)]
    table = catalog.load_table(("db", "orders"))
    assert [(f.name, str(f.transform)) for f in table.spec().fields] == [
        ("order date", "identity"), ("id_b8", "bucket[8]"),
    ]
    (order_field,) = table.sort_order().fields
    assert order_field.direction.name == "DESC" and order_field.source_id == table.schema().find_field("id").field_id


def test_identifier_fields_and_format_upgrade(spark, spark_catalog, catalog, rows):
    c = spark_catalog
    t = f"{c}.db.items"
    spark.sql(f"CREATE NAMESPACE {c}.db")
    spark.sql(f"CREATE TABLE {t} (id INT NOT NULL, label STRING) USING iceberg TBLPROPERTIES ('format-version' = '2')")
    spark.sql(f"ALTER TABLE {t} SET IDENTIFIER FIELDS id")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'one'), (2, 'two')")
    table = catalog.load_table(("db", "items"))
    assert table.schema().identifier_field_names() == {"id"}

    # upgrade the format in place; the next commits carry row lineage
    spark.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ('format-version' = '3')")
    spark.sql(f"INSERT INTO {t} VALUES (3, 'three')")
    spark.sql(
        f"MERGE INTO {t} AS target USING (SELECT 2 AS id, 'TWO' AS label) AS source ON target.id = source.id "
        "WHEN MATCHED THEN UPDATE SET label = source.label"
    )
    assert rows(f"SELECT * FROM {t}") == [(1, "one"), (2, "TWO"), (3, "three")]
    table = catalog.load_table(("db", "items"))
    assert table.format_version == 3
    assert table.schema().identifier_field_names() == {"id"}
    upgraded = [s for s in table.snapshots() if s.first_row_id is not None]
    assert len(upgraded) == 2 and upgraded[0].first_row_id == 0  # lineage starts with the upgrade
    assert table.metadata.next_row_id == upgraded[-1].first_row_id + upgraded[-1].added_rows
