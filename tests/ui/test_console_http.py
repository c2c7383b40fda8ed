"""The console over plain HTTP (no browser): pagination with the API's page tokens, CSRF, the
ErrorModel on failures, view and task pages, the switch that turns the console off, and the forms
generated from storage plugins' classes."""

from __future__ import annotations

import html
import re

import httpx
import pytest

from lakekeeper_host.ui.forms import FormSection, fields_of, read_section

SCHEMA = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]}


@pytest.fixture(scope="module")
def demo(server, demo_warehouse_id):
    """The embedded quickstart's ``demo`` warehouse: (warehouse id, catalog client on its prefix)."""
    config = httpx.get(server.url + "/catalog/v1/config", params={"warehouse": "demo"}).json()
    prefix = config["defaults"]["prefix"]
    warehouse_id = demo_warehouse_id
    with httpx.Client(base_url=f"{server.catalog_url}/v1/{prefix}", timeout=30) as rest:
        yield warehouse_id, rest


def csrf_of(page: httpx.Response) -> str:
    return re.search(r'name="csrf_token" value="([^"]+)"', page.text).group(1)


def sign_in(console: httpx.Client, idp, user: str, next_path: str = "/ui/warehouses") -> tuple[str, str]:
    """Sign in through the issuer's form as a browser would; (the authorization URL the console sent
    the browser to, the console callback URL the issuer sent it back to)."""
    to_idp = console.get("/ui/login", params={"next": next_path})
    assert to_idp.status_code == 302
    form_page = httpx.get(to_idp.headers["location"])
    fields = {k: html.unescape(v)
              for k, v in re.findall(r'type="hidden" name="([^"]+)" value="([^"]*)"', form_page.text)}
    back = httpx.post(idp.authorization_endpoint, data={**fields, "username": user})
    assert back.status_code == 302
    return to_idp.headers["location"], back.headers["location"]


def test_a_big_namespace_is_walked_page_by_page_with_the_api_page_tokens(demo, console):
    warehouse_id, rest = demo
    rest.post("/namespaces", json={"namespace": ["big"]}).raise_for_status()
    names = {f"t{i:03d}" for i in range(25)}
    for name in names:
        rest.post("/namespaces/big/tables", json={"name": name, "schema": SCHEMA}).raise_for_status()

    url, pages, seen = f"/ui/warehouses/{warehouse_id}/namespace?ns=big&page_size=10", 0, []
    while url:
        page = console.get(url)
        assert page.status_code == 200
        pages += 1
        seen += re.findall(r'ns=big&amp;name=(t\d+)"', page.text)
        following = re.search(r'<a class="next" href="([^"]+)"', page.text)
        url = html.unescape(following.group(1)) if following else None
        if url:
            assert "tables_token=" in url
    assert pages == 3
    assert sorted(seen) == sorted(names)


def test_child_namespaces_are_listed_page_by_page(demo, console):
    warehouse_id, rest = demo
    rest.post("/namespaces", json={"namespace": ["parent"]}).raise_for_status()
    for i in range(12):
        rest.post("/namespaces", json={"namespace": ["parent", f"child{i:02d}"]}).raise_for_status()
    url, seen = f"/ui/warehouses/{warehouse_id}/namespace?ns=parent&page_size=5", []
    while url:
        page = console.get(url)
        listing = page.text.split('id="namespaces"')[1].split("</table>")[0]
        seen += re.findall(r">parent\.(child\d+)</a>", listing)
        following = re.search(r'<a class="next" href="([^"]+)"', page.text)
        url = html.unescape(following.group(1)) if following else None
    assert seen == [f"child{i:02d}" for i in range(12)]


def test_a_long_snapshot_history_is_cut_to_the_newest_unless_all_are_asked_for(demo, console):
    warehouse_id, rest = demo
    rest.post("/namespaces", json={"namespace": ["history"]}).raise_for_status()
    created = rest.post("/namespaces/history/tables", json={"name": "busy", "schema": SCHEMA})
    location = created.json()["metadata"]["location"]
    updates, parent = [], None
    for n in range(1, 251):  # placeholder manifest lists: loading the table never reads them
        snapshot = {"snapshot-id": n, "sequence-number": n, "timestamp-ms": 1_700_000_000_000 + n * 1000,
                    "manifest-list": f"{location}/metadata/snap-{n}.avro", "summary": {"operation": "append"},
                    "schema-id": 0, **({"parent-snapshot-id": parent} if parent else {})}
        updates += [{"action": "add-snapshot", "snapshot": snapshot},
                    {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": n}]
        parent = n
    rest.post("/namespaces/history/tables/busy", json={"requirements": [], "updates": updates}).raise_for_status()

    page = console.get(f"/ui/warehouses/{warehouse_id}/table?ns=history&name=busy&tab=history")
    rows = re.findall(r'<tr id="snapshot-(\d+)"', page.text)
    assert len(rows) == 200 and rows[0] == "250" and rows[-1] == "51"  # newest first
    assert "The newest 200 of 250 snapshots" in page.text
    everything = console.get(f"/ui/warehouses/{warehouse_id}/table?ns=history&name=busy&tab=history&all_snapshots=1")
    assert len(re.findall(r'<tr id="snapshot-(\d+)"', everything.text)) == 250


def test_a_form_without_the_csrf_token_changes_nothing(server, console):
    console.get("/ui/projects")  # a session exists, but the form does not echo its token
    refused = console.post("/ui/projects", data={"project-name": "sneaky"})
    assert refused.status_code == 400 and "CsrfTokenInvalid" in refused.text
    forged = console.post("/ui/projects", data={"project-name": "sneaky", "csrf_token": "guess"})
    assert forged.status_code == 400
    projects = httpx.get(server.url + "/management/v1/project-list").json()["projects"]
    assert "sneaky" not in [p["project-name"] for p in projects]

    accepted = console.post("/ui/projects", data={"project-name": "ui-project",
                                                  "csrf_token": csrf_of(console.get("/ui/projects"))})
    assert accepted.status_code == 302
    projects = httpx.get(server.url + "/management/v1/project-list").json()["projects"]
    assert "ui-project" in [p["project-name"] for p in projects]


def test_an_api_failure_shows_its_error_model_message(demo, console):
    warehouse_id, _ = demo
    page = console.get(f"/ui/warehouses/{warehouse_id}/table?ns=nowhere&name=missing")
    assert page.status_code == 404
    assert "NoSuchNamespaceException" in page.text or "NoSuchTableException" in page.text
    assert "nowhere" in page.text

    # an action: renaming the warehouse to an invalid (empty) name comes back as a flash message
    form = console.get(f"/ui/warehouses/{warehouse_id}")
    console.post(f"/ui/warehouses/{warehouse_id}/rename", data={"new-name": "", "csrf_token": csrf_of(form)})
    after = console.get(f"/ui/warehouses/{warehouse_id}")
    assert 'class="flash error"' in after.text and "HTTP 400" in after.text


def test_view_page_shows_the_sql_of_each_dialect_and_every_version(demo, console):
    warehouse_id, rest = demo
    rest.post("/namespaces", json={"namespace": ["reports"]}).raise_for_status()
    version = {
        "version-id": 1, "schema-id": 0, "timestamp-ms": 1_700_000_000_000, "summary": {"engine-name": "spark"},
        "default-namespace": ["reports"],
        "representations": [{"type": "sql", "sql": "SELECT id FROM orders", "dialect": "spark"},
                            {"type": "sql", "sql": 'SELECT "id" FROM "orders"', "dialect": "trino"}],
    }
    rest.post("/namespaces/reports/views", json={"name": "daily", "schema": SCHEMA, "view-version": version,
                                                  "properties": {}}).raise_for_status()
    second = {**version, "version-id": 2, "timestamp-ms": 1_700_000_100_000,
              "representations": [{"type": "sql", "sql": "SELECT id FROM orders WHERE id > 0", "dialect": "spark"},
                                  {"type": "sql", "sql": 'SELECT "id" FROM "orders" WHERE "id" > 0',
                                   "dialect": "trino"}]}
    replaced = rest.post("/namespaces/reports/views/daily", json={"requirements": [], "updates": [
        {"action": "add-view-version", "view-version": second},
        {"action": "set-current-view-version", "view-version-id": -1},
    ]})
    assert replaced.status_code == 200, replaced.text

    page = console.get(f"/ui/warehouses/{warehouse_id}/view?ns=reports&name=daily")
    assert page.status_code == 200
    current = page.text.split('id="versions"')[0]  # the current version's SQL, per dialect
    assert '<pre class="sql" data-dialect="spark">SELECT id FROM orders WHERE id &gt; 0</pre>' in current
    assert '<pre class="sql" data-dialect="trino">SELECT &#34;id&#34; FROM &#34;orders&#34; WHERE' in current
    versions = page.text.split('id="versions"')[1]
    assert "SELECT &#34;id&#34; FROM &#34;orders&#34;</pre>" in versions  # version 1's trino SQL
    assert versions.count("<tr><td>") == 2


def test_protected_views_and_namespaces_refuse_to_go_until_unprotected(demo, console):
    warehouse_id, rest = demo
    rest.post("/namespaces", json={"namespace": ["vault"]}).raise_for_status()
    version = {"version-id": 1, "schema-id": 0, "timestamp-ms": 1_700_000_000_000, "summary": {},
               "default-namespace": ["vault"],
               "representations": [{"type": "sql", "sql": "SELECT 1", "dialect": "spark"}]}
    rest.post("/namespaces/vault/views", json={"name": "kept", "schema": SCHEMA, "view-version": version,
                                                "properties": {}}).raise_for_status()

    def toggle(page: httpx.Response) -> httpx.Response:
        form = page.text.split('action="/ui/warehouses/' + warehouse_id + '/protection"')[1].split("</form>")[0]
        fields = {k: html.unescape(v) for k, v in re.findall(r'name="([^"]+)" value="([^"]*)"', form)}
        return console.post(f"/ui/warehouses/{warehouse_id}/protection", data=fields, follow_redirects=True)

    def drop_view(page: httpx.Response) -> httpx.Response:
        return console.post(f"/ui/warehouses/{warehouse_id}/tabular/drop", follow_redirects=True, data={
            "ns": "vault", "name": "kept", "kind": "view", "csrf_token": csrf_of(page)})

    def delete_namespace(page: httpx.Response) -> httpx.Response:
        return console.post(f"/ui/warehouses/{warehouse_id}/namespace/delete", follow_redirects=True,
                            data={"ns": "vault", "csrf_token": csrf_of(page)})

    view_url = f"/ui/warehouses/{warehouse_id}/view?ns=vault&name=kept"
    page = console.get(view_url)
    assert '<dd id="protection">not protected</dd>' in page.text
    page = toggle(page)
    assert "View &#39;vault.kept&#39; is protected." in page.text and str(page.url).endswith(view_url)
    assert '<dd id="protection">protected' in page.text
    refused = drop_view(page)
    assert "is protected and cannot be dropped" in refused.text and "ViewProtected, HTTP 409" in refused.text
    assert rest.head("/namespaces/vault/views/kept").status_code == 204

    namespace_url = f"/ui/warehouses/{warehouse_id}/namespace?ns=vault"
    page = console.get(namespace_url)
    assert '<span class="badge protected">protected</span></td>' in page.text.split('id="views"')[1]
    page = toggle(page)
    assert "Namespace &#39;vault&#39; is protected." in page.text and str(page.url).endswith(namespace_url)
    listing = console.get(f"/ui/warehouses/{warehouse_id}").text.split('id="namespaces"')[1].split("</table>")[0]
    assert re.search(r'>vault</a>\s*<span class="badge protected">', listing)  # the parent's list marks it
    refused = delete_namespace(page)
    assert "NamespaceProtected, HTTP 409" in refused.text
    assert rest.head("/namespaces/vault").status_code == 204

    assert "is no longer protected" in toggle(console.get(view_url)).text
    assert "View &#39;kept&#39; dropped." in drop_view(console.get(view_url)).text
    page = toggle(console.get(namespace_url))
    assert "Namespace &#39;vault&#39; is no longer protected." in page.text
    assert "Namespace &#39;vault&#39; deleted." in delete_namespace(page).text
    assert rest.head("/namespaces/vault").status_code == 404


def test_tasks_page_lists_the_expiration_of_a_soft_dropped_table_and_cancels_it(demo, server, console):
    warehouse_id, rest = demo
    rest.post("/namespaces", json={"namespace": ["scratch"]}).raise_for_status()
    rest.post("/namespaces/scratch/tables", json={"name": "old", "schema": SCHEMA}).raise_for_status()
    httpx.post(f"{server.url}/management/v1/warehouse/{warehouse_id}/delete-profile",
               json={"delete-profile": {"type": "soft", "expiration-seconds": 3600}}).raise_for_status()
    rest.delete("/namespaces/scratch/tables/old").raise_for_status()

    page = console.get(f"/ui/warehouses/{warehouse_id}/tasks")
    assert page.status_code == 200 and "scratch.old" in page.text
    task_id = re.search(r'name="task-id" value="([^"]+)"', page.text).group(1)
    done = console.post(f"/ui/warehouses/{warehouse_id}/tasks/control",
                        data={"task-id": task_id, "action-type": "cancel", "csrf_token": csrf_of(page)},
                        follow_redirects=True)
    assert "Task cancelled." in done.text
    task = httpx.get(f"{server.url}/management/v1/warehouse/{warehouse_id}/task/by-id/{task_id}").json()
    assert task["status"] == "CANCELLED"


def test_permissions_are_hidden_with_the_allow_all_authorizer(console):
    home = console.get("/ui/")
    assert "Permissions" not in home.text
    assert console.get("/ui/permissions").status_code == 404


def test_a_fresh_server_is_bootstrapped_from_the_server_page(lakekeeper_server_factory):
    with lakekeeper_server_factory({"LAKEKEEPER__EMBEDDED_QUICKSTART": "false"}) as srv, \
            httpx.Client(base_url=srv.url, timeout=30) as console:
        home = console.get("/ui/")
        assert '<dd id="bootstrapped">no</dd>' in home.text
        refused = console.post("/ui/bootstrap", data={"csrf_token": csrf_of(home)}, follow_redirects=True)
        assert "terms of use" in refused.text.lower() and 'class="flash error"' in refused.text  # the API's rule
        done = console.post("/ui/bootstrap", data={"accept": "true", "csrf_token": csrf_of(home)},
                            follow_redirects=True)
        assert "The server is bootstrapped." in done.text
        assert '<dd id="bootstrapped">yes</dd>' in done.text
        assert httpx.get(srv.url + "/management/v1/info").json()["bootstrapped"] is True


def test_sign_in_reports_an_unreachable_identity_provider(lakekeeper_server_factory):
    from lakekeeper_testing.oidc import OidcIssuer

    idp = OidcIssuer().start()
    env = {"LAKEKEEPER__OPENID_PROVIDER_URI": idp.issuer, "LAKEKEEPER__OPENID_AUDIENCE": "lakekeeper"}
    with lakekeeper_server_factory(env) as srv, httpx.Client(base_url=srv.url, timeout=30) as console:
        assert console.get("/ui/warehouses").status_code == 401  # the sign-in page
        idp.stop()
        answer = console.get("/ui/login")
        assert answer.status_code == 503 and "IdentityProviderUnavailable" in answer.text


def test_the_console_can_be_switched_off(lakekeeper_server_factory):
    with lakekeeper_server_factory({"LAKEKEEPER__UI__ENABLED": "false"}) as srv:
        answer = httpx.get(srv.url + "/ui/")
        assert answer.status_code == 404
        assert answer.json()["error"]["type"] == "NotFoundException"
        assert httpx.get(srv.url + "/management/v1/info").status_code == 200


def test_storage_forms_come_from_the_plugin_classes():
    S3Profile = pytest.importorskip("lakekeeper_storage_s3.model").S3Profile  # noqa: N806 (the plugin's class)
    fields = {f.key: f for f in fields_of(S3Profile)}
    assert fields["bucket"].required and fields["bucket"].kind == "text"
    assert fields["sts-enabled"].kind == "bool" and not fields["sts-enabled"].required
    assert fields["path-style-access"].kind == "optional-bool"
    assert fields["sts-token-validity-seconds"].kind == "number"
    assert fields["sts-session-tags"].kind == "json"
    section = FormSection(scope="profile.s3", title="s3", fields=tuple(fields.values()), tag={"type": "s3"})
    body = read_section(section, {"profile.s3.bucket": "b", "profile.s3.region": "eu-central-1",
                                  "profile.s3.sts-enabled": "false", "profile.s3.sts-token-validity-seconds": "60",
                                  "profile.s3.sts-session-tags": '{"team": "data"}', "profile.s3.endpoint": ""})
    assert body == {"type": "s3", "bucket": "b", "region": "eu-central-1", "sts-enabled": False,
                    "sts-token-validity-seconds": 60, "sts-session-tags": {"team": "data"}}


def test_a_token_the_api_refuses_is_explained_not_retried_in_a_loop(idp, lakekeeper_server_factory):
    """The provider issues tokens for audience ``lakekeeper``; the server wants ``elsewhere``."""
    env = {"LAKEKEEPER__OPENID_PROVIDER_URI": idp.issuer, "LAKEKEEPER__OPENID_AUDIENCE": "elsewhere"}
    with lakekeeper_server_factory(env) as srv, httpx.Client(base_url=srv.url, timeout=30) as console:
        _, back_to_console = sign_in(console, idp, "peter")
        callback = console.get(back_to_console)
        assert callback.status_code == 302 and callback.headers["location"].endswith("/ui/warehouses")
        refused = console.get("/ui/warehouses")
        assert refused.status_code == 401
        assert "audience" in refused.text.lower()  # the API's own reason
        assert console.get("/ui/warehouses").status_code == 401  # signed out: the sign-in page, no loop


def test_a_refused_s3_warehouse_form_comes_back_without_its_secret(console):
    pytest.importorskip("lakekeeper_storage_s3")
    from lakekeeper_testing.services import free_port

    form = console.get("/ui/warehouses/new")
    assert 'name="profile.s3.bucket"' in form.text and 'name="credential-variant.s3"' in form.text
    answer = console.post("/ui/warehouses/new", data={
        "csrf_token": csrf_of(form), "warehouse-name": "unreachable", "storage-type": "s3",
        "profile.s3.bucket": "warehouse", "profile.s3.region": "local-01",
        "profile.s3.endpoint": f"http://127.0.0.1:{free_port()}", "profile.s3.path-style-access": "true",
        "profile.s3.flavor": "s3-compat",
        "credential-variant.s3": "credential.s3.access-key",
        "credential.s3.access-key.aws-access-key-id": "visible-key-id",
        "credential.s3.access-key.aws-secret-access-key": "never-shown-secret",
    })
    assert answer.status_code == 400 and 'class="flash error"' in answer.text  # the API's validation failure
    assert 'value="visible-key-id"' in answer.text and 'value="unreachable"' in answer.text
    assert "never-shown-secret" not in answer.text


def test_the_ui_settings_shape_sign_in_snippets_and_sign_out(lakekeeper_server_factory):
    """``UI__OPENID_CLIENT_ID``, ``_SCOPE``, ``_RESOURCE``, ``_REDIRECT_PATH``, ``UI__LAKEKEEPER_URL`` and
    ``UI__OPENID_POST_LOGOUT_REDIRECT_DISABLED``, as a user behind a proxy at catalog.example meets them."""
    from urllib.parse import parse_qs, urlsplit

    from lakekeeper_testing.oidc import OidcIssuer

    public = "http://catalog.example:8080"  # an https URL makes the cookie Secure: this client would not send it
    with OidcIssuer(audience="lakekeeper") as idp:
        env = {"LAKEKEEPER__OPENID_PROVIDER_URI": idp.issuer, "LAKEKEEPER__OPENID_AUDIENCE": "lakekeeper",
               "LAKEKEEPER__UI__OPENID_CLIENT_ID": "console-app", "LAKEKEEPER__UI__OPENID_SCOPE": "openid lakekeeper",
               "LAKEKEEPER__UI__OPENID_RESOURCE": "api://lakekeeper",
               "LAKEKEEPER__UI__OPENID_REDIRECT_PATH": "/signed-in", "LAKEKEEPER__UI__LAKEKEEPER_URL": public,
               "LAKEKEEPER__UI__OPENID_POST_LOGOUT_REDIRECT_DISABLED": "true"}
        with lakekeeper_server_factory(env) as srv, httpx.Client(base_url=srv.url, timeout=30) as console:
            to_idp, back_to_console = sign_in(console, idp, "peter")
            query = parse_qs(urlsplit(to_idp).query)
            assert query["client_id"] == ["console-app"] and query["scope"] == ["openid lakekeeper"]
            assert query["resource"] == ["api://lakekeeper"]
            assert query["redirect_uri"] == [f"{public}/ui/signed-in"]
            callback = urlsplit(back_to_console)  # the proxy would forward it to this server
            assert f"{callback.scheme}://{callback.netloc}" == public and callback.path == "/ui/signed-in"
            signed_in = console.get(f"{callback.path}?{callback.query}")
            assert signed_in.status_code == 302 and signed_in.headers["location"].endswith("/ui/warehouses")

            warehouse_id = re.search(r'/ui/warehouses/([0-9a-f-]{36})"', console.get("/ui/warehouses").text).group(1)
            panel = html.unescape(console.get(f"/ui/warehouses/{warehouse_id}").text.split('id="connect"')[1])
            assert f'uri="{public}/catalog"' in panel  # the snippets name the public URL

            page = console.get("/ui/")
            signed_out = console.post("/ui/logout", data={"csrf_token": csrf_of(page)})
            assert signed_out.headers["location"] == "/ui/logout"  # not the provider's end-session endpoint
            assert not idp.logouts
            assert console.get("/ui/warehouses").status_code == 401


def test_ui_openid_token_type_id_token_sends_the_id_token_to_the_api(idp, lakekeeper_server_factory):
    """The issuer's access tokens are for audience ``lakekeeper``, its id tokens for the client id;
    a server that accepts only the client id works with ``UI__OPENID_TOKEN_TYPE=id_token``."""
    env = {"LAKEKEEPER__OPENID_PROVIDER_URI": idp.issuer, "LAKEKEEPER__OPENID_AUDIENCE": "console-app",
           "LAKEKEEPER__UI__OPENID_CLIENT_ID": "console-app"}
    with lakekeeper_server_factory({**env, "LAKEKEEPER__UI__OPENID_TOKEN_TYPE": "id_token"}) as srv, \
            httpx.Client(base_url=srv.url, timeout=30) as console:
        _, back_to_console = sign_in(console, idp, "peter")
        console.get(back_to_console)
        assert console.get("/ui/warehouses").status_code == 200
    with lakekeeper_server_factory(env) as srv, httpx.Client(base_url=srv.url, timeout=30) as console:
        _, back_to_console = sign_in(console, idp, "peter")
        console.get(back_to_console)
        refused = console.get("/ui/warehouses")  # the access token (the default) has the wrong audience
        assert refused.status_code == 401 and "audience" in refused.text.lower()
