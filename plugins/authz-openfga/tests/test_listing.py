"""Filtered lists of a ``lakekeeper serve`` with the ``openfga`` authorizer, on SQLite and PostgreSQL.

A list answers the cheapest way it can (``lakekeeper_host/server/authorize.py`` ``visible_page``):
unfiltered for who may list everything below the parent, the rows OpenFGA's ListObjects names for a
sparse caller, or every row checked in batches when ListObjects may have been cut short. Whatever the
way, the pages must hold exactly what the caller may see, in order, nothing skipped or repeated.

OpenFGA cannot run here: the server talks to the OpenFGA HTTP API double (``lakekeeper_testing.openfga_double``,
checked against the real engine by ``test_double_conformance.py``), which here stops ListObjects at
``CAP`` objects like an OpenFGA server run with ``OPENFGA_LIST_OBJECTS_MAX_RESULTS=6``; the plugin is
told the same limit. Grants go through the permissions API, with the plugin's caches on.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator

import pytest
from openfga_servers import openfga_server
from permissions_setup import SCHEMA, Caller

from lakekeeper_testing.oidc import OidcIssuer
from lakekeeper_testing.openfga_double import OpenFgaDouble
from lakekeeper_testing.server import CatalogServer

CAP = 6
TABLES = [f"t{i:02d}" for i in range(14)]
BOB_TABLES = ["t01", "t02", "t05", "t09", "t10"]  # fewer than CAP: ListObjects names them
DAVE_TABLES = ["t00", "t03", "t04", "t06", "t07", "t11", "t12", "t13"]  # more than CAP: checked row by row
NAMESPACES = ["many", "n0", "n1", "n2", "n3"]


class Listing:
    """The server, its callers and the catalog alice built: namespaces, tables in ``many``."""

    def __init__(self, server: CatalogServer, idp: OidcIssuer, double: OpenFgaDouble) -> None:
        self.server, self.double = server, double
        self.alice, self.bob, self.carol, self.dave = (Caller(server, idp, n) for n in ("alice", "bob", "carol",
                                                                                         "dave"))
        self.prefix = ""
        self.warehouse_id = ""
        self.table_ids: dict[str, str] = {}
        self.namespace_ids: dict[str, str] = {}

    def grant(self, relation: str, user: Caller, path: str, *, revoke: bool = False) -> None:
        change = [{"type": relation, "user": user.user_id}]
        response = self.alice.grant(path, deletes=change) if revoke else self.alice.grant(path, writes=change)
        assert response.status_code == 204, response.text

    def table(self, name: str) -> str:
        return f"/warehouse/{self.warehouse_id}/table/{self.table_ids[name]}"

    def namespace(self, name: str) -> str:
        return f"/namespace/{self.namespace_ids[name]}"

    def pages(self, caller: Caller, path: str, size: int, key: str) -> tuple[list, int]:
        """Every page of a list: the items in order and the number of requests."""
        seen, token, requests = [], "", 0
        while token is not None:
            response = caller.get(path, params={"pageSize": size, "pageToken": token})
            assert response.status_code == 200, response.text
            body = response.json()
            assert len(body[key]) <= size
            seen += body[key]
            token, requests = body.get("next-page-token"), requests + 1
            assert requests <= 50, "the pages do not end"
        return seen, requests

    def tables(self, caller: Caller, size: int) -> list[str]:
        seen, _ = self.pages(caller, f"{self.prefix}/namespaces/many/tables", size, "identifiers")
        return [item["name"] for item in seen]

    def namespaces(self, caller: Caller, size: int) -> list[str]:
        seen, _ = self.pages(caller, f"{self.prefix}/namespaces", size, "namespaces")
        return [parts[0] for parts in seen]


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def listing(
    request, double: OpenFgaDouble, idp: OidcIssuer, tmp_path_factory, lakekeeper_server_factory
) -> Iterator[Listing]:
    with openfga_server(lakekeeper_server_factory, request.param, double, idp, f"lk-{uuid.uuid4().hex[:8]}",
                        LAKEKEEPER__OPENFGA__LIST_OBJECTS_MAX_RESULTS=str(CAP),
                        LAKEKEEPER__EMBEDDED_QUICKSTART="false") as server, contextlib.ExitStack() as stack:
        double.list_objects_max_results = CAP
        stack.callback(setattr, double, "list_objects_max_results", 1000)
        yield _built(Listing(server, idp, double), str(tmp_path_factory.mktemp("listing-wh")))


def _built(w: Listing, root: str) -> Listing:
    """alice bootstraps and creates the namespaces and tables (the server writes their tuples);
    bob gets select on a few tables, dave on many (one by one), carol describe on ``many``."""
    alice = w.alice
    assert alice.post("/management/v1/bootstrap", json={"accept-terms-of-use": True}).status_code == 204
    made = alice.post("/management/v1/warehouse", json={
        "warehouse-name": "listing", "storage-profile": {"type": "file", "root": root}})
    assert made.status_code == 201, made.text
    w.warehouse_id = made.json()["warehouse-id"]
    w.prefix = f"/catalog/v1/{w.warehouse_id}"
    for namespace in NAMESPACES:
        created = alice.post(f"{w.prefix}/namespaces", json={"namespace": [namespace]})
        assert created.status_code == 200, created.text
    listed = alice.get(f"{w.prefix}/namespaces", params={"returnUuids": "true"}).json()
    w.namespace_ids = {parts[0]: uid for parts, uid in zip(listed["namespaces"], listed["namespace-uuids"],
                                                         strict=True)}
    for name in TABLES:
        table = alice.post(f"{w.prefix}/namespaces/many/tables", json={"name": name, "schema": SCHEMA})
        assert table.status_code == 200, table.text
        w.table_ids[name] = table.json()["metadata"]["table-uuid"]
    for name in BOB_TABLES:
        w.grant("select", w.bob, w.table(name))
    for name in DAVE_TABLES:
        w.grant("select", w.dave, w.table(name))
    w.grant("describe", w.carol, w.namespace("many"))
    return w


@pytest.mark.parametrize("size", [1, 2, 3, 100])
def test_every_caller_pages_through_exactly_what_they_may_see(listing: Listing, size: int) -> None:
    assert listing.tables(listing.alice, size) == TABLES  # the owner: list_everything
    assert listing.tables(listing.carol, size) == TABLES  # describe on the namespace: list_everything
    assert listing.tables(listing.bob, size) == BOB_TABLES  # sparse: the rows ListObjects names
    assert listing.tables(listing.dave, size) == DAVE_TABLES  # over the cap: every row checked


def test_the_ways_a_list_is_answered(listing: Listing) -> None:
    """Which way answered shows in what reached OpenFGA: a sparse caller's pages need one
    ListObjects and no per-table checks; a caller over the cap has the tables checked."""
    requests = listing.double.requests

    def asked() -> tuple[int, int]:
        return requests["/stores/{store}/list-objects"], requests["/stores/{store}/batch-check"]

    erin = Caller(listing.server, listing.bob._idp, "erin")
    listing.grant("select", erin, listing.table("t08"))
    listing.grant("select", erin, listing.table("t12"))
    before = asked()
    assert listing.tables(erin, 1) == ["t08", "t12"]
    assert asked() == (before[0] + 1, before[1])
    frank = Caller(listing.server, listing.bob._idp, "frank")
    for name in TABLES[:CAP]:
        listing.grant("select", frank, listing.table(name))
    before = asked()
    assert listing.tables(frank, 100) == TABLES[:CAP]
    lists, batches = asked()
    assert lists == before[0] + 1 and batches > before[1]  # at the cap: unknown, so checked


def test_a_grant_and_a_revocation_show_in_the_next_list_at_once(listing: Listing) -> None:
    assert listing.tables(listing.bob, 2) == BOB_TABLES
    listing.grant("select", listing.bob, listing.table("t03"))
    try:
        assert listing.tables(listing.bob, 2) == sorted([*BOB_TABLES, "t03"])
    finally:
        listing.grant("select", listing.bob, listing.table("t03"), revoke=True)
    assert listing.tables(listing.bob, 2) == BOB_TABLES
    listing.grant("describe", listing.bob, listing.namespace("many"))
    try:
        assert listing.tables(listing.bob, 5) == TABLES  # now list_everything on the namespace
    finally:
        listing.grant("describe", listing.bob, listing.namespace("many"), revoke=True)
    assert listing.tables(listing.bob, 5) == BOB_TABLES


@pytest.mark.parametrize("size", [1, 2, 100])
def test_namespaces_are_filtered_the_same_way(listing: Listing, size: int) -> None:
    assert listing.namespaces(listing.alice, size) == NAMESPACES  # list_everything on the warehouse
    assert listing.namespaces(listing.bob, size) == ["many"]  # the path to his tables
    grace = Caller(listing.server, listing.bob._idp, f"grace{size}")
    for name in ("n1", "n3"):
        listing.grant("describe", grace, listing.namespace(name))
    assert listing.namespaces(grace, size) == ["n1", "n3"]
