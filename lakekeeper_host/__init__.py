"""Lakekeeper host: an Iceberg REST catalog whose backends are pluggy plugins.

Plugins import ``hookimpl`` from here and return specs from ``registry``.
"""

from importlib.metadata import PackageNotFoundError, version

from lakekeeper_host.hookspecs import hookimpl

try:
    __version__ = version("lakekeeper-host")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0.0.0+local"

__all__ = ["__version__", "hookimpl"]
