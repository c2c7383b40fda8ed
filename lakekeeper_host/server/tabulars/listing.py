"""listTables / listViews / listGenericTables: one keyset-paginated listing for every kind."""

from __future__ import annotations

from typing import Any

from lakekeeper_host.errors import no_such_namespace
from lakekeeper_host.server.authorize import authorize, visible_page
from lakekeeper_host.server.names import (
    validate_namespace,
)
from lakekeeper_host.server.pagination import decode_page_token, encode_page_token, page_limit
from lakekeeper_host.server.resolve import (
    require_namespace,
)
from lakekeeper_host.service.authz import Resource
from lakekeeper_host.service.request import RequestMetadata
from lakekeeper_host.service.state import AppState
from lakekeeper_host.store import tabulars as tabular_store
from lakekeeper_host.store.namespaces import NamespaceRow
from lakekeeper_host.store.tabulars import TabularRow
from lakekeeper_host.store.warehouses import WarehouseRow


async def list_tabular_identifiers(
    state: AppState,
    meta: RequestMetadata,
    warehouse: WarehouseRow,
    parts: list[str],
    typ: str,
    *,
    page_token: str | None,
    page_size: int | None,
    return_uuids: bool = False,
    return_protection_status: bool = False,
) -> dict[str, Any]:
    """``{identifiers, next-page-token}`` for tables or views (keyset pagination, opaque tokens)."""
    namespace, rows, next_token = await tabular_page(
        state, meta, warehouse, parts, typ, page_token=page_token, page_size=page_size
    )
    result: dict[str, Any] = {
        "identifiers": [{"namespace": list(namespace.parts), "name": r.name} for r in rows],
        "next-page-token": next_token,
    }
    if return_uuids:
        result[f"{typ}-uuids"] = [r.id for r in rows]
    if return_protection_status:
        result["protection-status"] = [r.protected for r in rows]
    return result


async def tabular_page(
    state: AppState,
    meta: RequestMetadata,
    warehouse: WarehouseRow,
    parts: list[str],
    typ: str,
    *,
    page_token: str | None,
    page_size: int | None,
) -> tuple[NamespaceRow, list[TabularRow], str | None]:
    """One page of the tables, views or generic tables (``typ``) of a namespace the caller may see,
    and the token of the next page (None on the last): the namespace, its rows, the token."""
    validate_namespace(parts)
    after = decode_page_token(page_token, str, str)
    limit = page_limit(state, page_token, page_size)
    namespace = await require_namespace(state, warehouse, parts)
    await authorize(state, meta, f"list_{typ}s", "namespace", namespace.id, warehouse.id,
                    hidden=no_such_namespace(parts))

    async def fetch(key: tuple[str, str] | None, n: int, ids: frozenset[str] | None) -> list[TabularRow]:
        return await tabular_store.list_tabulars(state.store, namespace.id, typ, after=key, limit=n, ids=ids)

    rows, more = await visible_page(
        state, meta, fetch, lambda r: (r.name.casefold(), r.id), lambda r: Resource(typ, r.id, warehouse.id),
        after=after, limit=limit, kind=typ, everything=Resource("namespace", namespace.id, warehouse.id),
    )
    next_token = encode_page_token(rows[-1].name.casefold(), rows[-1].id) if more and rows else None
    return namespace, rows, next_token
