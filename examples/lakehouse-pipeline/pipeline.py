"""An e-commerce lakehouse on our Iceberg REST catalog: Spark writes it, PyIceberg and DuckDB read it.

    python examples/lakehouse-pipeline/pipeline.py --catalog-uri http://127.0.0.1:8181/catalog --warehouse demo

1. ``generate_dataset``: customers, products and order events from a seeded generator, delivered in
   two batches the way a real feed delivers them: duplicates (at-least-once delivery), late
   arrivals, stale out-of-order events, and a new ``channel`` column from the second batch on.
2. ``load_batch``: each batch lands unchanged in **bronze** (append-only, partitioned by ingestion
   day), is deduplicated and MERGEd into **silver** (one current row per key; an event older than
   the stored row never overwrites it), new columns are added to both layers first (schema
   evolution), and **gold** (daily sales per country and category) is recomputed from silver.
3. ``create_gold_view``: an Iceberg view on gold, stored in the catalog.
4. ``collect_result``: row counts, the evolved schema, silver's snapshot history, the view, and the
   gold table read by Spark, PyIceberg and DuckDB, which must agree.

The pipeline owns the objects it creates (``bronze``/``silver``/``gold`` tables and the view) and
recreates them on every run. ``run_pipeline`` drives everything with a SparkSession you pass in, so
tests and the notebook (``pipeline.ipynb``) use exactly this code.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

DEFAULT_CATALOG_URI = "http://127.0.0.1:8181/catalog"
DEFAULT_WAREHOUSE = "demo"
DEFAULT_SPARK_CATALOG = "lakehouse"
DEFAULT_SEED = 20250310

SIMULATION_START = datetime(2025, 3, 10)
# batch n covers events with updated_at before its cut-off and is ingested at that moment
BATCH_CUTOFF_DAYS = (14, 28)

COUNTRIES = {"US": 0.30, "DE": 0.22, "GB": 0.18, "FR": 0.15, "NL": 0.10, "PL": 0.05}
SEGMENTS = {"consumer": 0.7, "small business": 0.2, "corporate": 0.1}
CHANNELS = {"web": 0.55, "mobile": 0.35, "marketplace": 0.10}
CATEGORY_PRICES = {"books": (6, 45), "electronics": (25, 900), "garden": (5, 180), "toys": (5, 90),
                   "kitchen": (8, 260), "sports": (10, 400)}  # fmt: skip
FIRST_NAMES = ("Ada", "Ben", "Chloe", "Dmitri", "Elif", "Farah", "Goran", "Hana", "Ivan", "Jonas", "Kim", "Lena",
               "Mateo", "Nora", "Omar", "Priya", "Quentin", "Rosa", "Sven", "Tara", "Umar", "Vera", "Wei", "Yuki")
LAST_NAMES = ("Adler", "Berg", "Costa", "Dubois", "Evans", "Fischer", "Garcia", "Hansen", "Ivanova", "Jensen",
              "Kowalski", "Lopez", "Meyer", "Novak", "Olsen", "Petrov", "Rossi", "Schmidt", "Tanaka", "Weber")
PRODUCT_LINES = ("Classic", "Pro", "Compact", "Deluxe", "Eco")
PRODUCT_WORDS = {"books": ("Atlas", "Handbook", "Novel", "Cookbook", "Guide"),
                 "electronics": ("Headphones", "Monitor", "Keyboard", "Speaker", "Charger"),
                 "garden": ("Hose", "Planter", "Shears", "Lantern", "Seed Kit"),
                 "toys": ("Puzzle", "Robot", "Kite", "Blocks", "Board Game"),
                 "kitchen": ("Kettle", "Pan", "Knife Set", "Grinder", "Blender"),
                 "sports": ("Racket", "Yoga Mat", "Helmet", "Dumbbells", "Bottle")}  # fmt: skip

# revenue counts orders that were neither cancelled nor returned
CLOSED_WITHOUT_REVENUE = ("cancelled", "returned")

# ---------------------------------------------------------------------------------------------
# the dataset


@dataclass
class Batch:
    number: int
    ingested_at: datetime  # UTC
    customers: list[dict[str, Any]]
    products: list[dict[str, Any]]
    orders: list[dict[str, Any]]  # order events: one row per status change, as the shop emits them

    @property
    def has_channel(self) -> bool:
        return any("channel" in row for row in self.orders)


@dataclass
class Dataset:
    seed: int
    batches: list[Batch]

    def describe(self) -> str:
        lines = []
        for batch in self.batches:
            keys = [(row["order_id"], row["updated_at"]) for row in batch.orders]
            lines.append(
                f"batch {batch.number} (ingested {batch.ingested_at:%Y-%m-%d}): {len(batch.customers)} customers, "
                f"{len(batch.products)} products, {len(batch.orders)} order events "
                f"({len(keys) - len(set(keys))} duplicates, {len({k for k, _ in keys})} orders)"
                + (", new column 'channel'" if batch.has_channel and batch.number > 1 else "")
            )
        return "\n".join(lines)


def _weighted(rng: random.Random, weights: dict[str, float]) -> str:
    return rng.choices(list(weights), weights=list(weights.values()))[0]


def _money(value: float) -> Decimal:
    return Decimal(f"{value:.2f}")


def generate_dataset(seed: int = DEFAULT_SEED, *, orders: int = 1500, customers: int = 250,
                     products: int = 60) -> Dataset:  # fmt: skip
    """Two batches of a small web shop's feed, identical for the same arguments."""
    rng = random.Random(seed)
    cutoffs = [SIMULATION_START + timedelta(days=days) for days in BATCH_CUTOFF_DAYS]

    def batch_of(moment: datetime) -> int:
        return next((n for n, cutoff in enumerate(cutoffs, 1) if moment < cutoff), 0)  # 0: after the last batch

    product_rows = []
    for product_id in range(1, products + 1):
        category = rng.choice(list(CATEGORY_PRICES))
        low, high = CATEGORY_PRICES[category]
        product_rows.append({
            "product_id": product_id, "sku": f"{category[:3].upper()}-{product_id:05d}",
            "name": f"{rng.choice(PRODUCT_LINES)} {rng.choice(PRODUCT_WORDS[category])}",
            "category": category, "list_price": _money(rng.uniform(low, high)),
            "updated_at": SIMULATION_START - timedelta(days=30),
        })  # fmt: skip

    customer_rows = []
    for customer_id in range(1, customers + 1):
        first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
        # two thirds existed before the simulation, the rest sign up during it
        signup = SIMULATION_START - timedelta(days=rng.randint(1, 700)) if rng.random() < 0.67 else \
            SIMULATION_START + timedelta(days=rng.uniform(0, BATCH_CUTOFF_DAYS[-1] - 2))
        customer_rows.append({
            "customer_id": customer_id, "first_name": first, "last_name": last,
            "email": f"{first}.{last}{customer_id}@example.com".lower(), "country": _weighted(rng, COUNTRIES),
            "segment": _weighted(rng, SEGMENTS), "signup_date": signup.date(), "updated_at": signup,
        })  # fmt: skip

    # order lifecycles: placed, then paid (or cancelled), shipped, delivered, sometimes returned
    events: list[dict[str, Any]] = []
    horizon = BATCH_CUTOFF_DAYS[-1] * 24 * 3600
    for order_id in range(1, orders + 1):
        placed = SIMULATION_START + timedelta(seconds=rng.uniform(0, horizon - 3 * 24 * 3600))
        customer = rng.choice([row for row in customer_rows if row["updated_at"] <= placed] or customer_rows[:1])
        product = rng.choice(product_rows)
        # prices move a little around the list price (promotions, currency)
        price = _money(float(product["list_price"]) * rng.uniform(0.85, 1.05))
        order = {"order_id": order_id, "customer_id": customer["customer_id"], "product_id": product["product_id"],
                 "quantity": rng.choices((1, 2, 3, 4, 5), weights=(60, 22, 10, 5, 3))[0], "unit_price": price,
                 "order_ts": placed, "channel": _weighted(rng, CHANNELS)}  # fmt: skip
        moment = placed
        statuses = ["placed"]
        if rng.random() < 0.06:
            statuses.append("cancelled")
        else:
            statuses += ["paid", "shipped", "delivered"] + (["returned"] if rng.random() < 0.04 else [])
        for status in statuses:
            if status != "placed":
                quick = status in ("paid", "cancelled")  # minutes to hours; shipping takes days
                moment += timedelta(hours=rng.uniform(0.1, 2) if quick else rng.uniform(12, 60))
            events.append({**order, "status": status, "updated_at": moment})

    # deliver: each event in the batch of its time, some late (in the next batch), some twice
    delivered: dict[int, list[dict[str, Any]]] = {n: [] for n in range(1, len(cutoffs) + 1)}
    for event in events:
        batch = batch_of(event["updated_at"])
        if batch == 0:
            continue  # happens after the last batch: not delivered yet
        if batch < len(cutoffs) and rng.random() < 0.05:
            batch += 1  # late arrival: stale if a newer event of its order came on time
        delivered[batch].append(event)
        if rng.random() < 0.03:
            delivered[batch].append(dict(event))  # at-least-once delivery
        if batch < len(cutoffs) and rng.random() < 0.01:
            delivered[batch + 1].append(dict(event))  # replayed by the next feed run

    batches = []
    for number, cutoff in enumerate(cutoffs, 1):
        orders_rows = delivered[number]
        rng.shuffle(orders_rows)
        if number == 1:
            # the first feed version did not send the channel yet
            orders_rows = [{key: value for key, value in row.items() if key != "channel"} for row in orders_rows]
        start = cutoffs[number - 2] if number > 1 else datetime.min
        new_customers = [row for row in customer_rows if start <= row["updated_at"] < cutoff]
        changed_customers = []
        if number > 1:
            # some known customers move or change segment
            for row in rng.sample([row for row in customer_rows if row["updated_at"] < start], k=customers // 20):
                changed = {**row, "updated_at": start + timedelta(days=rng.uniform(0, 6))}
                if rng.random() < 0.5:
                    changed["country"] = _weighted(rng, COUNTRIES)
                else:
                    changed["segment"] = _weighted(rng, SEGMENTS)
                changed_customers.append(changed)
        product_changes = product_rows if number == 1 else [
            {**row, "list_price": _money(float(row["list_price"]) * 1.1), "updated_at": start + timedelta(days=1)}
            for row in rng.sample(product_rows, k=max(1, products // 10))
        ]  # fmt: skip
        batches.append(Batch(number=number, ingested_at=cutoff.replace(tzinfo=UTC),
                             customers=new_customers + changed_customers, products=product_changes,
                             orders=orders_rows))  # fmt: skip
    return Dataset(seed=seed, batches=batches)


# ---------------------------------------------------------------------------------------------
# the lakehouse: where it lives and which tables it has


@dataclass
class Lakehouse:
    """One warehouse of our catalog, registered on a SparkSession as ``spark_catalog``."""

    spark: SparkSession
    catalog_uri: str
    warehouse: str
    spark_catalog: str = DEFAULT_SPARK_CATALOG
    token: str | None = None
    timings: dict[str, float] = field(default_factory=dict)

    def table(self, name: str) -> str:
        """``layer.table`` as Spark names it, e.g. ``lakehouse.silver.orders``."""
        return f"{self.spark_catalog}.{name}"

    @contextmanager
    def timed(self, step: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.timings[step] = self.timings.get(step, 0.0) + time.perf_counter() - started


@dataclass(frozen=True)
class Entity:
    """One kind of record: its columns, key, and how its bronze and silver tables are partitioned."""

    name: str
    key: str
    partition_bronze: str
    partition_silver: str | None

    def schema(self, with_channel: bool = False) -> StructType:
        from pyspark.sql import types as T

        columns = {
            "customers": [("customer_id", T.LongType()), ("first_name", T.StringType()),
                          ("last_name", T.StringType()), ("email", T.StringType()), ("country", T.StringType()),
                          ("segment", T.StringType()), ("signup_date", T.DateType()),
                          ("updated_at", T.TimestampNTZType())],
            "products": [("product_id", T.LongType()), ("sku", T.StringType()), ("name", T.StringType()),
                         ("category", T.StringType()), ("list_price", T.DecimalType(10, 2)),
                         ("updated_at", T.TimestampNTZType())],
            "orders": [("order_id", T.LongType()), ("customer_id", T.LongType()), ("product_id", T.LongType()),
                       ("quantity", T.IntegerType()), ("unit_price", T.DecimalType(10, 2)),
                       ("status", T.StringType()), ("order_ts", T.TimestampNTZType()),
                       ("updated_at", T.TimestampNTZType())]
                      + ([("channel", T.StringType())] if with_channel else []),
        }[self.name]  # fmt: skip
        return T.StructType([T.StructField(name, data_type) for name, data_type in columns])


BRONZE_COLUMNS = "_batch_id int, _ingested_at timestamp"
ENTITIES = (
    Entity("customers", key="customer_id", partition_bronze="days(_ingested_at)", partition_silver="country"),
    Entity("products", key="product_id", partition_bronze="days(_ingested_at)", partition_silver=None),
    Entity("orders", key="order_id", partition_bronze="days(_ingested_at)", partition_silver="days(order_ts)"),
)
GOLD_TABLE = "gold.daily_sales"
GOLD_VIEW = "gold.category_revenue"
COLUMN_COMMENTS = {"channel": "sales channel (web, mobile, marketplace), sent from feed version 2 on"}


def _columns_ddl(schema: StructType) -> str:
    return ", ".join(f"{column.name} {column.dataType.simpleString()}" for column in schema.fields)


def connect(spark: SparkSession, catalog_uri: str = DEFAULT_CATALOG_URI, warehouse: str = DEFAULT_WAREHOUSE, *,
            spark_catalog: str = DEFAULT_SPARK_CATALOG, token: str | None = None) -> Lakehouse:  # fmt: skip
    """Register the warehouse on ``spark`` as the Iceberg catalog ``spark_catalog``."""
    from lakekeeper_host.engines.spark import add_catalog

    add_catalog(spark, catalog_uri, warehouse, catalog_name=spark_catalog, token=token)
    return Lakehouse(spark=spark, catalog_uri=catalog_uri, warehouse=warehouse, spark_catalog=spark_catalog,
                     token=token)


def prepare(lake: Lakehouse) -> None:
    """Drop what an earlier run left, then create the namespaces and the empty tables of every layer."""
    sql = lake.spark.sql
    with lake.timed("prepare"):
        sql(f"DROP VIEW IF EXISTS {lake.table(GOLD_VIEW)}")
        for name in [*(f"{layer}.{entity.name}" for layer in ("bronze", "silver") for entity in ENTITIES), GOLD_TABLE]:
            sql(f"DROP TABLE IF EXISTS {lake.table(name)} PURGE")
        for layer in ("bronze", "silver", "gold"):
            sql(f"CREATE NAMESPACE IF NOT EXISTS {lake.table(layer)}")
        for entity in ENTITIES:
            columns = _columns_ddl(entity.schema())
            sql(f"CREATE TABLE {lake.table('bronze.' + entity.name)} ({columns}, {BRONZE_COLUMNS}) USING iceberg "
                f"PARTITIONED BY ({entity.partition_bronze}) "
                "TBLPROPERTIES ('write.parquet.compression-codec' = 'zstd')")
            partitioning = f"PARTITIONED BY ({entity.partition_silver}) " if entity.partition_silver else ""
            # copy-on-write MERGE (the default) keeps silver free of delete files for every reader
            sql(f"CREATE TABLE {lake.table('silver.' + entity.name)} ({columns}) USING iceberg {partitioning}"
                "TBLPROPERTIES ('write.merge.mode' = 'copy-on-write')")
        sql(f"CREATE TABLE {lake.table(GOLD_TABLE)} (order_date date, country string, category string, "
            "orders bigint, units bigint, revenue decimal(14,2)) USING iceberg PARTITIONED BY (months(order_date))")


def add_new_columns(lake: Lakehouse, table: str, incoming: StructType) -> list[str]:
    """Schema evolution: add the incoming columns ``table`` does not have yet; returns their names."""
    existing = {column.name for column in lake.spark.table(lake.table(table)).schema.fields}
    added = [column for column in incoming.fields if column.name not in existing]
    for column in added:
        comment = COLUMN_COMMENTS.get(column.name)
        lake.spark.sql(f"ALTER TABLE {lake.table(table)} ADD COLUMN {column.name} {column.dataType.simpleString()}"
                       + (f" COMMENT '{comment}'" if comment else ""))  # fmt: skip
    return [column.name for column in added]


def ingest_bronze(lake: Lakehouse, entity: Entity, batch: Batch) -> DataFrame:
    """Append the batch as received (duplicates and all) to bronze; returns the batch's bronze rows."""
    from pyspark.sql import functions as F

    rows = getattr(batch, entity.name)
    schema = entity.schema(with_channel=entity.name == "orders" and batch.has_channel)
    frame = lake.spark.createDataFrame([tuple(row.get(name) for name in schema.fieldNames()) for row in rows], schema)
    frame = frame.withColumn("_batch_id", F.lit(batch.number)).withColumn("_ingested_at", F.lit(batch.ingested_at))
    bronze = f"bronze.{entity.name}"
    add_new_columns(lake, bronze, schema)
    frame.writeTo(lake.table(bronze)).append()
    landed = lake.spark.table(lake.table(bronze)).where(F.col("_batch_id") == batch.number)
    return landed.drop("_batch_id", "_ingested_at")


def upsert_silver(lake: Lakehouse, entity: Entity, changes: DataFrame) -> None:
    """MERGE the newest change per key into silver; an update older than the stored row is ignored."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    silver = f"silver.{entity.name}"
    add_new_columns(lake, silver, changes.schema)
    newest_first = Window.partitionBy(entity.key).orderBy(F.col("updated_at").desc())
    latest = changes.withColumn("_rank", F.row_number().over(newest_first)).where("_rank = 1").drop("_rank")
    view = f"{lake.spark_catalog}_{entity.name}_changes"
    latest.createOrReplaceTempView(view)
    try:
        lake.spark.sql(f"""
            MERGE INTO {lake.table(silver)} AS target
            USING {view} AS source
            ON target.{entity.key} = source.{entity.key}
            WHEN MATCHED AND source.updated_at > target.updated_at THEN UPDATE SET *
            WHEN NOT MATCHED THEN INSERT *
        """)
    finally:
        lake.spark.catalog.dropTempView(view)


def refresh_gold(lake: Lakehouse) -> None:
    """Recompute daily sales per country and category from silver and replace gold in one commit."""
    from pyspark.sql import functions as F

    closed = ", ".join(f"'{status}'" for status in CLOSED_WITHOUT_REVENUE)
    daily_sales = lake.spark.sql(f"""
        SELECT to_date(o.order_ts) AS order_date, c.country, p.category,
               count(*) AS orders, sum(o.quantity) AS units,
               CAST(sum(o.quantity * o.unit_price) AS decimal(14,2)) AS revenue
        FROM {lake.table('silver.orders')} o
        JOIN {lake.table('silver.customers')} c ON c.customer_id = o.customer_id
        JOIN {lake.table('silver.products')} p ON p.product_id = o.product_id
        WHERE o.status NOT IN ({closed})
        GROUP BY 1, 2, 3
    """)
    daily_sales.writeTo(lake.table(GOLD_TABLE)).overwrite(F.lit(True))


def load_batch(lake: Lakehouse, batch: Batch) -> None:
    """One batch through all layers: bronze, silver (MERGE), gold."""
    for entity in ENTITIES:
        with lake.timed("bronze"):
            changes = ingest_bronze(lake, entity, batch)
        with lake.timed("silver"):
            upsert_silver(lake, entity, changes)
    with lake.timed("gold"):
        refresh_gold(lake)


def create_gold_view(lake: Lakehouse) -> None:
    """Revenue per category over the whole period, as an Iceberg view in the catalog."""
    with lake.timed("view"):
        lake.spark.sql(f"""
            CREATE OR REPLACE VIEW {lake.table(GOLD_VIEW)}
            COMMENT 'revenue per product category, all days and countries'
            AS SELECT category, sum(orders) AS orders, sum(units) AS units, sum(revenue) AS revenue
               FROM {lake.table(GOLD_TABLE)} GROUP BY category
        """)


# ---------------------------------------------------------------------------------------------
# reading it back: Spark, PyIceberg and DuckDB


GOLD_COLUMNS = ("order_date", "country", "category", "orders", "units", "revenue")


def _sorted_rows(rows: Any) -> list[tuple]:
    return sorted(tuple(row) for row in rows)


def gold_rows_spark(lake: Lakehouse) -> list[tuple]:
    return _sorted_rows(lake.spark.table(lake.table(GOLD_TABLE)).select(*GOLD_COLUMNS).collect())


def pyiceberg_catalog(lake: Lakehouse):
    from pyiceberg.catalog.rest import RestCatalog

    return RestCatalog("lakehouse", uri=lake.catalog_uri, warehouse=lake.warehouse,
                       **({"token": lake.token} if lake.token else {}))  # fmt: skip


def gold_rows_pyiceberg(lake: Lakehouse) -> list[tuple]:
    table = pyiceberg_catalog(lake).load_table(GOLD_TABLE)
    arrow = table.scan(selected_fields=GOLD_COLUMNS).to_arrow()
    return _sorted_rows(zip(*(arrow.column(name).to_pylist() for name in GOLD_COLUMNS), strict=True))


def gold_rows_duckdb(lake: Lakehouse) -> list[tuple]:
    from lakekeeper_host.engines.duckdb_util import attach_catalog, connect_duckdb

    con = connect_duckdb()
    try:
        attach_catalog(con, "lake", lake.catalog_uri, lake.warehouse, token=lake.token)
        return _sorted_rows(con.execute(f"SELECT {', '.join(GOLD_COLUMNS)} FROM lake.{GOLD_TABLE}").fetchall())
    finally:
        con.close()


@dataclass
class SnapshotInfo:
    snapshot_id: int
    parent_id: int | None
    operation: str
    added_records: int
    deleted_records: int
    total_records: int


@dataclass
class PipelineResult:
    row_counts: dict[str, int]
    silver_orders_schema: list[tuple[str, str]]  # (column, type) as PyIceberg reads it from the catalog
    silver_orders_schema_versions: int
    silver_orders_history: list[SnapshotInfo]
    view_rows: list[tuple]  # (category, orders, units, revenue), highest revenue first
    gold_by_engine: dict[str, list[tuple]]
    timings: dict[str, float]

    @property
    def engines_agree(self) -> bool:
        results = list(self.gold_by_engine.values())
        return all(rows == results[0] for rows in results)


def silver_history(lake: Lakehouse, entity: str = "orders") -> list[SnapshotInfo]:
    """Silver's snapshots, oldest first, from Iceberg's ``snapshots`` metadata table."""
    rows = lake.spark.sql(
        f"SELECT snapshot_id, parent_id, operation, summary FROM {lake.table('silver.' + entity)}.snapshots "
        "ORDER BY committed_at"
    ).collect()

    def figure(summary: dict[str, str], key: str) -> int:
        return int(summary.get(key, 0))

    return [SnapshotInfo(row.snapshot_id, row.parent_id, row.operation, figure(row.summary, "added-records"),
                         figure(row.summary, "deleted-records"), figure(row.summary, "total-records"))
            for row in rows]  # fmt: skip


def collect_result(lake: Lakehouse) -> PipelineResult:
    with lake.timed("read back"):
        tables = [f"{layer}.{entity.name}" for layer in ("bronze", "silver") for entity in ENTITIES] + [GOLD_TABLE]
        counts = {name: lake.spark.table(lake.table(name)).count() for name in tables}
        silver_orders = pyiceberg_catalog(lake).load_table("silver.orders")
        schema = [(column.name, str(column.field_type)) for column in silver_orders.schema().fields]
        view_rows = [tuple(row) for row in lake.spark.sql(
            f"SELECT category, orders, units, revenue FROM {lake.table(GOLD_VIEW)} ORDER BY revenue DESC").collect()]
        gold = {"spark": gold_rows_spark(lake), "pyiceberg": gold_rows_pyiceberg(lake),
                "duckdb": gold_rows_duckdb(lake)}
        return PipelineResult(row_counts=counts, silver_orders_schema=schema,
                              silver_orders_schema_versions=len(silver_orders.metadata.schemas),
                              silver_orders_history=silver_history(lake), view_rows=view_rows,
                              gold_by_engine=gold, timings=dict(lake.timings))  # fmt: skip


def format_summary(result: PipelineResult) -> str:
    lines = ["Row counts:"]
    lines += [f"  {name:<18} {count:>7}" for name, count in result.row_counts.items()]
    lines.append(f"silver.orders schema (schema version {result.silver_orders_schema_versions}):")
    lines += [f"  {name:<12} {kind}" for name, kind in result.silver_orders_schema]
    lines.append("silver.orders snapshots (one MERGE per batch):")
    lines += [f"  {s.snapshot_id:>20}  {s.operation:<9} +{s.added_records} -{s.deleted_records} rows, "
              f"{s.total_records} in total" for s in result.silver_orders_history]  # fmt: skip
    lines.append(f"{GOLD_VIEW} (view):")
    lines += [f"  {category:<12} {orders:>5} orders {units:>6} units {revenue:>12} revenue"
              for category, orders, units, revenue in result.view_rows]  # fmt: skip
    counts = ", ".join(f"{engine} {len(rows)} rows" for engine, rows in result.gold_by_engine.items())
    lines.append(f"{GOLD_TABLE} read by {counts}: " + ("identical" if result.engines_agree else "DIFFERENT"))
    lines.append("Time per step: " + ", ".join(f"{step} {seconds:.1f}s" for step, seconds in result.timings.items()))
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# running it


def run_pipeline(spark: SparkSession, catalog_uri: str = DEFAULT_CATALOG_URI, warehouse: str = DEFAULT_WAREHOUSE, *,
                 spark_catalog: str = DEFAULT_SPARK_CATALOG, token: str | None = None,
                 dataset: Dataset | None = None) -> PipelineResult:  # fmt: skip
    """The whole pipeline on ``spark`` against ``warehouse`` of the catalog at ``catalog_uri``."""
    lake = connect(spark, catalog_uri, warehouse, spark_catalog=spark_catalog, token=token)
    dataset = dataset or generate_dataset()
    prepare(lake)
    for batch in dataset.batches:
        load_batch(lake, batch)
    create_gold_view(lake)
    return collect_result(lake)


def start_spark(catalog_uri: str = DEFAULT_CATALOG_URI, warehouse: str = DEFAULT_WAREHOUSE, *,
                spark_catalog: str = DEFAULT_SPARK_CATALOG, master: str | None = None, token: str | None = None,
                jars_mode: str | None = None) -> SparkSession:  # fmt: skip
    """A SparkSession with the Iceberg runtime whose default catalog is the warehouse.

    A notebook kernel that already has a session (a PySpark kernel, or a test run) keeps it: Spark
    loads jars once per JVM, and :func:`connect` adds the catalog to any running session.
    """
    from pyspark.sql import SparkSession

    from lakekeeper_host.engines.spark import build_spark_session

    if (active := SparkSession.getActiveSession()) is not None:
        return active
    return build_spark_session(catalog_uri, warehouse, catalog_name=spark_catalog, master=master, token=token,
                               jars_mode=jars_mode, app_name="lakehouse-pipeline")  # type: ignore[arg-type]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--catalog-uri", default=DEFAULT_CATALOG_URI, help="Iceberg REST base URI (without /v1)")
    parser.add_argument("--warehouse", default=DEFAULT_WAREHOUSE)
    parser.add_argument("--token", help="bearer token, when the catalog requires authentication")
    parser.add_argument("--master", help="Spark master URL (default local[*] or $LAKEKEEPER_SPARK_MASTER)")
    parser.add_argument("--jars-mode", choices=("auto", "offline", "online"), help="where the Iceberg jars come from")
    parser.add_argument("--spark-catalog", default=DEFAULT_SPARK_CATALOG, help="the catalog's name inside Spark")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--orders", type=int, default=1500, help="number of orders to generate")
    args = parser.parse_args(argv)

    from pyspark.sql import SparkSession

    dataset = generate_dataset(args.seed, orders=args.orders)
    print(dataset.describe(), flush=True)
    borrowed = SparkSession.getActiveSession() is not None  # e.g. a notebook kernel's: it stays up
    spark = start_spark(args.catalog_uri, args.warehouse, spark_catalog=args.spark_catalog, master=args.master,
                        token=args.token, jars_mode=args.jars_mode)  # fmt: skip
    try:
        result = run_pipeline(spark, args.catalog_uri, args.warehouse, spark_catalog=args.spark_catalog,
                              token=args.token, dataset=dataset)  # fmt: skip
    finally:
        if not borrowed:
            spark.stop()
    print(format_summary(result))
    return 0 if result.engines_agree else 1


if __name__ == "__main__":
    sys.exit(main())
