"""``AdlsStorage`` against Azurite: SAS kinds, what Azurite refuses, and the client config.

Azurite has no DFS endpoint and no directory-scoped SAS (``sr=d``): the tests that touch those
ADLS Gen2-only features say what cannot run here.
"""

from __future__ import annotations

import time
import urllib.parse
import uuid

import pytest
from azure.core.exceptions import HttpResponseError

from lakekeeper_host.serde import structure_body
from lakekeeper_host.service.storage import DataAccess, StoragePermission, TableAccessRequest
from lakekeeper_host.service.storage_validation import validate_storage
from lakekeeper_storage_adls import AdlsCredential, AdlsProfile, AdlsStorage, AdlsStorageConfig


def build(profile: dict, credential: dict, config: AdlsStorageConfig | None = None, **kwargs) -> AdlsStorage:
    return AdlsStorage(
        structure_body({k: v for k, v in profile.items() if k != "type"}, AdlsProfile),
        structure_body({k: v for k, v in credential.items() if k != "type"}, AdlsCredential),
        config or AdlsStorageConfig(),
        **kwargs,
    )


def request(location: str, permission=StoragePermission.READ, access=DataAccess.VENDED_CREDENTIALS):
    return TableAccessRequest(
        table_location=location, permission=permission, access=access, warehouse_id="wh", tabular_id="t"
    )


def query(token: str) -> dict[str, str]:
    return dict(urllib.parse.parse_qsl(token))


@pytest.fixture
async def key_storage(azurite, key_prefix, adls_profile, shared_key_credential):
    storage = build(adls_profile(azurite, key_prefix), shared_key_credential(azurite))
    yield storage
    await storage.delete_prefix(storage.base_location())
    await storage.close()


@pytest.fixture
def delegation_config(azurite_oauth, managed_identity, monkeypatch) -> AdlsStorageConfig:
    for name, value in managed_identity.environment.items():
        monkeypatch.setenv(name, value)
    return AdlsStorageConfig(adls_ca_bundle=str(azurite_oauth.ca_path))


async def test_table_config_has_the_keys_pyiceberg_and_spark_read(key_storage, azurite):
    table = f"{key_storage.base_location()}/ns/orders"
    config = await key_storage.table_config(
        TableAccessRequest(
            table_location=table,
            permission=StoragePermission.READ_WRITE_DELETE,
            access=DataAccess.VENDED_CREDENTIALS,
            warehouse_id="wh",
            tabular_id="t",
            refresh_credentials_endpoint="http://lk/catalog/v1/wh/namespaces/ns/tables/orders/credentials",
        )
    )
    host = f"{azurite.account}.dfs.core.windows.net"
    sas = config.config[f"adls.sas-token.{host}"]
    assert query(sas)["sp"] == "rwdl" or set(query(sas)["sp"]) == set("rwadl")
    assert config.config[f"adls.sas-token-expires-at-ms.{host}"] == config.config["expiration-time"]
    assert int(config.config["expiration-time"]) == config.expires_at_ms
    # valid for the profile's sas-token-validity-seconds (900)
    assert abs(config.expires_at_ms / 1000 - (time.time() + 900)) < 60
    assert config.config["adls.account-name"] == azurite.account
    assert config.config["adls.refresh-credentials-endpoint"].endswith("/tables/orders/credentials")
    # a custom endpoint travels as a connection string holding the endpoint and the SAS
    assert (
        config.config["adls.connection-string"] == f"BlobEndpoint={azurite.blob_endpoint};SharedAccessSignature={sas}"
    )
    assert config.storage_credentials == [{"prefix": table, "config": {k: v for k, v in config.config.items()}}]


async def test_permissions_map_to_lakekeepers_sas_letters(key_storage):
    table = f"{key_storage.base_location()}/ns/t"
    letters = {}
    for permission in StoragePermission:
        token, _ = await key_storage.sas_token(table, permission)
        letters[permission] = set(query(token)["sp"])
    assert letters == {
        StoragePermission.READ: set("rl"),
        StoragePermission.READ_WRITE: set("rwal"),
        StoragePermission.READ_WRITE_DELETE: set("rwadl"),
    }


async def test_nothing_is_vended_for_client_managed_access_or_without_sas(
    azurite, key_prefix, adls_profile, shared_key_credential
):
    storage = build(adls_profile(azurite, key_prefix), shared_key_credential(azurite))
    table = f"{storage.base_location()}/ns/t"
    config = await storage.table_config(request(table, access=DataAccess.CLIENT_MANAGED))
    assert not config.storage_credentials and not any("sas-token" in k for k in config.config)
    # no header at all: ADLS has no remote signing, so the server delegates with a SAS (Lakekeeper)
    assert (await storage.table_config(request(table, access=DataAccess.NONE))).storage_credentials
    off = build(adls_profile(azurite, key_prefix, **{"sas-enabled": False}), shared_key_credential(azurite))
    assert not (await off.table_config(request(table))).storage_credentials
    checks = {c.name: c.status for c in await validate_storage(off)}
    assert checks["vended-credentials-issued"] == "skipped" and checks["lakekeeper-read-write"] == "passed"
    await storage.close()
    await off.close()


async def test_a_tampered_sas_is_refused(key_storage, azurite):
    location = f"{key_storage.base_location()}/ns/t/data/a.parquet"
    await key_storage.write(location, b"data")
    token, _ = await key_storage.sas_token(f"{key_storage.base_location()}/ns/t", StoragePermission.READ)
    container = azurite.blob_service().get_container_client("lakekeeper")
    blob_name = location.split(".windows.net/", 1)[1]
    parts = query(token)
    # widen the permissions without re-signing
    tampered = urllib.parse.urlencode({**parts, "sp": "rwdl"})
    for bad in (tampered, token.replace("sig=", "sig=AAAA")):
        client = type(container)(azurite.blob_endpoint, "lakekeeper", credential=bad)
        with pytest.raises(HttpResponseError) as raised:
            client.get_blob_client(blob_name).upload_blob(b"x", overwrite=True)
        assert raised.value.status_code == 403
    good = type(container)(azurite.blob_endpoint, "lakekeeper", credential=token)
    assert good.download_blob(blob_name).readall() == b"data"


async def test_an_expired_sas_is_refused(azurite, key_prefix, adls_profile, shared_key_credential):
    storage = build(adls_profile(azurite, key_prefix), shared_key_credential(azurite), clock=lambda: time.time() - 7200)
    live = build(adls_profile(azurite, key_prefix), shared_key_credential(azurite))
    location = f"{storage.base_location()}/ns/t/a.json"
    await live.write(location, b"x")
    token, expires_ms = await storage.sas_token(f"{storage.base_location()}/ns/t", StoragePermission.READ)
    assert expires_ms < time.time() * 1000
    from azure.storage.blob import ContainerClient

    client = ContainerClient(azurite.blob_endpoint, "lakekeeper", credential=token)
    with pytest.raises(HttpResponseError) as raised:
        client.download_blob(location.split(".windows.net/", 1)[1]).readall()
    assert raised.value.status_code == 403
    await live.delete_prefix(live.base_location())
    await storage.close()
    await live.close()


async def test_user_delegation_sas_is_signed_with_a_delegation_key(
    azurite_oauth, managed_identity, delegation_config, key_prefix, adls_profile
):
    storage = build(
        adls_profile(azurite_oauth, key_prefix),
        {"credential-type": "azure-system-identity"},
        delegation_config,
        system_identity_enabled=True,
    )
    try:
        table = f"{storage.base_location()}/ns/t"
        first, _ = await storage.sas_token(table, StoragePermission.READ_WRITE)
        second, _ = await storage.sas_token(table, StoragePermission.READ)
        fields = query(first)
        # skoid/sktid/ske: a user-delegation SAS, not an account-key one
        assert {"skoid", "sktid", "skt", "ske", "sks", "skv"} <= fields.keys()
        assert fields["spr"] == "https"
        assert query(second)["ske"] == fields["ske"]  # the delegation key is reused
        assert any("/msi/token" in path for path in managed_identity.requests)
        # Azurite accepts it for IO and refuses it tampered
        location = f"{table}/data/x.parquet"
        from azure.storage.blob import ContainerClient

        client = ContainerClient(
            azurite_oauth.blob_endpoint, "lakekeeper", credential=first, connection_verify=str(azurite_oauth.ca_path)
        )
        name = location.split(".windows.net/", 1)[1]
        client.upload_blob(name, b"delegated")
        assert await storage.read(location) == b"delegated"
        bad = ContainerClient(
            azurite_oauth.blob_endpoint,
            "lakekeeper",
            credential=first.replace("sig=", "sig=AAAA"),
            connection_verify=str(azurite_oauth.ca_path),
        )
        with pytest.raises(HttpResponseError) as raised:
            bad.download_blob(name).readall()
        assert raised.value.status_code == 403
    finally:
        await storage.delete_prefix(storage.base_location())
        await storage.close()


async def test_system_identity_needs_the_deployment_switch(azurite, key_prefix, adls_profile):
    from lakekeeper_host.errors import CatalogError

    with pytest.raises(CatalogError) as raised:
        build(adls_profile(azurite, key_prefix), {"credential-type": "azure-system-identity"})
    assert raised.value.code == 400 and "LAKEKEEPER__ENABLE_AZURE_SYSTEM_CREDENTIALS" in raised.value.message


async def test_directory_sas_is_what_lakekeeper_signs_but_azurite_cannot_check(
    azurite, key_prefix, adls_profile, shared_key_credential
):
    """ADLS Gen2 only: directory SAS (sr=d) need a hierarchical-namespace account.

    Azurite implements neither the DFS endpoint nor directory SAS: it refuses every request made
    with one (even inside the directory). So the token's shape is checked here, and the plugin's
    validation reports the refusal with a hint instead of passing. On a real ADLS Gen2 account the
    same token allows the table directory and nothing else.
    """
    storage = build(adls_profile(azurite, key_prefix, **{"sas-scope": "directory"}), shared_key_credential(azurite))
    try:
        table = f"{storage.base_location()}/ns/orders"
        token, _ = await storage.sas_token(table, StoragePermission.READ)
        fields = query(token)
        assert fields["sr"] == "d"
        assert fields["sdd"] == "3"  # <key-prefix>/ns/orders
        assert set(fields["sp"]) == set("rl")
        checks = {c.name: c for c in await validate_storage(storage)}
        assert checks["lakekeeper-read-write"].status == "passed"
        assert checks["vended-credentials-read-write"].status == "failed"
        assert "hierarchical namespace" in checks["vended-credentials-read-write"].message
        assert checks["cleanup"].status == "passed"
    finally:
        await storage.close()


async def test_a_missing_filesystem_fails_validation_naming_the_field(
    azurite, key_prefix, adls_profile, shared_key_credential
):
    storage = build(
        adls_profile(azurite, key_prefix, filesystem=f"missing-{uuid.uuid4().hex[:8]}"), shared_key_credential(azurite)
    )
    try:
        checks = {c.name: c for c in await validate_storage(storage)}
        assert checks["lakekeeper-read-write"].status == "failed"
        assert "storage-profile.filesystem" in checks["lakekeeper-read-write"].message
    finally:
        await storage.close()


async def test_a_vended_sas_is_reused_for_half_its_validity(azurite, key_prefix, adls_profile, shared_key_credential):
    now = [time.time()]
    storage = build(adls_profile(azurite, key_prefix), shared_key_credential(azurite), clock=lambda: now[0])
    table = f"{storage.base_location()}/ns/t"
    first = await storage.table_config(request(table))
    assert (await storage.table_config(request(table + "/"))).config == first.config  # the same table
    other = await storage.table_config(request(table, StoragePermission.READ_WRITE))
    assert other.config != first.config  # another permission, another SAS
    now[0] += 900 / 2 + 1  # sas-token-validity-seconds is 900 in these profiles
    renewed = await storage.table_config(request(table))
    assert renewed.expires_at_ms > first.expires_at_ms
    await storage.close()
