"""S3 warehouses through a real ``lakekeeper serve`` (SQLite and PostgreSQL) on SeaweedFS."""

from __future__ import annotations

import json
import subprocess
import uuid

import httpx
import pytest

from lakekeeper_testing.server import CatalogServer
from lakekeeper_testing.services import seaweed_role_arn

pytestmark = pytest.mark.s3

BUCKET = "lakekeeper"
NIL_PROJECT = "00000000-0000-0000-0000-000000000000"


def post_warehouse(server: CatalogServer, body: dict) -> httpx.Response:
    body = {**body, "warehouse-name": f"{body['warehouse-name']}-{uuid.uuid4().hex[:8]}"}
    return httpx.post(f"{server.url}/management/v1/warehouse", json=body, timeout=120)


def curl(*args: str) -> tuple[int, str]:
    """Run curl; returns (HTTP status, body without headers)."""
    result = subprocess.run(
        ["curl", "-sS", "-w", "\n%{http_code}", *args], capture_output=True, text=True, timeout=120, check=True
    )
    body, _, status = result.stdout.rpartition("\n")
    normalized = body.replace("\r\n", "\n")
    if normalized.startswith("HTTP/"):  # `curl -i`: drop the status line and headers
        normalized = normalized.split("\n\n", 1)[1]
    return int(status), normalized


def test_fluss_seed_static_keys_warehouse(lakekeeper_server, seaweed, key_prefix):
    """Seed 003's warehouse `curl` (placeholders filled in): access-key credential with aws-* key names."""
    name = f"my-warehouse-{uuid.uuid4().hex[:8]}"
    status, body = curl(
        "-X", "POST", f"{lakekeeper_server.url}/management/v1/warehouse",
        "-H", "Content-Type: application/json",
        "-d", json.dumps({
            "warehouse-name": name,
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
        }),
    )
    assert status == 201, body
    warehouse = json.loads(body)
    assert warehouse["name"] == name and warehouse["project-id"] == NIL_PROJECT
    profile = warehouse["storage-profile"]
    assert profile["type"] == "s3" and profile["key-prefix"] == key_prefix
    assert profile["endpoint"] == seaweed.endpoint + "/"
    assert "storage-credential" not in warehouse  # secrets never come back
    assert seaweed.secret_key not in body
    # validation cleaned up after itself
    assert seaweed.client().list_objects_v2(Bucket=BUCKET, Prefix=f"{key_prefix}/").get("KeyCount") == 0
    # the Fluss configuration (uri + warehouse name) finds it
    config = httpx.get(f"{lakekeeper_server.url}/catalog/v1/config", params={"warehouse": name}, timeout=30)
    assert config.status_code == 200 and config.json()["defaults"]["prefix"] == warehouse["warehouse-id"]


def test_doris_seed_sequence(lakekeeper_server, seaweed, tmp_path):
    """Seed 004's `curl` sequence verbatim against SeaweedFS: project, project list, the
    credential-vending and the static-keys warehouse (``--data @file``, ``x-project-id``), the
    warehouse list and the ``demo`` namespace. Only the placeholders differ: bucket, endpoint,
    keys and a role SeaweedFS's STS can assume."""
    host = lakekeeper_server.url
    status, body = curl(
        "-i", "-X", "POST", f"{host}/management/v1/project",
        "-H", "Content-Type: application/json",
        "--data", '{"project-name":"default"}',
    )
    assert status == 201, body
    project_id = json.loads(body)["project-id"]
    status, body = curl("-s", f"{host}/management/v1/project-list")
    assert status == 200 and {"project-id": project_id, "project-name": "default"} in json.loads(body)["projects"]

    credential = {
        "type": "s3",
        "credential-type": "access-key",
        "aws-access-key-id": seaweed.access_key,
        "aws-secret-access-key": seaweed.secret_key,
    }
    requests = {
        "create-warehouse-vc.json": {
            "warehouse-name": "lakekeeper-vc-warehouse",
            "storage-profile": {
                "type": "s3", "bucket": BUCKET, "key-prefix": f"warehouse-vc-{uuid.uuid4().hex[:8]}",
                "region": "us-east-1", "endpoint": seaweed.endpoint, "sts-enabled": True, "flavor": "aws",
                "assume-role-arn": seaweed_role_arn("vended"),
            },
            "storage-credential": credential,
        },
        "create-warehouse-static.json": {
            "warehouse-name": "lakekeeper-warehouse",
            "storage-profile": {
                "type": "s3", "bucket": BUCKET, "key-prefix": f"warehouse-{uuid.uuid4().hex[:8]}",
                "region": "us-east-1", "endpoint": seaweed.endpoint, "sts-enabled": False, "flavor": "aws",
            },
            "storage-credential": credential,
        },
    }
    for file_name, request in requests.items():
        (tmp_path / file_name).write_text(json.dumps(request))
        status, body = curl(
            "-i", "-X", "POST", f"{host}/management/v1/warehouse",
            "-H", "Content-Type: application/json",
            "-H", f"x-project-id: {project_id}",
            "--data", f"@{tmp_path / file_name}",
        )
        assert status == 201, body
        created = json.loads(body)
        assert created["project-id"] == project_id
        assert created["storage-profile"]["sts-enabled"] is request["storage-profile"]["sts-enabled"]
        assert seaweed.secret_key not in body

    status, body = curl("-s", f"{host}/management/v1/warehouse", "-H", f"x-project-id: {project_id}")
    assert status == 200
    warehouses = {w["name"]: w for w in json.loads(body)["warehouses"]}
    assert set(warehouses) == {"lakekeeper-vc-warehouse", "lakekeeper-warehouse"}

    for name, warehouse in warehouses.items():
        status, body = curl(
            "-sS", "-X", "POST",
            "-H", "Content-Type: application/json",
            "-H", "Accept: application/json",
            f"{host}/catalog/v1/{warehouse['warehouse-id']}/namespaces",
            "-d", '{\n        "namespace": ["demo"],\n        "properties": {}\n      }',
        )
        assert status == 200, (name, body)
        assert json.loads(body)["namespace"] == ["demo"]


def test_wrong_secret_fails_validation(lakekeeper_server, seaweed, s3_profile, s3_credential):
    response = post_warehouse(lakekeeper_server, {
        "warehouse-name": "bad-keys",
        "storage-profile": s3_profile(),
        "storage-credential": {**s3_credential, "aws-secret-access-key": "wrong"},
    })
    assert response.status_code == 400, response.text
    assert "SignatureDoesNotMatch" in response.json()["error"]["message"]


def test_unassumable_role_fails_validation(lakekeeper_server, s3_profile, s3_credential):
    response = post_warehouse(lakekeeper_server, {
        "warehouse-name": "bad-role",
        "storage-profile": s3_profile(**{"sts-role-arn": "arn:aws:iam::role/does-not-exist"}),
        "storage-credential": s3_credential,
    })
    assert response.status_code == 400, response.text
    assert "vended-credentials-issued" in response.json()["error"]["message"]


def test_profile_errors_are_400_naming_the_field(lakekeeper_server, s3_profile, s3_credential):
    response = post_warehouse(lakekeeper_server, {
        "warehouse-name": "bad-bucket",
        "storage-profile": s3_profile(bucket="Not_A_Bucket"),
        "storage-credential": s3_credential,
    })
    assert response.status_code == 400
    assert "storage-profile.bucket" in response.json()["error"]["message"]


def test_overlapping_s3_warehouses_are_refused(lakekeeper_server, s3_profile, s3_credential):
    first = post_warehouse(
        lakekeeper_server,
        {"warehouse-name": "outer", "storage-profile": s3_profile(), "storage-credential": s3_credential},
    )
    assert first.status_code == 201, first.text
    inner = s3_profile(**{"key-prefix": s3_profile()["key-prefix"] + "/inner"})
    second = post_warehouse(
        lakekeeper_server, {"warehouse-name": "inner", "storage-profile": inner, "storage-credential": s3_credential}
    )
    assert second.status_code in (400, 409), second.text
    assert "overlap" in second.json()["error"]["message"].lower()


def test_system_identity_is_refused_unless_enabled(lakekeeper_server, s3_profile):
    response = post_warehouse(lakekeeper_server, {
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
