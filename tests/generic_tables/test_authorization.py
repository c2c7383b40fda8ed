"""Every Generic Table API route asks the authorizer (in-process app, SQLite and PostgreSQL), through
a test-only authorizer that denies what a test lists: a generic table the caller may not see
answers exactly as a missing one (404) on every route and drops out of lists; one it may see but
not act on answers 403; creating needs ``create_generic_table`` on the namespace, listing
``list_generic_tables``, renaming ``rename`` on the table and ``create_generic_table`` at the
destination. (The OpenFGA plugin's own end-to-end test: plugins/authz-openfga/tests/test_generic_tables.py.)"""

from __future__ import annotations

import pytest

from lakekeeper_host import hookimpl
from lakekeeper_host.app import create_app
from lakekeeper_host.config import load_settings
from lakekeeper_host.plugins import make_plugin_manager
from lakekeeper_host.registry import BackendSpec
from lakekeeper_host.service.authz import AuthorizerBase
from lakekeeper_testing.services import backend_database

DENIED: set[tuple[str, str, str]] = set()  # (kind, id, action); action "*" denies everything


class DenyListedAuthorizer(AuthorizerBase):
    name = "deny-listed"

    async def is_allowed(self, actor, action, resource):
        if action == "list_everything":  # else a list would skip filtering (Lakekeeper's shortcut)
            return False
        return not ({(resource.kind, resource.id, action), (resource.kind, resource.id, "*")} & DENIED)


class DenyListedPlugin:
    @hookimpl
    def lakekeeper_authorizers(self):
        async def build(config, ctx):
            return DenyListedAuthorizer()

        return [BackendSpec(name="deny-listed", factory=build)]


@pytest.fixture(params=["sqlite", "postgres"])
async def client(request, tmp_path):
    DENIED.clear()
    with backend_database(request.param) as db_env:
        environ = {"LAKEKEEPER__DATA_DIR": str(tmp_path), "LAKEKEEPER__DEBUG__MIGRATE_BEFORE_SERVE": "true",
                   "LAKEKEEPER__EMBEDDED_QUICKSTART": "false", "LAKEKEEPER__AUTHZ_BACKEND": "deny-listed", **db_env}
        app = create_app(load_settings(environ),
                         make_plugin_manager(extra_plugins=[(DenyListedPlugin(), "deny-listed-authz")]))
        async with app.test_app() as test_app:
            client = test_app.test_client()
            assert (await client.post("/management/v1/bootstrap", json={"accept-terms-of-use": True})).status_code \
                == 204
            created = await client.post("/management/v1/warehouse", json={
                "warehouse-name": "wh", "storage-profile": {"type": "file", "root": str(tmp_path / "wh")}})
            assert created.status_code == 201, await created.get_data()
            client.warehouse_id = (await created.get_json())["warehouse-id"]
            for namespace in ("ns", "other"):
                made = await client.post(f"/catalog/v1/{client.warehouse_id}/namespaces",
                                         json={"namespace": [namespace]})
                assert made.status_code == 200
            yield client
    DENIED.clear()


async def _error(response) -> dict:
    body = await response.get_json()
    assert set(body) == {"error"} and body["error"]["code"] == response.status_code, body
    return body["error"]


async def _ids(client, base: str) -> dict[str, str]:
    listing = await (await client.get(base)).get_json()
    return {i["name"]: i["id"] for i in listing["identifiers"]}


async def test_hidden_generic_tables_are_missing_ones_and_denied_actions_are_403(client):
    wh = client.warehouse_id
    base = f"/lakekeeper/v1/{wh}/namespaces/ns/generic-tables"
    for name in ("open", "secret"):
        assert (await client.post(base, json={"name": name, "format": "lance"})).status_code == 200
    ids = await _ids(client, base)
    DENIED.add(("generic_table", ids["secret"], "*"))

    assert list(await _ids(client, base)) == ["open"]  # lists keep what the caller may see
    missing = await _error(await client.get(f"{base}/nothing"))
    for response in (await client.get(f"{base}/secret"), await client.get(f"{base}/secret/credentials"),
                     await client.delete(f"{base}/secret")):
        assert response.status_code == 404
        error = await _error(response)
        assert error["type"] == "NoSuchGenericTableException"
        assert error["message"] == missing["message"].replace("nothing", "secret")
    rename = await client.post(f"/lakekeeper/v1/{wh}/generic-tables/rename", json={
        "source": {"namespace": ["ns"], "name": "secret"}, "destination": {"namespace": ["ns"], "name": "x"}})
    assert rename.status_code == 404
    protection = await client.get(f"/management/v1/warehouse/{wh}/generic-table/{ids['secret']}/protection")
    assert protection.status_code == 404 and (await _error(protection))["type"] == "GenericTableNotFound"

    # visible but not allowed: 403
    DENIED.update({("generic_table", ids["open"], "drop"), ("generic_table", ids["open"], "rename"),
                   ("generic_table", ids["open"], "read_data"), ("generic_table", ids["open"], "write_data"),
                   ("generic_table", ids["open"], "set_protection")})
    for response in (await client.delete(f"{base}/open"), await client.get(f"{base}/open/credentials"),
                     await client.post(f"/lakekeeper/v1/{wh}/generic-tables/rename", json={
                         "source": {"namespace": ["ns"], "name": "open"},
                         "destination": {"namespace": ["ns"], "name": "x"}}),
                     await client.post(f"/management/v1/warehouse/{wh}/generic-table/{ids['open']}/protection",
                                       json={"protected": True})):
        assert response.status_code == 403, await response.get_data()
    loaded = await client.get(f"{base}/open")
    assert loaded.status_code == 200 and set(await loaded.get_json()) == {"table"}  # no data access, no config
    assert list(await _ids(client, base)) == ["open"]


async def test_namespace_actions_gate_create_list_and_rename_destination(client):
    wh = client.warehouse_id
    namespaces = (await (await client.get(f"/catalog/v1/{wh}/namespaces",
                                          query_string={"returnUuids": "true"})).get_json())
    ns_id = dict(zip((n[0] for n in namespaces["namespaces"]), namespaces["namespace-uuids"], strict=True))
    base = f"/lakekeeper/v1/{wh}/namespaces"
    assert (await client.post(f"{base}/ns/generic-tables", json={"name": "t", "format": "csv"})).status_code == 200

    DENIED.add(("namespace", ns_id["other"], "create_generic_table"))
    refused = await client.post(f"{base}/other/generic-tables", json={"name": "t", "format": "csv"})
    assert refused.status_code == 403 and (await _error(refused))["type"] == "NamespaceActionForbidden"
    moved = await client.post(f"/lakekeeper/v1/{wh}/generic-tables/rename", json={
        "source": {"namespace": ["ns"], "name": "t"}, "destination": {"namespace": ["other"], "name": "t"}})
    assert moved.status_code == 403
    DENIED.add(("namespace", ns_id["ns"], "list_generic_tables"))
    assert (await client.get(f"{base}/ns/generic-tables")).status_code == 403
    DENIED.add(("namespace", ns_id["ns"], "*"))  # a namespace the caller may not see at all
    hidden = await client.get(f"{base}/ns/generic-tables")
    assert hidden.status_code == 404 and (await _error(hidden))["type"] == "NoSuchNamespaceException"
