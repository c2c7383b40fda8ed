"""Maintenance jobs authenticate to the catalog like any client."""

from __future__ import annotations

import httpx
import pytest
from pyiceberg.catalog.rest import RestCatalog

from lakekeeper_host.testing.oidc import OidcIssuer
from tests.maintenance.helpers import MGMT, data_file_count, run_now, small_files_table, sorted_rows, task_details, wait_for


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite"])
def test_job_authenticates_to_the_catalog_with_client_credentials(make_server, tmp_path):
    """On a server that requires tokens, the job gets its own token by the OAuth2 client-credentials
    grant (``LAKEKEEPER__TABLE_MAINTENANCE__CREDENTIAL`` + ``__OAUTH2_SERVER_URI``), like any client;
    the issuer is the test OIDC provider."""
    with OidcIssuer("maintenance", audience="lakekeeper", clients={"maintainer": "s3cret", "etl": "etl"}) as idp:
        server = make_server({
            "LAKEKEEPER__OPENID_PROVIDER_URI": idp.uri,
            "LAKEKEEPER__OPENID_AUDIENCE": "lakekeeper",
            "LAKEKEEPER__TABLE_MAINTENANCE__CREDENTIAL": "maintainer:s3cret",
            "LAKEKEEPER__TABLE_MAINTENANCE__OAUTH2_SERVER_URI": idp.token_endpoint,
            "LAKEKEEPER__TABLE_MAINTENANCE__SCOPE": "lakekeeper",
        })  # fmt: skip
        headers = {"Authorization": f"Bearer {idp.mint('admin')}"}
        with httpx.Client(base_url=server.url, timeout=30, headers=headers) as client:
            created = client.post(f"{MGMT}/warehouse", json={
                "warehouse-name": "secured", "storage-profile": {"type": "file", "root": str(tmp_path / "wh")}})  # fmt: skip
            assert created.status_code in (200, 201), created.text
            warehouse_id = created.json()["warehouse-id"]
            catalog = RestCatalog("test", uri=server.catalog_url, warehouse="secured", credential="etl:etl",
                                  **{"oauth2-server-uri": idp.token_endpoint, "scope": "lakekeeper"})  # fmt: skip
            table = small_files_table(catalog, "ns.events", snapshots=6, files=10)
            rows = sorted_rows(table)
            task_id = run_now(client, warehouse_id, str(table.metadata.table_uuid))
            details = wait_for(lambda: (d := task_details(client, warehouse_id, task_id))["status"] in
                               ("SUCCESS", "FAILED") and d, timeout=300, what="the run to finish")  # fmt: skip
            # the catalog saw the job under its own identity (users register on their first request)
            job_user = client.get(f"{MGMT}/user/oidc~service-account-maintainer")
        assert details["status"] == "SUCCESS", details.get("message")
        assert details["execution-details"]["data-files-before"] == 10
        assert job_user.status_code == 200, job_user.text
        table = catalog.load_table("ns.events")
        assert sorted_rows(table) == rows and data_file_count(table) < 10
