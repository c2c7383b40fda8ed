"""Compute engines beside the catalog: Spark and DuckDB sessions wired to it, and the Spark table-maintenance
driver with its ``lakekeeper maintain`` command.

These are clients of the catalog (they reach it over REST like any engine) and depend only on the kernel
(config, errors, serde); the server starts the maintenance driver as a separate process. pyspark and duckdb
are optional: nothing here imports them until a session is asked for.
"""
