"""Run the app under hypercorn (one or more workers) and print connection settings once it serves."""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import signal
import sys

import pluggy
from hypercorn.asyncio import serve as hypercorn_serve
from hypercorn.utils import LifespanFailureError

from lakekeeper_host.app import STARTUP_ERROR, create_app
from lakekeeper_host.config import ConfigError, Settings
from lakekeeper_host.registry import Registry, StartupError
from lakekeeper_host.runtime.hypercorn_settings import event_loop_factory, hypercorn_config
from lakekeeper_host.runtime.lifecycle import check_backend_selection, ensure_schema
from lakekeeper_host.runtime.multiworker import serve_workers
from lakekeeper_host.runtime.snippets import connection_snippets
from lakekeeper_host.service.state import AppState
from lakekeeper_host.store import Store

log = logging.getLogger(__name__)

# set for worker processes of `serve --force-start` (LAKEKEEPER__WORKERS > 1): they read their settings anew
FORCE_START_ENV = "LAKEKEEPER_FORCE_START"


def connection_help(settings: Settings, warehouse: str = "demo") -> str:
    text = connection_snippets(settings.own_base_uri + "/catalog", warehouse, authenticated=settings.auth.enabled)
    if settings.embedded:
        data_dir = os.path.abspath(settings.host.data_dir)
        text += f"\nData (SQLite catalog and the {warehouse!r} warehouse): {data_dir}  (LAKEKEEPER__DATA_DIR)\n"
    if settings.host.ui.enabled:
        text += f"Web console: {settings.own_base_uri}/ui/\n"
    return text


def serve(settings: Settings, pm: pluggy.PluginManager) -> int:
    registry = Registry.collect(pm)
    check_backend_selection(settings, registry)
    loop_factory = event_loop_factory(settings)  # LAKEKEEPER__EVENT_LOOP=uvloop without uvloop fails here
    asyncio.run(preflight(settings))
    if settings.host.workers > 1:
        if settings.force_start:
            os.environ[FORCE_START_ENV] = "1"
        return serve_workers(settings)

    def started(state: AppState) -> None:
        if settings.embedded:
            print(connection_help(settings), file=sys.stderr, flush=True)

    app = create_app(settings, pm, registry=registry, on_started=started)
    _start_metrics_server(settings, app)
    shutdown = asyncio.Event()

    async def run() -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, shutdown.set)
        await hypercorn_serve(app, hypercorn_config(settings), shutdown_trigger=shutdown.wait)

    try:
        with asyncio.Runner(loop_factory=loop_factory) as runner:
            runner.run(run())
    except LifespanFailureError:
        raise startup_failure(app.extensions.get(STARTUP_ERROR)) from None
    # shut down in order; what is left is the interpreter's teardown, whose full collection of the
    # app's heap takes 0.5-1.5 s after SIGTERM (measured). Frozen objects are not collected: exit now
    gc.freeze()
    return 0


def startup_failure(cause: BaseException | None) -> Exception:
    """What the CLI reports in one line: the operator-phrased error as it is, anything else named."""
    if isinstance(cause, (StartupError, ConfigError)):
        return cause
    if cause is None:
        return StartupError("startup failed (LAKEKEEPER__LOG_LEVEL=debug shows why)")
    return StartupError(f"startup failed: {type(cause).__name__}: {cause} (LAKEKEEPER__LOG_LEVEL=debug shows where)")


def database_variable(settings: Settings) -> str:
    """The variable that points at the database, for messages about it."""
    pg = settings.pg
    if pg.pg_database_url_write:
        return "LAKEKEEPER__PG_DATABASE_URL_WRITE"
    if pg.pg_database_url_read:
        return "LAKEKEEPER__PG_DATABASE_URL_READ"
    if pg.pg_host_w:
        return "LAKEKEEPER__PG_HOST_W"
    return "LAKEKEEPER__DATA_DIR"


async def preflight(settings: Settings) -> None:
    """Fail with one clear line before hypercorn starts: bad URLs, unreachable or unmigrated DB."""
    store = Store.from_settings(settings)
    try:
        await store.connect()
    except Exception as exc:
        raise StartupError(
            f"cannot connect to the database ({database_variable(settings)}): {type(exc).__name__}: {exc}"
        ) from None
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
