"""Stored metrics reports (issue 4): ``POST .../tables/{t}/metrics`` keeps ScanReports and
CommitReports per table, bounded by count and age, and
``GET /management/v1/warehouse/{id}/table/{table-id}/metrics`` lists them with filters and pages.

The reports come from the real Java client (Spark) and, for exact shapes, from raw HTTP.
Every scenario runs on SQLite and PostgreSQL.
"""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime

import httpx
import pytest
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

from lakekeeper_testing.server import CatalogServer, create_file_warehouse

SCHEMA = Schema(NestedField(1, "id", LongType(), required=False))


def scan_report(snapshot_id: int, table: str = "ns.t") -> dict:
    return {
        "report-type": "scan-report",
        "table-name": table,
        "snapshot-id": snapshot_id,
        "filter": {"type": "gt", "term": "id", "value": 3},
        "schema-id": 0,
        "projected-field-ids": [1],
        "projected-field-names": ["id"],
        "metrics": {
            "total-planning-duration": {"count": 1, "time-unit": "nanoseconds", "total-duration": 2_000_000},
            "result-data-files": {"unit": "count", "value": 2},
        },
        "metadata": {"engine": "pytest"},
    }


def commit_report(snapshot_id: int, sequence_number: int = 1, table: str = "ns.t") -> dict:
    return {
        "report-type": "commit-report",
        "table-name": table,
        "snapshot-id": snapshot_id,
        "sequence-number": sequence_number,
        "operation": "append",
        "metrics": {"added-data-files": {"unit": "count", "value": 1}, "added-records": {"unit": "count", "value": 10}},
    }


class Tables:
    """One fresh warehouse on a server: make tables, post reports, list them."""

    def __init__(self, server: CatalogServer, root: str):
        from pyiceberg.catalog.rest import RestCatalog

        name = f"wh-{uuid.uuid4().hex[:8]}"
        self.warehouse_id = create_file_warehouse(server.url, name, root)
        self.warehouse_name = name
        self.catalog = RestCatalog("metrics", uri=server.catalog_url, warehouse=name)
        self.catalog.create_namespace("ns")
        self.http = httpx.Client(base_url=server.url, timeout=60)

    def create(self, name: str = "t") -> str:
        """A table; returns its id (the table UUID)."""
        return str(self.catalog.create_table(f"ns.{name}", SCHEMA).metadata.table_uuid)

    def post(self, report: dict, table: str = "t") -> httpx.Response:
        return self.http.post(f"/catalog/v1/{self.warehouse_id}/namespaces/ns/tables/{table}/metrics", json=report)

    def listing(self, table_id: str, **params) -> httpx.Response:
        return self.http.get(f"/management/v1/warehouse/{self.warehouse_id}/table/{table_id}/metrics", params=params)

    def reports(self, table_id: str, **params) -> list[dict]:
        response = self.listing(table_id, **params)
        assert response.status_code == 200, response.text
        return response.json()["reports"]


@pytest.fixture
def tables(server, tmp_path):
    made = Tables(server, str(tmp_path))
    yield made
    made.http.close()


def test_reports_are_stored_and_listed_newest_first(tables):
    table_id = tables.create()
    other_id = tables.create("other")
    posted = [scan_report(11), commit_report(12), scan_report(12)]
    for report in posted:
        assert tables.post(report).status_code == 204
    assert tables.post(commit_report(99, table="ns.other"), table="other").status_code == 204

    listed = tables.reports(table_id)
    assert [r["report"] for r in listed] == posted[::-1]  # exactly what was sent, newest first
    assert [(r["report-type"], r["snapshot-id"]) for r in listed] == [
        ("scan-report", 12), ("commit-report", 12), ("scan-report", 11)
    ]
    assert len({r["report-id"] for r in listed}) == 3
    for r in listed:  # an ISO-8601 UTC timestamp of when the server stored it
        created_at = datetime.fromisoformat(r["created-at"].replace("Z", "+00:00"))
        assert abs(created_at - datetime.now(UTC)).total_seconds() < 600
    # reports belong to their table
    assert [r["snapshot-id"] for r in tables.reports(other_id)] == [99]


def test_filters(tables):
    table_id = tables.create()
    for report in (scan_report(1), commit_report(1), commit_report(2, 2), scan_report(2)):
        assert tables.post(report).status_code == 204

    assert [r["snapshot-id"] for r in tables.reports(table_id, type="commit")] == [2, 1]
    assert [r["snapshot-id"] for r in tables.reports(table_id, type="scan-report")] == [2, 1]
    of_snapshot_2 = tables.reports(table_id, **{"snapshot-id": 2})
    assert [r["report-type"] for r in of_snapshot_2] == ["scan-report", "commit-report"]
    assert [r["report-type"] for r in tables.reports(table_id, type="scan", **{"snapshot-id": 1})] == ["scan-report"]

    # time windows: everything was created after a minute ago and before a minute from now
    now_ms = int(time.time() * 1000)
    assert len(tables.reports(table_id, **{"created-after": now_ms - 60_000})) == 4
    assert tables.reports(table_id, **{"created-after": now_ms + 60_000}) == []
    assert tables.reports(table_id, **{"created-before": "2000-01-01T00:00:00Z"}) == []
    stored = tables.reports(table_id)
    oldest, newest = stored[-1]["created-at"], stored[0]["created-at"]
    assert len(tables.reports(table_id, **{"created-after": oldest})) == 4  # inclusive lower bound
    before_newest = [r["report-id"] for r in stored if r["created-at"] < newest]  # exclusive upper bound
    assert [r["report-id"] for r in tables.reports(table_id, **{"created-before": newest})] == before_newest

    # bad filters are 400s that say what is wrong
    for params, words in (
        ({"type": "plan"}, "type must be 'scan' or 'commit'"),
        ({"created-after": "yesterday"}, "created-after must be an ISO-8601 timestamp"),
        ({"snapshot-id": "abc"}, "snapshot-id"),
        ({"pageToken": "!!not-a-token!!"}, "Invalid pageToken"),
    ):
        response = tables.listing(table_id, **params)
        assert response.status_code == 400, (params, response.text)
        assert words in response.json()["error"]["message"], response.json()


def test_pagination_is_keyset_and_complete(tables):
    table_id = tables.create()
    for snapshot_id in range(7):
        assert tables.post(commit_report(snapshot_id, snapshot_id + 1)).status_code == 204

    seen, token, pages = [], None, 0
    while True:
        params = {"pageSize": 3} | ({"pageToken": token} if token else {})
        body = tables.listing(table_id, **params).json()
        assert len(body["reports"]) <= 3
        seen += [r["snapshot-id"] for r in body["reports"]]
        pages += 1
        token = body["next-page-token"]
        if token is None:
            break
        if pages == 1:  # a report arriving between pages does not shift the next page
            assert tables.post(commit_report(100, 101)).status_code == 204
    assert pages == 3
    assert seen == [6, 5, 4, 3, 2, 1, 0]  # newest first, nothing twice, nothing lost
    assert [r["snapshot-id"] for r in tables.reports(table_id, pageSize=1)] == [100]


def test_bad_reports_and_unknown_tables(tables, server):
    table_id = tables.create()
    cases = [
        ({"report-type": "plan-report"}, "Unknown report-type 'plan-report'"),
        ({k: v for k, v in commit_report(1).items() if k != "operation"}, "Invalid commit-report: missing operation"),
        ({**scan_report(1), "snapshot-id": "one"}, "snapshot-id must be an integer"),
        ({**commit_report(1), "metrics": []}, "metrics must be an object"),
        ([commit_report(1)], "must be a JSON object"),
    ]
    for body, message in cases:
        response = tables.post(body)
        assert response.status_code == 400, response.text
        error = response.json()["error"]
        assert message in error["message"] and error["code"] == 400
    assert tables.reports(table_id) == []  # nothing half-stored

    missing = tables.post(commit_report(1), table="missing")
    assert (missing.status_code, missing.json()["error"]["type"]) == (404, "NoSuchTableException")
    unknown = tables.listing(str(uuid.uuid4()))
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == 404
    elsewhere = tables.http.get(f"/management/v1/warehouse/{uuid.uuid4()}/table/{table_id}/metrics")
    assert elsewhere.status_code == 404


def test_reports_go_with_their_table(tables, server):
    def stored(table_id: str) -> int:
        return server.fetch_val("SELECT COUNT(*) FROM metrics_report WHERE tabular_id = :t", {"t": table_id})

    dropped, purged, in_namespace = tables.create("dropped"), tables.create("purged"), tables.create("in_ns")
    for name in ("dropped", "purged", "in_ns"):
        assert tables.post(commit_report(1, table=f"ns.{name}"), table=name).status_code == 204
    assert stored(dropped) == stored(purged) == stored(in_namespace) == 1

    tables.catalog.drop_table("ns.dropped")
    tables.catalog.purge_table("ns.purged")
    assert tables.listing(dropped).status_code == 404 and tables.listing(purged).status_code == 404
    assert stored(dropped) == stored(purged) == 0
    # a recursive namespace drop takes its tables' reports too
    dropped_namespace = tables.http.delete(
        f"/catalog/v1/{tables.warehouse_id}/namespaces/ns", params={"recursive": "true"}
    )
    assert dropped_namespace.status_code == 204
    assert stored(in_namespace) == 0


# ---------------------------------------------------------------- retention


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def bounded_server(request, lakekeeper_server_factory):
    """At most 3 reports per table, none older than 2 seconds."""
    env = {"LAKEKEEPER__METRICS_REPORTS__MAX_REPORTS_PER_TABLE": "3", "LAKEKEEPER__METRICS_REPORTS__MAX_AGE": "2s"}
    server = lakekeeper_server_factory(env, backend=request.param)
    yield server
    server.close()


def test_retention_keeps_the_newest_per_table_and_expires_old_ones(bounded_server, tmp_path):
    tables = Tables(bounded_server, str(tmp_path))
    table_id, other_id = tables.create(), tables.create("other")
    for snapshot_id in range(5):
        assert tables.post(commit_report(snapshot_id, snapshot_id + 1)).status_code == 204
    assert tables.post(scan_report(7, table="ns.other"), table="other").status_code == 204
    # the count bound is per table: the oldest two of t are gone, other keeps its one
    assert [r["snapshot-id"] for r in tables.reports(table_id)] == [4, 3, 2]
    assert [r["snapshot-id"] for r in tables.reports(other_id)] == [7]

    # the age bound: the housekeeping loop removes reports older than max-age (2s here)
    deadline = time.monotonic() + 60
    while (tables.reports(table_id) or tables.reports(other_id)) and time.monotonic() < deadline:
        time.sleep(0.25)
    assert tables.reports(table_id) == [] and tables.reports(other_id) == []
    tables.http.close()


@pytest.mark.slow  # own server processes or waits out timeouts
def test_disabled_reports_are_accepted_and_discarded(tmp_path, lakekeeper_server_factory):
    server = lakekeeper_server_factory({"LAKEKEEPER__METRICS_REPORTS__ENABLED": "false"})
    try:
        tables = Tables(server, str(tmp_path))
        table_id = tables.create()
        assert tables.post(commit_report(1)).status_code == 204  # Lakekeeper's behaviour
        assert tables.post({"report-type": "nope"}).status_code == 400  # still validated
        assert tables.reports(table_id) == []
        tables.http.close()
    finally:
        server.close()


# ---------------------------------------------------------------- from the Java client


@pytest.mark.spark
def test_spark_reports_its_commits_and_scans(spark, spark_catalog, catalog, server, warehouse, http):
    spark.sql(f"CREATE NAMESPACE {spark_catalog}.ns")
    spark.sql(f"CREATE TABLE {spark_catalog}.ns.events (id BIGINT, kind STRING) USING iceberg")
    spark.sql(f"INSERT INTO {spark_catalog}.ns.events VALUES (1, 'a'), (2, 'b'), (3, 'a')")
    assert spark.sql(f"SELECT count(*) FROM {spark_catalog}.ns.events WHERE kind = 'a'").collect()[0][0] == 2

    table = catalog.load_table("ns.events")
    url = f"/management/v1/warehouse/{warehouse['id']}/table/{table.metadata.table_uuid}/metrics"
    reports = http.get(url).json()["reports"]
    commits = [r for r in reports if r["report-type"] == "commit-report"]
    scans = [r for r in reports if r["report-type"] == "scan-report"]
    assert commits and scans, reports
    commit = commits[-1]["report"]
    assert commit["snapshot-id"] == table.current_snapshot().snapshot_id
    assert commit["operation"] == "append" and commit["table-name"].endswith("ns.events")
    assert commit["metrics"]["added-records"]["value"] == 3
    scan = scans[0]["report"]
    assert scan["snapshot-id"] == table.current_snapshot().snapshot_id
    assert scan["filter"] != {"type": "true"} and "kind" in str(scan["filter"])
    # the filters find them: by type and by the snapshot the reports are about
    assert {r["report-type"] for r in http.get(url, params={"type": "commit"}).json()["reports"]} == {"commit-report"}
    by_snapshot = http.get(url, params={"snapshot-id": table.current_snapshot().snapshot_id}).json()["reports"]
    assert {r["report-type"] for r in by_snapshot} == {"commit-report", "scan-report"}
