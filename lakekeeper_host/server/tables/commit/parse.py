"""Parsing a commit request: identifiers, requirements and updates (pyiceberg models plus the
encryption-key updates pyiceberg lacks), and the property rules a commit must keep."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal, Union, get_args

from attrs import frozen
from pydantic import Field, TypeAdapter, ValidationError
from pyiceberg.table.update import (
    AssertCreate,
    RemovePropertiesUpdate,
    SetPropertiesUpdate,
    TableRequirement,
    TableUpdate,
)
from pyiceberg.typedef import IcebergBaseModel

from lakekeeper_host.errors import (
    CatalogError,
    bad_request,
)
from lakekeeper_host.server import metadata_io
from lakekeeper_host.server.names import validate_name, validate_namespace
from lakekeeper_host.server.spec_json import check_updates, reason


class AddEncryptionKeyUpdate(IcebergBaseModel):
    """``add-encryption-key`` (spec, format v3); pyiceberg 0.12 has no model for it."""

    action: Literal["add-encryption-key"] = Field(default="add-encryption-key")
    encryption_key: metadata_io.EncryptedKey = Field(alias="encryption-key")


class RemoveEncryptionKeyUpdate(IcebergBaseModel):
    """``remove-encryption-key`` (spec, format v3)."""

    action: Literal["remove-encryption-key"] = Field(default="remove-encryption-key")
    key_id: str = Field(alias="key-id")


# pyiceberg's discriminated union of table updates plus the two above
_UPDATES = TypeAdapter(
    list[
        Annotated[
            Union[*get_args(get_args(TableUpdate)[0]), AddEncryptionKeyUpdate, RemoveEncryptionKeyUpdate],  # noqa: UP007
            Field(discriminator="action"),
        ]
    ]
)


_REQUIREMENTS = TypeAdapter(list[TableRequirement])


_KNOWN_ACTIONS = {
    "assign-uuid", "upgrade-format-version", "add-schema", "set-current-schema", "add-spec",
    "set-default-spec", "add-sort-order", "set-default-sort-order", "add-snapshot", "set-snapshot-ref",
    "remove-snapshots", "remove-snapshot-ref", "set-location", "set-properties", "remove-properties",
    "set-statistics", "remove-statistics", "set-partition-statistics", "remove-partition-statistics",
    "remove-partition-specs", "remove-schemas", "add-encryption-key", "remove-encryption-key",
}  # fmt: skip


_KNOWN_REQUIREMENTS = {
    "assert-create", "assert-table-uuid", "assert-ref-snapshot-id", "assert-last-assigned-field-id",
    "assert-current-schema-id", "assert-last-assigned-partition-id", "assert-default-spec-id",
    "assert-default-sort-order-id",
}  # fmt: skip


# write.metadata.* keys a client may set; the rest (and write.data.path*) are server-managed
ALLOWED_WRITE_METADATA_PROPERTIES = (
    metadata_io.PREVIOUS_VERSIONS_MAX,
    metadata_io.DELETE_AFTER_COMMIT,
    metadata_io.CODEC_PROPERTY,
)


@frozen
class TableChange:
    """One table's part of a commit: identifier, requirements, updates (and the raw JSON)."""

    namespace: tuple[str, ...]
    name: str
    requirements: tuple[Any, ...]
    updates: tuple[Any, ...]
    raw: dict[str, Any]

    @property
    def creates(self) -> bool:
        return any(isinstance(r, AssertCreate) for r in self.requirements)


def parse_change(body: Any, *, namespace: Sequence[str] | None = None, name: str | None = None) -> TableChange:
    """A ``CommitTableRequest``. ``namespace``/``name`` come from the URL when given; otherwise
    (``transactions/commit``) the body's ``identifier`` is required."""
    if not isinstance(body, dict):
        raise bad_request("Invalid request body: a commit must be a JSON object")
    identifier = body.get("identifier")
    if namespace is None or name is None:
        if not isinstance(identifier, dict):
            raise bad_request("Invalid request body: every table change needs an identifier @ body.identifier")
        namespace, name = _identifier(identifier)
    validate_namespace(namespace)
    validate_name(name)
    check_updates(body.get("updates"), "updates")
    updates = _parse_list(body.get("updates"), "updates", "action", _KNOWN_ACTIONS, _UPDATES, required=True)
    requirements = _parse_list(
        body.get("requirements"), "requirements", "type", _KNOWN_REQUIREMENTS, _REQUIREMENTS, required=False
    )
    validate_property_updates(updates)
    return TableChange(tuple(namespace), name, tuple(requirements), tuple(updates), body)


def _identifier(value: dict[str, Any]) -> tuple[list[str], str]:
    namespace, name = value.get("namespace"), value.get("name")
    if not isinstance(namespace, list) or not all(isinstance(p, str) for p in namespace):
        raise bad_request("Invalid request body: identifier.namespace must be a list of strings")
    if not isinstance(name, str):
        raise bad_request("Invalid request body: identifier.name must be a string")
    return list(namespace), name


def _parse_list(raw: Any, what: str, tag: str, known: set[str], adapter: TypeAdapter, *, required: bool) -> list[Any]:
    if raw is None:
        if required:
            raise bad_request(f"Invalid request body: missing field `{what}`")
        return []
    if not isinstance(raw, list):
        raise bad_request(f"Invalid request body: `{what}` must be a list")
    for item in raw:
        kind = item.get(tag) if isinstance(item, dict) else None
        if not isinstance(kind, str) or kind not in known:
            noun = "table update action" if tag == "action" else "table requirement type"
            raise bad_request(f"Unsupported {noun}: {kind!r}")
    try:
        return adapter.validate_python(raw)
    except ValidationError as exc:
        raise bad_request(f"Invalid request body: {reason(exc, what, tags=known)}") from None
    except (ValueError, TypeError) as exc:  # pyiceberg's own validators (e.g. an unreadable default value)
        raise bad_request(f"Invalid request body: {reason(exc, what)}") from None


def validate_table_properties(keys: Sequence[str]) -> None:
    """Server-managed keys may not be set or removed (Lakekeeper: 409 ``FailedToSetProperties``)."""
    for key in keys:
        managed = (
            key.startswith("write.metadata")
            and key not in ALLOWED_WRITE_METADATA_PROPERTIES
            and not key.startswith("write.metadata.metrics.")
        ) or key.startswith("write.data.path")
        if managed:
            raise CatalogError(409, "FailedToSetProperties", f"Properties contain unsupported property: '{key}'")


def validate_property_updates(updates: Sequence[Any]) -> None:
    for update in updates:
        if isinstance(update, SetPropertiesUpdate):
            validate_table_properties(list(update.updates))
        elif isinstance(update, RemovePropertiesUpdate):
            validate_table_properties(list(update.removals))
