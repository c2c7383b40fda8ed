"""The catalog reads and deletes, on a client's behalf, only what lies inside the table's own location
(issue 30), written from the attacker's side: bob may create tables in his namespace of a ``file``
warehouse and write files into his own table folders (file storage: directly); alice owns a table
next to his; a precious file lies outside every warehouse. On SQLite and PostgreSQL (``server``).
"""

from __future__ import annotations

import copy
import json
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from tests.catalog.helpers import Rest, error, ns_path

NOW = int(time.time() * 1000)


def path_of(location: str) -> Path:
    return Path(urlsplit(location).path)


def snapshot(snapshot_id: int, manifest_list: str, sequence: int = 1) -> dict:
    return {
        "snapshot-id": snapshot_id, "sequence-number": sequence, "timestamp-ms": NOW + sequence,
        "manifest-list": manifest_list, "summary": {"operation": "append"}, "schema-id": 0,
    }  # fmt: skip


@pytest.fixture
def scene(rest: Rest, warehouse, tmp_path):
    """alice's table with one snapshot, bob's namespace, a precious file outside every warehouse."""
    root = Path(warehouse["root"])
    outside = tmp_path / "outside-every-warehouse"
    outside.mkdir()
    precious = outside / "precious.txt"
    precious.write_text("do not delete")
    assert rest.create_namespace("alice").status_code == 200
    assert rest.create_namespace("bob").status_code == 200
    created = rest.create_table("alice", "t", properties={"format-version": "2"})
    assert created.status_code == 200, created.text
    alice_location = created.json()["metadata"]["location"]
    alice_list = f"{alice_location}/metadata/snap-1.avro"
    path_of(alice_list).write_bytes(b"alice's manifest list")
    added = rest.commit("alice", "t", [
        {"action": "add-snapshot", "snapshot": snapshot(1, alice_list)},
        {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": 1},
    ])  # fmt: skip
    assert added.status_code == 200, added.text
    alice = rest.load("alice", "t").json()
    return {
        "root": root, "precious": precious, "alice": alice, "alice_location": alice_location,
        "alice_list": alice_list, "rest": rest,
    }  # fmt: skip


def bob_folder(scene) -> str:
    """A fresh folder inside the warehouse that no table claims: where bob prepares a metadata file."""
    return f"file://{scene['root']}/bob-{uuid.uuid4().hex[:8]}"


def forged_metadata(scene, location: str, **changes) -> dict:
    """A valid metadata document for a new table at ``location`` (alice's, re-labelled)."""
    metadata = copy.deepcopy(scene["alice"]["metadata"])
    metadata.update({"location": location, "table-uuid": str(uuid.uuid4()), "snapshots": [], "refs": {},
                     "current-snapshot-id": -1, "snapshot-log": [], "metadata-log": []})  # fmt: skip
    metadata["properties"] = {
        **metadata.get("properties", {}),
        "write.metadata.delete-after-commit.enabled": "true",
        "write.metadata.previous-versions-max": "1",
    }
    metadata.update(changes)
    return metadata


def plant(location: str, metadata: dict | str | bytes) -> str:
    """Write a file as bob does on file storage (directly); returns its location."""
    path = path_of(location)
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(metadata, dict):
        metadata = json.dumps(metadata)
    path.write_bytes(metadata if isinstance(metadata, bytes) else metadata.encode())
    return location


def register(rest: Rest, name: str, metadata_location: str, namespace: str = "bob") -> httpx.Response:
    return rest.http.post(
        f"/namespaces/{ns_path(namespace)}/register", json={"name": name, "metadata-location": metadata_location}
    )


def two_commits(rest: Rest, namespace: str, name: str) -> None:
    for value in ("1", "2"):
        response = rest.commit(namespace, name, [{"action": "set-properties", "updates": {"step": value}}])
        assert response.status_code == 200, response.text


# ---------------------------------------------------------------- the critical finding, end to end


@pytest.mark.parametrize("target", ["outside-every-warehouse", "alice-current-metadata", "warehouse-root-file"])
def test_metadata_log_cannot_make_the_catalog_delete_foreign_files(scene, target):
    """Bob registers a metadata file whose ``metadata-log`` names a file that is not his, then commits
    twice with ``previous-versions-max=1``: before the fix the server deleted the named file."""
    rest = scene["rest"]
    victim = {
        "outside-every-warehouse": f"file://{scene['precious']}",
        "alice-current-metadata": scene["alice"]["metadata-location"],
        "warehouse-root-file": plant(f"file://{scene['root']}/unclaimed.txt", "someone's file"),
    }[target]
    location = bob_folder(scene)
    log = [{"metadata-file": victim, "timestamp-ms": NOW - 1000}]
    metadata_location = plant(f"{location}/metadata/00001-{uuid.uuid4()}.metadata.json",
                              forged_metadata(scene, location, **{"metadata-log": log}))  # fmt: skip
    response = register(rest, "evil", metadata_location)
    if response.status_code == 200:  # the old behaviour: what the commits then did is the finding
        two_commits(rest, "bob", "evil")
    assert path_of(victim).exists(), f"the catalog deleted {victim}"
    assert response.status_code == 400, response.text
    err = error(response)
    assert err["type"] == "InvalidLocation" and victim in err["message"] and "metadata-log" in err["message"], err
    assert rest.load("alice", "t").status_code == 200


# ---------------------------------------------------------------- register: what the file names


def _bad_document(scene, location: str, kind: str) -> tuple[dict, str]:
    """A metadata document for ``location`` naming one path outside it, and that path."""
    outside = f"file://{scene['precious']}"
    alice_list = scene["alice_list"]
    if kind == "manifest-list":
        snap = snapshot(7, alice_list)
        return forged_metadata(scene, location, snapshots=[snap], **{"current-snapshot-id": 7, "refs": {
            "main": {"snapshot-id": 7, "type": "branch"}}, "last-sequence-number": 1}), alice_list
    if kind == "statistics":
        snap = snapshot(7, f"{location}/metadata/snap-7.avro")
        stats = {"snapshot-id": 7, "statistics-path": outside, "file-size-in-bytes": 1,
                 "file-footer-size-in-bytes": 1, "blob-metadata": []}  # fmt: skip
        return forged_metadata(scene, location, snapshots=[snap], statistics=[stats],
                               **{"last-sequence-number": 1}), outside  # fmt: skip
    if kind == "partition-statistics":
        snap = snapshot(7, f"{location}/metadata/snap-7.avro")
        stats = {"snapshot-id": 7, "statistics-path": outside, "file-size-in-bytes": 1}
        return forged_metadata(scene, location, snapshots=[snap], **{"partition-statistics": [stats],
                               "last-sequence-number": 1}), outside  # fmt: skip
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["manifest-list", "statistics", "partition-statistics"])
def test_register_refuses_files_that_name_paths_outside_the_table(scene, kind):
    rest = scene["rest"]
    location = bob_folder(scene)
    document, named = _bad_document(scene, location, kind)
    metadata_location = plant(f"{location}/metadata/00000-{uuid.uuid4()}.metadata.json", document)
    response = register(rest, f"evil_{kind.replace('-', '_')}", metadata_location)
    assert response.status_code == 400, response.text
    err = error(response)
    assert err["type"] == "InvalidLocation" and named in err["message"], err
    assert rest.load("bob", f"evil_{kind.replace('-', '_')}").status_code == 404


def test_register_refuses_a_metadata_file_outside_the_location_it_declares(scene):
    """The metadata file must lie inside the table it describes (else it belongs to someone else)."""
    rest = scene["rest"]
    declared = bob_folder(scene)
    elsewhere = bob_folder(scene)
    metadata_location = plant(f"{elsewhere}/metadata/00000-{uuid.uuid4()}.metadata.json",
                              forged_metadata(scene, declared))  # fmt: skip
    response = register(rest, "astray", metadata_location)
    assert response.status_code == 400, response.text
    assert error(response)["type"] == "InvalidLocation"
    assert declared in error(response)["message"]


def test_register_refuses_a_metadata_file_in_another_tables_folder_without_telling_if_it_exists(scene):
    """Bob can write into alice's folder on file storage; registering from there is refused before the
    file is read, with the same answer whether the file exists or not."""
    rest = scene["rest"]
    location = bob_folder(scene)
    planted = plant(f"{scene['alice_location']}/metadata/00009-{uuid.uuid4()}.metadata.json",
                    forged_metadata(scene, location))  # fmt: skip
    missing = f"{scene['alice_location']}/metadata/00009-{uuid.uuid4()}.metadata.json"
    answers = []
    for candidate in (planted, missing, scene["alice"]["metadata-location"]):
        response = register(rest, "squatter", candidate)
        assert response.status_code == 400, response.text
        err = error(response)
        assert err["type"] == "InvalidLocation", err
        answers.append(err["message"].replace(candidate, "<file>"))
    assert len(set(answers)) == 1, answers


def test_register_errors_never_echo_file_contents(scene):
    rest = scene["rest"]
    secret = "s3cr3t-" + uuid.uuid4().hex
    location = bob_folder(scene)
    bad_values = forged_metadata(scene, location)
    bad_values["schemas"] = [{"type": "struct", "schema-id": 0, "fields": [
        {"id": 1, "name": "id", "type": secret, "required": False}]}]  # fmt: skip
    documents = {
        "not-json": f"{secret}:x:0:0:root:/root:/bin/bash\n",
        "not-utf8": b"\xff\xfe" + secret.encode(),
        "bad-value": bad_values,
        "wrong-type": forged_metadata(scene, location, **{"last-column-id": secret}),
    }
    for kind, content in documents.items():
        metadata_location = plant(f"{location}/metadata/00000-{kind}.metadata.json", content)
        response = register(rest, f"leak_{kind.replace('-', '_')}", metadata_location)
        assert response.status_code == 400, (kind, response.text)
        message = error(response)["message"]
        assert secret not in message and "\\xff" not in message and "0xff" not in message, (kind, message)


def test_register_of_a_view_is_confined_too(scene):
    rest = scene["rest"]
    declared = bob_folder(scene)
    view = {
        "view-uuid": str(uuid.uuid4()), "format-version": 1, "location": declared, "current-version-id": 1,
        "versions": [{"version-id": 1, "timestamp-ms": NOW, "schema-id": 0, "summary": {},
                      "default-namespace": ["bob"],
                      "representations": [{"type": "sql", "sql": "select 1 as id", "dialect": "spark"}]}],
        "version-log": [{"version-id": 1, "timestamp-ms": NOW}],
        "schemas": [{"type": "struct", "schema-id": 0, "fields": [
            {"id": 1, "name": "id", "type": "int", "required": False}]}],
        "properties": {},
    }  # fmt: skip
    endpoint = f"/namespaces/{ns_path('bob')}/register-view"
    astray = plant(f"{bob_folder(scene)}/metadata/00000-{uuid.uuid4()}.metadata.json", view)
    response = rest.http.post(endpoint, json={"name": "v_astray", "metadata-location": astray})
    assert response.status_code == 400, response.text
    assert error(response)["type"] == "InvalidLocation"
    in_alice = plant(f"{scene['alice_location']}/metadata/v-{uuid.uuid4()}.metadata.json", view)
    response = rest.http.post(endpoint, json={"name": "v_squat", "metadata-location": in_alice})
    assert response.status_code == 400, response.text
    inside = plant(f"{declared}/metadata/00000-{uuid.uuid4()}.metadata.json", view)
    response = rest.http.post(endpoint, json={"name": "v_ok", "metadata-location": inside})
    assert response.status_code == 200, response.text


def test_register_still_adopts_a_dropped_tables_files(scene):
    """The legitimate use: files of a table dropped without purge, registered again."""
    rest = scene["rest"]
    created = rest.create_table("bob", "keep", properties={"format-version": "2"}).json()
    two_commits(rest, "bob", "keep")
    current = rest.load("bob", "keep").json()["metadata-location"]
    assert rest.http.delete(rest.table_url("bob", "keep"), params={"purgeRequested": "false"}).status_code == 204
    response = register(rest, "keep", current)
    assert response.status_code == 200, response.text
    assert response.json()["metadata"]["location"] == created["metadata"]["location"]


# ---------------------------------------------------------------- commits naming paths outside the table


@pytest.mark.parametrize("kind", ["manifest-list", "statistics", "partition-statistics"])
def test_commits_may_not_name_paths_outside_the_table(scene, kind):
    rest = scene["rest"]
    created = rest.create_table("bob", f"c_{kind.replace('-', '_')}", properties={"format-version": "2"})
    name = f"c_{kind.replace('-', '_')}"
    location = created.json()["metadata"]["location"]
    own_list = f"{location}/metadata/snap-5.avro"
    outside = f"file://{scene['precious']}"
    if kind == "manifest-list":
        bad = [{"action": "add-snapshot", "snapshot": snapshot(5, scene["alice_list"])}]
        good = [{"action": "add-snapshot", "snapshot": snapshot(5, own_list)}]
        named = scene["alice_list"]
    else:
        first = rest.commit("bob", name, [{"action": "add-snapshot", "snapshot": snapshot(5, own_list)}])
        assert first.status_code == 200, first.text
        if kind == "statistics":
            def stats(path):
                return [{"action": "set-statistics", "snapshot-id": 5, "statistics": {
                    "snapshot-id": 5, "statistics-path": path, "file-size-in-bytes": 1,
                    "file-footer-size-in-bytes": 1, "blob-metadata": []}}]  # fmt: skip
        else:
            def stats(path):
                return [{"action": "set-partition-statistics", "partition-statistics": {
                    "snapshot-id": 5, "statistics-path": path, "file-size-in-bytes": 1}}]  # fmt: skip
        bad, good, named = stats(outside), stats(f"{location}/metadata/5.stats"), outside
    response = rest.commit("bob", name, bad)
    assert response.status_code == 400, response.text
    err = error(response)
    assert err["type"] == "BadRequestException" and named in err["message"], err
    assert rest.commit("bob", name, good).status_code == 200


# ---------------------------------------------------------------- server-side scan planning


def plan(rest: Rest, namespace: str, name: str) -> httpx.Response:
    return rest.http.post(rest.table_url(namespace, name) + "/plan", json={})


def test_scan_planning_reads_nothing_outside_the_table(scene, catalog):
    """Bob copies alice's manifest list (which names alice's manifests) into his own table folder and
    commits it as his snapshot: planning his table must not read alice's manifests."""
    import pyarrow as pa

    alice = catalog.create_table(("alice", "data"), pa.schema([("secret", pa.string())]))
    alice.append(pa.table({"secret": ["alice-row"]}))
    alice = catalog.load_table(("alice", "data"))
    rest = scene["rest"]
    bob_schema = {"type": "struct", "schema-id": 0,
                  "fields": [{"id": 1, "name": "secret", "type": "string", "required": False}]}  # fmt: skip
    bob = rest.create_table("bob", "snoop", schema=bob_schema, properties={"format-version": "2"})
    bob_location = bob.json()["metadata"]["location"]
    copied = f"{bob_location}/metadata/snap-9.avro"
    plant(copied, path_of(alice.current_snapshot().manifest_list).read_bytes())
    committed = rest.commit("bob", "snoop", [
        {"action": "add-snapshot", "snapshot": snapshot(9, copied)},
        {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": 9},
    ])  # fmt: skip
    assert committed.status_code == 200, committed.text
    response = plan(rest, "bob", "snoop")
    assert "alice" not in response.text.replace("/alice", ""), response.text
    assert response.status_code == 400, response.text
    err = error(response)
    assert err["type"] == "InvalidLocation" and "outside the table location" in err["message"], err


@pytest.mark.parametrize("manifest_list", ["missing", "garbage"])
def test_scan_planning_answers_4xx_for_unreadable_files_of_the_table(scene, manifest_list):
    rest = scene["rest"]
    name = f"broken_{manifest_list}"
    location = rest.create_table("bob", name, properties={"format-version": "2"}).json()["metadata"]["location"]
    target = f"{location}/metadata/snap-3.avro"
    if manifest_list == "garbage":
        plant(target, "root:x:0:0:root:/root:/bin/bash\n")
    committed = rest.commit("bob", name, [
        {"action": "add-snapshot", "snapshot": snapshot(3, target)},
        {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": 3},
    ])  # fmt: skip
    assert committed.status_code == 200, committed.text
    response = plan(rest, "bob", name)
    assert 400 <= response.status_code < 500, response.text
    err = error(response)
    assert "root:x" not in err["message"], err


# ---------------------------------------------------------------- file:// with a host


def test_file_locations_naming_a_host_are_refused(scene):
    rest = scene["rest"]
    host_location = f"file://otherhost{scene['root']}/hosted"
    response = rest.create_table("bob", "hosted", location=host_location)
    assert response.status_code == 400, response.text
    assert "host" in error(response)["message"]
    created = rest.create_table("bob", "moving").json()
    moved = rest.commit("bob", "moving", [{"action": "set-location", "location": host_location}])
    assert moved.status_code == 400, moved.text
    assert rest.load("bob", "moving").json()["metadata"]["location"] == created["metadata"]["location"]
