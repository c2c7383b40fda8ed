"""Pure parts of the ETag and Idempotency-Key support."""

from __future__ import annotations

import itertools
import json

import pytest

from lakekeeper_host.errors import CatalogError
from lakekeeper_host.server import idempotency
from lakekeeper_host.server.tables import etag
from lakekeeper_host.service.storage import DataAccess, StoragePermission

WH = "019bbf1a-0000-7000-8000-000000000001"
LOC = "file:///wh/ns/t/metadata/00001-a.metadata.json"
NOW = 1_750_000_000_000


def _never() -> bool:
    raise AssertionError("vending was not needed for this decision")


async def no_creds():
    return False


async def creds():
    return True


def test_every_response_shape_gets_a_distinct_tag():
    accesses = [
        DataAccess.NONE,
        DataAccess.CLIENT_MANAGED,
        DataAccess.VENDED_CREDENTIALS,
        DataAccess.REMOTE_SIGNING,
        DataAccess.VENDED_CREDENTIALS | DataAccess.REMOTE_SIGNING,
    ]
    shapes = [None] + [
        etag.StorageShape(a, p, 3) for a, p in itertools.product(accesses, list(StoragePermission))
    ]
    tags = {
        etag.table_etag(WH, LOC, snapshots=s, storage=shape) for s in ("all", "refs") for shape in shapes
    }
    assert len(tags) == 2 * len(shapes)
    # the warehouse version, the warehouse and the metadata location are part of it too
    base = etag.StorageShape(DataAccess.VENDED_CREDENTIALS, StoragePermission.READ, 1)
    assert etag.table_etag(WH, LOC, storage=base) != etag.table_etag(
        WH, LOC, storage=etag.StorageShape(DataAccess.VENDED_CREDENTIALS, StoragePermission.READ, 2)
    )
    assert etag.table_etag(WH, LOC) != etag.table_etag(WH.replace("1", "2"), LOC)
    assert etag.table_etag(WH, LOC) != etag.table_etag(WH, LOC + "x")


def test_tags_are_weak_and_round_trip():
    plain = etag.table_etag(WH, LOC)
    assert plain.startswith('W/"lk2.') and plain.endswith('"')
    (bare,) = etag.parse_if_none_match(plain)
    assert etag.TableETag.parse(bare).render() == plain
    with_expiry = etag.TableETag("abc", NOW).render()
    assert etag.TableETag.parse(etag.parse_if_none_match(with_expiry)[0]) == etag.TableETag("abc", NOW)
    for junk in ("e34615aade2e6333", "lk1.abc", "lk2.", "lk2.abc.def.ghi", "lk2.abc.zzz"):
        assert etag.TableETag.parse(junk) is None


def test_if_none_match_lists_and_wildcards():
    assert etag.parse_if_none_match('W/"lk2.a", "lk2.b" ,*') == ["lk2.a", "lk2.b", "*"]
    assert etag.parse_if_none_match(None) == []


def test_revalidation_window_is_half_the_remaining_life_capped_at_an_hour():
    assert etag.revalidate_after_ms(None) is None
    assert etag.revalidate_after_ms(NOW + 600_000, NOW) == NOW + 300_000
    assert etag.revalidate_after_ms(NOW + 10 * 3_600_000, NOW) == NOW + 3_600_000
    assert etag.revalidate_after_ms(NOW - 5, NOW) == NOW - 5  # already expired: in the past


async def test_matching_tag_without_credentials_is_not_modified():
    current = etag.shape_hash(WH, LOC)
    tag = etag.TableETag(current).render()
    assert await etag.match_not_modified([f"lk2.{current}"], current, vends_credentials=no_creds) == tag
    # would the load vend credentials now, the cached credential-free body must not be reused
    assert await etag.match_not_modified([f"lk2.{current}"], current, vends_credentials=creds) is None
    # another metadata version (or shape) never matches
    assert await etag.match_not_modified(["lk2.0000"], current, vends_credentials=no_creds) is None


async def test_tag_with_revalidation_point_matches_only_before_it():
    current = etag.shape_hash(WH, LOC)
    value = f"lk2.{current}.{NOW + 1000:x}"

    async def vends():
        return _never()

    assert await etag.match_not_modified([value], current, vends_credentials=vends, now_ms=NOW)
    assert await etag.match_not_modified([value], current, vends_credentials=vends, now_ms=NOW + 1000) is None


async def test_wildcard_matches_only_without_expiring_credentials():
    current = etag.shape_hash(WH, LOC)
    assert await etag.match_not_modified(["*"], current, vends_credentials=no_creds) == etag.TableETag(current).render()
    assert await etag.match_not_modified(["*"], current, vends_credentials=creds) is None


def test_idempotency_keys_must_be_uuids():
    assert idempotency.parse_key(None) is None
    assert idempotency.parse_key("   ") is None
    assert idempotency.parse_key(" 0190A7E2-0000-7000-8000-000000000000 ") == "0190a7e2-0000-7000-8000-000000000000"
    with pytest.raises(CatalogError) as info:
        idempotency.parse_key("not-a-uuid")
    assert (info.value.code, info.value.type) == (400, "InvalidIdempotencyKey")


def test_which_outcomes_are_replayed():
    assert all(idempotency.is_final(s) for s in (200, 204, 400, 404, 409, 422))
    assert not any(idempotency.is_final(s) for s in (401, 403, 408, 419, 429, 500, 503, 504))


def test_vended_credentials_are_not_stored():
    body = json.dumps(
        {
            "metadata-location": "s3://b/t/m.json",
            "config": {"s3.access-key-id": "AK", "s3.secret-access-key": "S", "s3.session-token": "T",
                       "s3.region": "eu", "client.region": "eu"},
            "storage-credentials": [{"prefix": "s3://b/t", "config": {"s3.secret-access-key": "S"}}],
        }
    )
    stored = json.loads(idempotency._scrub(body))
    assert stored == {"metadata-location": "s3://b/t/m.json", "config": {"s3.region": "eu", "client.region": "eu"}}
    assert idempotency._scrub('{"a":1}') == '{"a":1}'
    assert idempotency._scrub("") == ""
