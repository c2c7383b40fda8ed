"""The console's pages and form actions (blueprint ``console`` at ``/ui``).

Pages read through the API (:mod:`lakekeeper_host.ui.api_client`); actions are HTML forms that
POST here, call the API, and redirect back with a flash message: the API's ErrorModel message
on failure. Nothing here decides what is allowed or valid.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import quote, urlsplit

from markupsafe import Markup
from quart import (
    Blueprint,
    current_app,
    flash,
    g,
    redirect,
    render_template,
    request,
    session,
    url_for,
)

from lakekeeper_host.api.common import base_uri_for, state
from lakekeeper_host.runtime.snippets import client_snippets
from lakekeeper_host.ui import formatting
from lakekeeper_host.ui.api_client import ApiError, ConsoleApi, encode_namespace
from lakekeeper_host.ui.auth import ConsoleAuth, csrf_token, csrf_valid
from lakekeeper_host.ui.forms import FormInputError, credential_sections, profile_section, read_section

log = logging.getLogger(__name__)

blueprint = Blueprint(
    "console", __name__, url_prefix="/ui", template_folder="templates", static_folder="static",
    static_url_path="/static",
)

PAGE_SIZE = 100  # rows per page of tables, views, namespaces, tasks, deleted items
SNAPSHOT_ROWS = 200  # newest snapshots listed (and drawn) on a table page unless all are asked for
TREE_CHILDREN = 200  # namespaces shown per tree level before "more"
HOME_WAREHOUSE_COUNTS = 24  # warehouses whose table and view counts the server page shows
OPEN_ENDPOINTS = {"console.login", "console.callback", "console.logged_out", "console.static"}


# ---------------------------------------------------------------- request plumbing


def console_auth() -> ConsoleAuth:
    return current_app.extensions["lakekeeper_console_auth"]


def base_uri() -> str:
    """This server as the browser reaches it (``UI__LAKEKEEPER_URL``, else what the API would use)."""
    configured = state().settings.host.ui.lakekeeper_url
    if configured:
        return configured.rstrip("/")
    return base_uri_for(state().settings, request.scheme, request.host, request.headers)


def api() -> ConsoleApi:
    if "console_api" not in g:
        auth = console_auth()
        g.console_api = ConsoleApi(
            current_app, request.host_url.rstrip("/"),
            token=auth.token() if auth.enabled else None,
            project_id=session.get("project_id"),
        )
    return g.console_api


@blueprint.before_request
async def guard():
    if request.endpoint in OPEN_ENDPOINTS:
        return None
    auth = console_auth()
    if auth.enabled and auth.token() is None:
        if request.method == "POST":
            return redirect(url_for("console.login"))
        next_path = request.full_path.rstrip("?")
        if session.get("token"):  # signed in before, the token expired: the IdP's session signs in again
            return redirect(url_for("console.login", next=next_path))
        return await render_template("login.html", next_path=next_path), 401
    if request.method == "POST":
        form = await request.form
        if not csrf_valid(form.get("csrf_token")):
            return await render_template("error.html", status=400, error_type="CsrfTokenInvalid",
                                         message="The form expired or did not come from this console; "
                                                 "reload the page and try again."), 400
    return None


@blueprint.after_request
async def no_store(response):
    response.headers.setdefault("Cache-Control", "no-store")
    return response


@blueprint.teardown_request
async def close_api(_exc: BaseException | None) -> None:
    console_api = g.pop("console_api", None)
    if console_api is not None:
        await console_api.close()


@blueprint.errorhandler(ApiError)
async def api_error(error: ApiError):
    if error.status == 401 and console_auth().enabled:
        # an unexpired token the API refuses (audience, issuer, scope settings): signing in again
        # would loop, so show why and start over
        session.clear()
    return await render_template("error.html", status=error.status, error_type=error.type,
                                 message=error.message), error.status


@blueprint.app_template_global()
def ns_param(parts: list[str] | tuple[str, ...]) -> list[str]:
    """A namespace in a console URL: one ``ns`` parameter per level (``?ns=sales&ns=eu``), readable and
    exact for names with any character, dots included."""
    return list(parts)


@blueprint.app_template_global()
def ns_inputs(parts: list[str] | tuple[str, ...], name: str = "ns") -> Markup:
    """Hidden inputs carrying a namespace in a form, one per level (read back with :func:`namespace_parts`)."""
    return Markup("").join(Markup('<input type="hidden" name="{}" value="{}">').format(name, part) for part in parts)


for _name, _filter in (("ts", formatting.timestamp), ("size", formatting.size), ("count", formatting.count),
                       ("duration", formatting.duration), ("fields", formatting.readable_fields),
                       ("epoch_ms", formatting.epoch_ms), ("fromjson", json.loads), ("cell", formatting.cell)):
    blueprint.add_app_template_filter(_filter, _name)


def namespace_parts(values: list[str]) -> list[str]:
    """The namespace levels of repeated ``ns`` values; one value joined by the unit separator (the
    API's own form, which older links and the benchmark use) is split."""
    if len(values) == 1 and "\x1f" in values[0]:
        values = values[0].split("\x1f")
    return [part for part in values if part]


@blueprint.app_template_global()
def page_url(token_name: str, token: str | None = None) -> str:
    """This page with another page token for one of its lists (the others keep theirs)."""
    args = {key: values for key, values in request.args.lists() if key != token_name}
    if token:
        args[token_name] = [token]
    return url_for(request.endpoint, **(request.view_args or {}), **args)


@blueprint.context_processor
async def common_context() -> dict[str, Any]:
    auth = console_auth()
    signed_in = auth.enabled and auth.token() is not None
    can_call = signed_in or not auth.enabled
    return {
        "csrf_token": csrf_token,
        "login_enabled": auth.enabled,
        "signed_in": signed_in,
        # signed out, only the sign-in works: the navigation offers nothing else
        "navigation": can_call,
        "permissions_enabled": permissions_available(),
        "current_project_id": session.get("project_id"),
        "current_project": await current_project() if can_call else None,
    }


async def current_project() -> dict[str, str] | None:
    """``{"id", "name"}`` of the project every call goes to (the chosen one, else the server's
    default), as ``GET /management/v1/project`` names it; asked once per session and project."""
    cached = session.get("project")
    if cached and cached.get("for") == (session.get("project_id") or ""):
        return cached
    try:
        project = await api().management("GET", "/project")
    except ApiError:
        return None  # not bootstrapped, or no project chosen and no default project
    cached = {"for": session.get("project_id") or "", "id": project.get("project-id", ""),
              "name": project.get("project-name") or project.get("project-id", "")}
    session["project"] = cached
    return cached


def permissions_available() -> bool:
    """Lakekeeper shows permission pages iff the authorizer is not allow-all; they need the
    permissions API (``/management/v1/permissions/*``) to be served."""
    if state().settings.host.authz_backend.lower() == "allowall":
        return False
    return any(rule.rule.startswith("/management/v1/permissions") for rule in current_app.url_map.iter_rules())


async def act(action: Callable[[], Awaitable[Any]], success: str, back: str):
    """Run one API action, flash its outcome, go back to ``back``."""
    try:
        await action()
    except ApiError as error:
        await flash(str(error), "error")
    except FormInputError as error:
        await flash(str(error), "error")
    else:
        await flash(success, "success")
    return redirect(back)


async def or_error(call: Awaitable[Any]) -> tuple[Any, str | None]:
    """(answer, None), or (None, the API's message) when it refused: for parts of a page that may fail alone."""
    try:
        return await call, None
    except ApiError as error:
        return None, str(error)


def safe_next(path: str | None) -> str:
    """Only console paths of this server (no open redirect after login)."""
    if path and path.startswith("/ui") and not urlsplit(path).netloc and not path.startswith("//"):
        return path
    return url_for("console.home")


async def warehouse_of(warehouse_id: str) -> dict[str, Any]:
    return await api().management("GET", f"/warehouse/{warehouse_id}")


def page_size() -> int:
    """Rows per page: ``?page_size=`` (the API caps it at its own maximum), else ``PAGE_SIZE``."""
    requested = request.args.get("page_size", type=int)
    return requested if requested and requested > 0 else PAGE_SIZE


def namespace_arg(name: str = "ns") -> list[str]:
    return namespace_parts(request.args.getlist(name))


# ---------------------------------------------------------------- sign-in


def redirect_uri() -> str:
    return base_uri() + "/ui" + console_auth().ui.openid_redirect_path


@blueprint.get("/login")
async def login():
    auth = console_auth()
    if not auth.enabled:
        return redirect(url_for("console.home"))
    import httpx  # the console's sign-in only: not loaded when the server starts

    try:
        target = await auth.authorization_url(redirect_uri(), safe_next(request.args.get("next")))
    except (httpx.HTTPError, KeyError, ValueError) as error:
        log.warning("console sign-in: the identity provider %s did not answer: %s", auth.provider_uri, error)
        return await render_template(
            "error.html", status=503, error_type="IdentityProviderUnavailable",
            message=f"The identity provider at {auth.provider_uri} cannot be reached: {error}"), 503
    return redirect(target)


async def callback():
    auth = console_auth()
    try:
        next_path = await auth.finish_login(redirect_uri(), request.args)
    except Exception as error:  # the provider's answer, shown instead of a stack trace
        log.warning("console sign-in failed: %s", error)
        return await render_template("error.html", status=400, error_type="LoginFailed", message=str(error)), 400
    try:  # Lakekeeper's console registers the user on sign-in (self-service POST /user)
        await api().management("POST", "/user", json={})
    except ApiError as error:
        log.info("console sign-in: user self-registration answered %s", error)
    return redirect(safe_next(next_path))


@blueprint.post("/logout")
async def logout():
    auth = console_auth()
    session.clear()
    ui = auth.ui
    post_logout = ui.openid_post_logout_redirect_url or base_uri() + "/ui" + ui.openid_post_logout_redirect_path
    provider_logout = await auth.logout_url(post_logout) if auth.enabled else None
    return redirect(provider_logout or url_for("console.logged_out"))


@blueprint.get("/logout")
async def logged_out():
    return await render_template("logged_out.html")


# ---------------------------------------------------------------- server, bootstrap, projects


@blueprint.get("/")
async def home():
    info = await api().management("GET", "/info")
    whoami = None
    if console_auth().enabled:
        try:
            whoami = await api().management("GET", "/whoami")
        except ApiError:
            whoami = None
    warehouses = []
    if info.get("bootstrapped"):
        try:
            warehouses = (await api().management("GET", "/warehouse")).get("warehouses", [])
        except ApiError as error:  # e.g. no project selected and no default project
            await flash(str(error), "error")
    counts = {}
    for warehouse_entry in warehouses[:HOME_WAREHOUSE_COUNTS]:  # each one call; a big project shows the rest bare
        if warehouse_entry.get("status") == "active":
            found, _ = await or_error(api().management(
                "GET", f"/warehouse/{warehouse_entry['warehouse-id']}/statistics", page_size=1))
            if found and found.get("stats"):
                counts[warehouse_entry["warehouse-id"]] = found["stats"][0]
    return await render_template("home.html", info=info, whoami=whoami, warehouses=warehouses, counts=counts)


@blueprint.post("/bootstrap")
async def bootstrap():
    form = await request.form
    body = {"accept-terms-of-use": form.get("accept") == "true",
            "is-operator": form.get("is-operator") == "true"}
    return await act(lambda: api().management("POST", "/bootstrap", json=body),
                     "The server is bootstrapped.", url_for("console.home"))


@blueprint.get("/projects")
async def projects():
    listing = await api().management("GET", "/project-list")
    current = await current_project()
    return await render_template("projects.html", projects=listing.get("projects", []),
                                 current_id=current["id"] if current else None)


@blueprint.post("/projects")
async def create_project():
    name = (await request.form).get("project-name", "")
    return await act(lambda: api().management("POST", "/project", json={"project-name": name}),
                     f"Project {name!r} created.", url_for("console.projects"))


@blueprint.post("/projects/select")
async def select_project():
    project_id = (await request.form).get("project-id") or None
    if project_id:
        session["project_id"] = project_id
    else:
        session.pop("project_id", None)
    return redirect(safe_next((await request.form).get("next")))


@blueprint.post("/projects/<project_id>/rename")
async def rename_project(project_id: str):
    name = (await request.form).get("new-name", "")

    async def rename():
        await api().management("POST", f"/project/{project_id}/rename", json={"new-name": name})
        session.pop("project", None)  # the header names the project anew

    return await act(rename, f"Project renamed to {name!r}.", url_for("console.projects"))


@blueprint.post("/projects/<project_id>/delete")
async def delete_project(project_id: str):
    async def delete():
        await api().management("DELETE", f"/project/{project_id}")
        session.pop("project", None)
        if session.get("project_id") == project_id:
            session.pop("project_id", None)
    return await act(delete, "Project deleted.", url_for("console.projects"))


# ---------------------------------------------------------------- warehouses


@blueprint.get("/warehouses")
async def warehouses():
    listing = await api().management("GET", "/warehouse")
    return await render_template("warehouses.html", warehouses=listing.get("warehouses", []))


def default_expiration_seconds() -> int:
    return state().settings.host.default_tabular_expiration_delay_seconds


def storage_forms() -> list[dict[str, Any]]:
    registry = state().registry
    return [{"profile": profile_section(spec), "credentials": credential_sections(spec)}
            for spec in registry.unique(registry.storage)]


@blueprint.get("/warehouses/new")
async def new_warehouse():
    return await render_template("warehouse_new.html", storage=storage_forms(), values={}, error=None,
                                 default_expiration=default_expiration_seconds())


@blueprint.post("/warehouses/new")
async def create_warehouse():
    form = await request.form
    forms = {entry["profile"].tag["type"]: entry for entry in storage_forms()}
    storage_type = form.get("storage-type", "")
    error = None
    try:
        entry = forms.get(storage_type)
        if entry is None:
            raise FormInputError(f"Choose a storage type ({', '.join(forms)})")
        body: dict[str, Any] = {"warehouse-name": form.get("warehouse-name", ""),
                                "storage-profile": read_section(entry["profile"], form)}
        credential_scope = form.get(f"credential-variant.{storage_type}") or ""
        for section in entry["credentials"]:
            if section.scope == credential_scope:
                body["storage-credential"] = read_section(section, form)
        if form.get("delete-mode") == "soft":
            seconds = form.get("expiration-seconds") or ""
            body["delete-profile"] = {"type": "soft", **({"expiration-seconds": int(seconds)} if seconds else {})}
        elif form.get("delete-mode") == "hard":
            body["delete-profile"] = {"type": "hard"}
        created = await api().management("POST", "/warehouse", json=body)
    except (ApiError, FormInputError, ValueError) as exc:
        error = str(exc)
    if error is None:
        await flash(f"Warehouse {body['warehouse-name']!r} created.", "success")
        return redirect(url_for("console.warehouse", warehouse_id=created["warehouse-id"]))
    secret_inputs = {section.input_name(field) for entry in forms.values()
                     for section in (entry["profile"], *entry["credentials"])
                     for field in section.fields if field.kind == "secret"}
    values = {key: value for key, value in form.items() if key not in secret_inputs}  # never echo secrets
    return await render_template("warehouse_new.html", storage=storage_forms(), values=values, error=error,
                                 default_expiration=default_expiration_seconds()), 400


@blueprint.get("/warehouses/<warehouse_id>")
async def warehouse(warehouse_id: str):
    details = await warehouse_of(warehouse_id)
    if details.get("status") != "active":
        # the API serves no namespaces, tables or soft-deleted items of an inactive warehouse: the
        # page keeps its details and the switch to activate it again
        return await render_template("warehouse.html", warehouse=details, deleted=None, children=None, snippets=None,
                                     tree=[{"parts": [], "name": details["name"], "children": [], "more": False}],
                                     current_ns=[])
    deleted = await api().management("GET", f"/warehouse/{warehouse_id}/deleted-tabulars",
                                     pageToken=request.args.get("deleted_token"), pageSize=page_size())
    children = await child_namespaces(details["name"], [])
    tree = await namespace_tree(details, [])
    catalog_uri = base_uri() + "/catalog"
    snippets = client_snippets(catalog_uri, details["name"], authenticated=console_auth().enabled)
    return await render_template("warehouse.html", warehouse=details, deleted=deleted, tree=tree,
                                 children=children, snippets=snippets, current_ns=[],
                                 default_expiration=default_expiration_seconds())


@blueprint.post("/warehouses/<warehouse_id>/delete-profile")
async def set_delete_profile(warehouse_id: str):
    """Switch between soft deletion (with its expiration) and hard deletion."""
    form = await request.form

    async def change():
        if form.get("delete-mode") == "soft":
            try:
                seconds = int(form.get("expiration-seconds") or default_expiration_seconds())
            except ValueError:
                raise FormInputError("The expiration must be a whole number of seconds") from None
            profile: dict[str, Any] = {"type": "soft", "expiration-seconds": seconds}
        else:
            profile = {"type": "hard"}
        await api().management("POST", f"/warehouse/{warehouse_id}/delete-profile", json={"delete-profile": profile})

    soft = form.get("delete-mode") == "soft"
    return await act(change, "Dropped tables and views now stay restorable until they expire." if soft else
                     "Dropped tables and views are now deleted at once.",
                     url_for("console.warehouse", warehouse_id=warehouse_id) + "#deleted")


@blueprint.post("/warehouses/<warehouse_id>/rename")
async def rename_warehouse(warehouse_id: str):
    name = (await request.form).get("new-name", "")
    return await act(lambda: api().management("POST", f"/warehouse/{warehouse_id}/rename", json={"new-name": name}),
                     f"Warehouse renamed to {name!r}.", url_for("console.warehouse", warehouse_id=warehouse_id))


@blueprint.post("/warehouses/<warehouse_id>/status")
async def warehouse_status(warehouse_id: str):
    action = "activate" if (await request.form).get("active") == "true" else "deactivate"
    return await act(lambda: api().management("POST", f"/warehouse/{warehouse_id}/{action}"),
                     f"Warehouse {action}d.", url_for("console.warehouse", warehouse_id=warehouse_id))


PROTECTABLE = ("warehouse", "namespace", "table", "view", "generic-table")


def protection_api_path(warehouse_id: str, kind: str, object_id: str | None) -> str:
    """The protection endpoint of a warehouse, or of a namespace, table or view in it (``/management/v1``)."""
    if kind == "warehouse":
        return f"/warehouse/{warehouse_id}/protection"
    return f"/warehouse/{warehouse_id}/{kind}/{quote(object_id or '', safe='')}/protection"


async def protection_of(warehouse_id: str, kind: str, object_id: str | None) -> dict[str, Any]:
    """``{"protected": bool | None, "error": str | None}``: the state the page shows next to its toggle
    (None with the API's message when it cannot be read, e.g. no uuid or not allowed)."""
    if not object_id:
        return {"protected": None, "error": f"The {kind} has no id to look its protection up by."}
    try:
        answer = await api().management("GET", protection_api_path(warehouse_id, kind, object_id))
    except ApiError as error:
        return {"protected": None, "error": str(error)}
    return {"protected": bool(answer.get("protected")), "error": None}


@blueprint.post("/warehouses/<warehouse_id>/protection")
async def set_protection(warehouse_id: str):
    """Protect or unprotect the warehouse (``kind=warehouse``) or a namespace, table or view of it."""
    form = await request.form
    kind, protected = form.get("kind") or "warehouse", form.get("protected") == "true"
    back = safe_next(form.get("next")) if form.get("next") else url_for("console.warehouse",
                                                                          warehouse_id=warehouse_id)
    if kind not in PROTECTABLE:
        await flash(f"Only a {', '.join(PROTECTABLE)} can be protected, not a {kind!r}.", "error")
        return redirect(back)
    noun = kind.replace("-", " ").capitalize()
    what = f"{noun} {form.get('label')!r}" if form.get("label") else noun
    path = protection_api_path(warehouse_id, kind, form.get("id"))
    return await act(lambda: api().management("POST", path, json={"protected": protected}),
                     f"{what} is protected." if protected else f"{what} is no longer protected.", back)


@blueprint.post("/warehouses/<warehouse_id>/delete")
async def delete_warehouse(warehouse_id: str):
    force = (await request.form).get("force") == "true"
    try:
        await api().management("DELETE", f"/warehouse/{warehouse_id}", force="true" if force else None)
    except ApiError as error:
        await flash(str(error), "error")
        return redirect(url_for("console.warehouse", warehouse_id=warehouse_id))
    await flash("Warehouse deleted.", "success")
    return redirect(url_for("console.warehouses"))


@blueprint.post("/warehouses/<warehouse_id>/undrop")
async def undrop(warehouse_id: str):
    form = await request.form
    targets = [{"type": form.get("type", "table"), "id": form.get("id", "")}]
    back = safe_next(form.get("next")) if form.get("next") else url_for("console.warehouse", warehouse_id=warehouse_id)
    return await act(
        lambda: api().management("POST", f"/warehouse/{warehouse_id}/deleted-tabulars/undrop",
                                 json={"targets": targets}),
        f"{form.get('name') or 'Item'} restored.", back)


# ---------------------------------------------------------------- namespaces, tables, views


async def namespace_tree(details: dict[str, Any], current: list[str]) -> list[dict[str, Any]]:
    """The namespaces of a warehouse as a tree expanded along ``current``: each level is one
    (bounded) ``GET .../namespaces?parent=`` call, so a big catalog costs depth, not size."""

    async def level(parent: list[str]) -> dict[str, Any]:
        answer = await api().catalog("GET", details["name"], "/namespaces",
                                     parent=encode_namespace(parent) if parent else None, pageSize=TREE_CHILDREN)
        nodes = []
        for ns in answer.get("namespaces", []):
            node = {"parts": ns, "name": ns[-1], "children": None, "more": False}
            if current[: len(ns)] == ns:
                child = await level(ns)
                node["children"], node["more"] = child["nodes"], child["more"]
            nodes.append(node)
        return {"nodes": nodes, "more": bool(answer.get("next-page-token"))}

    root = await level([])
    return [{"parts": [], "name": details["name"], "children": root["nodes"], "more": root["more"]}]


async def child_namespaces(warehouse_name: str, parent: list[str]) -> dict[str, Any]:
    """One page of the namespaces directly below ``parent`` (the tree shows a bounded level only)."""
    return await api().catalog("GET", warehouse_name, "/namespaces", returnProtectionStatus="true",
                               parent=encode_namespace(parent) if parent else None,
                               pageToken=request.args.get("ns_token"), pageSize=page_size())


@blueprint.get("/warehouses/<warehouse_id>/namespace")
async def namespace(warehouse_id: str):
    details = await warehouse_of(warehouse_id)
    parts = namespace_arg()
    if not parts:
        return redirect(url_for("console.warehouse", warehouse_id=warehouse_id))
    segment = encode_namespace(parts)
    name = details["name"]
    properties = await api().catalog("GET", name, f"/namespaces/{segment}", returnUuid="true")
    tables = await api().catalog("GET", name, f"/namespaces/{segment}/tables", returnProtectionStatus="true",
                                 pageToken=request.args.get("tables_token"), pageSize=page_size())
    views = await api().catalog("GET", name, f"/namespaces/{segment}/views", returnProtectionStatus="true",
                                pageToken=request.args.get("views_token"), pageSize=page_size())
    generic = await api().generic("GET", name, f"/namespaces/{segment}/generic-tables",
                                  pageToken=request.args.get("generic_token"), pageSize=page_size())
    children = await child_namespaces(name, parts)
    tree = await namespace_tree(details, parts)
    protection = await protection_of(warehouse_id, "namespace", properties.get("namespace-uuid"))
    return await render_template("namespace.html", warehouse=details, ns=parts, properties=properties,
                                 tables=tables, views=views, generic=generic, children=children, tree=tree,
                                 current_ns=parts,
                                 protection=protection)


@blueprint.post("/warehouses/<warehouse_id>/namespaces")
async def create_namespace(warehouse_id: str):
    form = await request.form
    parent = namespace_parts(form.getlist("parent"))
    parts = [*parent, form.get("name", "")]

    async def create():
        details = await warehouse_of(warehouse_id)
        await api().catalog("POST", details["name"], "/namespaces", json={"namespace": parts, "properties": {}})

    return await act(create, f"Namespace {'.'.join(parts)!r} created.",
                     url_for("console.namespace", warehouse_id=warehouse_id, ns=ns_param(parts)))


@blueprint.post("/warehouses/<warehouse_id>/namespace/delete")
async def delete_namespace(warehouse_id: str):
    parts = namespace_parts((await request.form).getlist("ns"))

    async def delete():
        details = await warehouse_of(warehouse_id)
        await api().catalog("DELETE", details["name"], f"/namespaces/{encode_namespace(parts)}")

    try:
        await delete()
    except ApiError as error:
        await flash(str(error), "error")
        return redirect(url_for("console.namespace", warehouse_id=warehouse_id, ns=ns_param(parts)))
    await flash(f"Namespace {'.'.join(parts)!r} deleted.", "success")
    parent = parts[:-1]
    if parent:
        return redirect(url_for("console.namespace", warehouse_id=warehouse_id, ns=ns_param(parent)))
    return redirect(url_for("console.warehouse", warehouse_id=warehouse_id))


def _by_id(items: list[dict[str, Any]], key: str, wanted: Any) -> dict[str, Any] | None:
    return next((item for item in items if item.get(key) == wanted), None)


def table_overview(metadata: dict[str, Any], snapshot_limit: int | None = SNAPSHOT_ROWS) -> dict[str, Any]:
    """What the table page shows, picked out of the table metadata the API returned."""
    schema = _by_id(metadata.get("schemas", []), "schema-id", metadata.get("current-schema-id")) or {}
    columns = {f["id"]: f["name"] for f in schema.get("fields", [])}
    spec = _by_id(metadata.get("partition-specs", []), "spec-id", metadata.get("default-spec-id")) or {}
    order = _by_id(metadata.get("sort-orders", []), "order-id", metadata.get("default-sort-order-id")) or {}
    snapshots = sorted(metadata.get("snapshots") or [], key=lambda s: s.get("timestamp-ms", 0))
    total_snapshots = len(snapshots)
    if snapshot_limit is not None:
        snapshots = snapshots[-snapshot_limit:]
    refs = metadata.get("refs") or {}
    heads: dict[int, list[str]] = {}
    for ref_name, ref in refs.items():
        heads.setdefault(ref.get("snapshot-id"), []).append(ref_name)
    timeline = [
        {"id": str(s["snapshot-id"]), "parent": str(s.get("parent-snapshot-id") or ""),
         "ts": s.get("timestamp-ms"), "op": (s.get("summary") or {}).get("operation", ""),
         "refs": heads.get(s["snapshot-id"], []),
         "current": s["snapshot-id"] == metadata.get("current-snapshot-id")}
        for s in snapshots
    ]
    return {
        "schema": schema,
        "type_text": lambda t: t if isinstance(t, str) else json.dumps(t),
        "partition_fields": [{**f, "source": columns.get(f.get("source-id"), f.get("source-id"))}
                             for f in spec.get("fields", [])],
        "sort_fields": [{**f, "source": columns.get(f.get("source-id"), f.get("source-id"))}
                        for f in order.get("fields", [])],
        "snapshots": list(reversed(snapshots)),
        "total_snapshots": total_snapshots,
        "refs": refs,
        "timeline": timeline,
    }


@blueprint.post("/warehouses/<warehouse_id>/tabular/drop")
async def drop_tabular(warehouse_id: str):
    form = await request.form
    parts, name, kind = namespace_parts(form.getlist("ns")), form.get("name", ""), form.get("kind")
    collection = "views" if kind == "view" else "tables"
    label = "View" if kind == "view" else "Table"
    details = await warehouse_of(warehouse_id)
    try:
        await api().catalog("DELETE", details["name"],
                            f"/namespaces/{encode_namespace(parts)}/{collection}/{encode_namespace([name])}",
                            purgeRequested="true" if form.get("purge") == "true" else None)
    except ApiError as error:
        await flash(str(error), "error")
        return redirect(url_for(f"console.{kind or 'table'}", warehouse_id=warehouse_id, ns=ns_param(parts),
                                name=name))
    back = url_for("console.namespace", warehouse_id=warehouse_id, ns=ns_param(parts))
    await flash(json.dumps(dropped_notice(details, label, name, kind or "table", form.get("id"), back)), "undrop")
    return redirect(back)


def dropped_notice(warehouse: dict[str, Any], label: str, name: str, kind: str, tabular_id: str | None,
                   back: str) -> dict[str, Any]:
    """What the page after a drop says, with an Undrop button while the warehouse keeps dropped items."""
    profile = warehouse.get("delete-profile") or {}
    if profile.get("type") != "soft":
        return {"text": f"{label} {name!r} dropped. Warehouse {warehouse['name']!r} deletes at once (delete profile "
                        f"hard): it cannot be restored."}
    seconds = profile.get("expiration-seconds")
    window = f" for {formatting.duration(seconds)}" if seconds else ""
    return {"text": f"{label} {name!r} dropped. It stays restorable{window}: undrop it here, or later from the "
                    f"warehouse's soft-deleted list.",
            "id": tabular_id, "type": kind, "name": name, "warehouse": warehouse["warehouse-id"], "next": back}


@blueprint.get("/warehouses/<warehouse_id>/view")
async def view(warehouse_id: str):
    details = await warehouse_of(warehouse_id)
    parts, name = namespace_arg(), request.args.get("name", "")
    loaded = await api().catalog("GET", details["name"], f"/namespaces/{encode_namespace(parts)}/views/"
                                 f"{encode_namespace([name])}")
    metadata = loaded.get("metadata", {})
    versions = sorted(metadata.get("versions", []), key=lambda v: v.get("version-id", 0), reverse=True)
    current = _by_id(versions, "version-id", metadata.get("current-version-id")) or (versions[0] if versions else {})
    schema = _by_id(metadata.get("schemas", []), "schema-id", current.get("schema-id")) or {}
    tree = await namespace_tree(details, parts)
    protection = await protection_of(warehouse_id, "view", metadata.get("view-uuid"))
    return await render_template("view.html", warehouse=details, ns=parts, name=name, loaded=loaded,
                                 metadata=metadata, versions=versions, current=current, schema=schema, tree=tree,
                                 current_ns=parts, protection=protection)


# ---------------------------------------------------------------- generic tables (Lance, Parquet, ...)


def generic_table_path(parts: list[str], name: str) -> str:
    return f"/namespaces/{encode_namespace(parts)}/generic-tables/{encode_namespace([name])}"


async def generic_table_id(warehouse_name: str, parts: list[str], name: str) -> str | None:
    """The id of a generic table (its protection and permissions go by id): the API names ids in its
    listing only, which is sorted by name, so the pages are read until the name shows up."""
    token = None
    while True:
        page = await api().generic("GET", warehouse_name, f"/namespaces/{encode_namespace(parts)}/generic-tables",
                                   pageToken=token, pageSize=1000)
        found = next((i.get("id") for i in page.get("identifiers", []) if i["name"] == name), None)
        token = page.get("next-page-token")
        if found is not None or not token:
            return found


@blueprint.get("/warehouses/<warehouse_id>/generic-table")
async def generic_table(warehouse_id: str):
    """A generic table: format, location, schema, statistics, properties; rename, protect, drop."""
    details = await warehouse_of(warehouse_id)
    parts, name = namespace_arg(), request.args.get("name", "")
    loaded = await api().generic("GET", details["name"], generic_table_path(parts, name))
    table_id = await generic_table_id(details["name"], parts, loaded["table"]["name"])
    tree = await namespace_tree(details, parts)
    protection = await protection_of(warehouse_id, "generic-table", table_id)
    pretty = {key: json.dumps(loaded["table"][key], indent=2, sort_keys=True)
              for key in ("schema", "statistics") if key in loaded["table"]}
    return await render_template("generic_table.html", warehouse=details, ns=parts, name=name, loaded=loaded,
                                 table=loaded["table"], table_id=table_id, pretty=pretty, tree=tree,
                                 current_ns=parts, protection=protection)


@blueprint.post("/warehouses/<warehouse_id>/generic-table/rename")
async def rename_generic_table(warehouse_id: str):
    form = await request.form
    parts, name = namespace_parts(form.getlist("ns")), form.get("name", "")
    new_parts = [p for p in (form.get("new_namespace") or "").split(".") if p] or parts
    new_name = (form.get("new_name") or "").strip()

    async def rename():
        details = await warehouse_of(warehouse_id)
        await api().generic("POST", details["name"], "/generic-tables/rename", json={
            "source": {"namespace": parts, "name": name}, "destination": {"namespace": new_parts, "name": new_name},
        })

    try:
        await rename()
    except ApiError as error:
        await flash(str(error), "error")
        return redirect(url_for("console.generic_table", warehouse_id=warehouse_id, ns=ns_param(parts), name=name))
    await flash(f"Generic table {name!r} renamed to {'.'.join([*new_parts, new_name])!r}.", "success")
    return redirect(url_for("console.generic_table", warehouse_id=warehouse_id, ns=ns_param(new_parts), name=new_name))


@blueprint.post("/warehouses/<warehouse_id>/generic-table/drop")
async def drop_generic_table(warehouse_id: str):
    form = await request.form
    parts, name = namespace_parts(form.getlist("ns")), form.get("name", "")

    async def drop():
        details = await warehouse_of(warehouse_id)
        await api().generic("DELETE", details["name"], generic_table_path(parts, name),
                            purgeRequested="true" if form.get("purge") == "true" else "false")

    try:
        await drop()
    except ApiError as error:
        await flash(str(error), "error")
        return redirect(url_for("console.generic_table", warehouse_id=warehouse_id, ns=ns_param(parts), name=name))
    await flash(f"Generic table {name!r} dropped.", "success")
    return redirect(url_for("console.namespace", warehouse_id=warehouse_id, ns=ns_param(parts)))


# ---------------------------------------------------------------- tasks


@blueprint.get("/warehouses/<warehouse_id>/tasks")
async def tasks(warehouse_id: str):
    details = await warehouse_of(warehouse_id)
    info = await api().management("GET", "/info")
    body: dict[str, Any] = {"page-size": page_size()}
    if request.args.get("page_token"):
        body["page-token"] = request.args["page_token"]
    if request.args.get("queue"):
        body["queue-name"] = [request.args["queue"]]
    if request.args.get("status"):
        body["status"] = [request.args["status"]]
    listing = await api().management("POST", f"/warehouse/{warehouse_id}/task/list", json=body)
    queue_config, queue_config_error = None, None
    if request.args.get("queue"):  # the chosen queue's configuration for this warehouse
        queue_config, queue_config_error = await or_error(
            api().management("GET", queue_config_path(warehouse_id, request.args["queue"])))
    tree = await namespace_tree(details, []) if details.get("status") == "active" else [
        {"parts": [], "name": details["name"], "children": [], "more": False}]
    return await render_template("tasks.html", warehouse=details, listing=listing, queues=info.get("queues", []),
                                 queue_config=queue_config, queue_config_error=queue_config_error, tree=tree,
                                 current_ns=[])


def queue_config_path(warehouse_id: str, queue: str) -> str:
    return f"/warehouse/{warehouse_id}/task-queue/{quote(queue, safe='')}/config"


@blueprint.post("/warehouses/<warehouse_id>/tasks/queue-config")
async def set_queue_config(warehouse_id: str):
    """Replace a queue's configuration for this warehouse (JSON as the queue's plugin defines it)."""
    form = await request.form
    queue = form.get("queue", "")

    async def save():
        try:
            config = json.loads(form.get("queue-config") or "{}")
        except ValueError as error:
            raise FormInputError(f"The queue configuration is not valid JSON: {error}") from None
        body: dict[str, Any] = {"queue-config": config}
        if form.get("max-seconds-since-last-heartbeat"):
            try:
                body["max-seconds-since-last-heartbeat"] = int(form["max-seconds-since-last-heartbeat"])
            except ValueError:
                raise FormInputError("The heartbeat timeout must be a whole number of seconds") from None
        await api().management("POST", queue_config_path(warehouse_id, queue), json=body)

    return await act(save, f"Configuration of queue {queue!r} saved.",
                     url_for("console.tasks", warehouse_id=warehouse_id, queue=queue))


# what Run now / Cancel costs, per queue (Lakekeeper's expiration queue is named tabular_expiration)
TASK_CONSEQUENCES: dict[str, dict[str, str]] = {
    "soft_deletion": {
        "run-now": "Run now deletes {entity} for good right away: its undrop window ends now instead of at {when}, "
                   "and it can never be restored. Continue?",
        "cancel": "Cancel stops the expiry of {entity}: it stays soft-deleted and restorable with Undrop, and is "
                  "not deleted for good at {when}. Continue?",
    },
    "tabular_purge": {
        "run-now": "Run now deletes the data and metadata files of {entity} from storage right away. They cannot be "
                   "recovered. Continue?",
        "cancel": "Cancel leaves the files of {entity} in storage: nothing will remove them later. Continue?",
    },
}
TASK_CONSEQUENCES["tabular_expiration"] = TASK_CONSEQUENCES["soft_deletion"]
DEFAULT_TASK_CONSEQUENCES = {
    "run-now": "Run now starts the {queue} task of {entity} right away instead of at {when}. Continue?",
    "cancel": "Cancel stops the {queue} task of {entity}: its work will not be done. Continue?",
}


@blueprint.app_template_global()
def task_consequence(queue: str, action: str, entity: str, when: str) -> str:
    """The confirmation a task action asks for: what will be lost."""
    text = TASK_CONSEQUENCES.get(queue, DEFAULT_TASK_CONSEQUENCES).get(action, "Continue?")
    return text.format(queue=queue, entity=entity, when=when)


@blueprint.post("/warehouses/<warehouse_id>/tasks/control")
async def control_task(warehouse_id: str):
    form = await request.form
    action = form.get("action-type", "")
    body = {"task-ids": [form.get("task-id", "")], "action": {"action-type": action}}
    label = {"cancel": "cancelled", "run-now": "scheduled to run now"}.get(action, action)
    return await act(lambda: api().management("POST", f"/warehouse/{warehouse_id}/task/control", json=body),
                     f"Task {label}.", url_for("console.tasks", warehouse_id=warehouse_id))


# ---------------------------------------------------------------- users, roles, permissions


@blueprint.get("/identities")
async def identities():
    users = await api().management("GET", "/user", pageToken=request.args.get("users_token"), pageSize=page_size())
    roles = await api().management("GET", "/role", pageToken=request.args.get("roles_token"), pageSize=page_size())
    return await render_template("identities.html", users=users, roles=roles)


@blueprint.post("/roles")
async def create_role():
    form = await request.form
    body = {"name": form.get("name", ""), "description": form.get("description") or None}
    return await act(lambda: api().management("POST", "/role", json=body),
                     f"Role {body['name']!r} created.", url_for("console.identities"))


@blueprint.get("/roles/<role_id>")
async def role(role_id: str):
    """One role: rename or describe it, its direct members (users and roles) page by page, add and remove."""
    details = await api().management("GET", f"/role/{quote(role_id, safe='')}")
    members = await api().management("GET", f"/role/{quote(role_id, safe='')}/members",
                                     pageToken=request.args.get("members_token"), pageSize=page_size())
    return await render_template("role.html", role=details, members=members)


@blueprint.post("/roles/<role_id>")
async def update_role(role_id: str):
    form = await request.form
    body = {"name": form.get("name", ""), "description": form.get("description") or None}
    return await act(lambda: api().management("POST", f"/role/{quote(role_id, safe='')}", json=body),
                     f"Role {body['name']!r} saved.", url_for("console.role", role_id=role_id))


@blueprint.post("/roles/<role_id>/members")
async def change_role_member(role_id: str):
    """Add (``op=add``) or remove (``op=remove``) one user or role of this role."""
    form = await request.form
    member_type = "role" if form.get("member-type") == "role" else "user"
    member_id = (form.get("member-id") or "").strip()
    path = f"/role/{quote(role_id, safe='')}/members"
    if form.get("op") == "remove":
        return await act(
            lambda: api().management("DELETE", f"{path}/{member_type}/{quote(member_id, safe='')}"),
            f"Removed {member_type} {member_id}.", url_for("console.role", role_id=role_id))
    return await act(
        lambda: api().management("POST", path, json={"members": [{"type": member_type, "id": member_id}]}),
        f"Added {member_type} {member_id}.", url_for("console.role", role_id=role_id))


@blueprint.post("/roles/<role_id>/delete")
async def delete_role(role_id: str):
    return await act(lambda: api().management("DELETE", f"/role/{role_id}"), "Role deleted.",
                     url_for("console.identities"))


@blueprint.post("/users/<user_id>/delete")
async def delete_user(user_id: str):
    return await act(lambda: api().management("DELETE", f"/user/{user_id}"), "User deleted.",
                     url_for("console.identities"))
