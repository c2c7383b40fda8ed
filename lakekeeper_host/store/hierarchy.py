"""The catalog's whole hierarchy in a few reads, for ``lakekeeper authz reconcile``: every
project, warehouse, namespace, table and view (staged and soft-deleted ones too: they keep their
grants) and role with its parent, and every role membership."""

from __future__ import annotations

from attrs import frozen

from lakekeeper_host.store.db import Executor


@frozen
class HierarchyRow:
    kind: str  # project | warehouse | namespace | table | view | role
    id: str
    parent_kind: str | None  # None: a project (below the server)
    parent_id: str | None
    warehouse_id: str | None


async def hierarchy_rows(db: Executor) -> list[HierarchyRow]:
    rows = [HierarchyRow("project", r["id"], None, None, None)
            for r in await db.fetch_all("SELECT id FROM project ORDER BY id")]
    rows += [HierarchyRow("warehouse", r["id"], "project", r["project_id"], r["id"])
             for r in await db.fetch_all("SELECT id, project_id FROM warehouse ORDER BY id")]
    rows += [
        HierarchyRow("namespace", r["id"], "namespace" if r["parent_id"] else "warehouse",
                     r["parent_id"] or r["warehouse_id"], r["warehouse_id"])
        for r in await db.fetch_all("SELECT id, warehouse_id, parent_id FROM namespace ORDER BY id")
    ]
    rows += [HierarchyRow(r["typ"], r["id"], "namespace", r["namespace_id"], r["warehouse_id"])
             for r in await db.fetch_all("SELECT id, typ, warehouse_id, namespace_id FROM tabular ORDER BY id")]
    rows += [HierarchyRow("role", r["id"], "project", r["project_id"], None)
             for r in await db.fetch_all("SELECT id, project_id FROM role ORDER BY id")]
    return rows


async def role_memberships(db: Executor) -> list[tuple[str, str, str]]:
    """(role id, ``user`` | ``role``, member id) of every direct membership."""
    return [(r["role_id"], r["member_type"], r["member_id"]) for r in await db.fetch_all(
        "SELECT role_id, member_type, member_id FROM role_member ORDER BY role_id, member_type, member_id")]
