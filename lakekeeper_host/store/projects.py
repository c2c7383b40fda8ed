"""Projects."""

from __future__ import annotations

from attrs import frozen

from lakekeeper_host.store.db import Executor, now_ms
from lakekeeper_host.store.warehouses import forget_warehouse


@frozen
class ProjectRow:
    id: str
    name: str
    created_at: int
    updated_at: int | None


def _project(row) -> ProjectRow | None:
    return None if row is None else ProjectRow(row["id"], row["name"], row["created_at"], row["updated_at"])


async def create_project(db: Executor, project_id: str, name: str) -> bool:
    """Insert; False if the id exists."""
    db.wrote_catalog()
    rows = await db.fetch_all(
        "INSERT INTO project (id, name, created_at) VALUES (:id, :name, :t) "
        "ON CONFLICT (id) DO NOTHING RETURNING id",
        {"id": project_id, "name": name, "t": now_ms()},
    )
    return bool(rows)


async def get_project(db: Executor, project_id: str) -> ProjectRow | None:
    return _project(await db.fetch_one("SELECT * FROM project WHERE id = :id", {"id": project_id}))


async def list_projects(db: Executor) -> list[ProjectRow]:
    return [_project(r) for r in await db.fetch_all("SELECT * FROM project ORDER BY created_at, id")]


async def rename_project(db: Executor, project_id: str, name: str) -> bool:
    db.wrote_catalog()
    rows = await db.fetch_all(
        "UPDATE project SET name = :name, updated_at = :t WHERE id = :id RETURNING id",
        {"id": project_id, "name": name, "t": now_ms()},
    )
    return bool(rows)


async def delete_project(db: Executor, project_id: str) -> bool:
    forget_warehouse(db)  # its warehouses go with it (ON DELETE CASCADE)
    db.wrote_catalog()
    rows = await db.fetch_all("DELETE FROM project WHERE id = :id RETURNING id", {"id": project_id})
    return bool(rows)
