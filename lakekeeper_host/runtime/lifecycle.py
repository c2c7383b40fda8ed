"""Building the application state at startup, health, and orderly shutdown."""

from __future__ import annotations

import logging
import time
from typing import Any

import pluggy

from lakekeeper_host.config import Settings
from lakekeeper_host.metrics import Metrics
from lakekeeper_host.registry import BackendSpec, BuildContext, Registry, StartupError
from lakekeeper_host.runtime import workers
from lakekeeper_host.runtime.quickstart import embedded_quickstart
from lakekeeper_host.server.management import maintenance, tasks
from lakekeeper_host.server.security.authn import Authenticator
from lakekeeper_host.server.tables import metrics_reports, scan_planning
from lakekeeper_host.service.contracts import ContractCheckers
from lakekeeper_host.service.events import EventDispatcher
from lakekeeper_host.service.secrets import Secrets
from lakekeeper_host.service.state import AppState
from lakekeeper_host.store import Store
from lakekeeper_host.store.changes import ChangeFeed
from lakekeeper_host.store.migrate import DatabaseNewerThanServer, migrate, migration_status
from lakekeeper_host.store.server import get_or_create_server

log = logging.getLogger(__name__)


def check_backend_selection(settings: Settings, registry: Registry) -> None:
    """Fail fast (before any IO) on unknown backend names and bad plugin configuration."""
    for spec in (
        registry.authorizer(settings.host.authz_backend),
        registry.secret_store(settings.host.secret_backend),
        *registry.unique(registry.event_sinks),
        *registry.unique(registry.contract_checkers),
        *registry.unique(registry.storage),
        *registry.unique(registry.task_queues),
    ):
        if spec.config_cls is not None:
            settings.section(spec.config_cls)
    # LAKEKEEPER__TASK_<QUEUE>_WORKERS is read when the workers start (runtime/workers.py)
    settings.consumed.update(f"task_{spec.name}_workers" for spec in registry.unique(registry.task_queues))

    # catalog features with their own sections (LAKEKEEPER__METRICS_REPORTS__*, __SCAN_PLANNING__*,
    # __TABLE_MAINTENANCE__*) and the task runtime's (LAKEKEEPER__TASK_MAX_RETRIES,
    # __ENDPOINT_STAT_FLUSH_INTERVAL), all read lazily later
    for section in (metrics_reports.Section, scan_planning.Section, maintenance.Section, tasks.TaskRuntimeConfig):
        settings.section(section)
    settings.report_unknown()


async def ensure_schema(store: Store, settings: Settings) -> None:
    """Migrate (embedded, ``DEBUG__MIGRATE_BEFORE_SERVE``) or check the schema; ``--force-start``
    turns a database migrated by a newer version, or pending migrations, into a warning."""
    try:
        if settings.embedded or settings.host.debug.migrate_before_serve:
            applied = await migrate(store)
            if applied:
                log.info("applied migrations: %s", ", ".join(f"{m.version:04d}_{m.name}" for m in applied))
            return
        _, pending = await migration_status(store)
    except DatabaseNewerThanServer as exc:
        if not settings.force_start:
            raise StartupError(str(exc)) from None
        log.warning("starting anyway (--force-start): %s", exc)
        return
    if pending and settings.force_start:
        log.warning("starting anyway (--force-start) with %d pending migration(s): requests touching them fail",
                    len(pending))
    elif pending:
        raise StartupError(
            "Database is not up to date with this server "
            f"({len(pending)} pending migration(s)); run `lakekeeper migrate` first, "
            "or set LAKEKEEPER__DEBUG__MIGRATE_BEFORE_SERVE=true"
        )


async def _build(spec: BackendSpec[Any, Any], settings: Settings, ctx: BuildContext) -> Any:
    config = settings.section(spec.config_cls) if spec.config_cls is not None else None
    return await spec.factory(config, ctx)


async def startup_state(
    settings: Settings, pm: pluggy.PluginManager, registry: Registry, metrics: Metrics | None = None
) -> AppState:
    check_backend_selection(settings, registry)
    store = Store.from_settings(settings)
    await store.connect()
    try:
        await ensure_schema(store, settings)
        server = await get_or_create_server(store)
        ctx = BuildContext(settings=settings, db=store, server_id=server.server_id)
        secret_store = await _build(registry.secret_store(settings.host.secret_backend), settings, ctx)
        authorizer = await _build(registry.authorizer(settings.host.authz_backend), settings, ctx)
        sinks = [s for s in [await _build(spec, settings, ctx) for spec in registry.unique(registry.event_sinks)] if s]
        checkers = [
            c for c in [await _build(spec, settings, ctx) for spec in registry.unique(registry.contract_checkers)] if c
        ]

        # identity providers are contacted now: an unreachable required one is a StartupError
        authenticator = await Authenticator.start(settings.auth)
    except BaseException:
        await store.disconnect()
        raise
    cache = settings.host.cache.secrets
    events = EventDispatcher(sinks, queue_size=settings.host.events.queue_capacity)
    if metrics is not None:
        events.on_failure = lambda sink: metrics.event_failures.labels(sink).inc()
        events.on_published = lambda sink: metrics.events_published.labels(sink).inc()
        events.on_dropped = lambda sink: metrics.events_dropped.labels(sink).inc()
    state = AppState(
        settings=settings,
        pm=pm,
        registry=registry,
        store=store,
        secrets=Secrets(
            secret_store,
            capacity=cache.capacity if cache.enabled else 0,
            ttl_seconds=cache.time_to_live_secs if cache.enabled else 0,
        ),
        authorizer=authorizer,
        events=events,
        contracts=ContractCheckers(checkers),
        server_id=server.server_id,
    )
    state.metrics = metrics
    state.authenticator = authenticator
    if metrics is not None:
        metrics.bind_store(store)
    events.start()
    if store.change_feed_dsn and store.caches.lookups.enabled:

        feed = ChangeFeed(store.change_feed_dsn, store.caches.lookups, ssl=store.connect_options.get("ssl"))
        await feed.start()
        state.change_feed = feed
    if settings.embedded and settings.host.embedded_quickstart:

        await embedded_quickstart(state)

    await workers.start(state)
    return state


async def shutdown_state(state: AppState) -> None:

    await workers.stop(state)
    feed, state.change_feed = state.change_feed, None
    if feed is not None:
        await feed.stop()
    await state.events.close()
    for backend in (state.secrets.store, state.authorizer, state.authenticator):
        if backend is None:
            continue
        close = getattr(backend, "close", None)
        if close is not None:
            try:
                await close()
            except Exception:
                log.exception("closing %r failed", backend)
    for storage in list(state._storage_cache.values()):
        await storage.close()
    await state.store.disconnect()


async def health_report(state: AppState) -> dict[str, Any]:
    """``/health`` in Lakekeeper's shape (``health`` ok|error; ``services`` catalog, secrets, auth, each
    a list of ``{name, status, lastCheck}``; ``maintenance_mode``), plus this server's own summary
    (``status``, ``checks``, ``maintenance-mode``) that its docs and drills use."""
    checked_at = int(time.time() * 1000)
    checks = {
        "database": await state.store.ping(),
        "secret-store": await _healthy(state.secrets.store),
        "authorizer": await _healthy(state.authorizer),
    }
    healthy = all(checks.values())

    def service(name: str, ok: bool) -> list[dict[str, Any]]:
        return [{"name": name, "status": "ok" if ok else "error", "lastCheck": checked_at}]

    pools = ("read_pool", "write_pool") if state.store.dialect == "postgresql" else ("sqlite",)
    return {
        "health": "ok" if healthy else "error",
        "services": {
            "catalog": [entry for pool in pools for entry in service(pool, checks["database"])],
            "secrets": service(getattr(state.secrets.store, "name", state.settings.host.secret_backend),
                               checks["secret-store"]),
            "auth": service(state.authorizer.name, checks["authorizer"]),
        },
        "maintenance_mode": state.settings.host.maintenance_mode,
        "status": "healthy" if healthy else "unhealthy",
        "checks": {k: ("healthy" if v else "unhealthy") for k, v in checks.items()},
        "maintenance-mode": state.settings.host.maintenance_mode,
    }


async def _healthy(backend: Any) -> bool:
    try:
        return bool(await backend.health())
    except Exception:
        log.exception("health check of %r failed", backend)
        return False
