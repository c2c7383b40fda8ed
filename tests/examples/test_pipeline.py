"""The example lakehouse pipeline (examples/lakehouse-pipeline) end to end, checked against an oracle.

The pipeline runs twice per test run, once per backend, to keep the suite's time in bounds: the
importable entry point (``run_pipeline``) on the embedded default (SQLite), and the notebook's
code cells, executed in order, on PostgreSQL. Both share the run's one SparkSession and are checked
against the same expectations, computed in plain Python from the generated dataset: row counts per
layer, the evolved schema, silver's MERGE snapshots, the view, and the gold table as Spark,
PyIceberg and DuckDB read it.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.duckdb, pytest.mark.slow]

EXAMPLE_DIR = Path(__file__).resolve().parents[2] / "examples" / "lakehouse-pipeline"


@pytest.fixture(scope="module")
def pipeline():
    """``pipeline.py`` imported under the name the notebook imports it by."""
    spec = importlib.util.spec_from_file_location("pipeline", EXAMPLE_DIR / "pipeline.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["pipeline"] = module  # dataclasses look their module up there
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop("pipeline", None)


def spark_catalog_name(warehouse: dict) -> str:
    # Spark caches a catalog by name for the session's life: one name per warehouse
    return "lakehouse_" + warehouse["name"].replace("-", "_")


# ---------------------------------------------------------------------------------------------
# the oracle


@dataclass
class Expected:
    row_counts: dict[str, int]
    batch1_orders: int
    orders_without_channel: int
    gold: list[tuple]
    view: list[tuple]


def newest_per_key(dataset, entity: str, key: str) -> dict[int, tuple[dict[str, Any], int]]:
    """Each key's newest row over all batches, with the number of the batch that delivered it."""
    newest: dict[int, tuple[dict[str, Any], int]] = {}
    for batch in dataset.batches:
        for row in getattr(batch, entity):
            current = newest.get(row[key])
            if current is None or row["updated_at"] > current[0]["updated_at"]:
                newest[row[key]] = (row, batch.number)
    return newest


def expected_outputs(pipeline, dataset) -> Expected:
    customers = {key: row for key, (row, _) in newest_per_key(dataset, "customers", "customer_id").items()}
    products = {key: row for key, (row, _) in newest_per_key(dataset, "products", "product_id").items()}
    orders = newest_per_key(dataset, "orders", "order_id")

    sales: dict[tuple, list] = defaultdict(lambda: [0, 0, Decimal("0")])
    for order, _ in orders.values():
        if order["status"] in pipeline.CLOSED_WITHOUT_REVENUE:
            continue
        figures = sales[(order["order_ts"].date(), customers[order["customer_id"]]["country"],
                         products[order["product_id"]]["category"])]  # fmt: skip
        figures[0] += 1
        figures[1] += order["quantity"]
        figures[2] += order["quantity"] * order["unit_price"]
    gold = sorted((*key, orders_count, units, revenue) for key, (orders_count, units, revenue) in sales.items())

    per_category: dict[str, list] = defaultdict(lambda: [0, 0, Decimal("0")])
    for _, _, category, orders_count, units, revenue in gold:
        per_category[category][0] += orders_count
        per_category[category][1] += units
        per_category[category][2] += revenue
    view = sorted(((category, *figures) for category, figures in per_category.items()), key=lambda row: -row[3])

    bronze = {f"bronze.{entity}": sum(len(getattr(batch, entity)) for batch in dataset.batches)
              for entity in ("customers", "products", "orders")}  # fmt: skip
    silver = {"silver.customers": len(customers), "silver.products": len(products), "silver.orders": len(orders)}
    return Expected(
        row_counts={**bronze, **silver, "gold.daily_sales": len(gold)},
        batch1_orders=len({row["order_id"] for row in dataset.batches[0].orders}),
        orders_without_channel=sum(1 for _, batch in orders.values() if batch == 1),
        gold=gold,
        view=view,
    )


def test_dataset_has_the_feed_problems_the_pipeline_handles(pipeline):
    dataset = pipeline.generate_dataset()
    assert dataset.describe() == pipeline.generate_dataset().describe()  # seeded: the same data every time
    first, second = dataset.batches
    rows = [(row["order_id"], row["updated_at"]) for row in second.orders]
    assert len(rows) > len(set(rows)), "no duplicate events"
    newest_in_first = {order: row["updated_at"] for order, (row, _) in newest_per_key(
        pipeline.Dataset(dataset.seed, [first]), "orders", "order_id").items()}
    stale = [row for row in second.orders if row["updated_at"] < newest_in_first.get(row["order_id"], datetime.max)]
    assert stale, "no late event older than what the first batch already delivered"
    assert all("channel" not in row for row in first.orders) and all("channel" in row for row in second.orders)
    assert {row["customer_id"] for row in second.customers} & {row["customer_id"] for row in first.customers}, \
        "no customer updates in the second batch"


# ---------------------------------------------------------------------------------------------
# the script's entry point, on the embedded default


def check_result(pipeline, result, expected: Expected) -> None:
    assert result.row_counts == expected.row_counts

    # schema evolution: the column of the second batch is the newest field, in a second schema version
    assert result.silver_orders_schema == [
        ("order_id", "long"), ("customer_id", "long"), ("product_id", "long"), ("quantity", "int"),
        ("unit_price", "decimal(10, 2)"), ("status", "string"), ("order_ts", "timestamp"),
        ("updated_at", "timestamp"), ("channel", "string"),
    ]  # fmt: skip
    assert result.silver_orders_schema_versions == 2

    # one MERGE per batch: the first only inserts, the second updates rows by rewriting their files
    first, second = result.silver_orders_history
    assert (first.operation, first.added_records, first.total_records) == (
        "append", expected.batch1_orders, expected.batch1_orders)
    assert second.parent_id == first.snapshot_id
    assert second.operation == "overwrite" and second.deleted_records > 0
    assert second.total_records == expected.row_counts["silver.orders"]

    assert result.view_rows == expected.view
    assert result.gold_by_engine["spark"] == expected.gold
    assert set(result.gold_by_engine) == {"spark", "pyiceberg", "duckdb"}
    assert result.engines_agree
    assert f"read by spark {len(expected.gold)} rows" in pipeline.format_summary(result)


@pytest.mark.parametrize("lakekeeper_server", ["sqlite"], indirect=True)
def test_pipeline_end_to_end_on_the_embedded_default(pipeline, spark, server, warehouse):
    catalog_name = spark_catalog_name(warehouse)
    dataset = pipeline.generate_dataset()
    result = pipeline.run_pipeline(spark, server.catalog_url, warehouse["name"], spark_catalog=catalog_name,
                                   dataset=dataset)  # fmt: skip
    expected = expected_outputs(pipeline, dataset)
    check_result(pipeline, result, expected)
    # orders last changed by the first batch predate the channel column and read it as NULL
    silver_orders = spark.table(f"{catalog_name}.silver.orders")
    assert silver_orders.where("channel IS NULL").count() == expected.orders_without_channel

    # a new run starts from scratch: prepare drops what the last run left and recreates it empty
    lake = pipeline.connect(spark, server.catalog_url, warehouse["name"], spark_catalog=catalog_name)
    pipeline.prepare(lake)
    assert all(spark.table(lake.table(name)).count() == 0 for name in result.row_counts)
    assert not spark.sql(f"SHOW VIEWS IN {lake.table('gold')}").collect()


@pytest.mark.parametrize("lakekeeper_server", ["sqlite"], indirect=True)
def test_the_command_line_runs_the_pipeline_and_reports_agreement(pipeline, spark, server, warehouse, capsys):
    """``python pipeline.py --catalog-uri ... --warehouse ...`` as the README runs it (a small dataset;
    the run's Spark session is borrowed, and left running)."""
    code = pipeline.main([
        "--catalog-uri", server.catalog_url, "--warehouse", warehouse["name"],
        "--spark-catalog", spark_catalog_name(warehouse), "--orders", "120",
    ])  # fmt: skip
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "Row counts:" in printed and "identical" in printed and "DIFFERENT" not in printed
    assert spark.sql("SELECT 1").collect()[0][0] == 1  # the borrowed session is still up


# ---------------------------------------------------------------------------------------------
# the notebook, on PostgreSQL


def test_notebook_is_nbformat_4_and_only_calls_the_pipeline(pipeline):
    notebook = json.loads((EXAMPLE_DIR / "pipeline.ipynb").read_text())
    assert notebook["nbformat"] == 4 and notebook["metadata"]["kernelspec"]["language"] == "python"
    ids = [cell["id"] for cell in notebook["cells"]]
    assert len(ids) == len(set(ids))
    code = [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]
    assert code and all(cell["outputs"] == [] and cell["execution_count"] is None for cell in code)
    for cell in code:
        source = "".join(cell["source"])
        compile(source, cell["id"], "exec")
        # the logic lives in pipeline.py: the notebook defines nothing of its own
        assert "def " not in source and "class " not in source, cell["id"]
    try:
        import nbformat  # not a dependency: the full schema check runs where Jupyter is installed
    except ImportError:
        return
    nbformat.validate(nbformat.reads(json.dumps(notebook), as_version=4))


@pytest.mark.parametrize("lakekeeper_server", ["postgres"], indirect=True)
def test_notebook_runs_end_to_end_on_postgres(pipeline, spark, server, warehouse, monkeypatch):
    notebook = json.loads((EXAMPLE_DIR / "pipeline.ipynb").read_text())
    monkeypatch.setenv("LAKEHOUSE_CATALOG_URI", server.catalog_url)
    monkeypatch.setenv("LAKEHOUSE_WAREHOUSE", warehouse["name"])
    monkeypatch.setenv("LAKEHOUSE_SPARK_CATALOG", spark_catalog_name(warehouse))
    monkeypatch.setattr(sys, "path", list(sys.path))  # the first cell puts its folder on the path
    default_catalog = spark.conf.get("spark.sql.defaultCatalog")

    namespace: dict[str, Any] = {"__name__": "__notebook__"}
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code":
            exec(compile("".join(cell["source"]), cell["id"], "exec"), namespace)  # noqa: S102

    assert namespace["spark"] is spark or namespace["spark"]._jsparkSession.equals(spark._jsparkSession)
    assert spark.conf.get("spark.sql.defaultCatalog") == default_catalog  # the shared session kept its default
    check_result(pipeline, namespace["result"], expected_outputs(pipeline, namespace["dataset"]))
