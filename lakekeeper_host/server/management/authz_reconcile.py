"""``lakekeeper authz reconcile``: bring the authorizer's records back in line with the database.

Lifecycle calls (``on_created``, ``on_deleted``, ``on_moved``, role members) run after the
database commit; when the authorizer is unreachable at that moment the request fails but the
change stays, and the authorizer's records are missing or stale. This hands the database's
hierarchy to the authorizer's optional ``reconcile`` (``service/authz.py``), which repairs what it
can and says what it cannot (who created an object, hence its owner, is not in the database).
"""

from __future__ import annotations

import inspect

from lakekeeper_host.service.authz import (
    Authorizer,
    CatalogHierarchy,
    CatalogObject,
    Principal,
    ReconcileReport,
    Resource,
)
from lakekeeper_host.store.db import Executor
from lakekeeper_host.store.hierarchy import hierarchy_rows, role_memberships


async def catalog_hierarchy(db: Executor) -> CatalogHierarchy:
    objects = tuple(
        CatalogObject(
            Resource(row.kind, row.id, row.warehouse_id),
            None if row.parent_kind is None else Resource(row.parent_kind, row.parent_id, row.warehouse_id),
        )
        for row in await hierarchy_rows(db)
    )
    members = tuple((role_id, Principal(kind, member)) for role_id, kind, member in await role_memberships(db))
    return CatalogHierarchy(objects, members)


async def reconcile_authorizer(db: Executor, authorizer: Authorizer, *, dry_run: bool = False,
                               delete_drift: bool = True) -> ReconcileReport:
    """``delete_drift=False`` is Lakekeeper's ``--mode add-missing``: only missing records are written."""
    if getattr(authorizer, "allows_all", False):
        return ReconcileReport(notes=(f"the authorizer {authorizer.name!r} allows everything and keeps no records",))
    reconcile = getattr(authorizer, "reconcile", None)
    if reconcile is None:  # written against an older contract
        return ReconcileReport(notes=(f"the authorizer {authorizer.name!r} cannot reconcile its records",))
    if "delete_drift" not in inspect.signature(reconcile).parameters:  # written before the modes
        if not delete_drift:
            return ReconcileReport(notes=(f"the authorizer {authorizer.name!r} cannot reconcile in add-missing mode",))
        return await reconcile(lambda: catalog_hierarchy(db), dry_run=dry_run)
    return await reconcile(lambda: catalog_hierarchy(db), dry_run=dry_run, delete_drift=delete_drift)
