"""A table's history as people read it, from the metadata the API returned: what each commit changed
(records, files, bytes, as numbers for small bars), how size and file count grew, and which columns
changed with which schema."""

from __future__ import annotations

import json
from typing import Any

# summary keys shown as numbers: (label, added key, removed key)
CHANGE_KEYS = (
    ("records", "added-records", "deleted-records"),
    ("data files", "added-data-files", "deleted-data-files"),
    ("bytes", "added-files-size", "removed-files-size"),
    ("delete files", "added-delete-files", "removed-delete-files"),
)
TOTAL_KEYS = ("total-records", "total-data-files", "total-files-size", "total-delete-files")
SHOWN_KEYS = {"operation", *TOTAL_KEYS, *(key for _, added, removed in CHANGE_KEYS for key in (added, removed))}


def _number(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def snapshot_changes(snapshots: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per snapshot (in the order given): the operation, each change (label, added, removed) with
    bar widths relative to the largest change of its kind among ``snapshots``, the totals, and the
    summary's other entries (engine, application ids, ...) as (key, value) pairs."""
    largest = {label: 0 for label, _, _ in CHANGE_KEYS}
    for snapshot in snapshots:
        summary = snapshot.get("summary") or {}
        for label, added, removed in CHANGE_KEYS:
            largest[label] = max(largest[label], _number(summary.get(added)) or 0, _number(summary.get(removed)) or 0)
    out = []
    for snapshot in snapshots:
        summary = snapshot.get("summary") or {}
        changes = []
        for label, added_key, removed_key in CHANGE_KEYS:
            added, removed = _number(summary.get(added_key)), _number(summary.get(removed_key))
            if added is None and removed is None:
                continue
            scale = largest[label] or 1
            changes.append({"label": label, "added": added or 0, "removed": removed or 0,
                            "added_pct": round(100 * (added or 0) / scale, 1),
                            "removed_pct": round(100 * (removed or 0) / scale, 1)})
        out.append({
            "snapshot": snapshot,
            "operation": summary.get("operation", ""),
            "changes": changes,
            "totals": {key: _number(summary.get(key)) for key in TOTAL_KEYS},
            "other": sorted((k, v) for k, v in summary.items() if k not in SHOWN_KEYS),
        })
    return out


def ancestry(metadata: dict[str, Any], limit: int | None = None) -> list[dict[str, Any]]:
    """The current snapshot and its ancestors, oldest first (the main line of the table's history)."""
    by_id = {s["snapshot-id"]: s for s in metadata.get("snapshots") or []}
    chain: list[dict[str, Any]] = []
    current = by_id.get(metadata.get("current-snapshot-id"))
    while current is not None and (limit is None or len(chain) < limit):
        chain.append(current)
        current = by_id.get(current.get("parent-snapshot-id"))
    return list(reversed(chain))


def growth(metadata: dict[str, Any], limit: int | None = None) -> dict[str, list[tuple[int, int]]]:
    """(timestamp ms, value) points of the table's size, data file count and rows along its main line."""
    series: dict[str, list[tuple[int, int]]] = {"total-files-size": [], "total-data-files": [], "total-records": []}
    for snapshot in ancestry(metadata, limit):
        summary = snapshot.get("summary") or {}
        for key, points in series.items():
            value = _number(summary.get(key))
            if value is not None:
                points.append((snapshot.get("timestamp-ms", 0), value))
    return series


# ---------------------------------------------------------------- schemas


def _type_text(field_type: Any) -> str:
    if isinstance(field_type, str):
        return field_type
    if isinstance(field_type, dict):
        return str(field_type.get("type", json.dumps(field_type)))
    return str(field_type)


def flatten_schema(schema: dict[str, Any]) -> dict[int, dict[str, Any]]:
    """Every field of a schema JSON by id, nested ones named by their path (``address.city``)."""
    found: dict[int, dict[str, Any]] = {}

    def visit(fields: list[dict[str, Any]], prefix: str) -> None:
        for field in fields:
            path = f"{prefix}{field.get('name')}"
            found[field["id"]] = {"path": path, "type": _type_text(field.get("type")),
                                  "required": bool(field.get("required")), "doc": field.get("doc") or ""}
            nested(field.get("type"), path)

    def nested(field_type: Any, path: str) -> None:
        if not isinstance(field_type, dict):
            return
        if field_type.get("type") == "struct":
            visit(field_type.get("fields") or [], path + ".")
        elif field_type.get("type") == "list":
            element = {"id": field_type.get("element-id"), "name": "element", "type": field_type.get("element"),
                       "required": field_type.get("element-required")}
            if element["id"] is not None:
                visit([element], path + ".")
        elif field_type.get("type") == "map":
            for part in ("key", "value"):
                entry = {"id": field_type.get(f"{part}-id"), "name": part, "type": field_type.get(part),
                         "required": part == "key" or field_type.get("value-required")}
                if entry["id"] is not None:
                    visit([entry], path + ".")

    visit(schema.get("fields") or [], "")
    return found


def schema_history(metadata: dict[str, Any]) -> list[dict[str, Any]]:
    """Newest first: each schema with when it was first committed (its first snapshot, if any) and what
    changed from the schema before it: columns added, dropped, renamed, retyped, made (not) required."""
    schemas = sorted(metadata.get("schemas") or [], key=lambda s: s.get("schema-id", 0))
    first_use: dict[int, int] = {}
    for snapshot in metadata.get("snapshots") or []:
        schema_id, at = snapshot.get("schema-id"), snapshot.get("timestamp-ms")
        if schema_id is not None and at is not None:
            first_use[schema_id] = min(at, first_use.get(schema_id, at))
    out = []
    previous: dict[int, dict[str, Any]] = {}
    for index, schema in enumerate(schemas):
        fields = flatten_schema(schema)
        changes = []
        if index:
            for field_id, field in fields.items():
                old = previous.get(field_id)
                if old is None:
                    changes.append(("added", f"{field['path']} {field['type']}"))
                    continue
                if old["path"] != field["path"]:
                    changes.append(("renamed", f"{old['path']} → {field['path']}"))
                if old["type"] != field["type"]:
                    changes.append(("retyped", f"{field['path']}: {old['type']} → {field['type']}"))
                if old["required"] != field["required"]:
                    changes.append(("required" if field["required"] else "optional", field["path"]))
                if old["doc"] != field["doc"]:
                    changes.append(("documented", f"{field['path']}: {field['doc'] or '(no doc)'}"))
            for field_id, old in previous.items():
                if field_id not in fields:
                    changes.append(("dropped", old["path"]))
        out.append({"schema-id": schema.get("schema-id"), "first-used-ms": first_use.get(schema.get("schema-id")),
                    "columns": len(schema.get("fields") or []), "changes": changes,
                    "current": schema.get("schema-id") == metadata.get("current-schema-id")})
        previous = fields
    return list(reversed(out))
