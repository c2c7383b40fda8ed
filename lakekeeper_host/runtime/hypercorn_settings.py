"""hypercorn's settings from ours, shared by the one-process server and the multi-worker parent."""

from __future__ import annotations

import logging

from hypercorn.config import Config as HypercornConfig

from lakekeeper_host.config import Settings


def hypercorn_config(settings: Settings) -> HypercornConfig:
    config = HypercornConfig()
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
