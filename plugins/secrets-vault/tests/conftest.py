"""Real OpenBao (``bao server -dev``) for the KV2 store; the run's ``openbao`` and ``seaweed_two_users``
(warehouse credentials) come from ``lakekeeper_testing``."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from lakekeeper_host.config.types import Secret
from lakekeeper_secrets_vault import Kv2Config, VaultKv2Store
from lakekeeper_testing.services import BaoUserpass, OpenBaoServer, serving

MOUNT = "lakekeeper-kv"


def kv2_config(access: BaoUserpass) -> Kv2Config:
    return Kv2Config(url=access.url, user=access.user, password=Secret(access.password), secret_mount=access.mount)


def kv2_env(access: BaoUserpass) -> dict[str, str]:
    return {
        "LAKEKEEPER__SECRET_BACKEND": "kv2",
        "LAKEKEEPER__KV2__URL": access.url,
        "LAKEKEEPER__KV2__USER": access.user,
        "LAKEKEEPER__KV2__PASSWORD": access.password,
        "LAKEKEEPER__KV2__SECRET_MOUNT": access.mount,
        # debug logs and CloudEvents in the server log, so the leak checks that grep it see everything
        "LAKEKEEPER__LOG_LEVEL": "debug",
        "LAKEKEEPER__LOG_CLOUDEVENTS": "true",
    }


@pytest.fixture(scope="session")
def bao(openbao) -> OpenBaoServer:
    """The run's OpenBao (``lakekeeper_testing``), for tests that do not restart it."""
    return openbao


@pytest.fixture(scope="session")
def bao_access(bao) -> BaoUserpass:
    """A userpass user whose policy allows only the kv-v2 mount ``lakekeeper-kv``."""
    return bao.add_userpass_kv(mount=MOUNT, user="lakekeeper")


@pytest.fixture
def fresh_bao() -> Iterator[OpenBaoServer]:
    """An OpenBao of this test alone (to restart or stop it)."""
    with serving(OpenBaoServer()) as server:
        yield server


@pytest.fixture
async def kv2_store(bao_access):
    store = await VaultKv2Store(kv2_config(bao_access), server_id=str(uuid.uuid4())).start()
    yield store
    await store.close()
