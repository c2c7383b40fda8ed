"""Configuration: ``LAKEKEEPER__`` environment and optional TOML file -> frozen attrs objects."""

from lakekeeper_host.config.env import ConfigError
from lakekeeper_host.config.load import Settings, load_settings
from lakekeeper_host.config.model import AuthConfig, HostConfig, PgConfig
from lakekeeper_host.config.types import Secret, format_duration, parse_duration

__all__ = [
    "AuthConfig",
    "ConfigError",
    "HostConfig",
    "PgConfig",
    "Secret",
    "Settings",
    "format_duration",
    "load_settings",
    "parse_duration",
]
