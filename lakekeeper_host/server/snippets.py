"""Copy-paste connection settings for PyIceberg, Spark and DuckDB."""

from __future__ import annotations

import textwrap

from lakekeeper_host.spark import spark_snippet


def connection_snippets(catalog_uri: str, warehouse: str) -> str:
    plain_pyspark = textwrap.indent(spark_snippet(catalog_uri, warehouse), "    ").rstrip()
    return f"""
Lakekeeper is serving the Iceberg REST catalog at {catalog_uri} (warehouse {warehouse!r}).

PyIceberg:
    from pyiceberg.catalog.rest import RestCatalog
    catalog = RestCatalog("lakekeeper", uri="{catalog_uri}", warehouse="{warehouse}")

PySpark with this package (Iceberg runtime 1.10 from local jars offline, from Maven online; Java 17):
    from lakekeeper_host.spark import build_spark_session
    spark = build_spark_session("{catalog_uri}", "{warehouse}")
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lakekeeper.demo")

PySpark anywhere else (fetches the Iceberg runtime from Maven Central):
{plain_pyspark}

DuckDB:
    ATTACH '{warehouse}' AS lakekeeper (TYPE iceberg, ENDPOINT '{catalog_uri}', AUTHORIZATION_TYPE 'none');
"""
