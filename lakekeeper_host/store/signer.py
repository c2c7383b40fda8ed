"""The table lookups of the S3 signer: by id, and by an object location inside the table.

Iceberg tables and generic tables are signable (both hold data files); views never are.
"""

from __future__ import annotations

from attrs import frozen

from lakekeeper_host.store.db import Executor, Row


@frozen
class SignerTable:
    id: str
    warehouse_id: str
    namespace_id: str
    name: str
    location: str
    deleted: bool
    typ: str = "table"  # or "generic_table"


_COLUMNS = "id, warehouse_id, namespace_id, name, location, deleted_at, typ"
_SIGNABLE = ("table", "generic_table")


def _table(row: Row | None) -> SignerTable | None:
    if row is None:
        return None
    return SignerTable(
        id=row["id"],
        warehouse_id=row["warehouse_id"],
        namespace_id=row["namespace_id"],
        name=row["name"],
        location=row["location"],
        deleted=row["deleted_at"] is not None,
        typ=row["typ"],
    )


async def table_by_id(db: Executor, warehouse_id: str, table_id: str) -> SignerTable | None:
    """A live (possibly staged) table or generic table; views are never signable."""
    row = await db.fetch_one(
        f"SELECT {_COLUMNS} FROM tabular "
        "WHERE warehouse_id = :w AND id = :id AND typ IN ('table', 'generic_table') AND deleted_at IS NULL",
        {"w": warehouse_id, "id": table_id},
    )
    return _table(row)


async def table_at_locations(db: Executor, warehouse_id: str, candidates: list[str]) -> SignerTable | None:
    """The table or generic table whose location is one of ``candidates`` (the ancestors of an
    object's location).

    Soft-deleted tables count too: Spark checks for metadata files right after dropping a table.
    The deepest match wins, and a live table over a deleted one at the same place.
    """
    if not candidates:
        return None
    names = {f"l{i}": location for i, location in enumerate(candidates)}
    rows = await db.fetch_all(
        f"SELECT {_COLUMNS} FROM tabular WHERE warehouse_id = :w "
        f"AND location IN ({', '.join(':' + name for name in names)})",
        {"w": warehouse_id, **names},
    )
    tables = [r for r in rows if r["typ"] in _SIGNABLE]
    if not tables:
        return None
    best = max(tables, key=lambda r: (len(r["location"].rstrip("/")), r["deleted_at"] is None))
    return _table(best)
