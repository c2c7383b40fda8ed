"""The console in a real browser against a real ``lakekeeper serve``: what a user clicks through.

Embedded (SQLite) server only: the console reaches the store solely through the HTTP API, which
the catalog and management suites already run on both backends.
"""

from __future__ import annotations

import re
import time

import httpx
import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog

from lakekeeper_testing.oidc import OidcIssuer

pytestmark = pytest.mark.slow


def test_warehouse_table_snapshots_drop_and_undrop(server, page, tmp_path):
    page.goto(server.url + "/")  # / redirects to the console
    assert page.url.endswith("/ui/")
    assert page.locator("#bootstrapped").inner_text() == "yes"

    # create a file warehouse through the generated storage-profile form, soft deletion on
    page.click("nav >> text=Warehouses")
    page.click("#new-warehouse")
    page.fill("input[name='warehouse-name']", "ui_wh")
    page.select_option("#storage-type", "file")
    page.fill("input[name='profile.file.root']", str(tmp_path / "ui_wh"))
    page.select_option("select[name='delete-mode']", "soft")
    page.click("#create-warehouse")
    page.wait_for_selector(".flash.success")
    assert "Warehouse 'ui_wh' created." in page.locator(".flash.success").inner_text()
    warehouse_url = page.url

    # the API's own validation message reaches the user: a second warehouse with the same name
    page.goto(server.url + "/ui/warehouses/new")
    page.fill("input[name='warehouse-name']", "ui_wh")
    page.select_option("#storage-type", "file")
    page.fill("input[name='profile.file.root']", str(tmp_path / "other"))
    page.click("#create-warehouse")
    error = page.locator(".flash.error").inner_text()
    assert "ui_wh" in error and "HTTP 409" in error, error

    # a table with two snapshots, written by PyIceberg
    catalog = RestCatalog("ui", uri=server.catalog_url, warehouse="ui_wh")
    catalog.create_namespace("sales")
    schema = pa.schema([("id", pa.int64()), ("region", pa.string())])
    table = catalog.create_table("sales.orders", schema=schema)
    table.append(pa.table({"id": [1, 2], "region": ["eu", "us"]}, schema=schema))
    table.append(pa.table({"id": [3], "region": ["eu"]}, schema=schema))
    snapshot_ids = {str(s.snapshot_id) for s in table.refresh().snapshots()}

    # the tree shows the namespace, the namespace lists the table
    page.goto(warehouse_url)
    page.click(".sidebar a[data-ns='sales']")
    page.wait_for_selector("#tables")
    page.click("#tables >> text=orders")

    # table detail: schema, snapshots in the list and in the timeline, refs, metadata location
    assert page.locator("#schema tbody tr").count() == 2
    assert page.locator("#refs tbody tr").first.inner_text().startswith("main")
    assert page.locator("#metadata-location").inner_text().endswith(".metadata.json")
    page.click("#tab-history")
    page.wait_for_selector("#snapshot-timeline svg")
    listed = {row.get_attribute("id").removeprefix("snapshot-")
              for row in page.locator("#snapshot-list tbody tr").all()}
    assert listed == snapshot_ids
    dots = {dot.get_attribute("data-snapshot") for dot in page.locator("#snapshot-timeline circle").all()}
    assert dots == snapshot_ids

    # drop (soft) -> gone from the namespace, listed as deleted -> undrop -> back
    page.click("#tab-overview")
    page.click("#drop-table")
    page.wait_for_selector(".flash.success")
    assert page.locator("#tables >> text=orders").count() == 0
    page.goto(warehouse_url)
    page.click("button[data-undrop='orders']")
    assert "orders restored." in page.locator(".flash.success").inner_text()
    assert catalog.table_exists("sales.orders")
    page.click(".sidebar a[data-ns='sales']")
    assert page.locator("#tables >> text=orders").count() == 1

    # the connect-compute panel holds paste-ready code for this warehouse
    page.goto(warehouse_url)
    pyiceberg = page.locator("#snippet-pyiceberg").inner_text()
    assert f'uri="{server.catalog_url}"' in pyiceberg and 'warehouse="ui_wh"' in pyiceberg
    page.click("button[data-tab='2']")
    spark = page.locator("#snippet-spark").inner_text()
    assert server.catalog_url in spark and "ui_wh" in spark
    page.click("button[data-tab='3']")
    duckdb_sql = page.locator("#snippet-duckdb").inner_text()
    assert "ATTACH 'ui_wh'" in duckdb_sql
    # (tests/ui/test_console_snippets.py runs every snippet as copied)


def test_a_protected_table_cannot_be_dropped_until_it_is_unprotected(server, page, tmp_path):
    warehouse_id = httpx.post(server.url + "/management/v1/warehouse", json={
        "warehouse-name": "guarded", "storage-profile": {"type": "file", "root": str(tmp_path / "guarded")},
    }).json()["warehouse-id"]
    catalog = RestCatalog("guarded", uri=server.catalog_url, warehouse="guarded")
    catalog.create_namespace("ops")
    catalog.create_table("ops.ledger", schema=pa.schema([("id", pa.int64())]))

    page.goto(f"{server.url}/ui/warehouses/{warehouse_id}/table?ns=ops&name=ledger")
    assert page.locator("#protection").inner_text() == "not protected"
    page.click("#toggle-protection")
    assert "Table 'ops.ledger' is protected." in page.locator(".flash.success").inner_text()
    assert page.locator("#protection").inner_text().startswith("protected")
    assert page.locator("h1 .badge.protected").count() == 1

    # the drop is refused with the API's ErrorModel message; the table stays
    page.click("#drop-table")
    error = page.locator(".flash.error").inner_text()
    assert "is protected and cannot be dropped" in error and "TableProtected" in error and "HTTP 409" in error
    assert catalog.table_exists("ops.ledger")
    page.click(".crumbs >> text=ops")  # the namespace lists it as protected
    assert page.locator("#tables .badge.protected").count() == 1
    page.click("#tables >> text=ledger")

    page.click("#toggle-protection")
    assert "Table 'ops.ledger' is no longer protected." in page.locator(".flash.success").inner_text()
    assert page.locator("#protection").inner_text() == "not protected"
    page.click("#drop-table")
    assert "Table 'ledger' dropped." in page.locator(".flash.success").inner_text()
    assert not catalog.table_exists("ops.ledger")


def test_login_and_logout_against_the_oidc_issuer(page, lakekeeper_server_factory):
    with OidcIssuer(audience="lakekeeper") as idp:
        env = {"LAKEKEEPER__OPENID_PROVIDER_URI": idp.issuer, "LAKEKEEPER__OPENID_AUDIENCE": "lakekeeper"}
        with lakekeeper_server_factory(env) as srv:
            page.goto(srv.url + "/ui/warehouses")
            assert page.locator("#login").is_visible()
            page.click("#login")
            page.wait_for_selector("#username")  # the issuer's sign-in form
            assert page.url.startswith(idp.authorization_endpoint)
            assert "code_challenge_method=S256" in page.url
            page.fill("#username", "peter")
            page.click("#kc-login")
            # back in the console, on the page asked for, with the user's token
            page.wait_for_url(re.compile(r".*/ui/warehouses$"))
            assert page.locator("h1").inner_text() == "Warehouses"
            page.goto(srv.url + "/ui/")
            assert page.locator("#whoami-name").inner_text() == "Peter"
            cookie = next(c for c in page.context.cookies() if c["name"] == "lakekeeper_console")
            assert cookie["httpOnly"] and cookie["sameSite"] == "Lax" and cookie["path"] == "/ui"
            # the session cookie does not carry the token readably
            assert "peter" not in cookie["value"].lower()

            page.click("#logout")
            page.wait_for_selector("#signed-out")
            assert idp.logouts and idp.logouts[-1]["client_id"] == "lakekeeper"
            page.goto(srv.url + "/ui/")
            assert page.locator("#login").is_visible()


def test_an_expired_sign_in_goes_back_to_the_identity_provider(page, lakekeeper_server_factory):
    with OidcIssuer(audience="lakekeeper", token_lifetime=3) as idp:
        env = {"LAKEKEEPER__OPENID_PROVIDER_URI": idp.issuer, "LAKEKEEPER__OPENID_AUDIENCE": "lakekeeper"}
        with lakekeeper_server_factory(env) as srv:
            page.goto(srv.url + "/ui/login?next=/ui/projects")
            page.fill("#username", "peter")
            page.click("#kc-login")
            page.wait_for_url(re.compile(r".*/ui/projects$"))
            time.sleep(4)  # the token's lifetime
            page.goto(srv.url + "/ui/warehouses")
            page.wait_for_selector("#username")  # straight to the provider, no sign-in page in between
            page.fill("#username", "peter")
            page.click("#kc-login")
            page.wait_for_url(re.compile(r".*/ui/warehouses$"))
