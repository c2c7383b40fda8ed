"""The one table of Trino access-control cases both ways of answering Trino must agree on: the Rego
bundle in ``deploy/trino-opa`` on a real OPA engine (batch checks against the catalog) and the
catalog's own Trino policy endpoint (``/trino/{key}/allow`` and ``/batch``).

The world (``build_world``): alice bootstraps and owns warehouse ``lake`` > namespace ``sales`` >
tables ``orders``, ``customers`` and view ``orders_summary``; bob (the reader) holds ``select`` on
``orders`` only; carol (the stranger) holds nothing; dave is a member of role ``analysts``, which
holds ``select`` on the whole namespace. Trino's catalog ``lake`` is the warehouse; ``system`` is
Trino's own catalog, open to everyone; ``iceberg`` is a second Trino catalog on ``lake`` (a
configured pair); ``hive`` is a catalog the policy knows nothing about.

Each case: a name, the endpoint (``allow``: a single decision; ``batch``: the kept indices of
``filterResources``), Trino's ``input.action``, and the expected result per identity.
"""

from __future__ import annotations

import time
from typing import Any

import httpx

from lakekeeper_testing.server import CatalogServer

SCHEMA = {
    "type": "struct",
    "schema-id": 0,
    "fields": [
        {"id": 1, "name": "id", "type": "long", "required": False},
        {"id": 2, "name": "amount", "type": "double", "required": False},
    ],
}
IDENTITIES = ("owner", "reader", "stranger", "member")
USERS = {"owner": "alice", "reader": "bob", "stranger": "carol", "member": "dave"}
# the Rego bundle's technical user (client credentials of client ``trino-opa``): the project's
# ``security_admin`` lets it list the warehouses and ask batch checks about others there
# (``read_assignments``, which Lakekeeper's model gives only to who may grant), without data rights
OPA_CLIENT = "trino-opa"
# Trino catalogs not named like their warehouse (both ways are configured with these pairs)
CATALOGS = {"iceberg": "lake"}
OPA_USER = f"oidc~service-account-{OPA_CLIENT}"


def table(name: str, schema: str = "sales", catalog: str = "lake", **extra: Any) -> dict:
    return {"table": {"catalogName": catalog, "schemaName": schema, "tableName": name, **extra}}


def schema(name: str, catalog: str = "lake") -> dict:
    return {"schema": {"catalogName": catalog, "schemaName": name}}


def catalog(name: str) -> dict:
    return {"catalog": {"name": name}}


def every(value: Any) -> dict[str, Any]:
    return dict.fromkeys(IDENTITIES, value)


def only_owner(yes: Any = True, no: Any = False) -> dict[str, Any]:
    return {"owner": yes, "reader": no, "stranger": no, "member": no}


def seers(yes: Any = True, no: Any = False, *, reader: Any = None) -> dict[str, Any]:
    """Who may see: everyone but the stranger (the reader as given, else like the others)."""
    return {"owner": yes, "reader": yes if reader is None else reader, "stranger": no, "member": yes}


ORDERS_COLUMNS = table("orders", columns=["id", "amount"])
CASES: list[tuple[str, str, dict, dict[str, Any]]] = [
    ("execute query", "allow", {"operation": "ExecuteQuery"}, every(True)),
    (
        "impersonate alice",
        "allow",
        {"operation": "ImpersonateUser", "resource": {"user": {"user": "alice"}}},
        only_owner(),
    ),
    (
        "view queries of bob",
        "allow",
        {"operation": "ViewQueryOwnedBy", "resource": {"user": {"user": "bob"}}},
        {"owner": False, "reader": True, "stranger": False, "member": False},
    ),
    (
        "kill queries of carol",
        "allow",
        {"operation": "KillQueryOwnedBy", "resource": {"user": {"user": "carol"}}},
        {"owner": False, "reader": False, "stranger": True, "member": False},
    ),
    ("read system information", "allow", {"operation": "ReadSystemInformation"}, every(False)),
    (
        "set a system session property",
        "allow",
        {"operation": "SetSystemSessionProperty", "resource": {"systemSessionProperty": {"name": "query_max_memory"}}},
        every(True),
    ),
    (
        "set a session property of lake",
        "allow",
        {
            "operation": "SetCatalogSessionProperty",
            "resource": {"catalogSessionProperty": {"catalogName": "lake", "propertyName": "compression_codec"}},
        },
        seers(),
    ),
    ("access lake", "allow", {"operation": "AccessCatalog", "resource": catalog("lake")}, seers()),
    (
        "access iceberg, the warehouse lake",
        "allow",
        {"operation": "AccessCatalog", "resource": catalog("iceberg")},
        seers(),
    ),
    (
        "select from customers through iceberg",
        "allow",
        {"operation": "SelectFromColumns", "resource": table("customers", catalog="iceberg", columns=["id"])},
        seers(reader=False),
    ),
    ("access system", "allow", {"operation": "AccessCatalog", "resource": catalog("system")}, every(True)),
    ("access an unknown catalog", "allow", {"operation": "AccessCatalog", "resource": catalog("hive")}, every(False)),
    (
        "filter catalogs",
        "batch",
        {"operation": "FilterCatalogs", "filterResources": [catalog("hive"), catalog("lake"), catalog("system")]},
        seers([1, 2], [2]),
    ),
    # an entry without a name is denied and the indices after it do not shift
    (
        "filter catalogs, one malformed",
        "batch",
        {"operation": "FilterCatalogs", "filterResources": [{"catalog": {}}, catalog("lake"), {}, catalog("system")]},
        seers([1, 3], [3]),
    ),
    ("create a catalog", "allow", {"operation": "CreateCatalog", "resource": catalog("lake2")}, every(False)),
    ("show schemas of lake", "allow", {"operation": "ShowSchemas", "resource": catalog("lake")}, seers()),
    (
        "filter schemas",
        "batch",
        {
            "operation": "FilterSchemas",
            "filterResources": [
                schema("information_schema"),
                schema("sales"),
                schema("missing"),
                schema("sales", "system"),
            ],
        },
        seers([0, 1, 3], [3]),
    ),
    (
        "create schema",
        "allow",
        {
            "operation": "CreateSchema",
            "resource": {"schema": {"catalogName": "lake", "schemaName": "marketing", "properties": {}}},
        },
        only_owner(),
    ),
    ("create a nested schema", "allow", {"operation": "CreateSchema", "resource": schema("sales.eu")}, only_owner()),
    ("drop schema", "allow", {"operation": "DropSchema", "resource": schema("sales")}, only_owner()),
    (
        "drop information_schema",
        "allow",
        {"operation": "DropSchema", "resource": schema("information_schema")},
        every(False),
    ),
    (
        "rename schema",
        "allow",
        {"operation": "RenameSchema", "resource": schema("sales"), "targetResource": schema("revenue")},
        every(False),
    ),
    ("show create schema", "allow", {"operation": "ShowCreateSchema", "resource": schema("sales")}, seers()),
    ("show tables", "allow", {"operation": "ShowTables", "resource": schema("sales")}, seers()),
    (
        "filter tables",
        "batch",
        {
            "operation": "FilterTables",
            "filterResources": [
                table("customers"),
                table("orders"),
                table("orders_summary"),
                table("missing"),
                table("orders", "other"),
                table("tables", "information_schema"),
            ],
        },
        seers([0, 1, 2, 5], [], reader=[1, 5]),
    ),
    (
        "filter columns of orders",
        "batch",
        {"operation": "FilterColumns", "filterResources": [ORDERS_COLUMNS]},
        seers([0, 1], []),
    ),
    (
        "filter columns of customers",
        "batch",
        {"operation": "FilterColumns", "filterResources": [table("customers", columns=["id", "amount"])]},
        seers([0, 1], [], reader=[]),
    ),
    # without opa.policy.batched-uri Trino sends a Filter* operation's resources one by one to allow
    (
        "filter columns without the batched URI",
        "allow",
        {"operation": "FilterColumns", "resource": ORDERS_COLUMNS},
        seers(),
    ),
    (
        "filter one table without the batched URI",
        "allow",
        {"operation": "FilterTables", "resource": table("customers")},
        seers(reader=False),
    ),
    ("show columns", "allow", {"operation": "ShowColumns", "resource": table("orders")}, seers()),
    (
        "show create table",
        "allow",
        {"operation": "ShowCreateTable", "resource": table("customers")},
        seers(reader=False),
    ),
    ("select from orders", "allow", {"operation": "SelectFromColumns", "resource": ORDERS_COLUMNS}, seers()),
    (
        "select from customers",
        "allow",
        {"operation": "SelectFromColumns", "resource": table("customers", columns=["id"])},
        seers(reader=False),
    ),
    (
        "select no column (count(*))",
        "allow",
        {"operation": "SelectFromColumns", "resource": table("orders", columns=[])},
        seers(),
    ),
    (
        "select from a metadata table",
        "allow",
        {"operation": "SelectFromColumns", "resource": table("orders$snapshots", columns=["snapshot_id"])},
        seers(),
    ),
    (
        "select from the view",
        "allow",
        {"operation": "SelectFromColumns", "resource": table("orders_summary", columns=["id"])},
        seers(reader=False),
    ),
    (
        "select from information_schema",
        "allow",
        {"operation": "SelectFromColumns", "resource": table("tables", "information_schema", columns=["table_name"])},
        seers(),
    ),
    (
        "select from a missing table",
        "allow",
        {"operation": "SelectFromColumns", "resource": table("missing", columns=["id"])},
        every(False),
    ),
    (
        "select from system",
        "allow",
        {"operation": "SelectFromColumns", "resource": table("queries", "runtime", "system", columns=["query_id"])},
        every(True),
    ),
    (
        "select from an unknown catalog",
        "allow",
        {"operation": "SelectFromColumns", "resource": table("orders", catalog="hive", columns=["id"])},
        every(False),
    ),
    (
        "define a view over orders",
        "allow",
        {"operation": "CreateViewWithSelectFromColumns", "resource": ORDERS_COLUMNS},
        seers(),
    ),
    ("insert into orders", "allow", {"operation": "InsertIntoTable", "resource": table("orders")}, only_owner()),
    ("delete from orders", "allow", {"operation": "DeleteFromTable", "resource": table("orders")}, only_owner()),
    ("truncate orders", "allow", {"operation": "TruncateTable", "resource": table("orders")}, only_owner()),
    (
        "update orders",
        "allow",
        {"operation": "UpdateTableColumns", "resource": table("orders", columns=["amount"])},
        only_owner(),
    ),
    (
        "insert into the view",
        "allow",
        {"operation": "InsertIntoTable", "resource": table("orders_summary")},
        every(False),
    ),
    ("create table", "allow", {"operation": "CreateTable", "resource": table("returns", properties={})}, only_owner()),
    (
        "create table in a missing schema",
        "allow",
        {"operation": "CreateTable", "resource": table("returns", "missing")},
        every(False),
    ),
    ("drop table", "allow", {"operation": "DropTable", "resource": table("orders")}, only_owner()),
    (
        "rename table",
        "allow",
        {"operation": "RenameTable", "resource": table("orders"), "targetResource": table("orders_2024")},
        only_owner(),
    ),
    (
        "rename table into another catalog",
        "allow",
        {"operation": "RenameTable", "resource": table("orders"), "targetResource": table("orders", catalog="hive")},
        every(False),
    ),
    (
        "set table properties",
        "allow",
        {"operation": "SetTableProperties", "resource": table("orders", properties={"format_version": 2})},
        only_owner(),
    ),
    ("comment on a column", "allow", {"operation": "SetColumnComment", "resource": table("orders")}, only_owner()),
    ("add a column", "allow", {"operation": "AddColumn", "resource": table("customers")}, only_owner()),
    ("create view", "allow", {"operation": "CreateView", "resource": table("big_orders")}, only_owner()),
    ("drop view", "allow", {"operation": "DropView", "resource": table("orders_summary")}, only_owner()),
    (
        "rename view",
        "allow",
        {"operation": "RenameView", "resource": table("orders_summary"), "targetResource": table("summary")},
        only_owner(),
    ),
    (
        "create materialized view",
        "allow",
        {"operation": "CreateMaterializedView", "resource": table("mv")},
        only_owner(),
    ),
    (
        "change a table's owner",
        "allow",
        {"operation": "SetTableAuthorization", "resource": table("orders"), "grantee": {"name": "bob", "type": "USER"}},
        every(False),
    ),
    (
        "grant select through Trino",
        "allow",
        {
            "operation": "GrantTablePrivilege",
            "resource": table("orders"),
            "grantee": {"principals": [{"name": "bob", "type": "USER"}], "privilege": "SELECT", "grantOption": False},
        },
        every(False),
    ),
    (
        "execute a function in system",
        "allow",
        {
            "operation": "ExecuteFunction",
            "resource": {"function": {"catalogName": "system", "schemaName": "builtin", "functionName": "abs"}},
        },
        every(True),
    ),
    (
        "execute a procedure of lake",
        "allow",
        {
            "operation": "ExecuteProcedure",
            "resource": {
                "function": {"catalogName": "lake", "schemaName": "system", "functionName": "rollback_to_snapshot"}
            },
        },
        every(False),
    ),
    (
        "optimize orders",
        "allow",
        {
            "operation": "ExecuteTableProcedure",
            "resource": {**table("orders"), "function": {"functionName": "optimize"}},
        },
        only_owner(),
    ),
    (
        "an operation this policy does not know",
        "allow",
        {"operation": "FrobnicateTable", "resource": table("orders")},
        every(False),
    ),
]


def trino_input(identity: str, action: dict) -> dict:
    """Trino's input document for ``identity``'s user."""
    return {
        "context": {"identity": {"user": USERS[identity], "groups": []}, "softwareStack": {"trinoVersion": "476"}},
        "action": action,
    }


def build_world(server: CatalogServer, token: Any, warehouse_root: str) -> dict[str, str]:
    """alice builds the world through the API; ``token(user)`` mints a user's bearer token."""
    client = httpx.Client(base_url=server.url, timeout=60)

    def call(method: str, path: str, user: str = "alice", **kwargs) -> httpx.Response:
        response = client.request(method, path, headers={"Authorization": f"Bearer {token(user)}"}, **kwargs)
        assert response.status_code < 300, f"{method} {path}: {response.status_code} {response.text}"
        return response

    call("POST", "/management/v1/bootstrap", json={"accept-terms-of-use": True})
    warehouse_id = call(
        "POST",
        "/management/v1/warehouse",
        json={"warehouse-name": "lake", "storage-profile": {"type": "file", "root": warehouse_root}},
    ).json()["warehouse-id"]
    prefix = f"/catalog/v1/{warehouse_id}"
    call("POST", f"{prefix}/namespaces", json={"namespace": ["sales"]})
    namespace_id = call("GET", f"{prefix}/namespaces/sales", params={"returnUuid": "true"}).json()["namespace-uuid"]
    ids = {"warehouse": warehouse_id, "namespace": namespace_id}
    for name in ("orders", "customers"):
        made = call("POST", f"{prefix}/namespaces/sales/tables", json={"name": name, "schema": SCHEMA})
        ids[name] = made.json()["metadata"]["table-uuid"]
    view = call(
        "POST",
        f"{prefix}/namespaces/sales/views",
        json={
            "name": "orders_summary",
            "schema": SCHEMA,
            "properties": {},
            "view-version": {
                "version-id": 1,
                "schema-id": 0,
                "timestamp-ms": int(time.time() * 1000),
                "summary": {"operation": "create", "engine-name": "trino"},
                "representations": [{"type": "sql", "dialect": "trino", "sql": "SELECT * FROM orders"}],
                "default-namespace": ["sales"],
            },
        },
    )
    ids["orders_summary"] = view.json()["metadata"]["view-uuid"]
    # a generic table is no Trino table: FilterTables never keeps it
    call("POST", f"/lakekeeper/v1/{warehouse_id}/namespaces/sales/generic-tables", json={"name": "frames",
                                                                                      "format": "lance"})
    role_id = call("POST", "/management/v1/role", json={"name": "analysts"}).json()["id"]
    perms = "/management/v1/permissions"
    call(
        "POST",
        f"{perms}/warehouse/{warehouse_id}/table/{ids['orders']}/assignments",
        json={"writes": [{"type": "select", "user": "oidc~bob"}]},
    )
    call(
        "POST", f"{perms}/namespace/{namespace_id}/assignments", json={"writes": [{"type": "select", "role": role_id}]}
    )
    call("POST", f"{perms}/role/{role_id}/assignments", json={"writes": [{"type": "assignee", "user": "oidc~dave"}]})
    call("POST", f"{perms}/project/assignments", json={"writes": [{"type": "security_admin", "user": OPA_USER}]})
    ids["role"] = role_id
    return ids
