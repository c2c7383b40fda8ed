"""Tables: one module per catalog operation; ``commit/`` holds the commit protocol."""

from __future__ import annotations

from lakekeeper_host.server.tables.create import create_table
from lakekeeper_host.server.tables.drop import drop_table
from lakekeeper_host.server.tables.load import load_etag, load_table, table_exists
from lakekeeper_host.server.tables.register import register_table

__all__ = ["create_table", "drop_table", "load_etag", "load_table", "register_table", "table_exists"]
