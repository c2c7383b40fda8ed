"""The storage object against a real S3 with STS (SeaweedFS): validation, vended scope, signing."""

from __future__ import annotations

import urllib.parse
import uuid

import httpx
import pytest
from botocore.exceptions import ClientError

from lakekeeper_host.serde import structure_body
from lakekeeper_host.service.storage import DataAccess, StoragePermission, TableAccessRequest
from lakekeeper_host.service.storage_validation import validate_storage
from lakekeeper_storage_s3 import CredentialCache, S3Credential, S3Profile, S3Storage, S3StorageConfig

pytestmark = pytest.mark.s3

BUCKET = "lakekeeper"


@pytest.fixture
def storage(seaweed, s3_profile, s3_credential):
    def build(**overrides) -> S3Storage:
        profile = {k: v for k, v in s3_profile(**overrides).items() if k != "type"}
        credential = {k: v for k, v in s3_credential.items() if k != "type"}
        return S3Storage(
            structure_body(profile, S3Profile),
            structure_body(credential, S3Credential),
            S3StorageConfig(),
            CredentialCache(100),
        )

    return build


def vended_client(seaweed, config: dict[str, str]):
    return seaweed.client(
        aws_access_key_id=config["s3.access-key-id"],
        aws_secret_access_key=config["s3.secret-access-key"],
        aws_session_token=config["s3.session-token"],
    )


def error_code(call, **kwargs) -> str | None:
    try:
        call(**kwargs)
    except ClientError as exc:
        return exc.response["Error"]["Code"]
    return None


async def vend(storage: S3Storage, table: str, permission: StoragePermission) -> dict[str, str]:
    request = TableAccessRequest(
        table_location=f"{storage.base_location()}/{table}",
        permission=permission,
        access=DataAccess.VENDED_CREDENTIALS,
        warehouse_id="wh",
        tabular_id=table,
    )
    return (await storage.table_config(request)).config


async def test_validation_passes_and_leaves_nothing_behind(seaweed, storage, key_prefix):
    checks = {c.name: c for c in await validate_storage(storage())}
    assert {name: c.status for name, c in checks.items()} == {
        "storage-client-initialized": "passed",
        "lakekeeper-read-write": "passed",
        "vended-credentials-issued": "passed",
        "vended-credentials-read-write": "passed",
        "vended-credentials-scope-enforced": "passed",
        "cleanup": "passed",
    }
    assert seaweed.client().list_objects_v2(Bucket=BUCKET, Prefix=f"{key_prefix}/").get("KeyCount") == 0


async def test_validation_without_sts_skips_vending(storage):
    checks = {c.name: c.status for c in await validate_storage(storage(**{"sts-enabled": False}))}
    assert checks["lakekeeper-read-write"] == "passed"
    assert checks["vended-credentials-issued"] == "skipped"


async def test_validation_reports_wrong_keys(seaweed, s3_profile):
    profile = structure_body({k: v for k, v in s3_profile().items() if k != "type"}, S3Profile)
    wrong = structure_body(
        {"credential-type": "access-key", "aws-access-key-id": seaweed.access_key, "aws-secret-access-key": "nope"},
        S3Credential,
    )
    storage = S3Storage(profile, wrong, S3StorageConfig(), CredentialCache(1))
    checks = {c.name: c for c in await validate_storage(storage)}
    assert checks["lakekeeper-read-write"].status == "failed"
    assert "SignatureDoesNotMatch" in checks["lakekeeper-read-write"].message
    assert checks["vended-credentials-issued"].status == "failed"


async def test_validation_reports_a_role_sts_cannot_assume(storage):
    checks = {c.name: c for c in await validate_storage(storage(**{"sts-role-arn": "arn:aws:iam::role/missing"}))}
    assert checks["lakekeeper-read-write"].status == "passed"
    assert checks["vended-credentials-issued"].status == "failed"


async def test_vended_credentials_reach_their_table_only(seaweed, storage, key_prefix):
    s3 = storage()
    admin = seaweed.client()
    for key in ("t1/data/existing.parquet", "t2/data/existing.parquet", "root.txt"):
        admin.put_object(Bucket=BUCKET, Key=f"{key_prefix}/{key}", Body=b"data")

    client = vended_client(seaweed, await vend(s3, "t1", StoragePermission.READ_WRITE_DELETE))
    own = f"{key_prefix}/t1/data"
    assert client.get_object(Bucket=BUCKET, Key=f"{own}/existing.parquet")["Body"].read() == b"data"
    assert error_code(client.put_object, Bucket=BUCKET, Key=f"{own}/new.parquet", Body=b"x") is None
    assert error_code(client.delete_object, Bucket=BUCKET, Key=f"{own}/new.parquet") is None
    assert client.list_objects_v2(Bucket=BUCKET, Prefix=f"{key_prefix}/t1/")["KeyCount"] == 1

    sibling = f"{key_prefix}/t2/data/existing.parquet"
    assert error_code(client.get_object, Bucket=BUCKET, Key=sibling) == "AccessDenied"
    assert error_code(client.put_object, Bucket=BUCKET, Key=sibling, Body=b"x") == "AccessDenied"
    assert error_code(client.list_objects_v2, Bucket=BUCKET, Prefix=f"{key_prefix}/t2/") == "AccessDenied"
    assert error_code(client.put_object, Bucket=BUCKET, Key="at-the-root.txt", Body=b"x") == "AccessDenied"
    assert error_code(client.get_object, Bucket=BUCKET, Key=f"{key_prefix}/root.txt") == "AccessDenied"
    # a sibling whose name merely starts with the table's name is another table
    assert error_code(client.put_object, Bucket=BUCKET, Key=f"{key_prefix}/t1x/f", Body=b"x") == "AccessDenied"


async def test_read_permission_vends_read_only_credentials(seaweed, storage, key_prefix):
    seaweed.client().put_object(Bucket=BUCKET, Key=f"{key_prefix}/t1/a", Body=b"data")
    client = vended_client(seaweed, await vend(storage(), "t1", StoragePermission.READ))
    assert client.get_object(Bucket=BUCKET, Key=f"{key_prefix}/t1/a")["Body"].read() == b"data"
    assert error_code(client.put_object, Bucket=BUCKET, Key=f"{key_prefix}/t1/b", Body=b"x") == "AccessDenied"
    assert error_code(client.delete_object, Bucket=BUCKET, Key=f"{key_prefix}/t1/a") == "AccessDenied"


async def test_read_write_permission_cannot_delete(seaweed, storage, key_prefix):
    client = vended_client(seaweed, await vend(storage(), "t1", StoragePermission.READ_WRITE))
    assert error_code(client.put_object, Bucket=BUCKET, Key=f"{key_prefix}/t1/b", Body=b"x") is None
    assert error_code(client.delete_object, Bucket=BUCKET, Key=f"{key_prefix}/t1/b") == "AccessDenied"


async def test_io_through_an_assumed_role(seaweed, storage, key_prefix):
    """``assume-role-arn``: Lakekeeper's own IO runs as the role (seed 004's AWS setup)."""
    s3 = storage(**{"assume-role-arn": "arn:aws:iam::role/vended", "sts-role-arn": None, "flavor": "aws"})
    location = f"{s3.base_location()}/t/metadata/v1.metadata.json"
    await s3.write(location, b"{}")
    assert await s3.read(location) == b"{}"
    assert await s3.delete_prefix(f"{s3.base_location()}/t") == 1


async def test_delete_prefix_on_a_real_store(seaweed, storage, key_prefix):
    s3 = storage()
    admin = seaweed.client()
    for i in range(25):
        admin.put_object(Bucket=BUCKET, Key=f"{key_prefix}/t/data/{i}.parquet", Body=b"")
    assert await s3.delete_prefix(f"{s3.base_location()}/t") == 25
    assert await s3.is_empty(f"{s3.base_location()}/t")


# ---------------------------------------------------------------- remote signing


def send(method: str, uri: str, headers: dict[str, list[str]], content: bytes | None = None) -> httpx.Response:
    flat = {name: ", ".join(values) for name, values in headers.items()}
    return httpx.request(method, uri, headers=flat, content=content, timeout=10)


async def test_signed_requests_are_accepted_by_s3(seaweed, storage, key_prefix):
    s3 = storage()
    key = f"{key_prefix}/t/data/file with spaces+plus.parquet"
    uri = f"{seaweed.endpoint}/{BUCKET}/{urllib.parse.quote(key)}"

    put_uri, put_headers = await s3.sign_request(
        method="PUT", uri=uri, headers={"Content-Type": ["application/octet-stream"]}, body=None, region=seaweed.region
    )
    assert send("PUT", put_uri, put_headers, b"payload").status_code == 200
    assert put_headers["Cache-Control"] == ["no-cache"]

    get_uri, get_headers = await s3.sign_request(method="GET", uri=uri, headers={}, body=None, region=seaweed.region)
    response = send("GET", get_uri, get_headers)
    assert response.status_code == 200 and response.content == b"payload"
    assert get_headers["Cache-Control"] == ["private"]

    tampered = {**get_headers, "Authorization": [get_headers["Authorization"][0][:-4] + "0000"]}
    assert send("GET", get_uri, tampered).status_code == 403


async def test_signed_bulk_delete_with_body(seaweed, storage, key_prefix):
    s3 = storage()
    admin = seaweed.client()
    keys = [f"{key_prefix}/t/data/{i}.parquet" for i in range(3)]
    for key in keys:
        admin.put_object(Bucket=BUCKET, Key=key, Body=b"x")
    body = "<Delete>" + "".join(f"<Object><Key>{k}</Key></Object>" for k in keys) + "</Delete>"
    import base64
    import hashlib

    md5 = base64.b64encode(hashlib.md5(body.encode()).digest()).decode()  # noqa: S324 - S3 wants it
    uri, headers = await s3.sign_request(
        method="POST", uri=f"{seaweed.endpoint}/{BUCKET}?delete", headers={"Content-MD5": [md5]}, body=body,
        region=seaweed.region,
    )
    response = send("POST", uri, headers, body.encode())
    assert response.status_code == 200, response.text
    assert admin.list_objects_v2(Bucket=BUCKET, Prefix=f"{key_prefix}/t/").get("KeyCount") == 0


async def test_warehouse_without_credential_cannot_sign(seaweed, s3_profile):
    profile = structure_body({k: v for k, v in s3_profile(**{"sts-enabled": False}).items() if k != "type"}, S3Profile)
    anonymous = S3Storage(profile, None, S3StorageConfig(), CredentialCache(1))
    from lakekeeper_host.errors import CatalogError

    with pytest.raises(CatalogError) as excinfo:
        await anonymous.sign_request(
            method="GET", uri=f"{seaweed.endpoint}/{BUCKET}/x", headers={}, body=None, region=seaweed.region
        )
    assert excinfo.value.type == "SignWithoutCredentials"
    # and its IO is anonymous: the store refuses it instead of Lakekeeper using ambient credentials
    with pytest.raises(PermissionError):
        await anonymous.write(f"{anonymous.base_location()}/{uuid.uuid4().hex}", b"x")
