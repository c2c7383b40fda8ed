"""Administrative SQL on namespaces: subtree queries for recursive drop, move, protection.

The catalog's namespace CRUD lives in ``store/namespaces.py``; this module holds the SQL the
management side needs on top of it.
"""

from __future__ import annotations

from typing import Any

from lakekeeper_host.store import metrics_reports
from lakekeeper_host.store.db import Executor, Row, now_ms

_SUBTREE = (
    "WITH RECURSIVE sub(id) AS (SELECT id FROM namespace WHERE id = :root "
    "UNION ALL SELECT n.id FROM namespace n JOIN sub ON n.parent_id = sub.id) "
)


async def get_namespace_row(db: Executor, warehouse_id: str, namespace_id: str) -> Row | None:
    return await db.fetch_one(
        "SELECT * FROM namespace WHERE warehouse_id = :w AND id = :id", {"w": warehouse_id, "id": namespace_id}
    )


async def get_namespace_by_id(db: Executor, namespace_id: str) -> Row | None:
    return await db.fetch_one("SELECT * FROM namespace WHERE id = :id", {"id": namespace_id})


async def get_namespace_by_key(db: Executor, warehouse_id: str, name_key: str) -> Row | None:
    return await db.fetch_one(
        "SELECT * FROM namespace WHERE warehouse_id = :w AND name_key = :k", {"w": warehouse_id, "k": name_key}
    )


async def subtree_namespaces(db: Executor, root_id: str) -> list[Row]:
    """The namespace and all its descendants."""
    return await db.fetch_all(
        _SUBTREE + "SELECT n.id, n.name, n.protected FROM namespace n JOIN sub ON n.id = sub.id", {"root": root_id}
    )


async def subtree_tabulars(db: Executor, root_id: str) -> list[Row]:
    """Every tabular (live, staged or soft-deleted) below the namespace."""
    return await db.fetch_all(
        _SUBTREE + "SELECT t.id, t.warehouse_id, t.namespace_id, t.name, t.typ, t.location, t.protected, "
        "t.deleted_at, t.staged, t.metadata_location FROM tabular t JOIN sub ON t.namespace_id = sub.id",
        {"root": root_id},
    )


async def running_tasks_for(db: Executor, entity_ids: list[str], queue_name: str) -> int:
    count = 0
    for chunk_start in range(0, len(entity_ids), 500):
        chunk = entity_ids[chunk_start : chunk_start + 500]
        params = {f"e{i}": v for i, v in enumerate(chunk)}
        params["q"] = queue_name
        count += int(
            await db.fetch_val(
                f"SELECT COUNT(*) FROM task WHERE queue_name = :q AND status <> 'scheduled' "
                f"AND entity_id IN ({', '.join(':' + k for k in params if k != 'q')})",
                params,
            )
            or 0
        )
    return count


async def delete_subtree(db: Executor, root_id: str, tabular_ids: list[str]) -> None:
    """Delete the tabulars and then the namespaces of a subtree (children before parents)."""
    db.wrote_catalog()
    for chunk_start in range(0, len(tabular_ids), 500):
        chunk = tabular_ids[chunk_start : chunk_start + 500]
        params = {f"t{i}": v for i, v in enumerate(chunk)}
        await db.execute(f"DELETE FROM tabular WHERE id IN ({', '.join(':' + k for k in params)})", params)
        await metrics_reports.delete_for_tabulars(db, chunk)
    rows = await db.fetch_all(
        _SUBTREE.replace("sub(id)", "sub(id, depth)")
        .replace("SELECT id FROM namespace WHERE id = :root", "SELECT id, 0 FROM namespace WHERE id = :root")
        .replace("SELECT n.id FROM namespace n JOIN sub", "SELECT n.id, sub.depth + 1 FROM namespace n JOIN sub")
        + "SELECT id, depth FROM sub ORDER BY depth DESC",
        {"root": root_id},
    )
    for row in rows:
        await db.execute("DELETE FROM namespace WHERE id = :id", {"id": row["id"]})


async def count_children(db: Executor, namespace_id: str) -> int:
    return int(
        await db.fetch_val("SELECT COUNT(*) FROM namespace WHERE parent_id = :id", {"id": namespace_id}) or 0
    )


async def move_namespace(
    db: Executor, namespace_id: str, *, name: str, name_key: str, parent_id: str | None
) -> bool:
    db.wrote_catalog()
    rows = await db.fetch_all(
        "UPDATE namespace SET name = :name, name_key = :key, parent_id = :parent, version = version + 1, "
        "updated_at = :t WHERE id = :id RETURNING id",
        {"name": name, "key": name_key, "parent": parent_id, "t": now_ms(), "id": namespace_id},
    )
    return bool(rows)


async def set_namespace_protection(db: Executor, warehouse_id: str, namespace_id: str, protected: bool) -> Row | None:
    db.wrote_catalog()
    return await db.fetch_one(
        "UPDATE namespace SET protected = :p, updated_at = :t WHERE warehouse_id = :w AND id = :id "
        "RETURNING protected, updated_at",
        {"p": protected, "t": now_ms(), "w": warehouse_id, "id": namespace_id},
    )


async def count_namespaces(db: Executor, warehouse_id: str) -> int:
    return int(
        await db.fetch_val("SELECT COUNT(*) FROM namespace WHERE warehouse_id = :w", {"w": warehouse_id}) or 0
    )


def as_dict(row: Row | None) -> dict[str, Any] | None:
    return None if row is None else dict(row)
