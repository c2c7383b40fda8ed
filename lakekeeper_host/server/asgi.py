"""ASGI entry point for worker processes: configuration from the environment."""

from lakekeeper_host.app import create_app
from lakekeeper_host.config import load_settings
from lakekeeper_host.plugins import make_plugin_manager

_settings = load_settings()
app = create_app(_settings, make_plugin_manager(disabled=_settings.host.disabled_plugins))
