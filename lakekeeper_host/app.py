"""``create_app(settings, pm)``: the Quart application and its one lifespan."""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from typing import Any

import pluggy
from quart import Quart, Response, g, request
from werkzeug.exceptions import HTTPException, RequestEntityTooLarge

from lakekeeper_host.api import BLUEPRINTS
from lakekeeper_host.api.common import (
    error_response,
    internal_error_model,
    json_response,
    policy_headers,
    request_timeout,
    state,
)
from lakekeeper_host.api.reads import ReadLane
from lakekeeper_host.config import Settings
from lakekeeper_host.errors import CatalogError, service_unavailable
from lakekeeper_host.metrics import Metrics
from lakekeeper_host.registry import Registry
from lakekeeper_host.server.statistics import request_ids
from lakekeeper_host.store import new_id

log = logging.getLogger(__name__)


class _TimeLimitedQuart(Quart):
    """Quart whose route handlers are cut off after ``MAX_REQUEST_TIME`` (Lakekeeper answers 408).

    Cancelling the handler rolls back its open transaction; the TimeoutError becomes the 408
    ErrorModel in ``handle_timeout``.
    """

    async def dispatch_request(self, request_context=None):
        async with asyncio.timeout(self.config["LAKEKEEPER_MAX_REQUEST_TIME"]):
            return await super().dispatch_request(request_context)


def create_app(settings: Settings, pm: pluggy.PluginManager, *, registry: Registry | None = None) -> Quart:
    app = _TimeLimitedQuart("lakekeeper_host")
    app.config["MAX_CONTENT_LENGTH"] = settings.host.max_request_body_size
    max_request_seconds = settings.host.max_request_time.total_seconds()
    app.config["LAKEKEEPER_MAX_REQUEST_TIME"] = max_request_seconds
    app.config["BODY_TIMEOUT"] = max(1, int(max_request_seconds))
    app.config["RESPONSE_TIMEOUT"] = max(1, int(max_request_seconds))
    app.url_map.strict_slashes = False
    registry = registry or Registry.collect(pm)
    metrics = Metrics()
    app.extensions["lakekeeper_metrics"] = metrics

    for blueprint in BLUEPRINTS:
        app.register_blueprint(blueprint)
    app.asgi_app = ReadLane(app, app.asgi_app)

    @app.while_serving
    async def lifespan():
        from lakekeeper_host.server.lifecycle import shutdown_state, startup_state

        app_state = await startup_state(settings, pm, registry, metrics)
        app.extensions["lakekeeper"] = app_state
        from lakekeeper_host.api.authn import request_authenticator

        app.extensions["lakekeeper_authenticate"] = request_authenticator(app_state)
        try:
            await _call_lifecycle(pm.hook.lakekeeper_startup(state=app_state))
            yield
        finally:
            await _call_lifecycle(pm.hook.lakekeeper_shutdown(state=app_state))
            await shutdown_state(app_state)

    @app.before_request
    async def before_request():
        g.request_id = request.headers.get("x-request-id") or new_id()
        g.started = time.perf_counter()
        if request.method == "OPTIONS" and settings.host.allow_origin:
            return Response(b"", status=204)
        if settings.host.maintenance_mode == "read-only" and request.method not in ("GET", "HEAD", "OPTIONS"):
            if request.path.startswith(("/catalog/", "/management/")):
                err = service_unavailable(
                    "The server is in read-only maintenance mode", "MaintenanceModeError"
                )
                err.headers["Retry-After"] = "60"
                return error_response(err)
        authenticate = app.extensions.get("lakekeeper_authenticate")
        if authenticate is not None:
            actor = await authenticate(request.method, request.path, request.headers)
            if actor is not None:
                g.actor = actor
        return None

    @app.after_request
    async def after_request(response: Response) -> Response:
        response.headers["x-request-id"] = getattr(g, "request_id", "")
        for name, value in policy_headers(settings.host.allow_origin, request.path,
                                          request.headers.get("origin")).items():
            if name == "Cache-Control":
                response.headers.setdefault(name, value)  # the S3 signer sets its own
            else:
                response.headers[name] = value
        rule = request.url_rule.rule if request.url_rule is not None else "unmatched"
        elapsed = time.perf_counter() - getattr(g, "started", time.perf_counter())
        metrics.observe_request(request.method, rule, response.status_code, elapsed)
        recorder = app.extensions.get("lakekeeper_endpoint_stats")
        if recorder is not None:
            recorder(request.method, rule, response.status_code,
                     *request_ids(request.headers.get("x-project-id"), request.path, request.view_args))
        return response

    @app.errorhandler(CatalogError)
    async def handle_catalog_error(error: CatalogError):
        if error.code >= 500:
            log.error("request %s failed: %s %s", getattr(g, "request_id", "-"), error.type, error.message)
        return error_response(error)

    @app.errorhandler(RequestEntityTooLarge)
    async def handle_too_large(error):
        return error_response(CatalogError(413, "RequestEntityTooLarge", "Request body too large"))

    @app.errorhandler(asyncio.TimeoutError)
    async def handle_timeout(error):
        return error_response(request_timeout(max_request_seconds))

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
        return error_response(CatalogError(error.code or 500, type_, message, headers=headers))

    @app.errorhandler(Exception)
    async def handle_unexpected(error: Exception):
        error_id = new_id()
        log.exception("unexpected error %s in %s %s", error_id, request.method, request.path)
        return json_response(internal_error_model(error_id), 500)

    @app.get("/health")
    async def health():
        from lakekeeper_host.server.lifecycle import health_report

        report = await health_report(state())
        return json_response(report, 200 if report["status"] == "healthy" else 503)

    return app


async def _call_lifecycle(results: list[Any]) -> None:
    for result in results:
        if inspect.isawaitable(result):
            await result
