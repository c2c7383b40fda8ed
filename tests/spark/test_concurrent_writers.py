"""Concurrent Spark writers through two catalogs on one warehouse.

Each writer commits ``add-snapshot`` guarded by ``assert-ref-snapshot-id`` on the snapshot it
started from. When the other writer won the race, the catalog must answer 409
``CommitFailedException`` (never a 500, never accept the stale commit) so Iceberg's client
refreshes and retries: no write may be lost and the history stays one line.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

pytestmark = pytest.mark.spark

ROUNDS = 3


def test_concurrent_writers_lose_nothing(spark, spark_catalog, server, warehouse, catalog, rows):
    from lakekeeper_host.engines.spark import add_catalog

    a = spark_catalog
    b = add_catalog(spark, server.catalog_url, warehouse["name"], catalog_name=f"{spark_catalog}_b")
    spark.sql(f"CREATE NAMESPACE {a}.db")
    spark.sql(f"CREATE TABLE {a}.db.ledger (writer STRING, n INT) USING iceberg TBLPROPERTIES ('format-version' = '2')")
    spark.sql(f"INSERT INTO {a}.db.ledger VALUES ('seed', 0)")
    assert rows(f"SELECT * FROM {b}.db.ledger") == [("seed", 0)]  # b caches this version

    def write(catalog_name: str, n: int) -> None:
        spark.sql(f"INSERT INTO {catalog_name}.db.ledger VALUES ('{catalog_name}', {n})")

    # both writers start each round together (one session runs concurrent jobs from threads)
    with ThreadPoolExecutor(max_workers=2) as pool:
        for n in range(ROUNDS):
            for future in [pool.submit(write, a, n), pool.submit(write, b, n)]:
                future.result()

    spark.sql(f"REFRESH TABLE {a}.db.ledger")
    expected = sorted([("seed", 0)] + [(name, n) for n in range(ROUNDS) for name in (a, b)])
    assert rows(f"SELECT * FROM {a}.db.ledger") == expected

    # a row-level change from the writer whose cached base is stale is validated and retried too
    spark.sql(f"UPDATE {b}.db.ledger SET n = -1 WHERE writer = 'seed'")
    spark.sql(f"DELETE FROM {a}.db.ledger WHERE writer = '{b}' AND n = 0")
    spark.sql(f"REFRESH TABLE {b}.db.ledger")
    assert rows(f"SELECT * FROM {b}.db.ledger WHERE writer = 'seed' OR n = 0") == [(a, 0), ("seed", -1)]

    snapshots = catalog.load_table(("db", "ledger")).snapshots()
    assert len(snapshots) == 1 + 2 * ROUNDS + 2
    # one linear history: every snapshot's parent is the one committed just before it
    assert [s.parent_snapshot_id for s in snapshots[1:]] == [s.snapshot_id for s in snapshots[:-1]]
