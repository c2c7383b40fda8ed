"""Which endpoints a GCS storage declares for the host's endpoint policy (issue 37): the operator's
storage and STS endpoints, and the token endpoint a service account key names. Nothing is contacted."""

from __future__ import annotations

import pytest

from lakekeeper_host.errors import CatalogError
from lakekeeper_host.service.endpoints import EndpointPolicy, check_endpoints
from lakekeeper_testing.storage_conformance import StorageBuilder


@pytest.fixture(scope="module")
def builder() -> StorageBuilder:
    return StorageBuilder()


def credential(key: dict, token_uri: str) -> dict:
    return {"type": "gcs", "credential-type": "service-account-key", "key": {**key, "token_uri": token_uri}}


def test_the_key_names_its_token_endpoint(builder, service_account_key):
    storage = builder.build(
        {"type": "gcs", "bucket": "lake-1", "sts-enabled": True},
        credential(service_account_key, "https://oauth2.googleapis.com/token"),
    )
    assert {e.field: e.url for e in storage.endpoints()} == {
        "LAKEKEEPER__GCS_STORAGE_ENDPOINT": "https://storage.googleapis.com",
        "storage-credential.key.token_uri": "https://oauth2.googleapis.com/token",
        "LAKEKEEPER__GCS_STS_ENDPOINT": "https://sts.googleapis.com/v1/token",
    }
    without_sts = builder.build(
        {"type": "gcs", "bucket": "lake-1", "sts-enabled": False},
        credential(service_account_key, "https://oauth2.googleapis.com/token"),
    )
    assert "LAKEKEEPER__GCS_STS_ENDPOINT" not in {e.field for e in without_sts.endpoints()}


async def test_a_token_uri_at_the_metadata_server_is_refused(builder, service_account_key):
    storage = builder.build(
        {"type": "gcs", "bucket": "lake-1"}, credential(service_account_key, "http://metadata.google.internal/token")
    )

    async def nothing_resolves(host, port):
        return []

    with pytest.raises(CatalogError) as refused:
        await check_endpoints(storage.endpoints(), EndpointPolicy(), nothing_resolves)
    assert "storage-credential.key.token_uri" in refused.value.message
