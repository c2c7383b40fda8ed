"""Plugin manager factory: built-ins plus entry-point plugins of the group ``lakekeeper``."""

from __future__ import annotations

import importlib
import logging
from collections.abc import Iterable
from typing import Any

import pluggy

from lakekeeper_host import __version__, hookspecs
from lakekeeper_host.hookspecs import PROJECT_NAME
from lakekeeper_host.registry import StartupError

log = logging.getLogger(__name__)

# Default backends (builtins/, written like external plugins) and the server layer's own
# contributions through the same hooks: its task queues and housekeeping loops.
BUILTIN_PLUGINS: tuple[str, ...] = (
    *(
        f"lakekeeper_host.builtins.{module}"
        for module in ("authz_allow_all", "secrets_database", "storage_file", "events_log")
    ),
    "lakekeeper_host.server.management.builtin_queues",
    "lakekeeper_host.server.housekeeping",
)


def make_plugin_manager(
    *,
    load_entrypoints: bool = True,
    disabled: Iterable[str] = (),
    extra_plugins: Iterable[tuple[Any, str]] = (),
    trace: bool = False,
) -> pluggy.PluginManager:
    """Build a fresh plugin manager (never a module global).

    ``disabled`` names entry points (or built-in module names) that must not load.
    ``extra_plugins`` are (object, name) pairs registered after the built-ins; tests use it.
    """
    pm = pluggy.PluginManager(PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    for name in disabled:
        if name:
            pm.set_blocked(name.strip())
    if load_entrypoints:
        pm.load_setuptools_entrypoints(PROJECT_NAME)
    for module_name in BUILTIN_PLUGINS:
        if not pm.is_blocked(module_name):
            pm.register(importlib.import_module(module_name), name=module_name)
    for plugin, name in extra_plugins:
        pm.register(plugin, name=name)
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        raise StartupError(f"Invalid plugin: {exc}") from exc
    if trace:
        pm.trace.root.setwriter(log.debug)
        pm.enable_tracing()
    return pm


def list_plugins(pm: pluggy.PluginManager, contributions: dict[str, list[str]] | None = None) -> list[dict[str, Any]]:
    """Name, distribution version and hooks of every registered plugin."""
    dists = {id(plugin): dist for plugin, dist in pm.list_plugin_distinfo()}
    result: list[dict[str, Any]] = []
    for plugin in pm.get_plugins():
        name = pm.get_name(plugin) or repr(plugin)
        dist = dists.get(id(plugin))
        hooks = sorted(h.name for h in (pm.get_hookcallers(plugin) or []))
        result.append(
            {
                "name": name,
                "distribution": dist.project_name if dist else None,
                "version": dist.version if dist else _builtin_version(name),
                "hooks": hooks,
                "provides": sorted((contributions or {}).get(name, [])),
                "builtin": name in BUILTIN_PLUGINS,
            }
        )
    return sorted(result, key=lambda p: p["name"])


def _builtin_version(name: str) -> str | None:
    if name in BUILTIN_PLUGINS:
        return __version__
    return None
