"""The one request pipeline: every request, answered by Quart or by the read lane, goes through
:meth:`Pipeline.run`, the one place its steps are ordered:

    request id -> refusal (declared body too large, read-only maintenance) -> CORS preflight
      -> [cut off after MAX_REQUEST_TIME: authentication -> RequestMetadata -> handler]
      -> ErrorModel for any failure -> response headers (x-request-id, cache policy, CORS)
      -> metrics and endpoint statistics

Two kinds of :class:`Exchange` feed it: :class:`LaneExchange`, a read route of ``api/reads.py``
answered straight from ASGI, and :class:`QuartExchange`, every other request, which
:class:`PipelineQuart` hands over in place of Quart's own dispatch. :class:`PipelineASGI`, the one
ASGI wrapper in front of Quart, routes ``/catalog/v1`` on the raw path and picks between them.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl

from quart import Quart, Response, current_app, g, request, request_started
from werkzeug.exceptions import HTTPException, RequestEntityTooLarge
from werkzeug.routing import RoutingException

from lakekeeper_host.api.common import (
    base_uri_for,
    internal_error_model,
    json_response,
    policy_headers,
    request_timeout,
)
from lakekeeper_host.api.reads import ReadRequest, ReadRoute, Reply, match
from lakekeeper_host.config import Settings
from lakekeeper_host.errors import CatalogError, service_unavailable
from lakekeeper_host.ids import new_id
from lakekeeper_host.metrics import Metrics
from lakekeeper_host.server.management import roles, users
from lakekeeper_host.server.management.statistics import http_route, request_ids
from lakekeeper_host.service.authz import ANONYMOUS, Actor
from lakekeeper_host.service.request import RequestMetadata
from lakekeeper_host.service.state import AppState

log = logging.getLogger(__name__)

# the console (/ui, and / redirecting there) signs its users in itself and calls the API with their tokens
# /trino: Trino sends no token to its policy endpoint; the key in the path is checked by server/trino_opa.py
OPEN_PATHS = ("/health", "/swagger-ui", "/api-docs", "/ui", "/trino", "/")
CONFIG_PATH = "/catalog/v1/config"
EXTENSION = "lakekeeper_pipeline"
COUNTED_PREFIXES = ("/catalog/", "/management/", "/lakekeeper/")
# routed on the raw (still percent-encoded) path: names may hold "/" (see PipelineASGI)
RAW_ROUTED = (b"/catalog/v1/", b"/lakekeeper/v1/")


def loggable_path(path: str) -> str:
    """``path`` without the key of the Trino policy routes (``/trino/{key}/...``), which is a credential."""
    if path.startswith("/trino/"):
        _, _, rest = path[len("/trino/"):].partition("/")
        return f"/trino/<redacted>/{rest}"
    return path


def is_open(path: str) -> bool:
    """Routes anyone may call without a token: health and the API documents."""
    return any(path == p or path.startswith(p + "/") for p in OPEN_PATHS)


class Pipeline:
    """The steps every request shares. ``state`` is set by the app's lifespan once backends exist."""

    def __init__(self, settings: Settings, metrics: Metrics):
        self.settings = settings
        self.metrics = metrics
        self.state: AppState | None = None
        self.time_limit = settings.host.max_request_time.total_seconds()

    # ------------------------------------------------------------ before the handler

    @staticmethod
    def request_id(headers: Mapping[str, str]) -> str:
        return headers.get("x-request-id") or new_id()

    def refusal(self, method: str, path: str, headers: Mapping[str, str]) -> CatalogError | None:
        """Why a request is refused before authentication (a declared body over the limit, read-only
        maintenance mode), or None."""
        too_large = self.refuse_body(headers)
        if too_large is not None:
            return too_large
        if self.settings.host.maintenance_mode != "read-only" or method in ("GET", "HEAD", "OPTIONS"):
            return None
        if not path.startswith(("/catalog/", "/management/", "/lakekeeper/")):
            return None
        error = service_unavailable("The server is in read-only maintenance mode", "MaintenanceModeError")
        error.headers["Retry-After"] = "60"
        return error

    async def authenticate(self, method: str, path: str, headers: Mapping[str, str]) -> Actor:
        """The caller: verifies the bearer token, resolves ``x-assume-role`` and registers users on
        their first ``GET /catalog/v1/config``. Anonymous without an identity provider, and on the
        open routes."""
        state = self.state
        authenticator = state.authenticator if state is not None else None
        if authenticator is None or method == "OPTIONS" or is_open(path):
            return ANONYMOUS
        actor = await authenticator.authenticate(headers.get("authorization"))
        assume = headers.get("x-assume-role")
        if assume:
            actor = await roles.resolve_assumed_role(state, actor, assume)
        read_only = self.settings.host.maintenance_mode == "read-only"
        if method == "GET" and path.rstrip("/") == CONFIG_PATH and not read_only:
            await users.ensure_user_provisioned(state, actor)
        return actor

    def metadata(self, request_id: str, actor: Actor, scheme: str, host: str,
                 headers: Mapping[str, str]) -> RequestMetadata:
        return RequestMetadata(
            request_id=request_id,
            actor=actor,
            base_uri=base_uri_for(self.settings, scheme, host, headers),
            project_id=headers.get("x-project-id") or None,
            user_agent=headers.get("user-agent", ""),
            idempotency_key=headers.get("idempotency-key") or None,
        )

    # ------------------------------------------------------------ after the handler

    def error_model(self, error: BaseException, method: str, path: str,
                    request_id: str) -> tuple[int, dict[str, Any], dict[str, str]]:
        """Status, ErrorModel body and headers for whatever a handler raised. Unexpected errors are
        logged with an id; the body carries only that id."""
        if isinstance(error, HTTPException):
            error = self.http_error(error, method, path)
        if isinstance(error, CatalogError):
            if error.code >= 500:
                log.error("request %s failed: %s %s", request_id, error.type, error.message)
            return error.code, error.to_model(), dict(error.headers)
        if isinstance(error, TimeoutError):
            timeout = request_timeout(self.time_limit)
            return timeout.code, timeout.to_model(), {}
        error_id = new_id()
        log.error("unexpected error %s in %s %s", error_id, method, loggable_path(path), exc_info=error)
        return 500, internal_error_model(error_id), {}

    def http_error(self, error: HTTPException, method: str, path: str) -> CatalogError:
        """Quart's routing and protocol errors (404, 405 with ``Allow``, a body over the limit) as
        CatalogErrors."""
        if isinstance(error, RequestEntityTooLarge):
            return self.body_too_large()
        names = {404: "NotFoundException", 405: "MethodNotAllowed", 408: "RequestTimeout"}
        message = error.description or error.name
        headers = {}
        allowed = sorted(getattr(error, "valid_methods", None) or ())
        if error.code == 404:
            message = f"No route for {method} {path}"
        elif error.code == 405 and allowed:
            # RFC 9110: a 405 names the methods the resource does support
            message = f"Method {method} is not allowed for {path}; allowed: {', '.join(allowed)}"
            headers["Allow"] = ", ".join(allowed)
        type_ = names.get(error.code, error.name.replace(" ", ""))
        return CatalogError(error.code or 500, type_, message, headers=headers)

    def body_too_large(self, content_length: int | None = None) -> CatalogError:
        limit = self.settings.host.max_request_body_size
        size = f"{content_length} bytes exceed" if content_length is not None else "exceeds"
        # a declared body is refused unread: the connection cannot be reused
        return CatalogError(
            413, "RequestEntityTooLarge",
            f"Request body too large: {size} the limit of {limit} bytes (LAKEKEEPER__MAX_REQUEST_BODY_SIZE)",
            headers={"Connection": "close"} if content_length is not None else {},
        )

    def refuse_body(self, headers: Any) -> CatalogError | None:
        """A declared ``Content-Length`` above ``MAX_REQUEST_BODY_SIZE``: refused before anything reads the
        body, on every route (a chunked body is cut off while Quart reads it: ``MAX_CONTENT_LENGTH``)."""
        declared = headers.get("content-length")
        if not declared:
            return None
        try:
            length = int(declared)
        except ValueError:
            return None  # h11 has already answered a malformed Content-Length with 400
        return self.body_too_large(length) if length > self.settings.host.max_request_body_size else None

    def response_headers(self, request_id: str, path: str, origin: str | None) -> dict[str, str]:
        return {"x-request-id": request_id, **policy_headers(self.settings.host.allow_origin, path, origin)}

    def observe(self, method: str, rule: str, status: int, elapsed: float, project_header: str | None,
                path: str, params: Mapping[str, Any] | None) -> None:
        """Prometheus request metrics and the endpoint statistics (an in-memory counter)."""
        self.metrics.observe_request(method, rule, status, elapsed)
        buffer = self.state.endpoint_stats if self.state is not None else None
        if buffer is None or not rule.startswith(COUNTED_PREFIXES):
            return
        project_id, warehouse_id = request_ids(project_header, path, params)
        buffer.record(project_id, warehouse_id, http_route(method, rule), status)

    # ------------------------------------------------------------ the order of the steps

    async def run(self, exchange: Exchange) -> Any:
        """Every step, in order, for one request; returns the exchange's finished reply."""
        started = time.perf_counter()
        headers = exchange.headers
        request_id = self.request_id(headers)
        try:
            reply = await self._answer(exchange, request_id)
        except Exception as error:  # noqa: BLE001 - every failure becomes an ErrorModel
            status, body, error_headers = self.error_model(error, exchange.method, exchange.path, request_id)
            reply = exchange.error(status, body, error_headers)
        reply = exchange.finish(reply, self.response_headers(request_id, exchange.path, headers.get("origin")))
        rule, params = exchange.route()
        self.observe(exchange.method, rule, exchange.status(reply), time.perf_counter() - started,
                     headers.get("x-project-id"), exchange.path, params)
        return reply

    async def _answer(self, exchange: Exchange, request_id: str) -> Any:
        method, path, headers = exchange.method, exchange.path, exchange.headers
        refusal = self.refusal(method, path, headers)
        if refusal is not None:
            raise refusal
        if method == "OPTIONS" and self.settings.host.allow_origin:
            return exchange.preflight()
        async with asyncio.timeout(self.time_limit):
            actor = await self.authenticate(method, path, headers)
            return await exchange.handle(self.metadata(request_id, actor, exchange.scheme, exchange.host, headers))


def pipeline() -> Pipeline:
    return current_app.extensions[EXTENSION]


class Exchange:
    """One request as :meth:`Pipeline.run` sees it, whoever answers it: what it was asked, how to
    answer it (``handle``), and how an answer is built, finished with headers and measured."""

    method: str
    path: str
    headers: Mapping[str, str]
    scheme: str
    host: str

    async def handle(self, meta: RequestMetadata) -> Any:
        raise NotImplementedError

    def preflight(self) -> Any:
        raise NotImplementedError

    def error(self, status: int, body: dict[str, Any], headers: dict[str, str]) -> Any:
        raise NotImplementedError

    def finish(self, reply: Any, headers: dict[str, str]) -> Any:
        raise NotImplementedError

    def status(self, reply: Any) -> int:
        raise NotImplementedError

    def route(self) -> tuple[str, Mapping[str, Any] | None]:
        """The rule metrics and endpoint statistics count the request under, and its parameters."""
        raise NotImplementedError


# ---------------------------------------------------------------- the read lane (ASGI)


class _Headers(dict):
    """Request headers keyed by lower-case name (ASGI sends them lower-cased already)."""

    def get(self, key: str, default: Any = None) -> Any:
        return super().get(key.lower(), default)

    def __getitem__(self, key: str) -> Any:
        return super().__getitem__(key.lower())


class LaneExchange(Exchange):
    """A read route of ``api/reads.py`` (or a request refused before routing: ``route`` None),
    answered straight from ASGI."""

    def __init__(self, state: AppState | None, scope: dict[str, Any], headers: _Headers,
                 found: tuple[ReadRoute, dict[str, str]] | None):
        self.state = state
        self.scope = scope
        self.method = scope["method"]
        self.path = scope["path"]
        self.headers = headers
        self.scheme = scope.get("scheme", "http")
        self.host = headers.get("host") or "{}:{}".format(*scope["server"])
        self.found = found

    async def handle(self, meta: RequestMetadata) -> Reply:
        if self.found is None or self.state is None:
            raise RuntimeError("the read lane was given a request it cannot answer")
        route, params = self.found
        query = self.scope.get("query_string", b"").decode("latin-1")
        req = ReadRequest(method=self.method, params=params,
                          args=dict(reversed(parse_qsl(query, keep_blank_values=True))),
                          headers=self.headers, meta=meta)
        return await route.handler(self.state, req)

    def preflight(self) -> Reply:
        return Reply(204)

    def error(self, status: int, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        return Reply(status, json.dumps(body, separators=(",", ":")).encode(),
                     {"Content-Type": "application/json", **headers})

    def finish(self, reply: Reply, headers: dict[str, str]) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        out = [(name.lower().encode(), value.encode("latin-1")) for name, value in {**reply.headers, **headers}.items()]
        if reply.status not in (204, 304):  # RFC 9110: neither carries a Content-Length of its own
            out.append((b"content-length", str(len(reply.body)).encode()))
        return reply.status, out, b"" if self.method == "HEAD" else reply.body

    def status(self, reply: tuple[int, list[tuple[bytes, bytes]], bytes]) -> int:
        return reply[0]

    def route(self) -> tuple[str, Mapping[str, Any] | None]:
        return (self.found[0].rule, self.found[1]) if self.found is not None else ("unmatched", None)


# ---------------------------------------------------------------- every other request (Quart)


class QuartExchange(Exchange):
    """A request Quart routes: its view (with the blueprints' own before/after hooks and error
    handlers, such as the console's) answers inside the pipeline."""

    def __init__(self, app: Quart, request_context: Any):
        self.app = app
        self.request_context = request_context
        self.method = request.method
        self.path = request.path
        self.headers = request.headers
        self.scheme = request.scheme
        self.host = request.host

    async def handle(self, meta: RequestMetadata) -> Response:
        g.request_metadata = meta
        app = self.app
        await request_started.send_async(app, _sync_wrapper=app.ensure_async)
        try:
            result = await app.preprocess_request(self.request_context)
            if result is None:
                result = await app.dispatch_request(self.request_context)
        except Exception as error:
            # redirects Quart's router asks for, and errors a blueprint handles itself (the
            # console's pages), stay Quart's; every other failure becomes the pipeline's ErrorModel
            if not isinstance(error, RoutingException) and app._find_error_handler(error, request.blueprints) is None:
                raise
            result = await app.handle_user_exception(error)
        return await app.make_response(result)

    def preflight(self) -> Response:
        return Response(b"", status=204)

    def error(self, status: int, body: dict[str, Any], headers: dict[str, str]) -> Response:
        return json_response(body, status, headers=headers)

    def finish(self, reply: Response, headers: dict[str, str]) -> Response:
        for name, value in headers.items():
            if name == "Cache-Control":
                reply.headers.setdefault(name, value)  # the S3 signer sets its own
            else:
                reply.headers[name] = value
        return reply

    def status(self, reply: Response) -> int:
        return reply.status_code

    def route(self) -> tuple[str, Mapping[str, Any] | None]:
        rule = request.url_rule.rule if request.url_rule is not None else "unmatched"
        return rule, request.view_args


class PipelineQuart(Quart):
    """Quart whose requests go through :meth:`Pipeline.run` instead of Quart's own
    ``full_dispatch_request``; the blueprints' after-request hooks and the session still run."""

    async def full_dispatch_request(self, request_context=None):
        response = await self.extensions[EXTENSION].run(QuartExchange(self, request_context))
        return await self.finalize_request(response, request_context)


# ---------------------------------------------------------------- the ASGI wrapper


class PipelineASGI:
    """The one ASGI wrapper in front of Quart.

    ``/catalog/v1/...`` and ``/lakekeeper/v1/...`` (the Generic Table API) are routed on the undecoded
    path (a table named ``a/b`` arrives as ``a%2Fb`` and must not split a path segment; handlers
    decode parameters with ``server/names.py``). The read routes, and any request whose declared body
    is over the limit, are answered here through :class:`LaneExchange` without Quart's per-request
    machinery.
    """

    def __init__(self, steps: Pipeline, inner: Any):
        self.steps = steps
        self.inner = inner

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") == "http":
            steps = self.steps
            found = None
            raw = scope.get("raw_path")
            raw_routed = bool(raw) and raw.startswith(RAW_ROUTED)
            if raw_routed:
                raw_path = raw.split(b"?", 1)[0].decode("utf-8", "replace")
                # the lane answers reads once the server is up; while it starts Quart answers (503s)
                if scope["method"] in ("GET", "HEAD") and steps.state is not None:
                    found = match(scope["method"], raw_path)
            headers = _Headers((k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"])
            if found is not None or steps.refuse_body(headers) is not None:
                status, out, body = await steps.run(LaneExchange(steps.state, scope, headers, found))
                await send({"type": "http.response.start", "status": status, "headers": out})
                await send({"type": "http.response.body", "body": body})
                return
            if raw_routed:
                scope = {**scope, "path": raw_path}
        await self.inner(scope, receive, send)


request_log = logging.getLogger("lakekeeper_host.requests")
LOGGED_BODY_BYTES = 65536  # of each request and response body


class RequestLogASGI:
    """``LAKEKEEPER__DEBUG__LOG_REQUEST_BODIES`` / ``__LOG_AUTHORIZATION_HEADER``: every request and its
    answer at debug level (logger ``lakekeeper_host.requests``; ``RUST_LOG=info,lakekeeper=debug`` shows
    it). Put in front of the app only when one of them is set, so other servers pay nothing."""

    def __init__(self, inner: Any, *, bodies: bool, authorization: bool):
        self.inner, self.bodies, self.authorization = inner, bodies, authorization

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") != "http" or not request_log.isEnabledFor(logging.DEBUG):
            await self.inner(scope, receive, send)
            return
        received, sent, status = bytearray(), bytearray(), [0]

        async def logged_receive() -> Any:
            message = await receive()
            if self.bodies and message.get("type") == "http.request":
                received.extend(message.get("body", b"")[: LOGGED_BODY_BYTES - len(received)])
            return message

        async def logged_send(message: Any) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            elif self.bodies and message["type"] == "http.response.body":
                sent.extend(message.get("body", b"")[: LOGGED_BODY_BYTES - len(sent)])
            await send(message)

        headers = {}
        for name, value in scope.get("headers", ()):
            key = name.decode("latin-1").lower()
            headers[key] = value.decode("latin-1") if key != "authorization" or self.authorization else "<redacted>"
        try:
            await self.inner(scope, logged_receive, logged_send)
        finally:
            request_log.debug(
                "%s %s -> %s; headers %s%s", scope.get("method"), loggable_path(scope.get("path", "")), status[0],
                headers,
                f"; request body {bytes(received).decode('utf-8', 'replace')!r}; "
                f"response body {bytes(sent).decode('utf-8', 'replace')!r}" if self.bodies else "",
            )


def install(app: PipelineQuart, settings: Settings, metrics: Metrics) -> Pipeline:
    """Put the pipeline into ``app`` (whose dispatch runs it) and the ASGI wrapper in front of it."""
    steps = Pipeline(settings, metrics)
    app.extensions[EXTENSION] = steps
    app.asgi_app = PipelineASGI(steps, app.asgi_app)
    debug = settings.host.debug
    if debug.log_request_bodies or debug.log_authorization_header:
        app.asgi_app = RequestLogASGI(app.asgi_app, bodies=debug.log_request_bodies,
                                      authorization=debug.log_authorization_header)
    return steps
