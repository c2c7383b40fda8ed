"""S3 remote signing (Lakekeeper ``server/s3_signer/sign.rs``, reference §1.4).

A client that received ``s3.signer=S3V4RestSigner`` sends every S3 request here before making
it. We find the table (an Iceberg table or a generic table) the request touches, check that every
object it names lies inside that table and that the caller may read (GET/HEAD) or write
(PUT/POST/DELETE) its data -- ``read_data``/``write_data`` on that table or generic table -- and
then let the warehouse's storage sign it with the warehouse credential.

"Inside" is decided on path segments: a list ``prefix`` must end in the table's folder (``<table>/``,
not ``<table>`` which also lists ``<table>-private/``), no key may have a ``.``/``..`` segment
(``%2e`` spelled too: a server or proxy may resolve it), and the source of a copy
(``x-amz-copy-source``, read by the signed PUT) is checked like the object itself.

The storage object must offer what ``RemoteSigner`` describes; today that is the S3 plugin.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree
from typing import Any, Protocol, runtime_checkable
from urllib.parse import parse_qsl, unquote, urlsplit

from attrs import field, frozen

from lakekeeper_host.errors import CatalogError, action_forbidden, bad_request, no_such_warehouse, not_found
from lakekeeper_host.server.authorize import actor_allowed
from lakekeeper_host.service.authz import Resource
from lakekeeper_host.service.request import RequestMetadata
from lakekeeper_host.service.state import AppState
from lakekeeper_host.service.storage import has_dot_segment
from lakekeeper_host.store import signer as signer_store
from lakekeeper_host.store import warehouses as warehouse_store

READ, WRITE, DELETE = "read", "write", "delete"
_VIRTUAL_HOST = re.compile(r"^((.+)\.)?(s3[.-]([a-z0-9-]+)(\..*)?)$")


@runtime_checkable
class RemoteSigner(Protocol):
    """What a storage offers to be signable (the S3 plugin's ``S3Storage``)."""

    region: str
    remote_signing_enabled: bool
    remote_signing_url_style: str  # auto | path | virtual_host

    async def sign_request(
        self, *, method: str, uri: str, headers: dict[str, list[str]], body: str | None, region: str
    ) -> tuple[str, dict[str, list[str]]]: ...


@frozen
class SignRequest:
    """``S3SignRequest`` of the Iceberg REST spec."""

    region: str
    uri: str
    method: str
    headers: dict[str, list[str]] = field(factory=dict)
    body: str | None = None


@frozen
class ObjectLocation:
    bucket: str
    key: str  # decoded; "" for the bucket itself
    # a ListObjects prefix: what it reveals is every key starting with it, so it must end in a folder
    prefix: bool = False

    def location(self, scheme: str = "s3") -> str:
        return f"{scheme}://{self.bucket}/{self.key}".rstrip("/")


@frozen
class ParsedRequest:
    operation: str
    locations: list[ObjectLocation]


# ---------------------------------------------------------------- parsing the request to sign


def parse_request(uri: str, method: str, body: str | None, url_style: str) -> ParsedRequest:
    parts = urlsplit(uri)
    if parts.scheme not in ("http", "https"):
        raise bad_request(
            "URI to sign does not have a supported scheme. Expected https or http", "UriSchemeNotSupported"
        )
    method = method.upper()
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    bulk_delete = method == "POST" and "delete" in query
    if method in ("GET", "HEAD"):
        operation = READ
    elif method in ("PUT", "POST"):
        operation = DELETE if bulk_delete else WRITE
    elif method == "DELETE":
        operation = DELETE
    else:
        raise CatalogError(405, "MethodNotAllowed", "Method not allowed")

    bucket_level = bulk_delete or (operation == READ and "prefix" in query) or "list-type" in query
    if url_style == "virtual_host":
        bucket, key = _virtual_host(parts, known=True)
    elif url_style == "path":
        bucket, key = _path_style(parts, bucket_level)
    else:
        try:
            bucket, key = _virtual_host(parts, known=False)
        except CatalogError:
            bucket, key = _path_style(parts, bucket_level)

    if bulk_delete:
        if body is None:
            raise bad_request("Delete requests require a body", "DeleteWithoutBody")
        locations = [ObjectLocation(bucket, k) for k in delete_keys(body)]
    elif not key and operation == READ and "prefix" in query:
        # ListObjects(V2): what it reveals is everything under ``prefix``
        locations = [ObjectLocation(bucket, query["prefix"], prefix=True)]
    else:
        locations = [ObjectLocation(bucket, key)]
    for location in locations:
        if has_dot_segment(location.key):
            raise bad_request(
                f"Request URI location {location.location()} has a '.' or '..' path segment", "InvalidPathSegment"
            )
    return ParsedRequest(operation, locations)


COPY_SOURCE = "x-amz-copy-source"


def copy_source(headers: dict[str, list[str]], method: str) -> ObjectLocation | None:
    """The object a PUT with ``x-amz-copy-source: [/]bucket/key[?versionId=..]`` reads; only a PUT may copy."""
    values = [v for name, vs in headers.items() if name.lower() == COPY_SOURCE for v in vs]
    if not values:
        return None
    if method.upper() != "PUT":
        raise CatalogError(403, "CopyNotSignable", "Only requests that write an object may copy")
    if len(values) != 1 or "," in values[0]:
        raise bad_request(f"The header {COPY_SOURCE} must have exactly one value", "InvalidHeaderValue")
    bucket, _, key = values[0].strip().lstrip("/").partition("/")
    key = unquote(key.partition("?")[0])
    if not bucket or not key:
        raise bad_request(f"The header {COPY_SOURCE} must name a bucket and a key", "InvalidHeaderValue")
    source = ObjectLocation(unquote(bucket), key)
    if has_dot_segment(source.key):
        raise bad_request(f"{COPY_SOURCE} {source.location()} has a '.' or '..' path segment", "InvalidPathSegment")
    return source


def _virtual_host(parts, *, known: bool) -> tuple[str, str]:
    host = parts.hostname or ""
    if known or host.endswith(".r2.cloudflarestorage.com"):
        bucket, dot, _ = host.partition(".")
        if not dot:
            raise bad_request(
                "Invalid virtual-host style URL: Expected at least one point in hostname", "InvalidHostStyleURL"
            )
    else:
        match = _VIRTUAL_HOST.match(host)
        if not match or not match.group(2):
            raise bad_request("URI does not match S3 host style", "UriNotS3")
        bucket = match.group(2)
    return bucket, _decode(parts.path.lstrip("/"))


def _path_style(parts, bucket_level: bool) -> tuple[str, str]:
    segments = parts.path.lstrip("/").split("/", 1)
    if not segments[0] or (len(segments) < 2 and not bucket_level):
        raise bad_request("Path style uri needs at least 2 path segments", "UriNotS3")
    return _decode(segments[0]), _decode(segments[1]) if len(segments) > 1 else ""


def _decode(path: str) -> str:
    return "/".join(unquote(segment) for segment in path.split("/"))


def delete_keys(body: str) -> list[str]:
    """The object keys of a ``DeleteObjects`` XML body."""
    try:
        root = ElementTree.fromstring(body)
    except ElementTree.ParseError as exc:
        raise bad_request(f"XML Body parsing error: {exc}", "InvalidDeleteBody") from None
    keys = [
        key.text or ""
        for obj in root
        if _local(obj.tag) == "Object"
        for key in obj
        if _local(key.tag) == "Key"
    ]
    if _local(root.tag) != "Delete" or not keys:
        raise bad_request("No objects found in delete request", "InvalidDeleteBody")
    return keys


def _local(tag: str) -> str:
    return tag.rpartition("}")[2]


def ancestor_locations(location: ObjectLocation) -> list[str]:
    """Every location a table containing this object could have (all schemes, with/without '/')."""
    segments = [s for s in location.key.split("/") if s]
    out = []
    for depth in range(1, len(segments) + 1):
        path = "/".join(segments[:depth])
        for scheme in ("s3", "s3a", "s3n"):
            base = f"{scheme}://{location.bucket}/{path}"
            out += [base, base + "/"]
    return out


def is_inside(location: ObjectLocation, table_location: str) -> bool:
    """Sub-location check on path segments, ignoring the ``s3a``/``s3n`` aliases of ``s3``; a list
    prefix must lie below the table's folder (``<table>/...``), the table's name alone is not enough."""
    scheme, sep, rest = table_location.partition("://")
    if not sep or scheme.lower() not in ("s3", "s3a", "s3n") or has_dot_segment(location.key):
        return False
    bucket, _, key = rest.partition("/")
    key = key.strip("/")
    if bucket != location.bucket or not key:
        return False
    if location.prefix:
        return location.key.startswith(key + "/")
    return location.key == key or location.key.startswith(key + "/")


# ---------------------------------------------------------------- the endpoint


async def sign(
    state: AppState,
    meta: RequestMetadata,
    *,
    warehouse_id: str | None,
    tabular_id: str | None,
    request: SignRequest,
) -> tuple[dict[str, Any], str]:
    """Returns the ``S3SignResponse`` body and the ``Cache-Control`` value for the HTTP response."""
    # ---- VALIDATIONS ----
    if not warehouse_id:
        raise bad_request("No prefix specified; use the warehouse-scoped signer endpoint", "NoPrefixProvided")
    warehouse = await warehouse_store.get_warehouse(state.store, warehouse_id) if _is_uuid(warehouse_id) else None
    if warehouse is None or not warehouse.is_active:
        raise no_such_warehouse(f"Warehouse {warehouse_id} not found")

    # ---- AUTHZ ----
    actor = meta.actor
    if not await actor_allowed(state, actor, "use", Resource("warehouse", warehouse.id, warehouse.id)):
        raise no_such_warehouse(f"Warehouse {warehouse_id} not found")

    # ---- VALIDATIONS ----
    storage = await state.storage_for(warehouse)
    if not isinstance(storage, RemoteSigner):
        raise bad_request("Remote signing is only supported for S3 storage", "UnsupportedStorageType")
    if not storage.remote_signing_enabled:
        raise CatalogError(403, "RemoteSigningDisabled", "Remote signing is disabled for this storage profile")
    parsed = parse_request(request.uri, request.method, request.body, storage.remote_signing_url_style)
    source = copy_source(request.headers, request.method)
    table = await _resolve_table(state, warehouse.id, tabular_id, parsed)

    # ---- AUTHZ ----
    action = "read_data" if parsed.operation == READ else "write_data"
    resource = Resource(table.typ, table.id, warehouse.id) if table else None
    if resource is None or not await actor_allowed(state, actor, action, resource):
        if resource is None or not await actor_allowed(state, actor, "get_metadata", resource):
            raise not_found(f"No table found at {parsed.locations[0].location()}", "NoSuchTableException")
        raise action_forbidden(table.typ, action, table.id)

    # ---- VALIDATIONS ----
    if request.region != storage.region:
        raise bad_request(
            f"Region does not match storage profile (request {request.region!r}, table location {table.location})",
            "RegionMismatch",
        )
    for location in [*parsed.locations, *([source] if source else [])]:
        if not is_inside(location, table.location):
            raise _outside(location, table.location)

    # ---- BUSINESS LOGIC ----
    uri, headers = await storage.sign_request(
        method=request.method, uri=request.uri, headers=request.headers, body=request.body, region=request.region
    )
    cache_control = headers.get("Cache-Control", ["private"])[0]
    return {"uri": uri, "headers": headers}, cache_control


async def _resolve_table(
    state: AppState, warehouse_id: str, tabular_id: str | None, parsed: ParsedRequest
) -> signer_store.SignerTable | None:
    first = parsed.locations[0]
    by_id = None
    if tabular_id and _is_uuid(tabular_id):
        by_id = await signer_store.table_by_id(state.store, warehouse_id, tabular_id)
        if by_id is not None and all(is_inside(loc, by_id.location) for loc in parsed.locations):
            return by_id
    # PyIceberg <= 0.9.1 reused the first table's signer endpoint for every table, so a
    # table-scoped request that does not fit its table is looked up by location
    by_location = await signer_store.table_at_locations(state.store, warehouse_id, ancestor_locations(first))
    if by_location is None and by_id is not None:
        raise _outside(first, by_id.location)
    return by_location


def _outside(location: ObjectLocation, table_location: str) -> CatalogError:
    return CatalogError(
        403,
        "RequestUriMismatch",
        f"Request URI location {location.location()} lies outside the table location {table_location}",
    )


def _is_uuid(value: str) -> bool:
    import uuid

    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True
