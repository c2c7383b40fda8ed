"""Fixtures of the Spark suite: every test drives our catalog through the Iceberg Java REST client.

The one SparkSession (``spark``) and the per-test catalog (``spark_catalog``, a fresh ``file``
warehouse on the shared server of each backend) come from tests/conftest.py.
"""

from __future__ import annotations

import pytest


@pytest.fixture
def rows(spark):
    """Run a query and return its rows as sorted plain tuples (Spark gives no order without ORDER BY)."""

    def collect(query: str) -> list[tuple]:
        return sorted(tuple(row) for row in spark.sql(query).collect())

    return collect
