"""JSON Schemas for the OpenAPI documents, taken from the classes the server parses with.

Request bodies the handlers structure with cattrs come from their attrs classes (kebab-case keys,
as ``lakekeeper_host.serde`` reads them); Iceberg REST bodies and responses come from pyiceberg's
pydantic models, the same models its REST client sends and reads. Either way the document cannot
drift from what the server accepts.
"""

from __future__ import annotations

import enum
import re
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
    # pyiceberg's enum values are upper case; the REST spec (and the server's answers) spell them
    # lower case, which pyiceberg reads as well
    "FileFormat": {"type": "string", "enum": ["avro", "orc", "parquet", "puffin"]},
}


def ref(name: str) -> dict[str, str]:
    return {"$ref": SCHEMA_REF.format(model=name)}


class Schemas:
    """Collects the schemas of ``components.schemas``; ``of()`` and ``named()`` answer a ``$ref`` to one."""

    def __init__(self, field_overrides: Mapping[str, dict[str, Any]] | None = None) -> None:
        self.collected: dict[str, dict[str, Any]] = {}
        # attrs field name -> schema used instead of the annotation (e.g. storage_profile -> the
        # registered storage profiles)
        self.field_overrides = dict(field_overrides or {})

    def add(self, name: str, schema: dict[str, Any]) -> dict[str, str]:
        self.collected.setdefault(name, schema)
        return ref(name)

    def named(self, name: str) -> dict[str, Any]:
        """A hand-written shape (``HAND_SCHEMAS``, ``MANAGEMENT_ANSWERS``, with what they refer to),
        else the pyiceberg REST model of that name."""
        written = HAND_SCHEMAS.get(name) or MANAGEMENT_ANSWERS.get(name) or ERROR_SCHEMAS.get(name)
        if written is None:
            from pyiceberg.catalog import rest

            return self.of(getattr(rest, name))
        if name not in self.collected:
            self.add(name, written)
            for referenced in re.findall(r"#/components/schemas/(\w+)", repr(written)):
                if referenced not in self.collected:
                    self.named(referenced)
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
            self.collected.setdefault(name, WIRE_FORMS.get(name, _omittable_nulls(definition)))
        return self.add(model.__name__, WIRE_FORMS.get(model.__name__, _omittable_nulls(schema)))


    def _attrs(self, cls: type) -> dict[str, Any]:
        name = cls.__name__
        if name in self.collected:
            return ref(name)
        self.collected[name] = {}  # placeholder: recursive classes refer to it
        hints = typing.get_type_hints(cls)
        properties: dict[str, Any] = {}
        required: list[str] = []
        tag = getattr(cls, "credential_type", None)  # Lakekeeper's credential discriminator
        if isinstance(tag, str):
            properties["credential-type"] = {"const": tag}
            required.append("credential-type")
        for attribute in attrs.fields(cls):
            key = kebab(attribute.name)
            # a plugin field whose JSON is not its attrs shape names its schema in the field's metadata
            override = self.field_overrides.get(attribute.name) or attribute.metadata.get("json_schema")
            properties[key] = override if override is not None else self.type(hints.get(attribute.name, Any))
            if attribute.default is attrs.NOTHING:
                required.append(key)
        schema: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            schema["required"] = required
        description = _description(cls)
        if description:
            schema["description"] = description
        self.collected[name] = schema
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


# ---------------------------------------------------------------- hand-written shapes

# what every failure answers (and what a failed storage validation check carries)
ERROR_SCHEMAS: dict[str, dict[str, Any]] = {
    "ErrorModel": {
        "type": "object",
        "description": "What went wrong; `type` names the error class clients dispatch on.",
        "required": ["message", "type", "code"],
        "properties": {
            "message": {"type": "string", "description": "Human-readable explanation"},
            "type": {"type": "string", "description": "Error class, e.g. NoSuchTableException"},
            "code": {"type": "integer", "minimum": 400, "maximum": 599, "description": "The HTTP status"},
        },
    },
    "IcebergErrorResponse": {
        "type": "object",
        "description": "The body of every 4xx and 5xx answer.",
        "required": ["error"],
        "properties": {"error": {"$ref": "#/components/schemas/ErrorModel"}},
    },
}

_STRING_MAP = {"type": "object", "additionalProperties": {"type": "string"}}
_STRINGS = {"type": "array", "items": {"type": "string"}}
# request bodies the handlers parse by hand (the Iceberg REST spec's shapes), and the S3 signer's answer
HAND_SCHEMAS: dict[str, dict[str, Any]] = {
    "S3SignResponse": {
        "type": "object", "required": ["uri", "headers"],
        "properties": {"uri": {"type": "string"},
                       "headers": {"type": "object", "additionalProperties": _STRINGS}},
    },
    "CreateNamespaceRequest": {
        "type": "object", "required": ["namespace"],
        "properties": {"namespace": _STRINGS, "properties": _STRING_MAP},
    },
    "UpdateNamespacePropertiesRequest": {
        "type": "object", "properties": {"removals": _STRINGS, "updates": _STRING_MAP},
    },
    "RenameTableRequest": {
        "type": "object", "required": ["source", "destination"],
        "properties": {"source": ref("TableIdentifier"), "destination": ref("TableIdentifier")},
    },
    "CommitTransactionRequest": {
        "type": "object", "required": ["table-changes"],
        "properties": {"table-changes": {"type": "array", "items": ref("CommitTableRequest")}},
    },
    "CommitViewRequest": {
        "type": "object", "required": ["updates"],
        "properties": {
            "identifier": ref("TableIdentifier"),
            "requirements": {"type": "array", "items": {"type": "object", "required": ["type"]}},
            "updates": {"type": "array", "items": {"type": "object", "required": ["action"]}},
        },
    },
    "ReportMetricsRequest": {
        "type": "object", "required": ["report-type"],
        "description": "A ScanReport or CommitReport (stored per table; see the management metrics endpoint)",
        "properties": {"report-type": {"enum": ["scan-report", "commit-report"]}, "table-name": {"type": "string"},
                       "snapshot-id": {"type": "integer"}},
    },
    # the Generic Table API (Lakekeeper's generic-table-open-api.yaml)
    "CreateGenericTableRequest": {
        "type": "object", "required": ["name", "format"],
        "properties": {
            "name": {"type": "string"},
            "format": {"type": "string", "pattern": "^[a-z][a-z0-9_-]{0,63}$",
                       "description": "Opaque format name: lance, parquet, delta, ..."},
            "base-location": {"type": ["string", "null"],
                              "description": "Inside the warehouse, overlapping no other table (default: assigned)"},
            "doc": {"type": ["string", "null"]},
            "properties": _STRING_MAP,
            "schema": {"description": "Any JSON (at most 1 MiB); stored, never interpreted"},
            "statistics": {"description": "Any JSON (at most 1 MiB); stored, never interpreted"},
        },
    },
    "GenericTableData": {
        "type": "object", "required": ["name", "format", "base-location", "protected"],
        "properties": {
            "name": {"type": "string"}, "format": {"type": "string"}, "base-location": {"type": "string"},
            "protected": {"type": "boolean", "description": "Whether the generic table is protected from deletion"},
            "doc": {"type": ["string", "null"]}, "properties": _STRING_MAP, "schema": {}, "statistics": {},
        },
    },
    "GenericTableStorageCredential": {
        "type": "object", "required": ["prefix", "config"],
        "properties": {"prefix": {"type": "string"}, "config": _STRING_MAP},
    },
    "LoadGenericTableResponse": {
        "type": "object", "required": ["table"],
        "properties": {
            "table": ref("GenericTableData"),
            "config": {"type": ["object", "null"], "additionalProperties": {"type": "string"},
                       "description": "Storage properties; absent for a caller without read_data"},
            "storage-credentials": {"type": ["array", "null"], "items": ref("GenericTableStorageCredential")},
        },
    },
    "LoadGenericTableCredentialsResponse": {
        "type": "object", "required": ["storage-credentials"],
        "properties": {"storage-credentials": {"type": "array", "items": ref("GenericTableStorageCredential")}},
    },
    "GenericTableIdentifier": {
        "type": "object", "required": ["namespace", "name"],
        "properties": {"namespace": _STRINGS, "name": {"type": "string"}, "format": {"type": ["string", "null"]},
                       "id": {"type": ["string", "null"], "format": "uuid"}},
    },
    "ListGenericTablesResponse": {
        "type": "object", "required": ["identifiers"],
        "properties": {"identifiers": {"type": "array", "items": ref("GenericTableIdentifier")},
                       "next-page-token": {"type": ["string", "null"]}},
    },
    "RenameGenericTableRequest": {
        "type": "object", "required": ["source", "destination"],
        "properties": {"source": ref("RenameGenericTableTarget"), "destination": ref("RenameGenericTableTarget")},
    },
    "RenameGenericTableTarget": {
        "type": "object", "required": ["namespace", "name"],
        "properties": {"namespace": _STRINGS, "name": {"type": "string"}},
    },
}  # fmt: skip

_TEXT_OR_NULL = {"anyOf": [{"type": "string"}, {"type": "null"}]}
_INSTANT_OR_NULL = {"anyOf": [{"type": "string", "format": "date-time"}, {"type": "null"}]}
_NEXT_PAGE = {"next-page-token": _TEXT_OR_NULL}
_OBJECT_OR_NULL = {"anyOf": [{"type": "object"}, {"type": "null"}]}
_TASK_STATUSES = ("SCHEDULED", "RUNNING", "STOPPING", "SUCCESS", "FAILED", "CANCELLED")  # server/tasks.API_STATUS


def _list_of(key: str, item: str) -> dict[str, Any]:
    return {"type": "object", "required": [key],
            "properties": {key: {"type": "array", "items": ref(item)}, **_NEXT_PAGE}}  # fmt: skip


# the Management API's answers (Lakekeeper's shapes; the handlers build them as JSON)
MANAGEMENT_ANSWERS: dict[str, dict[str, Any]] = {
    "ServerInfo": {
        "type": "object", "required": ["version", "server-id", "bootstrapped"],
        "properties": {"version": {"type": "string"}, "server-id": {"type": "string"},
                       "bootstrapped": {"type": "boolean"}, "default-project-id": _TEXT_OR_NULL,
                       "authz-backend": {"type": "string"}, "queues": _STRINGS,
                       "lakekeeper-version": {"type": "string"}, "lakekeeper-commit-sha": {"type": "string"},
                       "console": {"type": "object", "required": ["edition", "version"],
                                   "properties": {"edition": {"type": "string"}, "version": {"type": "string"},
                                                  "commit-sha": {"type": "string"}}},
                       "managed-role-providers": _STRINGS},
    },
    "Project": {
        "type": "object", "required": ["project-id", "project-name"],
        "properties": {"project-id": {"type": "string"}, "project-name": {"type": "string"}},
    },
    "ProjectList": _list_of("projects", "Project"),
    "CreateProjectResponse": {
        "type": "object", "required": ["project-id"], "properties": {"project-id": {"type": "string"}},
    },
    "Warehouse": {
        "type": "object",
        "required": ["id", "name", "project-id", "storage-profile", "delete-profile", "status", "protected"],
        "properties": {
            "id": {"type": "string"}, "warehouse-id": {"type": "string"}, "name": {"type": "string"},
            "project-id": {"type": "string"}, "storage-profile": ref("StorageProfile"),
            "delete-profile": {"type": "object", "required": ["type"], "properties": {
                "type": {"enum": ["hard", "soft"]}, "expiration-seconds": {"type": "integer"}}},
            "status": {"enum": ["active", "inactive"]}, "protected": {"type": "boolean"},
            "allowed-format-versions": {"type": "array", "items": {"type": "integer"}},
            "default-format-version": {"type": "integer"}, "updated-at": _INSTANT_OR_NULL,
        },
    },
    "WarehouseList": _list_of("warehouses", "Warehouse"),
    "User": {
        "type": "object", "required": ["id", "name", "user-type"],
        "properties": {"id": {"type": "string"}, "name": {"type": "string"}, "email": _TEXT_OR_NULL,
                       "user-type": {"enum": ["human", "application"]}, "last-updated-with": {"type": "string"},
                       "created-at": {"type": "string", "format": "date-time"}, "updated-at": _INSTANT_OR_NULL},
    },
    "UserList": _list_of("users", "User"),
    "Role": {
        "type": "object", "required": ["id", "name", "project-id"],
        "properties": {"id": {"type": "string"}, "ident": {"type": "string"}, "name": {"type": "string"},
                       "description": _TEXT_OR_NULL, "project-id": {"type": "string"},
                       "provider-id": {"type": "string"}, "source-id": {"type": "string"},
                       "created-at": {"type": "string", "format": "date-time"}, "updated-at": _INSTANT_OR_NULL},
    },
    "RoleList": _list_of("roles", "Role"),
    # the permissions API (Lakekeeper's authz-openfga router)
    "AllowedActions": {
        "type": "object", "required": ["allowed-actions"],
        "description": "The actions (lakekeeper_host.service.authz.ACTIONS of the object's kind) allowed",
        "properties": {"allowed-actions": _STRINGS},
    },
    "Assignment": {
        "type": "object", "required": ["type"],
        "description": "A relation held by a user or by a role's assignees (exactly one of user, role)",
        "properties": {"type": {"type": "string", "description": "ownership, select, describe, modify, ..."},
                       "user": {"type": "string"}, "role": {"type": "string", "format": "uuid"}},
        "oneOf": [{"required": ["user"]}, {"required": ["role"]}],
    },
    "Assignments": {
        "type": "object", "required": ["assignments"],
        "properties": {"assignments": {"type": "array", "items": ref("Assignment")}},
    },
    "UpdateAssignmentsRequest": {
        "type": "object",
        "properties": {"writes": {"type": "array", "items": ref("Assignment")},
                       "deletes": {"type": "array", "items": ref("Assignment")}},
    },
    # the Grants API (the same grants as the assignments above, in Lakekeeper's authorizer-independent shape)
    "Privilege": {
        "type": "object", "required": ["name", "display-name"],
        "properties": {"name": {"type": "string"}, "display-name": {"type": "string"}, "description": _TEXT_OR_NULL,
                       "category": {**_TEXT_OR_NULL,
                                    "description": "metadata, read, write, create, security or administration"}},
    },
    "PrivilegeVocabulary": {
        "type": "object", "required": ["privileges"],
        "properties": {"privileges": {
            "type": "object", "additionalProperties": {"type": "array", "items": ref("Privilege")},
            "description": "Keyed by resource type (server, project, warehouse, namespace, table, view, "
                           "generic-table); every type is present, an empty list when nothing is grantable there",
        }},
    },
    "GrantablePrivileges": {
        "type": "object", "required": ["privileges"],
        "properties": {"privileges": {"type": "array", "items": {
            "type": "object", "required": ["privilege", "allowed"],
            "properties": {"privilege": ref("Privilege"),
                           "allowed": {"type": "boolean", "description": "The principal may grant it here"}},
        }}},
    },
    "GrantPrincipal": {
        "type": "object", "description": "Exactly one of user, role",
        "properties": {"user": {"type": "string"}, "role": {"type": "string", "format": "uuid"}},
        "oneOf": [{"required": ["user"]}, {"required": ["role"]}],
    },
    "GrantEntry": {
        "type": "object", "required": ["privilege", "principal"],
        "properties": {"privilege": {"type": "string"}, "principal": ref("GrantPrincipal")},
    },
    "GrantResource": {
        "type": "object", "required": ["type"],
        "description": "The resource a grant is held on: its type and the ids that address it",
        "properties": {
            "type": {"type": "string", "enum": ["server", "project", "warehouse", "namespace", "table", "view",
                                                "generic-table"]},
            **{f"{kind}-id": {"type": "string"} for kind in ("project", "warehouse", "namespace", "table", "view",
                                                             "generic-table")},
        },
    },
    "Grant": {
        "type": "object", "required": ["privilege", "principal", "resource", "recognized"],
        "properties": {
            "privilege": {"type": "string"}, "principal": ref("GrantPrincipal"), "resource": ref("GrantResource"),
            "recognized": {"type": "boolean", "description": "The privilege is in the authorizer's vocabulary"},
            "created-at": {**_INSTANT_OR_NULL, "description": "Not kept by the authorizers here: always null"},
        },
    },
    "Grants": {
        "type": "object", "required": ["grants"],
        "properties": {
            "grants": {"type": "array", "items": ref("Grant")},
            "next-page-token": {**_TEXT_OR_NULL, "description": "The next page's pageToken; null on the last page"},
        },
    },
    "ApplyGrantsRequest": {
        "type": "object", "description": "At most 100 entries, writes and deletes together",
        "properties": {"writes": {"type": "array", "items": ref("GrantEntry")},
                       "deletes": {"type": "array", "items": ref("GrantEntry")}},
    },
    "ManagedAccess": {
        "type": "object", "required": ["managed-access"],
        "properties": {"managed-access": {"type": "boolean"}, "managed-access-inherited": {"type": "boolean"}},
    },
    "SetManagedAccessRequest": {
        "type": "object", "required": ["managed-access"], "properties": {"managed-access": {"type": "boolean"}},
    },
    "CheckRequest": {
        "type": "object", "required": ["operation"],
        "properties": {
            "identity": {"description": "Whom to check for (default: the caller)",
                         "oneOf": [{"type": "object", "required": ["user"], "properties": {"user": {"type": "string"}}},
                                   {"type": "object", "required": ["role"], "properties": {"role": {"type": "string"}}},
                                   {"type": "null"}]},
            "operation": {
                "type": "object", "minProperties": 1, "maxProperties": 1,
                "description": "One of server, project, warehouse, namespace, table, view, role: the action and "
                               "the object (by id, or tables/views/namespaces by warehouse-id + namespace + name)",
                "additionalProperties": {
                    "type": "object", "required": ["action"],
                    "properties": {"action": {"type": "string"}, "project-id": {"type": "string"},
                                   "warehouse-id": {"type": "string"}, "namespace-id": {"type": "string"},
                                   "namespace": _STRINGS, "table-id": {"type": "string"},
                                   "view-id": {"type": "string"}, "role-id": {"type": "string"},
                                   "table": {"type": "string"}, "view": {"type": "string"}},
                },
            },
        },
    },
    "CheckResponse": {
        "type": "object", "required": ["allowed"], "properties": {"allowed": {"type": "boolean"}},
    },
    "TrinoOpaRequest": {
        "type": "object", "required": ["input"],
        "description": "Trino's OPA input document, as Trino's OPA access control sends it",
        "properties": {"input": {
            "type": "object", "required": ["context", "action"],
            "properties": {
                "context": {"type": "object", "required": ["identity"], "properties": {
                    "identity": {"type": "object", "required": ["user"],
                                 "properties": {"user": {"type": "string"},
                                                "groups": _STRINGS}}}},
                "action": {"type": "object", "required": ["operation"], "properties": {
                    "operation": {"type": "string"}, "resource": {"type": "object"},
                    "targetResource": {"type": "object"},
                    "filterResources": {"type": "array", "maxItems": 10000, "items": {"type": "object"}}}},
            },
        }},
    },
    "TrinoOpaDecision": {
        "type": "object", "required": ["result"],
        "properties": {"result": {"type": "boolean", "description": "Whether Trino may go ahead"}},
    },
    "TrinoOpaFilterResult": {
        "type": "object", "required": ["result"],
        "properties": {"result": {"type": "array", "items": {"type": "integer", "minimum": 0},
                                  "description": "The indices of filterResources kept (FilterColumns: of the "
                                                 "table's columns)"}},
    },
    "BatchCheckRequest": {
        "type": "object", "required": ["checks"],
        "properties": {
            "checks": {"type": "array", "maxItems": 1000, "items": {
                "type": "object", "required": ["operation"],
                "properties": {
                    "id": {"type": "string", "description": "Returned with this check's result"},
                    "identity": {"description": "Whom to check for (default: the caller); asking about someone "
                                                "else needs read_assignments on the object",
                                 "oneOf": [{"type": "object", "required": ["user"],
                                            "properties": {"user": {"type": "string"}}},
                                           {"type": "object", "required": ["role"],
                                            "properties": {"role": {"type": "string", "format": "uuid"}}}]},
                    "operation": {
                        "type": "object", "minProperties": 1, "maxProperties": 1,
                        "description": "One of server, project, warehouse, namespace, table, view: the action "
                                       "and the object (namespaces by warehouse-id + namespace-id or namespace; "
                                       "tables and views by warehouse-id + table-id/view-id or namespace + "
                                       "table/view)",
                        "additionalProperties": {
                            "type": "object", "required": ["action"],
                            "properties": {"action": {"type": "string"}, "project-id": {"type": "string"},
                                           "warehouse-id": {"type": "string", "format": "uuid"},
                                           "namespace-id": {"type": "string", "format": "uuid"},
                                           "namespace": _STRINGS, "table-id": {"type": "string", "format": "uuid"},
                                           "view-id": {"type": "string", "format": "uuid"},
                                           "table": {"type": "string"}, "view": {"type": "string"}},
                        },
                    },
                },
            }},
            "error-on-not-found": {"type": "boolean", "default": False,
                                   "description": "404 when an object does not exist (or the caller may not see "
                                                  "it) instead of allowed=false"},
        },
    },
    "BatchCheckResponse": {
        "type": "object", "required": ["results"],
        "properties": {"results": {"type": "array", "description": "One per check, in request order",
                                   "items": {"type": "object", "required": ["allowed"],
                                             "properties": {"id": {"type": "string"},
                                                            "allowed": {"type": "boolean"}}}}},
    },
    "SearchUserList": {
        "type": "object", "required": ["users"],
        "properties": {"users": {"type": "array", "items": {
            "type": "object", "required": ["id", "name", "user-type"],
            "properties": {"id": {"type": "string"}, "name": {"type": "string"}, "email": _TEXT_OR_NULL,
                           "user-type": {"enum": ["human", "application"]}}}}},
    },
    "SearchRoleList": {
        "type": "object", "required": ["roles"], "properties": {"roles": {"type": "array", "items": ref("Role")}},
    },
    "RoleMetadata": {
        "type": "object", "required": ["id", "name", "project-id"],
        "properties": {"id": {"type": "string"}, "ident": {"type": "string"}, "name": {"type": "string"},
                       "project-id": {"type": "string"}, "provider-id": {"type": "string"},
                       "source-id": {"type": "string"}},
    },
    "RoleMembership": {
        "type": "object", "required": ["id", "name"],
        "properties": {"id": {"type": "string"}, "ident": {"type": "string"}, "name": {"type": "string"}},
    },
    "RoleMembershipList": _list_of("roles", "RoleMembership"),
    "RoleMember": {
        "type": "object", "required": ["type", "id"],
        "description": "A user (`type` user: name, email, user-type) or a role (`type` role: ident, name)",
        "properties": {"type": {"enum": ["user", "role"]}, "id": {"type": "string"}, "name": {"type": "string"},
                       "email": _TEXT_OR_NULL, "user-type": {"enum": ["human", "application"]},
                       "ident": {"type": "string"}},
    },
    "RoleMemberList": _list_of("members", "RoleMember"),
    "AddedRoleMembers": {
        "type": "object", "required": ["members"],
        "properties": {"members": {"type": "array", "items": {
            "type": "object", "required": ["type", "id"],
            "properties": {"type": {"enum": ["user", "role"]}, "id": {"type": "string"}}}}},
    },
    "Protection": {
        "type": "object", "required": ["protected"],
        # Lakekeeper's ProtectionResponse is snake_case (no kebab-case rename); updated-at is ours, kept
        "properties": {"protected": {"type": "boolean"}, "updated_at": _INSTANT_OR_NULL,
                       "updated-at": _INSTANT_OR_NULL},
    },
    "DeletedTabular": {
        "type": "object", "required": ["id", "name", "namespace", "typ", "warehouse-id", "deleted-at"],
        "properties": {"id": {"type": "string"}, "name": {"type": "string"}, "namespace": _STRINGS,
                       "typ": {"enum": ["table", "view"]}, "warehouse-id": {"type": "string"},
                       "created-at": _INSTANT_OR_NULL, "deleted-at": _INSTANT_OR_NULL,
                       "expiration-date": _INSTANT_OR_NULL},
    },
    "DeletedTabularList": _list_of("tabulars", "DeletedTabular"),
    "SearchTabularList": {
        "type": "object", "required": ["tabulars"],
        "properties": {"tabulars": {"type": "array", "items": {
            "type": "object", "required": ["namespace-name", "tabular-name", "tabular-id"],
            "properties": {"namespace-name": _STRINGS, "tabular-name": {"type": "string"},
                           "tabular-id": {"type": "object", "required": ["type", "id"], "properties": {
                               "type": {"enum": ["table", "view"]}, "id": {"type": "string"}}},
                           "distance": {"anyOf": [{"type": "number"}, {"type": "null"}]}}}}},
    },
    "SearchNamespaceList": {
        "type": "object", "required": ["namespaces"],
        "properties": {"namespaces": {"type": "array", "items": {
            "type": "object", "required": ["namespace-name", "namespace-id"],
            "properties": {"namespace-name": _STRINGS, "namespace-id": {"type": "string"},
                           "distance": {"anyOf": [{"type": "number"}, {"type": "null"}]}}}}},
    },
    "TablePreview": {
        "type": "object", "required": ["snapshot-id", "columns", "rows", "next-page-token"],
        "description": "One page of a table's rows, each a list in column order (times as ISO-8601, decimals as "
                       "text, binary as hex)",
        "properties": {
            "snapshot-id": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            "schema-id": {"type": "integer"},
            "columns": {"type": "array", "items": {
                "type": "object", "required": ["field-id", "name", "type"],
                "properties": {"field-id": {"type": "integer"}, "name": {"type": "string"},
                               "type": {"type": "string"}, "required": {"type": "boolean"}}}},
            "rows": {"type": "array", "items": {"type": "array"}},
            "next-page-token": _TEXT_OR_NULL,
        },
    },
    "ColumnStatistics": {
        "type": "object", "required": ["snapshot-id", "columns"],
        "description": "What the manifests of a snapshot record, summed over its live data files",
        "properties": {
            "snapshot-id": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            "schema-id": {"type": "integer"},
            **{key: {"type": "integer"} for key in (
                "data-files", "delete-files", "record-count", "deleted-record-count", "file-size-in-bytes",
                "delete-file-size-in-bytes")},
            "columns": {"type": "array", "items": {
                "type": "object", "required": ["field-id", "name", "type"],
                "properties": {
                    "field-id": {"type": "integer"}, "name": {"type": "string"}, "type": {"type": "string"},
                    **{key: {"anyOf": [{"type": "integer"}, {"type": "null"}]} for key in (
                        "value-count", "null-count", "nan-count", "column-size-in-bytes")},
                    "lower-bound": {}, "upper-bound": {}, "bounds-complete": {"type": "boolean"},
                }}},
        },
    },
    "ValidationReport": {
        "type": "object", "required": ["valid", "checks"],
        "description": "Each check of a storage validation; `valid` is false when one failed",
        "properties": {"valid": {"type": "boolean"}, "checks": {"type": "array", "items": {
            "type": "object", "required": ["name", "status"],
            "properties": {"name": {"type": "string"}, "status": {"enum": ["passed", "failed", "skipped", "warning"]},
                           "duration-ms": {"type": "integer"}, "reason": {"type": "string"},
                           "error": ref("ErrorModel")}}}},
    },
    "MovedNamespace": {
        "type": "object", "required": ["namespace", "namespace-id"],
        "properties": {"namespace": _STRINGS, "namespace-id": {"type": "string"},
                       "parent-namespace-id": _TEXT_OR_NULL},
    },
    "WarehouseStatistics": {
        "type": "object", "required": ["warehouse-ident", "stats"],
        "properties": {"warehouse-ident": {"type": "string"}, "stats": {"type": "array", "items": {
            "type": "object", "required": ["timestamp", "number-of-tables", "number-of-views"],
            "properties": {"timestamp": {"type": "string", "format": "date-time"},
                           "number-of-tables": {"type": "integer"}, "number-of-views": {"type": "integer"},
                           "updated-at": _INSTANT_OR_NULL}}}, **_NEXT_PAGE},
    },
    "EndpointStatistics": {
        "type": "object", "required": ["timestamps", "called-endpoints"],
        "properties": {
            "timestamps": {"type": "array", "items": {"type": "string", "format": "date-time"}},
            "called-endpoints": {"type": "array", "items": {"type": "array", "items": {
                "type": "object", "required": ["count", "http-route", "status-code"],
                "properties": {"count": {"type": "integer"}, "http-route": {"type": "string"},
                               "status-code": {"type": "integer"}, "warehouse-id": _TEXT_OR_NULL,
                               "warehouse-name": _TEXT_OR_NULL, "created-at": _INSTANT_OR_NULL,
                               "updated-at": _INSTANT_OR_NULL}}}},
            "previous-page-token": _TEXT_OR_NULL, **_NEXT_PAGE},
    },
    "QueueConfig": {
        "type": "object", "required": ["queue-config"],
        "properties": {"queue-config": {"type": "object", "required": ["queue-name"],
                                        "properties": {"queue-name": {"type": "string"}}},
                       "max-seconds-since-last-heartbeat": {"anyOf": [{"type": "integer"}, {"type": "null"}]}},
    },
    "ScheduledTask": {"type": "object", "required": ["task-id"], "properties": {"task-id": {"type": "string"}}},
    "Task": {
        "type": "object", "required": ["task-id", "project-id", "queue-name", "entity", "status", "attempt"],
        "properties": {"task-id": {"type": "string"}, "project-id": {"type": "string"},
                       "warehouse-id": _TEXT_OR_NULL, "queue-name": {"type": "string"},
                       "entity": {"type": "object", "required": ["type"], "properties": {"type": {"type": "string"}}},
                       "entity-name": _STRINGS, "status": {"enum": list(_TASK_STATUSES)},
                       "scheduled-for": _INSTANT_OR_NULL, "picked-up-at": _INSTANT_OR_NULL,
                       "attempt": {"type": "integer"}, "last-heartbeat-at": _INSTANT_OR_NULL,
                       "progress": {"type": "number"}, "parent-task-id": _TEXT_OR_NULL,
                       "created-at": _INSTANT_OR_NULL, "updated-at": _INSTANT_OR_NULL},
    },
    "TaskList": _list_of("tasks", "Task"),
    "TaskDetails": {
        "allOf": [ref("Task"), {
            "type": "object", "required": ["task-data", "attempts"],
            "properties": {"task-data": {"type": "object"}, "execution-details": _OBJECT_OR_NULL,
                           "message": _TEXT_OR_NULL, "attempts": {"type": "array", "items": {
                               "type": "object", "required": ["attempt", "status"],
                               "properties": {"attempt": {"type": "integer"},
                                              "status": {"enum": list(_TASK_STATUSES)},
                                              "scheduled-for": _INSTANT_OR_NULL, "started-at": _INSTANT_OR_NULL,
                                              "duration": _TEXT_OR_NULL, "message": _TEXT_OR_NULL,
                                              "created-at": _INSTANT_OR_NULL, "progress": {"type": "number"},
                                              "execution-details": _OBJECT_OR_NULL}}}}}],
    },
    "TableMaintenance": {
        "type": "object", "required": ["table-id", "policy", "effective-policy"],
        "description": "The table's own policy override, and the warehouse policy merged with it",
        "properties": {"table-id": {"type": "string"}, "policy": {"type": "object"},
                       "effective-policy": {"type": "object"}, "updated-at": _INSTANT_OR_NULL},
    },
    "MaintenanceRun": {
        "type": "object", "required": ["task-id", "table-id"],
        "properties": {"task-id": {"type": "string"}, "table-id": {"type": "string"}, "entity-name": _STRINGS,
                       "attempt": {"type": "integer"}},
    },
    "MaintenanceRuns": {
        "type": "object", "required": ["runs"],
        "properties": {"runs": {"type": "array", "items": ref("MaintenanceRun")}},
    },
    "TableMetricsReports": {
        "type": "object", "required": ["reports"],
        "properties": {"reports": {"type": "array", "items": {
            "type": "object", "required": ["report-id", "report-type", "created-at", "report"],
            "properties": {"report-id": {"type": "string"}, "report-type": {"type": "string"},
                           "snapshot-id": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
                           "created-at": {"type": "string", "format": "date-time"}, "report": {"type": "object"}}}},
            **_NEXT_PAGE},
    },
    "PluginList": {
        "type": "object", "required": ["plugins"],
        "properties": {"plugins": {"type": "array", "items": {
            "type": "object", "required": ["name", "hooks", "builtin"],
            "properties": {"name": {"type": "string"}, "distribution": _TEXT_OR_NULL, "version": _TEXT_OR_NULL,
                           "hooks": _STRINGS, "provides": _STRINGS, "builtin": {"type": "boolean"}}}}},
    },
}  # fmt: skip
