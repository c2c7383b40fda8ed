"""The one request pipeline: every request, answered by Quart or by the read lane, goes through it.

    request id -> maintenance refusal -> authentication -> RequestMetadata
      -> handler (cut off after MAX_REQUEST_TIME) -> ErrorModel for any failure
      -> response headers (x-request-id, cache policy, CORS) -> metrics and endpoint statistics

:func:`install` wires it into the Quart app (request hooks and error handlers) and puts the one
ASGI wrapper, :class:`PipelineASGI`, in front of Quart: it routes ``/catalog/v1`` on the raw path
and answers the read routes itself (``api/reads.py``), calling the same :class:`Pipeline` methods.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from typing import Any

from quart import Quart, Response, current_app, g, request
from werkzeug.exceptions import HTTPException, RequestEntityTooLarge

from lakekeeper_host.api.common import (
    base_uri_for,
    error_response,
    internal_error_model,
    json_response,
    policy_headers,
    request_timeout,
)
from lakekeeper_host.api.reads import ReadLane
from lakekeeper_host.config import Settings
from lakekeeper_host.errors import CatalogError, service_unavailable
from lakekeeper_host.ids import new_id
from lakekeeper_host.metrics import Metrics
from lakekeeper_host.server import roles, users
from lakekeeper_host.server.statistics import http_route, request_ids
from lakekeeper_host.service.authz import ANONYMOUS, Actor
from lakekeeper_host.service.request import RequestMetadata
from lakekeeper_host.service.state import AppState

log = logging.getLogger(__name__)

# the console (/ui, and / redirecting there) signs its users in itself and calls the API with their tokens
OPEN_PATHS = ("/health", "/swagger-ui", "/api-docs", "/ui", "/")
CONFIG_PATH = "/catalog/v1/config"
EXTENSION = "lakekeeper_pipeline"
COUNTED_PREFIXES = ("/catalog/", "/management/", "/lakekeeper/")


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

    def refusal(self, method: str, path: str) -> CatalogError | None:
        """Why a request is refused before authentication (read-only maintenance mode), or None."""
        if self.settings.host.maintenance_mode != "read-only" or method in ("GET", "HEAD", "OPTIONS"):
            return None
        if not path.startswith(("/catalog/", "/management/")):
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
        if isinstance(error, CatalogError):
            if error.code >= 500:
                log.error("request %s failed: %s %s", request_id, error.type, error.message)
            return error.code, error.to_model(), dict(error.headers)
        if isinstance(error, TimeoutError):
            timeout = request_timeout(self.time_limit)
            return timeout.code, timeout.to_model(), {}
        error_id = new_id()
        log.error("unexpected error %s in %s %s", error_id, method, path, exc_info=error)
        return 500, internal_error_model(error_id), {}

    def body_too_large(self, content_length: int | None = None) -> CatalogError:
        limit = self.settings.host.max_request_body_size
        size = f"{content_length} bytes exceed" if content_length is not None else "exceeds"
        return CatalogError(
            413, "RequestEntityTooLarge",
            f"Request body too large: {size} the limit of {limit} bytes (LAKEKEEPER__MAX_REQUEST_BODY_SIZE)",
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


def pipeline() -> Pipeline:
    return current_app.extensions[EXTENSION]


class TimeLimitedQuart(Quart):
    """Quart whose route handlers are cut off after ``MAX_REQUEST_TIME`` (Lakekeeper answers 408).

    Cancelling the handler rolls back its open transaction; the TimeoutError becomes the 408
    ErrorModel through the pipeline.
    """

    async def dispatch_request(self, request_context=None):
        async with asyncio.timeout(self.extensions[EXTENSION].time_limit):
            return await super().dispatch_request(request_context)


class PipelineASGI:
    """The one ASGI wrapper in front of Quart.

    ``/catalog/v1/...`` is routed on the undecoded path (a table named ``a/b`` arrives as ``a%2Fb``
    and must not split a path segment; handlers decode parameters with ``server/names.py``), and the
    read routes are answered by the read lane without Quart's per-request machinery.
    """

    def __init__(self, steps: Pipeline, inner: Any):
        self.inner = inner
        self.lane = ReadLane(steps)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") == "http":
            if await self.lane.refuse_body(scope, send):
                return
            raw = scope.get("raw_path")
            if raw and raw.startswith(b"/catalog/v1/"):
                raw_path = raw.split(b"?", 1)[0].decode("utf-8", "replace")
                if await self.lane.serve(scope, raw_path, send):
                    return
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
                "%s %s -> %s; headers %s%s", scope.get("method"), scope.get("path"), status[0], headers,
                f"; request body {bytes(received).decode('utf-8', 'replace')!r}; "
                f"response body {bytes(sent).decode('utf-8', 'replace')!r}" if self.bodies else "",
            )


def install(app: TimeLimitedQuart, settings: Settings, metrics: Metrics) -> Pipeline:
    """Put the pipeline into ``app``: request hooks, error handlers, the ASGI wrapper."""
    steps = Pipeline(settings, metrics)
    app.extensions[EXTENSION] = steps
    app.asgi_app = PipelineASGI(steps, app.asgi_app)
    debug = settings.host.debug
    if debug.log_request_bodies or debug.log_authorization_header:
        app.asgi_app = RequestLogASGI(app.asgi_app, bodies=debug.log_request_bodies,
                                      authorization=debug.log_authorization_header)

    @app.before_request
    async def before_request():
        g.request_id = steps.request_id(request.headers)
        g.started = time.perf_counter()
        if request.method == "OPTIONS" and settings.host.allow_origin:
            return Response(b"", status=204)
        refusal = steps.refusal(request.method, request.path)
        if refusal is not None:
            return error_response(refusal)
        actor = await steps.authenticate(request.method, request.path, request.headers)
        g.request_metadata = steps.metadata(g.request_id, actor, request.scheme, request.host, request.headers)
        return None

    @app.after_request
    async def after_request(response: Response) -> Response:
        for name, value in steps.response_headers(getattr(g, "request_id", ""), request.path,
                                                  request.headers.get("origin")).items():
            if name == "Cache-Control":
                response.headers.setdefault(name, value)  # the S3 signer sets its own
            else:
                response.headers[name] = value
        rule = request.url_rule.rule if request.url_rule is not None else "unmatched"
        elapsed = time.perf_counter() - getattr(g, "started", time.perf_counter())
        steps.observe(request.method, rule, response.status_code, elapsed,
                      request.headers.get("x-project-id"), request.path, request.view_args)
        return response

    def reply(error: BaseException) -> Response:
        status, body, headers = steps.error_model(error, request.method, request.path, getattr(g, "request_id", "-"))
        return json_response(body, status, headers=headers)

    @app.errorhandler(CatalogError)
    async def handle_catalog_error(error: CatalogError):
        return reply(error)

    @app.errorhandler(RequestEntityTooLarge)
    async def handle_too_large(error):
        return reply(steps.body_too_large())

    @app.errorhandler(asyncio.TimeoutError)
    async def handle_timeout(error):
        return reply(error)

    @app.errorhandler(HTTPException)
    async def handle_http(error: HTTPException):
        names = {404: "NotFoundException", 405: "MethodNotAllowed", 408: "RequestTimeout"}
        message = error.description or error.name
        headers = {}
        allowed = sorted(getattr(error, "valid_methods", None) or ())
        if error.code == 404:
            message = f"No route for {request.method} {request.path}"
        elif error.code == 405 and allowed:
            # RFC 9110: a 405 names the methods the resource does support
            message = f"Method {request.method} is not allowed for {request.path}; allowed: {', '.join(allowed)}"
            headers["Allow"] = ", ".join(allowed)
        type_ = names.get(error.code, error.name.replace(" ", ""))
        return reply(CatalogError(error.code or 500, type_, message, headers=headers))

    @app.errorhandler(Exception)
    async def handle_unexpected(error: Exception):
        return reply(error)

    return steps
