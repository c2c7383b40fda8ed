"""The S3 plugin under the endpoint policy suite (issue 37): the ``endpoint`` and ``sts-endpoint`` a
warehouse creator chooses, against a real SeaweedFS (S3 and STS) behind the suite's counting proxy."""

from __future__ import annotations

import pytest

from lakekeeper_testing.endpoint_policy import EndpointCase, StorageEndpointPolicy

pytestmark = pytest.mark.s3


class TestS3EndpointPolicy(StorageEndpointPolicy):
    @pytest.fixture
    def store_url(self, seaweed) -> str:
        return seaweed.endpoint

    @pytest.fixture
    def endpoint_case(self, store_proxy, s3_profile, s3_credential) -> EndpointCase:
        profile = s3_profile(endpoint=f"http://{store_proxy.netloc}/")
        return EndpointCase(
            profile=profile,
            credential=s3_credential,
            endpoint_fields={
                "storage-profile.endpoint": lambda url: ({**profile, "endpoint": url}, s3_credential),
                "storage-profile.sts-endpoint": lambda url: ({**profile, "sts-endpoint": url}, s3_credential),
            },
            allowed=(store_proxy.netloc,),
            store_traffic=lambda: store_proxy.connections,
        )
