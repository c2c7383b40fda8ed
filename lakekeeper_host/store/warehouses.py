"""Warehouses."""

from __future__ import annotations

from typing import Any

from attrs import frozen

from lakekeeper_host.store.db import Executor, dumps, loads, now_ms


@frozen
class WarehouseRow:
    id: str
    project_id: str
    name: str
    storage_profile: dict[str, Any]
    storage_secret_id: str | None
    status: str
    delete_profile: dict[str, Any]
    protected: bool
    allowed_format_versions: list[int] | None
    default_format_version: int | None
    version: int
    created_at: int
    updated_at: int | None

    @property
    def is_active(self) -> bool:
        return self.status == "active"

    @property
    def soft_delete_seconds(self) -> int | None:
        if self.delete_profile.get("type") == "soft":
            return int(self.delete_profile.get("expiration-seconds", 0))
        return None


def warehouse_from_row(row) -> WarehouseRow | None:
    if row is None:
        return None
    return WarehouseRow(
        id=row["id"],
        project_id=row["project_id"],
        name=row["name"],
        storage_profile=loads(row["storage_profile"]),
        storage_secret_id=row["storage_secret_id"],
        status=row["status"],
        delete_profile=loads(row["delete_profile"]),
        protected=bool(row["protected"]),
        allowed_format_versions=loads(row["allowed_format_versions"]),
        default_format_version=row["default_format_version"],
        version=row["version"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


async def insert_warehouse(
    db: Executor,
    *,
    warehouse_id: str,
    project_id: str,
    name: str,
    storage_profile: dict[str, Any],
    storage_secret_id: str | None,
    delete_profile: dict[str, Any],
    allowed_format_versions: list[int] | None = None,
    default_format_version: int | None = None,
) -> bool:
    """Insert; False when the name is taken in the project (case-insensitive)."""
    db.wrote_catalog()
    rows = await db.fetch_all(
        "INSERT INTO warehouse (id, project_id, name, name_key, storage_profile, storage_secret_id, "
        "status, delete_profile, allowed_format_versions, default_format_version, created_at) "
        "VALUES (:id, :p, :name, :key, :sp, :sec, 'active', :dp, :afv, :dfv, :t) "
        "ON CONFLICT (project_id, name_key) DO NOTHING RETURNING id",
        {
            "id": warehouse_id,
            "p": project_id,
            "name": name,
            "key": name.casefold(),
            "sp": dumps(storage_profile),
            "sec": storage_secret_id,
            "dp": dumps(delete_profile),
            "afv": dumps(allowed_format_versions) if allowed_format_versions is not None else None,
            "dfv": default_format_version,
            "t": now_ms(),
        },
    )
    return bool(rows)


async def get_warehouse(db: Executor, warehouse_id: str) -> WarehouseRow | None:
    return warehouse_from_row(await db.fetch_one("SELECT * FROM warehouse WHERE id = :id", {"id": warehouse_id}))


async def get_warehouse_cached(db: Executor, warehouse_id: str) -> WarehouseRow | None:
    """``get_warehouse`` through the short-lived warehouse cache (``store/cache.py``); a missing
    warehouse is not cached, so one created on another replica is found at once."""
    cached = db.caches.warehouses.get(warehouse_id)
    if cached is not None:
        return cached
    warehouse = await get_warehouse(db, warehouse_id)
    if warehouse is not None:
        db.caches.warehouses.put(warehouse_id, warehouse)
    return warehouse


def forget_warehouse(db: Executor, warehouse_id: str | None = None) -> None:
    """Drop a changed warehouse (every warehouse when ``None``) from the cache."""
    warehouses = db.caches.warehouses
    db.after_transaction(warehouses.clear if warehouse_id is None else lambda: warehouses.forget(warehouse_id))


async def get_warehouse_by_name(db: Executor, project_id: str, name: str) -> WarehouseRow | None:
    return warehouse_from_row(
        await db.fetch_one(
            "SELECT * FROM warehouse WHERE project_id = :p AND name_key = :k",
            {"p": project_id, "k": name.casefold()},
        )
    )


async def list_warehouses(db: Executor, project_id: str, statuses: list[str] | None = None) -> list[WarehouseRow]:
    rows = await db.fetch_all(
        "SELECT * FROM warehouse WHERE project_id = :p ORDER BY name_key, id", {"p": project_id}
    )
    result = [warehouse_from_row(r) for r in rows]
    if statuses:
        result = [w for w in result if w.status in statuses]
    return result


async def list_all_warehouses(db: Executor) -> list[WarehouseRow]:
    """Every warehouse of every project (the storage overlap check at creation)."""
    rows = await db.fetch_all("SELECT * FROM warehouse ORDER BY project_id, name_key, id")
    return [warehouse_from_row(r) for r in rows]


async def update_warehouse(db: Executor, warehouse_id: str, **changes: Any) -> bool:
    """Update columns and bump ``version`` (cached storage objects key on it)."""
    encoders = {"storage_profile": dumps, "delete_profile": dumps, "allowed_format_versions": dumps}
    sets = []
    values: dict[str, Any] = {"id": warehouse_id, "t": now_ms()}
    for column, value in changes.items():
        if column == "name":
            sets.append("name_key = :name_key")
            values["name_key"] = value.casefold()
        sets.append(f"{column} = :{column}")
        values[column] = encoders[column](value) if column in encoders and value is not None else value
    forget_warehouse(db, warehouse_id)
    db.wrote_catalog()
    rows = await db.fetch_all(
        f"UPDATE warehouse SET {', '.join(sets)}, version = version + 1, updated_at = :t "
        "WHERE id = :id RETURNING id",
        values,
    )
    return bool(rows)


async def delete_warehouse(db: Executor, warehouse_id: str) -> bool:
    forget_warehouse(db, warehouse_id)
    db.wrote_catalog()
    rows = await db.fetch_all("DELETE FROM warehouse WHERE id = :id RETURNING id", {"id": warehouse_id})
    return bool(rows)
