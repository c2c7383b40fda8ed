"""The catalog's read routes: one table (:data:`ROUTES`) that every way in is generated from.

loadTable, loadView, loadNamespace, their HEAD existence checks and the three list calls are
nearly all of a catalog's traffic: every query an engine plans starts with a loadTable. Quart's
request context, routing, hooks and response objects cost about as much CPU per request as the
read itself, so the one ASGI wrapper of ``api/pipeline.py`` answers these requests straight from
ASGI when :func:`match` finds them in the table. Quart's rules for the same routes are generated
from the same table (:func:`register`, called by ``api/catalog.py`` and ``api/views.py``): ``/config``'s
``endpoints``, 405 with ``Allow`` and the OpenAPI documents come from Quart's URL map, and whatever
the lane passes on (other methods, a trailing slash, a server still starting) Quart serves with
the same handlers. Either way the request goes through ``Pipeline.run``, the one place the
pipeline's steps are ordered.

Handlers see a :class:`ReadRequest` and return a :class:`Reply`; path parameters are raw
(percent-encoded), as everywhere under ``/catalog/v1`` (see ``api/catalog.py``).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from attrs import field, frozen
from quart import Blueprint, Response, request

from lakekeeper_host.api.common import metadata, parse_bool, parse_int, state
from lakekeeper_host.server import namespaces, tables, tabulars, views
from lakekeeper_host.server.names import parse_name_path, parse_namespace_path, parse_namespace_query
from lakekeeper_host.server.resolve import catalog_warehouse
from lakekeeper_host.service.request import RequestMetadata
from lakekeeper_host.service.state import AppState
from lakekeeper_host.service.storage import DataAccess

CATALOG_PREFIX = "/catalog/v1/"


@frozen
class ReadRequest:
    """What a read handler sees: raw path parameters, query parameters (first value of each),
    headers (case-insensitive ``get``) and who asks."""

    method: str
    params: Mapping[str, str]
    args: Mapping[str, str]
    headers: Any
    meta: RequestMetadata

    def flag(self, name: str) -> bool:
        return parse_bool(name, self.args.get(name))

    def number(self, name: str) -> int | None:
        return parse_int(name, self.args.get(name))

    @property
    def access(self) -> DataAccess:
        return DataAccess.from_header(self.headers.get("x-iceberg-access-delegation"))


@frozen
class Reply:
    status: int
    body: bytes = b""
    headers: Mapping[str, str] = {}

    @classmethod
    def json(cls, payload: Any, headers: Mapping[str, str] | None = None) -> Reply:
        text = payload if isinstance(payload, str) else json.dumps(payload, separators=(",", ":"))
        return cls(200, text.encode(), {"Content-Type": "application/json", **(headers or {})})


NO_CONTENT = Reply(204)
Handler = Callable[[AppState, ReadRequest], Awaitable[Reply]]


def _etag(etag: str | None) -> dict[str, str]:
    return {"ETag": etag} if etag else {}


# ---------------------------------------------------------------- the handlers


async def list_namespaces(st: AppState, req: ReadRequest) -> Reply:
    warehouse = await catalog_warehouse(st, req.params["prefix"])
    return Reply.json(await namespaces.list_namespaces(
        st, req.meta, warehouse, parse_namespace_query(req.args.get("parent")),
        page_token=req.args.get("pageToken"), page_size=req.number("pageSize"),
        return_uuids=req.flag("returnUuids"), return_protection_status=req.flag("returnProtectionStatus"),
    ))


async def load_namespace(st: AppState, req: ReadRequest) -> Reply:
    warehouse = await catalog_warehouse(st, req.params["prefix"])
    parts = parse_namespace_path(req.params["namespace"])
    if req.method == "HEAD":
        await namespaces.namespace_exists(st, req.meta, warehouse, parts)
        return NO_CONTENT
    return Reply.json(await namespaces.load_namespace(
        st, req.meta, warehouse, parts, return_uuid=req.flag("returnUuid")
    ))


async def list_tables(st: AppState, req: ReadRequest) -> Reply:
    warehouse = await catalog_warehouse(st, req.params["prefix"])
    return Reply.json(await tabulars.list_tabular_identifiers(
        st, req.meta, warehouse, parse_namespace_path(req.params["namespace"]), "table",
        page_token=req.args.get("pageToken"), page_size=req.number("pageSize"),
        return_uuids=req.flag("returnUuids"), return_protection_status=req.flag("returnProtectionStatus"),
    ))


async def load_table(st: AppState, req: ReadRequest) -> Reply:
    warehouse = await catalog_warehouse(st, req.params["prefix"])
    parts, name = parse_namespace_path(req.params["namespace"]), parse_name_path(req.params["table"])
    if req.method == "HEAD":
        await tables.table_exists(st, req.meta, warehouse, parts, name)
        return NO_CONTENT
    body, etag = await tables.load_table(
        st, req.meta, warehouse, parts, name, snapshots=req.args.get("snapshots"), access=req.access,
        if_none_match=req.headers.get("if-none-match"),
    )
    if body is None:
        return Reply(304, b"", _etag(etag))
    return Reply.json(body, _etag(etag))


async def list_views(st: AppState, req: ReadRequest) -> Reply:
    warehouse = await catalog_warehouse(st, req.params["prefix"])
    return Reply.json(await views.list_views(
        st, req.meta, warehouse, parse_namespace_path(req.params["namespace"]),
        page_token=req.args.get("pageToken"), page_size=req.number("pageSize"),
        return_uuids=req.flag("returnUuids"), return_protection_status=req.flag("returnProtectionStatus"),
    ))


async def load_view(st: AppState, req: ReadRequest) -> Reply:
    warehouse = await catalog_warehouse(st, req.params["prefix"])
    parts, name = parse_namespace_path(req.params["namespace"]), parse_name_path(req.params["view"])
    if req.method == "HEAD":
        await views.view_exists(st, req.meta, warehouse, parts, name)
        return NO_CONTENT
    return Reply.json(await views.load_view(st, req.meta, warehouse, parts, name, req.access))


@frozen
class ReadRoute:
    """One read endpoint: the Quart blueprint and endpoint name it is registered under, its rule
    (metrics and statistics name endpoints by it), the methods the lane answers and the handler.

    A rule alternates parameters and literal segments below ``/catalog/v1/`` (``<prefix>/namespaces/
    <namespace>/tables/<table>``), which is what lets :func:`match` find a route with one dict lookup.
    """

    blueprint: str
    endpoint: str
    rule: str
    methods: frozenset[str]
    handler: Handler
    params: tuple[str, ...] = field(init=False)
    literals: tuple[str, ...] = field(init=False)

    @params.default
    def _params(self) -> tuple[str, ...]:
        return tuple(segment.strip("<>") for segment in self._segments()[0::2])

    @literals.default
    def _literals(self) -> tuple[str, ...]:
        return tuple(self._segments()[1::2])

    def _segments(self) -> list[str]:
        if not self.rule.startswith(CATALOG_PREFIX):
            raise ValueError(f"read route {self.rule} is not below {CATALOG_PREFIX}")
        segments = self.rule[len(CATALOG_PREFIX):].split("/")
        if any(s.startswith("<") != (i % 2 == 0) for i, s in enumerate(segments)):
            raise ValueError(f"read route {self.rule} does not alternate <parameter>/literal segments")
        return segments


_NS = "/catalog/v1/<prefix>/namespaces"
_GET, _GET_HEAD = frozenset({"GET"}), frozenset({"GET", "HEAD"})

ROUTES: tuple[ReadRoute, ...] = (
    ReadRoute("catalog", "list_namespaces", _NS, _GET, list_namespaces),
    ReadRoute("catalog", "load_namespace", f"{_NS}/<namespace>", _GET_HEAD, load_namespace),
    ReadRoute("catalog", "list_tables", f"{_NS}/<namespace>/tables", _GET, list_tables),
    ReadRoute("catalog", "load_table", f"{_NS}/<namespace>/tables/<table>", _GET_HEAD, load_table),
    ReadRoute("views", "list_views", f"{_NS}/<namespace>/views", _GET, list_views),
    ReadRoute("views", "load_view", f"{_NS}/<namespace>/views/<view>", _GET_HEAD, load_view),
)

# (number of segments below /catalog/v1/, the literal segments) -> route
_INDEX: dict[tuple[int, tuple[str, ...]], ReadRoute] = {
    (len(route.params) + len(route.literals), route.literals): route for route in ROUTES
}


def match(method: str, raw_path: str) -> tuple[ReadRoute, dict[str, str]] | None:
    """The read route for a raw request path, with its raw parameters; None: not a lane request."""
    if not raw_path.startswith(CATALOG_PREFIX):
        return None
    segments = raw_path[len(CATALOG_PREFIX):].split("/")
    if "" in segments:
        return None
    route = _INDEX.get((len(segments), tuple(segments[1::2])))
    if route is None or method not in route.methods:
        return None
    return route, dict(zip(route.params, segments[0::2], strict=True))


# ---------------------------------------------------------------- the Quart rules, from the same table


def quart_view(route: ReadRoute) -> Callable[..., Awaitable[Response]]:
    """The Quart view of a read route (``__wrapped__`` is the handler, for the OpenAPI checks)."""
    handler = route.handler

    @functools.wraps(handler)
    async def view(**params: str) -> Response:
        req = ReadRequest(
            method=request.method,
            params=params,
            args={key: request.args.get(key) for key in request.args},
            headers=request.headers,
            meta=metadata(),
        )
        reply = await handler(state(), req)
        return Response(reply.body, status=reply.status, headers=dict(reply.headers))

    return view


def register(blueprint: Blueprint) -> None:
    """Add the read routes that belong to ``blueprint`` (by name) as Quart rules."""
    for route in ROUTES:
        if route.blueprint == blueprint.name:
            rule = route.rule.removeprefix(blueprint.url_prefix or "")
            blueprint.add_url_rule(rule, route.endpoint, quart_view(route), methods=sorted(route.methods))
