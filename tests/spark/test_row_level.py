"""Row-level MERGE INTO, DELETE and UPDATE from Spark on format v2 and v3 tables, both write modes.

Merge-on-read writes delete files (position deletes on v2, deletion vectors in Puffin files on
v3) that every later commit must carry; copy-on-write rewrites data files. Both go through the
catalog as ``add-snapshot`` commits guarded by ``assert-ref-snapshot-id``.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.spark

CASES = [
    pytest.param(2, "merge-on-read", id="v2-mor"),
    pytest.param(2, "copy-on-write", id="v2-cow"),
    pytest.param(3, "merge-on-read", id="v3-mor"),
    pytest.param(3, "copy-on-write", id="v3-cow"),
]


@pytest.mark.parametrize(("format_version", "mode"), CASES)
def test_merge_delete_update(spark, spark_catalog, catalog, rows, format_version, mode):
    c = spark_catalog
    t = f"{c}.db.accounts"
    spark.sql(f"CREATE NAMESPACE {c}.db")
    spark.sql(
        f"CREATE TABLE {t} (id INT, owner STRING, balance BIGINT) USING iceberg PARTITIONED BY (bucket(2, id)) "
        f"TBLPROPERTIES ('format-version' = '{format_version}', 'write.delete.mode' = '{mode}', "
        f"'write.update.mode' = '{mode}', 'write.merge.mode' = '{mode}')"
    )
    spark.sql(f"INSERT INTO {t} VALUES (1, 'ana', 100), (2, 'bo', 200), (3, 'cy', 300), (4, 'di', 400)")
    lineage = f"SELECT id, _row_id FROM {t}"
    row_ids = dict(rows(lineage)) if format_version == 3 else {}

    changes = (
        "VALUES (2, 'bo', 250, 'upsert'), (3, 'cy', 0, 'close'), (5, 'ed', 500, 'upsert') AS ch(id, owner, balance, op)"
    )
    spark.sql(
        f"MERGE INTO {t} AS target USING (SELECT * FROM {changes}) AS source ON target.id = source.id "
        "WHEN MATCHED AND source.op = 'close' THEN DELETE "
        "WHEN MATCHED THEN UPDATE SET target.balance = source.balance "
        "WHEN NOT MATCHED THEN INSERT (id, owner, balance) VALUES (source.id, source.owner, source.balance)"
    )
    assert rows(f"SELECT * FROM {t}") == [(1, "ana", 100), (2, "bo", 250), (4, "di", 400), (5, "ed", 500)]
    if format_version == 3:  # v3 row lineage: new rows get fresh ids, updated rows keep theirs
        assert sorted(row_ids.values()) == [0, 1, 2, 3]
        row_ids[5] = dict(rows(lineage))[5]
        assert row_ids[5] >= 4

    spark.sql(f"DELETE FROM {t} WHERE owner = 'di'")
    assert rows(f"SELECT id FROM {t}") == [(1,), (2,), (5,)]

    spark.sql(f"UPDATE {t} SET balance = balance + 1 WHERE id IN (1, 5)")
    assert rows(f"SELECT * FROM {t}") == [(1, "ana", 101), (2, "bo", 250), (5, "ed", 501)]

    # every statement is one snapshot committed through the catalog, in order
    operations = [r[0] for r in spark.sql(f"SELECT operation FROM {t}.snapshots ORDER BY committed_at").collect()]
    assert len(operations) == 4 and operations[0] == "append"
    assert all(op in ("overwrite", "delete") for op in operations[1:])

    delete_files = rows(f"SELECT content, file_format FROM {t}.delete_files")
    if mode == "merge-on-read":
        # v2: position delete files (Parquet); v3: deletion vectors (Puffin)
        expected_format = "PUFFIN" if format_version == 3 else "PARQUET"
        assert delete_files and all(content == 1 and fmt == expected_format for content, fmt in delete_files)
    else:
        assert delete_files == []

    table = catalog.load_table(("db", "accounts"))
    assert table.format_version == format_version
    assert table.properties["write.merge.mode"] == mode
    assert len(table.snapshots()) == 4
    if format_version == 2:  # PyIceberg reads v2 position deletes; it cannot read deletion vectors yet
        assert sorted(table.scan().to_arrow().to_pylist(), key=lambda r: r["id"]) == [
            {"id": 1, "owner": "ana", "balance": 101},
            {"id": 2, "owner": "bo", "balance": 250},
            {"id": 5, "owner": "ed", "balance": 501},
        ]
    else:
        assert dict(rows(lineage)) == {i: row_ids[i] for i in (1, 2, 5)}
        # the catalog advanced next-row-id by every snapshot's added rows, in commit order
        assert [s.first_row_id for s in table.snapshots()][0] == 0
        for before, after in zip(table.snapshots(), table.snapshots()[1:], strict=False):
            assert after.first_row_id == before.first_row_id + before.added_rows
        last = table.snapshots()[-1]
        assert table.metadata.next_row_id == last.first_row_id + last.added_rows
