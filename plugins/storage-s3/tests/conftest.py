"""Fixtures of the S3 plugin's tests.

Unit tests run boto3 against moto in-process (fast, but moto checks neither signatures nor
session policies). Everything marked ``s3`` runs against a real SeaweedFS (``weed mini``) with
STS enabled: its role ``vended`` may do anything in the bucket, so only the session policy the
plugin attaches can narrow vended credentials, exactly as on AWS.
"""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from lakekeeper_testing.pytest_plugin import STS_ROLE
from lakekeeper_testing.server import CatalogServer
from lakekeeper_testing.services import SeaweedS3, seaweed_role_arn

BUCKET = "lakekeeper"


@pytest.fixture(scope="session")
def seaweed(seaweed_sts: SeaweedS3) -> SeaweedS3:
    """The run's SeaweedFS with STS (``lakekeeper_testing``): its role ``vended`` may do anything in the
    bucket, a role too wide on purpose: only the session policy keeps vended credentials in their table."""
    return seaweed_sts


def _s3_profile(seaweed: SeaweedS3, key_prefix: str, **overrides: Any) -> dict[str, Any]:
    profile = {
        "type": "s3",
        "bucket": BUCKET,
        "key-prefix": key_prefix,
        "endpoint": seaweed.endpoint,
        "region": seaweed.region,
        "path-style-access": True,
        "flavor": "s3-compat",
        "sts-enabled": True,
        "sts-role-arn": seaweed_role_arn(STS_ROLE),
    }
    profile.update(overrides)
    return profile


@pytest.fixture
def s3_profile(seaweed: SeaweedS3, key_prefix: str):
    """``s3_profile(**overrides)``: storage-profile JSON for the SeaweedFS bucket, STS on (role ``vended``)."""
    return lambda **overrides: _s3_profile(seaweed, key_prefix, **overrides)


@pytest.fixture
def s3_credential(seaweed: SeaweedS3) -> dict[str, Any]:
    return {
        "type": "s3",
        "credential-type": "access-key",
        "aws-access-key-id": seaweed.access_key,
        "aws-secret-access-key": seaweed.secret_key,
    }


def create_warehouse(server: CatalogServer, profile: dict, credential: dict | None, **extra: Any) -> httpx.Response:
    body = {"warehouse-name": f"wh-{uuid.uuid4().hex[:10]}", "storage-profile": profile, **extra}
    if credential is not None:
        body["storage-credential"] = credential
    return httpx.post(server.url + "/management/v1/warehouse", json=body, timeout=120)


@pytest.fixture
def make_warehouse():
    """``make_warehouse(server, profile, credential, **extra)`` -> the management API response."""
    return create_warehouse
