"""The STS session policy and the short-term-credential cache."""

from __future__ import annotations

import asyncio
import json

import pytest

from lakekeeper_host.service.storage import StoragePermission
from lakekeeper_storage_s3.cache import CredentialCache, VendedCredential, reuse_window_seconds
from lakekeeper_storage_s3.locations import S3Location, canonical
from lakekeeper_storage_s3.policy import escape_iam_glob, session_policy


def statements(permission, location="s3://bucket/wh/table-1", kms=None):
    policy = json.loads(session_policy(S3Location.parse(location), permission, kms))
    assert policy["Version"] == "2012-10-17"
    return {s["Sid"]: s for s in policy["Statement"]}


def test_policy_is_scoped_to_the_table_prefix():
    by_sid = statements(StoragePermission.READ)
    table = by_sid["TableAccess"]
    assert table["Resource"] == ["arn:aws:s3:::bucket/wh/table-1/", "arn:aws:s3:::bucket/wh/table-1/*"]
    assert table["Action"] == ["s3:GetObject", "s3:GetObjectVersion"]
    listing = by_sid["ListBucketForFolder"]
    assert listing["Resource"] == "arn:aws:s3:::bucket"
    assert listing["Condition"] == {"StringLike": {"s3:prefix": "wh/table-1/*"}}
    assert by_sid["GetBucketLocation"]["Action"] == "s3:GetBucketLocation"
    assert "KmsAccess" not in by_sid


def test_permission_levels_add_write_then_delete():
    read_write = statements(StoragePermission.READ_WRITE)["TableAccess"]["Action"]
    assert "s3:PutObject" in read_write and "s3:DeleteObject" not in read_write
    assert "s3:AbortMultipartUpload" in read_write
    everything = statements(StoragePermission.READ_WRITE_DELETE)["TableAccess"]["Action"]
    assert set(everything) == set(read_write) | {"s3:DeleteObject"}


def test_kms_key_is_granted_when_configured():
    kms = statements(StoragePermission.READ, kms="arn:aws:kms:eu-west-1:1:key/k")["KmsAccess"]
    assert kms["Action"] == ["kms:Decrypt", "kms:GenerateDataKey"]


def test_iam_wildcards_in_keys_are_escaped():
    assert escape_iam_glob("a*b?c$d") == "a${*}b${?}c${$}d"
    table = statements(StoragePermission.READ, "s3://bucket/we*ird")["TableAccess"]
    assert table["Resource"][1] == "arn:aws:s3:::bucket/we${*}ird/*"


def test_locations_canonicalise_scheme_aliases_and_slashes():
    assert canonical("s3a://bucket/a/b/") == "s3://bucket/a/b"
    assert canonical("s3n://bucket") == "s3://bucket"
    assert S3Location.parse("s3://bucket/a/b").dir_prefix == "a/b/"
    assert S3Location.parse("s3://bucket").dir_prefix == ""


class Clock:
    def __init__(self, now: float = 1_000_000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


def credential(clock: Clock, valid_for: float, name: str = "k") -> VendedCredential:
    return VendedCredential(name, "secret", "token", int((clock.now + valid_for) * 1000))


def test_reuse_window_is_half_the_validity_capped_at_an_hour():
    clock = Clock()
    assert reuse_window_seconds(credential(clock, 900), clock.now) == 450
    assert reuse_window_seconds(credential(clock, 12 * 3600), clock.now) == 3600
    assert reuse_window_seconds(credential(clock, -5), clock.now) == 0


async def test_cache_serves_fresh_entries_and_refetches_after_the_window():
    clock = Clock()
    cache = CredentialCache(10, clock=clock)
    fetched = []

    async def fetch():
        fetched.append(clock.now)
        return credential(clock, 900, name=f"k{len(fetched)}")

    first = await cache.get_or_fetch("table", fetch)
    clock.now += 449
    assert await cache.get_or_fetch("table", fetch) is first
    clock.now += 2  # past half of the 900 s validity
    assert (await cache.get_or_fetch("table", fetch)).access_key_id == "k2"
    assert (cache.hits, cache.misses) == (1, 2)


async def test_concurrent_misses_share_one_fetch():
    clock = Clock()
    cache = CredentialCache(10, clock=clock)
    calls = 0
    release = asyncio.Event()

    async def fetch():
        nonlocal calls
        calls += 1
        await release.wait()
        return credential(clock, 900)

    waiters = [asyncio.create_task(cache.get_or_fetch("table", fetch)) for _ in range(5)]
    await asyncio.sleep(0)
    release.set()
    results = await asyncio.gather(*waiters)
    assert calls == 1 and all(r is results[0] for r in results)


async def test_failed_fetch_is_not_cached():
    clock = Clock()
    cache = CredentialCache(10, clock=clock)

    async def broken():
        raise RuntimeError("sts down")

    with pytest.raises(RuntimeError):
        await cache.get_or_fetch("table", broken)

    async def fetch():
        return credential(clock, 900)

    assert (await cache.get_or_fetch("table", fetch)).access_key_id == "k"


async def test_capacity_evicts_least_recently_used():
    clock = Clock()
    cache = CredentialCache(2, clock=clock)

    async def fetch():
        return credential(clock, 900)

    for key in ("a", "b", "a", "c"):  # "b" is the least recently used when "c" arrives
        await cache.get_or_fetch(key, fetch)
    misses = cache.misses
    await cache.get_or_fetch("a", fetch)
    assert cache.misses == misses
    await cache.get_or_fetch("b", fetch)
    assert cache.misses == misses + 1
    assert len(cache) == 2


async def test_disabled_cache_always_fetches():
    clock = Clock()
    cache = CredentialCache(0, clock=clock)
    count = 0

    async def fetch():
        nonlocal count
        count += 1
        return credential(clock, 900)

    await cache.get_or_fetch("a", fetch)
    await cache.get_or_fetch("a", fetch)
    assert count == 2 and len(cache) == 0


def test_stc_cache_settings_reach_the_process_cache():
    """``LAKEKEEPER__CACHE__STC__CAPACITY`` / ``__ENABLED`` configure the one cache every S3
    warehouse of the process shares (set when a warehouse's storage is built)."""
    from lakekeeper_host.config import load_settings
    from lakekeeper_host.registry import BuildContext
    from lakekeeper_host.serde import structure_body
    from lakekeeper_storage_s3 import S3Profile, build_s3_storage, credential_cache

    profile = structure_body({"bucket": "stc-bucket", "region": "eu-central-1", "sts-enabled": False}, S3Profile)
    cache = credential_cache()
    before = (cache.capacity, cache.enabled)
    try:
        small = load_settings({"LAKEKEEPER__CACHE__STC__CAPACITY": "3"})
        storage = build_s3_storage(profile, None, BuildContext(settings=small))
        assert storage.cache is cache
        assert (cache.capacity, cache.enabled) == (3, True)
        off = load_settings({"LAKEKEEPER__CACHE__STC__ENABLED": "false"})
        build_s3_storage(profile, None, BuildContext(settings=off))
        assert cache.enabled is False
    finally:
        cache.configure(capacity=before[0], enabled=before[1])
