"""``POST /management/v1/action/batch-check``: many permission questions in one request.

Lakekeeper's shapes (``api/management/v1/check.rs``)::

    {"checks": [{"id"?: str, "identity"?: {"user": id} | {"role": uuid},
                 "operation": {<kind>: {"action": str, <how the object is named>}}}],
     "error-on-not-found"?: bool}
    -> {"results": [{"id"?: str, "allowed": bool}]}     (in request order)

``<kind>`` is ``server``, ``project`` (``project-id``, default the request's project),
``warehouse`` (``warehouse-id``), ``namespace`` (``warehouse-id`` + ``namespace-id`` or
``namespace`` as a list of parts), ``table`` / ``view`` (``warehouse-id`` + ``table-id`` /
``view-id``, or ``warehouse-id`` + ``namespace`` + ``table`` / ``view``). Actions are the names of
``ACTIONS`` (the ``/permissions/*/access`` vocabulary).

An object that does not exist is denied (``allowed: false``); with ``error-on-not-found`` it is a
404 instead -- and so is one the caller may not see (stricter than Lakekeeper, which answers 404
only for a missing row: a batch check must not reveal what a caller cannot see).

Asking about another user or a role (``identity``) needs ``read_assignments`` on the object, as for
``/permissions/*/access?principalUser=``; without it the whole request is a 403, unless the caller
may not even see the object: then it counts as missing, so the answer tells nothing of its existence.
A user asking about itself is an ordinary check.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from attrs import frozen

from lakekeeper_host.errors import bad_request, forbidden
from lakekeeper_host.server.authorize import SEE, checking_actor, is_instance_admin
from lakekeeper_host.server.management.permissions import missing_object, parse_uuid, principal_from_json
from lakekeeper_host.server.resolve import resolve_project_id
from lakekeeper_host.service.authz import ACTIONS, DATA_PLANE_ACTIONS, Actor, Principal, Resource
from lakekeeper_host.service.request import RequestMetadata
from lakekeeper_host.service.state import AppState
from lakekeeper_host.store import namespaces as namespace_store
from lakekeeper_host.store import projects as project_store
from lakekeeper_host.store import tabulars as tabular_store
from lakekeeper_host.store import warehouses as warehouse_store

MAX_CHECKS = 1000
BATCH_CHECK_KINDS = ("server", "project", "warehouse", "namespace", "table", "view")


@frozen
class Check:
    """One parsed check: the object as the request names it, not looked up yet."""

    index: int
    id: str | None
    principal: Principal | None  # None: the caller
    kind: str
    action: str
    target: dict


@frozen
class BatchCheckRequest:
    checks: tuple[Check, ...]
    error_on_not_found: bool


# ---------------------------------------------------------------- parsing


def _action_name(value: Any, where: str) -> str:
    # Lakekeeper serialises an action with arguments as an object {"action": name, ...}
    if isinstance(value, dict):
        value = value.get("action")
    if not isinstance(value, str) or not value:
        raise bad_request(f"Invalid request body: {where}.action must name an action", "InvalidCheck")
    return value


def parse_request(body: Any, meta: RequestMetadata) -> BatchCheckRequest:
    if not isinstance(body, dict) or not isinstance(body.get("checks"), list):
        raise bad_request('Invalid request body: expected {"checks": [...]}', "InvalidCheck")
    items = body["checks"]
    if len(items) > MAX_CHECKS:
        raise bad_request(f"Too many checks requested: {len(items)}. Maximum allowed is {MAX_CHECKS}", "TooManyChecks")
    error_on_not_found = body.get("error-on-not-found", False)
    if not isinstance(error_on_not_found, bool):
        raise bad_request("Invalid request body: error-on-not-found must be true or false", "InvalidCheck")
    caller = meta.actor.user_id if meta.actor is not None and meta.actor.assumed_role is None else None
    checks = []
    for index, item in enumerate(items):
        where = f"checks[{index}]"
        if not isinstance(item, dict):
            raise bad_request(f"Invalid request body: {where} must be an object", "InvalidCheck")
        check_id = item.get("id")
        if check_id is not None and not isinstance(check_id, str):
            raise bad_request(f"Invalid request body: {where}.id must be a string", "InvalidCheck")
        identity = item.get("identity")
        principal = principal_from_json(identity, f"{where}.identity") if identity is not None else None
        if principal is not None and principal.kind == "user" and principal.id == caller:
            principal = None  # asking about oneself
        operation = item.get("operation")
        if not isinstance(operation, dict) or len(operation) != 1:
            raise bad_request(
                f"Invalid request body: {where}.operation must name exactly one object kind", "InvalidCheck"
            )
        ((kind, target),) = operation.items()
        if kind not in BATCH_CHECK_KINDS or not isinstance(target, dict):
            raise bad_request(
                f"Invalid request body: {where}.operation.{kind} is not a checkable object; one of: "
                f"{', '.join(BATCH_CHECK_KINDS)}",
                "InvalidCheck",
            )
        action = _action_name(target.get("action"), f"{where}.operation.{kind}")
        if action not in ACTIONS[kind]:
            raise bad_request(
                f"Invalid request body: {action!r} is not an action on a {kind}; one of: {', '.join(ACTIONS[kind])}",
                "InvalidCheck",
            )
        checks.append(Check(index, check_id, principal, kind, action, target))
    return BatchCheckRequest(tuple(checks), error_on_not_found)


# ---------------------------------------------------------------- finding the objects


def _namespace_parts(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or not all(isinstance(p, str) and p for p in value):
        raise bad_request(f"Invalid request body: {where}.namespace must be a list of names", "InvalidCheck")
    return tuple(value)


class _Finder:
    """Looks up the objects of a batch, each distinct one once: tables and views by id in one query,
    by name in one query per namespace (a lone name goes through the lookup cache instead)."""

    def __init__(self, state: AppState, meta: RequestMetadata) -> None:
        self.state, self.meta = state, meta
        self.found: dict[tuple, Resource | None] = {}

    async def resolve_all(self, checks: Sequence[Check]) -> list[tuple[Resource | None, str]]:
        """Per check: the resource (None when missing) and how to name it in a 404."""
        keys = [self._key(c) for c in checks]
        table_ids = {k[2] for k in keys if k[0] == "tabular-id"}
        by_id = await tabular_store.get_tabulars_by_ids(self.state.store, table_ids)
        await self._find_named_tabulars(keys)
        for key in keys:
            if key in self.found:
                continue
            if key[0] == "tabular-id":
                _, kind, tabular_id, warehouse_id = key
                row = by_id.get(tabular_id)
                ok = row is not None and row.typ == kind and row.warehouse_id == warehouse_id and not row.staged
                self.found[key] = Resource(kind, tabular_id, warehouse_id) if ok else None
            else:
                self.found[key] = await self._lookup(key)
        return [(self.found[k], _label(k)) for k in keys]

    async def _find_named_tabulars(self, keys: Sequence[tuple]) -> None:
        """Tables and views named in a namespace that more than one name of the batch is in: one
        query each (Trino's FilterTables names a whole schema)."""
        names: dict[tuple[str, tuple[str, ...]], set[str]] = defaultdict(set)
        for key in keys:
            if key[0] == "tabular":
                names[(key[2], key[3])].add(key[4].casefold())
        rows = {
            place: await tabular_store.find_tabulars_by_name(self.state.store, *place, wanted)
            for place, wanted in names.items()
            if len(wanted) > 1
        }
        for key in keys:
            if key[0] == "tabular" and (key[2], key[3]) in rows:
                row = rows[(key[2], key[3])].get(key[4].casefold())
                self.found[key] = Resource(key[1], row.id, key[2]) if row is not None and row.typ == key[1] else None

    def _key(self, check: Check) -> tuple:
        target, kind, where = check.target, check.kind, f"checks[{check.index}].operation.{check.kind}"
        if kind == "server":
            return ("server",)
        if kind == "project":
            return ("project", resolve_project_id(self.state, self.meta.project_id, target.get("project-id")))
        warehouse_id = parse_uuid(target.get("warehouse-id"), "warehouse id")
        if kind == "warehouse":
            return ("warehouse", warehouse_id)
        if kind == "namespace":
            if target.get("namespace-id") is not None:
                return ("namespace-id", parse_uuid(target["namespace-id"], "namespace id"), warehouse_id)
            return ("namespace", warehouse_id, _namespace_parts(target.get("namespace"), where))
        for id_key in (f"{kind}-id", "table-id", "view-id"):  # Lakekeeper accepts either spelling
            if target.get(id_key) is not None:
                return ("tabular-id", kind, parse_uuid(target[id_key], f"{kind} id"), warehouse_id)
        name = target.get(kind, target.get("table" if kind == "view" else "view"))
        if not isinstance(name, str) or not name:
            raise bad_request(f"Invalid request body: {where} needs {kind}-id, or namespace and {kind}", "InvalidCheck")
        return ("tabular", kind, warehouse_id, _namespace_parts(target.get("namespace"), where), name)

    async def _lookup(self, key: tuple) -> Resource | None:
        store = self.state.store
        if key[0] == "server":
            return Resource("server", self.state.server_id or "server")
        if key[0] == "project":
            return Resource("project", key[1]) if await project_store.get_project(store, key[1]) else None
        if key[0] == "warehouse":
            found = await warehouse_store.get_warehouse_cached(store, key[1])
            return Resource("warehouse", key[1], key[1]) if found is not None else None
        if key[0] == "namespace-id":
            namespace = await namespace_store.get_namespace_by_id(store, key[1])
            ok = namespace is not None and namespace.warehouse_id == key[2]
            return Resource("namespace", key[1], key[2]) if ok else None
        if key[0] == "namespace":
            namespace = await namespace_store.get_namespace(store, key[1], key[2])
            return Resource("namespace", namespace.id, key[1]) if namespace is not None else None
        _, kind, warehouse_id, parts, name = key
        lookup = await tabular_store.find_tabular(
            store, warehouse_id, parts, name, kind, with_metadata=False, cached=True
        )
        return Resource(kind, lookup.tabular.id, warehouse_id) if lookup.tabular is not None else None


def _label(key: tuple) -> str:
    if key[0] == "namespace":
        return ".".join(key[2])
    if key[0] == "tabular":
        return ".".join((*key[3], key[4]))
    return str(key[2] if key[0] == "tabular-id" else key[1] if len(key) > 1 else "server")


# ---------------------------------------------------------------- deciding


async def _decide(
    state: AppState, actor: Actor | None, principal: Principal | None, action: str, resources: Sequence[Resource]
) -> list[bool]:
    """Whether ``principal`` (None: the caller ``actor``) may do ``action`` on each resource: the
    instance-admin rule of :mod:`lakekeeper_host.server.authorize`, else the authorizer, batched."""
    if not resources:
        return []
    kind = resources[0].kind
    control_plane = (kind, action) not in DATA_PLANE_ACTIONS
    if principal is None:
        if actor is None:
            return [True] * len(resources)
        if control_plane and is_instance_admin(state, actor):
            return [True] * len(resources)
        return await state.authorizer.are_allowed(actor, action, resources)
    if principal.kind == "user":
        if control_plane and principal.id in state.settings.host.instance_admins:
            return [True] * len(resources)
        if getattr(state.authorizer, "allows_all", False):
            return [True] * len(resources)
        return await state.authorizer.are_allowed(Actor(user_id=principal.id), action, resources)
    answers = await asyncio.gather(
        *(state.authorizer.principal_allowed_actions(principal, r, [action]) for r in resources)
    )
    return [bool(a) for a in answers]


async def batch_check(state: AppState, meta: RequestMetadata, body: Any) -> list[dict[str, Any]]:
    """The results of the batch, in request order: ``{"id"?, "allowed"}``."""
    request = parse_request(body, meta)
    resolved = await _Finder(state, meta).resolve_all(request.checks)
    actor = checking_actor(state, meta)

    # asking about someone else needs read_assignments on each object concerned; an object the caller
    # may not even see counts as missing (a 403 would tell them it exists)
    if actor is not None:
        for_others: dict[str, dict[Resource, None]] = defaultdict(dict)
        for check, (resource, _) in zip(request.checks, resolved, strict=True):
            if check.principal is not None and resource is not None:
                for_others[resource.kind][resource] = None
        hidden: set[Resource] = set()
        for kind, resources in for_others.items():
            decisions = await _decide(state, actor, None, "read_assignments", list(resources))
            refused = [r for r, ok in zip(resources, decisions, strict=True) if not ok]
            seen = await _decide(state, actor, None, SEE[kind], refused) if kind in SEE else [True] * len(refused)
            hidden.update(r for r, ok in zip(refused, seen, strict=True) if not ok)
            visible = [r for r, ok in zip(refused, seen, strict=True) if ok]
            if visible:
                raise forbidden(
                    f"Not allowed to check permissions of others on {kind} {visible[0].id}: "
                    "that needs read_assignments on it"
                )
        resolved = [(None, label) if r in hidden else (r, label) for r, label in resolved]

    missing = [(c, label) for c, (r, label) in zip(request.checks, resolved, strict=True) if r is None]
    if missing and request.error_on_not_found:
        check, label = missing[0]
        raise missing_object(check.kind, label)

    groups: dict[tuple, list[int]] = defaultdict(list)
    for check, (resource, _) in zip(request.checks, resolved, strict=True):
        if resource is not None:
            groups[(check.principal, check.kind, check.action)].append(check.index)
    allowed = [False] * len(request.checks)
    for (principal, _, action), indices in groups.items():
        resources = [resolved[i][0] for i in indices]
        decisions = await _decide(state, actor, principal, action, resources)  # type: ignore[arg-type]
        for i, ok in zip(indices, decisions, strict=True):
            allowed[i] = ok

    if request.error_on_not_found and actor is not None:
        await _refuse_hidden(state, actor, request.checks, resolved, allowed)
    return [{**({"id": c.id} if c.id is not None else {}), "allowed": allowed[c.index]} for c in request.checks]


async def _refuse_hidden(
    state: AppState,
    actor: Actor,
    checks: Sequence[Check],
    resolved: Sequence[tuple[Resource | None, str]],
    allowed: Sequence[bool],
) -> None:
    """With ``error-on-not-found``, an object the caller may not see is "not found" like a missing one
    (only denied checks can concern such an object, so only those are asked about)."""
    by_kind: dict[str, dict[Resource, tuple[Check, str]]] = defaultdict(dict)
    for check, (resource, label) in zip(checks, resolved, strict=True):
        if resource is not None and not allowed[check.index] and check.kind in SEE:
            by_kind[check.kind].setdefault(resource, (check, label))
    for kind, objects in by_kind.items():
        decisions = await _decide(state, actor, None, SEE[kind], list(objects))
        for (check, label), ok in zip(objects.values(), decisions, strict=True):
            if not ok:
                raise missing_object(check.kind, label)
