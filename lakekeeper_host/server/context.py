"""Resolving what a catalog request is about: warehouse (from the prefix), namespace, names.

Shared by every ``/catalog/v1`` route (tables, views, ...). Path parameters arrive **still
percent-encoded** (``api/catalog.py`` routes ``/catalog/v1`` on the raw request path so that
``%2F`` inside a name cannot split a path segment); decode them only with
:func:`parse_namespace_path` and :func:`parse_name_path`.

Decoding follows Lakekeeper: ``+`` means a space (Java and Spark encode spaces that way, which
is why ``+`` is forbidden in new names), parts of a multi-level namespace are joined by ``%1F``.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from typing import Any
from urllib.parse import unquote_plus

from lakekeeper_host.errors import CatalogError, bad_request, no_such_namespace, no_such_warehouse
from lakekeeper_host.service.state import AppState
from lakekeeper_host.store import namespaces as namespace_store
from lakekeeper_host.store import warehouses as warehouse_store
from lakekeeper_host.store.namespaces import NAMESPACE_SEPARATOR, NamespaceRow
from lakekeeper_host.store.warehouses import WarehouseRow

MAX_NAMESPACE_DEPTH = 5


# ---------------------------------------------------------------- decoding names


def parse_namespace_path(raw: str) -> list[str]:
    """A ``{namespace}`` path parameter (raw, percent-encoded) -> its parts."""
    return [unquote_plus(part) for part in _split_separator(raw)]


def parse_name_path(raw: str) -> str:
    """A ``{table}``/``{view}`` path parameter (raw, percent-encoded) -> the name."""
    return unquote_plus(raw)


def parse_namespace_query(value: str | None) -> list[str] | None:
    """The ``parent`` query parameter (already query-decoded once) -> parts, None when absent/empty.

    Clients encode each part before putting it into the query (PyIceberg with ``quote``, Java with
    ``URLEncoder``), so the value is decoded once more here.
    """
    if not value:
        return None
    return [unquote_plus(part) for part in _split_separator(value)]


_SEPARATOR = re.compile("%1[fF]|\x1f")


def _split_separator(value: str) -> list[str]:
    # the separator arrives encoded (%1F, in paths) or decoded (\x1f, in query values)
    return _SEPARATOR.split(value)


def namespace_to_path(parts: Sequence[str]) -> str:
    """The URL form of a namespace (parts joined by ``\\x1f``), e.g. for events and links."""
    return NAMESPACE_SEPARATOR.join(parts)


def ident(namespace: Sequence[str], name: str) -> str:
    """``ns1.ns2.name``, the form the Iceberg messages use."""
    return ".".join([*namespace, name])


# ---------------------------------------------------------------- validating names


def validate_namespace(parts: Sequence[str]) -> None:
    """Rules for any namespace identifier (Lakekeeper ``validate_namespace_ident``)."""
    if not parts:
        raise bad_request("Namespace must not be empty", "NamespacePartEmpty")
    if len(parts) > MAX_NAMESPACE_DEPTH:
        raise bad_request(f"Namespace exceeds maximum depth of {MAX_NAMESPACE_DEPTH}", "NamespaceDepthExceeded")
    if any("." in part for part in parts):
        raise bad_request(f"Namespace parts cannot contain '.': {list(parts)}", "NamespacePartContainsDot")
    if any(part == "" for part in parts):
        raise bad_request(f"Namespace parts cannot be empty: {list(parts)}", "NamespacePartEmpty")


def validate_new_namespace(parts: Sequence[str]) -> None:
    """Extra rules on create: no ``+`` (it decodes to a space in URLs)."""
    validate_namespace(parts)
    if any("+" in part for part in parts):
        raise bad_request("Namespace cannot contain '+' character.", "InvalidNamespace")
    if any(NAMESPACE_SEPARATOR in part for part in parts):
        raise bad_request("Namespace parts cannot contain the unit separator (0x1F)", "InvalidNamespace")


def validate_name(name: str) -> None:
    if not name:
        raise bad_request("name of the identifier cannot be empty", "IdentifierNameEmpty")


def validate_new_name(name: str, kind: str = "Table") -> None:
    """Rules for the name of a new (or renamed) table or view."""
    validate_name(name)
    if "+" in name:
        raise bad_request(f"{kind} name cannot contain '+' character.", f"Invalid{kind}Name")


# ---------------------------------------------------------------- resolving


async def require_warehouse(state: AppState, prefix: str | None) -> WarehouseRow:
    """The ACTIVE warehouse named by the ``{prefix}`` (its id); inactive or missing is a 404."""
    if not prefix:
        raise bad_request("No prefix specified. The warehouse-id must be provided as prefix in the URL.",
                          "NoPrefixProvided")
    try:
        warehouse_id = str(uuid.UUID(prefix))
    except ValueError:
        raise no_such_warehouse(f"Warehouse {prefix} not found") from None
    warehouse = await warehouse_store.get_warehouse_cached(state.store, warehouse_id)
    if warehouse is None or not warehouse.is_active:
        raise no_such_warehouse(f"Warehouse {prefix} not found")
    return warehouse


async def current_warehouse(state: AppState, warehouse: WarehouseRow, version: int, status: str) -> WarehouseRow:
    """``warehouse`` (maybe from the cache) checked against the ``version``/``status`` a query just
    read: a newer row (changed on another replica) is fetched; inactive or gone is a 404."""
    if warehouse.version == version and status == "active":
        return warehouse
    return await refresh_warehouse(state, warehouse.id)


async def refresh_warehouse(state: AppState, warehouse_id: str) -> WarehouseRow:
    """The active warehouse as the database has it now (re-cached); 404 when inactive or gone."""
    warehouse_store.forget_warehouse(state.store, warehouse_id)
    fresh = await warehouse_store.get_warehouse_cached(state.store, warehouse_id)
    if fresh is None or not fresh.is_active:
        raise no_such_warehouse(f"Warehouse {warehouse_id} not found")
    return fresh


async def get_namespace(state: AppState, warehouse: WarehouseRow, parts: Sequence[str]) -> NamespaceRow | None:
    return await namespace_store.get_namespace(state.store, warehouse.id, parts)


async def require_namespace(state: AppState, warehouse: WarehouseRow, parts: Sequence[str]) -> NamespaceRow:
    """The namespace, or 404 ``NoSuchNamespaceException`` "Namespace does not exist: a.b"."""
    namespace = await get_namespace(state, warehouse, parts)
    if namespace is None:
        raise no_such_namespace(parts)
    return namespace


async def authorize(
    state: AppState, meta: Any, action: str, kind: str, object_id: str, warehouse: WarehouseRow
) -> None:
    """AUTHZ through the configured authorizer (403 on denial)."""
    from lakekeeper_host.server.warehouses import authorize as authorize_action

    await authorize_action(state, meta, action, kind, object_id, warehouse.id)


def conflict_for_existing(kind_found: str, namespace: Sequence[str], name: str, kind_wanted: str) -> CatalogError:
    """409 for a name already used in the namespace, worded as the Iceberg tests expect.

    The same kind: "Table already exists: ns.t"; the other kind: "View with same name already
    exists: ns.t" (tables and views share one name space).
    """
    from lakekeeper_host.errors import already_exists

    label = "Table" if kind_found == "table" else "View"
    if kind_found == kind_wanted:
        return already_exists(f"{label} already exists: {ident(namespace, name)}")
    return already_exists(f"{label} with same name already exists: {ident(namespace, name)}")


# ---------------------------------------------------------------- pagination


def page_limit(state: AppState, page_token: str | None, page_size: int | None) -> int:
    """Lakekeeper's page size: the requested size clamped to [1, max]; without a size, the
    default (100) when paging (``pageToken`` present, even empty) and the maximum otherwise."""
    host = state.settings.host
    if page_size is not None:
        return max(1, min(page_size, host.pagination_size_max))
    return host.pagination_size_default if page_token is not None else host.pagination_size_max


def encode_page_token(*keys: str) -> str:
    """An opaque keyset cursor (the sort key of the last item returned)."""
    import base64
    import json

    return base64.urlsafe_b64encode(json.dumps(list(keys), separators=(",", ":")).encode()).decode().rstrip("=")


def decode_page_token(token: str | None, arity: int) -> tuple[str, ...] | None:
    """The keys of a token from :func:`encode_page_token`; None for no/empty token, 400 if foreign."""
    import base64
    import binascii
    import json

    if not token:
        return None
    try:
        keys = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    except (ValueError, binascii.Error):
        keys = None
    if not isinstance(keys, list) or len(keys) != arity or not all(isinstance(k, str) for k in keys):
        raise bad_request(f"Invalid pageToken {token!r}", "InvalidPageToken")
    return tuple(keys)
