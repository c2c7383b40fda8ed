"""The built-in secret store on SQLite and PostgreSQL: conformance, encryption at rest, key rotation."""

from __future__ import annotations

import asyncio
import json

import pytest

from lakekeeper_host.builtins.secrets_database import (
    DatabaseSecretStore,
    SecretDecryptionError,
    derive_key,
    open_sealed,
)
from lakekeeper_host.config import load_settings
from lakekeeper_host.metrics import Metrics
from lakekeeper_host.registry import StartupError
from lakekeeper_host.server.management.key_rotation import KeyRotationError, rotate_encryption_key
from lakekeeper_host.service.secrets import Secrets
from lakekeeper_testing.secrets_conformance import (
    S3_CREDENTIAL,
    UNICODE_VALUE,
    SecretStoreConformance,
    new_secret_id,
)

from .conftest import KEY

NEW_KEY = "the-new-key-fedcba9876543210"


class TestDatabaseSecretStore(SecretStoreConformance):
    @pytest.fixture
    def secret_store(self, database_secret_store):
        return database_secret_store


def settings_with_key(key: str):
    return load_settings({"LAKEKEEPER__PG_ENCRYPTION_KEY": key})


async def raw_rows(store) -> dict[str, str]:
    return {row["id"]: json.dumps(row) for row in await store.fetch_all("SELECT * FROM secret")}


async def test_rows_never_hold_the_plaintext(store, database_secret_store):
    values = [S3_CREDENTIAL, UNICODE_VALUE]
    for value in values:
        await database_secret_store.create_impl(new_secret_id(), value)
    dump = "\n".join((await raw_rows(store)).values())
    # every distinctive part (short ones like "s3" turn up in any random base64)
    parts = [part for value in values for part in value.values() if len(part) >= 8]
    assert len(parts) == 5
    for part in parts:
        assert part not in dump
        assert json.dumps(part) not in dump


async def test_a_ciphertext_only_opens_on_its_own_row(store, database_secret_store):
    original, other = new_secret_id(), new_secret_id()
    await database_secret_store.create_impl(original, S3_CREDENTIAL)
    await database_secret_store.create_impl(other, {"k": "v"})
    stolen = await store.fetch_val("SELECT ciphertext FROM secret WHERE id = :id", {"id": original})
    await store.execute("UPDATE secret SET ciphertext = :c WHERE id = :id", {"c": stolen, "id": other})
    with pytest.raises(SecretDecryptionError):
        await database_secret_store.get_impl(other)


async def test_a_wrong_key_fails_loudly_without_revealing_anything(store, database_secret_store):
    secret_id = new_secret_id()
    await database_secret_store.create_impl(secret_id, S3_CREDENTIAL)
    wrong = DatabaseSecretStore(store, derive_key("some-other-key-0123456789"))
    with pytest.raises(SecretDecryptionError) as raised:
        await wrong.get_impl(secret_id)
    error = raised.value
    assert error.code == 500 and secret_id in error.message and "PG_ENCRYPTION_KEY" in error.message
    assert not any(v in error.message for v in S3_CREDENTIAL.values() if v != "s3")
    # a server configured with that key refuses to start instead of failing on every request
    with pytest.raises(StartupError, match="does not decrypt the stored secrets"):
        await wrong.check_key()
    await database_secret_store.check_key()


async def test_rotation_re_encrypts_every_secret_and_the_old_key_opens_none(store, database_secret_store):
    values = {new_secret_id(): {"n": str(i), **S3_CREDENTIAL} for i in range(5)}
    for secret_id, value in values.items():
        await database_secret_store.create_impl(secret_id, value)
    before = await raw_rows(store)

    result = await rotate_encryption_key(store, settings_with_key(KEY), NEW_KEY)

    assert (result.resealed, result.already_current) == (5, 0)
    rows = await store.fetch_all("SELECT id, ciphertext, updated_at FROM secret")
    old_key, new_key = derive_key(KEY), derive_key(NEW_KEY)
    for row in rows:
        assert row["updated_at"] is not None and json.dumps(row) != before[row["id"]]
        assert open_sealed(new_key, row["id"], row["ciphertext"]) == values[row["id"]]
        with pytest.raises(SecretDecryptionError):
            open_sealed(old_key, row["id"], row["ciphertext"])
    rotated = DatabaseSecretStore(store, new_key)
    await rotated.check_key()
    assert [await rotated.get_impl(i) for i in values] == list(values.values())


async def test_rotation_can_be_repeated_to_catch_stragglers(store, database_secret_store):
    await database_secret_store.create_impl(new_secret_id(), {"k": "1"})
    await rotate_encryption_key(store, settings_with_key(KEY), NEW_KEY)
    # a server still running with the old key writes one more secret after the rotation
    straggler = new_secret_id()
    await database_secret_store.create_impl(straggler, {"k": "2"})

    result = await rotate_encryption_key(store, settings_with_key(KEY), NEW_KEY)

    assert (result.resealed, result.already_current) == (1, 1)
    assert await DatabaseSecretStore(store, derive_key(NEW_KEY)).get_impl(straggler) == {"k": "2"}


async def test_rotation_is_all_or_nothing(store, database_secret_store):
    for i in range(3):
        await database_secret_store.create_impl(new_secret_id(), {"k": str(i)})
    # one row that opens with neither key (written under a third key)
    foreign = DatabaseSecretStore(store, derive_key("a-third-key-0123456789abcdef"))
    broken = new_secret_id()
    await foreign.create_impl(broken, {"k": "foreign"})
    before = await raw_rows(store)

    with pytest.raises(SecretDecryptionError) as raised:
        await rotate_encryption_key(store, settings_with_key(KEY), NEW_KEY)

    assert broken in raised.value.message and "nothing was changed" in raised.value.message
    assert await raw_rows(store) == before


@pytest.mark.parametrize(
    "new_key, reason",
    [
        ("", "empty"),
        ("short", "shorter than"),
        ("<This is unsafe, please set a proper key>", "default key"),
        (KEY, "equals the configured"),
    ],
)
async def test_unsafe_new_keys_are_refused(store, database_secret_store, new_key, reason):
    await database_secret_store.create_impl(new_secret_id(), {"k": "v"})
    before = await raw_rows(store)
    with pytest.raises(KeyRotationError, match=reason):
        await rotate_encryption_key(store, settings_with_key(KEY), new_key)
    assert await raw_rows(store) == before


async def test_cache_hits_and_misses_are_counted_in_the_metrics(database_secret_store):
    metrics = Metrics()
    secrets = Secrets(database_secret_store, capacity=10, ttl_seconds=600, metrics=metrics)
    secret_id = await secrets.create(S3_CREDENTIAL)
    for _ in range(3):
        await secrets.get(secret_id)

    def count(result: str) -> float:
        return metrics.registry.get_sample_value(
            "lakekeeper_cache_requests_total", {"cache": "secrets", "result": result}
        )

    assert (count("miss"), count("hit")) == (1, 2)
    rendered = metrics.render().decode()
    assert not any(v in rendered for v in S3_CREDENTIAL.values() if v != "s3")


async def test_concurrent_misses_read_the_store_once(database_secret_store):
    reads = 0
    original = database_secret_store.get_impl

    async def counting_get(secret_id):
        nonlocal reads
        reads += 1
        return await original(secret_id)

    database_secret_store.get_impl = counting_get
    secrets = Secrets(database_secret_store, capacity=10, ttl_seconds=600)
    secret_id = await secrets.create({"k": "v"})
    values = await asyncio.gather(*(secrets.get(secret_id) for _ in range(10)))
    assert values == [{"k": "v"}] * 10 and reads == 1


async def test_a_disabled_cache_always_reads_the_store(database_secret_store):
    secrets = Secrets(database_secret_store, capacity=0, ttl_seconds=0)
    secret_id = await secrets.create({"k": "v"})
    await secrets.get(secret_id)
    await secrets.get(secret_id)
    assert (secrets.hits, secrets.misses) == (0, 2)


async def test_after_the_ttl_a_changed_secret_is_read_afresh(store, database_secret_store):
    """A secret changed behind this server's back (another replica, or an operator editing the
    KV2 store) is served from the cache until its entry expires, then read afresh. The TTL is
    ``LAKEKEEPER__CACHE__SECRETS__TIME_TO_LIVE_SECS`` (600 by default; the smallest, 1, here)."""
    cache = load_settings({"LAKEKEEPER__CACHE__SECRETS__TIME_TO_LIVE_SECS": "1"}).host.cache.secrets
    secrets = Secrets(database_secret_store, capacity=cache.capacity, ttl_seconds=cache.time_to_live_secs)
    secret_id = await secrets.create({"key": "old"})
    assert await secrets.get(secret_id) == {"key": "old"}

    elsewhere = DatabaseSecretStore(store, derive_key(KEY))  # same database, no shared cache
    await elsewhere.delete_impl(secret_id)
    await elsewhere.create_impl(secret_id, {"key": "new"})
    assert await secrets.get(secret_id) == {"key": "old"}  # still cached

    await asyncio.sleep(cache.time_to_live_secs)
    assert await secrets.get(secret_id) == {"key": "new"}
    assert (secrets.hits, secrets.misses) == (1, 2)
