"""``lakekeeper serve`` with ``LAKEKEEPER__SECRET_BACKEND=kv2`` on OpenBao: warehouses over HTTP."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from lakekeeper_testing.secrets_conformance import (
    WarehouseSecretsConformance,
    server_database,
    storage_works,
    warehouse_secret_id,
)
from lakekeeper_testing.server import CatalogServer
from lakekeeper_testing.services import BaoUserpass, OpenBaoServer, ServiceError

from .conftest import kv2_env

pytestmark = pytest.mark.s3


class VaultProbe:
    """Reads the server's secrets with OpenBao's root token."""

    def __init__(self, bao: OpenBaoServer, access: BaoUserpass, server: CatalogServer):
        self.bao, self.mount = bao, access.mount
        self.folder = "lakekeeper/" + httpx.get(server.url + "/management/v1/info").json()["server-id"]

    async def secret_ids(self) -> set[str]:
        try:
            listing = self.bao.request("LIST", f"{self.mount}/metadata/{self.folder}")
        except ServiceError as exc:
            if "HTTP 404" in str(exc):
                return set()
            raise
        return set(listing["data"]["keys"])

    async def read(self, secret_id: str) -> dict[str, Any] | None:
        try:
            return self.bao.request("GET", f"{self.mount}/data/{self.folder}/{secret_id}")["data"]["data"]
        except ServiceError as exc:
            if "HTTP 404" in str(exc):
                return None
            raise


@pytest.fixture(scope="module")
def kv2_server(bao_access, lakekeeper_server_factory):
    server = lakekeeper_server_factory(kv2_env(bao_access))
    yield server
    server.close()


class TestKv2Warehouses(WarehouseSecretsConformance):
    @pytest.fixture
    def secrets_server(self, kv2_server):
        return kv2_server

    @pytest.fixture
    def secret_probe(self, bao, bao_access, kv2_server):
        return VaultProbe(bao, bao_access, kv2_server)


async def test_the_database_holds_no_secrets_and_health_reports_the_store(kv2_server, seaweed_two_users):
    async with httpx.AsyncClient(base_url=kv2_server.url, timeout=120) as client:
        created = await client.post(
            "/management/v1/warehouse",
            json={
                "warehouse-name": "kv2-only-an-id",
                "storage-profile": seaweed_two_users.profile("lakekeeper", "kv2-only-an-id"),
                "storage-credential": seaweed_two_users.credential("first"),
            },
        )
        assert created.status_code == 201, created.text
        health = await client.get("/health")
        # reading the credential back (storage probe) goes through the secret cache
        probe = await storage_works(client, created.json()["warehouse-id"])
        assert probe.json()["valid"] is True, probe.text
        metrics = (await client.get(f"http://127.0.0.1:{kv2_server.metrics_port}/metrics")).text
    assert health.status_code == 200 and health.json()["checks"]["secret-store"] == "healthy"
    assert 'lakekeeper_cache_requests_total{cache="secrets"' in metrics
    assert seaweed_two_users.secret_key not in metrics
    assert kv2_server.environment()["LAKEKEEPER__KV2__PASSWORD"] not in metrics
    async with server_database(kv2_server) as db:
        assert await db.fetch_all("SELECT * FROM secret") == []
        dump = repr(await db.fetch_all("SELECT * FROM warehouse"))
    assert seaweed_two_users.secret_key not in dump
    assert await warehouse_secret_id(kv2_server, created.json()["warehouse-id"]) in dump


async def test_openbao_restarted_mid_test_the_next_request_succeeds(
    fresh_bao, seaweed_two_users, lakekeeper_server_factory
):
    access = fresh_bao.add_userpass_kv(mount="kv")
    server = lakekeeper_server_factory({**kv2_env(access), "LAKEKEEPER__CACHE__SECRETS__ENABLED": "false"})
    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=120) as client:
            body = {
                "storage-profile": seaweed_two_users.profile("lakekeeper", "kv2-restart"),
                "storage-credential": seaweed_two_users.credential("first"),
            }
            before = await client.post("/management/v1/warehouse", json={"warehouse-name": "before", **body})
            assert before.status_code == 201, before.text

            fresh_bao.stop()
            # while it is down: a clear 503 / failed check naming the secret store, no secret
            down = await storage_works(client, before.json()["warehouse-id"])
            assert down.json()["valid"] is False and "SecretStoreUnavailable" in down.text, down.text
            refused = await client.post("/management/v1/warehouse", json={"warehouse-name": "during", **body})
            assert refused.status_code == 503 and refused.json()["error"]["type"] == "SecretStoreUnavailable"
            assert all(seaweed_two_users.secret_key not in r.text for r in (down, refused))
            assert (await client.get("/health")).status_code == 503
            fresh_bao.start()  # the plugin's token is gone now

            after = await client.post("/management/v1/warehouse", json={"warehouse-name": "after", **body})
            assert after.status_code == 201, after.text
            probe = await storage_works(client, after.json()["warehouse-id"])
            assert probe.status_code == 200 and probe.json()["valid"] is True, probe.text
            assert (await client.get("/health")).status_code == 200
        log = server.log_path.read_text(errors="replace")
        assert "logging in again" in log
        assert seaweed_two_users.secret_key not in log and access.password not in log
    finally:
        server.close()
