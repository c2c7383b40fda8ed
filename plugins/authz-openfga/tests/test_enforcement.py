"""End to end: a ``lakekeeper serve`` with ``LAKEKEEPER__AUTHZ_BACKEND=openfga`` and OIDC, two users.

On SQLite and PostgreSQL, ``alice`` bootstraps (server admin; project admin of the default
project), so she owns everything she creates. ``bob`` has no grants, then ``select`` on one table.
alice grants and revokes as a user would: ``POST /management/v1/permissions/.../assignments`` with
her own token (Lakekeeper's paths and JSON). PyIceberg, Spark and plain HTTP (for the exact
ErrorModels) show what bob may see and do, right after each grant and revocation: the server runs
with its check cache on (the default), so "at once" includes a cache that had answered before.
Storage is a real SeaweedFS with STS, so the read-only credentials bob gets are really read-only.

OpenFGA itself cannot run here: the plugin talks to the OpenFGA HTTP API test double
(``lakekeeper_testing.openfga_double``, checked against the real engine by ``test_double_conformance.py``). The
tests only *read* the double's tuple store, to show the lifecycle tuples the server wrote.
"""

from __future__ import annotations

import contextlib
import urllib.parse
import uuid
from collections.abc import Iterator

import httpx
import pyarrow as pa
import pytest
from botocore.exceptions import ClientError
from openfga_servers import openfga_server
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import ForbiddenError, NoSuchNamespaceError, NoSuchTableError

from lakekeeper_testing.oidc import OidcIssuer
from lakekeeper_testing.openfga_double import OpenFgaDouble
from lakekeeper_testing.pytest_plugin import STS_ROLE
from lakekeeper_testing.server import CatalogServer
from lakekeeper_testing.services import SeaweedS3, seaweed_role_arn

# not "lakekeeper": the shared Spark session's Hadoop FileSystem cache is keyed by bucket, so a later
# test using that bucket on another SeaweedFS would get this (by then stopped) endpoint's s3a client
BUCKET = "lakekeeper-fga"
ROWS = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "name": pa.array(["a", "b", "c"], pa.string())})
VENDED = {"X-Iceberg-Access-Delegation": "vended-credentials"}
PERMS = "/management/v1/permissions"


class World:
    """The running server, the double's store (read only), alice's catalog and the objects she made."""

    def __init__(self, server: CatalogServer, double: OpenFgaDouble, store_name: str, idp: OidcIssuer,
                 seaweed: SeaweedS3, warehouse: str, warehouse_id: str) -> None:
        self.server, self.double, self.store_name, self.idp = server, double, store_name, idp
        self.seaweed, self.warehouse, self.warehouse_id = seaweed, warehouse, warehouse_id
        self.prefix = f"/catalog/v1/{warehouse_id}"

    def fga_object(self, kind: str, object_id: str) -> str:
        """The OpenFGA object of a table or view of the warehouse (Lakekeeper's id format)."""
        return f"lakekeeper_{kind}:{self.warehouse_id}/{object_id}"

    @property
    def tuples(self):
        return self.double.store_named(self.store_name).tuples

    def assign(self, path: str, *, writes=(), deletes=()) -> None:
        """alice changes the grants on ``path`` (below ``/management/v1/permissions``) with her own token."""
        with self.http("alice") as alice:
            response = alice.post(f"{PERMS}{path}/assignments", json={"writes": list(writes), "deletes": list(deletes)})
        assert response.status_code == 204, response.text

    def grant(self, user: str, relation: str, path: str) -> None:
        self.assign(path, writes=[{"type": relation, "user": f"oidc~{user}"}])

    def revoke(self, user: str, relation: str, path: str) -> None:
        self.assign(path, deletes=[{"type": relation, "user": f"oidc~{user}"}])

    @contextlib.contextmanager
    def granted(self, user: str, relation: str, path: str) -> Iterator[None]:
        """``user`` holds ``relation`` on ``path`` inside the block; revoked after it, whatever happens."""
        self.grant(user, relation, path)
        try:
            yield
        finally:
            self.revoke(user, relation, path)

    def table_path(self, table_id: str) -> str:
        return f"/warehouse/{self.warehouse_id}/table/{table_id}"

    def view_path(self, view_id: str) -> str:
        return f"/warehouse/{self.warehouse_id}/view/{view_id}"

    def http(self, user: str) -> httpx.Client:
        return httpx.Client(base_url=self.server.url, timeout=60,
                            headers={"Authorization": f"Bearer {self.idp.mint(user)}"})

    def catalog(self, user: str) -> RestCatalog:
        return RestCatalog(f"{user}-{uuid.uuid4().hex[:6]}", uri=self.server.catalog_url, warehouse=self.warehouse,
                           token=self.idp.mint(user), **{"header.X-Iceberg-Access-Delegation": "vended-credentials"})

    def table_id(self, namespace: str, name: str) -> str:
        with self.http("alice") as alice:
            response = alice.get(f"{self.prefix}/namespaces/{namespace}/tables/{name}")
        assert response.status_code == 200, response.text
        return response.json()["metadata"]["table-uuid"]


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def world(request, double, idp, seaweed_sts, lakekeeper_server_factory) -> Iterator[World]:
    store_name = f"lk-{uuid.uuid4().hex[:8]}"
    with openfga_server(lakekeeper_server_factory, request.param, double, idp, store_name) as server:
        yield _populated(server, double, store_name, idp, seaweed_sts)


def _populated(server: CatalogServer, double: OpenFgaDouble, store_name: str, idp: OidcIssuer,
               seaweed: SeaweedS3) -> World:
    """alice bootstraps, makes an S3 warehouse with STS, namespaces sales and hr and three tables."""
    token = idp.mint("alice")
    with httpx.Client(base_url=server.url, timeout=60, headers={"Authorization": f"Bearer {token}"}) as alice:
        alice.post("/management/v1/bootstrap", json={"accept-terms-of-use": True}).raise_for_status()
        name = f"wh-{uuid.uuid4().hex[:8]}"
        created = alice.post("/management/v1/warehouse", json={
            "warehouse-name": name,
            "storage-profile": {
                "type": "s3", "bucket": BUCKET, "key-prefix": f"fga-{uuid.uuid4().hex[:8]}",
                "endpoint": seaweed.endpoint, "region": seaweed.region, "path-style-access": True,
                "flavor": "s3-compat", "sts-enabled": True, "sts-role-arn": seaweed_role_arn(STS_ROLE),
            },
            "storage-credential": {"type": "s3", "credential-type": "access-key",
                                   "aws-access-key-id": seaweed.access_key,
                                   "aws-secret-access-key": seaweed.secret_key},
        })  # fmt: skip
        assert created.status_code == 201, created.text
    w = World(server, double, store_name, idp, seaweed, name, created.json()["warehouse-id"])
    catalog = w.catalog("alice")
    for namespace in ("sales", "hr"):
        catalog.create_namespace(namespace)
    for table in ("sales.orders", "sales.refunds", "hr.salaries"):
        catalog.create_table(table, schema=ROWS.schema).append(ROWS)
    return w


def error(response: httpx.Response) -> dict:
    body = response.json()
    assert set(body) == {"error"} and body["error"]["code"] == response.status_code, body
    return body["error"]


def test_lifecycle_tuples_make_alice_the_owner_of_what_she_created(world: World) -> None:
    keys = set(world.tuples.keys)
    orders = world.table_id("sales", "orders")
    assert ("user:oidc~alice", "ownership", f"warehouse:{world.warehouse_id}") in keys
    assert ("user:oidc~alice", "ownership", world.fga_object("table", orders)) in keys
    parents = {(u, o) for (u, r, o) in keys if r == "parent" and o == world.fga_object("table", orders)}
    assert len(parents) == 1 and next(iter(parents))[0].startswith("namespace:")


def test_bob_without_grants_sees_nothing_and_hidden_is_the_same_404_as_missing(world: World) -> None:
    with world.http("bob") as bob:
        config = bob.get("/catalog/v1/config", params={"warehouse": world.warehouse})
        assert config.status_code == 404 and error(config)["type"] == "NoSuchWarehouseException"
        hidden = bob.get(f"{world.prefix}/namespaces/sales/tables/orders")
        missing = bob.get(f"{world.prefix}/namespaces/sales/tables/no_such_table")
        assert hidden.status_code == missing.status_code == 404
        assert error(hidden)["type"] == error(missing)["type"] == "NoSuchTableException"
        assert error(hidden)["message"] == error(missing)["message"].replace("no_such_table", "orders")
        assert bob.head(f"{world.prefix}/namespaces/sales/tables/orders").status_code == 404
        namespace = bob.get(f"{world.prefix}/namespaces/hr")
        assert namespace.status_code == 404 and error(namespace)["type"] == "NoSuchNamespaceException"
        dropped = bob.delete(f"{world.prefix}/namespaces/sales/tables/orders")
        assert dropped.status_code == 404 and error(dropped)["type"] == "NoSuchTableException"
        assert bob.get("/management/v1/project-list").json()["projects"] == []
        warehouses = bob.get("/management/v1/warehouse")
        assert warehouses.status_code == 404  # not even the project is visible
    with world.http("alice") as alice:  # alice, the owner, sees it all
        assert len(alice.get(f"{world.prefix}/namespaces/sales/tables").json()["identifiers"]) == 2


def test_select_on_one_table_shows_its_path_and_reads_with_read_only_credentials(world: World) -> None:
    orders = world.table_id("sales", "orders")
    table_url = f"{world.prefix}/namespaces/sales/tables/orders"
    set_owner = {"requirements": [], "updates": [{"action": "set-properties", "updates": {"owner": "bob"}}]}
    with world.http("bob") as bob:  # before the grant bob's write finds no table at all
        commit = bob.post(table_url, json=set_owner)
        assert commit.status_code == 404 and error(commit)["type"] == "NoSuchTableException"
    with world.granted("bob", "select", world.table_path(orders)):
        catalog = world.catalog("bob")
        assert catalog.list_namespaces() == [("sales",)]
        assert catalog.list_tables("sales") == [("sales", "orders")]
        with pytest.raises(NoSuchTableError):
            catalog.load_table("sales.refunds")
        with pytest.raises(NoSuchNamespaceError):
            catalog.list_tables("hr")
        table = catalog.load_table("sales.orders")
        assert table.scan().to_arrow().sort_by("id").equals(ROWS)

        # the credentials are read-only: S3 itself refuses a write with them
        props = table.io.properties
        s3 = world.seaweed.client(aws_access_key_id=props["s3.access-key-id"],
                                  aws_secret_access_key=props["s3.secret-access-key"],
                                  aws_session_token=props["s3.session-token"])
        key = table.location().split("://", 1)[1].split("/", 1)[1] + "/data/bob.parquet"
        with pytest.raises(ClientError) as refused:
            s3.put_object(Bucket=BUCKET, Key=key, Body=b"x")
        assert refused.value.response["Error"]["Code"] == "AccessDenied"

        # bob's append is refused (his files cannot be written; the catalog refuses the commit: 403)
        with pytest.raises(Exception):  # noqa: B017 - S3 refuses the data file first
            table.append(ROWS)
        with pytest.raises(ForbiddenError):
            table.transaction().set_properties(owner="bob").commit_transaction()
        with world.http("bob") as bob:
            commit = bob.post(table_url, json=set_owner)
            assert commit.status_code == 403 and error(commit)["type"] == "TableActionForbidden"
            # the credentials endpoint and the remote signer follow the same rights
            creds = bob.get(f"{table_url}/credentials")
            assert creds.status_code == 200, creds.text
            sign = f"/catalog/v1/signer/{world.warehouse_id}/tabular-id/{orders}/v1/aws/s3/sign"
            body = {"region": world.seaweed.region, "uri": f"{world.seaweed.endpoint}/{BUCKET}/"
                    f"{urllib.parse.quote(key)}", "headers": {"User-Agent": ["test"]}}
            assert bob.post(sign, json={**body, "method": "GET"}).status_code == 200
            assert bob.post(sign, json={**body, "method": "PUT"}).status_code == 403
            # select is not a right to grant: bob cannot hand his access on
            passed_on = bob.post(f"{PERMS}{world.table_path(orders)}/assignments",
                                 json={"writes": [{"type": "select", "user": "oidc~carol"}]})
            assert passed_on.status_code == 403, passed_on.text
        assert catalog.load_table("sales.orders").scan().to_arrow().num_rows == 3  # nothing was added
    # revoked: bob sees nothing again, and his write is back to "no such table"
    with world.http("bob") as bob:
        config = bob.get("/catalog/v1/config", params={"warehouse": world.warehouse})
        assert config.status_code == 404 and error(config)["type"] == "NoSuchWarehouseException"
        commit = bob.post(table_url, json=set_owner)
        assert commit.status_code == 404 and error(commit)["type"] == "NoSuchTableException"
    with world.http("alice") as alice:
        assert alice.get(table_url).json()["metadata"].get("properties", {}).get("owner") != "bob"


def test_a_grant_and_its_revocation_take_effect_at_once(world: World) -> None:
    """Between bob's calls only alice's grant changes: the checks bob's earlier calls cached are forgotten."""
    orders = world.table_id("sales", "orders")
    with world.http("bob") as bob:
        assert bob.get(f"{world.prefix}/namespaces/sales/tables/orders").status_code == 404
        assert bob.get(f"{world.prefix}/namespaces/sales/tables").status_code == 404
    world.grant("bob", "select", world.table_path(orders))
    catalog = world.catalog("bob")
    assert catalog.list_tables("sales") == [("sales", "orders")]
    assert catalog.load_table("sales.orders").scan().to_arrow().num_rows == 3
    with world.http("alice") as alice:  # alice sees the grant she made
        listed = alice.get(f"{PERMS}{world.table_path(orders)}/assignments", params={"relations": "select"})
        assert listed.json() == {"assignments": [{"type": "select", "user": "oidc~bob"}]}
    world.revoke("bob", "select", world.table_path(orders))
    with pytest.raises(NoSuchTableError):
        catalog.load_table("sales.orders")
    with world.http("bob") as bob:
        assert bob.get(f"{world.prefix}/namespaces/sales/tables").status_code == 404
        assert bob.get(f"{world.prefix}/namespaces").status_code == 404


def test_filtered_lists_paginate_without_skipping_or_repeating(world: World) -> None:
    alice = world.catalog("alice")
    alice.create_namespace("many")
    names = [f"t{i:02d}" for i in range(11)]
    for name in names:
        alice.create_table(f"many.{name}", schema=ROWS.schema)
    granted = ["t01", "t02", "t05", "t09", "t10"]
    grants = [world.table_path(world.table_id("many", name)) for name in granted]
    for path in grants:
        world.grant("bob", "describe", path)
    with world.http("bob") as bob:
        seen, token, pages = [], "", 0
        while token is not None:
            page = bob.get(f"{world.prefix}/namespaces/many/tables", params={"pageSize": 2, "pageToken": token})
            assert page.status_code == 200, page.text
            body = page.json()
            assert len(body["identifiers"]) <= 2
            seen += [i["name"] for i in body["identifiers"]]
            token, pages = body.get("next-page-token"), pages + 1
        assert seen == granted and pages >= 3
    for path in grants:
        world.revoke("bob", "describe", path)
    with world.http("bob") as bob:
        assert bob.get(f"{world.prefix}/namespaces/many/tables").status_code == 404
    with world.http("alice") as owner:
        listed = owner.get(f"{world.prefix}/namespaces/many/tables", params={"pageSize": 100}).json()
        assert [i["name"] for i in listed["identifiers"]] == names


def test_drop_and_move_keep_the_tuples_right(world: World) -> None:
    alice = world.catalog("alice")
    alice.create_namespace("scratch")
    alice.create_namespace("archive")
    alice.create_table("scratch.tmp", schema=ROWS.schema)
    alice.create_table("scratch.keep", schema=ROWS.schema)
    tmp, keep = world.table_id("scratch", "tmp"), world.table_id("scratch", "keep")
    alice.drop_table("scratch.tmp")
    assert not [k for k in world.tuples.keys if world.fga_object("table", tmp) in k]
    alice.rename_table("scratch.keep", "archive.keep")
    parents = [u for (u, r, o) in world.tuples.keys if r == "parent" and o == world.fga_object("table", keep)]
    archive = next(o for (u, r, o) in world.tuples.keys if r == "child" and u == world.fga_object("table", keep))
    assert parents == [archive]
    # a grant on the new namespace now reaches the moved table
    with world.granted("bob", "select", f"/namespace/{archive.removeprefix('namespace:')}"):
        assert world.catalog("bob").load_table("archive.keep").name() == ("archive", "keep")


def test_views_follow_the_same_rules(world: World) -> None:
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField
    from pyiceberg.view.metadata import SQLViewRepresentation, ViewVersion

    alice = world.catalog("alice")
    version = ViewVersion(
        version_id=1, schema_id=0, timestamp_ms=1_700_000_000_000, summary={"engine-name": "test"},
        representations=[SQLViewRepresentation(type="sql", sql="SELECT 1 AS id", dialect="spark")],
        default_namespace=["sales"],
    )
    alice.create_view("sales.daily", Schema(NestedField(1, "id", LongType())), version)
    alice.create_view("sales.weekly", Schema(NestedField(1, "id", LongType())), version)
    with world.http("alice") as owner:
        daily = owner.get(f"{world.prefix}/namespaces/sales/views/daily").json()["metadata"]["view-uuid"]
    assert ("user:oidc~alice", "ownership", world.fga_object("view", daily)) in world.tuples.keys
    orders = world.table_id("sales", "orders")
    with world.granted("bob", "select", world.table_path(orders)), world.http("bob") as bob:
        listed = bob.get(f"{world.prefix}/namespaces/sales/views")
        assert listed.status_code == 200 and listed.json()["identifiers"] == []
        hidden = bob.get(f"{world.prefix}/namespaces/sales/views/weekly")
        assert hidden.status_code == 404 and error(hidden)["type"] == "NoSuchViewException"
        with world.granted("bob", "describe", world.view_path(daily)):
            names = [i["name"] for i in bob.get(f"{world.prefix}/namespaces/sales/views").json()["identifiers"]]
            assert names == ["daily"]
            assert bob.get(f"{world.prefix}/namespaces/sales/views/daily").status_code == 200
            assert bob.get(f"{world.prefix}/namespaces/sales/views/weekly").status_code == 404
            dropped = bob.delete(f"{world.prefix}/namespaces/sales/views/daily")
            assert dropped.status_code == 403 and error(dropped)["type"] == "ViewActionForbidden"
        assert bob.get(f"{world.prefix}/namespaces/sales/views/daily").status_code == 404
    alice.drop_view("sales.weekly")
    alice.drop_view("sales.daily")
    assert not [k for k in world.tuples.keys if "lakekeeper_view:" in k[0] + k[2]]


@pytest.mark.spark
def test_spark_as_bob_selects_the_granted_table_and_cannot_insert(world: World, spark) -> None:
    """Spark's Iceberg REST client with bob's token. Its files go through s3a with keys that may
    write (Spark here cannot use vended credentials), so the refusal of the INSERT is the catalog's."""
    from lakekeeper_host.engines.spark import add_catalog

    orders = world.table_id("sales", "orders")
    name = "bob_" + uuid.uuid4().hex[:6]
    s3 = {"endpoint": world.seaweed.endpoint, "access_key": world.seaweed.access_key,
          "secret_key": world.seaweed.secret_key, "region": world.seaweed.region}
    with world.granted("bob", "select", world.table_path(orders)):
        add_catalog(spark, world.server.catalog_url, world.warehouse, catalog_name=name, s3=s3,
                    token=world.idp.mint("bob"))
        rows = spark.sql(f"SELECT id, name FROM {name}.sales.orders ORDER BY id").collect()
        assert [(r.id, r.name) for r in rows] == [(1, "a"), (2, "b"), (3, "c")]
        assert [r.tableName for r in spark.sql(f"SHOW TABLES IN {name}.sales").collect()] == ["orders"]
        with pytest.raises(Exception, match="(?i)table or view|not found"):
            spark.sql(f"SELECT * FROM {name}.sales.refunds").collect()
        with pytest.raises(Exception, match="(?i)forbidden|not allowed"):
            spark.sql(f"INSERT INTO {name}.sales.orders VALUES (4, 'd')")
        assert world.catalog("alice").load_table("sales.orders").scan().to_arrow().num_rows == 3
    # revoked: the same Spark catalog (Spark caches loaded tables, so a name it has not loaded yet)
    with pytest.raises(Exception, match="(?i)not.found|cannot be found|does not exist"):
        spark.sql(f"SHOW TABLES IN {name}.sales").collect()


def test_a_moved_namespace_takes_its_new_parents_grants(world: World) -> None:
    alice = world.catalog("alice")
    alice.create_namespace("team")
    alice.create_namespace("loose")
    alice.create_table("loose.notes", schema=ROWS.schema)
    with world.http("alice") as owner:
        ids = {n: owner.get(f"{world.prefix}/namespaces/{n}", params={"returnUuid": "true"}).json()["namespace-uuid"]
               for n in ("team", "loose")}
    with world.granted("bob", "select", f"/namespace/{ids['team']}"):
        with world.http("bob") as bob:
            assert bob.get(f"{world.prefix}/namespaces/loose/tables/notes").status_code == 404
            moved = bob.post(f"/management/v1/warehouse/{world.warehouse_id}/namespace/{ids['loose']}/move",
                             json={"destination": ["team", "loose"]})
            assert moved.status_code == 404, moved.text  # bob cannot see "loose"
        with world.http("alice") as owner:
            moved = owner.post(f"/management/v1/warehouse/{world.warehouse_id}/namespace/{ids['loose']}/move",
                               json={"destination": ["team", "loose"]})
            assert moved.status_code == 200, moved.text
        assert [u for (u, r, o) in world.tuples.keys if r == "parent" and o == f"namespace:{ids['loose']}"] == [
            f"namespace:{ids['team']}"]
        table = world.catalog("bob").load_table("team.loose.notes")
        assert table.name() == ("team", "loose", "notes")


def test_roles_are_owned_by_their_creator_and_leave_no_tuples(world: World) -> None:
    with world.http("alice") as alice:
        created = alice.post("/management/v1/role", json={"name": f"analysts-{uuid.uuid4().hex[:6]}"})
        assert created.status_code == 201, created.text
        role = f"role:{created.json()['id']}"
        assert ("user:oidc~alice", "ownership", role) in world.tuples.keys
        assert any(r == "project" and o == role for (_, r, o) in world.tuples.keys)
        role_id = created.json()["id"]
        with world.http("bob") as bob:  # bob's first call registers him (even though it is denied)
            assert bob.get("/catalog/v1/config", params={"warehouse": world.warehouse}).status_code == 404
        members = alice.post(f"/management/v1/role/{role_id}/members",
                             json={"members": [{"type": "user", "id": "oidc~bob"}]})
        assert members.status_code < 300, members.text
        assert ("user:oidc~bob", "assignee", role) in world.tuples.keys
        # a grant to the role reaches its members (as themselves and acting as the role) until removed
        orders = world.table_path(world.table_id("sales", "orders"))
        world.assign(orders, writes=[{"type": "select", "role": role_id}])
        table_url = f"{world.prefix}/namespaces/sales/tables/orders"
        with world.http("bob") as bob:
            assert bob.get(table_url, headers={"x-assume-role": role_id}).status_code == 200
            assert bob.get(table_url).status_code == 200
            removed = alice.delete(f"/management/v1/role/{role_id}/members/user/oidc~bob")
            assert removed.status_code < 300, removed.text
            assert ("user:oidc~bob", "assignee", role) not in world.tuples.keys
            assert bob.get(table_url).status_code == 404
            assert bob.get(table_url, headers={"x-assume-role": role_id}).status_code in (403, 404)
        listed = alice.get("/management/v1/role")
        assert created.json()["id"] in [r["id"] for r in listed.json()["roles"]]
        assert alice.delete(f"/management/v1/role/{created.json()['id']}").status_code == 204
    # deleting the role took its grant on the table with it
    assert not [k for k in world.tuples.keys if role in (k[0].split("#")[0], k[2])]
    with world.http("bob") as bob:  # bob sees no project, so no roles either
        assert bob.get("/management/v1/role").status_code in (403, 404)


def test_describe_only_sees_the_table_but_gets_no_data_access(world: World) -> None:
    refunds = world.table_id("sales", "refunds")
    with world.granted("bob", "describe", world.table_path(refunds)), world.http("bob") as bob:
        table_url = f"{world.prefix}/namespaces/sales/tables/refunds"
        loaded = bob.get(table_url, headers=VENDED)
        assert loaded.status_code == 200, loaded.text
        assert "config" not in loaded.json() and "storage-credentials" not in loaded.json()
        creds = bob.get(f"{table_url}/credentials")
        assert creds.status_code == 403 and error(creds)["type"] == "TableActionForbidden"
        plan = bob.post(f"{table_url}/plan", json={})
        assert plan.status_code == 403 and error(plan)["type"] == "TableActionForbidden"
        signed = bob.post(f"/catalog/v1/signer/{world.warehouse_id}/tabular-id/{refunds}/v1/aws/s3/sign", json={
            "region": world.seaweed.region, "method": "GET", "headers": {},
            "uri": f"{world.seaweed.endpoint}/{BUCKET}/"
                   f"{loaded.json()['metadata-location'].split('://', 1)[1].split('/', 1)[1]}",
        })
        assert signed.status_code == 403, signed.text


def test_users_bob_may_read_and_search_users_but_not_list_them_all(world: World) -> None:
    """Lakekeeper's rules: listing every user needs the server's ``list_users`` (alice, the admin,
    has it; bob gets 403, not a partial list); reading one user by id and searching users are open
    to every authenticated caller (so a grant dialog can find bob); changing a user is for the user
    and the server admins."""
    with world.http("bob") as bob:
        bob.get("/catalog/v1/config", params={"warehouse": world.warehouse})  # registers bob
        listed = bob.get("/management/v1/user")
        assert listed.status_code == 403 and error(listed)["type"] == "ServerActionForbidden"
        assert bob.get("/management/v1/user", params={"name": "bob"}).status_code == 403
        assert bob.get("/management/v1/user/oidc~bob").json()["id"] == "oidc~bob"
        assert bob.get("/management/v1/user/oidc~alice").json()["id"] == "oidc~alice"
        missing = bob.get("/management/v1/user/oidc~nobody")
        assert missing.status_code == 404 and error(missing)["type"] == "UserNotFound"
        found = bob.post("/management/v1/search/user", json={"search": "oidc~alice"})
        assert found.status_code == 200 and [u["id"] for u in found.json()["users"]] == ["oidc~alice"]
        renamed = bob.put("/management/v1/user/oidc~alice", json={"name": "Mallory", "user-type": "human"})
        assert renamed.status_code == 403 and error(renamed)["type"] == "UserActionForbidden"
        assert bob.delete("/management/v1/user/oidc~alice").status_code == 403
        mine = bob.put("/management/v1/user/oidc~bob", json={"name": "Bob", "user-type": "human"})
        assert mine.status_code < 300, mine.text
    with world.http("alice") as alice:
        everyone = alice.get("/management/v1/user", params={"pageSize": 100})
        assert everyone.status_code == 200
        assert {"oidc~alice", "oidc~bob"} <= {u["id"] for u in everyone.json()["users"]}
        assert alice.get("/management/v1/user/oidc~bob").json()["name"] == "Bob"
        assert alice.get("/management/v1/user/oidc~alice").json()["name"] != "Mallory"
