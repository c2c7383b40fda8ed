"""Fixtures of the ADLS plugin's tests: Azurite's Blob service, over HTTP and over HTTPS with OAuth.

Azurite implements the Blob API, account-key SAS and user-delegation SAS, but neither the DFS
endpoint nor directory-scoped SAS (``sr=d``, an ADLS Gen2 feature): tests that need those say so.
"""

from __future__ import annotations

import contextlib
import http.server
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from lakekeeper_testing.http_double import JsonHandler
from lakekeeper_testing.services import Azurite, free_port, serving, unsigned_storage_jwt

FILESYSTEM = "lakekeeper"


# ``azurite`` (plain HTTP, account-key SAS; the containers lakekeeper and other-fs) is the run's, from
# ``lakekeeper_testing``


@pytest.fixture(scope="session")
def azurite_oauth() -> Iterator[Azurite]:
    """Azurite over HTTPS with ``--oauth basic``: bearer tokens and user-delegation keys work."""
    with serving(Azurite(https=True, containers=[FILESYSTEM, "other-fs"])) as server:
        yield server


class ManagedIdentityEndpoint:
    """A test double of Azure's managed identity endpoint (App Service protocol).

    No managed identity exists on this machine; the double hands azure-identity's real
    ``ManagedIdentityCredential`` (via ``IDENTITY_ENDPOINT`` / ``IDENTITY_HEADER``) the unsigned
    storage token Azurite accepts, so the user-delegation path runs end to end against Azurite.
    """

    def __init__(self) -> None:
        self.header = uuid.uuid4().hex
        self.requests: list[str] = []
        double = self

        class Handler(JsonHandler):
            def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
                double.requests.append(self.path)
                if self.headers.get("X-IDENTITY-HEADER") != double.header:
                    self.send_response(401)
                    self.end_headers()
                    return
                self.send_json(200, {
                    "access_token": unsigned_storage_jwt(),
                    "expires_on": str(int(time.time()) + 3600),
                    "resource": "https://storage.azure.com",
                    "token_type": "Bearer",
                })

        self.port = free_port()
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def environment(self) -> dict[str, str]:
        return {"IDENTITY_ENDPOINT": f"http://127.0.0.1:{self.port}/msi/token", "IDENTITY_HEADER": self.header}

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture(scope="session")
def managed_identity() -> Iterator[ManagedIdentityEndpoint]:
    with contextlib.closing(ManagedIdentityEndpoint()) as endpoint:
        yield endpoint


def _adls_profile(azurite: Azurite, key_prefix: str, **overrides: Any) -> dict[str, Any]:
    profile = {
        "type": "adls",
        "account-name": azurite.account,
        "filesystem": FILESYSTEM,
        "key-prefix": key_prefix,
        "endpoint": azurite.blob_endpoint,
        # Azurite refuses directory SAS (sr=d): container SAS are what it can check
        "sas-scope": "filesystem",
        "sas-token-validity-seconds": 900,
    }
    profile.update(overrides)
    return profile


@pytest.fixture
def adls_profile():
    """``adls_profile(azurite, key_prefix, **overrides)``: storage-profile JSON for an Azurite filesystem."""
    return _adls_profile


@pytest.fixture
def shared_key_credential():
    """``shared_key_credential(azurite)``: the development account's key as an ``az`` credential."""
    return lambda azurite: {"type": "az", "credential-type": "shared-access-key", "key": azurite.account_key}


@pytest.fixture(scope="session")
def adls_server(azurite, lakekeeper_server_factory) -> Iterator[Any]:
    """A catalog server (SQLite) with this plugin installed."""
    server = lakekeeper_server_factory()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def adls_warehouse(adls_server, azurite, key_prefix):
    """``adls_warehouse(**profile_overrides)`` -> (name, warehouse id, response body) of a fresh warehouse."""
    import httpx

    def make(credential: dict[str, Any] | None = None, **overrides: Any):
        body = {
            "warehouse-name": f"wh-{uuid.uuid4().hex[:10]}",
            "storage-profile": _adls_profile(azurite, key_prefix, **overrides),
            "storage-credential": credential
            or {"type": "az", "credential-type": "shared-access-key", "key": azurite.account_key},
        }
        response = httpx.post(adls_server.url + "/management/v1/warehouse", json=body, timeout=120)
        assert response.status_code == 201, response.text
        created = response.json()
        return body["warehouse-name"], created["warehouse-id"], created

    return make
