"""Branches, tags and time travel from Spark; refs are ``set-snapshot-ref`` commits on our catalog."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.spark


def test_branches_tags_and_time_travel(spark, spark_catalog, catalog, rows):
    c = spark_catalog
    t = f"{c}.db.stock"
    spark.sql(f"CREATE NAMESPACE {c}.db")
    spark.sql(f"CREATE TABLE {t} (sku STRING, qty INT) USING iceberg TBLPROPERTIES ('format-version' = '2')")
    spark.sql(f"INSERT INTO {t} VALUES ('a', 1)")
    spark.sql(f"INSERT INTO {t} VALUES ('b', 2)")
    first, second = spark.sql(f"SELECT snapshot_id, committed_at FROM {t}.snapshots ORDER BY committed_at").collect()

    # a tag on an older snapshot, a branch on the current one
    spark.sql(f"ALTER TABLE {t} CREATE TAG release_1 AS OF VERSION {first.snapshot_id} RETAIN 30 DAYS")
    spark.sql(f"ALTER TABLE {t} CREATE BRANCH dev")
    with pytest.raises(Exception, match="already exists"):
        spark.sql(f"ALTER TABLE {t} CREATE BRANCH dev")

    # writing to the branch leaves main alone
    spark.sql(f"INSERT INTO {t}.branch_dev VALUES ('c', 3)")
    spark.sql(f"UPDATE {t}.branch_dev SET qty = 20 WHERE sku = 'b'")
    assert rows(f"SELECT * FROM {t}") == [("a", 1), ("b", 2)]
    assert rows(f"SELECT * FROM {t}.branch_dev") == [("a", 1), ("b", 20), ("c", 3)]
    assert rows(f"SELECT * FROM {t} VERSION AS OF 'dev'") == [("a", 1), ("b", 20), ("c", 3)]

    # time travel by snapshot id, by tag name and by timestamp
    assert rows(f"SELECT * FROM {t} VERSION AS OF {first.snapshot_id}") == [("a", 1)]
    assert rows(f"SELECT * FROM {t} VERSION AS OF 'release_1'") == [("a", 1)]
    assert rows(f"SELECT * FROM {t}.tag_release_1") == [("a", 1)]
    assert rows(f"SELECT * FROM {t} TIMESTAMP AS OF '{first.committed_at}'") == [("a", 1)]
    assert rows(f"SELECT * FROM {t} TIMESTAMP AS OF '{second.committed_at}'") == [("a", 1), ("b", 2)]
    with pytest.raises(Exception, match="(?i)cannot find a snapshot older than|no snapshot"):
        spark.sql(f"SELECT * FROM {t} TIMESTAMP AS OF '2000-01-01 00:00:00'").collect()

    refs = {r.name: (r.type, r.snapshot_id) for r in spark.sql(f"SELECT * FROM {t}.refs").collect()}
    dev_head = refs["dev"][1]
    assert refs["main"] == ("BRANCH", second.snapshot_id)
    assert refs["release_1"] == ("TAG", first.snapshot_id)
    assert refs["dev"][0] == "BRANCH" and dev_head not in (first.snapshot_id, second.snapshot_id)

    # the refs live in the catalog: PyIceberg sees them and reads the branch
    table = catalog.load_table(("db", "stock"))
    assert table.metadata.refs["release_1"].snapshot_ref_type == "tag"
    assert table.metadata.refs["release_1"].max_ref_age_ms == 30 * 24 * 3600 * 1000
    assert table.metadata.refs["dev"].snapshot_id == dev_head
    dev_rows = table.scan(snapshot_id=dev_head).to_arrow().to_pylist()
    assert sorted((r["sku"], r["qty"]) for r in dev_rows) == [("a", 1), ("b", 20), ("c", 3)]

    # fast-forward main to dev
    result = spark.sql(f"CALL {c}.system.fast_forward(table => 'db.stock', branch => 'main', to => 'dev')").collect()
    assert (result[0].previous_ref, result[0].updated_ref) == (second.snapshot_id, dev_head)
    assert rows(f"SELECT * FROM {t}") == [("a", 1), ("b", 20), ("c", 3)]
    assert catalog.load_table(("db", "stock")).metadata.current_snapshot_id == dev_head

    # roll main back to the first snapshot, then forward again by id
    spark.sql(f"CALL {c}.system.rollback_to_snapshot('db.stock', {first.snapshot_id})")
    assert rows(f"SELECT * FROM {t}") == [("a", 1)]
    spark.sql(f"CALL {c}.system.set_current_snapshot('db.stock', {dev_head})")
    assert rows(f"SELECT * FROM {t}") == [("a", 1), ("b", 20), ("c", 3)]
    main_log = [entry.snapshot_id for entry in catalog.load_table(("db", "stock")).metadata.snapshot_log]
    assert main_log[-3:] == [dev_head, first.snapshot_id, dev_head]

    # tags and branches can be dropped; the tagged snapshot stays readable by id
    spark.sql(f"ALTER TABLE {t} DROP TAG release_1")
    spark.sql(f"ALTER TABLE {t} DROP BRANCH dev")
    assert {r.name for r in spark.sql(f"SELECT name FROM {t}.refs").collect()} == {"main"}
    assert set(catalog.load_table(("db", "stock")).metadata.refs) == {"main"}
    assert rows(f"SELECT * FROM {t} VERSION AS OF {first.snapshot_id}") == [("a", 1)]
