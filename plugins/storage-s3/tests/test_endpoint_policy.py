"""The S3 plugin under the endpoint policy suite (issue 37): the ``endpoint`` and ``sts-endpoint`` a
warehouse creator chooses, against a real SeaweedFS (S3 and STS) behind a counting proxy."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

from lakekeeper_testing.endpoint_policy import EndpointCase, StorageEndpointPolicy, TcpProxy

pytestmark = pytest.mark.s3


@pytest.fixture(scope="module")
def seaweed_proxy(seaweed) -> Iterator[TcpProxy]:
    upstream = urlsplit(seaweed.endpoint)
    proxy = TcpProxy((upstream.hostname, upstream.port))
    try:
        yield proxy
    finally:
        proxy.close()


class TestS3EndpointPolicy(StorageEndpointPolicy):
    @pytest.fixture
    def endpoint_case(self, seaweed_proxy, s3_profile, s3_credential) -> EndpointCase:
        profile = s3_profile(endpoint=f"http://{seaweed_proxy.netloc}/")
        return EndpointCase(
            profile=profile,
            credential=s3_credential,
            endpoint_fields={
                "storage-profile.endpoint": lambda url: ({**profile, "endpoint": url}, s3_credential),
                "storage-profile.sts-endpoint": lambda url: ({**profile, "sts-endpoint": url}, s3_credential),
            },
            allowed=(seaweed_proxy.netloc,),
            store_traffic=lambda: seaweed_proxy.connections,
        )
