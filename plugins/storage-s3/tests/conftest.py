"""Fixtures of the S3 plugin's tests.

Unit tests run boto3 against moto in-process (fast, but moto checks neither signatures nor
session policies). Everything marked ``s3`` runs against a real SeaweedFS (``weed mini``) with
STS enabled: its role ``vended`` may do anything in the bucket, so only the session policy the
plugin attaches can narrow vended credentials, exactly as on AWS.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from lakekeeper_testing.server import CatalogServer
from lakekeeper_testing.services import (
    SeaweedS3,
    postgres_for_tests,
    seaweed_iam_config,
    seaweed_role_arn,
    service_or_skip,
)

BUCKET = "lakekeeper"
ROLE = "vended"
# a role whose own policy is too wide: only the session policy keeps vended credentials in their table
ROLE_POLICY = {
    "Statement": [
        {"Effect": "Allow", "Action": ["s3:*"], "Resource": [f"arn:aws:s3:::{BUCKET}", f"arn:aws:s3:::{BUCKET}/*"]}
    ]
}
BACKENDS = ["sqlite", "postgres"]


@pytest.fixture(scope="session")
def seaweed() -> Iterator[SeaweedS3]:
    server = service_or_skip(SeaweedS3(iam_config=seaweed_iam_config({ROLE: ROLE_POLICY}), buckets=[BUCKET]))
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def key_prefix() -> str:
    """A fresh folder in the bucket per test, so tests never see each other's objects."""
    return f"t-{uuid.uuid4().hex[:12]}"


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
        "sts-role-arn": seaweed_role_arn(ROLE),
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


@pytest.fixture(scope="session", params=BACKENDS)
def s3_server(request, seaweed) -> Iterator[CatalogServer]:
    """A catalog server with this plugin installed, on SQLite and on PostgreSQL."""
    backend = request.param
    if backend == "postgres" and os.environ.get("LAKEKEEPER_TEST_SKIP_POSTGRES") == "1":
        pytest.skip("LAKEKEEPER_TEST_SKIP_POSTGRES=1")
    with postgres_for_tests() if backend == "postgres" else _nothing() as pg_url:
        env = {}
        if pg_url:
            env = {"LAKEKEEPER__PG_DATABASE_URL_WRITE": pg_url, "LAKEKEEPER__PG_DATABASE_URL_READ": pg_url}
        server = CatalogServer(env).start()
        server.backend = backend
        try:
            if backend == "postgres":
                httpx.post(server.url + "/management/v1/bootstrap", json={"accept-terms-of-use": True}, timeout=30)
            yield server
        finally:
            server.close()


@pytest.fixture(scope="session")
def spark():
    """The run's one SparkSession (Iceberg + s3a jars); the same JVM as the host tests' ``spark``."""
    import shutil

    if shutil.which("java") is None:
        pytest.skip("java (17) is not installed: apt-get install openjdk-17-jre-headless")
    from lakekeeper_host.engines.spark import shared_session

    session = shared_session()
    yield session
    session.stop()


class _nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return None


def create_warehouse(server: CatalogServer, profile: dict, credential: dict | None, **extra: Any) -> httpx.Response:
    body = {"warehouse-name": f"wh-{uuid.uuid4().hex[:10]}", "storage-profile": profile, **extra}
    if credential is not None:
        body["storage-credential"] = credential
    return httpx.post(server.url + "/management/v1/warehouse", json=body, timeout=120)


@pytest.fixture
def make_warehouse():
    """``make_warehouse(server, profile, credential, **extra)`` -> the management API response."""
    return create_warehouse
