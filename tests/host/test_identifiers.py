"""Identifiers are case-insensitive and case-preserving, as in Lakekeeper (SQLite and PostgreSQL)."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyiceberg.exceptions import NamespaceAlreadyExistsError, TableAlreadyExistsError, ViewAlreadyExistsError
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField
from pyiceberg.view.metadata import SQLViewRepresentation, ViewVersion

SCHEMA = pa.schema([("id", pa.int64())])


def view_version(namespace: str) -> ViewVersion:
    return ViewVersion(
        version_id=1, schema_id=0, timestamp_ms=1_700_000_000_000, summary={"engine-name": "test"},
        representations=[SQLViewRepresentation(type="sql", sql="SELECT 1 AS id", dialect="spark")],
        default_namespace=[namespace],
    )


def test_namespaces_and_tables_match_any_case_and_keep_their_own(catalog):
    catalog.create_namespace("Sales")
    with pytest.raises(NamespaceAlreadyExistsError):
        catalog.create_namespace("SALES")
    assert catalog.list_namespaces() == [("Sales",)]
    catalog.update_namespace_properties("sales", updates={"owner": "finance"})
    assert catalog.load_namespace_properties("sAlEs")["owner"] == "finance"

    table = catalog.create_table("Sales.Orders", schema=SCHEMA)
    table.append(pa.table({"id": [1, 2]}))
    with pytest.raises(TableAlreadyExistsError):
        catalog.create_table("sales.ORDERS", schema=SCHEMA)
    assert catalog.list_tables("SALES") == [("Sales", "Orders")]
    assert catalog.load_table("sales.orders").scan().to_arrow().num_rows == 2
    assert catalog.table_exists("SALES.ORDERS")

    catalog.rename_table("sales.orders", "SALES.OrdersV2")
    assert catalog.list_tables("sales") == [("Sales", "OrdersV2")]
    catalog.drop_table("sales.ordersv2")
    assert catalog.list_tables("sales") == []


def test_tables_and_views_share_one_case_insensitive_name_space(catalog):
    catalog.create_namespace("Reports")
    catalog.create_table("Reports.Daily", schema=SCHEMA)
    schema = Schema(NestedField(1, "id", LongType()))
    with pytest.raises(ViewAlreadyExistsError, match="same name"):
        catalog.create_view("reports.DAILY", schema, view_version("Reports"))
    catalog.create_view("reports.Weekly", schema, view_version("Reports"))
    assert catalog.list_views("REPORTS") == [("Reports", "Weekly")]
    assert catalog.view_exists("Reports.WEEKLY")
    with pytest.raises(TableAlreadyExistsError):
        catalog.create_table("REPORTS.weekly", schema=SCHEMA)
