"""JSON Schemas for the OpenAPI documents, taken from the classes the server parses with.

Request bodies the handlers structure with cattrs come from their attrs classes (kebab-case keys,
as ``lakekeeper_host.serde`` reads them); Iceberg REST bodies and responses come from pyiceberg's
pydantic models, the same models its REST client sends and reads. Either way the document cannot
drift from what the server accepts.
"""

from __future__ import annotations

import enum
import types
import typing
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

import attrs

from lakekeeper_host.config.types import Secret
from lakekeeper_host.serde import kebab

SCHEMA_REF = "#/components/schemas/{model}"


# pyiceberg models whose JSON form is not their fields (a validator parses a string)
WIRE_FORMS: dict[str, dict[str, Any]] = {
    "Endpoint": {"type": "string", "pattern": "^(GET|HEAD|POST|PUT|DELETE) /", "description": "`<METHOD> <path>`"},
    "IcebergType": {
        "anyOf": [{"type": "string"}, {"type": "object", "required": ["type"]}],
        "description": "A primitive type name (`long`, `decimal(9,2)`, ...) or a struct, list or map object",
    },
}


def ref(name: str) -> dict[str, str]:
    return {"$ref": SCHEMA_REF.format(model=name)}


class Schemas:
    """Collects named schemas for ``components.schemas``; ``of()`` answers a ``$ref`` to one."""

    def __init__(self, field_overrides: Mapping[str, dict[str, Any]] | None = None) -> None:
        self.named: dict[str, dict[str, Any]] = {}
        # attrs field name -> schema used instead of the annotation (e.g. storage_profile -> the
        # registered storage profiles)
        self.field_overrides = dict(field_overrides or {})

    def add(self, name: str, schema: dict[str, Any]) -> dict[str, str]:
        self.named.setdefault(name, schema)
        return ref(name)

    def of(self, model: Any) -> dict[str, Any]:
        if attrs.has(model):
            return self._attrs(model)
        if hasattr(model, "model_json_schema"):  # pydantic (pyiceberg)
            return self._pydantic(model)
        variants = [sub for sub in model.__subclasses__() if attrs.has(sub)] if isinstance(model, type) else []
        if variants:  # a plain base structured into one of its attrs subclasses (e.g. by credential-type)
            description = _description(model)
            return self.add(model.__name__, {"oneOf": [self._attrs(sub) for sub in variants],
                                             **({"description": description} if description else {})})
        raise TypeError(f"no schema for {model!r}")

    def _pydantic(self, model: Any) -> dict[str, Any]:
        schema = model.model_json_schema(by_alias=True, ref_template=SCHEMA_REF, mode="validation")
        for name, definition in schema.pop("$defs", {}).items():
            self.named.setdefault(name, WIRE_FORMS.get(name, _omittable_nulls(definition)))
        return self.add(model.__name__, WIRE_FORMS.get(model.__name__, _omittable_nulls(schema)))


    def _attrs(self, cls: type) -> dict[str, Any]:
        name = cls.__name__
        if name in self.named:
            return ref(name)
        self.named[name] = {}  # placeholder: recursive classes refer to it
        hints = typing.get_type_hints(cls)
        properties: dict[str, Any] = {}
        required: list[str] = []
        tag = getattr(cls, "credential_type", None)  # Lakekeeper's credential discriminator
        if isinstance(tag, str):
            properties["credential-type"] = {"const": tag}
            required.append("credential-type")
        for attribute in attrs.fields(cls):
            key = kebab(attribute.name)
            override = self.field_overrides.get(attribute.name)
            properties[key] = override if override is not None else self.type(hints.get(attribute.name, Any))
            if attribute.default is attrs.NOTHING:
                required.append(key)
        schema: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            schema["required"] = required
        description = _description(cls)
        if description:
            schema["description"] = description
        self.named[name] = schema
        return ref(name)

    def type(self, annotation: Any) -> dict[str, Any]:
        """The JSON Schema of one annotation."""
        if annotation is Any or annotation is object:
            return {}
        if annotation is type(None):
            return {"type": "null"}
        origin = typing.get_origin(annotation)
        args = typing.get_args(annotation)
        if origin is typing.Annotated:
            return self.type(args[0])
        if origin in (typing.Union, types.UnionType):
            choices = [self.type(arg) for arg in args]
            return choices[0] if len(choices) == 1 else {"anyOf": choices}
        if origin is typing.Literal:
            return {"enum": list(args)}
        if origin in (dict, Mapping) or annotation in (dict, Mapping):
            value = self.type(args[1]) if len(args) == 2 else {}
            return {"type": "object", "additionalProperties": value} if value else {"type": "object"}
        if origin in (list, tuple, set, frozenset, Sequence) or annotation in (list, tuple, set, frozenset):
            items = self.type(args[0]) if args else {}
            return {"type": "array", "items": items} if items else {"type": "array"}
        if isinstance(annotation, type):
            if issubclass(annotation, Secret):
                return {"type": "string", "writeOnly": True, "description": "secret: kept encrypted, never returned"}
            if attrs.has(annotation):
                return self._attrs(annotation)
            if issubclass(annotation, enum.Enum):
                return {"enum": [member.value for member in annotation]}
            if issubclass(annotation, bool):
                return {"type": "boolean"}
            if issubclass(annotation, int):
                return {"type": "integer"}
            if issubclass(annotation, float):
                return {"type": "number"}
            if issubclass(annotation, str):
                return {"type": "string"}
            if issubclass(annotation, datetime):
                return {"type": "string", "format": "date-time"}
            if issubclass(annotation, timedelta):
                return {"type": "string", "description": "a duration (ISO 8601, e.g. PT1H, or 30s / 5m / 1h)"}
            if issubclass(annotation, uuid.UUID):
                return {"type": "string", "format": "uuid"}
        return {}


def _description(cls: type) -> str:
    """The first paragraph of a class docstring, in Markdown (attrs' generated signature says nothing)."""
    doc = (cls.__doc__ or "").strip()
    if not doc or doc.startswith(f"{cls.__name__}("):
        return ""
    return doc.split("\n\n", 1)[0].replace("\n", " ").replace("``", "`")


def reachable(document: dict[str, Any]) -> set[str]:
    """Names of the ``components.schemas`` the document's paths and other components refer to."""
    schemas = document["components"]["schemas"]
    found: set[str] = set()
    pending: list[Any] = [document["paths"], {k: v for k, v in document["components"].items() if k != "schemas"}]
    while pending:
        node = pending.pop()
        if isinstance(node, dict):
            target = node.get("$ref")
            if isinstance(target, str) and target.startswith("#/components/schemas/"):
                name = target.rsplit("/", 1)[1]
                if name not in found and name in schemas:
                    found.add(name)
                    pending.append(schemas[name])
            pending.extend(node.values())
        elif isinstance(node, list):
            pending.extend(node)
    return found


def _omittable_nulls(schema: dict[str, Any]) -> dict[str, Any]:
    """pyiceberg's models write no ``null`` (``exclude_none``): a nullable field may be left out."""
    properties = schema.get("properties", {})

    def nullable(name: str) -> bool:
        return any(choice.get("type") == "null" for choice in properties.get(name, {}).get("anyOf", ()))

    if "required" in schema:
        schema = {**schema, "required": [name for name in schema["required"] if not nullable(name)]}
    return schema
