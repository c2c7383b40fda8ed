"""Which endpoints an ADLS storage declares for the host's endpoint policy (issue 37). No store is
contacted: building a storage does no IO, and names go through a stub resolver."""

from __future__ import annotations

import ipaddress

import pytest

from lakekeeper_host.errors import CatalogError
from lakekeeper_host.service.endpoints import EndpointPolicy, StorageEndpoint, check_endpoints
from lakekeeper_testing.endpoint_policy import declared_endpoints

KEY = {"type": "az", "credential-type": "shared-access-key", "key": "a2V5"}
APP = {"type": "az", "credential-type": "client-credentials", "client-id": "c", "client-secret": "s", "tenant-id": "t"}
BASE = {"type": "adls", "account-name": "account1", "filesystem": "lake"}


def declared(profile, credential=KEY) -> dict[str, str]:
    return declared_endpoints({**BASE, **profile}, credential)


def test_the_blob_endpoint_follows_the_profile():
    assert declared({}) == {
        "storage-profile.account-name (the Azure Blob endpoint)": "https://account1.blob.core.windows.net"
    }
    assert declared({"host": "dfs.core.usgovcloudapi.net"}) == {
        "storage-profile.host": "https://account1.blob.core.usgovcloudapi.net"
    }
    assert declared({"host": "storage.attacker.example"}) == {
        "storage-profile.host": "https://account1.storage.attacker.example"
    }
    assert declared({"endpoint": "http://10.0.0.5:10000/account1"}) == {
        "storage-profile.endpoint": "http://10.0.0.5:10000/account1"
    }


def test_token_credentials_also_reach_the_authority_host():
    assert declared({}, APP)["storage-profile.authority-host (default)"] == "https://login.microsoftonline.com"
    custom = declared({"authority-host": "https://login.attacker.example"}, APP)
    assert custom["storage-profile.authority-host"] == "https://login.attacker.example"
    assert not any("authority" in name for name in declared({"authority-host": "https://x.example"}))


async def test_a_host_whose_subdomains_resolve_to_metadata_is_refused():
    endpoints = [StorageEndpoint(*item) for item in declared({"host": "dfs.attacker.example"}).items()]

    async def wildcard_dns(host, port):  # the attacker's zone answers every subdomain
        return [ipaddress.ip_address("169.254.169.254")] if host.endswith(".attacker.example") else []

    with pytest.raises(CatalogError) as refused:
        await check_endpoints(endpoints, EndpointPolicy(), wildcard_dns)
    assert "storage-profile.host" in refused.value.message and "metadata" in refused.value.message
