"""The permission pages: an object's grants (grant, revoke, managed access), the access of a chosen user or
role with the reasons for it, and the user and role picker. Everything comes from the permissions API
(``/management/v1/permissions/...``) and the user and role API; the authorizer decides, the console
only shows and explains.

Why a principal has access is read off the grants: those on the object itself (direct), those on the
objects above it (inherited: its namespaces, the warehouse, the project, the server) and those held
by a role the principal is in, directly or through other roles (``.../roles/transitive``,
``.../member-of/transitive``).
"""

from __future__ import annotations

import asyncio
from typing import Any

from quart import jsonify, render_template, request, url_for

from lakekeeper_host.ui.api_client import ApiError, encode_namespace
from lakekeeper_host.ui.views import act, api, blueprint, namespace_parts, or_error, permissions_available

PERMISSION_KINDS = ("server", "project", "warehouse", "namespace", "table", "view", "generic-table", "role")
# the action that allows granting a relation is grant_<relation>, except ownership (change_ownership)
_OWNERSHIP_ACTION = "change_ownership"
ROLE_PAGES = 5  # pages of a principal's roles read to explain access (each up to the API's page size)
PICKER_RESULTS = 10


def grantable_relations(allowed_actions: list[str]) -> list[str]:
    """What the grant form offers: the relations the caller may grant on this object, read off its
    allowed actions (``grant_<relation>``, ``change_ownership`` for ``ownership``) as the API answers them."""
    found = [a.removeprefix("grant_") for a in allowed_actions if a.startswith("grant_")]
    return (["ownership"] if _OWNERSHIP_ACTION in allowed_actions else []) + found


def permissions_api_path(kind: str, object_id: str | None, warehouse_id: str | None) -> str:
    """The object's path under ``/management/v1`` in the permissions API."""
    if kind == "server":
        return "/permissions/server"
    if kind == "project":
        return f"/permissions/project/{object_id}" if object_id else "/permissions/project"
    if kind in ("table", "view", "generic-table"):
        return f"/permissions/warehouse/{warehouse_id}/{kind}/{object_id}"
    return f"/permissions/{kind}/{object_id}"


@blueprint.app_template_global()
def permissions_url(kind: str, object_id: str | None = None, warehouse_id: str | None = None,
                    label: str | None = None, ns: list[str] | None = None) -> str:
    """The console's page of an object's permissions; ``ns`` (the namespace a namespace, table or view is
    in, or is) lets the page name the objects above it."""
    args: dict[str, Any] = {k: v for k, v in (("id", object_id), ("warehouse", warehouse_id), ("label", label)) if v}
    if ns:
        args["ns"] = list(ns)
    return url_for("console.object_permissions", kind=kind, **args)


def _require_permissions() -> None:
    if not permissions_available():
        raise ApiError(404, "NotFound", "Permissions are managed by the authorizer; the allow-all authorizer "
                                        "keeps none.")


@blueprint.get("/permissions")
async def permissions():
    _require_permissions()
    warehouse_listing = await api().management("GET", "/warehouse")
    objects = [("server", None, "Server"), ("project", None, "Current project")] + [
        ("warehouse", w["warehouse-id"], f"Warehouse {w['name']}") for w in warehouse_listing.get("warehouses", [])
    ]
    return await render_template("permissions.html", objects=objects)


# ---------------------------------------------------------------- the objects above an object


async def object_chain(kind: str, object_id: str | None, warehouse_id: str | None,
                       ns: list[str]) -> list[dict[str, Any]]:
    """The object and those above it, nearest first, each ``{kind, id, warehouse, label}``. Namespaces
    above are looked up by name (their ids come from the catalog API); what cannot be looked up is left out."""
    chain: list[dict[str, Any]] = [{"kind": kind, "id": object_id, "warehouse": warehouse_id, "label": "this " + kind}]
    if kind in ("table", "view", "generic-table", "namespace", "warehouse") and warehouse_id:
        warehouse, _ = await or_error(api().management("GET", f"/warehouse/{warehouse_id}"))
        if warehouse is not None:
            levels = ns[:-1] if kind == "namespace" else ns
            for depth in range(len(levels), 0, -1):
                parts = levels[:depth]
                found, _ = await or_error(api().catalog("GET", warehouse["name"],
                                                        f"/namespaces/{encode_namespace(parts)}", returnUuid="true"))
                if found and found.get("namespace-uuid"):
                    chain.append({"kind": "namespace", "id": found["namespace-uuid"], "warehouse": warehouse_id,
                                  "label": "namespace " + ".".join(parts)})
            if kind != "warehouse":
                chain.append({"kind": "warehouse", "id": warehouse_id, "warehouse": warehouse_id,
                              "label": "warehouse " + warehouse["name"]})
            chain.append({"kind": "project", "id": warehouse.get("project-id"), "warehouse": None,
                          "label": "the project"})
    elif kind == "role":
        chain.append({"kind": "project", "id": None, "warehouse": None, "label": "the project"})
    if kind != "server":
        chain.append({"kind": "server", "id": None, "warehouse": None, "label": "the server"})
    return chain


# ---------------------------------------------------------------- a principal's roles and the reasons


async def roles_of(principal_kind: str, principal_id: str) -> tuple[dict[str, str], str | None]:
    """{role id: name} of every role the user or role is in, directly or through other roles."""
    path = (f"/user/{principal_id}/roles/transitive" if principal_kind == "user"
            else f"/role/{principal_id}/member-of/transitive")
    found: dict[str, str] = {}
    token = None
    for _ in range(ROLE_PAGES):
        page, error = await or_error(api().management("GET", path, pageToken=token))
        if error:
            return found, error
        for role in page.get("roles", []):
            found[role["id"]] = role.get("name") or role["id"]
        token = page.get("next-page-token")
        if not token:
            break
    return found, None


def reasons(chain: list[dict[str, Any]], assignments: list[list[dict[str, str]] | None],
            principal_kind: str, principal_id: str, roles: dict[str, str]) -> list[dict[str, str]]:
    """The grants that give the principal access: ``{relation, on, how}`` with ``how`` one of direct,
    inherited (from an object above) or through a role (on this object or one above)."""
    found = []
    for level, grants in zip(chain, assignments, strict=True):
        on_this = level is chain[0]
        for grant in grants or []:
            holder_role = grant.get("role")
            if grant.get(principal_kind) == principal_id:
                kind, how = ("direct", "direct") if on_this else ("inherited", f"inherited from {level['label']}")
            elif holder_role in roles:
                kind = "role"
                how = f"through role {roles[holder_role]}" + ("" if on_this else f", granted on {level['label']}")
            else:
                continue
            found.append({"relation": grant.get("type", ""), "on": level["label"], "how": how, "kind": kind})
    return found


async def explain_access(kind: str, object_id: str | None, warehouse_id: str | None, ns: list[str],
                         principal_kind: str, principal_id: str) -> dict[str, Any]:
    """What the principal may do on the object (the API's answer) and the grants behind it."""
    path = permissions_api_path(kind, object_id, warehouse_id)
    query = {"principalUser": principal_id} if principal_kind == "user" else {"principalRole": principal_id}
    access, access_error = await or_error(api().management("GET", path + "/access", **query))
    chain = await object_chain(kind, object_id, warehouse_id, ns)
    answers = await asyncio.gather(*(
        or_error(api().management("GET", permissions_api_path(level["kind"], level["id"], level["warehouse"])
                                  + "/assignments")) for level in chain))
    unreadable = [level["label"] for level, (_, error) in zip(chain, answers, strict=True) if error]
    roles, roles_error = await roles_of(principal_kind, principal_id)
    grants = [(answer or {}).get("assignments", []) if error is None else None for answer, error in answers]
    return {
        "principal_kind": principal_kind, "principal_id": principal_id,
        "name": await principal_name(principal_kind, principal_id),
        "actions": (access or {}).get("allowed-actions", []), "error": access_error,
        "reasons": reasons(chain, grants, principal_kind, principal_id, roles),
        "roles": roles, "roles_error": roles_error, "unreadable": unreadable,
    }


async def principal_name(kind: str, principal_id: str) -> str:
    """The user's or role's name, else its id."""
    found, _ = await or_error(api().management("GET", f"/{kind}/{principal_id}"))
    return (found or {}).get("name") or principal_id


@blueprint.get("/principals")
async def principals():
    """The picker's suggestions: ``[{kind, id, name, detail}]`` for ``?q=`` among users (``kind=user``) or
    roles (``kind=role``), as the API's search answers them."""
    kind = "role" if request.args.get("kind") == "role" else "user"
    text = (request.args.get("q") or "").strip()
    if not text:
        return jsonify([])
    try:
        found = await api().management("POST", f"/search/{kind}", json={"search": text})
    except ApiError as error:
        return jsonify({"error": str(error)}), error.status
    items = found.get("users" if kind == "user" else "roles", [])[:PICKER_RESULTS]
    return jsonify([{"kind": kind, "id": item["id"], "name": item.get("name") or item["id"],
                     "detail": item.get("email") or item.get("description") or ""} for item in items])


# ---------------------------------------------------------------- one object's page


@blueprint.get("/permissions/<kind>")
async def object_permissions(kind: str):
    """One object's permissions: my access, its assignments (with revoke), a grant form, the access of a
    chosen user or role and why, and, for warehouses and namespaces, managed access."""
    _require_permissions()
    if kind not in PERMISSION_KINDS:
        raise ApiError(404, "NotFound", f"No permissions for a {kind!r}")
    object_id, warehouse_id = request.args.get("id"), request.args.get("warehouse")
    ns = namespace_parts(request.args.getlist("ns"))
    path = permissions_api_path(kind, object_id, warehouse_id)
    access = await api().management("GET", path + "/access")
    assignments, assignments_error = await or_error(api().management("GET", path + "/assignments"))
    managed, managed_error = (None, None)
    if kind in ("warehouse", "namespace"):
        managed, managed_error = await or_error(api().management("GET", path))
    names = {}
    for assignment in (assignments or {}).get("assignments", []):
        holder = ("role", assignment["role"]) if assignment.get("role") else ("user", assignment.get("user", ""))
        if holder not in names and len(names) < 50:
            names[holder] = await principal_name(*holder)
    explained = None
    principal = (request.args.get("principal") or "").strip()
    if principal:
        principal_kind = "role" if request.args.get("principal-type") == "role" else "user"
        explained = await explain_access(kind, object_id, warehouse_id, ns, principal_kind, principal)
    return await render_template(
        "permission_object.html", kind=kind, object_id=object_id, warehouse_id=warehouse_id, ns=ns,
        label=request.args.get("label") or f"{kind} {object_id or ''}".strip(),
        actions=access.get("allowed-actions", []),
        assignments=(assignments or {}).get("assignments", []), assignments_error=assignments_error,
        names={f"{k}:{i}": n for (k, i), n in names.items()},
        managed=managed, managed_error=managed_error, relations=grantable_relations(access.get("allowed-actions", [])),
        explained=explained,
    )


def _back_to_object(form: Any, kind: str) -> str:
    return permissions_url(kind, form.get("id") or None, form.get("warehouse") or None, form.get("label") or None,
                           namespace_parts(form.getlist("ns")))


@blueprint.post("/permissions/<kind>/assignments")
async def change_assignment(kind: str):
    """Grant (``op=write``) or revoke (``op=delete``) one assignment."""
    _require_permissions()
    form = await request.form
    principal_kind = "role" if form.get("principal-type") == "role" else "user"
    assignment = {"type": (form.get("relation") or "").strip(), principal_kind: (form.get("principal") or "").strip()}
    op = "deletes" if form.get("op") == "delete" else "writes"
    path = permissions_api_path(kind, form.get("id") or None, form.get("warehouse") or None)
    what = f"{assignment['type']} for {principal_kind} {assignment[principal_kind]}"
    return await act(lambda: api().management("POST", path + "/assignments", json={op: [assignment]}),
                     f"Granted {what}." if op == "writes" else f"Revoked {what}.", _back_to_object(form, kind))


@blueprint.post("/permissions/<kind>/managed-access")
async def change_managed_access(kind: str):
    _require_permissions()
    form = await request.form
    enabled = form.get("managed-access") == "true"
    path = permissions_api_path(kind, form.get("id") or None, form.get("warehouse") or None)
    return await act(lambda: api().management("POST", path + "/managed-access", json={"managed-access": enabled}),
                     f"Managed access turned {'on' if enabled else 'off'}.", _back_to_object(form, kind))
