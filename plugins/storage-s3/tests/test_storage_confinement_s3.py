"""The catalog reads and deletes only inside the table's own location (issue 30), on S3 (SeaweedFS),
SQLite and PostgreSQL: bob may write objects into his own table's folder (what the catalog's signer
or his vended credentials allow him); alice's table lives next to his; an object lies outside the
warehouse's key prefix. Before the fix, registering a metadata file whose ``metadata-log`` names
them and committing twice made the server delete them with the warehouse's credentials.
"""

from __future__ import annotations

import copy
import json
import time
import uuid

import httpx
import pyarrow as pa
import pytest

pytestmark = pytest.mark.s3

BUCKET = "lakekeeper"
NOW = int(time.time() * 1000)
SCHEMA = {"type": "struct", "schema-id": 0,
          "fields": [{"id": 1, "name": "secret", "type": "string", "required": False}]}  # fmt: skip


def key_of(location: str) -> str:
    return location.split("://", 1)[1].split("/", 1)[1]


def snapshot(snapshot_id: int, manifest_list: str) -> dict:
    return {
        "snapshot-id": snapshot_id, "sequence-number": 1, "timestamp-ms": NOW, "manifest-list": manifest_list,
        "summary": {"operation": "append"}, "schema-id": 0,
    }  # fmt: skip


@pytest.fixture
def scene(lakekeeper_server, s3_profile, s3_credential, make_warehouse, seaweed, key_prefix):
    response = make_warehouse(lakekeeper_server, s3_profile(), s3_credential)
    assert response.status_code == 201, response.text
    warehouse = response.json()
    http = httpx.Client(base_url=f"{lakekeeper_server.url}/catalog/v1/{warehouse['warehouse-id']}", timeout=60)
    for namespace in ("alice", "bob"):
        assert http.post("/namespaces", json={"namespace": [namespace]}).status_code == 200
    from pyiceberg.catalog.rest import RestCatalog

    catalog = RestCatalog("s3-confinement", uri=lakekeeper_server.catalog_url, warehouse=warehouse["name"],
                          **{"header.X-Iceberg-Access-Delegation": "vended-credentials"})  # fmt: skip
    alice = catalog.create_table("alice.t", pa.schema([("secret", pa.string())]))
    alice.append(pa.table({"secret": ["alice-row"]}))
    alice = catalog.load_table("alice.t")
    s3 = seaweed.client()
    outside_key = f"other-{key_prefix}/precious"
    s3.put_object(Bucket=BUCKET, Key=outside_key, Body=b"not the warehouse's")
    bob = http.post("/namespaces/bob/tables", json={"name": "bt", "schema": SCHEMA,
                                                      "properties": {"format-version": "2"}})  # fmt: skip
    assert bob.status_code == 200, bob.text
    yield {
        "http": http, "s3": s3, "alice": alice, "bob": bob.json(), "outside": f"s3://{BUCKET}/{outside_key}",
    }  # fmt: skip
    http.close()


def exists(s3, location: str) -> bool:
    return bool(s3.list_objects_v2(Bucket=BUCKET, Prefix=key_of(location)).get("Contents"))


@pytest.mark.parametrize("target", ["outside-the-warehouse", "alice-current-metadata", "alice-manifest-list"])
def test_metadata_log_cannot_make_the_catalog_delete_foreign_objects(scene, target):
    """Bob overwrites his own table with a metadata file he put into its folder, naming a victim in its
    ``metadata-log``; two commits with ``previous-versions-max=1`` would expire it."""
    http, s3 = scene["http"], scene["s3"]
    victim = {
        "outside-the-warehouse": scene["outside"],
        "alice-current-metadata": scene["alice"].metadata_location,
        "alice-manifest-list": scene["alice"].current_snapshot().manifest_list,
    }[target]
    assert exists(s3, victim)
    metadata = copy.deepcopy(scene["bob"]["metadata"])
    metadata["metadata-log"] = [{"metadata-file": victim, "timestamp-ms": NOW - 1000}]
    metadata["properties"] = {"write.metadata.delete-after-commit.enabled": "true",
                              "write.metadata.previous-versions-max": "1"}  # fmt: skip
    forged = f"{metadata['location']}/metadata/00005-{uuid.uuid4()}.metadata.json"
    s3.put_object(Bucket=BUCKET, Key=key_of(forged), Body=json.dumps(metadata).encode())
    overwrite = {"name": "bt", "metadata-location": forged, "overwrite": True}
    response = http.post("/namespaces/bob/register", json=overwrite)
    if response.status_code == 200:  # the old behaviour: the commits then deleted the victim
        for step in ("1", "2"):
            assert http.post("/namespaces/bob/tables/bt", json={
                "updates": [{"action": "set-properties", "updates": {"step": step}}]}).status_code == 200  # fmt: skip
    assert exists(s3, victim), f"the catalog deleted {victim}"
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["type"] == "InvalidLocation" and victim in error["message"], error
    assert scene["alice"].scan().to_arrow().num_rows == 1


def test_commits_and_planning_stay_inside_the_table(scene):
    """Naming alice's manifest list in a commit is refused; a copy of it in bob's folder commits, but
    planning bob's table does not read alice's manifests it names."""
    http, s3 = scene["http"], scene["s3"]
    alice_list = scene["alice"].current_snapshot().manifest_list
    named = http.post("/namespaces/bob/tables/bt", json={"updates": [
        {"action": "add-snapshot", "snapshot": snapshot(8, alice_list)}]})  # fmt: skip
    assert named.status_code == 400, named.text
    assert named.json()["error"]["type"] == "BadRequestException" and alice_list in named.json()["error"]["message"]

    copied = f"{scene['bob']['metadata']['location']}/metadata/snap-9.avro"
    body = s3.get_object(Bucket=BUCKET, Key=key_of(alice_list))["Body"].read()
    s3.put_object(Bucket=BUCKET, Key=key_of(copied), Body=body)
    committed = http.post("/namespaces/bob/tables/bt", json={"updates": [
        {"action": "add-snapshot", "snapshot": snapshot(9, copied)},
        {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": 9}]})  # fmt: skip
    assert committed.status_code == 200, committed.text
    planned = http.post("/namespaces/bob/tables/bt/plan", json={})
    assert "data-file" not in planned.text, planned.text
    assert planned.status_code == 400, planned.text
    assert planned.json()["error"]["type"] == "InvalidLocation"

    missing = http.post("/namespaces/bob/tables/bt", json={"updates": [
        {"action": "add-snapshot", "snapshot": snapshot(10, copied.replace("snap-9", "snap-10"))},
        {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": 10}]})  # fmt: skip
    assert missing.status_code == 200, missing.text
    planned = http.post("/namespaces/bob/tables/bt/plan", json={})
    assert planned.status_code == 400, planned.text


def test_register_from_another_tables_folder_is_refused_alike_for_present_and_missing_files(scene):
    http = scene["http"]
    alice_folder = scene["alice"].location()
    answers = set()
    for candidate in (scene["alice"].metadata_location, f"{alice_folder}/metadata/00042-{uuid.uuid4()}.metadata.json"):
        response = http.post("/namespaces/bob/register", json={"name": "squat", "metadata-location": candidate})
        assert response.status_code == 400, response.text
        answers.add(response.json()["error"]["message"].replace(candidate, "<file>"))
    assert len(answers) == 1, answers
