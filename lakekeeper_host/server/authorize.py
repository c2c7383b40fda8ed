"""AUTHZ: the one place the server layer asks the configured authorizer.

A denial is a 403; whether an object the caller may not see answers 404 instead is decided by the
caller of :func:`authorize` (it knows what "see" means for its route). Internal calls (no actor in
the request metadata) are allowed everything.

Instance admins (``LAKEKEEPER__INSTANCE_ADMINS``, as in Lakekeeper) are decided here, for every
authorizer: they pass every control-plane check, never data access (``DATA_PLANE_ACTIONS``), and
they never write grants by that right (the authorizer checks grant writes itself).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from lakekeeper_host.errors import CatalogError
from lakekeeper_host.service.authz import ACTIONS, DATA_PLANE_ACTIONS, Actor, Principal, Resource
from lakekeeper_host.service.request import RequestMetadata
from lakekeeper_host.service.state import AppState
from lakekeeper_host.service.storage import StoragePermission


def is_instance_admin(state: AppState, actor: Actor | None) -> bool:
    """The caller is listed in ``LAKEKEEPER__INSTANCE_ADMINS`` and acts as itself (not as a role)."""
    return (actor is not None and actor.user_id is not None and actor.assumed_role is None
            and actor.user_id in state.settings.host.instance_admins)


def _admin_passes(state: AppState, actor: Actor | None, action: str, kind: str) -> bool:
    return (kind, action) not in DATA_PLANE_ACTIONS and is_instance_admin(state, actor)


async def actor_allowed(state: AppState, actor: Actor, action: str, resource: Resource) -> bool:
    if _admin_passes(state, actor, action, resource.kind):
        return True
    return await state.authorizer.is_allowed(actor, action, resource)


async def is_allowed(state: AppState, meta: RequestMetadata, action: str, resource: Resource) -> bool:
    actor = getattr(meta, "actor", None)
    if actor is None:
        return True
    return await actor_allowed(state, actor, action, resource)


async def are_allowed(
    state: AppState, meta: RequestMetadata, action: str, resources: Sequence[Resource]
) -> list[bool]:
    """One batch of decisions (list filtering: ``include_in_list`` over a page)."""
    actor = getattr(meta, "actor", None)
    if actor is None or not resources or _admin_passes(state, actor, action, resources[0].kind):
        return [True] * len(resources)
    return await state.authorizer.are_allowed(actor, action, resources)


async def allowed_actions(
    state: AppState, meta: RequestMetadata, resource: Resource, principal: Principal | None = None,
    actions: Sequence[str] | None = None,
) -> list[str]:
    """What the caller (or ``principal``) may do on ``resource``: of ``actions``, default the kind's
    whole vocabulary, in its order."""
    vocabulary = ACTIONS.get(resource.kind, ())
    wanted = list(vocabulary if actions is None else actions)
    if principal is None:
        actor = getattr(meta, "actor", None)
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
    state: AppState, meta: RequestMetadata, action: str, kind: str, object_id: str, warehouse_id: str | None = None
) -> None:
    """The configured authorizer decides; a denial is a 403."""
    if not await is_allowed(state, meta, action, Resource(kind, object_id, warehouse_id)):
        raise CatalogError(
            403, "ForbiddenException", f"Not allowed to {action.replace('_', ' ')} on {kind} {object_id}"
        )


async def data_permission(
    state: AppState, meta: RequestMetadata, warehouse_id: str, tabular_id: str
) -> StoragePermission | None:
    """What the caller may do with the table's files (Lakekeeper ``StoragePermissions``):
    read-write-delete with ``write_data``, read with only ``read_data``, None with neither.

    Vended credentials and the signer follow the same two actions, so a reader never gets
    credentials that could write.
    """
    resource = Resource("table", tabular_id, warehouse_id)
    if await is_allowed(state, meta, "write_data", resource):
        return StoragePermission.READ_WRITE_DELETE
    if await is_allowed(state, meta, "read_data", resource):
        return StoragePermission.READ
    return None
