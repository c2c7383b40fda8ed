"""Lifecycle tuples a ``lakekeeper serve`` with the ``openfga`` authorizer keeps right: namespace
moves (``move`` + ``accept_moved_namespace``), staged tables that give way, and
``lakekeeper authz reconcile`` after OpenFGA failed writes.

OpenFGA cannot run here: the server talks to the OpenFGA HTTP API double (``lakekeeper_testing.openfga_double``,
proved against the real engine by ``test_double_conformance.py``); ``fail_writes`` makes it refuse
tuple writes as an OpenFGA that is down would. The check cache is off, so tuples the reconcile
command (another process) writes are seen at once. alice bootstraps and owns; bob starts with nothing.
On SQLite (embedded) and PostgreSQL.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator

import pytest
from permissions_setup import SCHEMA, Caller, openfga_oidc_server

from lakekeeper_testing.oidc import OidcIssuer
from lakekeeper_testing.openfga_double import OpenFgaDouble
from lakekeeper_testing.server import CatalogServer


class World:
    def __init__(self, server: CatalogServer, double: OpenFgaDouble, store_name: str, alice: Caller, bob: Caller,
                 warehouse_id: str) -> None:
        self.server, self.double, self.store_name = server, double, store_name
        self.alice, self.bob, self.warehouse_id = alice, bob, warehouse_id
        self.prefix = f"/catalog/v1/{warehouse_id}"

    def fga_object(self, kind: str, object_id: str) -> str:
        """The OpenFGA object of a table or view of the warehouse (Lakekeeper's id format)."""
        return f"lakekeeper_{kind}:{self.warehouse_id}/{object_id}"

    def tuples_of(self, obj: str) -> set[tuple[str, str, str]]:
        """Every tuple naming ``obj``, as object or as user."""
        keys = self.double.store_named(self.store_name).tuples.keys
        return {k for k in keys if obj in (k[2], k[0].partition("#")[0])}

    def namespace(self, name: str) -> str:
        response = self.alice.post(f"{self.prefix}/namespaces", json={"namespace": [name]})
        assert response.status_code == 200, response.text
        return self.namespace_id(name)

    def namespace_id(self, name: str) -> str:
        response = self.alice.get(f"{self.prefix}/namespaces/{name}", params={"returnUuid": "true"})
        assert response.status_code == 200, response.text
        return response.json()["namespace-uuid"]

    def move(self, caller: Caller, namespace_id: str, destination: list[str]):
        return caller.post(f"/management/v1/warehouse/{self.warehouse_id}/namespace/{namespace_id}/move",
                           json={"destination": destination})

    def reconcile(self, *args: str) -> subprocess.CompletedProcess:
        """``lakekeeper authz reconcile`` against the server's database and OpenFGA store."""
        env = {k: v for k, v in self.server.environment().items() if k != "LAKEKEEPER__LISTEN_PORT"}
        return subprocess.run([sys.executable, "-m", "lakekeeper_host", "authz", "reconcile", *args],
                              env={**os.environ, **env}, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def world(request, double: OpenFgaDouble, idp: OidcIssuer, tmp_path_factory,
          lakekeeper_server_factory) -> Iterator[World]:
    server, store_name = openfga_oidc_server(lakekeeper_server_factory, double, idp, backend=request.param,
                                             LAKEKEEPER__OPENFGA__CHECK_CACHE_CAPACITY="0")
    try:
        alice, bob = Caller(server, idp, "alice"), Caller(server, idp, "bob")
        assert alice.post("/management/v1/bootstrap", json={"accept-terms-of-use": True}).status_code == 204
        made = alice.post("/management/v1/warehouse", json={
            "warehouse-name": "lifecycle",
            "storage-profile": {"type": "file", "root": str(tmp_path_factory.mktemp("lifecycle-wh"))}})
        assert made.status_code == 201, made.text
        yield World(server, double, store_name, alice, bob, made.json()["warehouse-id"])
    finally:
        double.fail_writes = False
        server.close()


def grant(world: World, namespace_id: str, relation: str, user: Caller) -> None:
    response = world.alice.grant(f"/namespace/{namespace_id}", writes=[{"type": relation, "user": user.user_id}])
    assert response.status_code == 204, response.text


# ---------------------------------------------------------------- moves


def test_a_namespace_moves_only_where_the_mover_may_manage_grants(world: World) -> None:
    source, destination = world.namespace("incoming"), world.namespace("archive")
    grant(world, source, "modify", world.bob)  # move = manage_grants and modify on the namespace itself
    grant(world, source, "manage_grants", world.bob)

    hidden = world.move(world.bob, source, ["archive", "incoming"])
    assert hidden.status_code == 404, hidden.text  # bob cannot see the destination
    assert hidden.json()["error"]["type"] == "NoSuchNamespaceException"

    grant(world, destination, "create", world.bob)
    refused = world.move(world.bob, source, ["archive", "incoming"])
    assert refused.status_code == 403, refused.text  # create, but not manage_grants, on the destination
    assert "accept moved namespace" in refused.json()["error"]["message"]
    assert "accept_moved_namespace" not in world.bob.actions(f"/namespace/{destination}")
    assert world.tuples_of(f"namespace:{source}") >= {(f"warehouse:{world.warehouse_id}", "parent",
                                                       f"namespace:{source}")}

    grant(world, destination, "manage_grants", world.bob)
    assert "accept_moved_namespace" in world.bob.actions(f"/namespace/{destination}")
    moved = world.move(world.bob, source, ["archive", "incoming"])
    assert moved.status_code == 200, moved.text
    links = {(u, r, o) for u, r, o in world.tuples_of(f"namespace:{source}") if r in ("parent", "child", "namespace")}
    assert links == {(f"namespace:{destination}", "parent", f"namespace:{source}"),
                     (f"namespace:{source}", "child", f"namespace:{destination}")}


def test_moving_to_the_warehouse_root_needs_accept_moved_namespace_on_the_warehouse(world: World) -> None:
    parent = world.namespace("nest")
    made = world.alice.post(f"{world.prefix}/namespaces", json={"namespace": ["nest", "egg"]})
    assert made.status_code == 200, made.text
    egg = world.namespace_id("nest%1Fegg")
    grant(world, egg, "ownership", world.bob)  # move: ownership gives manage_grants and modify
    assert world.alice.grant(f"/warehouse/{world.warehouse_id}",
                             writes=[{"type": "create", "user": world.bob.user_id}]).status_code == 204
    refused = world.move(world.bob, egg, ["egg"])
    assert refused.status_code == 403, refused.text
    assert "accept moved namespace" in refused.json()["error"]["message"]
    moved = world.move(world.alice, egg, ["egg"])  # the warehouse's owner may
    assert moved.status_code == 200, moved.text
    assert (f"warehouse:{world.warehouse_id}", "parent", f"namespace:{egg}") in world.tuples_of(f"namespace:{egg}")
    assert not {t for t in world.tuples_of(f"namespace:{egg}") if f"namespace:{parent}" in t}


# ---------------------------------------------------------------- staged tables


def stage(world: World, namespace: str, name: str) -> str:
    response = world.alice.post(f"{world.prefix}/namespaces/{namespace}/tables",
                                json={"name": name, "schema": SCHEMA, "stage-create": True})
    assert response.status_code == 200, response.text
    return response.json()["metadata"]["table-uuid"]


def test_a_staged_table_that_gives_way_leaves_no_tuples(world: World) -> None:
    world.namespace("staging")
    staged = stage(world, "staging", "orders")
    staged_obj = world.fga_object("table", staged)
    assert ("user:oidc~alice", "ownership", staged_obj) in world.tuples_of(staged_obj)
    created = world.alice.post(f"{world.prefix}/namespaces/staging/tables", json={"name": "orders", "schema": SCHEMA})
    assert created.status_code == 200, created.text
    table_id = created.json()["metadata"]["table-uuid"]
    assert table_id != staged
    assert world.tuples_of(world.fga_object("table", staged)) == set()
    assert {r for _, r, _ in world.tuples_of(world.fga_object("table", table_id))} == {"parent", "child", "ownership"}

    # a view created under a staged table's name replaces it too
    staged = stage(world, "staging", "report")
    view = world.alice.post(f"{world.prefix}/namespaces/staging/views", json={
        "name": "report", "schema": SCHEMA,
        "view-version": {"version-id": 1, "timestamp-ms": 1, "schema-id": 0, "summary": {},
                         "default-namespace": ["staging"],
                         "representations": [{"type": "sql", "sql": "SELECT 1", "dialect": "spark"}]},
        "properties": {}})
    assert view.status_code == 200, view.text
    assert world.tuples_of(world.fga_object("table", staged)) == set()

    # so does a table renamed to a staged table's name
    staged = stage(world, "staging", "ledger")
    renamed = world.alice.post(f"{world.prefix}/tables/rename", json={
        "source": {"namespace": ["staging"], "name": "orders"},
        "destination": {"namespace": ["staging"], "name": "ledger"}})
    assert renamed.status_code == 204, renamed.text
    assert world.tuples_of(world.fga_object("table", staged)) == set()
    assert world.tuples_of(world.fga_object("table", table_id))  # the renamed table keeps its tuples


def create_commit(table_uuid: str, location: str) -> dict:
    """The commit of a create transaction (Java, PyIceberg): ``assert-create`` and the whole table."""
    return {"requirements": [{"type": "assert-create"}], "updates": [
        {"action": "assign-uuid", "uuid": table_uuid},
        {"action": "upgrade-format-version", "format-version": 2},
        {"action": "add-schema", "schema": SCHEMA, "last-column-id": 1},
        {"action": "set-current-schema", "schema-id": -1},
        {"action": "add-spec", "spec": {"spec-id": 0, "fields": []}},
        {"action": "set-default-spec", "spec-id": -1},
        {"action": "add-sort-order", "sort-order": {"order-id": 0, "fields": []}},
        {"action": "set-default-sort-order", "sort-order-id": -1},
        {"action": "set-location", "location": location},
    ]}


def test_committing_a_staged_table_keeps_its_id_and_its_owner(world: World) -> None:
    namespace = world.namespace("drafts")
    grant(world, namespace, "create", world.bob)
    staged = world.alice.post(f"{world.prefix}/namespaces/drafts/tables",
                              json={"name": "plan", "schema": SCHEMA, "stage-create": True})
    assert staged.status_code == 200, staged.text
    metadata = staged.json()["metadata"]
    committed = world.bob.post(f"{world.prefix}/namespaces/drafts/tables/plan",
                               json=create_commit(metadata["table-uuid"], metadata["location"]))
    assert committed.status_code == 200, committed.text
    table = world.fga_object("table", metadata['table-uuid'])
    owners = {u for u, r, o in world.tuples_of(table) if r == "ownership" and o == table}
    assert owners == {"user:oidc~alice"}  # un-staging is no new creation: bob is not made an owner
    # a commit that creates the table (no stage-create before) does make its committer the owner
    created = world.bob.post(f"{world.prefix}/namespaces/drafts/tables/memo",
                             json=create_commit(str(uuid.uuid4()), metadata["location"] + "-memo"))
    assert created.status_code == 200, created.text
    memo = world.fga_object("table", created.json()['metadata']['table-uuid'])
    assert {u for u, r, o in world.tuples_of(memo) if r == "ownership"} == {"user:oidc~bob"}


# ---------------------------------------------------------------- reconcile


def test_reconcile_repairs_what_failed_writes_left_behind(world: World) -> None:
    doomed = world.namespace("doomed")
    grant(world, doomed, "select", world.bob)
    world.double.fail_writes = True
    try:
        lost = world.alice.post(f"{world.prefix}/namespaces", json={"namespace": ["lost"]})
        assert lost.status_code >= 500  # committed in the database, OpenFGA refused the tuples
        dropped = world.alice.request("DELETE", f"{world.prefix}/namespaces/doomed")
        assert dropped.status_code >= 500
    finally:
        world.double.fail_writes = False
    lost_id = world.server.fetch_val("SELECT id FROM namespace WHERE name = 'lost'")
    assert world.server.fetch_val("SELECT count(*) FROM namespace WHERE id = :id", {"id": doomed}) == 0
    assert world.tuples_of(f"namespace:{lost_id}") == set()
    assert world.alice.get(f"{world.prefix}/namespaces/lost").status_code == 404  # no parent link: hidden
    assert world.tuples_of(f"namespace:{doomed}")  # bob's grant and the links outlived the namespace

    dry = world.reconcile("--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert f"+ warehouse:{world.warehouse_id} parent namespace:{lost_id}" in dry.stdout
    assert f"- user:oidc~bob select namespace:{doomed}" in dry.stdout
    assert "(dry run)" in dry.stdout
    assert world.tuples_of(f"namespace:{lost_id}") == set()  # a dry run changes nothing

    fixed = world.reconcile()
    assert fixed.returncode == 0, fixed.stderr
    assert "ownership cannot be restored" in fixed.stdout and f"namespace:{lost_id}" in fixed.stdout
    assert world.tuples_of(f"namespace:{doomed}") == set()
    assert world.tuples_of(f"namespace:{lost_id}") == {
        (f"warehouse:{world.warehouse_id}", "parent", f"namespace:{lost_id}"),
        (f"namespace:{lost_id}", "namespace", f"warehouse:{world.warehouse_id}")}
    # the hierarchy works again: alice (the warehouse's owner) sees and uses the namespace
    assert world.alice.get(f"{world.prefix}/namespaces/lost").status_code == 200
    table = world.alice.post(f"{world.prefix}/namespaces/lost/tables", json={"name": "found", "schema": SCHEMA})
    assert table.status_code == 200, table.text

    again = world.reconcile()
    assert again.returncode == 0, again.stderr
    assert "openfga: wrote 0, deleted 0 record(s)" in again.stdout
