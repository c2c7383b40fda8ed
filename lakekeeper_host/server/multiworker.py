"""Several hypercorn worker processes sharing one port (``LAKEKEEPER__WORKERS``)."""

from __future__ import annotations

from hypercorn.run import run as hypercorn_run

from lakekeeper_host.config import Settings


def serve_workers(settings: Settings) -> int:
    from lakekeeper_host.server.serve import hypercorn_config

    config = hypercorn_config(settings)
    config.application_path = "lakekeeper_host.server.asgi:app"
    return hypercorn_run(config)
