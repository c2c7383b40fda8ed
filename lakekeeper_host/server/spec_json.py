"""Strict checks of the Iceberg JSON a client sends: schemas, partition specs and sort orders.

pyiceberg's models are lenient where a catalog must not be (``"required": "yes"`` becomes true, a struct
without ``fields`` becomes an empty struct, ``bogus[3]`` becomes an unknown transform) and their errors
speak pydantic. Every route that takes these objects (createTable, createView, registerTable's
metadata, table and view commits with ``add-schema``/``add-spec``/``add-sort-order``) runs them through
:func:`check_schema` / :func:`check_partition_spec` / :func:`check_sort_order` first, so that a bad body
is a 400 naming the field path the client sent (``schema.fields[2].required``) and the reason.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from pydantic import TypeAdapter, ValidationError
from pyiceberg.schema import index_by_id
from pyiceberg.transforms import UnknownTransform, parse_transform
from pyiceberg.types import IcebergType, PrimitiveType

from lakekeeper_host.errors import CatalogError, bad_request

_TYPE = TypeAdapter(IcebergType)
SORT_DIRECTIONS = ("asc", "desc")
NULL_ORDERS = ("nulls-first", "nulls-last")


def invalid(path: str, reason: str) -> CatalogError:
    return bad_request(f"Invalid request body: {path}: {reason}")


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object"


def _object(value: Any, path: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise invalid(path, f"must be a JSON object, got {_kind(value)}")
    return value


def _required(obj: Mapping[str, Any], key: str, path: str) -> Any:
    if key not in obj:
        raise invalid(f"{path}.{key}" if path else key, "is required")
    return obj[key]


def _int(value: Any, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise invalid(path, f"must be an integer, got {_kind(value)}")
    return value


def _bool(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise invalid(path, f"must be true or false, got {_kind(value)} {value!r}"[:200])
    return value


def _str(value: Any, path: str, *, non_empty: bool = True) -> str:
    if not isinstance(value, str):
        raise invalid(path, f"must be a string, got {_kind(value)}")
    if non_empty and not value:
        raise invalid(path, "must not be empty")
    return value


def _list(value: Any, path: str) -> list[Any]:
    if not isinstance(value, list):
        raise invalid(path, f"must be a list, got {_kind(value)}")
    return value


class _SchemaFields:
    """Walks one schema: field ids unique in the schema, names unique within their struct."""

    def __init__(self) -> None:
        self.types: dict[int, Any] = {}  # field id -> pyiceberg type (primitive) or the nested kind

    def field_id(self, value: Any, path: str) -> int:
        field_id = _int(value, path)
        if field_id in self.types:
            raise invalid(path, f"duplicate field id {field_id}")
        self.types[field_id] = None
        return field_id

    def type_(self, value: Any, path: str) -> Any:
        if isinstance(value, str):
            if value in ("struct", "list", "map"):
                raise invalid(path, f"a {value} type must be a JSON object with its own fields")
            try:
                parsed = _TYPE.validate_python(value)
            except (ValidationError, ValueError):
                parsed = None
            if not isinstance(parsed, PrimitiveType):
                raise invalid(path, f"unknown type {value!r}"[:200])
            return parsed
        obj = _object(value, path)
        kind = _required(obj, "type", path)
        if kind == "struct":
            self.struct(obj, path)
        elif kind == "list":
            element_id = self.field_id(_required(obj, "element-id", path), f"{path}.element-id")
            self.types[element_id] = self.type_(_required(obj, "element", path), f"{path}.element")
            _bool(_required(obj, "element-required", path), f"{path}.element-required")
        elif kind == "map":
            key_id = self.field_id(_required(obj, "key-id", path), f"{path}.key-id")
            self.types[key_id] = self.type_(_required(obj, "key", path), f"{path}.key")
            value_id = self.field_id(_required(obj, "value-id", path), f"{path}.value-id")
            self.types[value_id] = self.type_(_required(obj, "value", path), f"{path}.value")
            _bool(_required(obj, "value-required", path), f"{path}.value-required")
        else:
            raise invalid(
                f"{path}.type", f"unknown type {kind!r} (expected a primitive name, struct, list or map)"[:200]
            )
        return kind

    def struct(self, obj: Mapping[str, Any], path: str) -> None:
        fields = _list(_required(obj, "fields", path), f"{path}.fields" if path else "fields")
        names: set[str] = set()
        for index, raw in enumerate(fields):
            where = f"{path}.fields[{index}]" if path else f"fields[{index}]"
            field = _object(raw, where)
            field_id = self.field_id(_required(field, "id", where), f"{where}.id")
            name = _str(_required(field, "name", where), f"{where}.name")
            if name in names:
                raise invalid(f"{where}.name", f"duplicate field name {name!r}")
            names.add(name)
            _bool(_required(field, "required", where), f"{where}.required")
            if "doc" in field and field["doc"] is not None:
                _str(field["doc"], f"{where}.doc", non_empty=False)
            self.types[field_id] = self.type_(_required(field, "type", where), f"{where}.type")


def check_schema(raw: Any, path: str = "schema") -> dict[int, Any]:
    """A schema object; returns its field ids mapped to their primitive type (nested kinds as names)."""
    obj = _object(raw, path)
    if obj.get("type", "struct") != "struct":
        raise invalid(f"{path}.type", 'a schema must be of type "struct"')
    if "schema-id" in obj and obj["schema-id"] is not None:
        _int(obj["schema-id"], f"{path}.schema-id")
    walker = _SchemaFields()
    walker.struct(obj, path)
    identifiers = obj.get("identifier-field-ids")
    if identifiers is not None:
        for index, value in enumerate(_list(identifiers, f"{path}.identifier-field-ids")):
            field_id = _int(value, f"{path}.identifier-field-ids[{index}]")
            if field_id not in walker.types:
                raise invalid(f"{path}.identifier-field-ids[{index}]", f"no field with id {field_id} in the schema")
    return walker.types


def _transform(value: Any, path: str) -> Any:
    text = _str(value, path)
    try:
        transform = parse_transform(text)
    except Exception:  # noqa: BLE001 - pyiceberg raises its own ValidationError (no ValueError) for bucket[x]
        transform = None
    if transform is None or isinstance(transform, UnknownTransform):
        raise invalid(
            path,
            f"unknown transform {text!r} (expected identity, bucket[N], truncate[W], year, month, day, hour or void)"[
                :300
            ],
        )
    for parameter in ("num_buckets", "width"):
        value = getattr(transform, parameter, None)
        if value is not None and value < 1:
            raise invalid(path, f"{text!r}: the number of buckets or the width must be at least 1")
    return transform


def _source(field: Mapping[str, Any], where: str, transform: Any, columns: dict[int, Any] | None) -> None:
    if "source-id" in field or "source-ids" not in field:
        source_ids = [(_int(_required(field, "source-id", where), f"{where}.source-id"), f"{where}.source-id")]
    else:
        values = _list(field["source-ids"], f"{where}.source-ids")
        source_ids = [(_int(v, f"{where}.source-ids[{i}]"), f"{where}.source-ids[{i}]") for i, v in enumerate(values)]
    if columns is None:
        return
    for source_id, at in source_ids:
        if source_id not in columns:
            raise invalid(at, f"no column with id {source_id} in the schema")
        source_type = columns[source_id]
        if not isinstance(source_type, PrimitiveType):
            raise invalid(at, f"column {source_id} is a {source_type}, not a primitive column")
        if not transform.can_transform(source_type):
            raise invalid(
                f"{where}.transform", f"transform {transform} cannot be applied to {source_type} column {source_id}"
            )


def check_partition_spec(raw: Any, path: str = "partition-spec", columns: dict[int, Any] | None = None) -> None:
    """A partition spec; with ``columns`` (from :func:`check_schema`) its source columns must exist."""
    obj = _object(raw, path)
    if "spec-id" in obj and obj["spec-id"] is not None:
        _int(obj["spec-id"], f"{path}.spec-id")
    names: set[str] = set()
    for index, raw_field in enumerate(_list(_required(obj, "fields", path), f"{path}.fields")):
        where = f"{path}.fields[{index}]"
        field = _object(raw_field, where)
        transform = _transform(_required(field, "transform", where), f"{where}.transform")
        _source(field, where, transform, columns)
        if "field-id" in field and field["field-id"] is not None:
            _int(field["field-id"], f"{where}.field-id")
        name = _str(_required(field, "name", where), f"{where}.name")
        if name in names:
            raise invalid(f"{where}.name", f"duplicate partition field name {name!r}")
        names.add(name)


def check_sort_order(raw: Any, path: str = "write-order", columns: dict[int, Any] | None = None) -> None:
    """A sort order; with ``columns`` its source columns must exist."""
    obj = _object(raw, path)
    if "order-id" in obj and obj["order-id"] is not None:
        _int(obj["order-id"], f"{path}.order-id")
    for index, raw_field in enumerate(_list(_required(obj, "fields", path), f"{path}.fields")):
        where = f"{path}.fields[{index}]"
        field = _object(raw_field, where)
        transform = _transform(_required(field, "transform", where), f"{where}.transform")
        _source(field, where, transform, columns)
        direction = _str(_required(field, "direction", where), f"{where}.direction")
        if direction not in SORT_DIRECTIONS:
            raise invalid(f"{where}.direction", f"must be one of {', '.join(SORT_DIRECTIONS)}, got {direction!r}"[:200])
        null_order = _str(_required(field, "null-order", where), f"{where}.null-order")
        if null_order not in NULL_ORDERS:
            raise invalid(f"{where}.null-order", f"must be one of {', '.join(NULL_ORDERS)}, got {null_order!r}"[:200])


def schema_columns(schema: Any) -> dict[int, Any]:
    """Field id -> type of an already-parsed pyiceberg Schema (for checks against a table's schema)."""
    return {field_id: field.field_type for field_id, field in index_by_id(schema).items()}


def reason(exc: Exception, path: str = "", *, tags: Collection[str] = ()) -> str:
    """A parser error in the client's terms: ``path.loc: message`` per error, no library URLs or class
    names. ``tags`` are discriminator values pydantic puts into its locations (``add-schema``)."""
    if not isinstance(exc, ValidationError) and isinstance(exc.__cause__, ValidationError):
        exc = exc.__cause__  # pyiceberg wraps pydantic's error in its own
    if isinstance(exc, ValidationError):
        parts = []
        for error in exc.errors()[:3]:
            steps = [f"[{p}]" if isinstance(p, int) else str(p) for p in error.get("loc", ()) if p not in tags]
            loc = ".".join(steps).replace(".[", "[")
            where = ".".join(p for p in (path, loc) if p).replace(".[", "[")
            message = str(error.get("msg", "invalid value")).removeprefix("Value error, ")
            parts.append(f"{where}: {message}" if where else message)
        return "; ".join(parts) or "invalid value"
    text = str(exc).split("\n", 1)[0]
    return f"{path}: {text}" if path else text


def check_updates(raw: Any, path: str = "updates") -> None:
    """The schema, spec and sort-order JSON inside the ``updates`` of a table or view commit
    (their source columns are checked against the table's schema when the update is applied)."""
    if not isinstance(raw, list):
        return  # the caller's parser names a missing or non-list ``updates``
    for index, update in enumerate(raw):
        if not isinstance(update, dict):
            raise invalid(f"{path}[{index}]", f"must be a JSON object, got {_kind(update)}")
        action, where = update.get("action"), f"{path}[{index}]"
        if action == "add-schema":
            check_schema(_required(update, "schema", where), f"{where}.schema")
        elif action == "add-spec":
            check_partition_spec(_required(update, "spec", where), f"{where}.spec")
        elif action == "add-sort-order":
            check_sort_order(_required(update, "sort-order", where), f"{where}.sort-order")


def check_sources(fields: Sequence[Any], columns: dict[int, Any], path: str) -> None:
    """Parsed partition or sort fields against a table's schema (an ``add-spec`` or ``add-sort-order``
    of a commit: their columns are known only when the update is applied)."""
    for index, field in enumerate(fields):
        source = {"source-id": field.source_id}
        _source(source, f"{path}.fields[{index}]", field.transform, columns)
