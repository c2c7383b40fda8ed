"""What only a generic table has: its ``generic_table`` row (format, doc, schema, statistics,
properties).

Everything a generic table shares with tables and views -- name, namespace, location, soft
deletion, protection -- is its ``tabular`` row (typ ``generic_table``, ``store/tabulars.py``).
The ``generic_table`` row goes with it (``ON DELETE CASCADE``). Schema and statistics are any JSON
value, kept as text; the server never interprets them.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

from attrs import frozen

from lakekeeper_host.store.db import Executor, now_ms


@frozen
class GenericTableDetails:
    id: str
    format: str
    doc: str | None
    schema: Any  # any JSON value, None when not given
    statistics: Any
    properties: dict[str, str]


def _json_or_none(text: str | None) -> Any:
    return None if text is None else json.loads(text)


async def insert_details(
    db: Executor, *, tabular_id: str, warehouse_id: str, format: str, doc: str | None, schema: Any,
    statistics: Any, properties: dict[str, str],
) -> None:
    """Insert the row of a generic table whose ``tabular`` row was just inserted."""
    await db.execute(
        "INSERT INTO generic_table (id, warehouse_id, format, doc, schema_info, statistics, properties, created_at) "
        "VALUES (:id, :w, :format, :doc, :schema, :statistics, :properties, :t)",
        {
            "id": tabular_id,
            "w": warehouse_id,
            "format": format,
            "doc": doc,
            "schema": None if schema is None else json.dumps(schema, separators=(",", ":")),
            "statistics": None if statistics is None else json.dumps(statistics, separators=(",", ":")),
            "properties": json.dumps(properties, separators=(",", ":"), sort_keys=True),
            "t": now_ms(),
        },
    )


async def get_details(db: Executor, tabular_id: str) -> GenericTableDetails | None:
    row = await db.fetch_one(
        "SELECT id, format, doc, schema_info, statistics, properties FROM generic_table WHERE id = :id",
        {"id": tabular_id},
    )
    if row is None:
        return None
    return GenericTableDetails(
        id=row["id"],
        format=row["format"],
        doc=row["doc"],
        schema=_json_or_none(row["schema_info"]),
        statistics=_json_or_none(row["statistics"]),
        properties=json.loads(row["properties"] or "{}"),
    )


async def formats(db: Executor, tabular_ids: Collection[str]) -> dict[str, str]:
    """The format of each of these generic tables (one query for a page of a listing)."""
    if not tabular_ids:
        return {}
    names = {f"i{n}": tabular_id for n, tabular_id in enumerate(tabular_ids)}
    rows = await db.fetch_all(
        f"SELECT id, format FROM generic_table WHERE id IN ({', '.join(':' + name for name in names)})", names
    )
    return {row["id"]: row["format"] for row in rows}
