"""Warehouse statistics: live table/view counts, recorded hourly by the statistics flush, never
written by reading them."""

from __future__ import annotations

import httpx
import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog

from tests.management.helpers import create_view, new_file_warehouse

MGMT = "/management/v1"
SCHEMA = pa.schema([pa.field("id", pa.int64())])


def recorded_counts(server, warehouse_id: str) -> tuple[int, int] | None:
    """The newest recorded (tables, views) of the warehouse (what the API shows only hours later)."""
    packed = server.fetch_val(
        "SELECT number_of_tables * 1000 + number_of_views FROM warehouse_statistics WHERE warehouse_id = :w "
        "ORDER BY bucket_start DESC LIMIT 1",
        {"w": warehouse_id},
    )
    return None if packed is None else divmod(int(packed), 1000)


@pytest.mark.slow  # own server processes or waits out timeouts
def test_counts_are_live_recorded_by_the_flush_and_reading_them_writes_nothing(make_server, tmp_path_factory):
    # no periodic flush during the test: only the explicit one below records
    server = make_server({"LAKEKEEPER__ENDPOINT_STAT_FLUSH_INTERVAL": "3600s"})
    warehouse = new_file_warehouse(server.url, tmp_path_factory)
    wid = warehouse["id"]
    catalog = RestCatalog("stats", uri=server.catalog_url, warehouse=warehouse["name"])
    prefix_url = f"{server.catalog_url}/v1/{wid}"
    http = httpx.Client(base_url=server.url, timeout=30)

    catalog.create_namespace("stats")
    for name in ("a", "b", "gone"):
        catalog.create_table(f"stats.{name}", schema=SCHEMA)
    for name in ("v1", "v2", "v3"):
        create_view(http, prefix_url, "stats", name)
    catalog.drop_table("stats.gone")
    assert http.delete(f"{prefix_url}/namespaces/stats/views/v3").status_code == 204

    body = http.get(f"{MGMT}/warehouse/{wid}/statistics").json()
    assert body["warehouse-ident"] == wid
    latest = body["stats"][0]
    assert (latest["number-of-tables"], latest["number-of-views"]) == (2, 2)
    assert latest["timestamp"].endswith(":00:00Z")
    assert recorded_counts(server, wid) is None  # the GET counted, it did not write

    # the flush (here forced by reading the endpoint statistics) records every touched warehouse
    assert http.post(f"{MGMT}/endpoint-statistics", json={"warehouse": {"type": "all"}}).status_code == 200
    assert recorded_counts(server, wid) == (2, 2)

    catalog.create_table("stats.c", schema=SCHEMA)
    assert http.get(f"{MGMT}/warehouse/{wid}/statistics").json()["stats"][0]["number-of-tables"] == 3
    assert recorded_counts(server, wid) == (2, 2)  # recorded again at the next flush

    first = http.get(f"{MGMT}/warehouse/{wid}/statistics", params={"page_size": 1}).json()
    assert len(first["stats"]) == 1 and first["next-page-token"]
    rest = http.get(
        f"{MGMT}/warehouse/{wid}/statistics", params={"page_size": 1, "page_token": first["next-page-token"]}
    ).json()
    # older hours only: this hour's recorded snapshot is not repeated after its live count
    assert all(entry["timestamp"] < first["stats"][0]["timestamp"] for entry in rest["stats"])
    http.close()
