"""The table data endpoints the console's Data tab reads (preview rows, column statistics) and the
warehouse search (Lakekeeper's search-tabular and the namespace search beside it), on both backends.
Who may call them is tested with a real authorizer in tests/ui/test_console_permissions.py."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog

MGMT = "/management/v1"
SCHEMA = pa.schema([("id", pa.int64()), ("region", pa.string()), ("amount", pa.float64())])


def rows(ids: range, region: str | None = "eu") -> pa.Table:
    return pa.table({"id": list(ids), "region": [region] * len(ids), "amount": [1.5 * i for i in ids]}, schema=SCHEMA)


def table_url(warehouse: dict, table) -> str:
    return f"{MGMT}/warehouse/{warehouse['id']}/table/{table.metadata.table_uuid}"


def all_pages(http, url: str, **params) -> tuple[list[list], int]:
    seen, pages, token = [], 0, None
    while True:
        answer = http.get(url + "/preview", params={**params, **({"pageToken": token} if token else {})})
        assert answer.status_code == 200, answer.text
        body = answer.json()
        seen += body["rows"]
        pages += 1
        token = body["next-page-token"]
        if not token:
            return seen, pages


def test_preview_pages_through_every_row_of_the_chosen_snapshot_or_branch(http, catalog, warehouse):
    catalog.create_namespace("shop")
    table = catalog.create_table("shop.orders", schema=SCHEMA)
    table.append(rows(range(0, 30)))
    first = table.refresh().current_snapshot().snapshot_id
    table.append(rows(range(30, 45), region=None))
    url = table_url(warehouse, table)

    body = http.get(url + "/preview", params={"pageSize": 10}).json()
    assert [c["name"] for c in body["columns"]] == ["id", "region", "amount"]
    assert [c["type"] for c in body["columns"]] == ["long", "string", "double"]
    assert body["snapshot-id"] == table.refresh().current_snapshot().snapshot_id
    seen, pages = all_pages(http, url, pageSize=10)
    assert sorted(r[0] for r in seen) == list(range(45)) and pages == 5  # 45 rows in pages of 10, none twice
    assert {tuple(r) for r in seen} >= {(31, None, 46.5), (2, "eu", 3.0)}

    earlier, _ = all_pages(http, url, snapshotId=first, pageSize=100)
    assert sorted(r[0] for r in earlier) == list(range(30))  # time travel
    table.manage_snapshots().create_branch(first, "audit").commit()
    branch, _ = all_pages(http, url, ref="audit")
    assert sorted(r[0] for r in branch) == list(range(30))

    # a page token keeps reading the snapshot it started on while the table moves on
    start = http.get(url + "/preview", params={"pageSize": 40}).json()
    table.append(rows(range(45, 50)))
    rest = http.get(url + "/preview", params={"pageSize": 40, "pageToken": start["next-page-token"]}).json()
    assert rest["snapshot-id"] == start["snapshot-id"] and len(start["rows"]) + len(rest["rows"]) == 45

    assert http.get(url + "/preview", params={"ref": "nowhere"}).status_code == 404
    assert http.get(url + "/preview", params={"snapshotId": 1}).status_code == 400
    assert http.get(url + "/preview", params={"pageToken": "garbage"}).status_code == 400


def test_column_statistics_sum_up_the_manifests(http, catalog, warehouse):
    catalog.create_namespace("stats")
    table = catalog.create_table("stats.readings", schema=SCHEMA)
    table.append(rows(range(1, 11)))
    table.append(pa.table({"id": [11, 12], "region": [None, "us"], "amount": [None, 99.0]}, schema=SCHEMA))
    url = table_url(warehouse, table)

    stats = http.get(url + "/column-statistics").json()
    assert (stats["data-files"], stats["record-count"], stats["delete-files"]) == (2, 12, 0)
    assert stats["file-size-in-bytes"] > 0
    columns = {c["name"]: c for c in stats["columns"]}
    assert (columns["id"]["lower-bound"], columns["id"]["upper-bound"], columns["id"]["null-count"]) == (1, 12, 0)
    assert (columns["region"]["lower-bound"], columns["region"]["upper-bound"]) == ("eu", "us")
    assert columns["region"]["null-count"] == 1 and columns["amount"]["null-count"] == 1
    assert columns["amount"]["upper-bound"] == 99.0 and columns["amount"]["bounds-complete"]

    first = table.snapshots()[0].snapshot_id
    before = http.get(url + "/column-statistics", params={"snapshotId": first}).json()
    assert (before["data-files"], before["record-count"]) == (1, 10)

    empty = catalog.create_table("stats.empty", schema=SCHEMA)
    nothing = http.get(table_url(warehouse, empty) + "/column-statistics").json()
    assert nothing["snapshot-id"] is None and nothing["record-count"] == 0
    assert http.get(table_url(warehouse, empty) + "/preview").json()["rows"] == []


def test_a_table_whose_manifest_names_another_tables_file_is_not_read(http, catalog, warehouse):
    """The attacker writes table ``loot`` whose manifest lists a data file of ``secrets`` (add_files does
    not copy): a preview of ``loot`` must not read outside ``loot``'s location."""
    catalog.create_namespace("victim")
    secrets = catalog.create_table("victim.secrets", schema=SCHEMA)
    secrets.append(rows(range(1000, 1003), region="classified"))
    victim_file = next(iter(secrets.scan().plan_files())).file.file_path

    catalog.create_namespace("attacker")
    loot = catalog.create_table("attacker.loot", schema=SCHEMA)
    loot.add_files([victim_file])
    assert loot.refresh().current_snapshot() is not None

    answer = http.get(table_url(warehouse, loot) + "/preview")
    assert answer.status_code == 403, answer.text
    assert "outside the table's location" in answer.json()["error"]["message"]
    assert "classified" not in answer.text
    # the victim's own preview reads it
    assert http.get(table_url(warehouse, secrets) + "/preview").json()["rows"][0][1] == "classified"


def test_preview_of_an_unknown_table_or_a_view_is_not_found(http, warehouse):
    url = f"{MGMT}/warehouse/{warehouse['id']}/table"
    assert http.get(f"{url}/not-a-uuid/preview").status_code == 404
    assert http.get(f"{url}/00000000-0000-0000-0000-000000000000/column-statistics").status_code == 404


@pytest.fixture
def shop(server, catalog: RestCatalog) -> RestCatalog:
    for namespace in ("sales", ("sales", "emea"), "finance"):
        catalog.create_namespace(namespace)
    catalog.create_table("sales.orders", schema=SCHEMA)
    catalog.create_table(("sales", "emea", "orders_eu"), schema=SCHEMA)
    catalog.create_table("finance.ledger", schema=SCHEMA)
    return catalog


def test_search_finds_tables_and_namespaces_by_name(http, warehouse, shop):
    url = f"{MGMT}/warehouse/{warehouse['id']}"
    tabulars = http.post(f"{url}/search-tabular", json={"search": "ORDERS"}).json()["tabulars"]
    assert [(t["namespace-name"], t["tabular-name"]) for t in tabulars] == [
        (["sales"], "orders"), (["sales", "emea"], "orders_eu")]  # the closest match first
    namespaces = http.post(f"{url}/search-namespace", json={"search": "emea"}).json()["namespaces"]
    assert [n["namespace-name"] for n in namespaces] == [["sales", "emea"]]
    assert namespaces[0]["distance"] < 1
    by_id = http.post(f"{url}/search-namespace", json={"search": namespaces[0]["namespace-id"]}).json()
    assert by_id["namespaces"][0]["namespace-name"] == ["sales", "emea"] and by_id["namespaces"][0]["distance"] == 0
    assert http.post(f"{url}/search-namespace", json={"search": "50%_"}).json()["namespaces"] == []  # literal
    assert http.post(f"{url}/search-namespace", json={}).status_code == 400
