"""The console's pages on realistic data, as docs/console.md shows them: the example lakehouse pipeline's
bronze, silver and gold tables written by Spark (examples/lakehouse-pipeline), a clean-up commit and a
tag on top, a dropped backup table, the openfga authorizer, and bob with partial access.

``LAKEKEEPER_UI_SCREENSHOT_DIR=docs/screenshots`` writes the PNGs there; every page is also checked
for what must never show (raw JSON, attrs placeholders, %1F, ISO timestamps, error pages).
"""

from __future__ import annotations

import importlib.util
import re
import sys
import uuid
from pathlib import Path

import httpx
import pytest

from lakekeeper_testing.oidc import OidcIssuer
from lakekeeper_testing.openfga_double import OpenFgaDouble

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "plugins" / "authz-openfga" / "tests"))
from openfga_servers import openfga_server  # noqa: E402
from permissions_setup import Caller  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.spark]
ISO_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d")


def load_pipeline():
    spec = importlib.util.spec_from_file_location("lakehouse_pipeline",
                                                  ROOT / "examples" / "lakehouse-pipeline" / "pipeline.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def check(page) -> str:
    """The page's text, after checking it shows nothing broken, blank or raw."""
    text = page.locator("main").inner_text()
    assert page.locator("h1").count() and page.locator("h1").first.inner_text().strip(), page.url
    for raw in ("NOTHING", "%1F", "Traceback", "InternalServerError", "undefined"):
        assert raw not in page.content(), (raw, page.url)
    assert not ISO_TIMESTAMP.search(text), (ISO_TIMESTAMP.search(text).group(0), page.url)
    return text


def test_screenshots_of_every_page_with_the_pipelines_tables(
    spark, browser, screenshot, tmp_path, lakekeeper_server_factory
):
    pipeline = load_pipeline()
    double = OpenFgaDouble().start()
    try:
        with OidcIssuer(audience="lakekeeper", token_lifetime=7200) as idp:
            settings = {"LAKEKEEPER__OPENFGA__API_KEY": "fga-api-key", "LAKEKEEPER__EMBEDDED_QUICKSTART": "false"}
            with openfga_server(lakekeeper_server_factory,
                                "sqlite", double, idp, f"lk-{uuid.uuid4().hex[:8]}", **settings) as server:
                run(server, idp, pipeline, spark, browser, screenshot, tmp_path)
    finally:
        double.stop()


def run(server, idp, pipeline, spark, browser, screenshot, tmp_path):
    alice, bob = Caller(server, idp, "alice"), Caller(server, idp, "bob")
    named = {"Authorization": f"Bearer {idp.mint('alice', {'name': 'Alice', 'email': 'alice@example.com'})}"}
    assert httpx.post(server.url + "/management/v1/bootstrap", json={"accept-terms-of-use": True}, headers=named,
                      timeout=30).status_code == 204
    made = alice.post("/management/v1/warehouse", json={
        "warehouse-name": "lakehouse", "storage-profile": {"type": "file", "root": str(tmp_path / "lakehouse")},
        "delete-profile": {"type": "soft", "expiration-seconds": 7 * 24 * 3600}})
    assert made.status_code == 201, made.text
    warehouse_id = made.json()["warehouse-id"]

    # the pipeline's two batches through bronze, silver and gold (Spark, as alice), then a clean-up commit,
    # a release tag, and a backup table that is dropped again
    token = idp.mint("alice", expires_in=7200)
    spark._jsparkSession.sessionState().catalogManager().reset()
    result = pipeline.run_pipeline(spark, server.catalog_url, "lakehouse", spark_catalog="shots", token=token)
    assert result.engines_agree, result.gold_by_engine
    spark.sql("DELETE FROM shots.silver.orders WHERE status = 'cancelled' AND quantity = 1")
    spark.sql("ALTER TABLE shots.silver.orders CREATE TAG `release-2025-04`")
    spark.sql("CREATE TABLE shots.silver.orders_backup USING iceberg AS SELECT * FROM shots.silver.orders")
    spark.sql("DROP TABLE shots.silver.orders_backup")

    # bob: a member of role analysts, which may read gold; he may see silver's tables but not read them
    role = alice.post("/management/v1/role", json={"name": "analysts", "description": "read the gold layer"}).json()
    bob_token = idp.mint("bob", {"name": "Bob", "email": "bob@example.com"})
    assert httpx.post(server.url + "/management/v1/user", json={}, timeout=30,
                      headers={"Authorization": f"Bearer {bob_token}"}).status_code in (200, 201)
    alice.post(f"/management/v1/role/{role['id']}/members", json={"members": [{"type": "user", "id": bob.user_id}]})
    namespaces = {name: alice.get(f"/catalog/v1/{warehouse_id}/namespaces/{name}", params={"returnUuid": "true"})
                  .json()["namespace-uuid"] for name in ("silver", "gold")}
    assert alice.grant(f"/namespace/{namespaces['gold']}", writes=[{"type": "select", "role": role["id"]}]) \
        .status_code == 204
    assert alice.grant(f"/namespace/{namespaces['silver']}", writes=[{"type": "describe", "user": bob.user_id}]) \
        .status_code == 204

    daily_sales = alice.get(f"/catalog/v1/{warehouse_id}/namespaces/gold/tables/daily_sales").json()["metadata"]

    context = browser.new_context(viewport={"width": 1360, "height": 900})
    page = context.new_page()
    page.set_default_timeout(60000)
    page.goto(server.url + "/ui/")
    assert page.locator("#nav a").count() == 0
    screenshot(page, "login")
    page.click("#login")
    page.fill("#username", "alice")
    page.click("#kc-login")
    page.wait_for_url(re.compile(r".*/ui/$"))
    base = f"{server.url}/ui/warehouses/{warehouse_id}"
    orders = f"{base}/table?ns=silver&name=orders"
    pages = [
        ("server", f"{server.url}/ui/", "lakehouse"),
        ("projects", f"{server.url}/ui/projects", "current"),
        ("warehouses", f"{server.url}/ui/warehouses", "lakehouse"),
        ("warehouse-create", f"{server.url}/ui/warehouses/new", "e.g."),
        ("warehouse", base, "orders_backup"),
        ("namespace", f"{base}/namespace?ns=silver", "customers"),
        ("table", orders, "release-2025-04"),
        ("table-data", orders + "&tab=data", "order_id"),
        ("table-history", orders + "&tab=history", "added channel"),
        ("view", f"{base}/view?ns=gold&name=category_revenue", "SELECT"),
        ("search", f"{base}/search?q=orders", "silver.orders"),
        ("statistics", f"{base}/statistics", "Requests per hour"),
        ("tasks", f"{base}/tasks", "orders_backup"),
        ("identities", f"{server.url}/ui/identities", "analysts"),
        ("role", f"{server.url}/ui/roles/{role['id']}", "Bob"),
        ("permissions", f"{server.url}/ui/permissions/table?id={daily_sales['table-uuid']}&warehouse={warehouse_id}"
                        f"&label=table+gold.daily_sales&ns=gold&principal-type=user&principal=oidc~bob",
         "through role analysts, granted on namespace gold"),
    ]
    for name, url, expected in pages:
        page.goto(url)
        if name == "table-history":
            page.wait_for_selector("#snapshot-timeline svg")
        text = check(page)
        assert expected in text, (name, expected)
        screenshot(page, name)

    # the search box suggests as you type
    page.goto(f"{base}/namespace?ns=gold")
    page.fill("#search-form input[name=q]", "order")
    page.wait_for_selector("#search-form .suggestions:not([hidden]) a")
    assert "silver.orders" in page.locator("#search-form .suggestions").inner_text()
    screenshot(page, "search-suggestions")

    # bob: what partial access looks like
    bob_context = browser.new_context(viewport={"width": 1360, "height": 900})
    bob_page = bob_context.new_page()
    bob_page.set_default_timeout(60000)
    bob_page.goto(f"{base}/search?q=orders")
    bob_page.click("#login")
    bob_page.fill("#username", "bob")
    bob_page.click("#kc-login")
    bob_page.wait_for_selector("#search-results")
    found = check(bob_page)
    assert "silver.orders" in found and "bronze" not in found
    screenshot(bob_page, "partial-access-search")
    bob_page.goto(orders + "&tab=data")
    assert "Not allowed to read data" in check(bob_page)
    screenshot(bob_page, "partial-access")
    bob_context.close()
    context.close()
    assert httpx.get(server.url + "/health").status_code == 200
