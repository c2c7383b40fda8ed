"""Fixtures of the GCS plugin's tests.

Objects go to a real fake-gcs-server (started once per run). Token issuance runs against the local
STS test double in ``sts_double.py`` (no Google token endpoint can run here). fake-gcs-server
checks no tokens, so what a downscoped token may do is asserted on the Credential Access Boundary
the double received, never by expecting a 403 from the store.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from lakekeeper_testing.server import CatalogServer
from lakekeeper_testing.services import FakeGcsServer, serving

from .recording_proxy import RecordingProxy
from .sts_double import StsDouble

BUCKET = "lakekeeper-gcs"


@pytest.fixture(scope="session")
def gcs_proxy() -> Iterator[RecordingProxy]:
    """Its port only: it starts once fake-gcs-server runs (see ``fake_gcs``)."""
    with contextlib.closing(RecordingProxy()) as proxy:
        yield proxy


@pytest.fixture(scope="session")
def fake_gcs(gcs_proxy: RecordingProxy) -> Iterator[FakeGcsServer]:
    # upload-session and media links point at the proxy, so those requests are recorded too
    with serving(FakeGcsServer(buckets=[BUCKET], external_url=gcs_proxy.url)) as server:
        gcs_proxy.start(server.endpoint)
        yield server


@pytest.fixture(scope="session")
def sts() -> Iterator[StsDouble]:
    double = StsDouble().start()
    try:
        yield double
    finally:
        double.close()


@pytest.fixture(scope="session")
def service_account_key(sts: StsDouble) -> dict[str, str]:
    return sts.service_account_key()


@pytest.fixture(scope="session")
def stranger_key(sts: StsDouble) -> dict[str, str]:
    """A well-formed service account key the token endpoint refuses (its public half is unknown there)."""
    return sts.service_account_key("stranger@test-project.iam.gserviceaccount.com", register=False)


@pytest.fixture
def gcs_profile(key_prefix: str):
    """``gcs_profile(**overrides)``: storage-profile JSON for the fake-gcs-server bucket."""

    def make(**overrides: Any) -> dict[str, Any]:
        return {"type": "gcs", "bucket": BUCKET, "key-prefix": key_prefix, "sts-enabled": True, **overrides}

    return make


@pytest.fixture
def gcs_credential(service_account_key: dict[str, str]) -> dict[str, Any]:
    return {"type": "gcs", "credential-type": "service-account-key", "key": service_account_key}


def gcs_env(storage_endpoint: str, sts: StsDouble) -> dict[str, str]:
    """The plugin's host settings that point it at fake-gcs-server (or its proxy) and the STS double."""
    return {
        "LAKEKEEPER__GCS_STORAGE_ENDPOINT": storage_endpoint,
        "LAKEKEEPER__GCS_STS_ENDPOINT": sts.sts_endpoint,
    }


@pytest.fixture(scope="session")
def gcs_server(
    fake_gcs: FakeGcsServer, gcs_proxy: RecordingProxy, sts: StsDouble, lakekeeper_server_factory
) -> Iterator[CatalogServer]:
    """A catalog server (embedded SQLite) with this plugin installed, on fake-gcs-server through the proxy."""
    server = lakekeeper_server_factory(gcs_env(gcs_proxy.url, sts))
    try:
        yield server
    finally:
        server.close()


def create_warehouse(server: CatalogServer, profile: dict, credential: dict | None, **extra: Any) -> httpx.Response:
    body = {"warehouse-name": f"wh-{uuid.uuid4().hex[:10]}", "storage-profile": profile, **extra}
    if credential is not None:
        body["storage-credential"] = credential
    return httpx.post(server.url + "/management/v1/warehouse", json=body, timeout=120)
