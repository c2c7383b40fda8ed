"""Read ``LAKEKEEPER__*`` (and legacy ``ICEBERG_REST__*``) variables into a nested dict of strings."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

PREFIXES = ("ICEBERG_REST__", "LAKEKEEPER__")  # later prefixes win


class ConfigError(Exception):
    """A configuration problem, phrased for an operator: it names the variable."""


def env_name(path: tuple[str, ...]) -> str:
    return "LAKEKEEPER__" + "__".join(p.upper() for p in path)


def read_env(environ: Mapping[str, str]) -> dict[str, Any]:
    """Strip the prefix, lowercase, split on ``__`` and nest."""
    tree: dict[str, Any] = {}
    for prefix in PREFIXES:
        for key, value in sorted(environ.items()):
            if not key.startswith(prefix) or len(key) == len(prefix):
                continue
            path = tuple(part.lower() for part in key[len(prefix) :].split("__"))
            if any(not part for part in path):
                raise ConfigError(f"Malformed configuration variable name {key!r}")
            set_path(tree, path, value, source=key)
    return tree


def set_path(tree: dict[str, Any], path: tuple[str, ...], value: Any, *, source: str) -> None:
    node = tree
    for part in path[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise ConfigError(f"{source}: {env_name(path[:-1])} is both a value and a section")
        node = child
    if isinstance(node.get(path[-1]), dict) and not isinstance(value, dict):
        raise ConfigError(f"{source}: {env_name(path)} is both a value and a section")
    node[path[-1]] = value


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def misspelled_prefixes(environ: Mapping[str, str]) -> list[tuple[str, tuple[str, ...], bool]]:
    """Variables that look meant for us but are not read: ``LAKEKEPER__X``, ``lakekeeper__x``, ``LAKEKEEPER_X``.

    Returns ``(variable, intended key path, certain)``. A single underscore (``LAKEKEEPER_X``) is
    only a mistake when ``X`` is a real key (the caller knows the keys), since tools use such names
    for their own settings (``LAKEKEEPER_SPARK_JARS_DIR``); a near-miss of the word itself is certain.
    """
    found = []
    for key in environ:
        if key.startswith(PREFIXES):
            continue
        word, _, rest = key.partition("_")
        rest = rest.lstrip("_")
        if not rest or difflib.SequenceMatcher(None, word.upper(), "LAKEKEEPER").ratio() < 0.8:
            continue
        path = tuple(part.lower() for part in rest.split("__") if part)
        single_underscore = word == "LAKEKEEPER" and not key.startswith("LAKEKEEPER__")
        found.append((key, path, not single_underscore))
    return sorted(found)
