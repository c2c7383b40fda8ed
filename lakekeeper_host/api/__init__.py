"""HTTP layer: Quart blueprints that parse requests and serialise results, nothing else.

Every module in this package that defines ``blueprint`` is mounted by ``create_app``.
"""

from __future__ import annotations

import importlib
import pkgutil

from quart import Blueprint


def _discover() -> tuple[Blueprint, ...]:
    found = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        blueprint = getattr(module, "blueprint", None)
        if isinstance(blueprint, Blueprint):
            found.append(blueprint)
    return tuple(found)


BLUEPRINTS = _discover()
