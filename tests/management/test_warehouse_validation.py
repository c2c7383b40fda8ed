"""Warehouse bodies with a bad storage profile or credential: a 400 that names ``storage-profile.<field>``
(or ``storage-credential.<field>``) and says why, in the client's terms (issue 25)."""

from __future__ import annotations

import uuid

import httpx
import pytest

LEAKS = ("pydantic", "cattrs", "For further information", "Traceback", "@ body.root", "FileProfile", "S3Profile")


@pytest.fixture(scope="module")
def http(sqlite_server):
    with httpx.Client(base_url=f"{sqlite_server.url}/management/v1", timeout=60) as client:
        yield client


def _create(http: httpx.Client, profile, credential=None) -> httpx.Response:
    body = {"warehouse-name": f"wh-{uuid.uuid4().hex[:8]}", "storage-profile": profile}
    if credential is not None:
        body["storage-credential"] = credential
    return http.post("/warehouse", json=body)


def _message(response: httpx.Response) -> str:
    assert response.status_code == 400, response.text
    err = response.json()["error"]
    assert err["code"] == 400
    for leak in LEAKS:
        assert leak not in err["message"], err["message"]
    return err["message"]


S3 = {"type": "s3", "bucket": "my-bucket", "region": "us-east-1"}
S3_KEYS = {"type": "s3", "credential-type": "access-key", "aws-access-key-id": "a", "aws-secret-access-key": "b"}

CASES = {
    "relative-root": ({"type": "file", "root": "relative/dir"}, None, "storage-profile.root", "absolute"),
    "missing-root": ({"type": "file"}, None, "storage-profile.root", "required"),
    "root-not-string": ({"type": "file", "root": 7}, None, "storage-profile.root", "expected str"),
    "layout-not-object": (
        {"type": "file", "root": "/tmp/x", "storage-layout": "flat"}, None, "storage-profile.storage-layout", "mapping"
    ),
    "unknown-type": ({"type": "floppy", "root": "/x"}, None, "storage-profile", "floppy"),
    "s3-bucket": (S3 | {"bucket": "Bad_Bucket"}, S3_KEYS, "storage-profile.bucket", "lowercase"),
    "s3-missing-bucket": ({"type": "s3", "region": "us-east-1"}, S3_KEYS, "storage-profile.bucket", "required"),
    "s3-endpoint": (S3 | {"endpoint": "ftp://minio"}, S3_KEYS, "storage-profile.endpoint", "http"),
    "s3-flag-not-bool": (S3 | {"sts-enabled": "yes"}, S3_KEYS, "storage-profile.sts-enabled", "expected bool"),
    "s3-credential-missing-key": (
        S3, {"type": "s3", "credential-type": "access-key", "aws-access-key-id": "a"}, "storage-credential",
        "aws-secret-access-key",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_create_warehouse_names_the_profile_field(http, case):
    profile, credential, field, reason = CASES[case]
    if profile.get("type") == "s3":
        pytest.importorskip("lakekeeper_storage_s3")
    message = _message(_create(http, profile, credential))
    assert field in message, message
    assert reason in message, message


def test_validate_profile_endpoint_names_the_field(http, tmp_path):
    created = _create(http, {"type": "file", "root": str(tmp_path)})
    assert created.status_code == 201, created.text
    warehouse_id = created.json()["warehouse-id"]
    response = http.post(
        f"/warehouse/{warehouse_id}/storage/validate-profile", json={"storage-profile": {"type": "file", "root": "x"}}
    )
    assert response.status_code == 200, response.text  # a validation report, not an error
    report = response.json()
    assert report["valid"] is False
    failed = next(check for check in report["checks"] if check["status"] == "failed")
    assert failed["name"] == "profile-well-formed"
    assert "storage-profile.root" in failed["error"]["message"] and "absolute" in failed["error"]["message"]
    updated = http.post(f"/warehouse/{warehouse_id}/storage", json={"storage-profile": {"type": "file", "root": "x/y"}})
    assert "storage-profile.root" in _message(updated)
