"""Server-side scan planning through the catalog: PyIceberg's ``scan-planning-mode=server`` reads
exactly the rows of client-side planning -- also with Spark's merge-on-read position and equality
deletes -- paging, asynchronous plans and bad requests over HTTP."""

from __future__ import annotations

import json
import time
import uuid
from urllib.parse import urlsplit

import httpx
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.expressions import And, EqualTo, GreaterThan, In, IsNull, Not, Or
from pyiceberg.expressions.visitors import expression_evaluator
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.typedef import Record
from pyiceberg.types import LongType, NestedField, StringType

from lakekeeper_testing.server import create_file_warehouse

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
        remote_files = sorted(t.file.file_path for t in remote.plan_files())
        assert remote_files == sorted(t.file.file_path for t in local.plan_files())
    # projection and time travel go through the server too
    first = served.metadata.snapshots[0].snapshot_id
    remote = served.scan(row_filter=EqualTo("cat", "a"), selected_fields=("id",), snapshot_id=first).to_arrow()
    local = catalog.load_table("ns.t").scan(
        row_filter=EqualTo("cat", "a"), selected_fields=("id",), snapshot_id=first
    ).to_arrow()
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
        ({"filter": {"type": "eq", "term": "ID", "value": 1}},
         "Could not find field with name ID, case_sensitive=True"),
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
    insensitive = http.post(url, json={"filter": {"type": "eq", "term": "ID", "value": 1}, "case-sensitive": False})
    assert insensitive.status_code == 200
    on_string = http.post(url, json={"filter": {"type": "starts-with", "term": "cat", "value": "a"}})
    assert on_string.json()["status"] == "completed"
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
def tuned_server(request, lakekeeper_server_factory):
    """Pages of 2 tasks; plans that read 3 or more data manifests run asynchronously."""
    env = {"LAKEKEEPER__SCAN_PLANNING__MAX_TASKS_PER_PAGE": "2", "LAKEKEEPER__SCAN_PLANNING__ASYNC_MIN_MANIFESTS": "3"}
    server = lakekeeper_server_factory(env, backend=request.param)
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
    fetched = [
        http.post("/namespaces/ns/tables/paged/tasks", json={"plan-task": t}).json() for t in first["plan-tasks"]
    ]
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
    submitted = http.post(
        "/namespaces/ns/tables/big/plan", json={"filter": EqualTo("cat", "b").model_dump(mode="json")}
    ).json()
    assert submitted["status"] == "submitted" and submitted["plan-id"]
    url = f"/namespaces/ns/tables/big/plan/{submitted['plan-id']}"
    deadline = time.monotonic() + 60
    result = submitted
    while result["status"] == "submitted" and time.monotonic() < deadline:
        time.sleep(0.1)
        result = http.get(url).json()
    assert result["status"] == "completed"
    pages = [result] + [
        http.post("/namespaces/ns/tables/big/tasks", json={"plan-task": t}).json() for t in result["plan-tasks"]
    ]
    files = sorted(t["data-file"]["file-path"] for page in pages for t in page["file-scan-tasks"])
    local_scan = catalog.load_table("ns.big").scan(row_filter=EqualTo("cat", "b"))
    local = sorted(t.file.file_path for t in local_scan.plan_files())
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
    vended = {"X-Iceberg-Access-Delegation": "vended-credentials"}
    response = http.get("/namespaces/ns/tables/creds/credentials", headers=vended)
    assert response.status_code == 200 and response.json() == {"storage-credentials": []}
    assert http.get("/namespaces/ns/tables/nope/credentials").status_code == 404
    # and the load response carries no storage-credentials either
    loaded = http.get("/namespaces/ns/tables/creds", headers=vended).json()
    assert "storage-credentials" not in loaded


# ---------------------------------------------------------------- with row-level deletes written by Spark
#
# PyIceberg writes copy-on-write only, so the merge-on-read delete files come from Spark (the Java
# client): position deletes from DELETE/UPDATE, equality deletes through Iceberg's Java writer API.
# Judges per filter: Spark's own answer for the rows and Java's own planning (``TableScan.planFiles``)
# for the files: the server must hand out the same data files, each with the same delete files.

SQL_FILTERS = ["cat = 'a'", "cat = 'b' AND id > 4", "cat IN ('a', 'c')", "NOT (cat = 'a') OR val IS NULL", "id > 1000"]
FILTER_CASES = list(zip(FILTERS, SQL_FILTERS, strict=True))


def spark_rows(spark, table: str, where: str | None = None) -> list[tuple]:
    query = f"SELECT id, cat, val FROM {table}" + (f" WHERE {where}" if where else "")
    return sorted(tuple(r) for r in spark.sql(query).collect())


def java_table(spark, name: str):
    return spark._jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, name)


def _deletes_by_file(tasks) -> dict[str, set[str]]:
    found = {}
    iterator = tasks.iterator()
    while iterator.hasNext():
        task = iterator.next()
        found[task.file().location()] = {d.location() for d in task.deletes()}
    return found


def java_planning(spark, table, row_filter) -> dict[str, set[str]]:
    """Java's own client-side plan: data file -> the delete files it applies."""
    expression = spark._jvm.org.apache.iceberg.expressions.ExpressionParser.fromJson(
        json.dumps(row_filter.model_dump(mode="json")), table.schema()
    )
    return _deletes_by_file(table.newScan().filter(expression).planFiles())


def server_planning(plan: dict) -> dict[str, set[str]]:
    """The same mapping from our plan response (the spec JSON PyIceberg parses).

    Java 1.10 cannot parse it: its ``PlanTableScanResponseParser`` still writes and reads a pre-spec
    form (``"content": "POSITION_DELETES"``, partitions as maps), so Java judges the files, not the JSON.
    """
    deletes = plan["delete-files"]
    return {
        task["data-file"]["file-path"]: {deletes[i]["file-path"] for i in task.get("delete-file-references", [])}
        for task in plan["file-scan-tasks"]
    }


def write_equality_deletes(spark, name: str, ids_by_partition: dict[str, list[int]]) -> None:
    """Commit one equality-delete file on ``id`` per ``cat`` partition (a RowDelta, as Flink writes them)."""
    jvm, gateway = spark._jvm, spark.sparkContext._gateway
    table = java_table(spark, name)
    schema = table.schema()
    equality_ids = gateway.new_array(jvm.int, 1)
    equality_ids[0] = schema.findField("id").fieldId()
    delete_schema = schema.select(["id"])
    factory = jvm.org.apache.iceberg.data.GenericAppenderFactory(
        schema, table.spec(), equality_ids, delete_schema, None
    )
    delta = table.newRowDelta()
    for category, ids in ids_by_partition.items():
        row = jvm.org.apache.iceberg.data.GenericRecord.create(schema)
        row.setField("cat", category)
        partition = jvm.org.apache.iceberg.PartitionKey(table.spec(), schema)
        partition.partition(row)
        location = table.locationProvider().newDataLocation(table.spec(), partition, f"eq-{uuid.uuid4().hex}.parquet")
        output = jvm.org.apache.iceberg.encryption.EncryptedFiles.plainAsEncryptedOutput(
            table.io().newOutputFile(location)
        )
        writer = factory.newEqDeleteWriter(output, jvm.org.apache.iceberg.FileFormat.PARQUET, partition)
        for deleted_id in ids:
            record = jvm.org.apache.iceberg.data.GenericRecord.create(delete_schema)
            record.setField("id", deleted_id)  # a Python int is a java.lang.Integer: the column is INT
            writer.write(record)
        writer.close()
        delta.addDeletes(writer.toDeleteFile())
    delta.commit()


def merge_on_read(plan: dict) -> list[tuple]:
    """The rows a plan yields: each data file minus its position deletes and equality deletes
    (what a reader does with the tasks; PyIceberg 0.12 refuses equality deletes, so the test does it)."""

    def read(location: str) -> pa.Table:
        return pq.read_table(urlsplit(location).path)

    deletes = plan["delete-files"]
    out = []
    for task in plan["file-scan-tasks"]:
        data_path = task["data-file"]["file-path"]
        data = read(data_path)
        positions, deleted_ids = set(), set()
        for index in task.get("delete-file-references", []):
            delete = deletes[index]
            content = read(delete["file-path"])
            if delete["content"] == "position-deletes":
                paths_and_positions = zip(content["file_path"].to_pylist(), content["pos"].to_pylist(), strict=True)
                positions |= {p for f, p in paths_and_positions if f == data_path}
            else:
                assert delete["equality-ids"] == [1]
                deleted_ids |= set(content["id"].to_pylist())
        for position, row in enumerate(data.select(["id", "cat", "val"]).to_pylist()):
            if position not in positions and row["id"] not in deleted_ids:
                out.append((row["id"], row["cat"], row["val"]))
    return out


def matching(rows: list[tuple], row_filter) -> list[tuple]:
    """The rows a filter keeps (the reader's residual filtering)."""
    evaluate = expression_evaluator(SCHEMA, row_filter, case_sensitive=True)
    return sorted(r for r in rows if evaluate(Record(*r)))


def create_merge_on_read_table(spark, name: str, id_type: str) -> None:
    spark.sql(
        f"CREATE TABLE {name} (id {id_type}, cat STRING, val STRING) USING iceberg PARTITIONED BY (cat) "
        "TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='merge-on-read', "
        "'write.update.mode'='merge-on-read', 'write.merge.mode'='merge-on-read')"
    )
    values = ", ".join(
        f"({i}, '{('a', 'b', 'c')[i % 3]}', {'NULL' if i % 5 == 0 else repr(f'v{i}')})" for i in range(60)
    )
    spark.sql(f"INSERT INTO {name} VALUES {values}")
    spark.sql(f"INSERT INTO {name} VALUES (100, 'a', 'x'), (101, 'b', 'y')")
    spark.sql(f"DELETE FROM {name} WHERE id % 7 = 0")
    spark.sql(f"UPDATE {name} SET val = 'updated' WHERE id % 11 = 1")


@pytest.mark.spark
def test_server_planning_applies_spark_position_deletes(
    spark, spark_catalog, catalog, server, warehouse, http, prefix_url
):
    spark.sql(f"CREATE NAMESPACE {spark_catalog}.ns")
    name = f"{spark_catalog}.ns.d"
    create_merge_on_read_table(spark, name, "BIGINT")
    table = java_table(spark, name)

    plan = http.post(f"{prefix_url}/namespaces/ns/tables/d/plan", json={}).json()
    assert plan["status"] == "completed"
    assert plan["delete-files"] and any(t.get("delete-file-references") for t in plan["file-scan-tasks"])
    assert {d["content"] for d in plan["delete-files"]} == {"position-deletes"}

    served = server_catalog(server, warehouse["name"]).load_table("ns.d")
    assert rows(served.scan().to_arrow()) == spark_rows(spark, name)
    assert not any(r[0] % 7 == 0 for r in rows(served.scan().to_arrow()))
    for row_filter, where in FILTER_CASES:
        remote = rows(served.scan(row_filter=row_filter).to_arrow())
        assert remote == rows(catalog.load_table("ns.d").scan(row_filter=row_filter).to_arrow()), row_filter
        assert remote == spark_rows(spark, name, where), where
        # and the plan itself is Java's own plan: the same files with the same deletes
        body = {"filter": row_filter.model_dump(mode="json")}
        server_plan = http.post(f"{prefix_url}/namespaces/ns/tables/d/plan", json=body).json()
        assert server_planning(server_plan) == java_planning(spark, table, row_filter), where


@pytest.mark.spark
def test_server_planning_with_equality_deletes(spark, spark_catalog, catalog, server, warehouse, http, prefix_url):
    spark.sql(f"CREATE NAMESPACE {spark_catalog}.ns")
    name = f"{spark_catalog}.ns.e"
    create_merge_on_read_table(spark, name, "INT")
    write_equality_deletes(spark, name, {"a": [3, 9, 100], "b": [1, 4, 13]})
    # rows written after the equality deletes are not deleted by them (sequence numbers), even
    # with a deleted id, in a deleted partition
    spark.sql(f"INSERT INTO {name} VALUES (3, 'a', 'again'), (4, 'c', 'other partition')")
    expected = spark_rows(spark, name)
    assert (3, "a", "again") in expected and (9, "a", "v9") not in expected and (4, "c", "other partition") in expected
    table = java_table(spark, name)

    plan = http.post(f"{prefix_url}/namespaces/ns/tables/e/plan", json={}).json()
    assert {d["content"] for d in plan["delete-files"]} == {"position-deletes", "equality-deletes"}
    assert all(d["equality-ids"] == [1] for d in plan["delete-files"] if d["content"] == "equality-deletes")
    assert sorted(merge_on_read(plan)) == expected
    for row_filter, where in FILTER_CASES:
        server_plan = http.post(
            f"{prefix_url}/namespaces/ns/tables/e/plan", json={"filter": row_filter.model_dump(mode="json")}
        ).json()
        assert matching(merge_on_read(server_plan), row_filter) == spark_rows(spark, name, where), where
        assert server_planning(server_plan) == java_planning(spark, table, row_filter), where

    # PyIceberg cannot apply equality deletes; server planning makes it refuse exactly as client
    # planning does, instead of returning deleted rows
    with pytest.raises(ValueError, match="does not yet support equality deletes"):
        catalog.load_table("ns.e").scan().to_arrow()
    with pytest.raises(NotImplementedError, match="does not yet support equality deletes"):
        server_catalog(server, warehouse["name"]).load_table("ns.e").scan().to_arrow()
