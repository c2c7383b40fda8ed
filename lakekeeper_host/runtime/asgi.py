"""ASGI entry point for worker processes: configuration from the environment."""

import os

from lakekeeper_host.app import create_app
from lakekeeper_host.config import load_settings
from lakekeeper_host.plugins import make_plugin_manager
from lakekeeper_host.runtime.logs import setup_logging

_settings = load_settings()
_settings.force_start = os.environ.get("LAKEKEEPER_FORCE_START") == "1"  # the parent's `serve --force-start`
setup_logging(_settings)  # a worker process logs JSON like the parent
app = create_app(_settings, make_plugin_manager(disabled=_settings.host.disabled_plugins))
