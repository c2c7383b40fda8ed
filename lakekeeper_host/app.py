"""``create_app(settings, pm)``: the Quart application, its request pipeline and its one lifespan."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from typing import Any

import pluggy
from quart import Quart

from lakekeeper_host.api import BLUEPRINTS
from lakekeeper_host.api.common import json_response, state
from lakekeeper_host.api.pipeline import PipelineQuart, install
from lakekeeper_host.config import Settings
from lakekeeper_host.metrics import Metrics
from lakekeeper_host.registry import Registry
from lakekeeper_host.runtime.banner import security_warning, startup_banner, trino_key_warning
from lakekeeper_host.runtime.lifecycle import health_report, shutdown_state, startup_state
from lakekeeper_host.service.state import AppState
from lakekeeper_host.ui import register_console

log = logging.getLogger(__name__)

# app.extensions key: the exception the startup (building AppState) failed with, for the caller of the
# server to report in one line (runtime/serve.py) instead of Quart's logged traceback
STARTUP_ERROR = "lakekeeper_startup_error"



class LakekeeperQuart(PipelineQuart):
    def log_exception(self, exception_info) -> None:
        """A failed startup is reported once, in one line, by whoever runs the server: the traceback
        goes to the debug log only (``LAKEKEEPER__LOG_LEVEL=debug``)."""
        if exception_info[1] is not None and exception_info[1] is self.extensions.get(STARTUP_ERROR):
            log.debug("startup failed", exc_info=exception_info)
            return
        super().log_exception(exception_info)


def create_app(settings: Settings, pm: pluggy.PluginManager, *, registry: Registry | None = None,
               on_started: Callable[[AppState], None] | None = None) -> Quart:
    """``on_started`` runs once the backends are built and the server is about to accept requests
    (the CLI prints its connection help there, never before a startup that may still fail)."""
    app = LakekeeperQuart("lakekeeper_host")
    app.config["MAX_CONTENT_LENGTH"] = settings.host.max_request_body_size
    max_request_seconds = settings.host.max_request_time.total_seconds()
    app.config["BODY_TIMEOUT"] = max(1, int(max_request_seconds))
    app.config["RESPONSE_TIMEOUT"] = max(1, int(max_request_seconds))
    app.url_map.strict_slashes = False
    registry = registry or Registry.collect(pm)
    metrics = Metrics()
    app.extensions["lakekeeper_metrics"] = metrics

    for blueprint in BLUEPRINTS:
        app.register_blueprint(blueprint)
    if settings.host.ui.enabled:
        register_console(app, settings)
    pipeline = install(app, settings, metrics)

    @app.while_serving
    async def lifespan():
        try:
            app_state = await startup_state(settings, pm, registry, metrics)
        except Exception as exc:
            app.extensions[STARTUP_ERROR] = exc
            raise
        app.extensions["lakekeeper"] = pipeline.state = app_state
        try:
            try:
                await _call_lifecycle(pm.hook.lakekeeper_startup(state=app_state))
            except Exception as exc:
                app.extensions[STARTUP_ERROR] = exc
                raise
            log.info(startup_banner(app_state))
            for warning in (security_warning(app_state), trino_key_warning(app_state)):
                if warning:
                    log.warning(warning)
            if on_started is not None:
                on_started(app_state)
            yield
        finally:
            await _call_lifecycle(pm.hook.lakekeeper_shutdown(state=app_state))
            await shutdown_state(app_state)
            pipeline.state = None

    @app.get("/health")
    async def health():
        report = await health_report(state())
        return json_response(report, 200 if report["status"] == "healthy" else 503)

    return app


async def _call_lifecycle(results: list[Any]) -> None:
    for result in results:
        if inspect.isawaitable(result):
            await result
