"""Object IO, table config and access-mode selection against moto (fast, in-process).

moto validates neither signatures nor session policies, so scope enforcement is tested on
SeaweedFS (test_storage_seaweed.py); here we test what the host sees from the storage object.
"""

from __future__ import annotations

import time

import boto3
import pytest
from moto import mock_aws

from lakekeeper_host.errors import CatalogError
from lakekeeper_host.serde import structure_body
from lakekeeper_host.service.storage import DataAccess, StoragePermission, TableAccessRequest
from lakekeeper_storage_s3 import CredentialCache, S3Credential, S3Profile, S3Storage, S3StorageConfig

BUCKET = "unit-bucket"
ROLE = "arn:aws:iam::123456789012:role/vended"


@pytest.fixture
def aws(monkeypatch):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    with mock_aws():
        boto3.client("s3", region_name="eu-central-1").create_bucket(
            Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": "eu-central-1"}
        )
        yield


def make_storage(
    cache: CredentialCache | None = None, config: S3StorageConfig | None = None, credential=..., **profile
):
    body = {"bucket": BUCKET, "region": "eu-central-1", "key-prefix": "wh", "sts-enabled": True, "sts-role-arn": ROLE}
    body.update(profile)
    if credential is ...:
        credential = {
            "credential-type": "access-key", "aws-access-key-id": "AKIATEST", "aws-secret-access-key": "secret"
        }
    parsed = structure_body(credential, S3Credential) if credential is not None else None
    cache = CredentialCache(100) if cache is None else cache
    return S3Storage(structure_body(body, S3Profile), parsed, config or S3StorageConfig(), cache)


def request(storage, access=DataAccess.NONE, permission=StoragePermission.READ_WRITE_DELETE, **extra):
    extra.setdefault("signer_uri", "http://lk/catalog/")
    extra.setdefault("signer_endpoint", "v1/signer/wh-id/tabular-id/table-id/v1/aws/s3/sign")
    return TableAccessRequest(
        table_location=f"{storage.base_location()}/table-1",
        permission=permission,
        access=access,
        warehouse_id="wh-id",
        tabular_id="table-id",
        **extra,
    )


async def test_write_read_exists_delete(aws):
    storage = make_storage()
    location = f"{storage.base_location()}/t/metadata/00000.metadata.json"
    assert not await storage.exists(location)
    await storage.write(location, b"{}")
    assert await storage.exists(location)
    assert await storage.read(location) == b"{}"
    await storage.delete(location)
    assert not await storage.exists(location)
    with pytest.raises(FileNotFoundError):
        await storage.read(location)


async def test_listing_is_path_segment_aware(aws):
    storage = make_storage()
    base = storage.base_location()
    for name in ("loc/a", "loc/sub/b", "loca/c"):  # "loca" shares a string prefix with "loc"
        await storage.write(f"{base}/{name}", b"x")
    assert [x async for x in storage.list(f"{base}/loc")] == [f"{base}/loc/a", f"{base}/loc/sub/b"]
    assert not await storage.is_empty(f"{base}/loc")
    assert await storage.is_empty(f"{base}/lo")


async def test_delete_prefix_batches_past_the_thousand_key_limit(aws):
    storage = make_storage()
    base = storage.base_location()
    client = boto3.client("s3", region_name="eu-central-1")
    for i in range(1203):
        client.put_object(Bucket=BUCKET, Key=f"wh/big/data/{i:05d}.parquet", Body=b"")
    await storage.write(f"{base}/keep/x", b"x")
    assert await storage.delete_prefix(f"{base}/big") == 1203
    assert await storage.is_empty(f"{base}/big")
    assert await storage.exists(f"{base}/keep/x")


async def test_scheme_aliases_read_the_same_objects(aws):
    storage = make_storage(**{"allow-alternative-protocols": True})
    await storage.write("s3://unit-bucket/wh/t/f", b"x")
    assert await storage.read("s3a://unit-bucket/wh/t/f") == b"x"


def test_location_rules():
    storage = make_storage()
    assert storage.base_location() == "s3://unit-bucket/wh"
    assert storage.is_allowed_location("s3://unit-bucket/wh/ns/table")
    assert not storage.is_allowed_location("s3://unit-bucket/wh")  # the root is not a table location
    assert not storage.is_allowed_location("s3://unit-bucket/whx/table")
    assert not storage.is_allowed_location("s3://other/wh/table")
    assert not storage.is_allowed_location("s3a://unit-bucket/wh/table")
    assert storage.normalize_location("s3a://unit-bucket/wh/t/") == "s3://unit-bucket/wh/t"
    assert make_storage(**{"allow-alternative-protocols": True}).is_allowed_location("s3a://unit-bucket/wh/t")


def test_catalog_defaults_and_immutable_fields():
    storage = make_storage(**{"aws-kms-key-arn": "arn:aws:kms:k"})
    assert storage.catalog_defaults(soft_delete_enabled=True) == {
        "s3.delete-enabled": "false",
        "s3.sse.type": "kms",
        "s3.sse.key": "arn:aws:kms:k",
    }
    assert "s3.delete-enabled" not in storage.catalog_defaults(soft_delete_enabled=False)
    assert make_storage(**{"push-s3-delete-disabled": False}).catalog_defaults(soft_delete_enabled=True) == {}
    assert storage.immutable_fields() == ("bucket", "key-prefix", "region")
    assert make_storage(endpoint="http://127.0.0.1:9000").immutable_fields() == ("bucket", "key-prefix")


async def test_vended_credentials_config(aws):
    storage = make_storage(**{"path-style-access": True})
    refresh = "http://lk/catalog/v1/wh-id/namespaces/ns/tables/t/credentials"
    result = await storage.table_config(
        request(storage, DataAccess.VENDED_CREDENTIALS, refresh_credentials_endpoint=refresh)
    )
    config = result.config
    assert config["s3.access-key-id"].startswith("ASIA")
    assert config["s3.secret-access-key"] and config["s3.session-token"]
    assert int(config["s3.session-token-expires-at-ms"]) == result.expires_at_ms == int(config["expiration-time"])
    assert config["client.refresh-credentials-endpoint"] == refresh
    assert config["s3.region"] == config["region"] == config["client.region"] == "eu-central-1"
    assert config["s3.path-style-access"] == "true"
    assert "s3.endpoint" not in config  # AWS itself
    assert "s3.signer" not in config
    [credential] = result.storage_credentials
    assert credential["prefix"] == "s3://unit-bucket/wh/table-1"
    assert credential["config"]["s3.session-token"] == config["s3.session-token"]
    assert "region" not in credential["config"]


async def test_sts_token_validity_sets_the_lifetime_of_vended_credentials(aws):
    for validity in (900, 7200):
        storage = make_storage(**{"sts-token-validity-seconds": validity})
        before_ms = int(time.time() * 1000)
        result = await storage.table_config(request(storage, DataAccess.VENDED_CREDENTIALS))
        after_ms = int(time.time() * 1000)
        # STS stamps the expiry somewhere between the two clocks, in whole seconds: allow that
        # rounding and however long the call took (a loaded machine); the two lifetimes differ by 6300 s
        assert validity - 2 <= (result.expires_at_ms - after_ms) / 1000, (validity, result.expires_at_ms, after_ms)
        assert (result.expires_at_ms - before_ms) / 1000 <= validity + 1 + (after_ms - before_ms) / 1000
        assert int(result.config["s3.session-token-expires-at-ms"]) == result.expires_at_ms


async def test_remote_signing_config():
    storage = make_storage(**{"sts-enabled": False, "endpoint": "http://127.0.0.1:9000"})
    result = await storage.table_config(request(storage, DataAccess.REMOTE_SIGNING))
    config = result.config
    assert config["s3.signer"] == "S3V4RestSigner"
    assert config["py-io-impl"] == "pyiceberg.io.fsspec.FsspecFileIO"
    assert config["s3.remote-signing-enabled"] == "true"
    assert config["s3.signer.uri"] == config["signer.uri"] == "http://lk/catalog/"
    assert config["signer.endpoint"] == "v1/signer/wh-id/tabular-id/table-id/v1/aws/s3/sign"
    assert config["s3.endpoint"] == "http://127.0.0.1:9000/"
    assert "s3.access-key-id" not in config
    assert result.storage_credentials == [] and result.expires_at_ms is None


@pytest.mark.parametrize(
    ("profile", "access", "expected"),
    [
        ({}, DataAccess.NONE, "vended"),  # nothing asked: prefer vended credentials
        ({}, DataAccess.REMOTE_SIGNING, "signing"),
        ({}, DataAccess.VENDED_CREDENTIALS | DataAccess.REMOTE_SIGNING, "both"),
        ({"sts-enabled": False}, DataAccess.VENDED_CREDENTIALS, "signing"),  # fallback
        ({"remote-signing-enabled": False}, DataAccess.REMOTE_SIGNING, "vended"),
        ({"sts-enabled": False, "remote-signing-enabled": False}, DataAccess.NONE, "nothing"),
        ({}, DataAccess.CLIENT_MANAGED, "nothing"),
        ({}, DataAccess.CLIENT_MANAGED | DataAccess.REMOTE_SIGNING, "signing"),
    ],
)
async def test_access_delegation_selection(aws, profile, access, expected):
    storage = make_storage(**profile)
    config = (await storage.table_config(request(storage, access))).config
    got = {("s3.session-token" in config), ("s3.signer" in config)}
    assert {"vended": {True, False}, "signing": {False, True}, "both": {True}, "nothing": {False}}[expected] == got
    if expected == "vended":
        assert "s3.session-token" in config and "s3.signer" not in config
    if expected == "signing":
        assert "s3.signer" in config and "s3.session-token" not in config
    assert config["s3.region"] == "eu-central-1"


async def test_credentials_are_cached_per_table_and_permission(aws):
    cache = CredentialCache(100)
    storage = make_storage(cache)
    first = (await storage.table_config(request(storage))).config["s3.access-key-id"]
    again = (await storage.table_config(request(storage))).config["s3.access-key-id"]
    # a second storage object for the same profile (e.g. another worker request) shares the cache
    other = (await make_storage(cache).table_config(request(storage))).config["s3.access-key-id"]
    read_only = (await storage.table_config(request(storage, permission=StoragePermission.READ))).config
    assert first == again == other
    assert read_only["s3.access-key-id"] != first
    assert (cache.hits, cache.misses) == (2, 2)


async def test_credential_change_is_a_cache_miss(aws):
    cache = CredentialCache(100)
    one = make_storage(cache)
    await one.table_config(request(one))
    other_key = {"credential-type": "access-key", "aws-access-key-id": "AKIATEST", "aws-secret-access-key": "rotated"}
    two = make_storage(cache, credential=other_key)
    await two.table_config(request(two))
    assert cache.misses == 2


def test_system_identity_is_gated_by_configuration():
    identity = {"credential-type": "aws-system-identity", "external-id": "ext"}
    with pytest.raises(CatalogError, match="LAKEKEEPER__ENABLE_AWS_SYSTEM_CREDENTIALS"):
        make_storage(credential=identity, **{"assume-role-arn": ROLE})
    enabled = S3StorageConfig(enable_aws_system_credentials=True)
    make_storage(config=enabled, credential=identity, **{"assume-role-arn": ROLE})
    with pytest.raises(CatalogError, match="assume-role-arn"):
        make_storage(
            config=enabled, credential=identity, **{"sts-role-arn": None, "flavor": "s3-compat", "sts-enabled": False}
        )
    with pytest.raises(CatalogError, match="external-id"):
        make_storage(config=enabled, credential={"credential-type": "aws-system-identity"}, **{"assume-role-arn": ROLE})
    direct = S3StorageConfig(enable_aws_system_credentials=True, s3_enable_direct_system_credentials=True)
    make_storage(config=direct, credential={"credential-type": "aws-system-identity"}, **{"sts-enabled": False})


async def test_sts_failure_is_reported(aws):
    storage = make_storage(**{"sts-endpoint": "http://127.0.0.1:9"})  # nothing listens there
    with pytest.raises(CatalogError) as excinfo:
        await storage.table_config(request(storage, DataAccess.VENDED_CREDENTIALS))
    assert excinfo.value.type == "FailedToGetShortTermCredentials"


async def test_no_signing_config_without_a_signer_route():
    """Views have no signer endpoint: remote signing is not offered for them."""
    storage = make_storage(**{"sts-enabled": False})
    config = (await storage.table_config(request(storage, signer_uri=None, signer_endpoint=None))).config
    assert "s3.signer" not in config and config["s3.region"] == "eu-central-1"
