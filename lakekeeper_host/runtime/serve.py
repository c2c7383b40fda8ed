"""Run the app under hypercorn (one or more workers) and print connection settings."""

from __future__ import annotations

import asyncio
import logging
import signal
import sys

import pluggy
from hypercorn.asyncio import serve as hypercorn_serve

from lakekeeper_host.app import create_app
from lakekeeper_host.config import Settings
from lakekeeper_host.registry import Registry, StartupError
from lakekeeper_host.runtime.hypercorn_settings import hypercorn_config
from lakekeeper_host.runtime.lifecycle import check_backend_selection, ensure_schema
from lakekeeper_host.runtime.multiworker import serve_workers
from lakekeeper_host.runtime.snippets import connection_snippets
from lakekeeper_host.store import Store

log = logging.getLogger(__name__)


def connection_help(settings: Settings, warehouse: str = "demo") -> str:

    text = connection_snippets(settings.own_base_uri + "/catalog", warehouse)
    if settings.host.ui.enabled:
        text += f"\nWeb console: {settings.own_base_uri}/ui/\n"
    return text


def serve(settings: Settings, pm: pluggy.PluginManager) -> int:

    registry = Registry.collect(pm)
    check_backend_selection(settings, registry)
    asyncio.run(preflight(settings))
    if settings.host.workers > 1:

        return serve_workers(settings)
    app = create_app(settings, pm, registry=registry)
    _start_metrics_server(settings, app)
    if settings.embedded:
        print(connection_help(settings), file=sys.stderr, flush=True)
    shutdown = asyncio.Event()

    async def run() -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, shutdown.set)
        await hypercorn_serve(app, hypercorn_config(settings), shutdown_trigger=shutdown.wait)

    try:
        asyncio.run(run())
    except StartupError:
        raise
    return 0


async def preflight(settings: Settings) -> None:
    """Fail with one clear line before hypercorn starts: bad URLs, unreachable or unmigrated DB."""

    store = Store.from_settings(settings)
    try:
        await store.connect()
    except Exception as exc:
        raise StartupError(f"cannot connect to the database: {type(exc).__name__}: {exc}") from None
    try:
        await ensure_schema(store, settings)
    finally:
        await store.disconnect()


def _start_metrics_server(settings: Settings, app) -> None:
    if not settings.host.metrics.enabled:
        return
    from prometheus_client import start_http_server

    metrics = app.extensions["lakekeeper_metrics"]
    try:
        start_http_server(settings.host.metrics.port, addr=settings.bind_ip, registry=metrics.registry)
    except OSError as exc:
        log.warning("metrics endpoint not started on port %s: %s", settings.host.metrics.port, exc)
