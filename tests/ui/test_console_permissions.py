"""The console's permission pages in a real browser, with the ``openfga`` authorizer served against the
OpenFGA API double (lakekeeper_testing.openfga_double; no OpenFGA server can run
here), on SQLite and PostgreSQL: alice grants and revokes, sees why bob has access (directly, from the
namespace above, through a role), picks users and roles by name; bob, with partial access, finds only
what he may see and reads only the data he may read."""

from __future__ import annotations

import re
import sys
import uuid
from pathlib import Path
from types import SimpleNamespace

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog

from lakekeeper_testing.oidc import OidcIssuer
from lakekeeper_testing.openfga_double import OpenFgaDouble

# the catalog builder is the plugin's test helper
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "plugins" / "authz-openfga" / "tests"))
from openfga_servers import openfga_server  # noqa: E402
from permissions_setup import PERMS, SCHEMA, Caller, build_catalog  # noqa: E402

pytestmark = pytest.mark.slow
ROWS = pa.table({"id": pa.array([1, 2, 3], pa.int64())})


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def fga(request, tmp_path_factory, lakekeeper_server_factory):
    """alice's catalog (warehouse ``perms``: ``sales.orders``, role ``analysts``) on a served catalog with
    the openfga authorizer, per backend; bob and carol start with nothing."""
    double = OpenFgaDouble().start()
    try:
        with OidcIssuer(audience="lakekeeper", token_lifetime=3600) as idp:
            store = f"lk-{uuid.uuid4().hex[:8]}"
            settings = {"LAKEKEEPER__OPENFGA__API_KEY": "fga-api-key", "LAKEKEEPER__INSTANCE_ADMINS": '["oidc~root"]',
                        "LAKEKEEPER__EMBEDDED_QUICKSTART": "false"}
            with openfga_server(lakekeeper_server_factory, request.param, double, idp, store, **settings) as server:
                alice, bob, carol = (Caller(server, idp, name) for name in ("alice", "bob", "carol"))
                catalog = build_catalog(server, double, store, alice, str(tmp_path_factory.mktemp("perms")))
                yield SimpleNamespace(server=server, idp=idp, alice=alice, bob=bob, carol=carol, catalog=catalog)
    finally:
        double.stop()


def sign_in(page, url: str, user: str) -> None:
    page.goto(url)
    page.click("#login")
    page.wait_for_selector("#username")
    page.fill("#username", user)
    page.click("#kc-login")
    page.wait_for_url(re.compile(r".*/ui/.*"))


def test_grant_and_revoke_on_a_table_through_the_console(fga, page):
    server, catalog, bob = fga.server, fga.catalog, fga.bob
    page.goto(server.url + "/ui/warehouses")
    assert page.locator("#nav a").count() == 0  # signed out, only signing in works
    assert page.locator("#nav-login").is_visible()
    sign_in(page, server.url + f"/ui/warehouses/{catalog.warehouse_id}/table?ns=sales&name=orders", "alice")
    page.wait_for_selector("#table-permissions")
    assert page.locator("#nav >> text=Permissions").count() == 1  # shown: the authorizer is not allow-all
    page.click("#table-permissions")
    page.wait_for_url(re.compile(r".*/ui/permissions/table\?.*"))
    assert "read_data" in page.locator("#my-access").inner_text()
    assert "oidc~alice" in page.locator("#assignments").inner_text()

    offered = page.locator("#grant-form select[name=relation] option").all_inner_texts()
    # only what alice may grant on a table, as the API says (no create, no project roles)
    assert {"ownership", "select", "describe", "modify", "pass_grants", "manage_grants"} <= set(offered)
    assert not {"create", "project_admin", "assignee"} & set(offered)
    page.select_option("#grant-form select[name=relation]", "select")
    page.select_option("#grant-form select[name=principal-type]", "user")
    page.fill("#grant-form input[name=principal]", "oidc~bob")
    page.click("#grant-form button[type=submit]")
    page.wait_for_selector(".flash.success")
    assert "Granted select for user oidc~bob" in page.locator(".flash.success").inner_text()
    row = page.locator("#assignments tr", has_text="oidc~bob")
    assert row.count() == 1 and "select" in row.inner_text()
    assert "read_data" in bob.actions(catalog.table)  # the grant reached the authorizer

    # a grant the authorizer refuses (not offered by the form, posted anyway) shows the API's message
    page.evaluate("""() => { const o = document.createElement('option'); o.value = o.text = 'create';
                             document.querySelector('#grant-form select[name=relation]').add(o); }""")
    page.select_option("#grant-form select[name=relation]", "create")
    page.fill("#grant-form input[name=principal]", "oidc~bob")
    page.click("#grant-form button[type=submit]")
    page.wait_for_selector(".flash.error")
    assert "cannot be granted on a table" in page.locator(".flash.error").inner_text()

    page.dialogs.update(asked=[])
    row.locator("button", has_text="Revoke").click()
    page.wait_for_selector(".flash.success")
    assert "lose what this grant gives them" in page.dialogs["asked"][0]
    assert "Revoked select for user oidc~bob" in page.locator(".flash.success").inner_text()
    assert page.locator("#assignments tr", has_text="oidc~bob").count() == 0
    assert bob.get(f"{PERMS}{catalog.table}/access").status_code == 404

    # managed access on the warehouse, from its own permissions page
    page.goto(server.url + f"/ui/warehouses/{catalog.warehouse_id}")
    page.click("a.perm-link")
    assert "off" in page.locator("#managed-access").inner_text()
    page.click("text=Turn managed access on")
    page.wait_for_selector(".flash.success")
    assert "is on" in page.locator("#managed-access").inner_text()


def test_why_bob_has_access_and_what_he_sees_with_partial_access(fga, page, browser):
    server, catalog, alice, bob, carol = fga.server, fga.catalog, fga.alice, fga.bob, fga.carol
    prefix = f"/catalog/v1/{catalog.warehouse_id}"
    for path, body in ((f"{prefix}/namespaces/sales/tables", {"name": "ledger", "schema": SCHEMA}),
                       (f"{prefix}/namespaces", {"namespace": ["finance"]}),
                       (f"{prefix}/namespaces/finance/tables", {"name": "payroll", "schema": SCHEMA})):
        assert alice.post(path, json=body).status_code == 200
    lake = RestCatalog("alice", uri=server.catalog_url, warehouse="perms", token=fga.idp.mint("alice", expires_in=3600))
    for name in ("sales.orders", "sales.ledger", "finance.payroll"):
        lake.load_table(name).append(ROWS)
    ids = {name: lake.load_table(name).metadata.table_uuid for name in ("sales.ledger", "finance.payroll")}

    # bob signs in once (the console registers him), then alice gives him partial access:
    # describe on namespace sales (inherited by its tables), describe on orders (direct), select on
    # orders through role analysts
    bob_page = browser.new_context(viewport={"width": 1360, "height": 900}).new_page()
    sign_in(bob_page, server.url + "/ui/", "bob")
    assert alice.grant(f"/namespace/{catalog.namespace_id}", writes=[{"type": "describe", "user": bob.user_id}]) \
        .status_code == 204
    assert alice.grant(catalog.table, writes=[{"type": "describe", "user": bob.user_id},
                                              {"type": "select", "role": catalog.role_id}]).status_code == 204
    added = alice.post(f"/management/v1/role/{catalog.role_id}/members",
                       json={"members": [{"type": "user", "id": bob.user_id}]})
    assert added.status_code in (200, 201), added.text

    # alice asks why bob may read orders: she picks him by name
    sign_in(page, server.url + f"/ui/warehouses/{catalog.warehouse_id}/table?ns=sales&name=orders", "alice")
    page.click("#table-permissions")
    page.select_option("#access-form select[name=principal-type]", "user")
    page.fill("#access-form input[name=principal]", "bo")
    page.click("#access-form .suggestions button:has-text('Bob')")
    assert page.locator("#access-form input[name=principal]").input_value() == bob.user_id
    page.click("#access-form button[type=submit]")
    page.wait_for_selector("#access-reasons")
    assert "read_data" in page.locator("#explained-actions").inner_text()
    reasons = page.locator("#access-reasons tbody").inner_text()
    assert "direct" in reasons
    assert "inherited from namespace sales" in reasons
    assert "through role analysts" in reasons
    assert "analysts" in page.locator("#effective-access").inner_text()

    # the grant form's picker finds roles too
    page.select_option("#grant-form select[name=relation]", "describe")
    page.select_option("#grant-form select[name=principal-type]", "role")
    page.fill("#grant-form input[name=principal]", "analy")
    page.click("#grant-form .suggestions button:has-text('analysts')")
    page.click("#grant-form button[type=submit]")
    assert f"Granted describe for role {catalog.role_id}" in page.locator(".flash.success").inner_text()

    # bob: the search finds what he may see only; he reads the data he may read only
    base = f"{server.url}/ui/warehouses/{catalog.warehouse_id}"
    bob_page.goto(f"{base}/search?q=payroll")
    assert "Nothing you may see matches" in bob_page.locator("#search-results").inner_text()
    bob_page.goto(f"{base}/search?q=e")
    found = bob_page.locator("#search-results").inner_text()
    assert "sales.ledger" in found and "sales.orders" in found and "finance" not in found
    assert bob_page.locator(".sidebar a[data-ns='finance']").count() == 0
    bob_page.goto(f"{base}/table?ns=sales&name=ledger&tab=data")
    refused = bob_page.locator("#preview-error").inner_text()
    assert "Not allowed to read data" in refused and "HTTP 403" in refused
    bob_page.goto(f"{base}/table?ns=sales&name=orders&tab=data")
    assert bob_page.locator("#preview tbody tr").count() == 3
    bob_page.context.close()

    # the same rules through the API
    management = f"/management/v1/warehouse/{catalog.warehouse_id}"
    assert bob.get(f"{management}/table/{ids['sales.ledger']}/preview").status_code == 403
    assert bob.get(f"{management}/table/{ids['finance.payroll']}/preview").status_code == 404
    assert bob.get(f"{management}/table/{ids['finance.payroll']}/column-statistics").status_code == 404
    assert bob.get(f"{management}/table/{catalog.table_id}/column-statistics").json()["record-count"] == 3
    assert bob.post(f"{management}/search-tabular", json={"search": "payroll"}).json()["tabulars"] == []
    assert bob.post(f"{management}/search-namespace", json={"search": "fin"}).json()["namespaces"] == []
    assert alice.post(f"{management}/search-namespace", json={"search": "fin"}).json()["namespaces"]
    assert carol.post(f"{management}/search-tabular", json={"search": "orders"}).status_code == 404
