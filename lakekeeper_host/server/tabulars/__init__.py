"""What tables and views share: locations, listing, rename, soft deletion and protection."""

from __future__ import annotations

from lakekeeper_host.server.tabulars.listing import list_tabular_identifiers
from lakekeeper_host.server.tabulars.rename import rename_tabular, rename_view

__all__ = ["list_tabular_identifiers", "rename_tabular", "rename_view"]
