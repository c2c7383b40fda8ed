"""Which endpoints an S3 storage declares for the host's endpoint policy (issue 37), and how the host
applies the policy before the storage does any IO (``AppState.storage_for``). No store is contacted."""

from __future__ import annotations

import ipaddress
from types import SimpleNamespace

import pytest

from lakekeeper_host.errors import CatalogError
from lakekeeper_host.service.endpoints import EndpointPolicy
from lakekeeper_testing.endpoint_policy import declared_endpoints
from lakekeeper_testing.storage_conformance import StorageBuilder

KEYS = {"type": "s3", "credential-type": "access-key", "aws-access-key-id": "a", "aws-secret-access-key": "b"}
BASE = {"type": "s3", "bucket": "lakekeeper", "region": "eu-central-1", "flavor": "s3-compat"}


def declared(profile, credential=KEYS) -> dict[str, str]:
    return declared_endpoints({**BASE, **profile}, credential)


def test_a_custom_endpoint_serves_s3_and_sts():
    endpoints = declared({"endpoint": "http://minio.internal:9000", "path-style-access": True, "sts-enabled": True})
    assert endpoints == {
        "storage-profile.endpoint": "http://minio.internal:9000/",
        "storage-profile.endpoint (as the STS endpoint)": "http://minio.internal:9000/",
    }


def test_a_separate_sts_endpoint_is_declared_when_sts_is_used():
    profile = {"endpoint": "http://10.0.0.5:9000", "sts-endpoint": "http://10.0.0.6:9000", "sts-enabled": True}
    assert declared(profile)["storage-profile.sts-endpoint"] == "http://10.0.0.6:9000/"
    without_sts = declared({**profile, "sts-enabled": False})
    assert list(without_sts) == ["storage-profile.endpoint"]  # STS is never called


def test_virtual_hosted_addressing_puts_the_bucket_in_the_host():
    endpoints = declared({"endpoint": "http://s3.attacker.example:9000", "path-style-access": False})
    assert endpoints["storage-profile.endpoint (virtual-hosted: bucket.host; path-style-access avoids it)"] == (
        "http://lakekeeper.s3.attacker.example:9000/"
    )
    # an IP address is always addressed path-style
    assert list(declared({"endpoint": "http://10.0.0.5:9000", "path-style-access": False})) == [
        "storage-profile.endpoint"
    ]


def test_without_an_endpoint_the_aws_endpoints_of_the_region_are_declared():
    profile = {"flavor": "aws", "sts-enabled": True, "sts-role-arn": "arn:aws:iam::123456789012:role/r"}
    assert declared(profile) == {
        "storage-profile.region (the AWS S3 endpoint)": "https://lakekeeper.s3.eu-central-1.amazonaws.com/",
        "storage-profile.region (the AWS STS endpoint)": "https://sts.eu-central-1.amazonaws.com/",
    }


def warehouse(profile: dict, version: int = 1):
    return SimpleNamespace(id="wh", version=version, storage_profile={**BASE, **profile}, storage_secret_id=None)


async def test_storage_for_checks_the_endpoints_before_any_io():
    state = StorageBuilder()._state
    lookups: list[str] = []

    async def resolve(host, port):
        lookups.append(host)
        return [ipaddress.ip_address("10.1.2.3")]

    state.resolve_host = resolve
    row = warehouse({"endpoint": "http://store.corp:9000", "path-style-access": True})
    state.set_endpoint_policy(EndpointPolicy.from_patterns(["10.0.0.0/8"]))
    storage = await state.storage_for(row)
    assert await state.storage_for(row) is storage
    assert lookups == ["store.corp"]  # checked once per warehouse version
    state.set_endpoint_policy(EndpointPolicy.from_patterns(["192.0.2.0/24"]))
    with pytest.raises(CatalogError) as refused:
        await state.storage_for(row)
    assert refused.value.type == "StorageEndpointNotAllowed"
    assert "storage-profile.endpoint" in refused.value.message and "10.1.2.3" not in refused.value.message
    # location arithmetic needs no IO and is not refused
    assert (await state.storage_for(row, io=False)).base_location() == "s3://lakekeeper"
    # a new profile version is checked again
    state.set_endpoint_policy(EndpointPolicy.from_patterns(["store.corp:9000"]))
    assert await state.storage_for(warehouse({"endpoint": "http://store.corp:9000"}, version=2))
