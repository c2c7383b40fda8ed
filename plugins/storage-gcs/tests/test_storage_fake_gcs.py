"""The storage object against a real fake-gcs-server, with tokens from the local STS test double.

fake-gcs-server accepts any token (it checks none), so these tests prove the IO paths and the
token exchange; the scope of a downscoped token is asserted on the access boundary the STS double
received, because only Google evaluates it.
"""

from __future__ import annotations

import json

import pytest

from lakekeeper_host.errors import CatalogError
from lakekeeper_host.serde import structure_body
from lakekeeper_host.service.storage import DataAccess, StoragePermission, TableAccessRequest
from lakekeeper_host.service.storage_validation import validate_storage
from lakekeeper_storage_gcs import GcsCredential, GcsProfile, GcsStorage, GcsStorageConfig
from lakekeeper_storage_gcs.sts import TokenCache

from .conftest import BUCKET


@pytest.fixture
def config(fake_gcs, sts) -> GcsStorageConfig:
    return GcsStorageConfig(gcs_storage_endpoint=fake_gcs.endpoint, gcs_sts_endpoint=sts.sts_endpoint)


@pytest.fixture
def storage(gcs_profile, gcs_credential, config):
    built: list[GcsStorage] = []

    def build(credential=None, **overrides) -> GcsStorage:
        profile = {k: v for k, v in gcs_profile(**overrides).items() if k != "type"}
        credential = {k: v for k, v in (credential or gcs_credential).items() if k != "type"}
        storage = GcsStorage(
            structure_body(profile, GcsProfile), structure_body(credential, GcsCredential), config, TokenCache(100)
        )
        built.append(storage)
        return storage

    yield build


def access(
    storage: GcsStorage,
    table: str,
    permission=StoragePermission.READ_WRITE_DELETE,
    delegation=DataAccess.VENDED_CREDENTIALS,
) -> TableAccessRequest:
    return TableAccessRequest(
        table_location=f"{storage.base_location()}/{table}",
        permission=permission,
        access=delegation,
        warehouse_id="wh",
        tabular_id=table,
        refresh_credentials_endpoint=f"http://catalog/v1/wh/namespaces/ns/tables/{table}/credentials",
    )


async def test_object_io_round_trip(storage, fake_gcs, key_prefix):
    gcs = storage()
    base = gcs.base_location()
    assert base == f"gs://{BUCKET}/{key_prefix}"
    assert await gcs.is_empty(f"{base}/table")
    await gcs.write(f"{base}/table/metadata/v1.metadata.json", b'{"v": 1}')
    await gcs.write(f"{base}/table/data/a.parquet", b"a")
    await gcs.write(f"{base}/table-sibling/data/b.parquet", b"b")  # shares the string prefix only

    assert await gcs.read(f"{base}/table/metadata/v1.metadata.json") == b'{"v": 1}'
    assert await gcs.exists(f"{base}/table/data/a.parquet")
    assert not await gcs.exists(f"{base}/table/data/missing.parquet")
    with pytest.raises(FileNotFoundError):
        await gcs.read(f"{base}/table/data/missing.parquet")
    assert sorted([loc async for loc in gcs.list(f"{base}/table")]) == [
        f"{base}/table/data/a.parquet",
        f"{base}/table/metadata/v1.metadata.json",
    ]
    assert not await gcs.is_empty(f"{base}/table")

    assert await gcs.delete_prefix(f"{base}/table") == 2
    assert await gcs.is_empty(f"{base}/table")
    assert fake_gcs.object_names(BUCKET, f"{key_prefix}/") == [f"{key_prefix}/table-sibling/data/b.parquet"]
    await gcs.delete(f"{base}/table-sibling/data/b.parquet")
    await gcs.delete(f"{base}/table-sibling/data/b.parquet")  # gone already: still fine
    assert fake_gcs.object_names(BUCKET, f"{key_prefix}/") == []


async def test_list_pages_through_many_objects(storage):
    gcs = storage()
    gcs.list_page_size = 3  # real paging with page tokens, without writing thousands of objects
    base = gcs.base_location()
    for index in range(10):
        await gcs.write(f"{base}/many/{index:02d}", b"")
    listed = [loc async for loc in gcs.list(f"{base}/many")]
    assert listed == [f"{base}/many/{index:02d}" for index in range(10)]
    assert await gcs.delete_prefix(f"{base}/many") == 10
    assert await gcs.is_empty(f"{base}/many")


def test_locations(storage, key_prefix):
    gcs = storage()
    base = f"gs://{BUCKET}/{key_prefix}"
    assert gcs.normalize_location(f"GS://{BUCKET}/{key_prefix}/t/") == f"gs://{BUCKET}/{key_prefix}/t"
    assert gcs.is_allowed_location(f"{base}/ns/table")
    assert not gcs.is_allowed_location(base)  # the root itself is no table location
    assert not gcs.is_allowed_location(f"{base}-other/table")
    assert not gcs.is_allowed_location(f"gs://other-bucket/{key_prefix}/table")
    assert not gcs.is_allowed_location(f"s3://{BUCKET}/{key_prefix}/table")
    assert gcs.immutable_fields() == ("bucket", "key-prefix")


async def test_vended_token_is_exchanged_with_a_boundary_on_the_table_prefix(
    storage, sts, fake_gcs, key_prefix, service_account_key
):
    gcs = storage()
    before = len(sts.exchanges)
    result = await gcs.table_config(access(gcs, "orders"))
    config = result.config
    assert config["gcs.project-id"] == "test-project"
    assert config["gcs.service.host"] == fake_gcs.endpoint
    assert config["gcs.oauth2.refresh-credentials-endpoint"].endswith("/orders/credentials")
    assert int(config["gcs.oauth2.token-expires-at"]) == result.expires_at_ms == int(config["expiration-time"])
    [credentials] = result.storage_credentials
    assert credentials["prefix"] == f"gs://{BUCKET}/{key_prefix}/orders"
    assert credentials["config"]["gcs.oauth2.token"] == config["gcs.oauth2.token"]

    [exchange] = sts.exchanges[before:]
    assert exchange.issued_token == config["gcs.oauth2.token"]
    assert exchange.service_account == service_account_key["client_email"]
    assert exchange.form["grant_type"] == "urn:ietf:params:oauth:grant-type:token-exchange"
    [rule] = exchange.boundary["accessBoundary"]["accessBoundaryRules"]
    assert rule["availableResource"] == f"//storage.googleapis.com/projects/_/buckets/{BUCKET}"
    assert rule["availablePermissions"] == ["inRole:roles/storage.objectUser"]
    expression = rule["availabilityCondition"]["expression"]
    objects = f"projects/_/buckets/{BUCKET}/objects/{key_prefix}/orders/"
    assert f"resource.name.startsWith('{objects}')" in expression
    assert (
        f"api.getAttribute('storage.googleapis.com/objectListPrefix', '').startsWith('{key_prefix}/orders/')"
        in expression
    )
    # the trailing slash keeps a sibling such as .../orders2 out
    assert f"{key_prefix}/orders'" not in expression

    # fresh enough: the next load reuses the token instead of exchanging again
    again = await gcs.table_config(access(gcs, "orders"))
    assert again.config["gcs.oauth2.token"] == config["gcs.oauth2.token"]
    assert len(sts.exchanges) == before + 1


@pytest.mark.parametrize(
    ("permission", "roles"),
    [
        (StoragePermission.READ, ["inRole:roles/storage.objectViewer"]),
        (StoragePermission.READ_WRITE, ["inRole:roles/storage.objectViewer", "inRole:roles/storage.objectCreator"]),
        (StoragePermission.READ_WRITE_DELETE, ["inRole:roles/storage.objectUser"]),
    ],
)
async def test_roles_follow_the_permission(storage, sts, permission, roles):
    gcs = storage()
    config = (await gcs.table_config(access(gcs, "t", permission))).config
    rule = sts.exchange_for(config["gcs.oauth2.token"]).boundary["accessBoundary"]["accessBoundaryRules"][0]
    assert rule["availablePermissions"] == roles


async def test_nothing_is_vended_to_client_managed_access_or_without_sts(storage, fake_gcs, sts):
    before = len(sts.exchanges)
    gcs = storage()
    managed = await gcs.table_config(access(gcs, "t", delegation=DataAccess.CLIENT_MANAGED))
    assert managed.config == {"gcs.project-id": "test-project", "gcs.service.host": fake_gcs.endpoint}
    assert managed.storage_credentials == [] and managed.expires_at_ms is None
    no_sts = storage(**{"sts-enabled": False})
    result = await no_sts.table_config(access(no_sts, "t"))
    assert "gcs.oauth2.token" not in result.config and result.storage_credentials == []
    assert len(sts.exchanges) == before


async def test_validate_probes_io_and_vending(storage, fake_gcs, key_prefix):
    gcs = storage()
    checks = {check.name: check for check in await validate_storage(gcs)}
    assert {name: check.status for name, check in checks.items()} == {
        "storage-client-initialized": "passed",
        "lakekeeper-read-write": "passed",
        "vended-credentials-issued": "passed",
        "vended-credentials-read-write": "passed",
        # fake-gcs-server checks no tokens, so a write outside the boundary succeeds there
        "vended-credentials-scope-enforced": "skipped",
        "cleanup": "passed",
    }
    assert "does not check tokens" in checks["vended-credentials-scope-enforced"].message
    assert fake_gcs.object_names(BUCKET, f"{key_prefix}/") == []


async def test_a_key_the_token_endpoint_rejects_fails_validation_naming_the_credential(storage, stranger_key):
    unknown = {"type": "gcs", "credential-type": "service-account-key", "key": stranger_key}
    checks = {check.name: check for check in await validate_storage(storage(credential=unknown))}
    assert checks["lakekeeper-read-write"].status == "failed"
    assert "storage-credential.key was not accepted" in checks["lakekeeper-read-write"].message
    assert "invalid_grant" in checks["lakekeeper-read-write"].message
    assert "Invalid JWT Signature" not in checks["lakekeeper-read-write"].message
    assert checks["vended-credentials-issued"].status == "failed"
    assert "storage-credential.key" in checks["vended-credentials-issued"].message


def test_system_identity_needs_the_deployment_switch(gcs_profile, config):
    profile = structure_body({k: v for k, v in gcs_profile().items() if k != "type"}, GcsProfile)
    credential = structure_body({"credential-type": "gcp-system-identity"}, GcsCredential)
    with pytest.raises(CatalogError) as raised:
        GcsStorage(profile, credential, config, TokenCache())
    assert raised.value.code == 400 and "LAKEKEEPER__ENABLE_GCP_SYSTEM_CREDENTIALS" in raised.value.message
    with pytest.raises(CatalogError) as raised:
        GcsStorage(profile, None, config, TokenCache())
    assert raised.value.code == 400 and "storage-credential" in raised.value.message


async def test_what_google_would_allow_each_vended_token(storage, sts, key_prefix):
    """The boundary's meaning, as evaluated by the STS double's reading of Google's rules."""
    gcs = storage()
    table = f"{key_prefix}/orders"

    async def token(permission: StoragePermission) -> str:
        return (await gcs.table_config(access(gcs, "orders", permission))).config["gcs.oauth2.token"]

    read, read_write, everything = [await token(p) for p in StoragePermission]
    inside = f"{table}/data/f.parquet"
    assert sts.allows(read, "get", BUCKET, inside) and sts.allows(read, "list", BUCKET, f"{table}/")
    assert not sts.allows(read, "create", BUCKET, inside) and not sts.allows(read, "delete", BUCKET, inside)
    assert sts.allows(read_write, "create", BUCKET, inside) and not sts.allows(read_write, "delete", BUCKET, inside)
    assert sts.allows(everything, "delete", BUCKET, inside)
    for outside in (f"{key_prefix}/orders2/data/f.parquet", f"{key_prefix}/other/x", "root-object"):
        assert not sts.allows(everything, "get", BUCKET, outside)
        assert not sts.allows(everything, "create", BUCKET, outside)
    assert not sts.allows(everything, "list", BUCKET, f"{key_prefix}/")  # the warehouse root
    assert not sts.allows(everything, "list", BUCKET, "")
    assert not sts.allows(everything, "get", "another-bucket", inside)


async def test_system_identity_uses_application_default_credentials(
    gcs_profile, config, service_account_key, sts, tmp_path, monkeypatch
):
    """gcp-system-identity is whatever google-auth's ADC finds; here the key file named by
    GOOGLE_APPLICATION_CREDENTIALS (on GKE it would be the metadata server)."""
    key_file = tmp_path / "adc.json"
    key_file.write_text(json.dumps(service_account_key))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(key_file))
    profile = structure_body({k: v for k, v in gcs_profile().items() if k != "type"}, GcsProfile)
    credential = structure_body({"credential-type": "gcp-system-identity"}, GcsCredential)
    gcs = GcsStorage(profile, credential, config, TokenCache(), system_identity_enabled=True)
    statuses = {check.name: check.status for check in await validate_storage(gcs)}
    assert statuses["lakekeeper-read-write"] == "passed" and statuses["vended-credentials-read-write"] == "passed"
    result = await gcs.table_config(access(gcs, "t"))
    assert result.config["gcs.project-id"] == "test-project"
    exchange = sts.exchange_for(result.config["gcs.oauth2.token"])
    assert exchange.service_account == service_account_key["client_email"]
    await gcs.close()
