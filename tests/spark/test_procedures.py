"""Iceberg's Spark procedures called through our catalog: register_table and table maintenance."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlparse

import pytest

pytestmark = pytest.mark.spark


def local_path(location: str) -> Path:
    return Path(urlparse(location).path)


def test_register_table(spark, spark_catalog, catalog, http, prefix_url, rows):
    c = spark_catalog
    spark.sql(f"CREATE NAMESPACE {c}.db")
    spark.sql(f"CREATE NAMESPACE {c}.archive")
    spark.sql(f"CREATE TABLE {c}.db.events (id INT, kind STRING) USING iceberg PARTITIONED BY (kind)")
    spark.sql(f"INSERT INTO {c}.db.events VALUES (1, 'a'), (2, 'b')")
    spark.sql(f"INSERT INTO {c}.db.events VALUES (3, 'a')")
    original = catalog.load_table(("db", "events"))

    # a live table's location belongs to it: registering its metadata again is refused (before the file
    # is read), cleanly
    register = (
        f"CALL {c}.system.register_table(table => 'archive.events', metadata_file => '{original.metadata_location}')"
    )
    with pytest.raises(Exception, match="lies inside the location of another table"):
        spark.sql(register).collect()

    # unregister (drop keeping the files), then register the same metadata under a new name
    dropped = http.delete(f"{prefix_url}/namespaces/db/tables/events", params={"purgeRequested": "false"})
    assert dropped.status_code == 204
    assert local_path(original.metadata_location).is_file()

    (result,) = spark.sql(register).collect()
    assert (result.current_snapshot_id, result.total_records_count, result.total_data_files_count) == (
        original.metadata.current_snapshot_id, 3, 3,
    )  # fmt: skip
    assert rows(f"SELECT * FROM {c}.archive.events") == [(1, "a"), (2, "b"), (3, "a")]
    assert rows(f"SHOW TABLES IN {c}.archive") == [("archive", "events", False)]
    registered = catalog.load_table(("archive", "events"))
    assert registered.metadata.table_uuid == original.metadata.table_uuid
    assert [s.snapshot_id for s in registered.snapshots()] == [s.snapshot_id for s in original.snapshots()]

    # the registered table takes commits like any other
    spark.sql(f"INSERT INTO {c}.archive.events VALUES (4, 'c')")
    assert rows(f"SELECT count(*) FROM {c}.archive.events") == [(4,)]
    assert len(catalog.load_table(("archive", "events")).metadata.metadata_log) >= 1


def test_maintenance_procedures(spark, spark_catalog, catalog, rows):
    c = spark_catalog
    t = f"{c}.db.metrics"
    spark.sql(f"CREATE NAMESPACE {c}.db")
    spark.sql(f"CREATE TABLE {t} (id INT, value DOUBLE) USING iceberg TBLPROPERTIES ('format-version' = '2')")
    for batch in range(4):  # small files in four snapshots (and four manifests)
        spark.sql(f"INSERT INTO {t} VALUES ({batch * 2}, {batch}.5), ({batch * 2 + 1}, {batch}.25)")
    expected = rows(f"SELECT * FROM {t}")
    assert len(expected) == 8
    small_files = [local_path(r.file_path) for r in spark.sql(f"SELECT file_path FROM {t}.files").collect()]
    assert len(small_files) >= 4 and all(f.is_file() for f in small_files)

    # rewrite_data_files: compaction into one file, committed as a 'replace' snapshot
    (compacted,) = spark.sql(
        f"CALL {c}.system.rewrite_data_files(table => 'db.metrics', options => map('min-input-files', '2'))"
    ).collect()
    assert (compacted.rewritten_data_files_count, compacted.added_data_files_count) == (len(small_files), 1)
    assert rows(f"SELECT * FROM {t}") == expected
    assert rows(f"SELECT count(*) FROM {t}.files") == [(1,)]
    assert spark.sql(f"SELECT operation FROM {t}.snapshots ORDER BY committed_at DESC LIMIT 1").first()[0] == "replace"

    # rewrite_manifests: the manifests of the current snapshot merged into one
    spark.sql(f"INSERT INTO {t} VALUES (8, 4.5)")
    manifests_before = rows(f"SELECT count(*) FROM {t}.manifests")[0][0]
    assert manifests_before >= 2
    (merged,) = spark.sql(f"CALL {c}.system.rewrite_manifests('db.metrics')").collect()
    assert (merged.rewritten_manifests_count, merged.added_manifests_count) == (manifests_before, 1)
    assert rows(f"SELECT count(*) FROM {t}.manifests") == [(1,)]
    assert rows(f"SELECT count(*) FROM {t}") == [(9,)]

    # expire_snapshots: keep only the current snapshot; the compacted-away files are deleted
    snapshot_count = rows(f"SELECT count(*) FROM {t}.snapshots")[0][0]
    assert snapshot_count == 7  # 4 appends, replace, append, rewrite of manifests
    (expired,) = spark.sql(
        f"CALL {c}.system.expire_snapshots(table => 'db.metrics', "
        "older_than => TIMESTAMP '2999-01-01 00:00:00', retain_last => 1)"
    ).collect()
    assert expired.deleted_data_files_count == len(small_files)
    assert expired.deleted_manifest_lists_count == snapshot_count - 1
    assert rows(f"SELECT count(*) FROM {t}.snapshots") == [(1,)]
    assert not any(f.is_file() for f in small_files)
    assert rows(f"SELECT count(*) FROM {t}") == [(9,)]

    # the catalog's metadata holds exactly what Spark committed
    table = catalog.load_table(("db", "metrics"))
    assert [s.snapshot_id for s in table.snapshots()] == [table.metadata.current_snapshot_id]
    assert table.scan().to_arrow().num_rows == 9


def test_maintenance_target_file_size_decides_how_compaction_splits(spark, spark_catalog, rows):
    """The maintenance job passes ``rewrite-data-files.target-file-size-bytes`` to Spark: with the
    default target the small files become one; with a target below their size each stays its own
    file (the split size follows the target), while the rows stay the same."""
    from lakekeeper_host.engines.spark_maintenance import maintain_table, parse_policy

    c = spark_catalog
    spark.sql(f"CREATE NAMESPACE {c}.sized")
    results = {}
    for name, target in (("default_target", None), ("tiny_target", 64)):
        t = f"{c}.sized.{name}"
        spark.sql(f"CREATE TABLE {t} (id INT, note STRING) USING iceberg")
        for batch in range(4):
            spark.sql(f"INSERT INTO {t} VALUES ({batch}, '{'x' * 200}')")
        expected = rows(f"SELECT * FROM {t} ORDER BY id")
        policy = parse_policy({
            "rewrite-data-files": {"min-input-files": 2, "target-file-size-bytes": target},
            "rewrite-manifests": {"enabled": False}, "expire-snapshots": {"enabled": False},
            "remove-orphan-files": {"enabled": False},
        })  # fmt: skip
        figures = maintain_table(spark, ("sized", name), policy, catalog_name=c)
        assert rows(f"SELECT * FROM {t} ORDER BY id") == expected
        files = rows(f"SELECT count(*) FROM {t}.files")[0][0]
        results[name] = (figures["data-files-rewritten"], figures["data-files-added"], files)
    assert results["default_target"] == (4, 1, 1)
    _, added, files = results["tiny_target"]
    assert added > 1 and files > 1, results
