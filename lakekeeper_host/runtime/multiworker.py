"""Several hypercorn worker processes sharing one port (``LAKEKEEPER__WORKERS``).

Metrics: each worker writes its counters to a shared directory (prometheus_client's multiprocess
mode) and this parent process serves the aggregate on ``METRICS__PORT``.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile

from hypercorn.run import run as hypercorn_run

from lakekeeper_host.config import Settings
from lakekeeper_host.metrics import LakekeeperNames
from lakekeeper_host.runtime.hypercorn_settings import hypercorn_config

log = logging.getLogger(__name__)


def serve_workers(settings: Settings) -> int:
    metrics_dir = tempfile.mkdtemp(prefix="lakekeeper-metrics-")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir  # inherited by the worker processes
    try:
        if settings.host.metrics.enabled:
            _serve_aggregated_metrics(settings, metrics_dir)
        config = hypercorn_config(settings)
        config.application_path = "lakekeeper_host.runtime.asgi:app"
        return hypercorn_run(config)
    finally:
        shutil.rmtree(metrics_dir, ignore_errors=True)


def _serve_aggregated_metrics(settings: Settings, metrics_dir: str) -> None:
    from prometheus_client import CollectorRegistry, start_http_server
    from prometheus_client.multiprocess import MultiProcessCollector

    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=metrics_dir)
    # Lakekeeper's metric names, from the same aggregated counters (a second, unregistered reader)
    registry.register(LakekeeperNames(MultiProcessCollector(None, path=metrics_dir).collect))
    try:
        start_http_server(settings.host.metrics.port, addr=settings.bind_ip, registry=registry)
    except OSError as exc:
        log.warning("metrics endpoint not started on port %s: %s", settings.host.metrics.port, exc)
