"""Lakekeeper's own Python client, ``pylakekeeper`` (PyPI), against our server on SQLite and PostgreSQL:
its generic-table calls, its PyIceberg bridge, and Lance (``pylance``) writing and reading a dataset
with embeddings at a generic table's location on the embedded file warehouse. (On SeaweedFS S3 with
vended STS credentials: ``test_generic_tables_s3.py``.)

pylakekeeper 0.4 has no rename call yet ("Rename: not yet exposed by the client"); the rename goes
through the client's own transport, with the same authentication, to the path Lakekeeper serves.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

pylakekeeper = pytest.importorskip("pylakekeeper")
lance = pytest.importorskip("lance")

DIM = 8


def embeddings_table(rows: int, seed: int = 0) -> pa.Table:
    vectors = np.random.default_rng(seed).random((rows, DIM), dtype=np.float32)
    return pa.table({
        "id": pa.array(range(rows), pa.int64()),
        "caption": pa.array([f"image {i}" for i in range(rows)]),
        "embedding": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), DIM),
    })


def test_pylakekeeper_creates_lists_loads_renames_and_drops(lk, gt):
    gt.namespace("ai", "models")
    created = lk.generic_tables.create(
        "ai.models", "embeddings", format=pylakekeeper.GenericTableFormat.LANCE, doc="CLIP embeddings",
        properties={"embedding-dim": str(DIM)},
    )
    assert isinstance(created, pylakekeeper.LoadGenericTableResponse)
    assert (created.table.name, created.table.format, created.table.doc) == ("embeddings", "lance", "CLIP embeddings")
    assert created.table.properties == {"embedding-dim": str(DIM)} and created.table.protected is False
    lk.generic_tables.create(("ai", "models"), "raw_images", format="dataset")

    listed = list(lk.generic_tables.list("ai.models", page_size=1))  # follows next-page-token
    assert [(i.name, i.format, i.namespace) for i in listed] == [
        ("embeddings", "lance", ["ai", "models"]), ("raw_images", "dataset", ["ai", "models"]),
    ]
    assert all(i.id for i in listed)

    loaded = lk.generic_tables.load("ai.models", "embeddings", vended=True)
    assert loaded.location == created.location
    assert loaded.config == {} and loaded.lance_storage_options == {}  # file storage vends nothing
    assert loaded.expires_at is None and not loaded.is_expired

    lk._transport.request("POST", f"/lakekeeper/v1/{lk.warehouse}/generic-tables/rename", json={
        "source": {"namespace": ["ai", "models"], "name": "embeddings"},
        "destination": {"namespace": ["ai", "models"], "name": "clip"},
    })
    assert [i.name for i in lk.generic_tables.list("ai.models")] == ["clip", "raw_images"]
    with pytest.raises(pylakekeeper.NotFoundError):
        lk.generic_tables.load("ai.models", "embeddings")
    with pytest.raises(pylakekeeper.ConflictError):
        lk.generic_tables.create("ai.models", "CLIP", format="lance")

    lk.generic_tables.drop("ai.models", "clip")
    lk.generic_tables.drop("ai.models", "raw_images")
    assert list(lk.generic_tables.list("ai.models")) == []
    with pytest.raises(pylakekeeper.NotFoundError):
        lk.generic_tables.drop("ai.models", "clip")


def test_pyiceberg_bridge_shares_the_warehouse(lk, gt):
    """``Client.iceberg_catalog()``: PyIceberg on the same warehouse (resolved from its id to its name
    through the management API), beside generic tables in the same namespace."""
    catalog = lk.iceberg_catalog()
    catalog.create_namespace("memory")
    table = catalog.create_table("memory.index", schema=pa.schema([("id", pa.int64()), ("key", pa.string())]))
    table.append(pa.table({"id": [1, 2], "key": ["a", "b"]}))
    lk.generic_tables.create("memory", "notes", format="dataset")

    assert catalog.list_tables("memory") == [("memory", "index")]
    assert catalog.load_table("memory.index").scan().to_arrow().sort_by("id")["key"].to_pylist() == ["a", "b"]
    assert [i.name for i in lk.generic_tables.list("memory")] == ["notes"]
    with pytest.raises(pylakekeeper.ConflictError):  # one name space for both kinds
        lk.generic_tables.create("memory", "index", format="lance")


def test_lance_writes_and_reads_embeddings_on_the_file_warehouse(lk, gt, warehouse):
    gt.namespace("vision")
    lk.generic_tables.create("vision", "frames", format="lance")
    writer = lk.generic_tables.load("vision", "frames", vended=True)
    assert writer.location.startswith("file://" + warehouse["root"])

    data = embeddings_table(64)
    lance.write_dataset(data, writer.location, storage_options=writer.lance_storage_options)
    lance.write_dataset(embeddings_table(16, seed=1), writer.location, mode="append",
                        storage_options=writer.lance_storage_options)

    reader = lk.generic_tables.load("vision", "frames", vended=True)
    dataset = lance.dataset(reader.location, storage_options=reader.lance_storage_options)
    assert dataset.count_rows() == 80 and dataset.version == 2
    back = dataset.to_table(columns=["id", "caption", "embedding"], filter="id < 64 AND caption LIKE 'image%'")
    assert back.num_rows == 80  # both writes hold ids 0..63 and 0..15
    query = np.asarray(data["embedding"][7].as_py(), dtype=np.float32)
    nearest = dataset.to_table(nearest={"column": "embedding", "q": query, "k": 1}, columns=["id", "caption"])
    assert nearest["caption"].to_pylist() == ["image 7"]

    # the data is the generic table's: a purge removes it with the table
    gt.drop("vision", "frames")
    from tests.catalog.helpers import wait_for
    from tests.generic_tables.test_generic_table_api import files_under

    wait_for(lambda: not files_under(writer.location), what="the dropped Lance dataset to be purged")


def test_duckdb_reads_a_parquet_generic_table_on_the_file_warehouse(lk, gt):
    import duckdb
    import pyarrow.parquet as pq

    gt.namespace("landing")
    lk.generic_tables.create("landing", "events", format="parquet")
    location = lk.generic_tables.load("landing", "events", vended=True).location
    path = location.removeprefix("file://")
    pq.write_table(pa.table({"id": [1, 2, 3], "kind": ["a", "b", "a"]}), f"{path}/part-0.parquet")
    pq.write_table(pa.table({"id": [4], "kind": ["b"]}), f"{path}/part-1.parquet")
    with duckdb.connect() as con:
        rows = con.execute(f"SELECT kind, count(*) FROM read_parquet('{path}/*.parquet') GROUP BY kind ORDER BY kind")
        assert rows.fetchall() == [("a", 2), ("b", 2)]
