"""AUTHZ: the one place the server layer asks the configured authorizer.

A denial is a 403; whether an object the caller may not see answers 404 instead is decided by the
caller of :func:`authorize` (it knows what "see" means for its route). Internal calls (no actor in
the request metadata) are allowed everything.
"""

from __future__ import annotations

from lakekeeper_host.errors import CatalogError
from lakekeeper_host.service.authz import Resource
from lakekeeper_host.service.request import RequestMetadata
from lakekeeper_host.service.state import AppState
from lakekeeper_host.service.storage import StoragePermission


async def is_allowed(state: AppState, meta: RequestMetadata, action: str, resource: Resource) -> bool:
    actor = getattr(meta, "actor", None)
    if actor is None:
        return True
    return await state.authorizer.is_allowed(actor, action, resource)


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
