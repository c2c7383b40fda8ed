"""Lakekeeper authorizer ``openfga``: fine-grained permissions kept in OpenFGA.

Registered through the entry point ``authz_openfga`` in the group ``lakekeeper``; selected with
``LAKEKEEPER__AUTHZ_BACKEND=openfga`` and configured by ``LAKEKEEPER__OPENFGA__*`` (``config.py``).
``lakekeeper migrate`` creates the store and writes the model; ``lakekeeper serve`` finds them
(or, with ``LAKEKEEPER__DEBUG__MIGRATE_BEFORE_SERVE=true`` or the embedded database, migrates first).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from lakekeeper_authz_openfga.config import OpenFgaConfig, OpenFgaSettings
from lakekeeper_host import hookimpl
from lakekeeper_host.registry import BackendSpec, BuildContext

if TYPE_CHECKING:
    from lakekeeper_authz_openfga.authorizer import OpenFgaAuthorizer
    from lakekeeper_host.service.state import AppState

__version__ = "0.2.0"
__all__ = ["OpenFgaAuthorizer", "OpenFgaConfig", "OpenFgaSettings", "build_authorizer"]


async def migrate_openfga(settings: OpenFgaSettings, ctx: BuildContext) -> str:
    from lakekeeper_authz_openfga.client import migrate

    location = await migrate(settings.openfga)
    store = "created store" if location.created_store else "store"
    model = "wrote model" if location.wrote_model else "model"
    return (f"{store} {settings.openfga.store_name!r} ({location.store_id}), "
            f"{model} {settings.openfga.model_name} ({location.model_id})")


async def build_authorizer(settings: OpenFgaSettings, ctx: BuildContext) -> OpenFgaAuthorizer:
    from lakekeeper_authz_openfga.authorizer import OpenFgaAuthorizer
    from lakekeeper_authz_openfga.cache import TtlCache
    from lakekeeper_authz_openfga.client import locate, make_client, migrate

    config = settings.openfga
    config.require_endpoint()
    if not ctx.server_id:  # pragma: no cover - the host always passes it
        raise ValueError("the openfga authorizer needs the server id (the object server:<id>)")
    host = getattr(ctx.settings, "host", None)
    migrate_first = host is not None and (ctx.settings.embedded or host.debug.migrate_before_serve)
    location = await (migrate(config) if migrate_first else locate(config))
    return OpenFgaAuthorizer(
        make_client(config, store_id=location.store_id, model_id=location.model_id),
        server_id=ctx.server_id,
        max_batch_check_size=config.max_batch_check_size,
        cache=TtlCache(config.check_cache_capacity, config.check_cache_ttl_secs),
        list_cache=TtlCache(config.list_objects_cache_capacity, config.check_cache_ttl_secs),
        list_objects_max_results=config.list_objects_max_results,
        list_objects_deadline=config.list_objects_deadline_secs,
    )


def __getattr__(name: str) -> Any:
    # openfga-sdk loads when the authorizer is built, not when the host discovers the plugin
    if name == "OpenFgaAuthorizer":
        from lakekeeper_authz_openfga.authorizer import OpenFgaAuthorizer

        return OpenFgaAuthorizer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@hookimpl
def lakekeeper_authorizers():
    return [BackendSpec(name="openfga", factory=build_authorizer, config_cls=OpenFgaSettings, migrate=migrate_openfga)]


@hookimpl
def lakekeeper_startup(state: AppState) -> None:
    """Count the answer caches' hits and misses in the server's Prometheus metrics."""
    # the authorizer's module (openfga-sdk, aiohttp: ~0.25 s of CPU) is loaded only when this plugin built the
    # authorizer; a server with another authorizer does not import it just to find out
    authorizer_module = sys.modules.get("lakekeeper_authz_openfga.authorizer")
    metrics = state.metrics
    if authorizer_module and isinstance(state.authorizer, authorizer_module.OpenFgaAuthorizer) and metrics is not None:
        state.authorizer.bind_metrics(metrics)
