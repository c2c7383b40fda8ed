"""Which endpoints a GCS storage declares for the host's endpoint policy (issue 37): the operator's
storage and STS endpoints, and the token endpoint a service account key names. Nothing is contacted."""

from __future__ import annotations

import pytest

from lakekeeper_host.errors import CatalogError
from lakekeeper_host.service.endpoints import EndpointPolicy, StorageEndpoint, check_endpoints
from lakekeeper_testing.endpoint_policy import declared_endpoints

GOOGLE_TOKEN_URI = "https://oauth2.googleapis.com/token"


def credential(key: dict, token_uri: str) -> dict:
    return {"type": "gcs", "credential-type": "service-account-key", "key": {**key, "token_uri": token_uri}}


def test_the_key_names_its_token_endpoint(service_account_key):
    profile = {"type": "gcs", "bucket": "lake-1", "sts-enabled": True}
    assert declared_endpoints(profile, credential(service_account_key, GOOGLE_TOKEN_URI)) == {
        "LAKEKEEPER__GCS_STORAGE_ENDPOINT": "https://storage.googleapis.com",
        "storage-credential.key.token_uri": GOOGLE_TOKEN_URI,
        "LAKEKEEPER__GCS_STS_ENDPOINT": "https://sts.googleapis.com/v1/token",
    }
    without_sts = declared_endpoints(
        {**profile, "sts-enabled": False}, credential(service_account_key, GOOGLE_TOKEN_URI)
    )
    assert "LAKEKEEPER__GCS_STS_ENDPOINT" not in without_sts


async def test_a_token_uri_at_the_metadata_server_is_refused(service_account_key):
    metadata = credential(service_account_key, "http://metadata.google.internal/token")
    endpoints = declared_endpoints({"type": "gcs", "bucket": "lake-1"}, metadata)

    async def nothing_resolves(host, port):
        return []

    with pytest.raises(CatalogError) as refused:
        await check_endpoints(
            [StorageEndpoint(*item) for item in endpoints.items()], EndpointPolicy(), nothing_resolves
        )
    assert "storage-credential.key.token_uri" in refused.value.message
