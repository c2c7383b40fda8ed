"""The console as a data team uses it every day, in headless Chromium, on SQLite and PostgreSQL (issue 33):
a newcomer's warehouse (hints, readable profiles, one timestamp format, readable namespace URLs, the
project named the same everywhere, confirmations that say what is lost, undrop from where a drop lands),
a table's Data and History tabs, the search box and the warehouse statistics."""

from __future__ import annotations

import re
import time

import httpx
import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.types import DoubleType

pytestmark = pytest.mark.slow

UTC_STAMP = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$")
SCHEMA = pa.schema([("id", pa.int64()), ("region", pa.string())])


def confirm_text(page, click: str, accept: bool) -> str:
    """Click ``click``, accept or decline the confirmation it asks for, return its question."""
    page.dialogs.update(accept=accept, asked=[])
    try:
        page.click(click)
        page.wait_for_load_state()
    finally:
        page.dialogs["accept"] = True
    assert page.dialogs["asked"], f"{click} asked nothing"
    return page.dialogs["asked"][0]


def test_a_newcomer_creates_a_warehouse_and_drops_and_undrops_a_table(backend_server, page, tmp_path):
    server = backend_server
    page.goto(server.url + "/ui/warehouses/new")
    assert "NOTHING" not in page.content()
    fields = page.locator("#warehouse-form label.field")
    hints = page.locator("#warehouse-form label.field .hint")
    assert fields.count() > 20 and hints.count() == fields.count()  # every field, every storage type
    assert all("e.g." in text for text in hints.all_inner_texts())
    assert page.locator("input[name='profile.file.root']").get_attribute("placeholder") == "/srv/lakehouse/demo"

    name = f"shop_{server.backend}"
    page.fill("input[name='warehouse-name']", name)
    page.select_option("#storage-type", "file")
    page.fill("input[name='profile.file.root']", str(tmp_path / name))
    page.click("#create-warehouse")
    page.wait_for_selector(".flash.success")
    warehouse_url = page.url

    # profiles as fields, the deletion rule in words, an explained empty soft-deleted section
    storage = page.locator("#storage-profile").inner_text()
    assert "root" in storage and str(tmp_path / name) in storage and "{" not in storage
    assert "deleted at once" in page.locator("#delete-profile").inner_text()
    assert "Nothing will appear here" in page.locator("#hard-delete-note").inner_text()

    # the project has one name in the header and in the list, where it is marked as the current one
    header = page.locator("#current-project strong").inner_text()
    page.goto(server.url + "/ui/projects")
    current = page.locator("#current-project-row td").first.inner_text()
    assert current.startswith(header) and "current" in current

    # namespaces: readable URLs (one ns= per level), the same page when reloaded
    page.goto(warehouse_url)
    page.fill("form[action$='/namespaces'] input[name=name]", "sales")
    page.click("text=Create namespace")
    page.fill("form[action$='/namespaces'] input[name=name]", "emea")
    page.click("text=Create child namespace")
    page.wait_for_selector("h1:has-text('Namespace sales.emea')")
    assert "ns=sales&ns=emea" in page.url and "%1F" not in page.url
    page.goto(page.url)
    assert page.locator("h1").inner_text().startswith("Namespace sales.emea")
    assert "%1F" not in page.content()

    catalog = RestCatalog("newcomer", uri=server.catalog_url, warehouse=name)
    table = catalog.create_table(("sales", "emea", "orders"), schema=SCHEMA)
    table.append(pa.table({"id": [1, 2], "region": ["eu", "uk"]}, schema=SCHEMA))

    # soft deletion switched on from the warehouse page
    page.goto(warehouse_url)
    page.fill("form:has(#enable-soft-delete) input[name=expiration-seconds]", "3600")
    page.click("#enable-soft-delete")
    assert "kept restorable for 1 hour" in page.locator("#delete-profile").inner_text()

    # the drop says what is lost; the page it lands on offers the undrop
    page.goto(f"{server.url}/ui/warehouses/{page.url.split('/warehouses/')[1].split('#')[0]}/table?ns=sales&ns=emea&name=orders")
    assert UTC_STAMP.match(page.locator("#last-updated").inner_text())
    question = confirm_text(page, "#drop-table", accept=False)
    assert "restorable with Undrop for 1 hour" in question
    assert catalog.table_exists(("sales", "emea", "orders"))  # a declined confirmation changes nothing
    confirm_text(page, "#drop-table", accept=True)
    assert "ns=sales&ns=emea" in page.url
    assert "stays restorable for 1 hour" in page.locator("#dropped").inner_text()
    page.click("#undo-drop")
    assert "orders restored." in page.locator(".flash.success").inner_text()
    assert catalog.table_exists(("sales", "emea", "orders"))

    # dropped again, it waits in the warehouse's list; Run now on its expiry says the undrop window ends
    page.goto(page.url.split("/namespace")[0] + "/table?ns=sales&ns=emea&name=orders")
    confirm_text(page, "#drop-table", accept=True)
    page.goto(warehouse_url)
    dropped_at = page.locator("#deleted tbody tr").first.locator("td").nth(2).inner_text()
    assert UTC_STAMP.match(dropped_at), dropped_at
    page.click("#connect button[data-tab='1']")
    page.click(".sidebar-links >> text=Task queues")
    question = confirm_text(page, "button[data-task-action='run-now']", accept=False)
    assert "undrop window ends now" in question and "sales.emea.orders" in question
    assert UTC_STAMP.match(page.locator("#tasks tbody tr").first.locator("td").nth(4).inner_text())
    assert "SCHEDULED" in page.locator("#tasks").inner_text()
    question = confirm_text(page, "button[data-task-action='cancel']", accept=False)
    assert "stays soft-deleted and restorable" in question


def test_a_tables_history_data_search_and_statistics(backend_server, page, tmp_path):
    server = backend_server
    name = f"history_{server.backend}"
    warehouse_id = httpx.post(server.url + "/management/v1/warehouse", json={
        "warehouse-name": name, "storage-profile": {"type": "file", "root": str(tmp_path / name)},
    }).json()["warehouse-id"]
    catalog = RestCatalog("history", uri=server.catalog_url, warehouse=name)
    catalog.create_namespace("sales")
    table = catalog.create_table("sales.orders", schema=SCHEMA)
    for batch in range(5):  # commits within a second or two of each other
        ids = list(range(batch * 100, batch * 100 + 20 + 10 * batch))
        table.append(pa.table({"id": ids, "region": ["eu" if i % 3 else None for i in ids]}, schema=SCHEMA))
    first = table.snapshots()[0].snapshot_id
    table.manage_snapshots().create_branch(first, "audit").commit()
    with table.update_schema() as update:
        update.add_column("amount", DoubleType())
    table.append(pa.table({"id": [999], "region": ["us"], "amount": [12.5]}))
    snapshots = table.refresh().snapshots()

    url = f"{server.url}/ui/warehouses/{warehouse_id}/table?ns=sales&name=orders"
    page.goto(url + "&tab=history")
    page.wait_for_selector("#snapshot-timeline svg")
    dots = sorted(float(c.get_attribute("cx")) for c in page.locator("#snapshot-timeline circle").all())
    assert len(dots) == len(snapshots)
    assert min(b - a for a, b in zip(dots, dots[1:], strict=False)) >= 14  # no dot covers another
    assert page.locator("#snapshot-list tbody tr").count() == len(snapshots)
    newest = page.locator("#snapshot-list tbody tr").first
    assert "append" in newest.inner_text() and "+1" in newest.locator(".change").first.inner_text()
    assert newest.locator(".bar.added i").count() >= 1
    assert "=" not in page.locator("#snapshot-list").inner_text()  # no key=value wall
    assert page.locator("#chart-size circle").count() == len(snapshots)
    assert page.locator("#chart-rows .value-label").text_content() == f"{sum(20 + 10 * b for b in range(5)) + 1:,}"
    assert "added amount double" in page.locator("#schema-history").inner_text()

    page.click("#tab-data")
    assert page.locator("#preview tbody tr").count() == 25
    assert page.locator("#preview thead").inner_text().split()[:2] == ["id", "long"]
    stats = page.locator("#column-stats").inner_text()
    assert "region" in stats and "amount" in stats
    region_row = page.locator("#column-stats tr", has_text="region").first.inner_text()
    assert "eu" in region_row and str(sum(1 for b in range(5) for i in range(b * 100, b * 100 + 20 + 10 * b)
                                          if i % 3 == 0)) in region_row
    page.click("a.next")
    assert page.locator("#preview tbody tr").count() == 25
    page.select_option("#data-ref", "audit")
    page.click("#data-choice button")
    assert page.locator("#preview tbody tr").count() == 20  # the branch's snapshot: the first append
    assert "(audit)" in page.locator("#data h2").inner_text()

    page.click("#tab-overview")
    assert page.locator(".kpis").first.inner_text().split()[0] == f"{sum(20 + 10 * b for b in range(5)) + 1:,}"

    # search: suggestions while typing, the results page on Enter
    catalog.create_namespace("ordering")
    page.fill("#search-form input[name=q]", "order")
    page.wait_for_selector("#search-form .suggestions:not([hidden]) a")
    suggested = page.locator("#search-form .suggestions a").all_inner_texts()
    assert any(s.startswith("sales.orders") for s in suggested) and any(s.startswith("ordering") for s in suggested)
    page.press("#search-form input[name=q]", "Enter")
    page.wait_for_selector("#search-results")
    results = page.locator("#search-results").inner_text()
    assert "sales.orders" in results and "ordering" in results
    page.click("#search-results a[data-kind=table]")
    assert page.locator("h1").inner_text().startswith("Table orders")

    # statistics: tables and views, and requests, as charts
    time.sleep(1)
    page.goto(f"{server.url}/ui/warehouses/{warehouse_id}/statistics")
    assert page.locator("#count-tables").inner_text() == "1"
    assert page.locator("#chart-tabulars circle").count() >= 1
    assert page.locator("#chart-requests rect.bar-rect").count() >= 1
    assert int(page.locator("#count-requests").inner_text().replace(",", "")) > 10
    assert "/tables" in page.locator("#top-routes").inner_text()
