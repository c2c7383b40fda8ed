"""The ADLS plugin under the endpoint policy suite (issue 37): the Blob ``endpoint`` and the
``authority-host`` a warehouse creator chooses, against a real Azurite behind the suite's counting proxy."""

from __future__ import annotations

import pytest

from lakekeeper_testing.endpoint_policy import EndpointCase, StorageEndpointPolicy

# an Entra ID app registration: its token requests go to the profile's authority-host
CLIENT_CREDENTIALS = {
    "type": "az",
    "credential-type": "client-credentials",
    "client-id": "00000000-0000-0000-0000-00000000c11e",
    "client-secret": "not-a-real-secret",
    "tenant-id": "00000000-0000-0000-0000-000000000001",
}


class TestAdlsEndpointPolicy(StorageEndpointPolicy):
    @pytest.fixture
    def store_url(self, azurite) -> str:
        return azurite.blob_endpoint

    @pytest.fixture
    def endpoint_case(self, azurite, store_proxy, key_prefix, adls_profile, shared_key_credential) -> EndpointCase:
        account = azurite.account
        profile = adls_profile(azurite, key_prefix, endpoint=f"http://{store_proxy.netloc}/{account}")
        credential = shared_key_credential(azurite)

        def blob_endpoint(url: str) -> tuple[dict, dict]:
            return {**profile, "endpoint": f"{url}/{account}"}, credential

        def authority_host(url: str) -> tuple[dict, dict]:
            # token credentials need an https Blob endpoint; the token request (to the authority) comes first
            https = f"https://{store_proxy.netloc}/{account}"
            return {**profile, "endpoint": https, "authority-host": url}, CLIENT_CREDENTIALS

        return EndpointCase(
            profile=profile,
            credential=credential,
            endpoint_fields={
                "storage-profile.endpoint": blob_endpoint,
                "storage-profile.authority-host": authority_host,
            },
            https_only_fields=("storage-profile.authority-host",),
            allowed=(store_proxy.netloc,),
            store_traffic=lambda: store_proxy.connections,
        )
