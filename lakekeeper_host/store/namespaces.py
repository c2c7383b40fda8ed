"""Namespaces of the catalog: CRUD and keyset listing.

A namespace row stores its full path in ``name`` (parts joined by ``\\x1f``, the Iceberg URL
separator, which no part may contain) and ``name_key = name.casefold()``, so lookups are
case-insensitive and case-preserving. ``parent_id`` links a nested namespace to its parent.
``properties`` is a JSON object of strings; ``location`` is one of them (server-assigned).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from attrs import frozen

from lakekeeper_host.store.db import Executor, Row, dumps, loads, now_ms, rows_with_ids

NAMESPACE_SEPARATOR = "\x1f"


def encode_namespace_name(parts: Sequence[str]) -> str:
    """The stored ``namespace.name`` of ``parts``."""
    return NAMESPACE_SEPARATOR.join(parts)


def decode_namespace_name(stored: str) -> list[str]:
    """The parts of a stored ``namespace.name``."""
    return stored.split(NAMESPACE_SEPARATOR)


@frozen
class NamespaceRow:
    id: str
    warehouse_id: str
    parts: tuple[str, ...]
    parent_id: str | None
    properties: dict[str, str]
    protected: bool
    version: int
    created_at: int
    updated_at: int | None

    @property
    def name(self) -> str:
        """The dotted form used in messages (``a.b``)."""
        return ".".join(self.parts)


def namespace_from_row(row: Row | None) -> NamespaceRow | None:
    if row is None:
        return None
    return NamespaceRow(
        id=row["id"],
        warehouse_id=row["warehouse_id"],
        parts=tuple(decode_namespace_name(row["name"])),
        parent_id=row["parent_id"],
        properties=loads(row["properties"]) or {},
        protected=bool(row["protected"]),
        version=row["version"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


async def get_namespace(db: Executor, warehouse_id: str, parts: Sequence[str]) -> NamespaceRow | None:
    return namespace_from_row(
        await db.fetch_one(
            "SELECT * FROM namespace WHERE warehouse_id = :w AND name_key = :k",
            {"w": warehouse_id, "k": encode_namespace_name(parts).casefold()},
        )
    )


async def get_namespace_by_id(db: Executor, namespace_id: str) -> NamespaceRow | None:
    return namespace_from_row(await db.fetch_one("SELECT * FROM namespace WHERE id = :id", {"id": namespace_id}))


async def insert_namespace(
    db: Executor,
    *,
    namespace_id: str,
    warehouse_id: str,
    parts: Sequence[str],
    parent_id: str | None,
    properties: dict[str, str],
) -> bool:
    """Insert; False when the name is taken in the warehouse (case-insensitive)."""
    name = encode_namespace_name(parts)
    db.wrote_catalog()
    rows = await db.fetch_all(
        "INSERT INTO namespace (id, warehouse_id, name, name_key, parent_id, properties, created_at) "
        "VALUES (:id, :w, :name, :key, :parent, :props, :t) ON CONFLICT DO NOTHING RETURNING id",
        {
            "id": namespace_id,
            "w": warehouse_id,
            "name": name,
            "key": name.casefold(),
            "parent": parent_id,
            "props": dumps(properties),
            "t": now_ms(),
        },
    )
    return bool(rows)


async def list_child_namespaces(
    db: Executor, warehouse_id: str, parent_id: str | None, *, after: str | None, limit: int,
    ids: Collection[str] | None = None,
) -> list[NamespaceRow]:
    """Children of ``parent_id`` (top level when None), ordered by ``name_key``, after the key ``after``;
    only those of ``ids`` when given (the ones the caller may see)."""
    values: dict[str, Any] = {"w": warehouse_id, "limit": limit}
    where = ["warehouse_id = :w"]
    if parent_id is None:
        where.append("parent_id IS NULL")
    else:
        where.append("parent_id = :parent")
        values["parent"] = parent_id
    if after is not None:
        where.append("name_key > :after")
        values["after"] = after
    source = "namespace" if ids is None else rows_with_ids(db, "namespace", ids, values)
    rows = await db.fetch_all(
        f"SELECT * FROM {source} WHERE {' AND '.join(where)} ORDER BY name_key LIMIT :limit", values
    )
    return [namespace_from_row(r) for r in rows]


async def replace_properties(db: Executor, namespace_id: str, properties: dict[str, str], *, version: int) -> bool:
    """Compare-and-swap the properties on ``version``; False when someone changed the row meanwhile."""
    db.wrote_catalog()
    rows = await db.fetch_all(
        "UPDATE namespace SET properties = :props, version = version + 1, updated_at = :t "
        "WHERE id = :id AND version = :v RETURNING id",
        {"props": dumps(properties), "t": now_ms(), "id": namespace_id, "v": version},
    )
    return bool(rows)
