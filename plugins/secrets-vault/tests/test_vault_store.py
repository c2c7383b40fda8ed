"""KV2 store behaviour against a real OpenBao: paths, login, renewal, restarts, outages, policies."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from lakekeeper_host.config.types import Secret
from lakekeeper_host.registry import StartupError
from lakekeeper_host.service.secrets import SecretStoreError
from lakekeeper_secrets_vault import Kv2Config, VaultKv2Store
from lakekeeper_testing.secrets_conformance import S3_CREDENTIAL, new_secret_id
from lakekeeper_testing.services import ServiceError

from .conftest import kv2_config

SECRET_PARTS = [v for k, v in S3_CREDENTIAL.items() if k.startswith("aws-")]


async def started(access, server_id: str | None = None) -> VaultKv2Store:
    return await VaultKv2Store(kv2_config(access), server_id=server_id or str(uuid.uuid4())).start()


async def test_secrets_live_under_a_per_server_path(bao, bao_access):
    first, second = await started(bao_access), await started(bao_access)
    try:
        secret_id = new_secret_id()
        await first.create_impl(secret_id, S3_CREDENTIAL)
        server_id = first.prefix.rsplit("/", 1)[1]
        stored = bao.request("GET", f"{bao_access.mount}/data/lakekeeper/{server_id}/{secret_id}")
        assert stored["data"]["data"] == S3_CREDENTIAL
        # another server using the same mount does not see it
        assert await second.get_impl(secret_id) is None
        await second.delete_impl(secret_id)
        assert await first.get_impl(secret_id) == S3_CREDENTIAL
    finally:
        await first.close()
        await second.close()


async def test_restarted_openbao_forgets_the_token_and_the_store_logs_in_again(fresh_bao):
    access = fresh_bao.add_userpass_kv(mount="kv")
    store = await started(access)
    try:
        before_restart = new_secret_id()
        await store.create_impl(before_restart, {"k": "v"})
        fresh_bao.stop()
        fresh_bao.start()  # dev mode: in memory, so tokens and secrets are gone; user and mount are replayed

        after_restart = new_secret_id()
        await store.create_impl(after_restart, S3_CREDENTIAL)

        assert await store.get_impl(after_restart) == S3_CREDENTIAL
        assert await store.get_impl(before_restart) is None
        assert store.logins == 2
        assert await store.health() is True
    finally:
        await store.close()


async def test_concurrent_requests_after_a_restart_share_one_login(fresh_bao):
    access = fresh_bao.add_userpass_kv(mount="kv")
    store = await started(access)
    try:
        fresh_bao.stop()
        fresh_bao.start()
        ids = [new_secret_id() for _ in range(6)]
        await asyncio.gather(*(store.create_impl(i, {"id": i}) for i in ids))
        assert [await store.get_impl(i) for i in ids] == [{"id": i} for i in ids]
        assert store.logins == 2
    finally:
        await store.close()


async def test_the_token_is_renewed_before_it_expires(fresh_bao):
    access = fresh_bao.add_userpass_kv(mount="kv")
    # a short lease that may be renewed for an hour
    fresh_bao.request("POST", f"auth/userpass/users/{access.user}", {"token_ttl": "3s", "token_max_ttl": "1h"})
    store = await started(access)
    try:
        secret_id = new_secret_id()
        await store.create_impl(secret_id, {"k": "v"})
        await asyncio.sleep(7)  # more than two leases
        assert await store.get_impl(secret_id) == {"k": "v"}
        assert store.renewals >= 2
        assert store.logins == 1
    finally:
        await store.close()


async def test_a_token_at_its_max_ttl_is_replaced_by_a_new_login(fresh_bao):
    access = fresh_bao.add_userpass_kv(mount="kv", token_ttl="3s")  # ttl == max ttl: not renewable past 3 s
    store = await started(access)
    try:
        secret_id = new_secret_id()
        await store.create_impl(secret_id, {"k": "v"})
        await asyncio.sleep(4)
        assert await store.get_impl(secret_id) == {"k": "v"}
        assert store.logins >= 2
    finally:
        await store.close()


async def test_an_outage_is_a_503_without_secrets_and_the_store_recovers(fresh_bao):
    access = fresh_bao.add_userpass_kv(mount="kv")
    store = await started(access)
    try:
        fresh_bao.stop()
        secret_id = new_secret_id()
        with pytest.raises(SecretStoreError) as raised:
            await store.create_impl(secret_id, S3_CREDENTIAL)
        assert raised.value.code == 503 and secret_id in raised.value.message
        assert not any(part in raised.value.message for part in SECRET_PARTS)
        assert await store.health() is False

        fresh_bao.start()
        assert await store.health() is True
        await store.create_impl(secret_id, S3_CREDENTIAL)
        assert await store.get_impl(secret_id) == S3_CREDENTIAL
    finally:
        await store.close()


async def test_a_mount_outside_the_policy_is_refused(bao, bao_access):
    bao.request("POST", "sys/mounts/not-allowed", {"type": "kv", "options": {"version": "2"}})
    config = Kv2Config(
        url=bao_access.url, user=bao_access.user, password=Secret(bao_access.password), secret_mount="not-allowed"
    )
    store = await VaultKv2Store(config, server_id=str(uuid.uuid4())).start()
    try:
        with pytest.raises(SecretStoreError, match="permission denied") as raised:
            await store.create_impl(new_secret_id(), S3_CREDENTIAL)
        assert not any(part in raised.value.message for part in SECRET_PARTS)
        assert store.logins == 2  # one new login, one retry, then the refusal
    finally:
        await store.close()


async def test_bad_credentials_or_no_server_fail_at_startup_without_the_password(bao, bao_access):
    wrong = Kv2Config(
        url=bao_access.url, user=bao_access.user, password=Secret("wrong-password-123"), secret_mount="kv"
    )
    with pytest.raises(StartupError, match="login as 'lakekeeper'") as raised:
        await VaultKv2Store(wrong, server_id="s").start()
    assert "wrong-password-123" not in str(raised.value)

    from lakekeeper_testing.services import free_port

    nowhere = Kv2Config(
        url=f"http://127.0.0.1:{free_port()}", user="u", password=Secret("pw-nowhere-123"), secret_mount="kv"
    )
    with pytest.raises(StartupError, match="unreachable") as raised:
        await VaultKv2Store(nowhere, server_id="s").start()
    assert "pw-nowhere-123" not in str(raised.value)


async def test_close_revokes_the_token(bao, bao_access):
    store = await started(bao_access)
    token = store._client.token
    await store.close()
    with pytest.raises(ServiceError, match="403"):
        bao.request("GET", "auth/token/lookup-self", token=token)
