"""AUTHZ: the one place the server layer asks the configured authorizer.

A denial is a 403, unless the caller may not even see the object: then the route's own "does not
exist" error (``hidden=``) answers, exactly as for a missing object, so existence is not leaked
(Lakekeeper: an action denied on an object without ``get_metadata`` is a 404). Lists keep only
what the caller may see (``include_in_list``), paginated after filtering (:func:`visible_page`).

Internal calls (no actor in the request metadata) and the allow-all authorizer are allowed
everything without asking (``Authorizer.allows_all``), so the allow-all path costs nothing.

Instance admins (``LAKEKEEPER__INSTANCE_ADMINS``, as in Lakekeeper) are decided here, for every
authorizer: they pass every control-plane check, never data access (``DATA_PLANE_ACTIONS``), and
they never write grants by that right (the authorizer checks grant writes itself).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from lakekeeper_host.errors import CatalogError, action_forbidden, no_such_warehouse, project_not_found
from lakekeeper_host.service.authz import ACTIONS, ANONYMOUS, DATA_PLANE_ACTIONS, Actor, Principal, Resource
from lakekeeper_host.service.request import RequestMetadata
from lakekeeper_host.service.state import AppState
from lakekeeper_host.service.storage import StoragePermission

Row = TypeVar("Row")
FILTER_CHUNK_MAX = 1000  # rows read per database page while filtering a list

# the action that decides whether a caller may see an object of a kind at all
SEE = {"project": "get_metadata", "warehouse": "get_metadata", "namespace": "get_metadata",
       "table": "get_metadata", "view": "get_metadata", "generic_table": "get_metadata", "role": "read",
       "user": "read"}


def checking_actor(state: AppState, meta: RequestMetadata) -> Actor | None:
    """The actor whose rights must be checked; None when everything is allowed (internal call,
    allow-all authorizer)."""
    actor = getattr(meta, "actor", None)
    if actor is None or getattr(state.authorizer, "allows_all", False):
        return None
    return actor


def is_instance_admin(state: AppState, actor: Actor | None) -> bool:
    """The caller is listed in ``LAKEKEEPER__INSTANCE_ADMINS`` and acts as itself (not as a role)."""
    return (actor is not None and actor.user_id is not None and actor.assumed_role is None
            and actor.user_id in state.settings.host.instance_admins)


def _admin_passes(state: AppState, actor: Actor | None, action: str, kind: str) -> bool:
    return (kind, action) not in DATA_PLANE_ACTIONS and is_instance_admin(state, actor)


async def actor_allowed(state: AppState, actor: Actor, action: str, resource: Resource) -> bool:
    """The one decision: instance admins on the control plane, else the authorizer."""
    if _admin_passes(state, actor, action, resource.kind):
        return True
    return await state.authorizer.is_allowed(actor, action, resource)


async def actor_allowed_many(state: AppState, actor: Actor, action: str, resources: Sequence[Resource]) -> list[bool]:
    """:func:`actor_allowed` for many resources in one authorizer batch."""
    passed = [_admin_passes(state, actor, action, r.kind) for r in resources]
    rest = [r for r, ok in zip(resources, passed, strict=True) if not ok]
    answers = iter(await state.authorizer.are_allowed(actor, action, rest) if rest else [])
    return [ok or next(answers) for ok in passed]


async def is_allowed(state: AppState, meta: RequestMetadata, action: str, resource: Resource) -> bool:
    actor = checking_actor(state, meta)
    if actor is None:
        return True
    return await actor_allowed(state, actor, action, resource)


async def allowed_actions(
    state: AppState, meta: RequestMetadata, resource: Resource, principal: Principal | None = None,
    actions: Sequence[str] | None = None,
) -> list[str]:
    """What the caller (or ``principal``) may do on ``resource``: of ``actions``, default the kind's
    whole vocabulary, in its order (the permissions API's "my access" and check)."""
    vocabulary = ACTIONS.get(resource.kind, ())
    wanted = list(vocabulary if actions is None else actions)
    if principal is None:
        actor = checking_actor(state, meta)
        if actor is None:
            return wanted
        subject_is_admin = is_instance_admin(state, actor)
        if actions is None:
            found = set(await state.authorizer.allowed_actions(actor, resource))
        else:
            decisions = await asyncio.gather(*(state.authorizer.is_allowed(actor, a, resource) for a in wanted))
            found = {a for a, ok in zip(wanted, decisions, strict=True) if ok}
    else:
        subject_is_admin = principal.kind == "user" and principal.id in state.settings.host.instance_admins
        found = set(await state.authorizer.principal_allowed_actions(principal, resource, wanted))
    if subject_is_admin:
        found |= {a for a in wanted if (resource.kind, a) not in DATA_PLANE_ACTIONS}
    return [a for a in wanted if a in found]


async def authorize(
    state: AppState,
    meta: RequestMetadata,
    action: str,
    kind: str,
    object_id: str,
    warehouse_id: str | None = None,
    *,
    hidden: CatalogError | None = None,
) -> None:
    """The configured authorizer decides; a denial is a 403 -- or ``hidden`` (the route's 404 for
    this object) when the caller may not see the object either."""
    actor = checking_actor(state, meta)
    if actor is None:
        return
    resource = Resource(kind, object_id, warehouse_id)
    if await actor_allowed(state, actor, action, resource):
        return
    see = SEE.get(kind)
    if hidden is not None and see is not None and (
        action == see or not await actor_allowed(state, actor, see, resource)
    ):
        raise hidden
    raise action_forbidden(kind, action, object_id)


async def visible(
    state: AppState, meta: RequestMetadata, rows: Sequence[Row], resource: Callable[[Row], Resource],
    action: str = "include_in_list",
) -> list[Row]:
    """The rows the caller may see (one batched check; the authorizer splits it into batches of
    its ``MAX_BATCH_CHECK_SIZE``)."""
    actor = checking_actor(state, meta)
    if actor is None or not rows:
        return list(rows)
    resources = [resource(r) for r in rows]
    if all(_admin_passes(state, actor, action, r.kind) for r in resources):
        return list(rows)
    allowed = await state.authorizer.are_allowed(actor, action, resources)
    return [row for row, ok in zip(rows, allowed, strict=True) if ok]


async def visible_page(
    state: AppState,
    meta: RequestMetadata,
    fetch: Callable[[Any, int, frozenset[str] | None], Awaitable[list[Row]]],
    key: Callable[[Row], Any],
    resource: Callable[[Row], Resource],
    *,
    after: Any,
    limit: int,
    action: str = "include_in_list",
    kind: str | None = None,
    everything: Resource | None = None,
) -> tuple[list[Row], bool]:
    """Up to ``limit`` rows of ``kind`` the caller may see, after the keyset ``after``, and whether
    more may follow. The page token is the key of the last row returned, so the next page starts
    right after it (nothing skipped, nothing repeated).

    ``fetch(after, n, ids)`` reads the next ``n`` rows in key order, only those with an id in
    ``ids`` unless it is None. The cheapest of three ways answers:

    1. nothing to filter: an internal call, the allow-all authorizer, an instance admin, or a caller
       with ``list_everything`` on ``everything`` (the namespace or warehouse the list is below, as
       in Lakekeeper): one database page;
    2. the authorizer names the ids the caller may see (``visible_ids``): one database page of
       only those rows;
    3. else the rows are read in database pages of growing size and checked in batches.
    """
    actor = checking_actor(state, meta)
    if actor is None or (kind is not None and _admin_passes(state, actor, action, kind)) or (
        everything is not None and await actor_allowed(state, actor, "list_everything", everything)
    ):
        return await _one_page(fetch, after, limit, None)
    visible_ids = getattr(state.authorizer, "visible_ids", None)
    ids = await visible_ids(actor, action, kind) if kind is not None and visible_ids is not None else None
    if ids is not None:
        return await _one_page(fetch, after, limit, ids) if ids else ([], False)
    found: list[Row] = []
    chunk = limit
    while True:
        rows = await fetch(after, chunk + 1, None)
        more_rows = len(rows) > chunk
        rows = rows[:chunk]
        for row in await visible(state, meta, rows, resource, action):
            if len(found) == limit:
                return found, True
            found.append(row)
        if not more_rows:
            return found, False
        if len(found) == limit:
            return found, True
        after = key(rows[-1])
        # a sparse view (a user who sees few rows) reads ever larger database pages: fewer round trips
        chunk = min(chunk * 2, max(limit, FILTER_CHUNK_MAX))


async def _one_page(
    fetch: Callable[[Any, int, frozenset[str] | None], Awaitable[list[Row]]], after: Any, limit: int,
    ids: frozenset[str] | None,
) -> tuple[list[Row], bool]:
    rows = await fetch(after, limit + 1, ids)
    return rows[:limit], len(rows) > limit


async def data_permission(
    state: AppState, meta: RequestMetadata, warehouse_id: str, tabular_id: str, kind: str = "table"
) -> StoragePermission | None:
    """What the caller may do with the files of a table or generic table (``kind``; Lakekeeper
    ``StoragePermissions``): read-write-delete with ``write_data``, read with only ``read_data``,
    None with neither.

    Vended credentials and the signer follow the same two actions, so a reader never gets
    credentials that could write.
    """
    actor = checking_actor(state, meta)
    if actor is None:
        return StoragePermission.READ_WRITE_DELETE
    resource = Resource(kind, tabular_id, warehouse_id)
    if await state.authorizer.is_allowed(actor, "write_data", resource):
        return StoragePermission.READ_WRITE_DELETE
    if await state.authorizer.is_allowed(actor, "read_data", resource):
        return StoragePermission.READ
    return None


# ---------------------------------------------------------------- lifecycle (after the database commit)


async def created(
    state: AppState, meta: RequestMetadata, kind: str, object_id: str, parent: tuple[str, str] | None,
    warehouse_id: str | None = None,
) -> None:
    """Tell the authorizer an object exists below ``parent`` (kind, id); the caller owns it."""
    if getattr(state.authorizer, "allows_all", False):
        return
    actor = getattr(meta, "actor", None) or ANONYMOUS
    await state.authorizer.on_created(
        actor, Resource(kind, object_id, warehouse_id),
        Resource(parent[0], parent[1], warehouse_id) if parent is not None else None,
    )


async def deleted(state: AppState, kind: str, object_ids: Sequence[str], warehouse_id: str | None = None) -> None:
    """Tell the authorizer objects are gone for good (their grants go with them)."""
    if getattr(state.authorizer, "allows_all", False):
        return
    for object_id in object_ids:
        await state.authorizer.on_deleted(Resource(kind, object_id, warehouse_id))


async def moved(
    state: AppState, kind: str, object_id: str, new_parent: tuple[str, str], warehouse_id: str | None = None
) -> None:
    """Tell the authorizer an object now lives below ``new_parent`` (kind, id)."""
    if getattr(state.authorizer, "allows_all", False):
        return
    await state.authorizer.on_moved(
        Resource(kind, object_id, warehouse_id), Resource(new_parent[0], new_parent[1], warehouse_id)
    )


async def authorize_warehouse(state: AppState, meta: RequestMetadata, action: str, warehouse_id: str) -> None:
    """:func:`authorize` on a warehouse: a warehouse the caller may not see is "not found"."""
    await authorize(state, meta, action, "warehouse", warehouse_id, warehouse_id,
                    hidden=no_such_warehouse(f"Warehouse {warehouse_id} not found"))


async def authorize_project(state: AppState, meta: RequestMetadata, action: str, project_id: str) -> None:
    """:func:`authorize` on a project: a project the caller may not see is "not found"."""
    await authorize(state, meta, action, "project", project_id, hidden=project_not_found(project_id))


async def role_members_changed(
    state: AppState, role_id: str, added: Sequence[tuple[str, str]], removed: Sequence[tuple[str, str]]
) -> None:
    """Tell the authorizer who may now act as a role (members as (``user``|``role``, id) pairs)."""
    if getattr(state.authorizer, "allows_all", False) or not (added or removed):
        return
    notify = getattr(state.authorizer, "on_role_members_changed", None)
    if notify is not None:  # an authorizer written against an older contract records no members
        await notify(Resource("role", role_id), [Principal(t, i) for t, i in added],
                     [Principal(t, i) for t, i in removed])
