"""S3 warehouses through a real ``lakekeeper serve`` (SQLite and PostgreSQL) on SeaweedFS."""

from __future__ import annotations

import uuid

import httpx
import pytest

from lakekeeper_host.testing.server import CatalogServer
from lakekeeper_host.testing.services import seaweed_role_arn

pytestmark = pytest.mark.s3

BUCKET = "lakekeeper"
NIL_PROJECT = "00000000-0000-0000-0000-000000000000"


def post_warehouse(server: CatalogServer, body: dict) -> httpx.Response:
    body = {**body, "warehouse-name": f"{body['warehouse-name']}-{uuid.uuid4().hex[:8]}"}
    return httpx.post(f"{server.url}/management/v1/warehouse", json=body, timeout=120)


def test_fluss_seed_static_keys_warehouse(s3_server, seaweed, key_prefix):
    """Seed 003 verbatim (placeholders filled in): access-key credential with aws-* key names."""
    response = post_warehouse(s3_server, {
        "warehouse-name": "my-warehouse",
        "project-id": NIL_PROJECT,
        "storage-profile": {
            "type": "s3",
            "bucket": BUCKET,
            "key-prefix": key_prefix,
            "endpoint": seaweed.endpoint,
            "region": "us-east-1",
            "path-style-access": True,
        },
        "storage-credential": {
            "type": "s3",
            "credential-type": "access-key",
            "aws-access-key-id": seaweed.access_key,
            "aws-secret-access-key": seaweed.secret_key,
        },
    })
    assert response.status_code == 201, response.text
    warehouse = response.json()
    profile = warehouse["storage-profile"]
    assert profile["type"] == "s3" and profile["key-prefix"] == key_prefix
    assert profile["endpoint"] == seaweed.endpoint + "/"
    assert "storage-credential" not in warehouse  # secrets never come back
    assert seaweed.secret_key not in response.text
    # validation cleaned up after itself
    assert seaweed.client().list_objects_v2(Bucket=BUCKET, Prefix=f"{key_prefix}/").get("KeyCount") == 0


@pytest.mark.parametrize("sts", [True, False], ids=["vended-credentials", "static"])
def test_doris_seed_warehouses(s3_server, seaweed, key_prefix, sts):
    """Seed 004's two warehouses, pointed at SeaweedFS: AWS flavor, ``assume-role-arn`` for STS."""
    profile = {
        "type": "s3",
        "bucket": BUCKET,
        "key-prefix": key_prefix,
        "region": "us-east-1",
        "endpoint": seaweed.endpoint,
        "sts-enabled": sts,
        "flavor": "aws",
    }
    if sts:
        profile["assume-role-arn"] = seaweed_role_arn("vended")
    response = post_warehouse(s3_server, {
        "warehouse-name": "lakekeeper-vc-warehouse" if sts else "lakekeeper-warehouse",
        "storage-profile": profile,
        "storage-credential": {
            "type": "s3",
            "credential-type": "access-key",
            "aws-access-key-id": seaweed.access_key,
            "aws-secret-access-key": seaweed.secret_key,
        },
    })
    assert response.status_code == 201, response.text
    assert response.json()["storage-profile"]["sts-enabled"] is sts


def test_wrong_secret_fails_validation(s3_server, seaweed, s3_profile, s3_credential):
    response = post_warehouse(s3_server, {
        "warehouse-name": "bad-keys",
        "storage-profile": s3_profile(),
        "storage-credential": {**s3_credential, "aws-secret-access-key": "wrong"},
    })
    assert response.status_code == 400, response.text
    assert "SignatureDoesNotMatch" in response.json()["error"]["message"]


def test_unassumable_role_fails_validation(s3_server, s3_profile, s3_credential):
    response = post_warehouse(s3_server, {
        "warehouse-name": "bad-role",
        "storage-profile": s3_profile(**{"sts-role-arn": "arn:aws:iam::role/does-not-exist"}),
        "storage-credential": s3_credential,
    })
    assert response.status_code == 400, response.text
    assert "vended-credentials-issued" in response.json()["error"]["message"]


def test_profile_errors_are_400_naming_the_field(s3_server, s3_profile, s3_credential):
    response = post_warehouse(s3_server, {
        "warehouse-name": "bad-bucket",
        "storage-profile": s3_profile(bucket="Not_A_Bucket"),
        "storage-credential": s3_credential,
    })
    assert response.status_code == 400
    assert "storage-profile.bucket" in response.json()["error"]["message"]


def test_overlapping_s3_warehouses_are_refused(s3_server, s3_profile, s3_credential):
    first = post_warehouse(s3_server, {"warehouse-name": "outer", "storage-profile": s3_profile(), "storage-credential": s3_credential})
    assert first.status_code == 201, first.text
    inner = s3_profile(**{"key-prefix": s3_profile()["key-prefix"] + "/inner"})
    second = post_warehouse(s3_server, {"warehouse-name": "inner", "storage-profile": inner, "storage-credential": s3_credential})
    assert second.status_code in (400, 409), second.text
    assert "overlap" in second.json()["error"]["message"].lower()


def test_system_identity_is_refused_unless_enabled(s3_server, s3_profile):
    response = post_warehouse(s3_server, {
        "warehouse-name": "system",
        "storage-profile": s3_profile(**{"sts-enabled": False}),
        "storage-credential": {"type": "s3", "credential-type": "aws-system-identity"},
    })
    assert response.status_code == 400
    assert "ENABLE_AWS_SYSTEM_CREDENTIALS" in response.json()["error"]["message"]


def test_system_identity_uses_the_servers_own_aws_credentials(lakekeeper_server_factory, seaweed, s3_profile):
    server = lakekeeper_server_factory({
        "LAKEKEEPER__ENABLE_AWS_SYSTEM_CREDENTIALS": "true",
        "LAKEKEEPER__S3_ENABLE_DIRECT_SYSTEM_CREDENTIALS": "true",
        # the machine's identity, as boto3's default chain finds it
        "AWS_ACCESS_KEY_ID": seaweed.access_key,
        "AWS_SECRET_ACCESS_KEY": seaweed.secret_key,
    })
    response = post_warehouse(server, {
        "warehouse-name": "system",
        "storage-profile": s3_profile(),
        "storage-credential": {"type": "s3", "credential-type": "aws-system-identity"},
    })
    assert response.status_code == 201, response.text
    assert response.json()["storage-profile"]["sts-enabled"] is True
