"""``server/authorize.py``: filtered keyset pages and the 403-or-404 decision, with a small in-memory
authorizer (the OpenFGA plugin's end-to-end tests run the same code against a server)."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

from lakekeeper_host.errors import CatalogError, no_such_table
from lakekeeper_host.server.authorize import FILTER_CHUNK_MAX, authorize, visible_page
from lakekeeper_host.service.authz import ANONYMOUS, AllowAllAuthorizer, AuthorizerBase, Resource


class Grants(AuthorizerBase):
    """Allows ``(action, id)`` pairs listed in ``allowed``; counts the batches it was asked."""

    name = "grants"

    def __init__(self, allowed: set[tuple[str, str]]) -> None:
        self.allowed = allowed
        self.batches: list[int] = []

    async def is_allowed(self, actor, action, resource) -> bool:
        return (action, resource.id) in self.allowed

    async def are_allowed(self, actor, action, resources):
        self.batches.append(len(resources))
        return [(action, r.id) in self.allowed for r in resources]


ROWS = [f"t{i:03d}" for i in range(60)]


def world(authorizer) -> tuple[SimpleNamespace, SimpleNamespace, list[tuple[str, int]]]:
    fetches: list[tuple[str, int]] = []
    return SimpleNamespace(authorizer=authorizer), SimpleNamespace(actor=ANONYMOUS), fetches


async def read_all(state, meta, fetches, limit: int) -> tuple[list[str], int]:
    async def fetch(after, n):
        fetches.append((after, n))
        start = 0 if after is None else ROWS.index(after) + 1
        return ROWS[start:start + n]

    seen, after, pages = [], None, 0
    while True:
        page, more = await visible_page(state, meta, fetch, lambda r: r, lambda r: Resource("table", r),
                                        after=after, limit=limit)
        assert len(page) <= limit
        seen += page
        pages += 1
        if not more:
            return seen, pages
        assert page, "a page that promises more must carry the key to continue from"
        after = page[-1]


@pytest.mark.parametrize("seed", range(12))
async def test_filtered_pages_return_every_visible_row_once_in_order(seed: int) -> None:
    rng = random.Random(seed)
    share = rng.choice([0.0, 0.05, 0.3, 0.9, 1.0])
    visible = sorted(r for r in ROWS if rng.random() < share)
    limit = rng.choice([1, 2, 3, 7, 100])
    state, meta, fetches = world(Grants({("include_in_list", r) for r in visible}))
    seen, pages = await read_all(state, meta, fetches, limit)
    assert seen == visible
    assert pages <= len(visible) // limit + 2
    # sparse views read ever larger database pages (fewer round trips), never more than the cap
    assert all(batch <= max(limit, FILTER_CHUNK_MAX) for batch in state.authorizer.batches)


async def test_allow_all_reads_one_database_page_and_asks_nothing() -> None:
    state, meta, fetches = world(AllowAllAuthorizer())
    seen, pages = await read_all(state, meta, fetches, 25)
    assert seen == ROWS and pages == 3
    assert fetches == [(None, 26), ("t024", 26), ("t049", 26)]


async def test_denied_is_403_when_visible_and_the_missing_error_when_not() -> None:
    state, meta, _ = world(Grants({("get_metadata", "seen")}))
    with pytest.raises(CatalogError) as forbidden:
        await authorize(state, meta, "drop", "table", "seen", hidden=no_such_table(["ns"], "seen"))
    assert (forbidden.value.code, forbidden.value.type) == (403, "ForbiddenException")
    for action in ("drop", "get_metadata"):
        with pytest.raises(CatalogError) as hidden:
            await authorize(state, meta, action, "table", "other", hidden=no_such_table(["ns"], "other"))
        assert (hidden.value.code, hidden.value.type) == (404, "NoSuchTableException")
    internal = SimpleNamespace(actor=None)  # internal calls are allowed everything
    await authorize(state, internal, "drop", "table", "other", hidden=no_such_table(["ns"], "other"))
