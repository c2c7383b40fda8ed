"""Run the app under hypercorn (one or more workers) and print connection settings."""

from __future__ import annotations

import asyncio
import logging
import signal
import sys

import pluggy
from hypercorn.asyncio import serve as hypercorn_serve
from hypercorn.config import Config as HypercornConfig

from lakekeeper_host.config import Settings
from lakekeeper_host.registry import Registry, StartupError

log = logging.getLogger(__name__)


def hypercorn_config(settings: Settings) -> HypercornConfig:
    config = HypercornConfig()
    bind_ip = settings.bind_ip
    host = f"[{bind_ip}]" if ":" in bind_ip else bind_ip
    config.bind = [f"{host}:{settings.host.listen_port}"]
    config.workers = settings.host.workers
    config.graceful_timeout = 10
    config.accesslog = None
    # hypercorn's own lines through the root logger (JSON), not through a second, plain-text handler
    config.errorlog = logging.getLogger("hypercorn.error")
    config.keep_alive_timeout = 75
    return config


def own_base_uri(settings: Settings) -> str:
    """Where this server is reached from its own host: ``LAKEKEEPER__BASE_URI`` or the listen address."""
    host = "127.0.0.1" if settings.bind_ip in ("0.0.0.0", "::") else settings.bind_ip
    return (settings.host.base_uri or f"http://{host}:{settings.host.listen_port}").rstrip("/")


def connection_help(settings: Settings, warehouse: str = "demo") -> str:
    from lakekeeper_host.server.snippets import connection_snippets

    return connection_snippets(own_base_uri(settings) + "/catalog", warehouse)


def serve(settings: Settings, pm: pluggy.PluginManager) -> int:
    from lakekeeper_host.app import create_app
    from lakekeeper_host.server.lifecycle import check_backend_selection

    registry = Registry.collect(pm)
    check_backend_selection(settings, registry)
    asyncio.run(preflight(settings))
    if settings.host.workers > 1:
        from lakekeeper_host.server.multiworker import serve_workers

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
    from lakekeeper_host.server.lifecycle import ensure_schema
    from lakekeeper_host.store import Store

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
