"""The Generic Table API over raw HTTP, on the embedded SQLite server and on PostgreSQL: Lakekeeper's
paths, JSON shapes and error types; one name space with tables and views; pages; locations; rename;
protection, soft deletion, undrop and purge."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import httpx
import jsonschema

from tests.catalog.helpers import SCHEMA, error, wait_for
from tests.generic_tables.conftest import GenericTables
from tests.management.helpers import create_view, new_file_warehouse

MGMT = "/management/v1"


def files_under(location: str) -> list[str]:
    path = location.removeprefix("file://")
    return sorted(os.path.join(d, f) for d, _, fs in os.walk(path) for f in fs)


def test_create_load_list_drop(gt, warehouse):
    gt.namespace("ai")
    created = gt.create(
        "ai", "image_embeddings", doc="CLIP embeddings", properties={"embedding-dim": "768"},
        schema={"fields": [{"name": "embedding", "type": "fixed_size_list<float>[768]"}]},
        statistics={"num-rows": 0},
    )
    assert created.status_code == 200, created.text
    table = created.json()["table"]
    location = table["base-location"]
    assert created.json() == {"table": {  # Lakekeeper: no config and no credentials on create
        "name": "image_embeddings", "format": "lance", "base-location": location, "protected": False,
        "doc": "CLIP embeddings", "properties": {"embedding-dim": "768"},
        "schema": {"fields": [{"name": "embedding", "type": "fixed_size_list<float>[768]"}]},
        "statistics": {"num-rows": 0},
    }}
    assert location.startswith("file://" + warehouse["root"] + "/")

    loaded = gt.load("ai", "image_embeddings")
    assert loaded.status_code == 200, loaded.text
    assert loaded.json() == {"table": table, "config": {}}  # file storage: nothing to vend
    assert gt.load("ai", "IMAGE_EMBEDDINGS").json()["table"]["name"] == "image_embeddings"  # case-insensitive

    assert gt.create("ai", "bare", format="parquet").json() == {"table": {
        "name": "bare", "format": "parquet", "base-location": gt.load("ai", "bare").json()["table"]["base-location"],
        "protected": False,
    }}
    listing = gt.http.get(gt.collection("ai")).json()
    assert listing == {"identifiers": [
        {"namespace": ["ai"], "name": "bare", "format": "parquet", "id": listing["identifiers"][0]["id"]},
        {"namespace": ["ai"], "name": "image_embeddings", "format": "lance", "id": listing["identifiers"][1]["id"]},
    ]}
    uuid.UUID(listing["identifiers"][0]["id"])

    credentials = gt.http.get(gt.url("ai", "image_embeddings") + "/credentials")
    assert credentials.status_code == 200 and credentials.json() == {"storage-credentials": []}

    dropped = gt.drop("ai", "image_embeddings")
    assert dropped.status_code == 204, dropped.text
    missing = gt.load("ai", "image_embeddings")
    assert missing.status_code == 404
    assert error(missing)["type"] == "NoSuchGenericTableException"
    assert error(gt.drop("ai", "image_embeddings"))["type"] == "NoSuchGenericTableException"
    assert gt.names("ai") == ["bare"]


def test_requests_are_validated(gt):
    gt.namespace("v")
    cases = [
        ({"name": "t", "format": "Lance"}, "InvalidFormat"),
        ({"name": "t", "format": "1lance"}, "InvalidFormat"),
        ({"name": "t", "format": "a" * 65}, "InvalidFormat"),
        ({"name": "t"}, "InvalidFormat"),
        ({"name": "", "format": "lance"}, "InvalidName"),
        ({"name": "a+b", "format": "lance"}, "InvalidName"),
        ({"name": "t", "format": "lance", "schema": {"blob": "x" * (1024 * 1024)}}, "PayloadTooLarge"),
        ({"name": "t", "format": "lance", "statistics": ["y" * (1024 * 1024)]}, "PayloadTooLarge"),
        ({"name": "t", "format": "lance", "properties": {"k": 1}}, "BadRequestException"),
        ({"format": "lance"}, "BadRequestException"),
    ]
    for body, typ in cases:
        response = gt.http.post(gt.collection("v"), json=body)
        assert response.status_code == 400, (body, response.text)
        assert error(response)["type"] == typ, body
    assert gt.create("v", "ok", format="my_format-2").status_code == 200  # digits, '_' and '-' after the first
    assert error(gt.create("nowhere", "t"))["type"] == "NoSuchNamespaceException"
    other = gt.http.post(f"/../{uuid.uuid4()}/namespaces/v/generic-tables", json={"name": "t", "format": "lance"})
    assert other.status_code == 404 and error(other)["type"] == "NoSuchWarehouseException"
    assert gt.names("v") == ["ok"]


def test_tables_views_and_generic_tables_share_one_name_space(gt, server, warehouse):
    gt.namespace("ns")
    assert gt.catalog.post("/namespaces/ns/tables", json={"name": "orders", "schema": SCHEMA}).status_code == 200
    create_view(gt.catalog, "", "ns", "report")
    assert gt.create("ns", "frames").status_code == 200

    on_table = gt.create("ns", "ORDERS")
    assert on_table.status_code == 409
    assert error(on_table) == {"type": "AlreadyExistsException", "code": 409,
                               "message": "Table with same name already exists: ns.ORDERS"}
    assert error(gt.create("ns", "Report"))["message"] == "View with same name already exists: ns.Report"
    again = gt.create("ns", "Frames")
    assert error(again) == {"type": "GenericTableAlreadyExists", "code": 409,
                            "message": "Generic table already exists: ns.Frames"}
    table_on_generic = gt.catalog.post("/namespaces/ns/tables", json={"name": "FRAMES", "schema": SCHEMA})
    assert table_on_generic.status_code == 409
    assert error(table_on_generic)["message"] == "Generic table with same name already exists: ns.FRAMES"

    # each API sees its own kind only
    assert error(gt.catalog.get("/namespaces/ns/tables/frames"))["type"] == "NoSuchTableException"
    assert gt.catalog.head("/namespaces/ns/tables/frames").status_code == 404
    assert error(gt.load("ns", "orders"))["type"] == "NoSuchGenericTableException"
    assert [i["name"] for i in gt.catalog.get("/namespaces/ns/tables").json()["identifiers"]] == ["orders"]
    assert gt.names("ns") == ["frames"]
    # a namespace holding a generic table is not empty
    assert error(gt.catalog.delete("/namespaces/ns"))["type"] == "NamespaceNotEmptyException"


def test_listing_pages_with_opaque_tokens(gt):
    gt.namespace("p")
    names = [f"t{i:02}" for i in range(7)]
    for name in reversed(names):
        assert gt.create("p", name, format="csv").status_code == 200
    seen, token, pages = [], None, 0
    while True:
        params = {"pageSize": 3, **({"pageToken": token} if token else {})}
        body = gt.http.get(gt.collection("p"), params=params).json()
        seen += [i["name"] for i in body["identifiers"]]
        pages += 1
        token = body.get("next-page-token")
        if not token:
            break
    assert seen == names and pages == 3
    bad = gt.http.get(gt.collection("p"), params={"pageToken": "not-a-token"})
    assert bad.status_code == 400 and error(bad)["type"] == "InvalidPageToken"


def test_base_location_must_be_inside_the_warehouse_and_free(gt, warehouse, tmp_path):
    gt.namespace("loc")
    root = warehouse["root"]
    landing = Path(root, "landing", "2024")
    landing.mkdir(parents=True)
    (landing / "part-0.parquet").write_bytes(b"PAR1")  # data that is there before it is cataloged
    registered = gt.create("loc", "landing", format="parquet", base_location=f"file://{landing}/")
    assert registered.status_code == 200, registered.text
    assert registered.json()["table"]["base-location"] == f"file://{landing}"

    outside = gt.create("loc", "escape", base_location=f"file://{tmp_path}/elsewhere")
    assert outside.status_code == 400 and error(outside)["type"] == "InvalidLocation"
    traversal = gt.create("loc", "dots", base_location=f"file://{root}/landing/../../etc")
    assert traversal.status_code == 400 and error(traversal)["type"] == "InvalidLocation"
    for nested in (f"file://{landing}/sub", f"file://{root}/landing"):  # inside / above another's location
        taken = gt.create("loc", "nested", base_location=nested)
        assert taken.status_code == 409 and error(taken)["type"] == "LocationAlreadyTaken", nested
    table = gt.catalog.post("/namespaces/loc/tables", json={"name": "t", "schema": SCHEMA,
                                                            "location": f"file://{landing}/iceberg"})
    assert table.status_code == 409 and error(table)["type"] == "LocationAlreadyTaken"


def test_rename_within_and_across_namespaces(gt):
    gt.namespace("a")
    gt.namespace("b")
    location = gt.create("a", "src", properties={"k": "v"}).json()["table"]["base-location"]
    assert gt.create("a", "other").status_code == 200

    assert gt.rename((["a"], "src"), (["a"], "renamed")).status_code == 204
    assert gt.load("a", "renamed").json()["table"] == {
        "name": "renamed", "format": "lance", "base-location": location, "protected": False, "properties": {"k": "v"},
    }
    assert gt.rename((["a"], "renamed"), (["b"], "moved")).status_code == 204
    assert gt.names("a") == ["other"] and gt.names("b") == ["moved"]
    assert gt.load("b", "moved").json()["table"]["base-location"] == location  # the location stays

    taken = gt.rename((["b"], "moved"), (["a"], "OTHER"))
    assert taken.status_code == 409
    assert error(taken)["message"] == "Cannot rename b.moved to a.OTHER. Generic table already exists"
    missing = gt.rename((["a"], "ghost"), (["a"], "x"))
    assert missing.status_code == 404 and error(missing)["type"] == "NoSuchGenericTableException"
    no_ns = gt.rename((["b"], "moved"), (["c"], "x"))
    assert no_ns.status_code == 404 and error(no_ns)["type"] == "NoSuchNamespaceException"
    plus = gt.rename((["b"], "moved"), (["b"], "x+y"))
    assert plus.status_code == 400
    # the Iceberg rename does not move a generic table, nor the generic rename a table
    assert gt.catalog.post("/namespaces/a/tables", json={"name": "iceberg", "schema": SCHEMA}).status_code == 200
    assert gt.rename((["a"], "iceberg"), (["a"], "x")).status_code == 404
    iceberg_rename = gt.catalog.post("/tables/rename", json={
        "source": {"namespace": ["b"], "name": "moved"}, "destination": {"namespace": ["b"], "name": "x"}})
    assert iceberg_rename.status_code == 404


def test_protection_soft_delete_and_undrop(server, tmp_path_factory):
    soft = new_file_warehouse(server.url, tmp_path_factory,
                              delete_profile={"type": "soft", "expiration-seconds": 3600})
    client = GenericTables(server.url, soft["id"])
    try:
        client.namespace("lake")
        assert client.create("lake", "frames").status_code == 200
        [ident] = client.http.get(client.collection("lake")).json()["identifiers"]
        protection = f"{MGMT}/warehouse/{soft['id']}/generic-table/{ident['id']}/protection"
        assert client.management.get(protection).json()["protected"] is False
        assert client.management.post(protection, json={"protected": True}).json()["protected"] is True
        assert client.load("lake", "frames").json()["table"]["protected"] is True

        refused = client.drop("lake", "frames")
        assert refused.status_code == 409 and error(refused)["type"] == "GenericTableProtected"
        assert client.management.post(protection, json={"protected": False}).status_code == 200

        assert client.drop("lake", "frames").status_code == 204
        assert client.load("lake", "frames").status_code == 404
        [entry] = client.management.get(f"{MGMT}/warehouse/{soft['id']}/deleted-tabulars").json()["tabulars"]
        assert (entry["id"], entry["name"], entry["namespace"], entry["typ"]) == (
            ident["id"], "frames", ["lake"], "generic-table"
        )
        tasks = client.management.post(f"{MGMT}/warehouse/{soft['id']}/task/list", json={
            "queue-name": ["soft_deletion"], "entities": [{"type": "generic-table", "generic-table-id": ident["id"]}],
        }).json()["tasks"]
        assert [t["entity"] for t in tasks] == [
            {"type": "generic-table", "generic-table-id": ident["id"], "warehouse-id": soft["id"]}
        ]
        wrong_kind = client.management.post(f"{MGMT}/warehouse/{soft['id']}/deleted-tabulars/undrop",
                                            json={"targets": [{"type": "table", "id": ident["id"]}]})
        assert wrong_kind.status_code == 404
        undrop = client.management.post(f"{MGMT}/warehouse/{soft['id']}/deleted-tabulars/undrop",
                                        json={"targets": [{"type": "generic-table", "id": ident["id"]}]})
        assert undrop.status_code == 204, undrop.text
        assert client.load("lake", "frames").json()["table"]["name"] == "frames"
        found = client.management.post(f"{MGMT}/warehouse/{soft['id']}/search-tabular", json={"search": "frames"})
        assert [t["tabular-id"] for t in found.json()["tabulars"]] == [{"type": "generic-table", "id": ident["id"]}]

        # force skips soft deletion: gone for good, nothing to undrop
        assert client.drop("lake", "frames", force="true").status_code == 204
        assert client.management.get(f"{MGMT}/warehouse/{soft['id']}/deleted-tabulars").json()["tabulars"] == []
        gone = client.management.get(protection)
        assert gone.status_code == 404 and error(gone)["type"] == "GenericTableNotFound"
    finally:
        client.close()


def test_drop_purges_only_the_generic_tables_own_files(gt, warehouse):
    gt.namespace("purge")
    kept = gt.create("purge", "kept").json()["table"]["base-location"]
    purged = gt.create("purge", "purged").json()["table"]["base-location"]
    for name, location in (("kept", kept), ("purged", purged)):
        assert gt.load("purge", name).status_code == 200  # a writer's load creates the directory
        Path(location.removeprefix("file://"), "data").mkdir()
        Path(location.removeprefix("file://"), "data", "0.lance").write_bytes(b"x")
    neighbour = Path(warehouse["root"], "neighbour.txt")
    neighbour.write_text("not a generic table's")

    assert gt.drop("purge", "kept", purgeRequested="false").status_code == 204
    assert gt.drop("purge", "purged").status_code == 204  # purgeRequested defaults to true
    wait_for(lambda: not files_under(purged), what="the purge task to remove the generic table's files")
    assert files_under(kept) == [kept.removeprefix("file://") + "/data/0.lance"]
    assert neighbour.read_text() == "not a generic table's"


def test_writable_load_creates_the_directory_a_file_writer_needs(gt):
    """File storage: PyArrow writes a Parquet file into the generic table's directory without
    creating it; a load with write access makes sure it exists (as for a table's metadata/)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    gt.namespace("files")
    location = gt.create("files", "events", format="parquet").json()["table"]["base-location"]
    assert gt.load("files", "events").status_code == 200
    path = location.removeprefix("file://") + "/part-0.parquet"
    pq.write_table(pa.table({"id": [1, 2, 3]}), path)
    assert pq.read_table(path).num_rows == 3
    assert not Path(location.removeprefix("file://"), "metadata").exists()  # no Iceberg metadata folder


def test_idempotency_key_replays_a_create(gt):
    gt.namespace("idem")
    key = str(uuid.uuid4())
    first = gt.http.post(gt.collection("idem"), json={"name": "t", "format": "lance"},
                         headers={"Idempotency-Key": key})
    again = gt.http.post(gt.collection("idem"), json={"name": "t", "format": "lance"},
                         headers={"Idempotency-Key": key})
    assert first.status_code == again.status_code == 200
    assert again.headers.get("Idempotency-Replayed") == "true" and again.json() == first.json()
    assert gt.names("idem") == ["t"]


def test_answers_match_the_served_openapi_document(gt, server):
    document = httpx.get(f"{server.url}/api-docs/generic-table/v1/openapi.json", timeout=30).json()
    assert document["info"]["title"] == "Lakekeeper Generic Table API"
    assert set(document["paths"]) == {
        "/lakekeeper/v1/{prefix}/namespaces/{namespace}/generic-tables",
        "/lakekeeper/v1/{prefix}/namespaces/{namespace}/generic-tables/{table}",
        "/lakekeeper/v1/{prefix}/namespaces/{namespace}/generic-tables/{table}/credentials",
        "/lakekeeper/v1/{prefix}/generic-tables/rename",
    }

    def check(path: str, method: str, answer: httpx.Response) -> None:
        schema = document["paths"][path][method]["responses"]["200"]["content"]["application/json"]["schema"]
        jsonschema.Draft202012Validator({**schema, "components": document["components"]}).validate(answer.json())

    collection = "/lakekeeper/v1/{prefix}/namespaces/{namespace}/generic-tables"
    gt.namespace("doc")
    check(collection, "post", gt.create("doc", "t", doc="d", schema=[1], statistics={"rows": 1}))
    check(collection, "get", gt.http.get(gt.collection("doc"), params={"pageSize": 1}))
    check(collection + "/{table}", "get", gt.load("doc", "t"))
    check(collection + "/{table}/credentials", "get", gt.http.get(gt.url("doc", "t") + "/credentials"))
    create = document["paths"][collection]["post"]["requestBody"]["content"]["application/json"]["schema"]
    validator = jsonschema.Draft202012Validator({**create, "components": document["components"]})
    assert validator.is_valid({"name": "t", "format": "lance", "base-location": None})
    assert not validator.is_valid({"name": "t", "format": "Lance"})


def test_cli_prints_the_served_document(sqlite_server, tmp_path):
    served = httpx.get(f"{sqlite_server.url}/api-docs/generic-table/v1/openapi.json", timeout=30).json()
    env = {**os.environ, "LAKEKEEPER__DATA_DIR": str(tmp_path)}
    printed = subprocess.run([sys.executable, "-m", "lakekeeper_host", "generic-table-openapi"], env=env,
                             capture_output=True, text=True, timeout=120)
    assert printed.returncode == 0, printed.stderr
    document = json.loads(printed.stdout)
    assert document["paths"] == served["paths"]
    assert document["components"]["schemas"] == served["components"]["schemas"]
    assert not list(tmp_path.iterdir())  # no database made, no server started


def test_a_recursive_namespace_drop_takes_generic_tables_along(gt, server):
    gt.namespace("scratch", "deep")
    location = gt.create(["scratch", "deep"], "frames").json()["table"]["base-location"]
    assert gt.load(["scratch", "deep"], "frames").status_code == 200  # a writer's load makes the directory
    Path(location.removeprefix("file://"), "0.lance").write_bytes(b"x")
    [ident] = gt.http.get(gt.collection(["scratch", "deep"])).json()["identifiers"]
    protection = f"{MGMT}/warehouse/{gt.warehouse_id}/generic-table/{ident['id']}/protection"
    assert gt.management.post(protection, json={"protected": True}).status_code == 200
    refused = gt.catalog.delete("/namespaces/scratch", params={"recursive": "true", "purge": "true"})
    assert refused.status_code == 409 and error(refused)["type"] == "ChildTabularProtected"
    assert error(refused)["message"] == "Generic table 'frames' below is protected; use force=true"

    assert gt.management.post(protection, json={"protected": False}).status_code == 200
    dropped = gt.catalog.delete("/namespaces/scratch", params={"recursive": "true", "purge": "true"})
    assert dropped.status_code == 204, dropped.text
    assert gt.management.get(protection).status_code == 404
    wait_for(lambda: not files_under(location), what="the generic table's files to be purged with the namespace")


def test_a_soft_deleted_generic_table_expires_and_its_files_are_purged(server, tmp_path_factory):
    soft = new_file_warehouse(server.url, tmp_path_factory, delete_profile={"type": "soft", "expiration-seconds": 1})
    client = GenericTables(server.url, soft["id"])
    try:
        client.namespace("tmp")
        location = client.create("tmp", "scratch").json()["table"]["base-location"]
        assert client.load("tmp", "scratch").status_code == 200
        Path(location.removeprefix("file://"), "0.lance").write_bytes(b"x")
        assert client.drop("tmp", "scratch").status_code == 204  # soft, with purge (the default)
        deleted = f"{MGMT}/warehouse/{soft['id']}/deleted-tabulars"
        wait_for(lambda: not files_under(location), what="the expired generic table's files to be purged")
        wait_for(lambda: client.management.get(deleted).json()["tabulars"] == [], what="the expiry to finish")
        assert client.names("tmp") == [] and client.create("tmp", "scratch").status_code == 200
    finally:
        client.close()
