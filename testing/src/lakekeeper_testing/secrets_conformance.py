"""Conformance suites for secret stores: what every ``SecretStore`` must do, run against the real thing.

``SecretStoreConformance`` checks the store itself; ``WarehouseSecretsConformance`` (below) runs
the warehouse life cycle through a real ``lakekeeper serve`` with the store as its secret backend.

A plugin package (or the host, for its built-in store) subclasses ``SecretStoreConformance`` in a
test module and provides an async ``secret_store`` fixture yielding a started store::

    from lakekeeper_testing.secrets_conformance import SecretStoreConformance

    class TestMyStore(SecretStoreConformance):
        @pytest.fixture
        async def secret_store(self, my_server):
            store = await MyStore(...).start()
            yield store
            await store.close()

The class name deliberately does not start with ``Test``: only the subclasses are collected.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets as secrets_module
import uuid
from typing import Any, Protocol

import attrs
import httpx
import pytest

from lakekeeper_host.service.secrets import SecretNotFound, Secrets, SecretStore
from lakekeeper_testing.server import CatalogServer
from lakekeeper_testing.services import SeaweedS3

# what a real storage credential looks like, plus every JSON type a value may use
S3_CREDENTIAL = {
    "type": "s3",
    "credential-type": "access-key",
    "aws-access-key-id": "AKIAEXAMPLEEXAMPLE",
    "aws-secret-access-key": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
}
UNICODE_VALUE = {
    "key": "pässwört-🔑-密钥-ключ",
    "emoji-and-quotes": "\"'\\ \u2028 \u0000 end",
    "ünïcödé-field-name": "value",
}
NESTED_VALUE = {
    "int": 7, "float": 1.5, "bool": True, "null": None, "list": [1, "two", {"three": 3}], "obj": {"a": {"b": "c"}}
}


def new_secret_id() -> str:
    return str(uuid.uuid4())


def large_value(size: int = 256 * 1024) -> dict[str, Any]:
    """A credential-shaped value of about ``size`` bytes (GCS service-account keys run to several KiB)."""
    chunk = "abcdefghijklmnopqrstuvwxyz0123456789+/"
    return {
        "type": "gcs",
        "credential-type": "service-account-key",
        "key": {"private_key": (chunk * (size // len(chunk) + 1))[:size], "client_email": "x@example.iam"},
    }


class SecretStoreConformance:
    """Tests every secret store passes. Subclasses provide the ``secret_store`` fixture."""

    @pytest.fixture
    def secret_store(self) -> SecretStore:  # pragma: no cover - always overridden
        raise NotImplementedError("provide a `secret_store` fixture yielding a started SecretStore")

    # ------------------------------------------------------------ the *_impl contract

    async def test_created_secret_reads_back_equal(self, secret_store):
        secret_id = new_secret_id()
        await secret_store.create_impl(secret_id, S3_CREDENTIAL)
        assert await secret_store.get_impl(secret_id) == S3_CREDENTIAL

    async def test_unknown_id_reads_as_none(self, secret_store):
        assert await secret_store.get_impl(new_secret_id()) is None

    async def test_deleted_secret_is_gone(self, secret_store):
        secret_id = new_secret_id()
        await secret_store.create_impl(secret_id, S3_CREDENTIAL)
        await secret_store.delete_impl(secret_id)
        assert await secret_store.get_impl(secret_id) is None

    async def test_deleting_an_unknown_id_is_a_no_op(self, secret_store):
        await secret_store.delete_impl(new_secret_id())

    async def test_secrets_are_independent(self, secret_store):
        first, second = new_secret_id(), new_secret_id()
        await secret_store.create_impl(first, {"n": "first"})
        await secret_store.create_impl(second, {"n": "second"})
        await secret_store.delete_impl(first)
        assert await secret_store.get_impl(first) is None
        assert await secret_store.get_impl(second) == {"n": "second"}

    async def test_unicode_values_round_trip(self, secret_store):
        secret_id = new_secret_id()
        await secret_store.create_impl(secret_id, UNICODE_VALUE)
        assert await secret_store.get_impl(secret_id) == UNICODE_VALUE

    async def test_json_types_round_trip(self, secret_store):
        secret_id = new_secret_id()
        await secret_store.create_impl(secret_id, NESTED_VALUE)
        assert await secret_store.get_impl(secret_id) == NESTED_VALUE

    async def test_large_values_round_trip(self, secret_store):
        secret_id, value = new_secret_id(), large_value()
        await secret_store.create_impl(secret_id, value)
        assert await secret_store.get_impl(secret_id) == value

    async def test_concurrent_writes_and_reads(self, secret_store):
        ids = [new_secret_id() for _ in range(8)]
        await asyncio.gather(*(secret_store.create_impl(i, {"id": i}) for i in ids))
        values = await asyncio.gather(*(secret_store.get_impl(i) for i in ids))
        assert values == [{"id": i} for i in ids]

    async def test_healthy(self, secret_store):
        assert await secret_store.health() is True

    # ------------------------------------------------------------ through the host's facade

    async def test_facade_round_trip_and_secret_not_found(self, secret_store):
        secrets = Secrets(secret_store)
        secret_id = await secrets.create(S3_CREDENTIAL)
        assert await secrets.get(secret_id) == S3_CREDENTIAL
        await secrets.delete(secret_id)
        with pytest.raises(SecretNotFound) as raised:
            await secrets.get(secret_id)
        assert raised.value.code == 404 and secret_id in raised.value.message

    async def test_facade_cache_never_serves_a_deleted_secret(self, secret_store):
        secrets = Secrets(secret_store, capacity=10, ttl_seconds=600)
        secret_id = await secrets.create(S3_CREDENTIAL)
        await secrets.get(secret_id)
        assert await secrets.get(secret_id) == S3_CREDENTIAL
        assert secrets.hits == 1
        await secrets.delete(secret_id)
        with pytest.raises(SecretNotFound):
            await secrets.get(secret_id)

    async def test_facade_values_cannot_be_changed_through_the_cache(self, secret_store):
        secrets = Secrets(secret_store, capacity=10, ttl_seconds=600)
        secret_id = await secrets.create({"k": "v"})
        (await secrets.get(secret_id))["k"] = "changed by a caller"
        assert await secrets.get(secret_id) == {"k": "v"}


# ================================================================ warehouses over HTTP
#
# The same warehouse life cycle against any secret backend: a real `lakekeeper serve` with S3
# warehouses on SeaweedFS, whose credentials live in the secret store. The backend-specific part
# is a `SecretProbe` that looks into the store from outside the server.


class SecretProbe(Protocol):
    """Reads a server's secret store directly (not through its API)."""

    async def secret_ids(self) -> set[str]:
        """Every secret id the store holds for this server."""

    async def read(self, secret_id: str) -> dict[str, Any] | None:
        """The stored value, or ``None``."""


@attrs.define(kw_only=True, eq=False)
class SeaweedTwoUsers(SeaweedS3):
    """SeaweedFS with a second full-rights identity, so a warehouse credential can really change."""

    second_access_key: str = "lk-test-second"
    second_secret_key: str = attrs.field(factory=lambda: secrets_module.token_urlsafe(24))

    def _prepare(self) -> None:
        super()._prepare()
        config = json.loads((self.tmp_dir / "s3.json").read_text())
        config["identities"].append(
            {
                "name": "second",
                "credentials": [{"accessKey": self.second_access_key, "secretKey": self.second_secret_key}],
                "actions": ["Admin", "Read", "Write", "List", "Tagging"],
            }
        )
        (self.tmp_dir / "s3.json").write_text(json.dumps(config))

    def credential(self, which: str = "first") -> dict[str, Any]:
        access, secret = (
            (self.access_key, self.secret_key) if which == "first" else (self.second_access_key, self.second_secret_key)
        )
        return {
            "type": "s3", "credential-type": "access-key", "aws-access-key-id": access, "aws-secret-access-key": secret
        }

    def profile(self, bucket: str, key_prefix: str) -> dict[str, Any]:
        return {
            "type": "s3",
            "bucket": bucket,
            "key-prefix": key_prefix,
            "endpoint": self.endpoint,
            "region": self.region,
            "path-style-access": True,
            "flavor": "s3-compat",
            "sts-enabled": False,
        }


async def warehouse_secret_id(server: CatalogServer, warehouse_id: str) -> str | None:
    """The secret id a warehouse row points to, read from the server's database."""
    async with server_database(server) as db:
        return await db.fetch_val("SELECT storage_secret_id FROM warehouse WHERE id = :id", {"id": warehouse_id})


@contextlib.asynccontextmanager
async def server_database(server: CatalogServer):
    """A connection to the database of a ``CatalogServer`` (SQLite file or PostgreSQL)."""
    from lakekeeper_host.config import load_settings
    from lakekeeper_host.store import Store
    from lakekeeper_host.store.db import database_urls

    write_url, _ = database_urls(load_settings(server.environment()))
    store = Store(write_url, pool=(1, 1))
    await store.connect()
    try:
        yield store
    finally:
        await store.disconnect()


async def storage_works(client: httpx.AsyncClient, warehouse_id: str) -> httpx.Response:
    """Ask the server to probe the warehouse's storage: it loads the stored credential and uses it."""
    return await client.post(f"/management/v1/warehouse/{warehouse_id}/storage/validate-access")


async def delete_warehouse(client: httpx.AsyncClient, warehouse_id: str) -> None:
    response = await client.delete(f"/management/v1/warehouse/{warehouse_id}")
    assert response.status_code in (200, 204), response.text


def secret_strings(*values: dict[str, Any]) -> list[str]:
    """The secret parts of credentials: what must never show up in responses or logs."""
    return [v for value in values for k, v in value.items() if "secret" in k or k in ("key", "token", "password")]


class WarehouseSecretsConformance:
    """Warehouse create / read / update-credential / delete with the secret in the store under test.

    Subclasses provide the fixtures ``secrets_server`` (a running ``CatalogServer`` with the
    backend and the ``s3`` storage plugin) and ``secret_probe`` (a ``SecretProbe`` for that server);
    ``seaweed_two_users`` (a started ``SeaweedTwoUsers`` with ``bucket``) comes from this package's
    pytest plugin.
    """

    bucket = "lakekeeper"

    @pytest.fixture
    async def client(self, secrets_server):
        async with httpx.AsyncClient(base_url=secrets_server.url, timeout=120) as client:
            yield client

    async def _create(self, client, seaweed_two_users, credential, name=None) -> httpx.Response:
        return await client.post(
            "/management/v1/warehouse",
            json={
                "warehouse-name": name or f"wh-{uuid.uuid4().hex[:10]}",
                "storage-profile": seaweed_two_users.profile(self.bucket, f"t-{uuid.uuid4().hex[:12]}"),
                "storage-credential": credential,
            },
        )

    async def test_warehouse_life_cycle_keeps_the_secret_in_the_store(
        self, secrets_server, seaweed_two_users, secret_probe, client
    ):
        first, second = seaweed_two_users.credential("first"), seaweed_two_users.credential("second")
        responses: list[httpx.Response] = []
        before = await secret_probe.secret_ids()

        # create: the credential goes to the store, the warehouse keeps its id
        created = await self._create(client, seaweed_two_users, first)
        responses.append(created)
        assert created.status_code == 201, created.text
        warehouse_id = created.json()["warehouse-id"]
        first_id = await warehouse_secret_id(secrets_server, warehouse_id)
        assert first_id and await secret_probe.secret_ids() == before | {first_id}
        assert await secret_probe.read(first_id) == first

        # read: never the credential
        responses.append(await client.get(f"/management/v1/warehouse/{warehouse_id}"))
        responses.append(await client.get("/management/v1/warehouse"))
        assert all(r.status_code == 200 for r in responses[-2:])
        assert "storage-credential" not in responses[-2].json()

        # the server uses the stored credential: its read/write probes on S3 pass
        probe = await storage_works(client, warehouse_id)
        responses.append(probe)
        assert probe.status_code == 200 and probe.json()["valid"] is True, probe.text

        # a credential S3 rejects is refused before anything is stored
        wrong = {**first, "aws-secret-access-key": "not-the-key"}
        refused = await client.post(
            f"/management/v1/warehouse/{warehouse_id}/storage-credential", json={"new-storage-credential": wrong}
        )
        responses.append(refused)
        assert 400 <= refused.status_code < 500, refused.text
        assert await warehouse_secret_id(secrets_server, warehouse_id) == first_id
        assert await secret_probe.secret_ids() == before | {first_id}

        # update: the new secret is written, the warehouse points to it, the old one is gone
        updated = await client.post(
            f"/management/v1/warehouse/{warehouse_id}/storage-credential", json={"new-storage-credential": second}
        )
        responses.append(updated)
        assert updated.status_code == 200, updated.text
        second_id = await warehouse_secret_id(secrets_server, warehouse_id)
        assert second_id not in (None, first_id)
        assert await secret_probe.read(second_id) == second
        assert await secret_probe.read(first_id) is None
        assert await secret_probe.secret_ids() == before | {second_id}
        probe = await storage_works(client, warehouse_id)
        responses.append(probe)
        assert probe.status_code == 200 and probe.json()["valid"] is True, probe.text

        # delete: the secret goes with the warehouse
        await delete_warehouse(client, warehouse_id)
        assert await secret_probe.read(second_id) is None
        assert await secret_probe.secret_ids() == before

        leaked = [
            value
            for value in secret_strings(first, second, wrong)
            for text in [*(r.text for r in responses), secrets_server.log_path.read_text(errors="replace")]
            if value in text
        ]
        assert not leaked, "a secret value appeared in a response or the server log"

    async def test_a_refused_or_duplicate_creation_leaves_no_secret(self, seaweed_two_users, secret_probe, client):
        before = await secret_probe.secret_ids()
        wrong = {**seaweed_two_users.credential("first"), "aws-secret-access-key": "not-the-key"}
        refused = await self._create(client, seaweed_two_users, wrong)
        assert 400 <= refused.status_code < 500, refused.text
        assert "not-the-key" not in refused.text

        name = f"wh-{uuid.uuid4().hex[:10]}"
        created = await self._create(client, seaweed_two_users, seaweed_two_users.credential("first"), name=name)
        assert created.status_code == 201, created.text
        after_first = await secret_probe.secret_ids()
        duplicate = await self._create(client, seaweed_two_users, seaweed_two_users.credential("second"), name=name)
        assert duplicate.status_code == 409, duplicate.text
        assert await secret_probe.secret_ids() == after_first
        assert len(after_first - before) == 1
        await delete_warehouse(client, created.json()["warehouse-id"])
        assert await secret_probe.secret_ids() == before
