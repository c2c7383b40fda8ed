"""Fixtures of the secret-store tests: fresh databases, SeaweedFS with two users, built-in-store servers."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from lakekeeper_host.builtins.secrets_database import (
    DatabaseSecretStore,
    derive_key,
    open_sealed,
)
from lakekeeper_host.store import Store
from lakekeeper_host.store.migrate import migrate
from lakekeeper_testing.secrets_conformance import SeaweedTwoUsers, server_database
from lakekeeper_testing.server import CatalogServer
from lakekeeper_testing.services import service_or_skip

KEY = "conformance-key-0123456789abcdef"
BUCKET = "lakekeeper"
# debug logs and CloudEvents in the server log, so the leak checks that grep it see everything
CHATTY = {"LAKEKEEPER__LOG_LEVEL": "debug", "LAKEKEEPER__LOG_CLOUDEVENTS": "true"}


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request, tmp_path) -> str:
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path}/catalog.sqlite"
    if os.environ.get("LAKEKEEPER_TEST_SKIP_POSTGRES") == "1":
        pytest.skip("LAKEKEEPER_TEST_SKIP_POSTGRES=1")
    return request.getfixturevalue("pg_url_factory")().replace("postgresql://", "postgresql+asyncpg://", 1)


@pytest.fixture
async def store(store_url):
    """A migrated, empty catalog database."""
    store = Store(store_url)
    await store.connect()
    await migrate(store)
    yield store
    await store.disconnect()


@pytest.fixture
def database_secret_store(store) -> DatabaseSecretStore:
    return DatabaseSecretStore(store, derive_key(KEY))


@pytest.fixture(scope="session")
def seaweed() -> Iterator[SeaweedTwoUsers]:
    server = service_or_skip(SeaweedTwoUsers(buckets=[BUCKET]))
    try:
        yield server
    finally:
        server.close()


def backend_env(backend: str, request) -> dict[str, str]:
    if backend == "sqlite":
        return dict(CHATTY)
    if os.environ.get("LAKEKEEPER_TEST_SKIP_POSTGRES") == "1":
        pytest.skip("LAKEKEEPER_TEST_SKIP_POSTGRES=1")
    url = request.getfixturevalue("pg_url_factory")()
    return {**CHATTY, "LAKEKEEPER__PG_DATABASE_URL_WRITE": url, "LAKEKEEPER__PG_DATABASE_URL_READ": url}


def start_server(env: dict[str, str]) -> CatalogServer:
    server = CatalogServer(env).start()
    if "LAKEKEEPER__PG_DATABASE_URL_WRITE" in env:
        httpx.post(server.url + "/management/v1/bootstrap", json={"accept-terms-of-use": True}, timeout=30)
    return server


class DatabaseProbe:
    """Looks into the ``secret`` table of a server and opens rows with the server's key."""

    def __init__(self, server: CatalogServer):
        self.server = server
        self.key = derive_key(server.environment()["LAKEKEEPER__PG_ENCRYPTION_KEY"])

    async def rows(self) -> list[dict[str, Any]]:
        async with server_database(self.server) as db:
            return await db.fetch_all("SELECT * FROM secret")

    async def secret_ids(self) -> set[str]:
        return {row["id"] for row in await self.rows()}

    async def read(self, secret_id: str) -> dict[str, Any] | None:
        for row in await self.rows():
            if row["id"] == secret_id:
                return open_sealed(self.key, secret_id, row["ciphertext"])
        return None
