"""hypercorn's settings from ours, shared by the one-process server and the multi-worker parent."""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import time
from collections.abc import Callable
from email.utils import formatdate

from hypercorn.config import Config as HypercornConfig

from lakekeeper_host.config import ConfigError, Settings


class ServerConfig(HypercornConfig):
    """hypercorn's settings, with the ``date`` and ``server`` headers every response carries built
    once per second instead of once per response (``format_date_time`` on every request)."""

    _cached_second = -1
    _cached_headers: list[tuple[bytes, bytes]] = []

    def response_headers(self, protocol: str) -> list[tuple[bytes, bytes]]:
        if protocol != "h11" or self.alt_svc_headers or self._quic_addresses or not self.include_date_header:
            return super().response_headers(protocol)
        now = int(time.time())
        if now != self._cached_second:
            headers = [(b"date", formatdate(now, usegmt=True).encode("ascii"))]
            if self.include_server_header:
                headers.append((b"server", b"hypercorn-h11"))
            self._cached_headers, self._cached_second = headers, now
        return list(self._cached_headers)


def hypercorn_config(settings: Settings) -> HypercornConfig:
    config = ServerConfig()
    bind_ip = settings.bind_ip
    host = f"[{bind_ip}]" if ":" in bind_ip else bind_ip
    config.bind = [f"{host}:{settings.host.listen_port}"]
    config.workers = settings.host.workers
    config.worker_class = event_loop_name(settings)
    config.graceful_timeout = 10
    config.accesslog = None
    # hypercorn's own lines through the root logger (JSON), not through a second, plain-text handler
    config.errorlog = logging.getLogger("hypercorn.error")
    # also bounds how long a client may take to send its request headers (hypercorn's idle timer runs
    # until a request's headers are complete); the body is bounded by MAX_REQUEST_TIME
    config.keep_alive_timeout = settings.host.http_keep_alive_timeout.total_seconds()
    return config


def event_loop_name(settings: Settings) -> str:
    """``uvloop`` or ``asyncio``: hypercorn's worker class for ``LAKEKEEPER__EVENT_LOOP``."""
    choice = settings.host.event_loop
    installed = importlib.util.find_spec("uvloop") is not None
    if choice == "uvloop" and not installed:
        raise ConfigError("LAKEKEEPER__EVENT_LOOP=uvloop but uvloop is not installed "
                          "(pip install 'lakekeeper-host[fast]', or LAKEKEEPER__EVENT_LOOP=asyncio)")
    if choice == "auto":
        return "uvloop" if installed else "asyncio"
    return choice


def event_loop_factory(settings: Settings) -> Callable[[], asyncio.AbstractEventLoop]:
    """What the one-process server runs hypercorn on (hypercorn's own runner does the same for workers)."""
    if event_loop_name(settings) == "uvloop":
        import uvloop

        return uvloop.new_event_loop
    return asyncio.new_event_loop
