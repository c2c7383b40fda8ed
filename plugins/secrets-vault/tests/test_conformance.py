"""The host's secret-store conformance suite against OpenBao."""

from __future__ import annotations

import pytest

from lakekeeper_testing.secrets_conformance import SecretStoreConformance


class TestVaultKv2Store(SecretStoreConformance):
    @pytest.fixture
    def secret_store(self, kv2_store):
        return kv2_store
