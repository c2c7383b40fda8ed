"""A served catalog with the ``openfga`` authorizer for the permissions API and console tests.

A ``lakekeeper serve`` against the OpenFGA API double (``lakekeeper_testing.openfga_double``) with OIDC users from a
local issuer: alice bootstraps and builds project > warehouse ``perms`` > namespace ``sales`` >
table ``orders`` and a role ``analysts`` through the API (the server writes their tuples); bob
has nothing; root is an instance admin.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Iterator
from urllib.parse import quote

import httpx

from lakekeeper_testing.oidc import OidcIssuer
from lakekeeper_testing.openfga_double import OpenFgaDouble
from lakekeeper_testing.server import CatalogServer

PERMS = "/management/v1/permissions"
SCHEMA = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]}


class Caller:
    """An httpx client that sends a fresh token of one OIDC subject with every request."""

    def __init__(self, server: CatalogServer, idp: OidcIssuer, subject: str) -> None:
        self.user_id = f"oidc~{subject}"
        self._idp, self._subject = idp, subject
        self.client = httpx.Client(base_url=server.url, timeout=60)

    def request(self, method: str, path: str, **kwargs) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self._idp.mint(self._subject)}", **kwargs.pop("headers", {})}
        return self.client.request(method, path, headers=headers, **kwargs)

    def get(self, path: str, **kwargs) -> httpx.Response:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, **kwargs) -> httpx.Response:
        return self.request("POST", path, **kwargs)

    def access(self, path: str, **params) -> httpx.Response:
        return self.get(f"{PERMS}{path}/access", params=params)

    def actions(self, path: str, **params) -> list[str]:
        response = self.access(path, **params)
        assert response.status_code == 200, response.text
        return response.json()["allowed-actions"]

    def grant(self, path: str, writes=(), deletes=()) -> httpx.Response:
        return self.post(f"{PERMS}{path}/assignments", json={"writes": list(writes), "deletes": list(deletes)})

    def check(self, operation: dict, identity: dict | None = None) -> httpx.Response:
        return self.post(f"{PERMS}/check", json={"operation": operation, "identity": identity})


class Catalog:
    """What alice built: project > warehouse > namespace ``sales`` > table ``orders``, a role."""

    server_id: str
    project_id: str
    warehouse_id: str
    namespace_id: str
    table_id: str
    role_id: str

    @property
    def table(self) -> str:
        return f"/warehouse/{self.warehouse_id}/table/{self.table_id}"


def openfga_oidc_server(start: Callable[..., CatalogServer], double: OpenFgaDouble, idp: OidcIssuer, *,
                        backend: str = "sqlite", **extra_env: str) -> tuple[CatalogServer, str]:
    """A server ``start`` (``lakekeeper_server_factory``) started on ``backend``, not bootstrapped (no
    quickstart either), and the name of its OpenFGA store."""
    store_name = f"lk-{uuid.uuid4().hex[:8]}"
    server = start({
        "LAKEKEEPER__AUTHZ_BACKEND": "openfga",
        "LAKEKEEPER__OPENFGA__ENDPOINT": double.url,
        "LAKEKEEPER__OPENFGA__STORE_NAME": store_name,
        "LAKEKEEPER__OPENFGA__API_KEY": "fga-api-key",
        "LAKEKEEPER__OPENID_PROVIDER_URI": idp.uri,
        "LAKEKEEPER__OPENID_AUDIENCE": "lakekeeper",
        "LAKEKEEPER__INSTANCE_ADMINS": '["oidc~root"]',
        "LAKEKEEPER__EMBEDDED_QUICKSTART": "false",
        **extra_env,
    }, backend=backend, bootstrap=False, timeout=120)
    return server, store_name


def build_catalog(server: CatalogServer, double: OpenFgaDouble, store_name: str, alice: Caller,
                  warehouse_root: str) -> Catalog:
    """alice builds it through the API; the server writes the parent and ownership tuples of each create."""
    catalog = Catalog()
    assert alice.post("/management/v1/bootstrap", json={"accept-terms-of-use": True}).status_code == 204
    info = alice.get("/management/v1/info").json()
    catalog.server_id, catalog.project_id = info["server-id"], info["default-project-id"]
    made = alice.post("/management/v1/warehouse", json={
        "warehouse-name": "perms", "storage-profile": {"type": "file", "root": warehouse_root}})
    assert made.status_code == 201, made.text
    catalog.warehouse_id = made.json()["warehouse-id"]
    prefix = f"/catalog/v1/{catalog.warehouse_id}"
    assert alice.post(f"{prefix}/namespaces", json={"namespace": ["sales"]}).status_code == 200
    namespace = alice.get(f"{prefix}/namespaces/sales", params={"returnUuid": "true"})
    assert namespace.status_code == 200, namespace.text
    catalog.namespace_id = namespace.json()["namespace-uuid"]
    table = alice.post(f"{prefix}/namespaces/sales/tables", json={"name": "orders", "schema": SCHEMA})
    assert table.status_code == 200, table.text
    catalog.table_id = table.json()["metadata"]["table-uuid"]
    role = alice.post("/management/v1/role", json={"name": "analysts"})
    assert role.status_code == 201, role.text
    catalog.role_id = role.json()["id"]
    tuples = double.store_named(store_name).tuples.keys
    for obj in (f"warehouse:{catalog.warehouse_id}", f"namespace:{catalog.namespace_id}",
                f"lakekeeper_table:{catalog.warehouse_id}/{catalog.table_id}", f"role:{catalog.role_id}"):
        assert (f"user:{quote(alice.user_id, safe='')}", "ownership", obj) in tuples
    return catalog


@contextlib.contextmanager
def served_catalog(start: Callable[..., CatalogServer], double: OpenFgaDouble, idp: OidcIssuer, warehouse_root: str,
                   names: tuple[str, ...], **extra_env: str,
                   ) -> Iterator[tuple[CatalogServer, Catalog, tuple[Caller, ...]]]:
    """An OpenFGA + OIDC server with alice's catalog built (:func:`build_catalog`) and a caller per name
    (the first is alice); the server stops afterwards."""
    server, store_name = openfga_oidc_server(start, double, idp, **extra_env)
    try:
        callers = tuple(Caller(server, idp, name) for name in names)
        yield server, build_catalog(server, double, store_name, callers[0], warehouse_root), callers
    finally:
        server.close()
