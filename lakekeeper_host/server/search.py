"""Searching a warehouse by name: who may search, and the namespace search beside Lakekeeper's
``search-tabular`` (``server/tabulars/deletion.py``).

As in Lakekeeper, searching needs ``use`` on the warehouse; a caller with ``list_everything`` sees
every match, anyone else only what they may list (``include_in_list``), checked on more candidates
than are answered so that hidden matches do not crowd out visible ones.
"""

from __future__ import annotations

from typing import Any

from lakekeeper_host.errors import bad_request
from lakekeeper_host.server.authorize import authorize_warehouse, is_allowed, visible
from lakekeeper_host.server.namespaces.admin import decode_name
from lakekeeper_host.server.resolve import require_warehouse
from lakekeeper_host.service.authz import Resource
from lakekeeper_host.service.request import RequestMetadata
from lakekeeper_host.service.state import AppState
from lakekeeper_host.store import tabular_admin
from lakekeeper_host.store.warehouses import WarehouseRow

SEARCH_RESULTS = 10  # answers of a search, as Lakekeeper
SEARCH_CANDIDATES = 200  # matches read for a caller whose view is filtered
MAX_TERM = 64  # characters of the search string used, as Lakekeeper


async def search_scope(
    state: AppState, meta: RequestMetadata, warehouse_id: str, body: Any
) -> tuple[WarehouseRow, str, bool]:
    """(warehouse, search term, whether the caller may list everything) of a search request."""
    if not isinstance(body, dict) or not isinstance(body.get("search"), str):
        raise bad_request("Invalid request body: expected a string @ body.search")
    warehouse = await require_warehouse(state, warehouse_id, active_only=True)
    await authorize_warehouse(state, meta, "use", warehouse.id)
    everything = await is_allowed(state, meta, "list_everything", Resource("warehouse", warehouse.id, warehouse.id))
    return warehouse, body["search"][:MAX_TERM], everything


def distance(term: str, name: str, object_id: str) -> float:
    """Lower is a better match: 0 when the term is the whole name (or the id), else the share of the name
    the term does not cover (Lakekeeper ranks by trigram distance, which PostgreSQL alone has)."""
    if object_id == term:
        return 0.0
    return round(1 - min(len(term), len(name)) / max(len(name), 1), 4)


async def search_namespaces(
    state: AppState, meta: RequestMetadata, warehouse_id: str, body: Any
) -> list[dict[str, Any]]:
    """``POST .../search-namespace`` ``{"search": "..."}``: namespaces whose name contains the term (or whose
    id is it), best first; ``{"namespace-name", "namespace-id", "distance"}`` each."""
    warehouse, term, everything = await search_scope(state, meta, warehouse_id, body)
    rows = await tabular_admin.search_namespaces(
        state.store, warehouse.id, term, limit=SEARCH_RESULTS if everything else SEARCH_CANDIDATES)
    if not everything:
        rows = await visible(state, meta, rows, lambda r: Resource("namespace", r["id"], warehouse.id))
    results = []
    for row in rows[:SEARCH_RESULTS]:
        parts = decode_name(row["name"])
        results.append({"namespace-name": parts, "namespace-id": row["id"],
                        "distance": distance(term, ".".join(parts), row["id"])})
    return sorted(results, key=lambda r: r["distance"])
