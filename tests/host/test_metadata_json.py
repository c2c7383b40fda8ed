"""Byte-for-byte guards of the fast paths: what a loadTable answers and what a commit writes must be
exactly what the straightforward code produced before them (issue 34: "the response unchanged byte
for byte")."""

from __future__ import annotations

import json
import random

import pytest
from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC
from pyiceberg.schema import Schema
from pyiceberg.table.metadata import new_table_metadata
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER
from pyiceberg.typedef import IcebergBaseModel

from lakekeeper_host.server import metadata_io
from lakekeeper_host.server.tables.etag import StorageShape, etag_of, shape_hash, table_etag
from lakekeeper_host.server.tables.load import load_result_json
from lakekeeper_host.service.storage import DataAccess, StoragePermission, TableConfig

SCHEMA = {"type": "struct", "schema-id": 0,
          "fields": [{"id": i + 1, "name": f"c{i}", "type": "long", "required": False} for i in range(5)]}


def reference_load_result_json(metadata_location, metadata_json, config) -> str:
    """load_result_json as it was written before the fast path (json.dumps of both halves)."""
    head = json.dumps({"metadata-location": metadata_location}, separators=(",", ":"))[:-1]
    if config is None:
        return f'{head},"metadata":{metadata_json}}}'
    tail = {"config": config.config}
    if config.storage_credentials:
        tail["storage-credentials"] = config.storage_credentials
    return f'{head},"metadata":{metadata_json},{json.dumps(tail, separators=(",", ":"))[1:]}'


@pytest.mark.parametrize("location", [
    "file:///w/t/metadata/00001-x.gz.metadata.json", None, 's3://b/t\u00e9\u2603/"q"\\/m.json', "a\x1fb\n",
])
@pytest.mark.parametrize("config", [
    None, TableConfig(), TableConfig(config={"s3.region": "eu"}),
    TableConfig(config={"k": "v\u00fc"},
                storage_credentials=[{"prefix": "s3://b/t", "config": {"s3.access-key-id": "A"}}], expires_at_ms=1),
])
def test_load_result_json_is_the_reference_bytes(location, config):
    metadata_json = '{"format-version":2,"table-uuid":"u","location":"l\\u00e9"}'
    assert load_result_json(location, metadata_json, config) == reference_load_result_json(
        location, metadata_json, config)


def test_etag_of_a_load_is_the_table_etag():
    shape = StorageShape(DataAccess.from_header("vended-credentials"), StoragePermission.READ_WRITE, 3)
    for storage in (None, shape):
        for expires in (None, 4_000_000_000_000):
            hash_ = shape_hash("w", "loc", snapshots="refs", storage=storage)
            expected = table_etag("w", "loc", snapshots="refs", storage=storage, expires_at_ms=expires)
            assert etag_of(hash_, expires).split(".")[:2] == expected.split(".")[:2]
            if expires is None:
                assert etag_of(hash_, None) == expected


def _metadata(format_version: int, snapshots: int):
    schema = Schema.model_validate(SCHEMA)
    base = new_table_metadata(schema, UNPARTITIONED_PARTITION_SPEC, UNSORTED_SORT_ORDER, "file:///tmp/t",
                              {"format-version": str(format_version), "k": "v"})
    data = json.loads(IcebergBaseModel.model_dump_json(base))
    rng, parent, history = random.Random(format_version), None, []
    for i in range(snapshots):
        snapshot = {"snapshot-id": rng.getrandbits(62) or 1, "sequence-number": i + 1,
                    "timestamp-ms": 1_700_000_000_000 + i, "schema-id": 0,
                    "manifest-list": f"file:///tmp/t/metadata/snap-{i}.avro",
                    "summary": {"operation": "append", "added-records": str(i), "note": "\u00e9\"x\""}}
        if parent is not None:
            snapshot["parent-snapshot-id"] = parent
        parent = snapshot["snapshot-id"]
        history.append(snapshot)
    data["snapshots"] = history
    if history:
        data["current-snapshot-id"] = parent
        data["refs"] = {"main": {"snapshot-id": parent, "type": "branch"}}
        data["snapshot-log"] = [{"snapshot-id": s["snapshot-id"], "timestamp-ms": s["timestamp-ms"]} for s in history]
        if format_version > 1:
            data["last-sequence-number"] = snapshots
    return metadata_io.parse(json.dumps(data))


@pytest.mark.parametrize("format_version", [1, 2, 3])
@pytest.mark.parametrize("snapshots", [0, 49, 50, 400])
def test_metadata_json_is_pydantics_bytes(format_version, snapshots):
    metadata = _metadata(format_version, snapshots)
    expected = IcebergBaseModel.model_dump_json(metadata)
    assert metadata_io.to_json(metadata) == expected
    assert metadata_io.to_json(metadata) == expected  # again, from the per-snapshot cache
    # a commit's next metadata shares the snapshot objects and adds one
    grown = metadata.model_copy(update={"snapshots": [*metadata.snapshots, *_metadata(format_version, 1).snapshots]})
    assert metadata_io.to_json(grown) == IcebergBaseModel.model_dump_json(grown)
