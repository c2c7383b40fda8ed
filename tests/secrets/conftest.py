"""Fixtures of the secret-store tests: fresh databases, SeaweedFS with two users, built-in-store servers."""

from __future__ import annotations

from typing import Any

import pytest

from lakekeeper_host.builtins.secrets_database import (
    DatabaseSecretStore,
    derive_key,
    open_sealed,
)
from lakekeeper_host.store import Store
from lakekeeper_host.store.migrate import migrate
from lakekeeper_testing.secrets_conformance import server_database
from lakekeeper_testing.server import CatalogServer
from lakekeeper_testing.services import skip_if_postgres_is_off

KEY = "conformance-key-0123456789abcdef"
BUCKET = "lakekeeper"
# debug logs and CloudEvents in the server log, so the leak checks that grep it see everything
CHATTY = {"LAKEKEEPER__LOG_LEVEL": "debug", "LAKEKEEPER__LOG_CLOUDEVENTS": "true"}


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request, tmp_path) -> str:
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path}/catalog.sqlite"
    skip_if_postgres_is_off()
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
