"""Copy-paste connection settings for PyIceberg, Spark and DuckDB."""

from __future__ import annotations


def connection_snippets(catalog_uri: str, warehouse: str) -> str:
    return f"""
Lakekeeper is serving the Iceberg REST catalog at {catalog_uri} (warehouse {warehouse!r}).

PyIceberg:
    from pyiceberg.catalog.rest import RestCatalog
    catalog = RestCatalog("lakekeeper", uri="{catalog_uri}", warehouse="{warehouse}")

PySpark (Iceberg runtime 1.10, see README for offline jars):
    from lakekeeper_host.spark import build_spark_session
    spark = build_spark_session("{catalog_uri}", "{warehouse}")
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lakekeeper.demo")

DuckDB:
    ATTACH '{warehouse}' AS lakekeeper (TYPE iceberg, ENDPOINT '{catalog_uri}', AUTHORIZATION_TYPE 'none');
"""
