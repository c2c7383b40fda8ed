"""``server/authorize.py``: filtered keyset pages and the 403-or-404 decision, with a small in-memory
authorizer (the OpenFGA plugin's end-to-end tests run the same code against a server)."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

from lakekeeper_host.errors import CatalogError, no_such_table
from lakekeeper_host.server.authorize import FILTER_CHUNK_MAX, authorize, visible_page
from lakekeeper_host.service.authz import Actor, AllowAllAuthorizer, AuthorizerBase, Resource


class Grants(AuthorizerBase):
    """Allows ``(action, id)`` pairs listed in ``allowed``; counts the batches it was asked. With
    ``names_ids`` it names the ids a caller may see (``visible_ids``) unless there are more than that."""

    name = "grants"

    def __init__(self, allowed: set[tuple[str, str]], names_ids: int | None = None) -> None:
        self.allowed = allowed
        self.names_ids = names_ids
        self.batches: list[int] = []

    async def is_allowed(self, actor, action, resource) -> bool:
        return (action, resource.id) in self.allowed

    async def are_allowed(self, actor, action, resources):
        self.batches.append(len(resources))
        return [(action, r.id) in self.allowed for r in resources]

    async def visible_ids(self, actor, action, kind):
        ids = frozenset(i for a, i in self.allowed if a == action)
        return ids if self.names_ids is not None and len(ids) <= self.names_ids else None


ROWS = [f"t{i:03d}" for i in range(60)]
NAMESPACE = Resource("namespace", "ns")


def world(authorizer) -> tuple[SimpleNamespace, SimpleNamespace, list[tuple[str, int]]]:
    fetches: list[tuple[str, int]] = []
    settings = SimpleNamespace(host=SimpleNamespace(instance_admins=["root"]))
    return (SimpleNamespace(authorizer=authorizer, settings=settings), SimpleNamespace(actor=Actor("bob")),
            fetches)


async def read_all(state, meta, fetches, limit: int, **listing) -> tuple[list[str], int]:
    async def fetch(after, n, ids):
        fetches.append((after, n) if ids is None else (after, n, len(ids)))
        start = 0 if after is None else ROWS.index(after) + 1
        return [r for r in ROWS[start:] if ids is None or r in ids][:n]

    seen, after, pages = [], None, 0
    while True:
        page, more = await visible_page(state, meta, fetch, lambda r: r, lambda r: Resource("table", r),
                                        after=after, limit=limit, **listing)
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


@pytest.mark.parametrize("seed", range(12))
async def test_named_ids_give_the_same_pages_reading_only_visible_rows(seed: int) -> None:
    """The authorizer names the visible ids: every page is one database read of those rows, and the
    pages are exactly those of checking row by row (sparse and dense callers, any page size)."""
    rng = random.Random(seed)
    visible = sorted(r for r in ROWS if rng.random() < rng.choice([0.0, 0.05, 0.3, 0.9, 1.0]))
    limit = rng.choice([1, 2, 3, 7, 100])
    grants = {("include_in_list", r) for r in visible}
    checked_state, meta, _ = world(Grants(grants))
    checked = await read_all(checked_state, meta, [], limit, kind="table")
    state, meta, fetches = world(Grants(grants, names_ids=len(ROWS)))
    named = await read_all(state, meta, fetches, limit, kind="table")
    assert named[0] == checked[0] == visible
    assert named[1] <= checked[1]
    assert state.authorizer.batches == []  # nothing checked row by row
    assert all(fetch[1] == limit + 1 and fetch[2] == len(visible) for fetch in fetches)


async def test_too_many_ids_to_name_fall_back_to_checking_rows() -> None:
    visible = ROWS[::3]
    state, meta, fetches = world(Grants({("include_in_list", r) for r in visible}, names_ids=len(visible) - 1))
    seen, _ = await read_all(state, meta, fetches, 7, kind="table")
    assert seen == visible and state.authorizer.batches  # checked in batches
    assert all(len(fetch) == 2 for fetch in fetches)  # no id filter in the database


async def test_nothing_visible_reads_nothing() -> None:
    state, meta, fetches = world(Grants(set(), names_ids=100))
    assert await read_all(state, meta, fetches, 10, kind="table") == ([], 1)
    assert fetches == []


async def test_list_everything_on_the_parent_or_an_instance_admin_lists_unfiltered() -> None:
    """Lakekeeper's shortcut: who may list everything below the namespace is asked nothing per row."""
    state, meta, fetches = world(Grants({("list_everything", NAMESPACE.id)}, names_ids=100))
    seen, pages = await read_all(state, meta, fetches, 25, kind="table", everything=NAMESPACE)
    assert seen == ROWS and pages == 3 and state.authorizer.batches == []
    assert fetches == [(None, 26), ("t024", 26), ("t049", 26)]
    # without the right on the parent: filtered (nothing granted, nothing seen)
    state, meta, fetches = world(Grants(set()))
    assert (await read_all(state, meta, fetches, 25, kind="table", everything=NAMESPACE))[0] == []
    # an instance admin lists everything (the control plane) without asking the authorizer
    state, _, fetches = world(Grants(set()))
    seen, _ = await read_all(state, SimpleNamespace(actor=Actor("root")), fetches, 25, kind="table")
    assert seen == ROWS and state.authorizer.batches == []


async def test_allow_all_reads_one_database_page_and_asks_nothing() -> None:
    state, meta, fetches = world(AllowAllAuthorizer())
    seen, pages = await read_all(state, meta, fetches, 25)
    assert seen == ROWS and pages == 3
    assert fetches == [(None, 26), ("t024", 26), ("t049", 26)]


async def test_denied_is_403_when_visible_and_the_missing_error_when_not() -> None:
    state, meta, _ = world(Grants({("get_metadata", "seen")}))
    with pytest.raises(CatalogError) as forbidden:
        await authorize(state, meta, "drop", "table", "seen", hidden=no_such_table(["ns"], "seen"))
    assert (forbidden.value.code, forbidden.value.type) == (403, "TableActionForbidden")  # Lakekeeper's type
    for action in ("drop", "get_metadata"):
        with pytest.raises(CatalogError) as hidden:
            await authorize(state, meta, action, "table", "other", hidden=no_such_table(["ns"], "other"))
        assert (hidden.value.code, hidden.value.type) == (404, "NoSuchTableException")
    internal = SimpleNamespace(actor=None)  # internal calls are allowed everything
    await authorize(state, internal, "drop", "table", "other", hidden=no_such_table(["ns"], "other"))
