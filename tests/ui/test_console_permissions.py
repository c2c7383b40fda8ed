"""The console's permissions pages in a real browser, with the ``openfga`` authorizer served against
the OpenFGA API double (lakekeeper_testing.openfga_double; no OpenFGA server
can run here): alice signs in, grants bob select on a table, sees it listed, revokes it."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from lakekeeper_testing.oidc import OidcIssuer
from lakekeeper_testing.openfga_double import OpenFgaDouble

# the catalog builder is the plugin's test helper
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "plugins" / "authz-openfga" / "tests"))
from permissions_setup import PERMS, Caller, build_catalog, openfga_oidc_server  # noqa: E402

pytestmark = pytest.mark.slow


def test_grant_and_revoke_on_a_table_through_the_console(page, screenshot, tmp_path):
    double = OpenFgaDouble().start()
    try:
        with OidcIssuer(audience="lakekeeper") as idp:
            server, store_name = openfga_oidc_server(double, idp)
            try:
                alice, bob = Caller(server, idp, "alice"), Caller(server, idp, "bob")
                catalog = build_catalog(server, double, store_name, alice, str(tmp_path / "wh"))

                page.goto(server.url + f"/ui/warehouses/{catalog.warehouse_id}/table?ns=sales&name=orders")
                page.click("#login")
                page.wait_for_selector("#username")
                page.fill("#username", "alice")
                page.click("#kc-login")
                page.wait_for_selector("#table-permissions")
                assert page.locator("nav >> text=Permissions").count() == 1  # shown: the authorizer is not allow-all
                page.click("#table-permissions")
                page.wait_for_url(re.compile(r".*/ui/permissions/table\?.*"))
                assert "read_data" in page.locator("#my-access").inner_text()
                assert "oidc~alice" in page.locator("#assignments").inner_text()

                page.fill("#grant-form input[name=relation]", "select")
                page.select_option("#grant-form select[name=principal-type]", "user")
                page.fill("#grant-form input[name=principal]", "oidc~bob")
                page.click("#grant-form button[type=submit]")
                page.wait_for_selector(".flash.success")
                assert "Granted select for user oidc~bob" in page.locator(".flash.success").inner_text()
                row = page.locator("#assignments tr", has_text="oidc~bob")
                assert row.count() == 1 and "select" in row.inner_text()
                assert "read_data" in bob.actions(catalog.table)  # the grant reached the authorizer
                screenshot(page, "permissions")

                # a grant the authorizer refuses shows the API's ErrorModel message
                page.fill("#grant-form input[name=relation]", "create")
                page.fill("#grant-form input[name=principal]", "oidc~bob")
                page.click("#grant-form button[type=submit]")
                page.wait_for_selector(".flash.error")
                assert "cannot be granted on a table" in page.locator(".flash.error").inner_text()

                row.locator("button", has_text="Revoke").click()
                page.wait_for_selector(".flash.success")
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
            finally:
                server.close()
    finally:
        double.stop()
