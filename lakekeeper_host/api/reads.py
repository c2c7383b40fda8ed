"""The catalog's read routes, answered below Quart.

loadTable, loadView, loadNamespace, their HEAD existence checks and the three list calls are
nearly all of a catalog's traffic: every query an engine plans starts with a loadTable. Quart's
request context, routing, hooks and response objects cost about as much CPU per request as the
read itself, so :class:`ReadLane` answers these requests straight from ASGI, inside the one ASGI
wrapper of ``api/pipeline.py``, with the same pipeline steps (authentication, headers, metrics,
endpoint statistics, time limit, ErrorModels) as every other route.

Quart still declares these routes (``api/catalog.py``, ``api/views.py``): ``/config``'s
``endpoints``, 405 with ``Allow`` and the OpenAPI documents come from its URL map, and whatever
the lane passes on (other methods, OPTIONS, a trailing slash, a server still starting) Quart
serves through the same handlers (:func:`serve_in_quart`). Path parameters are raw
(percent-encoded), as everywhere under ``/catalog/v1`` (see ``api/catalog.py``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl

from attrs import frozen
from quart import Response, request

from lakekeeper_host.api.common import metadata, parse_bool, parse_int, state
from lakekeeper_host.errors import CatalogError
from lakekeeper_host.server import namespaces, tables, tabulars, views
from lakekeeper_host.server.names import parse_name_path, parse_namespace_path, parse_namespace_query
from lakekeeper_host.server.resolve import catalog_warehouse
from lakekeeper_host.service.request import RequestMetadata
from lakekeeper_host.service.state import AppState
from lakekeeper_host.service.storage import DataAccess

if TYPE_CHECKING:
    from lakekeeper_host.api.pipeline import Pipeline

log = logging.getLogger(__name__)

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

    @classmethod
    def error(cls, error: CatalogError) -> Reply:
        body = json.dumps(error.to_model(), separators=(",", ":")).encode()
        return cls(error.code, body, {"Content-Type": "application/json", **error.headers})


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
    """One read endpoint: its Quart rule (metrics and statistics name endpoints by it), the
    methods the lane answers and the handler."""

    rule: str
    methods: frozenset[str]
    handler: Handler
    params: tuple[str, ...]


_NS = "/catalog/v1/<prefix>/namespaces"
_GET, _GET_HEAD = frozenset({"GET"}), frozenset({"GET", "HEAD"})
# keyed by (number of path segments after /catalog/v1/, the segment after the namespace or None)
ROUTES: dict[tuple[int, str | None], ReadRoute] = {
    (2, None): ReadRoute(_NS, _GET, list_namespaces, ("prefix",)),
    (3, None): ReadRoute(f"{_NS}/<namespace>", _GET_HEAD, load_namespace, ("prefix", "namespace")),
    (4, "tables"): ReadRoute(f"{_NS}/<namespace>/tables", _GET, list_tables, ("prefix", "namespace")),
    (5, "tables"): ReadRoute(f"{_NS}/<namespace>/tables/<table>", _GET_HEAD, load_table,
                             ("prefix", "namespace", "table")),
    (4, "views"): ReadRoute(f"{_NS}/<namespace>/views", _GET, list_views, ("prefix", "namespace")),
    (5, "views"): ReadRoute(f"{_NS}/<namespace>/views/<view>", _GET_HEAD, load_view,
                            ("prefix", "namespace", "view")),
}


def match(method: str, raw_path: str) -> tuple[ReadRoute, dict[str, str]] | None:
    """The read route for a raw request path, with its raw parameters; None: not a lane request."""
    if not raw_path.startswith(CATALOG_PREFIX):
        return None
    segments = raw_path[len(CATALOG_PREFIX):].split("/")
    if len(segments) < 2 or segments[1] != "namespaces" or "" in segments:
        return None
    route = ROUTES.get((len(segments), segments[3] if len(segments) > 3 else None))
    if route is None or method not in route.methods:
        return None
    # parameters are the even positions: prefix, namespace, table/view
    return route, dict(zip(route.params, segments[0::2], strict=False))


# ---------------------------------------------------------------- serving


class _Headers(dict):
    """Request headers keyed by lower-case name (ASGI sends them lower-cased already)."""

    def get(self, key: str, default: Any = None) -> Any:
        return super().get(key.lower(), default)

    def __getitem__(self, key: str) -> Any:
        return super().__getitem__(key.lower())


class ReadLane:
    """Answers the read routes straight from ASGI, through the same :class:`~lakekeeper_host.api.pipeline.Pipeline`
    steps Quart's hooks use; :meth:`serve` returns False for anything it leaves to Quart."""

    def __init__(self, steps: Pipeline):
        self.steps = steps

    async def refuse_body(self, scope: dict[str, Any], send: Any) -> bool:
        """Answer 413 for a request whose declared body is over the limit (any route); False otherwise."""
        headers = _Headers((k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"])
        error = self.steps.refuse_body(headers)
        if error is None:
            return False
        started = time.perf_counter()
        request_id = self.steps.request_id(headers)
        status, body, error_headers = self.steps.error_model(error, scope["method"], scope["path"], request_id)
        reply = Reply(status, json.dumps(body, separators=(",", ":")).encode(),
                      {"Content-Type": "application/json", "Connection": "close", **error_headers})
        await self._send(scope, send, reply, request_id, headers)
        self.steps.observe(scope["method"], "unmatched", status, time.perf_counter() - started,
                           headers.get("x-project-id"), scope["path"], None)
        return True

    async def _send(self, scope: dict[str, Any], send: Any, reply: Reply, request_id: str, headers: _Headers) -> None:
        out = []
        for name, value in {**reply.headers, **self.steps.response_headers(request_id, scope["path"],
                                                                             headers.get("origin"))}.items():
            out.append((name.lower().encode(), value.encode("latin-1")))
        if reply.status not in (204, 304):  # RFC 9110: neither carries a Content-Length of its own
            out.append((b"content-length", str(len(reply.body)).encode()))
        await send({"type": "http.response.start", "status": reply.status, "headers": out})
        await send({"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else reply.body})

    async def serve(self, scope: dict[str, Any], raw_path: str, send: Any) -> bool:
        method = scope["method"]
        state = self.steps.state
        if method not in ("GET", "HEAD") or state is None:  # not a read, or the server is still starting
            return False
        found = match(method, raw_path)
        if found is None:
            return False
        route, params = found
        started = time.perf_counter()
        steps = self.steps
        headers = _Headers((k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"])
        request_id = steps.request_id(headers)
        try:
            async with asyncio.timeout(steps.time_limit):
                actor = await steps.authenticate(method, scope["path"], headers)
                host = headers.get("host") or "{}:{}".format(*scope["server"])
                req = ReadRequest(
                    method=method,
                    params=params,
                    args=dict(reversed(parse_qsl(scope.get("query_string", b"").decode("latin-1"),
                                                 keep_blank_values=True))),
                    headers=headers,
                    meta=steps.metadata(request_id, actor, scope.get("scheme", "http"), host, headers),
                )
                reply = await route.handler(state, req)
        except Exception as error:  # noqa: BLE001 - every failure becomes an ErrorModel, as in Quart
            status, body, error_headers = steps.error_model(error, method, scope["path"], request_id)
            reply = Reply(status, json.dumps(body, separators=(",", ":")).encode(),
                          {"Content-Type": "application/json", **error_headers})

        await self._send(scope, send, reply, request_id, headers)
        steps.observe(method, route.rule, reply.status, time.perf_counter() - started,
                      headers.get("x-project-id"), scope["path"], params)
        return True


async def serve_in_quart(handler: Handler, **params: str) -> Response:
    """A read handler under Quart (for the requests the lane passes on)."""
    req = ReadRequest(
        method=request.method,
        params=params,
        args={key: request.args.get(key) for key in request.args},
        headers=request.headers,
        meta=metadata(),
    )
    reply = await handler(state(), req)
    return Response(reply.body, status=reply.status, headers=dict(reply.headers))
