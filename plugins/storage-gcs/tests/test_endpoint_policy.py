"""The GCS plugin under the endpoint policy suite (issue 37): the ``token_uri`` of the service account
key a warehouse creator hands in, and the operator's storage and STS endpoints, against a real
fake-gcs-server (behind the recording proxy) and the STS test double (behind the suite's counting proxy)."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from lakekeeper_testing.endpoint_policy import EndpointCase, StorageEndpointPolicy

from .conftest import gcs_env


class TestGcsEndpointPolicy(StorageEndpointPolicy):
    @pytest.fixture
    def store_url(self, sts) -> str:
        return sts.url  # the token endpoint and STS; objects go through the recording proxy

    @pytest.fixture
    def endpoint_case(self, fake_gcs, gcs_proxy, sts, store_proxy, gcs_profile, service_account_key) -> EndpointCase:
        proxied = f"http://{store_proxy.netloc}"
        key = {**service_account_key, "token_uri": f"{proxied}/token"}
        credential = {"type": "gcs", "credential-type": "service-account-key", "key": key}

        def token_uri(url: str) -> tuple[dict, dict]:
            return gcs_profile(), {**credential, "key": {**key, "token_uri": f"{url}/token"}}

        return EndpointCase(
            profile=gcs_profile(),
            credential=credential,
            environment=gcs_env(gcs_proxy.url, sts) | {"LAKEKEEPER__GCS_STS_ENDPOINT": f"{proxied}/v1/token"},
            endpoint_fields={"storage-credential.key.token_uri": token_uri},
            allowed=(store_proxy.netloc, urlsplit(gcs_proxy.url).netloc),
            store_traffic=lambda: store_proxy.connections + len(gcs_proxy.requests),
        )
