"""Administrative SQL on ``tabular`` rows: drop (soft/hard), undrop, protection, deleted listing.

The catalog's own reads and writes of tables and views live in ``store/tabulars.py``; this module
only touches the columns the management side owns (``deleted_at``, ``protected``).
"""

from __future__ import annotations

from typing import Any

from lakekeeper_host.store import metrics_reports
from lakekeeper_host.store.db import Executor, Row, now_ms
from lakekeeper_host.store.tabulars import TabularRow, tabular_from_row

# One row type for ``tabular``: :class:`TabularRow` (store/tabulars.py), whole rows.
_COLUMNS = "*"


async def get_tabular_info(
    db: Executor, warehouse_id: str, tabular_id: str, *, include_deleted: bool = False
) -> TabularRow | None:
    sql = f"SELECT {_COLUMNS} FROM tabular WHERE warehouse_id = :w AND id = :id"
    if not include_deleted:
        sql += " AND deleted_at IS NULL"
    return tabular_from_row(await db.fetch_one(sql, {"w": warehouse_id, "id": tabular_id}))


async def soft_delete(db: Executor, tabular_id: str, *, force: bool) -> TabularRow | None:
    """Mark a live tabular deleted; ``None`` if it is gone (or protected and not ``force``)."""
    guard = "" if force else " AND protected = :false"
    values: dict[str, Any] = {"t": now_ms(), "id": tabular_id}
    if not force:
        values["false"] = False
    db.wrote_catalog()
    return tabular_from_row(
        await db.fetch_one(
            "UPDATE tabular SET deleted_at = :t, updated_at = :t "
            f"WHERE id = :id AND deleted_at IS NULL{guard} RETURNING {_COLUMNS}",
            values,
        )
    )


async def hard_delete(
    db: Executor, tabular_id: str, *, force: bool, deleted: bool | None = False
) -> TabularRow | None:
    """Delete the row; ``deleted`` selects live (False), soft-deleted (True) or any (None) rows."""
    db.wrote_catalog()
    sql = "DELETE FROM tabular WHERE id = :id"
    values: dict[str, Any] = {"id": tabular_id}
    if not force:
        sql += " AND protected = :false"
        values["false"] = False
    if deleted is True:
        sql += " AND deleted_at IS NOT NULL"
    elif deleted is False:
        sql += " AND deleted_at IS NULL"
    dropped = tabular_from_row(await db.fetch_one(sql + f" RETURNING {_COLUMNS}", values))
    if dropped is not None:
        await metrics_reports.delete_for_tabulars(db, [tabular_id])  # they die with their table
    return dropped


async def live_name_taken(db: Executor, namespace_id: str, name: str) -> bool:
    row = await db.fetch_one(
        "SELECT 1 AS x FROM tabular WHERE namespace_id = :ns AND name_key = :k AND deleted_at IS NULL",
        {"ns": namespace_id, "k": name.casefold()},
    )
    return row is not None


async def clear_deleted(db: Executor, tabular_id: str) -> bool:
    db.wrote_catalog()
    rows = await db.fetch_all(
        "UPDATE tabular SET deleted_at = NULL, updated_at = :t WHERE id = :id AND deleted_at IS NOT NULL "
        "RETURNING id",
        {"t": now_ms(), "id": tabular_id},
    )
    return bool(rows)


async def set_protection(
    db: Executor, warehouse_id: str, tabular_id: str, typ: str, protected: bool
) -> TabularRow | None:
    db.wrote_catalog()
    return tabular_from_row(
        await db.fetch_one(
            "UPDATE tabular SET protected = :p, updated_at = :t WHERE warehouse_id = :w AND id = :id AND typ = :typ "
            f"AND deleted_at IS NULL RETURNING {_COLUMNS}",
            {"p": protected, "t": now_ms(), "w": warehouse_id, "id": tabular_id, "typ": typ},
        )
    )


async def list_deleted(
    db: Executor,
    warehouse_id: str,
    *,
    namespace_id: str | None,
    after: tuple[int, str] | None,
    limit: int,
) -> list[Row]:
    """Soft-deleted tabulars with their namespace name (keyset on ``deleted_at, id``)."""
    values: dict[str, Any] = {"w": warehouse_id, "limit": limit}
    where = ["t.warehouse_id = :w", "t.deleted_at IS NOT NULL"]
    if namespace_id:
        where.append("t.namespace_id = :ns")
        values["ns"] = namespace_id
    if after is not None:
        where.append("(t.deleted_at > :kd OR (t.deleted_at = :kd AND t.id > :kid))")
        values["kd"], values["kid"] = after
    return await db.fetch_all(
        f"SELECT t.{', t.'.join(_COLUMNS.split(', '))}, n.name AS namespace_name, "
        "x.scheduled_for AS expiration_date FROM tabular t "
        "JOIN namespace n ON n.id = t.namespace_id "
        "LEFT JOIN task x ON x.entity_id = t.id AND x.queue_name = 'soft_deletion' "
        f"WHERE {' AND '.join(where)} ORDER BY t.deleted_at, t.id LIMIT :limit",
        values,
    )


async def count_tabulars(db: Executor, warehouse_id: str) -> dict[str, int]:
    rows = await db.fetch_all(
        "SELECT typ, COUNT(*) AS n FROM tabular WHERE warehouse_id = :w AND deleted_at IS NULL GROUP BY typ",
        {"w": warehouse_id},
    )
    counts = {"table": 0, "view": 0}
    for row in rows:
        counts[row["typ"]] = int(row["n"])
    return counts


def _like_pattern(term: str) -> str:
    """``%term%`` for ``LIKE ... ESCAPE '\\'``, matching ``term`` literally and case-insensitively (on ``name_key``)."""
    escaped = term.casefold().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


async def search_tabulars(db: Executor, warehouse_id: str, term: str, *, limit: int) -> list[Row]:
    """Live tables and views whose name or namespace contains ``term`` (case-insensitive), or whose id is it."""
    return await db.fetch_all(
        "SELECT t.id, t.name, t.typ, n.name AS namespace_name FROM tabular t JOIN namespace n ON n.id = t.namespace_id "
        "WHERE t.warehouse_id = :w AND t.deleted_at IS NULL AND t.staged = :false "
        "AND (t.id = :exact OR t.name_key LIKE :pattern ESCAPE '\\' OR n.name_key LIKE :pattern ESCAPE '\\') "
        "ORDER BY LENGTH(t.name_key), t.name_key, t.id LIMIT :limit",
        {"w": warehouse_id, "false": False, "exact": term, "pattern": _like_pattern(term), "limit": limit},
    )


async def search_namespaces(db: Executor, warehouse_id: str, term: str, *, limit: int) -> list[Row]:
    """Namespaces whose (full) name contains ``term`` (case-insensitive), or whose id is it; shortest names first."""
    return await db.fetch_all(
        "SELECT id, name FROM namespace WHERE warehouse_id = :w "
        "AND (id = :exact OR name_key LIKE :pattern ESCAPE '\\') ORDER BY LENGTH(name_key), name_key, id LIMIT :limit",
        {"w": warehouse_id, "exact": term, "pattern": _like_pattern(term), "limit": limit},
    )
