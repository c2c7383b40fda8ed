"""Security regressions of issue 30 (authorization half), written from the attacker's side, with the
``openfga`` authorizer on the OpenFGA API double and OIDC users, on SQLite and PostgreSQL.

alice bootstraps and owns everything she builds: warehouse > namespaces ``ans`` and ``bns``, table
``ans.t2``, view ``ans.v2``. bob owns ``bns`` (alice granted it) and holds ``modify`` on ``t2`` and
``v2``; he may not grant anything on them. carol reads ``t2`` through ``ans``.

* Moving must never give the mover more rights than they had: bob's rename of ``ans.t2`` into his
  own ``bns`` would make him the table's owner (ownership of ``bns`` flows down), so a move into
  another namespace needs ``move`` on the object (grant authority and modify) and
  ``accept_moved_tabular`` on the destination.
* An ``Idempotency-Key`` replays only to the caller who used it first, for the same operation,
  route and payload, and only after the caller passed the operation's authorization again.
* OpenFGA unreachable: every request that needs a decision answers 503 with ``Retry-After``
  (fail closed), never a 500, and nothing is changed.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import httpx
import pytest
from openfga_servers import openfga_server
from permissions_setup import PERMS, SCHEMA, Caller

from lakekeeper_testing.oidc import OidcIssuer
from lakekeeper_testing.openfga_double import OpenFgaDouble

VIEW_VERSION = {"version-id": 1, "schema-id": 0, "timestamp-ms": 1, "summary": {"engine-name": "test"},
                "default-namespace": ["ans"],
                "representations": [{"type": "sql", "sql": "select 1", "dialect": "spark"}]}


class Setup:
    def __init__(self, server, idp: OidcIssuer, double: OpenFgaDouble, store_name: str) -> None:
        self.server, self.double, self.store_name = server, double, store_name
        self.alice, self.bob, self.carol = (Caller(server, idp, n) for n in ("alice", "bob", "carol"))

    def path(self, kind: str, object_id: str) -> str:
        """The permissions API's path of an object (tables and views below their warehouse)."""
        if kind in ("table", "view"):
            return f"/warehouse/{self.warehouse_id}/{kind}/{object_id}"
        return f"/{kind}/{object_id}"

    def ns(self, name: str) -> str:
        namespace = self.alice.get(f"{self.prefix}/namespaces/{name}", params={"returnUuid": "true"})
        assert namespace.status_code == 200, namespace.text
        return namespace.json()["namespace-uuid"]

    def table(self, namespace: str, name: str, user: Caller | None = None) -> httpx.Response:
        return (user or self.alice).get(f"{self.prefix}/namespaces/{namespace}/tables/{name}")

    def view(self, namespace: str, name: str, user: Caller | None = None) -> httpx.Response:
        return (user or self.alice).get(f"{self.prefix}/namespaces/{namespace}/views/{name}")

    def rename(self, user: Caller, kind: str, source: tuple[str, str], destination: tuple[str, str],
               **kwargs) -> httpx.Response:
        body = {"source": {"namespace": [source[0]], "name": source[1]},
                "destination": {"namespace": [destination[0]], "name": destination[1]}}
        return user.post(f"{self.prefix}/{kind}s/rename", json=body, **kwargs)


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def setup(
    request, double: OpenFgaDouble, idp: OidcIssuer, tmp_path_factory, lakekeeper_server_factory
) -> Iterator[Setup]:
    store_name = f"lk-{uuid.uuid4().hex[:8]}"
    with openfga_server(lakekeeper_server_factory, request.param, double, idp, store_name) as server:
        s = Setup(server, idp, double, store_name)
        alice = s.alice
        assert alice.post("/management/v1/bootstrap", json={"accept-terms-of-use": True}).status_code == 204
        made = alice.post("/management/v1/warehouse", json={
            "warehouse-name": "sec", "storage-profile": {"type": "file",
                                                         "root": str(tmp_path_factory.mktemp("sec"))}})
        assert made.status_code == 201, made.text
        s.warehouse_id = made.json()["warehouse-id"]
        s.prefix = f"/catalog/v1/{s.warehouse_id}"
        for name in ("ans", "bns"):
            assert alice.post(f"{s.prefix}/namespaces", json={"namespace": [name]}).status_code == 200
        assert alice.grant(s.path("namespace", s.ns("bns")),
                           writes=[{"type": "ownership", "user": s.bob.user_id}]).status_code == 204
        assert alice.grant(s.path("namespace", s.ns("ans")),
                           writes=[{"type": "select", "user": s.carol.user_id}]).status_code == 204
        yield s


def _table(s: Setup, name: str) -> str:
    made = s.alice.post(f"{s.prefix}/namespaces/ans/tables", json={"name": name, "schema": SCHEMA})
    assert made.status_code == 200, made.text
    table_id = made.json()["metadata"]["table-uuid"]
    assert s.alice.grant(s.path("table", table_id),
                         writes=[{"type": "modify", "user": s.bob.user_id}]).status_code == 204
    return table_id


def _view(s: Setup, name: str) -> str:
    made = s.alice.post(f"{s.prefix}/namespaces/ans/views",
                        json={"name": name, "schema": SCHEMA, "view-version": VIEW_VERSION})
    assert made.status_code == 200, made.text
    view_id = made.json()["metadata"]["view-uuid"]
    assert s.alice.grant(s.path("view", view_id),
                         writes=[{"type": "modify", "user": s.bob.user_id}]).status_code == 204
    return view_id


# ---------------------------------------------------------------- moving never grants more


@pytest.mark.parametrize("kind", ["table", "view"])
def test_moving_into_a_namespace_one_owns_does_not_make_one_the_owner(setup: Setup, kind: str) -> None:
    s = setup
    name = f"{kind[0]}2"
    object_id = _table(s, name) if kind == "table" else _view(s, name)
    load = s.table if kind == "table" else s.view
    path = s.path(kind, object_id)
    before = set(s.bob.actions(path))
    assert "change_ownership" not in before and "grant_modify" not in before
    # bob may not make himself the owner directly ...
    grab = s.bob.grant(path, writes=[{"type": "ownership", "user": s.bob.user_id}])
    assert grab.status_code == 403, grab.text
    # ... nor by moving the object into the namespace he owns
    moved = s.rename(s.bob, kind, ("ans", name), ("bns", name))
    assert moved.status_code == 403, moved.text
    assert moved.json()["error"]["type"] == f"{kind.capitalize()}ActionForbidden"
    assert load("ans", name).status_code == 200 and load("bns", name).status_code == 404
    assert set(s.bob.actions(path)) == before
    if kind == "table":  # the readers of ans keep their access
        assert load("ans", name, s.carol).status_code == 200
    # a rename inside the namespace asks no grant authority (Lakekeeper: rename + create there)
    ans = s.path("namespace", s.ns("ans"))
    assert s.alice.grant(ans, writes=[{"type": "create", "user": s.bob.user_id}]).status_code == 204
    try:
        assert s.rename(s.bob, kind, ("ans", name), ("ans", f"{name}_renamed")).status_code == 204
        assert s.rename(s.bob, kind, ("ans", f"{name}_renamed"), ("ans", name)).status_code == 204
        assert s.rename(s.bob, kind, ("ans", name), ("bns", name)).status_code == 403  # still no move
    finally:
        assert s.alice.grant(ans, deletes=[{"type": "create", "user": s.bob.user_id}]).status_code == 204
    # the owner (grant authority and modify on the object, may accept it in bns) moves it; grants stay
    assert s.rename(s.alice, kind, ("ans", name), ("bns", name)).status_code == 204
    assert load("bns", name).status_code == 200
    listed = s.alice.get(f"{PERMS}{path}/assignments").json()["assignments"]
    assert {"type": "modify", "user": s.bob.user_id} in listed
    assert {"type": "ownership", "user": s.alice.user_id} in listed


def test_moving_needs_the_destination_to_accept_it(setup: Setup) -> None:
    """dave owns t3 outright (grant authority) but may only create in ``ans``: with
    ``create`` alone a namespace under managed access does not accept a moved table, a plain one does."""
    s = setup
    dave = Caller(s.server, s.bob._idp, "dave")
    table_id = _table(s, "t3")
    assert s.alice.grant(s.path("table", table_id), writes=[{"type": "ownership", "user": dave.user_id}]).status_code \
        == 204
    assert s.alice.post(f"{s.prefix}/namespaces", json={"namespace": ["managed"]}).status_code == 200
    managed = s.path("namespace", s.ns("managed"))
    assert s.alice.grant(managed, writes=[{"type": "create", "user": dave.user_id}]).status_code == 204
    assert s.alice.post(f"{PERMS}{managed}/managed-access", json={"managed-access": True}).status_code == 200
    try:
        refused = s.rename(dave, "table", ("ans", "t3"), ("managed", "t3"))
        assert refused.status_code == 403, refused.text
        assert s.table("ans", "t3").status_code == 200
    finally:
        s.alice.post(f"{PERMS}{managed}/managed-access", json={"managed-access": False})
    assert s.rename(dave, "table", ("ans", "t3"), ("managed", "t3")).status_code == 204


# ---------------------------------------------------------------- idempotency keys


def test_an_idempotency_key_never_replays_another_callers_answer(setup: Setup) -> None:
    s = setup
    key = {"Idempotency-Key": str(uuid.uuid4())}
    body = {"name": "secret_t", "schema": SCHEMA, "properties": {"owner-note": "alice only"}}
    # a namespace of alice's that bob holds nothing in (he sees ``ans`` through his grants on its tables)
    assert s.alice.post(f"{s.prefix}/namespaces", json={"namespace": ["private"]}).status_code == 200
    first = s.alice.post(f"{s.prefix}/namespaces/private/tables", json=body, headers=key)
    assert first.status_code == 200, first.text
    # bob re-sends alice's key, on a namespace he cannot even see: not her answer, a 404 of his own
    stolen = s.bob.post(f"{s.prefix}/namespaces/private/tables", json=body, headers=key)
    assert stolen.status_code == 404, stolen.text
    assert "idempotency-replayed" not in stolen.headers and "alice only" not in stolen.text
    # the other way round: bob claims a key first, alice's request under it is performed for her
    claimed = {"Idempotency-Key": str(uuid.uuid4())}
    assert s.bob.post(f"{s.prefix}/namespaces/bns/tables", json={"name": "bobs", "schema": SCHEMA},
                      headers=claimed).status_code == 200
    mine = s.alice.post(f"{s.prefix}/namespaces/ans/tables", json={"name": "alices", "schema": SCHEMA},
                        headers=claimed)
    assert mine.status_code == 200 and "idempotency-replayed" not in mine.headers, mine.text
    assert s.table("ans", "alices").status_code == 200
    # alice's own retry is a replay
    again = s.alice.post(f"{s.prefix}/namespaces/private/tables", json=body, headers=key)
    assert again.status_code == 200 and again.headers.get("idempotency-replayed") == "true"
    assert again.json()["metadata"]["table-uuid"] == first.json()["metadata"]["table-uuid"]


def test_a_replay_is_authorized_again(setup: Setup) -> None:
    """bob's own commit under a key replays only while bob may still commit: after alice revoked his
    grant, his retry is refused like any request of his (404: he cannot see the table any more)."""
    s = setup
    table_id = _table(s, "t_replay")
    key = {"Idempotency-Key": str(uuid.uuid4())}
    commit = {"requirements": [], "updates": [{"action": "set-properties", "updates": {"by": "bob"}}]}
    url = f"{s.prefix}/namespaces/ans/tables/t_replay"
    assert s.bob.post(url, json=commit, headers=key).status_code == 200
    assert s.bob.post(url, json=commit, headers=key).headers.get("idempotency-replayed") == "true"
    assert s.alice.grant(s.path("table", table_id),
                         deletes=[{"type": "modify", "user": s.bob.user_id}]).status_code == 204
    replay = s.bob.post(url, json=commit, headers=key)
    assert replay.status_code == 404 and "idempotency-replayed" not in replay.headers, replay.text


def test_a_key_reused_with_another_payload_is_422(setup: Setup) -> None:
    s = setup
    key = {"Idempotency-Key": str(uuid.uuid4())}
    url = f"{s.prefix}/namespaces/ans/properties"
    assert s.alice.post(url, json={"updates": {"a": "1"}}, headers=key).status_code == 200
    other = s.alice.post(url, json={"updates": {"a": "2"}}, headers=key)
    assert other.status_code == 422, other.text
    assert other.json()["error"]["type"] == "UnprocessableEntityException"
    assert s.alice.get(f"{s.prefix}/namespaces/ans").json()["properties"]["a"] == "1"
    # the same operation on another object is a reuse too, not a replay
    elsewhere = s.alice.post(f"{s.prefix}/namespaces/bns/properties", json={"updates": {"a": "1"}}, headers=key)
    assert elsewhere.status_code in (400, 422) and "idempotency-replayed" not in elsewhere.headers
    assert "a" not in s.alice.get(f"{s.prefix}/namespaces/bns").json()["properties"]


# ---------------------------------------------------------------- OpenFGA outage


def test_openfga_unreachable_is_503_with_retry_after_and_fails_closed(setup: Setup) -> None:
    s = setup
    erin = Caller(s.server, s.bob._idp, "erin")  # asks questions no cache has answered
    _table(s, "t_outage")
    s.double.stop()
    try:
        for response in (
            erin.get(f"{s.prefix}/namespaces/ans/tables/t_outage"),
            erin.post(f"{s.prefix}/namespaces/ans/tables", json={"name": "during_outage", "schema": SCHEMA}),
            erin.get(f"{s.prefix}/namespaces"),
            erin.get(f"{PERMS}/server/access"),
        ):
            assert response.status_code == 503, response.text
            assert response.headers.get("retry-after"), response.headers
            assert response.json()["error"]["type"] == "AuthorizationBackendUnavailable", response.text
    finally:
        s.double.start()
    assert s.table("ans", "during_outage").status_code == 404  # nothing was created
    assert erin.get(f"{s.prefix}/namespaces/ans/tables/t_outage").status_code == 404  # and back to a decision


# ---------------------------------------------------------------- information


def test_one_visible_namespace_does_not_reveal_the_warehouse_statistics(setup: Setup) -> None:
    """carol reads ``ans`` only: she sees the warehouse (to reach ``ans``), not how many tables and
    views the whole warehouse holds (most of them hidden from her); its owner does."""
    s = setup
    statistics = f"/management/v1/warehouse/{s.warehouse_id}/statistics"
    assert s.carol.get(f"{s.prefix}/namespaces/ans").status_code == 200
    refused = s.carol.get(statistics)
    assert refused.status_code == 403, refused.text
    assert "number-of-tables" not in refused.text
    assert s.alice.get(statistics).status_code == 200


def test_a_malformed_grant_on_a_hidden_object_answers_like_a_missing_one(setup: Setup) -> None:
    """bob sees nothing in ``hidden``: a malformed grant or managed-access body on its table or
    namespace must answer him as for an object that does not exist (a 400 would tell him it is there)."""
    s = setup
    assert s.alice.post(f"{s.prefix}/namespaces", json={"namespace": ["hidden"]}).status_code == 200
    made = s.alice.post(f"{s.prefix}/namespaces/hidden/tables", json={"name": "h", "schema": SCHEMA})
    assert made.status_code == 200, made.text
    real = {"table": made.json()["metadata"]["table-uuid"], "namespace": s.ns("hidden")}
    for kind, object_id in real.items():
        for suffix, body in (("assignments", {"writes": "not a list"}), ("managed-access", {"managed-access": 1})):
            if kind == "table" and suffix == "managed-access":
                continue  # tables have no managed access
            answers = [s.bob.post(f"{PERMS}{s.path(kind, candidate)}/{suffix}", json=body)
                       for candidate in (object_id, str(uuid.uuid4()))]
            assert [a.status_code for a in answers] == [404, 404], [a.text for a in answers]
            assert answers[0].json()["error"]["type"] == answers[1].json()["error"]["type"]


# ---------------------------------------------------------------- the same class elsewhere


def test_register_with_overwrite_does_not_take_over_a_table(setup: Setup) -> None:
    """gus may create tables in ``ans`` but has no right on alice's ``t_reg``. Registering over it
    (``overwrite``) is a commit to that table: refused, and he does not become its owner."""
    s = setup
    gus = Caller(s.server, s.bob._idp, "gus")
    table_id = _table(s, "t_reg")
    ans = s.path("namespace", s.ns("ans"))
    assert s.alice.grant(ans, writes=[{"type": "create", "user": gus.user_id}]).status_code == 204
    try:
        location = s.table("ans", "t_reg").json()["metadata-location"]
        taken = gus.post(f"{s.prefix}/namespaces/ans/register",
                         json={"name": "t_reg", "metadata-location": location, "overwrite": True})
        assert taken.status_code == 403, taken.text  # he sees it (create on ans implies describe), no more
        assert "storage-credentials" not in taken.text
        assert not {"commit", "change_ownership", "write_data"} & set(gus.actions(s.path("table", table_id)))
        owners = {a["user"] for a in s.alice.get(f"{PERMS}{s.path('table', table_id)}/assignments").json()[
            "assignments"] if a["type"] == "ownership"}
        assert owners == {s.alice.user_id}
    finally:
        assert s.alice.grant(ans, deletes=[{"type": "create", "user": gus.user_id}]).status_code == 204
    # alice, who may commit to it, may still register over it
    location = s.table("ans", "t_reg").json()["metadata-location"]
    again = s.alice.post(f"{s.prefix}/namespaces/ans/register",
                         json={"name": "t_reg", "metadata-location": location, "overwrite": True})
    assert again.status_code == 200, again.text
