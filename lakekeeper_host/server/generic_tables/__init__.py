"""Lakekeeper's Generic Table API (``/lakekeeper/v1``): tables of any format beside Iceberg.

A generic table has a name, an opaque ``format`` (``lance``, ``parquet``, ``delta``, ...), a base
location, and free-form ``schema``, ``statistics``, ``properties`` and ``doc``. Engines write the
data themselves; the catalog gives it an identity in a namespace (one name space with tables and
views), access control (the ``generic_table`` resource kind: Lakekeeper's generic-table actions),
vended credentials or remote signing scoped to its location, soft deletion, protection and purge.

What tables, views and generic tables share lives in ``server/tabulars`` (locations, listing,
rename, deletion, protection); this package holds what is generic-table specific: create, load,
credentials, drop, and the JSON of the answers.
"""

from __future__ import annotations

from lakekeeper_host.server.generic_tables.create import create_generic_table
from lakekeeper_host.server.generic_tables.drop import drop_generic_table
from lakekeeper_host.server.generic_tables.load import (
    list_generic_tables,
    load_generic_table,
    load_generic_table_credentials,
)
from lakekeeper_host.server.tabulars.rename import rename_generic_table

__all__ = [
    "create_generic_table",
    "drop_generic_table",
    "list_generic_tables",
    "load_generic_table",
    "load_generic_table_credentials",
    "rename_generic_table",
]
