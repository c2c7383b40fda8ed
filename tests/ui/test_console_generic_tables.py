"""Generic tables in the console over plain HTTP: the namespace page lists them tagged with their
format, a generic table's page shows location, format, doc, schema, statistics and properties, and
its forms rename, protect and drop it through the API (a protected one refuses to go)."""

from __future__ import annotations

import html
import re
import time
from pathlib import Path

import httpx
import pytest


@pytest.fixture(scope="module")
def demo(server, demo_warehouse_id):
    """The embedded ``demo`` warehouse: (its id, an HTTP client on its Generic Table API)."""
    warehouse_id = demo_warehouse_id
    httpx.post(f"{server.url}/catalog/v1/{warehouse_id}/namespaces", json={"namespace": ["media"]}).raise_for_status()
    with httpx.Client(base_url=f"{server.url}/lakekeeper/v1/{warehouse_id}", timeout=30) as api:
        yield warehouse_id, api


def csrf_of(page: httpx.Response) -> str:
    return re.search(r'name="csrf_token" value="([^"]+)"', page.text).group(1)


def form_fields(page: httpx.Response, action: str) -> dict[str, str]:
    form = page.text.split(f'action="{action}"')[1].split("</form>")[0]
    return {k: html.unescape(v) for k, v in re.findall(r'name="([^"]+)" value="([^"]*)"', form)}


def test_the_namespace_page_lists_generic_tables_with_their_format(demo, console):
    warehouse_id, api = demo
    for name, format_ in (("clips", "lance"), ("landing", "parquet")):
        api.post("/namespaces/media/generic-tables", json={"name": name, "format": format_}).raise_for_status()
    page = console.get(f"/ui/warehouses/{warehouse_id}/namespace", params={"ns": "media"})
    assert page.status_code == 200
    section = page.text.split('id="generic-tables"')[1].split("</table>")[0]
    rows = re.findall(r'name=(\w+)">\1</a></td>\s*<td><span class="badge format" data-format="(\w+)">', section)
    assert ("clips", "lance") in rows and ("landing", "parquet") in rows


def test_the_detail_page_shows_the_table_and_its_forms_act_on_it(demo, console):
    warehouse_id, api = demo
    created = api.post("/namespaces/media/generic-tables", json={
        "name": "frames", "format": "lance", "doc": "video frames", "properties": {"fps": "25"},
        "schema": {"fields": [{"name": "embedding"}]}, "statistics": {"num-rows": 1200},
    })
    assert created.status_code == 200, created.text
    location = created.json()["table"]["base-location"]
    url = f"/ui/warehouses/{warehouse_id}/generic-table?ns=media&name=frames"
    page = console.get(url)
    assert page.status_code == 200, page.text
    assert f'<code id="location">{location}</code>' in page.text
    assert '<dd id="format">lance</dd>' in page.text and '<dd id="doc">video frames</dd>' in page.text
    assert "&#34;num-rows&#34;: 1200" in page.text and "&#34;embedding&#34;" in page.text
    assert "fps" in page.text and "25" in page.text
    assert '<dd id="protection">not protected</dd>' in page.text

    # protect: the drop form is refused with the API's error, the table stays
    protect = f"/ui/warehouses/{warehouse_id}/protection"
    page = console.post(protect, data=form_fields(page, protect), follow_redirects=True)
    assert "Generic table &#39;media.frames&#39; is protected." in page.text
    assert api.get("/namespaces/media/generic-tables/frames").json()["table"]["protected"] is True
    drop = f"/ui/warehouses/{warehouse_id}/generic-table/drop"
    refused = console.post(drop, data=form_fields(page, drop), follow_redirects=True)
    assert "GenericTableProtected, HTTP 409" in refused.text
    page = console.post(protect, data=form_fields(refused, protect), follow_redirects=True)
    assert api.get("/namespaces/media/generic-tables/frames").json()["table"]["protected"] is False

    # rename, then drop with its files
    rename = f"/ui/warehouses/{warehouse_id}/generic-table/rename"
    renamed = console.post(rename, follow_redirects=True, data={
        **form_fields(page, rename), "new_namespace": "media", "new_name": "stills"})
    assert "renamed to &#39;media.stills&#39;" in renamed.text
    assert str(renamed.url).endswith("name=stills")
    assert api.get("/namespaces/media/generic-tables/frames").status_code == 404
    gone = console.post(drop, follow_redirects=True, data={**form_fields(renamed, drop), "purge": "true"})
    assert "Generic table &#39;stills&#39; dropped." in gone.text
    assert api.get("/namespaces/media/generic-tables/stills").status_code == 404
    # its directory (made by the page's load) goes with the purge; let it finish before the server stops
    directory = Path(location.removeprefix("file://"))
    deadline = time.monotonic() + 30
    while directory.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not directory.exists()
