"""The permissions API (``/management/v1/permissions/...``, Lakekeeper's paths and JSON).

My access, assignments, managed access and the check, for server, project, warehouse, namespace,
table, view, generic table and role. The configured authorizer keeps and judges the grants; this module finds the
object (404 when it does not exist or the caller may not see it), asks the host's one AUTHZ module
and turns assignments to and from Lakekeeper's JSON. The allow-all authorizer keeps no grants: its
assignment and managed-access calls answer 501.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from lakekeeper_host.errors import CatalogError, bad_request, forbidden, not_found
from lakekeeper_host.server import events
from lakekeeper_host.server.authorize import SEE, allowed_actions, authorize
from lakekeeper_host.server.resolve import resolve_project_id
from lakekeeper_host.service.authz import ACTIONS, Assignment, Principal, Resource
from lakekeeper_host.service.request import RequestMetadata
from lakekeeper_host.service.state import AppState
from lakekeeper_host.store import namespaces as namespace_store
from lakekeeper_host.store import projects as project_store
from lakekeeper_host.store import roles as role_store
from lakekeeper_host.store import tabulars as tabular_store
from lakekeeper_host.store import warehouses as warehouse_store

KINDS = ("server", "project", "warehouse", "namespace", "table", "view", "generic_table", "role")
MANAGED_ACCESS_KINDS = ("warehouse", "namespace")


# ---------------------------------------------------------------- finding the object


def parse_uuid(value: str | None, what: str) -> str:
    try:
        return str(uuid.UUID(str(value)))
    except (ValueError, TypeError):
        raise bad_request(f"Invalid {what} {str(value)[:100]!r}: expected a UUID", "InvalidId") from None


def missing_object(kind: str, object_id: str) -> CatalogError:
    types = {"project": "ProjectNotFound", "warehouse": "WarehouseNotFound", "namespace": "NoSuchNamespaceException",
             "table": "NoSuchTableException", "view": "NoSuchViewException",
             "generic_table": "NoSuchGenericTableException", "role": "RoleNotFound"}
    return not_found(f"{kind.replace('_', ' ').capitalize()} {object_id} does not exist", types[kind])


async def resolve(
    state: AppState, meta: RequestMetadata, kind: str, object_id: str | None = None, warehouse_id: str | None = None
) -> Resource:
    """The object of a permissions route; 404 when it does not exist (a table or view also when it
    lives in another warehouse than the path says)."""
    if kind == "server":
        return Resource("server", state.server_id or "server")
    if kind == "project":
        project_id = resolve_project_id(state, meta.project_id, object_id)
        if await project_store.get_project(state.store, project_id) is None:
            raise missing_object("project", project_id)
        return Resource("project", project_id)
    if kind not in KINDS:
        raise not_found(f"No permissions for a {kind!r}", "NotFound")
    object_id = parse_uuid(object_id, f"{kind} id")
    if kind == "warehouse":
        if await warehouse_store.get_warehouse(state.store, object_id) is None:
            raise missing_object("warehouse", object_id)
        return Resource("warehouse", object_id, object_id)
    if kind == "namespace":
        namespace = await namespace_store.get_namespace_by_id(state.store, object_id)
        if namespace is None or (warehouse_id is not None
                                 and namespace.warehouse_id != parse_uuid(warehouse_id, "warehouse id")):
            raise missing_object("namespace", object_id)
        return Resource("namespace", object_id, namespace.warehouse_id)
    if kind in ("table", "view", "generic_table"):
        tabular = await tabular_store.get_tabular_by_id(state.store, object_id)
        if (tabular is None or tabular.typ != kind or tabular.deleted_at is not None
                or (warehouse_id is not None and tabular.warehouse_id != parse_uuid(warehouse_id, "warehouse id"))):
            raise missing_object(kind, object_id)
        return Resource(kind, object_id, tabular.warehouse_id)
    if await role_store.get_role(state.store, object_id) is None:
        raise missing_object("role", object_id)
    return Resource("role", object_id)


async def require(state: AppState, meta: RequestMetadata, action: str, resource: Resource) -> None:
    """403 when the caller may see the object but not do ``action``; 404 when it may not see it."""
    hidden = missing_object(resource.kind, resource.id) if resource.kind in SEE else None
    await authorize(state, meta, action, resource.kind, resource.id, resource.warehouse_id, hidden=hidden)


async def require_visible(state: AppState, meta: RequestMetadata, resource: Resource) -> None:
    see = SEE.get(resource.kind)
    if see is not None:
        await require(state, meta, see, resource)


# ---------------------------------------------------------------- assignments as JSON


def principal_from_query(user: str | None, role: str | None) -> Principal | None:
    """``?principalUser=`` / ``?principalRole=`` (at most one)."""
    if user and role:
        raise bad_request("Give either principalUser or principalRole, not both", "InvalidPrincipal")
    if user:
        return Principal("user", user)
    if role:
        return Principal("role", parse_uuid(role, "role id"))
    return None


def principal_from_json(body: Any, where: str) -> Principal:
    """``{"user": "<id>"}`` or ``{"role": "<uuid>"}``."""
    if not isinstance(body, dict) or len([k for k in ("user", "role") if body.get(k) is not None]) != 1:
        raise bad_request(f"Invalid request body: {where} needs exactly one of user or role", "InvalidPrincipal")
    if body.get("user") is not None:
        if not isinstance(body["user"], str) or not body["user"]:
            raise bad_request(f"Invalid request body: {where}.user must be a user id", "InvalidPrincipal")
        return Principal("user", body["user"])
    return Principal("role", parse_uuid(body["role"], "role id"))


def assignment_from_json(body: Any, where: str) -> Assignment:
    """``{"type": "<relation>", "user": "<id>"}`` or ``{"type": "<relation>", "role": "<uuid>"}``."""
    if not isinstance(body, dict) or not isinstance(body.get("type"), str) or not body["type"]:
        raise bad_request(f"Invalid request body: {where}.type must name a relation", "InvalidAssignment")
    return Assignment(body["type"], principal_from_json(body, where))


def assignment_json(assignment: Assignment) -> dict[str, str]:
    return {"type": assignment.relation, assignment.principal.kind: assignment.principal.id}


def parse_assignment_update(body: Any) -> tuple[list[Assignment], list[Assignment]]:
    """``{"writes": [...], "deletes": [...]}`` (either may be left out)."""
    if not isinstance(body, dict):
        raise bad_request("Invalid request body: expected {\"writes\": [...], \"deletes\": [...]}",
                          "InvalidAssignment")
    lists = []
    for key in ("writes", "deletes"):
        items = body.get(key) or []
        if not isinstance(items, list):
            raise bad_request(f"Invalid request body: {key} must be a list", "InvalidAssignment")
        lists.append([assignment_from_json(item, f"{key}[{i}]") for i, item in enumerate(items)])
    return lists[0], lists[1]


# ---------------------------------------------------------------- the routes' logic


async def get_access(
    state: AppState, meta: RequestMetadata, resource: Resource, principal: Principal | None = None
) -> list[str]:
    """``GET .../access``: the caller's allowed actions, or (with ``read_assignments`` on the
    object) those of another user or role. An object the caller may do nothing with is a 404."""
    if principal is not None:
        await require(state, meta, "read_assignments", resource)
        return await allowed_actions(state, meta, resource, principal)
    actions = await allowed_actions(state, meta, resource)
    if not actions and resource.kind != "server":
        raise missing_object(resource.kind, resource.id)
    return actions


async def get_assignments(
    state: AppState, meta: RequestMetadata, resource: Resource, relations: Sequence[str] | None = None
) -> list[dict[str, str]]:
    await require(state, meta, "read_assignments", resource)
    found = await state.authorizer.read_assignments(resource, list(relations) if relations else None)
    return [assignment_json(a) for a in found]


def resource_type(kind: str) -> str:
    """A kind as the Grants API spells it (``generic-table``)."""
    return kind.replace("_", "-")


def resource_json(resource: Resource) -> dict[str, Any]:
    """Where a grant is held, as Lakekeeper's grant listing names it: ``{"type": ..., <its ids>}``."""
    kind = resource_type(resource.kind)
    if resource.kind == "server":
        return {"type": kind}
    if resource.warehouse_id is None or resource.kind == "warehouse":
        return {"type": kind, f"{kind}-id": resource.id}
    return {"type": kind, "warehouse-id": resource.warehouse_id, f"{kind}-id": resource.id}


async def write_assignments(
    state: AppState,
    meta: RequestMetadata,
    resource: Resource,
    writes: Sequence[Assignment],
    deletes: Sequence[Assignment],
) -> None:
    """Grant ``writes`` and revoke ``deletes`` through the authorizer (which checks the caller may),
    then publish one event per grant that changed: the grants before the write tell which (an
    authorizer writes idempotently and does not say)."""
    if meta.actor is None:  # pragma: no cover - every HTTP request has an actor
        raise forbidden("Grants need a caller")
    before = set(await state.authorizer.read_assignments(resource))
    await state.authorizer.write_assignments(meta.actor, resource, writes, deletes)
    events.grants_changed(
        state,
        meta,
        resource,
        resource_json(resource),
        [a for a in writes if a not in before],
        [a for a in deletes if a in before],
    )


async def update_assignments(state: AppState, meta: RequestMetadata, resource: Resource, body: Any) -> None:
    """``POST .../assignments``: the authorizer checks that the caller may grant each relation. The body
    is read only once the caller may see the object: a 400 for a hidden one would reveal that it exists."""
    await require_visible(state, meta, resource)
    writes, deletes = parse_assignment_update(body)
    await write_assignments(state, meta, resource, writes, deletes)


def _managed_access_kind(resource: Resource) -> None:
    if resource.kind not in MANAGED_ACCESS_KINDS:
        raise bad_request(f"A {resource.kind} has no managed access", "InvalidResource")


async def get_managed_access(state: AppState, meta: RequestMetadata, resource: Resource) -> dict[str, bool]:
    """``{"managed-access": bool}`` (a namespace adds ``"managed-access-inherited"``)."""
    _managed_access_kind(resource)
    await require_visible(state, meta, resource)
    return await state.authorizer.managed_access(resource)


async def set_managed_access(state: AppState, meta: RequestMetadata, resource: Resource, body: Any) -> None:
    _managed_access_kind(resource)
    await require_visible(state, meta, resource)  # before the body: see update_assignments
    if not isinstance(body, dict) or not isinstance(body.get("managed-access"), bool):
        raise bad_request("Invalid request body: managed-access must be true or false", "InvalidManagedAccess")
    if meta.actor is None:  # pragma: no cover - every HTTP request has an actor
        raise forbidden("Managed access needs a caller")
    await state.authorizer.set_managed_access(meta.actor, resource, body["managed-access"])


# ---------------------------------------------------------------- POST /permissions/check


async def check(state: AppState, meta: RequestMetadata, body: Any) -> bool:
    """Lakekeeper's check: ``{"identity": {"user"|"role": ...}?, "operation": {<kind>: {"action": ...,
    <ids>}}}``. Tables and views are named by id (``warehouse-id`` + ``table-id``/``view-id``) or by
    ``warehouse-id`` + ``namespace`` + ``table``/``view``; namespaces by ``namespace-id`` or
    ``warehouse-id`` + ``namespace``. Asking for someone else needs ``read_assignments`` on the object."""
    if not isinstance(body, dict) or not isinstance(body.get("operation"), dict) or len(body["operation"]) != 1:
        raise bad_request("Invalid request body: operation must name exactly one object kind", "InvalidCheck")
    ((kind, target),) = body["operation"].items()
    if kind not in KINDS or not isinstance(target, dict):
        raise bad_request(f"Invalid request body: operation.{kind} is not a checkable object", "InvalidCheck")
    action = target.get("action")
    if action not in ACTIONS.get(kind, ()):
        raise bad_request(f"Invalid request body: {action!r} is not an action on a {kind}; one of: "
                          f"{', '.join(ACTIONS.get(kind, ()))}", "InvalidCheck")
    resource = await _check_target(state, meta, kind, target)
    identity = body.get("identity")
    principal = principal_from_json(identity, "identity") if identity is not None else None
    if principal is not None and principal.kind == "user" and meta.actor is not None \
            and principal.id == meta.actor.user_id and meta.actor.assumed_role is None:
        principal = None  # asking about oneself
    if principal is None:
        await require_visible(state, meta, resource)
    else:
        await require(state, meta, "read_assignments", resource)
    return bool(await allowed_actions(state, meta, resource, principal, [action]))


async def _check_target(state: AppState, meta: RequestMetadata, kind: str, target: dict) -> Resource:
    if kind in ("server", "project", "warehouse", "role"):
        key = {"server": None, "project": "project-id", "warehouse": "warehouse-id", "role": "role-id"}[kind]
        return await resolve(state, meta, kind, target.get(key) if key else None)
    if kind == "namespace" and target.get("namespace-id") is not None:
        return await resolve(state, meta, "namespace", target["namespace-id"])
    id_key = f"{kind}-id"
    if kind in ("table", "view") and target.get(id_key) is not None:
        return await resolve(state, meta, kind, target[id_key], target.get("warehouse-id"))
    # by name: warehouse-id + namespace (+ table/view)
    warehouse_id = parse_uuid(target.get("warehouse-id"), "warehouse id")
    parts = target.get("namespace")
    if not isinstance(parts, list) or not parts or not all(isinstance(p, str) for p in parts):
        raise bad_request(f"Invalid request body: operation.{kind} needs {id_key} or warehouse-id and namespace",
                          "InvalidCheck")
    namespace = await namespace_store.get_namespace(state.store, warehouse_id, parts)
    if namespace is None:
        raise missing_object("namespace", ".".join(parts))
    if kind == "namespace":
        return Resource("namespace", namespace.id, warehouse_id)
    name = target.get(kind)
    tabular = (await tabular_store.get_tabular(state.store, namespace.id, name, kind)
               if isinstance(name, str) and name else None)
    if tabular is None:
        raise missing_object(kind, f"{'.'.join(parts)}.{name}")
    return Resource(kind, tabular.id, warehouse_id)
