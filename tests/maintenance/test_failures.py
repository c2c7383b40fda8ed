"""A failing maintenance job leaves the table valid and is retried per the queue rules
(``LAKEKEEPER__TASK_MAX_RETRIES``), on servers of their own; jobs authenticate like any client."""

from __future__ import annotations

import httpx
import pytest
from pyiceberg.catalog.rest import RestCatalog

from lakekeeper_testing.oidc import OidcIssuer
from lakekeeper_testing.services import free_port
from tests.maintenance.helpers import (
    MGMT,
    data_file_count,
    finished_attempts,
    new_warehouse,
    run_now,
    set_warehouse_policy,
    small_files_table,
    sorted_rows,
    table_tasks,
    task_details,
    wait_for,
)


def test_unreachable_catalog_fails_every_attempt_and_leaves_the_table_alone(make_server, tmp_path):
    """The planner schedules the table once maintenance is enabled; the job cannot reach the catalog
    (LAKEKEEPER__TABLE_MAINTENANCE__CATALOG_URI points at a closed port): it fails before starting
    Spark, twice, and the task ends FAILED. (The queue's planning and retries on both backends, at
    no Spark cost.)"""
    dead_catalog = f"http://127.0.0.1:{free_port()}/catalog"
    server = make_server(
        {"LAKEKEEPER__TASK_MAX_RETRIES": "2", "LAKEKEEPER__TABLE_MAINTENANCE__CATALOG_URI": dead_catalog}
    )
    warehouse_id, catalog = new_warehouse(server, tmp_path)
    table = small_files_table(catalog, "ns.events", snapshots=5, files=8)
    table_id = str(table.metadata.table_uuid)
    rows = sorted_rows(table)
    with httpx.Client(base_url=server.url, timeout=30) as client:
        assert set_warehouse_policy(client, warehouse_id, {"enabled": True}).status_code == 204
        task_id = wait_for(lambda: [t["task-id"] for t in table_tasks(client, warehouse_id, table_id)],
                           timeout=60, what="the planner to schedule the table")[0]  # fmt: skip
        details = wait_for(lambda: (d := task_details(client, warehouse_id, task_id))["status"] == "FAILED" and d,
                           timeout=120, what="the task to fail for good")  # fmt: skip
    attempts = finished_attempts(details)
    assert [(a["attempt"], a["status"]) for a in attempts] == [(1, "FAILED"), (2, "FAILED")]
    for attempt in attempts:
        assert f"catalog unreachable at {dead_catalog}" in attempt["message"]
    table = catalog.load_table("ns.events")
    assert len(table.metadata.snapshots) == 5 and data_file_count(table) == 8
    assert sorted_rows(table) == rows


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite"])
def test_job_failing_mid_way_leaves_a_valid_table_and_is_retried(make_server, tmp_path):
    """A real Spark failure after commits: with ``gc.enabled=false`` Iceberg compacts the table, then
    refuses to expire snapshots. Both attempts fail at expiry; the table stays readable with the
    same rows, compacted by the first attempt.

    The server requires tokens, so the job authenticates like any client: the OAuth2
    client-credentials grant (``LAKEKEEPER__TABLE_MAINTENANCE__CREDENTIAL`` + ``__OAUTH2_SERVER_URI``)
    against the test OIDC issuer. (Two Spark launches, running only the two procedures involved;
    SQLite only: the retry rules are the same engine on both backends and are covered on both above.)"""
    with OidcIssuer("maintenance", audience="lakekeeper", clients={"maintainer": "s3cret", "etl": "etl"}) as idp:
        server = make_server({
            "LAKEKEEPER__TASK_MAX_RETRIES": "2",
            "LAKEKEEPER__OPENID_PROVIDER_URI": idp.uri,
            "LAKEKEEPER__OPENID_AUDIENCE": "lakekeeper",
            "LAKEKEEPER__TABLE_MAINTENANCE__CREDENTIAL": "maintainer:s3cret",
            "LAKEKEEPER__TABLE_MAINTENANCE__OAUTH2_SERVER_URI": idp.token_endpoint,
            "LAKEKEEPER__TABLE_MAINTENANCE__SCOPE": "lakekeeper",
        })  # fmt: skip
        admin = {"Authorization": f"Bearer {idp.mint('admin')}"}
        with httpx.Client(base_url=server.url, timeout=30, headers=admin) as client:
            profile = {"type": "file", "root": str(tmp_path / "wh")}
            created = client.post(f"{MGMT}/warehouse", json={"warehouse-name": "secured", "storage-profile": profile})
            assert created.status_code in (200, 201), created.text
            warehouse_id = created.json()["warehouse-id"]
            catalog = RestCatalog("test", uri=server.catalog_url, warehouse="secured", credential="etl:etl",
                                  **{"oauth2-server-uri": idp.token_endpoint, "scope": "lakekeeper"})  # fmt: skip
            table = small_files_table(catalog, "ns.events", snapshots=4, files=6, properties={"gc.enabled": "false"})
            rows = sorted_rows(table)
            table_id = str(table.metadata.table_uuid)
            override = {"rewrite-data-files": {"min-input-files": 2}, "rewrite-manifests": {"enabled": False}}
            response = client.post(f"{MGMT}/warehouse/{warehouse_id}/table/{table_id}/maintenance", json=override)
            assert response.status_code == 200, response.text
            task_id = run_now(client, warehouse_id, table_id)
            details = wait_for(lambda: (d := task_details(client, warehouse_id, task_id))["status"] == "FAILED" and d,
                               timeout=300, what="the task to fail for good")  # fmt: skip
            # the catalog saw the job under its own identity (users register on their first request)
            job_user = client.get(f"{MGMT}/user/oidc~service-account-maintainer")
        attempts = finished_attempts(details)
        assert [(a["attempt"], a["status"]) for a in attempts] == [(1, "FAILED"), (2, "FAILED")]
        for attempt in attempts:
            assert attempt["message"].startswith("MaintenanceJobFailed: expire_snapshots failed on ns.events:")
            assert "GC is disabled" in attempt["message"]
        assert job_user.status_code == 200, job_user.text
        table = catalog.load_table("ns.events")
        assert sorted_rows(table) == rows
        assert data_file_count(table) < 6  # the compaction of the first attempt was committed
        assert len(table.metadata.snapshots) > 4  # and nothing was expired
