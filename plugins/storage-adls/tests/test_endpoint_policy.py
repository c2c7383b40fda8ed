"""The ADLS plugin under the endpoint policy suite (issue 37): the Blob ``endpoint`` and the
``authority-host`` a warehouse creator chooses, against a real Azurite behind a counting proxy."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

from lakekeeper_testing.endpoint_policy import EndpointCase, StorageEndpointPolicy, TcpProxy

# an Entra ID app registration: its token requests go to the profile's authority-host
CLIENT_CREDENTIALS = {
    "type": "az",
    "credential-type": "client-credentials",
    "client-id": "00000000-0000-0000-0000-00000000c11e",
    "client-secret": "not-a-real-secret",
    "tenant-id": "00000000-0000-0000-0000-000000000001",
}


@pytest.fixture(scope="module")
def azurite_proxy(azurite) -> Iterator[TcpProxy]:
    upstream = urlsplit(azurite.blob_endpoint)
    proxy = TcpProxy((upstream.hostname, upstream.port))
    try:
        yield proxy
    finally:
        proxy.close()


class TestAdlsEndpointPolicy(StorageEndpointPolicy):
    @pytest.fixture
    def endpoint_case(self, azurite, azurite_proxy, key_prefix, adls_profile, shared_key_credential) -> EndpointCase:
        profile = adls_profile(azurite, key_prefix, endpoint=f"http://{azurite_proxy.netloc}/{azurite.account}")
        credential = shared_key_credential(azurite)

        def blob_endpoint(url: str) -> tuple[dict, dict]:
            return {**profile, "endpoint": f"{url}/{azurite.account}"}, credential

        def authority_host(url: str) -> tuple[dict, dict]:
            # token credentials need an https Blob endpoint; the token request (to the authority) comes first
            https = f"https://{azurite_proxy.netloc}/{azurite.account}"
            return {**profile, "endpoint": https, "authority-host": url}, CLIENT_CREDENTIALS

        return EndpointCase(
            profile=profile,
            credential=credential,
            endpoint_fields={
                "storage-profile.endpoint": blob_endpoint,
                "storage-profile.authority-host": authority_host,
            },
            https_only_fields=("storage-profile.authority-host",),
            allowed=(azurite_proxy.netloc,),
            store_traffic=lambda: azurite_proxy.connections,
        )
