"""pytest plugin shipped with the host (entry point ``pytest11``): fixtures for plugin packages.

``lakekeeper_server_factory`` starts real servers; plugins use it to run the host with their
backend configured.
"""

from __future__ import annotations

import pytest

from lakekeeper_testing.server import CatalogServer


@pytest.fixture(scope="session")
def lakekeeper_server_factory():
    servers: list[CatalogServer] = []

    def start(env: dict[str, str] | None = None, **kwargs) -> CatalogServer:
        server = CatalogServer(env, **kwargs).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()
