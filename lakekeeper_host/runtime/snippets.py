"""Copy-paste connection settings for PyIceberg, Spark and DuckDB."""

from __future__ import annotations

import textwrap

from lakekeeper_host.engines.spark import offline_jars_missing, spark_snippet


def client_snippets(catalog_uri: str, warehouse: str, *, authenticated: bool = False) -> dict[str, str]:
    """Paste-ready code per client (the CLI banner and the console's "connect compute" panel); each one
    runs as copied on a machine with this package (and its ``spark`` / ``duckdb`` extras) installed.

    ``authenticated`` adds a ``<token>`` placeholder where the client takes a bearer token.
    """
    token_arg = ', token="<token>"' if authenticated else ""
    duckdb_auth = (
        f"CREATE SECRET lakekeeper_token (TYPE iceberg, TOKEN '<token>');\n"
        f"ATTACH '{warehouse}' AS lakekeeper (TYPE iceberg, ENDPOINT '{catalog_uri}', SECRET lakekeeper_token);"
        if authenticated
        else f"ATTACH '{warehouse}' AS lakekeeper (TYPE iceberg, ENDPOINT '{catalog_uri}', AUTHORIZATION_TYPE 'none');"
    )
    return {
        "PyIceberg": (
            "from pyiceberg.catalog.rest import RestCatalog\n"
            f'catalog = RestCatalog("lakekeeper", uri="{catalog_uri}", warehouse="{warehouse}"{token_arg})\n'
        ),
        "Spark": (
            "# PySpark 3.5 on Java 17 with the Iceberg runtime from local jars (pip install 'lakekeeper-host[spark]';\n"
            "# without Maven access run scripts/build-spark-jars.sh once first) or, where Maven answers, from there\n"
            "from lakekeeper_host.engines.spark import build_spark_session\n"
            "\n"
            f'spark = build_spark_session("{catalog_uri}", "{warehouse}"{token_arg})\n'
            "spark.sql(\"SHOW NAMESPACES IN lakekeeper\").show()\n"
        ),
        "DuckDB": (
            "-- DuckDB 1.5.5. Offline, first run: python -m lakekeeper_host.engines.duckdb_util --install-extensions\n"
            "-- (puts the iceberg, httpfs and avro extensions of the PyPI wheels where INSTALL finds them)\n"
            "INSTALL iceberg; LOAD iceberg;\n"
            f"{duckdb_auth}\n"
        ),
    }


def spark_offline_note() -> str:
    """Whether ``build_spark_session`` works here without Maven Central, said before its snippet."""
    missing = offline_jars_missing()
    if not missing:
        return "works offline: the Iceberg jars are on this machine"
    return "offline, first install " + "; ".join(missing) + " -- with Maven Central reachable it fetches them"


def connection_snippets(catalog_uri: str, warehouse: str, *, authenticated: bool = False) -> str:
    snippets = {name: textwrap.indent(code, "    ").rstrip() for name, code in
                client_snippets(catalog_uri, warehouse, authenticated=authenticated).items()}
    token_arg = ', token="<token>"' if authenticated else ""
    maven_spark = textwrap.indent(spark_snippet(catalog_uri, warehouse), "    ").rstrip()
    return f"""
Lakekeeper is serving the Iceberg REST catalog at {catalog_uri} (warehouse {warehouse!r}).

PyIceberg:
{snippets["PyIceberg"]}

PySpark with this package (Iceberg runtime 1.10, Java 17; {spark_offline_note()}):
    from lakekeeper_host.engines.spark import build_spark_session
    spark = build_spark_session("{catalog_uri}", "{warehouse}"{token_arg})
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lakekeeper.demo")

PySpark anywhere else (fetches the Iceberg runtime from Maven Central):
{maven_spark}

DuckDB from Python, offline (pip install -e '.[duckdb]': DuckDB 1.5.5 with its extensions from PyPI wheels):
    from lakekeeper_host.engines.duckdb_util import attach_catalog, connect_duckdb
    con = connect_duckdb()
    attach_catalog(con, "lakekeeper", "{catalog_uri}", "{warehouse}")
    con.sql("CREATE SCHEMA IF NOT EXISTS lakekeeper.demo")

DuckDB from a shell: python -m lakekeeper_host.engines.duckdb_util --uri {catalog_uri} --warehouse {warehouse} "SHOW ALL TABLES"

DuckDB elsewhere (INSTALL downloads; offline, use the LOAD lines of python -m lakekeeper_host.engines.duckdb_util --print-load):
{snippets["DuckDB"]}
"""  # noqa: E501 (a command a user copies stays on one line)
