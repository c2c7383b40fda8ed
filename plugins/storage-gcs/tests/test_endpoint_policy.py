"""The GCS plugin under the endpoint policy suite (issue 37): the ``token_uri`` of the service account
key a warehouse creator hands in, and the operator's storage and STS endpoints, against a real
fake-gcs-server (behind the recording proxy) and the STS test double (behind a counting proxy)."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

from lakekeeper_testing.endpoint_policy import EndpointCase, StorageEndpointPolicy, TcpProxy

from .conftest import gcs_env


@pytest.fixture(scope="module")
def sts_proxy(sts) -> Iterator[TcpProxy]:
    upstream = urlsplit(sts.url)
    proxy = TcpProxy((upstream.hostname, upstream.port))
    try:
        yield proxy
    finally:
        proxy.close()


class TestGcsEndpointPolicy(StorageEndpointPolicy):
    @pytest.fixture
    def endpoint_case(self, fake_gcs, gcs_proxy, sts, sts_proxy, gcs_profile, service_account_key) -> EndpointCase:
        profile = gcs_profile()
        proxied = f"http://{sts_proxy.netloc}"
        key = {**service_account_key, "token_uri": f"{proxied}/token"}
        credential = {"type": "gcs", "credential-type": "service-account-key", "key": key}
        environment = gcs_env(gcs_proxy.url, sts) | {"LAKEKEEPER__GCS_STS_ENDPOINT": f"{proxied}/v1/token"}
        return EndpointCase(
            profile=profile,
            credential=credential,
            environment=environment,
            endpoint_fields={
                "storage-credential.key.token_uri": lambda url: (
                    profile,
                    {**credential, "key": {**key, "token_uri": f"{url}/token"}},
                ),
            },
            allowed=(sts_proxy.netloc, urlsplit(gcs_proxy.url).netloc),
            store_traffic=lambda: sts_proxy.connections + len(gcs_proxy.requests),
        )
