"""hypercorn's settings from ours, shared by the one-process server and the multi-worker parent."""

from __future__ import annotations

import logging
import time
from email.utils import formatdate

from hypercorn.config import Config as HypercornConfig

from lakekeeper_host.config import Settings


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
    config.graceful_timeout = 10
    config.accesslog = None
    # hypercorn's own lines through the root logger (JSON), not through a second, plain-text handler
    config.errorlog = logging.getLogger("hypercorn.error")
    # also bounds how long a client may take to send its request headers (hypercorn's idle timer runs
    # until a request's headers are complete); the body is bounded by MAX_REQUEST_TIME
    config.keep_alive_timeout = settings.host.http_keep_alive_timeout.total_seconds()
    return config
