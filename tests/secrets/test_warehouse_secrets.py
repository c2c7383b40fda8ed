"""Warehouses whose S3 credentials live in the built-in store (SQLite and PostgreSQL), over HTTP."""

from __future__ import annotations

import pytest

from lakekeeper_testing.secrets_conformance import WarehouseSecretsConformance

from .conftest import CHATTY, DatabaseProbe

pytestmark = pytest.mark.s3


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def builtin_server(request, lakekeeper_server_factory):
    server = lakekeeper_server_factory(CHATTY, backend=request.param)
    yield server
    server.close()


class TestBuiltinStoreWarehouses(WarehouseSecretsConformance):
    @pytest.fixture
    def secrets_server(self, builtin_server):
        return builtin_server

    @pytest.fixture
    def secret_probe(self, builtin_server):
        return DatabaseProbe(builtin_server)


async def test_raw_warehouse_and_secret_rows_hold_no_plaintext(builtin_server, seaweed_two_users):
    import httpx

    from lakekeeper_testing.secrets_conformance import server_database

    credential = seaweed_two_users.credential("first")
    async with httpx.AsyncClient(base_url=builtin_server.url, timeout=120) as client:
        response = await client.post(
            "/management/v1/warehouse",
            json={
                "warehouse-name": "raw-rows",
                "storage-profile": seaweed_two_users.profile("lakekeeper", "raw-rows"),
                "storage-credential": credential,
            },
        )
    assert response.status_code == 201, response.text
    async with server_database(builtin_server) as db:
        dump = repr(await db.fetch_all("SELECT * FROM secret")) + repr(await db.fetch_all("SELECT * FROM warehouse"))
    assert credential["aws-secret-access-key"] not in dump
    assert credential["aws-access-key-id"] not in dump


async def test_secret_cache_lookups_show_in_the_metrics_without_values(builtin_server, seaweed_two_users):
    import httpx

    from lakekeeper_testing.secrets_conformance import storage_works

    credential = seaweed_two_users.credential("second")
    async with httpx.AsyncClient(base_url=builtin_server.url, timeout=120) as client:
        created = await client.post(
            "/management/v1/warehouse",
            json={
                "warehouse-name": "metrics",
                "storage-profile": seaweed_two_users.profile("lakekeeper", "metrics"),
                "storage-credential": credential,
            },
        )
        assert created.status_code == 201, created.text
        probe = await storage_works(client, created.json()["warehouse-id"])
        assert probe.json()["valid"] is True, probe.text
        metrics = (await client.get(f"http://127.0.0.1:{builtin_server.metrics_port}/metrics")).text
    assert 'lakekeeper_cache_requests_total{cache="secrets",result="miss"}' in metrics
    assert credential["aws-secret-access-key"] not in metrics
