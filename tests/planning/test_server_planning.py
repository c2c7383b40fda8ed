"""Server-side scan planning through the catalog: PyIceberg's ``scan-planning-mode=server`` reads
exactly the rows of client-side planning; paging, asynchronous plans and bad requests over HTTP."""

from __future__ import annotations

import time
import uuid

import httpx
import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.expressions import And, EqualTo, GreaterThan, In, IsNull, Not, Or
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType

from lakekeeper_host.testing.server import CatalogServer, create_file_warehouse

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "cat", StringType(), required=False),
    NestedField(3, "val", StringType(), required=False),
)
SPEC = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "cat"))
FILTERS = [
    EqualTo("cat", "a"),
    And(EqualTo("cat", "b"), GreaterThan("id", 4)),
    In("cat", {"a", "c"}),
    Or(Not(EqualTo("cat", "a")), IsNull("val")),
    GreaterThan("id", 1000),
]


def rows(table) -> list[tuple]:
    data = table.to_pylist()
    return sorted((r["id"], r["cat"], r["val"]) for r in data)


def append_batches(table, batches: int, per_batch: int = 6) -> None:
    for batch in range(batches):
        ids = [batch * 100 + i for i in range(per_batch)]
        table.append(
            pa.table(
                {
                    "id": pa.array(ids, pa.int64()),
                    "cat": [("a", "b", "c")[i % 3] for i in range(per_batch)],
                    "val": [None if i % 4 == 0 else f"v{i}" for i in ids],
                }
            )
        )


def server_catalog(server, warehouse_name: str) -> RestCatalog:
    catalog = RestCatalog("server-planning", uri=server.catalog_url, warehouse=warehouse_name,
                          **{"scan-planning-mode": "server"})
    assert catalog.supports_server_side_planning()
    return catalog


def test_server_side_planning_reads_the_same_rows(catalog, server, warehouse):
    catalog.create_namespace("ns")
    table = catalog.create_table("ns.t", SCHEMA, partition_spec=SPEC, properties={"format-version": "2"})
    append_batches(table, 3)
    served = server_catalog(server, warehouse["name"]).load_table("ns.t")
    for row_filter in FILTERS:
        local = catalog.load_table("ns.t").scan(row_filter=row_filter)
        remote = served.scan(row_filter=row_filter)
        assert rows(remote.to_arrow()) == rows(local.to_arrow()), row_filter
        assert sorted(t.file.file_path for t in remote.plan_files()) == sorted(t.file.file_path for t in local.plan_files())
    # projection and time travel go through the server too
    first = served.metadata.snapshots[0].snapshot_id
    remote = served.scan(row_filter=EqualTo("cat", "a"), selected_fields=("id",), snapshot_id=first).to_arrow()
    local = catalog.load_table("ns.t").scan(row_filter=EqualTo("cat", "a"), selected_fields=("id",), snapshot_id=first).to_arrow()
    assert remote.column_names == ["id"] and sorted(remote["id"].to_pylist()) == sorted(local["id"].to_pylist())


def test_bad_plan_requests_are_clear_400s(catalog, http, prefix_url):
    catalog.create_namespace("ns")
    table = catalog.create_table("ns.t", SCHEMA, partition_spec=SPEC)
    append_batches(table, 1)
    url = f"{prefix_url}/namespaces/ns/tables/t/plan"
    eq_id = {"type": "eq", "term": "id", "value": 1}
    cases = [
        ({"filter": {"type": "eq", "term": "nope", "value": 1}}, "Invalid filter: Could not find field with name nope"),
        ({"filter": {"type": "between", "term": "id", "value": 1}}, "unknown expression type(s) 'between'"),
        ({"filter": {"type": "not", "child": {"type": "bogus"}}}, "unknown expression type(s) 'bogus'"),
        # malformed expressions are named by their place in the request
        ({"filter": {"type": "eq", "term": "id"}}, "Invalid filter: 'eq' at filter needs 'value'"),
        ({"filter": {"type": "gt", "value": 3}}, "Invalid filter: 'gt' at filter needs 'term'"),
        ({"filter": {"type": "and", "left": eq_id}}, "Invalid filter: 'and' at filter needs 'right'"),
        ({"filter": {"type": "or", "left": eq_id, "right": {"type": "in", "term": "id"}}},
         "Invalid filter: 'in' at filter.right needs 'values'"),
        ({"filter": {"type": "not-in", "term": "id", "values": 5}}, "filter.values must be a list"),
        ({"filter": "id = 1"}, "filter must be an expression object with a 'type', got 'id = 1'"),
        ({"filter": {"type": "eq", "term": {"type": "transform", "transform": "bucket[4]", "term": "id"}, "value": 1}},
         "filter.term must be a column name; transform terms are not supported"),
        # well-formed but wrong for this table
        ({"filter": {"type": "eq", "term": "id", "value": "abc"}}, "Invalid filter: Could not convert abc into a long"),
        ({"filter": {"type": "starts-with", "term": "id", "value": "1"}},
         "Invalid filter: starts-with needs a string column, 'id' is long"),
        ({"filter": {"type": "eq", "term": "ID", "value": 1}}, "Could not find field with name ID, case_sensitive=True"),
        ({"select": ["id", "missing"]}, "Invalid select"),
        ({"select": "id"}, "Invalid scan plan request: Input should be a valid list at select"),
        ({"stats-fields": ["zz"]}, "Invalid stats-fields: cannot find field 'zz'"),
        ({"snapshot-id": 12345}, "Cannot find snapshot with ID 12345"),
        ({"start-snapshot-id": table.metadata.current_snapshot_id}, "end-snapshot-id is required"),
    ]
    for body, message in cases:
        response = http.post(url, json=body)
        assert response.status_code == 400, (body, response.text)
        error = response.json()["error"]
        assert error["type"] == "IllegalArgumentException" and message in error["message"], (body, error)
    # the same filters that are refused above work when they are right
    assert http.post(url, json={"filter": {"type": "eq", "term": "ID", "value": 1}, "case-sensitive": False}).status_code == 200
    assert http.post(url, json={"filter": {"type": "starts-with", "term": "cat", "value": "a"}}).json()["status"] == "completed"
    no_task = http.post(f"{prefix_url}/namespaces/ns/tables/t/tasks", json={})
    assert no_task.status_code == 400 and "plan-task" in no_task.json()["error"]["message"]
    # a missing table, plan and plan task are 404s of the right kind
    missing = http.post(f"{prefix_url}/namespaces/ns/tables/nope/plan", json={})
    assert (missing.status_code, missing.json()["error"]["type"]) == (404, "NoSuchTableException")
    no_plan = http.get(f"{url}/{uuid.uuid4()}")
    assert (no_plan.status_code, no_plan.json()["error"]["type"]) == (404, "NoSuchPlanIdException")
    no_task = http.post(f"{prefix_url}/namespaces/ns/tables/t/tasks", json={"plan-task": "nope"})
    assert (no_task.status_code, no_task.json()["error"]["type"]) == (404, "NoSuchPlanTaskException")


def test_planning_is_advertised(http, server, warehouse):
    endpoints = http.get(f"{server.url}/catalog/v1/config", params={"warehouse": warehouse["name"]}).json()["endpoints"]
    assert {
        "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan",
        "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan/{plan-id}",
        "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan/{plan-id}",
        "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/tasks",
        "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials",
    } <= set(endpoints)


# ---------------------------------------------------------------- paging and asynchronous plans


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def tuned_server(request):
    """Pages of 2 tasks; plans that read 3 or more data manifests run asynchronously."""
    env = {"LAKEKEEPER__SCAN_PLANNING__MAX_TASKS_PER_PAGE": "2", "LAKEKEEPER__SCAN_PLANNING__ASYNC_MIN_MANIFESTS": "3"}
    if request.param == "postgres":
        url = request.getfixturevalue("pg_url_factory")()
        env |= {"LAKEKEEPER__PG_DATABASE_URL_WRITE": url, "LAKEKEEPER__PG_DATABASE_URL_READ": url}
    server = CatalogServer(env).start()
    if request.param == "postgres":
        httpx.post(server.url + "/management/v1/bootstrap", json={"accept-terms-of-use": True})
    yield server
    server.close()


@pytest.fixture
def tuned(tuned_server, tmp_path):
    name = f"wh-{uuid.uuid4().hex[:8]}"
    warehouse_id = create_file_warehouse(tuned_server.url, name, str(tmp_path))
    catalog = RestCatalog("client", uri=tuned_server.catalog_url, warehouse=name)
    catalog.create_namespace("ns")
    with httpx.Client(base_url=f"{tuned_server.url}/catalog/v1/{warehouse_id}", timeout=60) as http:
        yield tuned_server, name, catalog, http


def test_many_tasks_come_in_pages_pyiceberg_follows(tuned):
    server, name, catalog, http = tuned
    table = catalog.create_table("ns.paged", SCHEMA, partition_spec=SPEC)
    append_batches(table, 2)  # 2 manifests, 6 data files: synchronous, 3 pages of 2
    first = http.post("/namespaces/ns/tables/paged/plan", json={}).json()
    assert first["status"] == "completed" and len(first["file-scan-tasks"]) == 2 and len(first["plan-tasks"]) == 2
    fetched = [http.post("/namespaces/ns/tables/paged/tasks", json={"plan-task": t}).json() for t in first["plan-tasks"]]
    files = [t["data-file"]["file-path"] for page in [first, *fetched] for t in page["file-scan-tasks"]]
    assert len(files) == len(set(files)) == 6
    # the plan can be fetched again by its id while it lives
    again = http.get(f"/namespaces/ns/tables/paged/plan/{first['plan-id']}").json()
    assert again["status"] == "completed" and again["plan-tasks"] == first["plan-tasks"]

    served = server_catalog(server, name).load_table("ns.paged")
    for row_filter in FILTERS[:3]:
        assert rows(served.scan(row_filter=row_filter).to_arrow()) == rows(
            catalog.load_table("ns.paged").scan(row_filter=row_filter).to_arrow()
        )


def test_large_plans_are_asynchronous(tuned):
    server, name, catalog, http = tuned
    table = catalog.create_table("ns.big", SCHEMA, partition_spec=SPEC)
    append_batches(table, 4)  # 4 manifests >= 3: planned in the background
    submitted = http.post("/namespaces/ns/tables/big/plan", json={"filter": EqualTo("cat", "b").model_dump(mode="json")}).json()
    assert submitted["status"] == "submitted" and submitted["plan-id"]
    url = f"/namespaces/ns/tables/big/plan/{submitted['plan-id']}"
    deadline = time.monotonic() + 60
    result = submitted
    while result["status"] == "submitted" and time.monotonic() < deadline:
        time.sleep(0.1)
        result = http.get(url).json()
    assert result["status"] == "completed"
    pages = [result] + [http.post("/namespaces/ns/tables/big/tasks", json={"plan-task": t}).json() for t in result["plan-tasks"]]
    files = sorted(t["data-file"]["file-path"] for page in pages for t in page["file-scan-tasks"])
    local = sorted(t.file.file_path for t in catalog.load_table("ns.big").scan(row_filter=EqualTo("cat", "b")).plan_files())
    assert files == local and len(files) == 4

    # cancelling forgets the plan's results
    assert http.delete(url).status_code == 204
    assert http.get(url).json() == {"status": "cancelled"}
    gone = http.post("/namespaces/ns/tables/big/tasks", json={"plan-task": result["plan-tasks"][0]})
    assert gone.status_code == 404

    # a plan belongs to its table
    catalog.create_table("ns.other", SCHEMA)
    assert http.get(f"/namespaces/ns/tables/other/plan/{submitted['plan-id']}").status_code == 404


def test_credentials_endpoint_vends_nothing_for_file_storage(tuned):
    _, _, catalog, http = tuned
    catalog.create_table("ns.creds", SCHEMA)
    response = http.get("/namespaces/ns/tables/creds/credentials", headers={"X-Iceberg-Access-Delegation": "vended-credentials"})
    assert response.status_code == 200 and response.json() == {"storage-credentials": []}
    assert http.get("/namespaces/ns/tables/nope/credentials").status_code == 404
    # and the load response carries no storage-credentials either
    loaded = http.get("/namespaces/ns/tables/creds", headers={"X-Iceberg-Access-Delegation": "vended-credentials"}).json()
    assert "storage-credentials" not in loaded


# ---------------------------------------------------------------- with row-level deletes written by Spark


@pytest.mark.spark
def test_server_planning_applies_spark_position_deletes(spark, spark_catalog, catalog, server, warehouse, http, prefix_url):
    spark.sql(f"CREATE NAMESPACE {spark_catalog}.ns")
    spark.sql(
        f"CREATE TABLE {spark_catalog}.ns.d (id BIGINT, cat STRING, val STRING) USING iceberg PARTITIONED BY (cat) "
        "TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='merge-on-read', "
        "'write.update.mode'='merge-on-read', 'write.merge.mode'='merge-on-read')"
    )
    values = ", ".join(f"({i}, '{('a', 'b', 'c')[i % 3]}', {'NULL' if i % 5 == 0 else repr(f'v{i}')})" for i in range(60))
    spark.sql(f"INSERT INTO {spark_catalog}.ns.d VALUES {values}")
    spark.sql(f"INSERT INTO {spark_catalog}.ns.d VALUES (100, 'a', 'x'), (101, 'b', 'y')")
    spark.sql(f"DELETE FROM {spark_catalog}.ns.d WHERE id % 7 = 0")
    spark.sql(f"UPDATE {spark_catalog}.ns.d SET val = 'updated' WHERE id % 11 = 1")

    plan = http.post(f"{prefix_url}/namespaces/ns/tables/d/plan", json={}).json()
    assert plan["status"] == "completed"
    assert plan["delete-files"] and any(t.get("delete-file-references") for t in plan["file-scan-tasks"])
    assert {d["content"] for d in plan["delete-files"]} == {"position-deletes"}

    served = server_catalog(server, warehouse["name"]).load_table("ns.d")
    expected_all = sorted(
        (r["id"], r["cat"], r["val"]) for r in spark.sql(f"SELECT * FROM {spark_catalog}.ns.d").collect()
    )
    assert rows(served.scan().to_arrow()) == expected_all
    for row_filter in FILTERS:
        local = catalog.load_table("ns.d").scan(row_filter=row_filter)
        remote = served.scan(row_filter=row_filter)
        assert rows(remote.to_arrow()) == rows(local.to_arrow()), row_filter
    assert not any(r[0] % 7 == 0 for r in rows(served.scan().to_arrow()))
