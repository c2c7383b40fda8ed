"""The Polaris "tree dataset": a complete N-ary namespace tree with tables and views in its leaves.

Width N and depth D give (N^D - 1)/(N - 1) namespaces (15 for 2 x 4); each of the N^(D-1) leaves
holds T tables and V views (5 and 3: 40 tables, 24 views). Tables and views have C columns and
every namespace, table and view P properties. Names are ``NS_i``, ``T_i``, ``V_i`` with global
indexes, as in apache/polaris-tools ``benchmarks``.
"""

from __future__ import annotations

import time
from typing import Any

import attrs

# the one namespace the list curve grows; the console's pages are timed on it afterwards
LIST_CURVE_NAMESPACE = ("bench_list_curve",)

_COLUMN_TYPES = ("long", "string", "double", "int", "boolean", "date", "timestamp", "float", "binary", "decimal(10,2)")


@attrs.frozen
class TreeShape:
    width: int = 2
    depth: int = 4
    tables_per_leaf: int = 5
    views_per_leaf: int = 3
    columns: int = 10
    properties: int = 10

    def as_dict(self) -> dict[str, int]:
        return attrs.asdict(self)


@attrs.frozen
class Tree:
    """Every entity of the dataset, addressed the way the REST API addresses it."""

    shape: TreeShape
    namespaces: list[list[str]]          # in creation order: parents before children
    leaves: list[list[str]]
    tables: list[tuple[list[str], str]]  # (namespace, name), ordered by global index
    views: list[tuple[list[str], str]]

    @classmethod
    def build(cls, shape: TreeShape) -> Tree:
        count = sum(shape.width**level for level in range(shape.depth))
        paths: list[list[str]] = []
        for index in range(count):
            parent = (index - 1) // shape.width if index else None
            paths.append([*(paths[parent] if parent is not None else []), f"NS_{index}"])
        first_leaf = count - shape.width ** (shape.depth - 1)
        leaves = paths[first_leaf:]
        tables = [(leaf, f"T_{leaf_index * shape.tables_per_leaf + t}")
                  for leaf_index, leaf in enumerate(leaves) for t in range(shape.tables_per_leaf)]
        views = [(leaf, f"V_{leaf_index * shape.views_per_leaf + v}")
                 for leaf_index, leaf in enumerate(leaves) for v in range(shape.views_per_leaf)]
        return cls(shape=shape, namespaces=paths, leaves=leaves, tables=tables, views=views)

    def parents(self) -> list[list[str] | None]:
        """Every namespace that has children (listing targets), plus the top level (``None``)."""
        inner = [ns for ns in self.namespaces if ns not in self.leaves]
        return [None, *inner]


def properties(count: int, prefix: str = "attribute") -> dict[str, str]:
    """Polaris' ``Attribute_i`` keys in lower case: Lakekeeper rejects namespace property keys
    that are not all lower case."""
    return {f"{prefix}_{i}": f"Value_{i}" for i in range(count)}


def schema(columns: int) -> dict[str, Any]:
    return {
        "type": "struct",
        "schema-id": 0,
        "fields": [
            {"id": i + 1, "name": f"column{i}", "type": _COLUMN_TYPES[i % len(_COLUMN_TYPES)], "required": False}
            for i in range(columns)
        ],
    }


def namespace_body(namespace: list[str], shape: TreeShape) -> dict[str, Any]:
    return {"namespace": namespace, "properties": properties(shape.properties)}


def table_body(name: str, shape: TreeShape) -> dict[str, Any]:
    return {"name": name, "schema": schema(shape.columns), "properties": properties(shape.properties),
            "stage-create": False}


def view_body(namespace: list[str], name: str, shape: TreeShape) -> dict[str, Any]:
    return {
        "name": name,
        "schema": schema(shape.columns),
        "view-version": {
            "version-id": 1,
            "timestamp-ms": int(time.time() * 1000),
            "schema-id": 0,
            "summary": {"engine-name": "lakekeeper-bench", "engine-version": "1"},
            "representations": [{"type": "sql", "sql": f"SELECT * FROM {'.'.join(namespace)}.T_0",
                                 "dialect": "spark"}],
            "default-namespace": namespace,
        },
        "properties": properties(shape.properties),
    }


def snapshot(snapshot_id: int, parent_id: int | None, sequence_number: int, table_location: str,
             timestamp_ms: int) -> dict[str, Any]:
    """An append snapshot whose manifest list is a placeholder path: loadTable never reads it."""
    body: dict[str, Any] = {
        "snapshot-id": snapshot_id,
        "sequence-number": sequence_number,
        "timestamp-ms": timestamp_ms,
        "manifest-list": f"{table_location.rstrip('/')}/metadata/snap-{snapshot_id}-bench.avro",
        "summary": {"operation": "append", "added-data-files": "1", "added-records": "10",
                    "total-data-files": str(sequence_number), "total-records": str(10 * sequence_number)},
        "schema-id": 0,
    }
    if parent_id is not None:
        body["parent-snapshot-id"] = parent_id
    return body


def append_updates(snapshot_body: dict[str, Any]) -> list[dict[str, Any]]:
    """The updates of one append commit: add the snapshot, move ``main`` to it."""
    return [
        {"action": "add-snapshot", "snapshot": snapshot_body},
        {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch",
         "snapshot-id": snapshot_body["snapshot-id"]},
    ]
