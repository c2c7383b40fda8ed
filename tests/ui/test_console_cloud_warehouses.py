"""Cloud warehouses created through the console's generated storage forms, against real local
emulators (Azurite for ADLS, SeaweedFS for S3, fake-gcs-server for GCS; skipped when not
installed). Creating a warehouse makes the server probe the storage with the given credential, so
a created warehouse proves the form built a body the plugin accepts and that works. GCS tokens come
from the GCS plugin's STS double (plugins/storage-gcs/tests/sts_double.py): no Google token
endpoint can run here."""

from __future__ import annotations

import html
import json
import re
import sys
from pathlib import Path

import httpx
import pytest

from lakekeeper_testing.server import CatalogServer
from lakekeeper_testing.services import FakeGcsServer, service_or_skip

pytestmark = pytest.mark.slow


def post_new_warehouse(server: CatalogServer, fields: dict[str, str]) -> httpx.Response:
    """The new-warehouse form posted with ``fields`` (and its CSRF token); the page that follows."""
    with httpx.Client(base_url=server.url, timeout=120) as console:
        form = console.get("/ui/warehouses/new")
        csrf = re.search(r'name="csrf_token" value="([^"]+)"', form.text).group(1)
        return console.post("/ui/warehouses/new", data={"csrf_token": csrf, **fields}, follow_redirects=True)


def test_an_adls_warehouse_is_created_in_the_browser(server, page, azurite):
    pytest.importorskip("lakekeeper_storage_adls")
    page.goto(server.url + "/ui/warehouses/new")
    page.fill("input[name='warehouse-name']", "adls_wh")
    page.select_option("#storage-type", "adls")
    page.fill("input[name='profile.adls.account-name']", azurite.account)
    page.fill("input[name='profile.adls.filesystem']", "lakekeeper")
    page.fill("input[name='profile.adls.endpoint']", azurite.blob_endpoint)
    page.fill("input[name='profile.adls.sas-scope']", "filesystem")  # Azurite has no directory SAS
    # the credential's fields appear for the chosen kind only
    key_input = page.locator("input[name='credential.adls.shared-access-key.key']")
    assert not key_input.is_visible()
    page.select_option("select[name='credential-variant.adls']", "credential.adls.shared-access-key")
    key_input.fill(azurite.account_key)
    page.click("#create-warehouse")
    page.wait_for_selector(".flash")
    assert "Warehouse 'adls_wh' created." in page.locator(".flash.success").inner_text()
    fields = page.locator("#storage-profile dt").all_inner_texts()
    values = dict(zip(fields, page.locator("#storage-profile dd").all_inner_texts(), strict=True))
    assert values["type"] == "adls" and values["filesystem"] == "lakekeeper"  # readable fields, not JSON
    assert azurite.account_key not in page.content()  # the key never comes back


def test_an_s3_warehouse_is_created_from_the_form(server, seaweed_two_users):
    pytest.importorskip("lakekeeper_storage_s3")
    seaweed = seaweed_two_users
    created = post_new_warehouse(server, {
        "warehouse-name": "s3_wh", "storage-type": "s3",
        "profile.s3.bucket": "lakekeeper", "profile.s3.region": seaweed.region,
        "profile.s3.endpoint": seaweed.endpoint, "profile.s3.path-style-access": "true",
        "profile.s3.flavor": "s3-compat", "profile.s3.key-prefix": "from-console",
        "credential-variant.s3": "credential.s3.access-key",
        "credential.s3.access-key.aws-access-key-id": seaweed.access_key,
        "credential.s3.access-key.aws-secret-access-key": seaweed.secret_key,
        # the other plugins' fields are posted empty, as the browser does
        "profile.adls.account-name": "", "profile.file.root": "",
    })  # fmt: skip
    assert "Warehouse &#39;s3_wh&#39; created." in created.text, created.text[-2000:]
    profile = html.unescape(created.text.split('id="storage-profile"')[1].split("</dl>")[0])
    assert "<dt>bucket</dt><dd>lakekeeper</dd>" in profile and "<dt>key prefix</dt><dd>from-console</dd>" in profile
    assert seaweed.secret_key not in created.text


def test_a_gcs_warehouse_is_created_from_the_form(lakekeeper_server_factory):
    pytest.importorskip("lakekeeper_storage_gcs")
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "plugins" / "storage-gcs" / "tests"))
    from sts_double import StsDouble

    fake_gcs = service_or_skip(FakeGcsServer(buckets=["console-gcs"]))
    sts = StsDouble().start()
    try:
        env = {"LAKEKEEPER__GCS_STORAGE_ENDPOINT": fake_gcs.endpoint, "LAKEKEEPER__GCS_STS_ENDPOINT": sts.sts_endpoint}
        key = sts.service_account_key()
        with lakekeeper_server_factory(env) as server:
            created = post_new_warehouse(server, {
                "warehouse-name": "gcs_wh", "storage-type": "gcs",
                "profile.gcs.bucket": "console-gcs", "profile.gcs.key-prefix": "from-console",
                "credential-variant.gcs": "credential.gcs.service-account-key",
                "credential.gcs.service-account-key.key": json.dumps(key),  # pasted as the JSON key file
            })
            assert "Warehouse &#39;gcs_wh&#39; created." in created.text, created.text[-2000:]
            profile = html.unescape(created.text.split('id="storage-profile"')[1].split("</dl>")[0])
            assert "<dt>bucket</dt><dd>console-gcs</dd>" in profile
            assert "PRIVATE KEY" not in created.text
    finally:
        sts.close()
        fake_gcs.close()
