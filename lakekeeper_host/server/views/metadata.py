"""View metadata: the ViewUpdate/ViewRequirement models and the logic that applies them.

pyiceberg 0.12 has the view *data* models (``pyiceberg.view.metadata``) but no update logic, so
this module is the view counterpart of ``pyiceberg.table.update.update_table_metadata``:

* :data:`ViewUpdate` -- the spec's discriminated union of view updates (the table updates that
  views share are pyiceberg's own models, plus ``add-view-version`` and
  ``set-current-view-version``), :class:`AssertViewUUID` the one view requirement;
* :func:`parse_view_updates` / :func:`parse_view_requirements` -- request JSON to models, with a
  400 that names an unknown ``action``/``type``;
* :func:`new_view_metadata` (create) and :func:`update_view_metadata` (commit), both running
  :class:`ViewMetadataBuilder`, a port of Iceberg Java's ``ViewMetadata.Builder``: schema and
  version ids are re-used for identical schemas/versions, ``-1`` means "the last added",
  the version log records the new current version, old versions expire after
  ``version.history.num-entries`` and a replace may not drop a SQL dialect unless
  ``replace.drop-dialect.allowed`` is set.

Everything here is pure: no IO, no database. Failures are :class:`CatalogError` 400s with the
Java message texts (``IllegalArgumentException`` for preconditions, ``ValidationException``
for validations), so clients see the same errors as from the reference implementation.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Sequence
from functools import singledispatch
from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter, ValidationError
from pyiceberg.schema import Schema
from pyiceberg.table.update import (
    AddSchemaUpdate,
    AssignUUIDUpdate,
    RemovePropertiesUpdate,
    SetLocationUpdate,
    SetPropertiesUpdate,
    UpgradeFormatVersionUpdate,
)
from pyiceberg.typedef import IcebergBaseModel
from pyiceberg.view.metadata import ViewHistoryEntry, ViewMetadata, ViewVersion

from lakekeeper_host.errors import CatalogError, bad_request, commit_failed, illegal_argument
from lakekeeper_host.server.spec_json import check_schema, check_updates, reason

SUPPORTED_VIEW_FORMAT_VERSION = 1
DEFAULT_VIEW_FORMAT_VERSION = 1
LAST_ADDED = -1
INITIAL_SCHEMA_ID = 0

# ViewProperties (Iceberg Java)
VERSION_HISTORY_SIZE = "version.history.num-entries"
VERSION_HISTORY_SIZE_DEFAULT = 10
REPLACE_DROP_DIALECT_ALLOWED = "replace.drop-dialect.allowed"
WRITE_METADATA_LOCATION = "write.metadata.path"
METADATA_COMPRESSION = "write.metadata.compression-codec"


# ---------------------------------------------------------------- models


class AddViewVersionUpdate(IcebergBaseModel):
    action: Literal["add-view-version"] = Field(default="add-view-version")
    view_version: ViewVersion = Field(alias="view-version")


class SetCurrentViewVersionUpdate(IcebergBaseModel):
    action: Literal["set-current-view-version"] = Field(default="set-current-view-version")
    view_version_id: int = Field(alias="view-version-id")


ViewUpdate = Annotated[
    AssignUUIDUpdate
    | UpgradeFormatVersionUpdate
    | AddSchemaUpdate
    | SetLocationUpdate
    | SetPropertiesUpdate
    | RemovePropertiesUpdate
    | AddViewVersionUpdate
    | SetCurrentViewVersionUpdate,
    Field(discriminator="action"),
]

VIEW_UPDATE_ACTIONS = frozenset(
    {
        "assign-uuid",
        "upgrade-format-version",
        "add-schema",
        "set-location",
        "set-properties",
        "remove-properties",
        "add-view-version",
        "set-current-view-version",
    }
)


class AssertViewUUID(IcebergBaseModel):
    """The view UUID must match the requirement's ``uuid``."""

    type: Literal["assert-view-uuid"] = Field(default="assert-view-uuid")
    uuid: uuid.UUID

    def validate(self, base_metadata: ViewMetadata | None) -> None:
        if base_metadata is None:
            raise commit_failed("Requirement failed: current view metadata is missing")
        if str(self.uuid) != str(base_metadata.view_uuid):
            raise commit_failed(
                f"Requirement failed: view UUID does not match: expected {base_metadata.view_uuid} != {self.uuid}"
            )


ViewRequirement = AssertViewUUID
VIEW_REQUIREMENT_TYPES = frozenset({"assert-view-uuid"})

_UPDATES = TypeAdapter(ViewUpdate)
_VERSION = TypeAdapter(ViewVersion)
_SCHEMA = TypeAdapter(Schema)


def _validation_message(exc: ValueError | TypeError) -> str:
    # pyiceberg's own validators raise plain TypeError/ValueError (e.g. an unparsable default value)
    return reason(exc)


def parse_view_updates(raw: Any) -> tuple[Any, ...]:
    """``updates`` of a CommitViewRequest; an unknown ``action`` is a 400 naming it."""
    check_updates(raw, "updates")
    if not isinstance(raw, list):
        raise bad_request("updates must be a list of view updates")
    parsed = []
    for index, item in enumerate(raw):
        action = item.get("action") if isinstance(item, dict) else None
        if not isinstance(action, str) or action not in VIEW_UPDATE_ACTIONS:
            raise bad_request(f"Unknown view update action: {action!r} (updates[{index}])")
        try:
            parsed.append(_UPDATES.validate_python(item))
        except (ValidationError, ValueError, TypeError) as exc:
            raise bad_request(
                f"Invalid view update {action!r} (updates[{index}]): {_validation_message(exc)}"
            ) from None
    return tuple(parsed)


def parse_view_requirements(raw: Any) -> tuple[AssertViewUUID, ...]:
    """``requirements`` of a CommitViewRequest (optional); an unknown ``type`` is a 400 naming it."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise bad_request("requirements must be a list of view requirements")
    parsed = []
    for index, item in enumerate(raw):
        type_ = item.get("type") if isinstance(item, dict) else None
        if not isinstance(type_, str) or type_ not in VIEW_REQUIREMENT_TYPES:
            raise bad_request(f"Unknown view requirement type: {type_!r} (requirements[{index}])")
        try:
            parsed.append(AssertViewUUID.model_validate(item))
        except (ValidationError, ValueError, TypeError) as exc:
            raise bad_request(
                f"Invalid view requirement {type_!r} (requirements[{index}]): {_validation_message(exc)}"
            ) from None
    return tuple(parsed)


def parse_view_version(raw: Any) -> ViewVersion:
    try:
        return _VERSION.validate_python(raw)
    except (ValidationError, ValueError, TypeError) as exc:
        raise bad_request(f"Invalid view-version: {reason(exc, 'view-version')}") from None


def parse_schema(raw: Any) -> Schema:
    check_schema(raw, "schema")
    try:
        return _SCHEMA.validate_python(raw)
    except (ValidationError, ValueError, TypeError) as exc:
        raise bad_request(f"Invalid schema: {reason(exc, 'schema')}") from None


def validate_requirements(requirements: Iterable[AssertViewUUID], base: ViewMetadata | None) -> None:
    for requirement in requirements:
        requirement.validate(base)


# ---------------------------------------------------------------- builder


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise illegal_argument(message)


def _validation(condition: bool, message: str) -> None:
    if not condition:
        raise CatalogError(400, "ValidationException", message)


def _same_version(one: ViewVersion, two: ViewVersion) -> bool:
    """Versions that behave the same (id, timestamp and operation aside)."""
    return (
        one.summary == two.summary
        and one.representations == two.representations
        and one.default_catalog == two.default_catalog
        and tuple(one.default_namespace) == tuple(two.default_namespace)
        and one.schema_id == two.schema_id
    )


def _dialects(version: ViewVersion) -> set[str]:
    return {r.root.dialect.lower() for r in version.representations}


def _bool_property(properties: dict[str, str], key: str, default: bool) -> bool:
    value = properties.get(key)
    return default if value is None else value.strip().lower() == "true"


def _int_property(properties: dict[str, str], key: str, default: int) -> int:
    value = properties.get(key)
    if value is None:
        return default
    try:
        return int(value)
    except ValueError:
        raise illegal_argument(f"{key} must be an integer but was {value!r}") from None


class ViewMetadataBuilder:
    """Iceberg Java's ``ViewMetadata.Builder``: applies changes to a copy of a base metadata."""

    def __init__(self, base: ViewMetadata | None = None):
        self.format_version = DEFAULT_VIEW_FORMAT_VERSION
        self.uuid: str | None = None
        self.location: str | None = None
        self.schemas: list[Schema] = []
        self.versions: list[ViewVersion] = []
        self.history: list[ViewHistoryEntry] = []
        self.properties: dict[str, str] = {}
        self.current_version_id: int | None = None
        self.previous_version: ViewVersion | None = None
        self.changes: list[str] = []  # the actions applied (an empty list: nothing changed)
        self._last_added_schema_id: int | None = None
        self._last_added_version_id: int | None = None
        self._added_version_ids: set[int] = set()
        self._history_entry: ViewHistoryEntry | None = None
        if base is not None:
            self.format_version = base.format_version
            self.uuid = str(base.view_uuid)
            self.location = base.location
            self.schemas = list(base.schemas)
            self.versions = list(base.versions)
            self.history = list(base.version_log)
            self.properties = dict(base.properties)
            self.current_version_id = base.current_version_id
            self.previous_version = self._version(base.current_version_id)

    # ------------------------------------------------ lookups

    def _version(self, version_id: int) -> ViewVersion | None:
        return next((v for v in self.versions if v.version_id == version_id), None)

    def _schema_ids(self) -> set[int]:
        return {s.schema_id for s in self.schemas}

    # ------------------------------------------------ changes

    def upgrade_format_version(self, new_format_version: int) -> ViewMetadataBuilder:
        _check(
            new_format_version >= self.format_version,
            f"Cannot downgrade v{self.format_version} view to v{new_format_version}",
        )
        _check(
            0 < new_format_version <= SUPPORTED_VIEW_FORMAT_VERSION,
            f"Unsupported format version: {new_format_version}",
        )
        if new_format_version != self.format_version:
            self.format_version = new_format_version
            self.changes.append("upgrade-format-version")
        return self

    def assign_uuid(self, new_uuid: str) -> ViewMetadataBuilder:
        _check(bool(new_uuid), "Cannot set uuid to null")
        _check(self.uuid is None or str(new_uuid) == self.uuid, "Cannot reassign uuid")
        if str(new_uuid) != self.uuid:
            self.uuid = str(new_uuid)
            self.changes.append("assign-uuid")
        return self

    def set_location(self, new_location: str | None) -> ViewMetadataBuilder:
        _check(bool(new_location), "Invalid location: null")
        if new_location != self.location:
            self.location = new_location
            self.changes.append("set-location")
        return self

    def set_properties(self, updated: dict[str, str]) -> ViewMetadataBuilder:
        if updated:
            self.properties.update(updated)
            self.changes.append("set-properties")
        return self

    def remove_properties(self, removals: Iterable[str]) -> ViewMetadataBuilder:
        removals = list(removals)
        if removals:
            for key in removals:
                self.properties.pop(key, None)
            self.changes.append("remove-properties")
        return self

    def add_schema(self, schema: Schema) -> int:
        """Add ``schema`` (or re-use an identical one); returns its id."""
        schema_id = INITIAL_SCHEMA_ID
        for existing in self.schemas:
            if existing == schema:
                # Java only remembers *new* schemas as "last added"; remembering a re-used one too
                # lets a retried commit (the schema arrived concurrently) still resolve -1.
                self._last_added_schema_id = existing.schema_id
                return existing.schema_id
            schema_id = max(schema_id, existing.schema_id + 1)
        if schema.schema_id != schema_id:
            schema = Schema(*schema.fields, schema_id=schema_id, identifier_field_ids=schema.identifier_field_ids)
        self.schemas.append(schema)
        self.changes.append("add-schema")
        self._last_added_schema_id = schema_id
        return schema_id

    def add_version(self, version: ViewVersion) -> int:
        """Add ``version`` (or re-use an identical one); returns its id."""
        if version.schema_id == LAST_ADDED:
            _validation(
                self._last_added_schema_id is not None, "Cannot set last added schema: no schema has been added"
            )
            version = version.model_copy(update={"schema_id": self._last_added_schema_id})
        new_id = version.version_id
        for existing in self.versions:
            if _same_version(existing, version):
                # a re-used version counts as "last added" so a following set-current(-1) selects it
                self._last_added_version_id = existing.version_id
                return existing.version_id
            if existing.version_id >= new_id:
                new_id = existing.version_id + 1
        if new_id != version.version_id:
            version = version.model_copy(update={"version_id": new_id})
        _check(
            version.schema_id in self._schema_ids(),
            f"Cannot add version with unknown schema: {version.schema_id}",
        )
        seen: set[str] = set()
        for representation in version.representations:
            dialect = representation.root.dialect.lower()
            _check(dialect not in seen, f"Invalid view version: Cannot add multiple queries for dialect {dialect}")
            seen.add(dialect)
        self.versions.append(version)
        self._added_version_ids.add(new_id)
        self._last_added_version_id = new_id
        self.changes.append("add-view-version")
        return new_id

    def set_current_version_id(self, version_id: int) -> ViewMetadataBuilder:
        if version_id == LAST_ADDED:
            _validation(
                self._last_added_version_id is not None,
                "Cannot set last version id: no current version id has been set",
            )
            version_id = self._last_added_version_id
        if version_id == self.current_version_id:
            return self
        version = self._version(version_id)
        _check(version is not None, f"Cannot set current version to unknown version: {version_id}")
        self.current_version_id = version_id
        self.changes.append("set-current-view-version")
        # a version added by this change keeps its own timestamp; re-activating an old one is "now"
        timestamp = version.timestamp_ms if version_id in self._added_version_ids else _now_ms()
        self._history_entry = ViewHistoryEntry(timestamp_ms=timestamp, version_id=version_id)
        return self

    def set_current_version(self, version: ViewVersion, schema: Schema) -> ViewMetadataBuilder:
        """Create/replace: add ``schema`` and ``version`` (pointing at it) and make it current."""
        schema_id = self.add_schema(schema)
        return self.set_current_version_id(self.add_version(version.model_copy(update={"schema_id": schema_id})))

    # ------------------------------------------------ result

    def build(self) -> ViewMetadata:
        _check(self.location is not None, "Invalid location: null")
        _check(bool(self.versions), "Invalid view: no versions were added")
        current = self._version(self.current_version_id) if self.current_version_id is not None else None
        _check(current is not None, f"Cannot find current version {self.current_version_id} in view versions")
        _check(
            current.schema_id in self._schema_ids(),
            f"Cannot find current schema with id {current.schema_id} in schemas: {sorted(self._schema_ids())}",
        )
        history = list(self.history)
        if self._history_entry is not None:
            history.append(self._history_entry)

        if self.previous_version is not None and not _bool_property(
            self.properties, REPLACE_DROP_DIALECT_ALLOWED, False
        ):
            before, after = _dialects(self.previous_version), _dialects(current)
            _check(
                after >= before,
                f"Cannot replace view due to loss of view dialects ({REPLACE_DROP_DIALECT_ALLOWED}=false):\n"
                f"Previous dialects: {sorted(before)}\nNew dialects: {sorted(after)}",
            )

        history_size = _int_property(self.properties, VERSION_HISTORY_SIZE, VERSION_HISTORY_SIZE_DEFAULT)
        _check(history_size > 0, f"{VERSION_HISTORY_SIZE} must be positive but was {history_size}")
        keep = max(len(self._added_version_ids | {current.version_id}), history_size)
        versions = self.versions
        if len(versions) > keep:
            versions = _expire_versions(versions, keep, current)
            history = _retain_history(history, {v.version_id for v in versions})

        return ViewMetadata(
            view_uuid=self.uuid or str(uuid.uuid4()),
            format_version=self.format_version,
            location=self.location,
            schemas=self.schemas,
            current_version_id=current.version_id,
            versions=versions,
            version_log=history,
            properties=self.properties,
        )


def _expire_versions(versions: Sequence[ViewVersion], keep: int, current: ViewVersion) -> list[ViewVersion]:
    """Keep the current version and the newest others (ids are sequential) up to ``keep``."""
    retained = [current]
    for version in sorted(versions, key=lambda v: v.version_id, reverse=True)[:keep]:
        if len(retained) == keep:
            break
        if version.version_id != current.version_id:
            retained.append(version)
    return retained


def _retain_history(history: Sequence[ViewHistoryEntry], ids: set[int]) -> list[ViewHistoryEntry]:
    """Drop log entries of expired versions; the log restarts after an unknown version."""
    retained: list[ViewHistoryEntry] = []
    for entry in history:
        if entry.version_id in ids:
            retained.append(entry)
        else:
            retained.clear()
    return retained


def _now_ms() -> int:
    return int(time.time() * 1000)


# ---------------------------------------------------------------- applying updates


@singledispatch
def _apply_view_update(update: Any, builder: ViewMetadataBuilder) -> None:
    raise bad_request(f"Unknown view update action: {getattr(update, 'action', type(update).__name__)!r}")


@_apply_view_update.register(AssignUUIDUpdate)
def _(update: AssignUUIDUpdate, builder: ViewMetadataBuilder) -> None:
    builder.assign_uuid(str(update.uuid))


@_apply_view_update.register(UpgradeFormatVersionUpdate)
def _(update: UpgradeFormatVersionUpdate, builder: ViewMetadataBuilder) -> None:
    builder.upgrade_format_version(update.format_version)


@_apply_view_update.register(AddSchemaUpdate)
def _(update: AddSchemaUpdate, builder: ViewMetadataBuilder) -> None:
    builder.add_schema(update.schema_)


@_apply_view_update.register(SetLocationUpdate)
def _(update: SetLocationUpdate, builder: ViewMetadataBuilder) -> None:
    builder.set_location(update.location)


@_apply_view_update.register(SetPropertiesUpdate)
def _(update: SetPropertiesUpdate, builder: ViewMetadataBuilder) -> None:
    builder.set_properties(dict(update.updates))


@_apply_view_update.register(RemovePropertiesUpdate)
def _(update: RemovePropertiesUpdate, builder: ViewMetadataBuilder) -> None:
    builder.remove_properties(update.removals)


@_apply_view_update.register(AddViewVersionUpdate)
def _(update: AddViewVersionUpdate, builder: ViewMetadataBuilder) -> None:
    builder.add_version(update.view_version)


@_apply_view_update.register(SetCurrentViewVersionUpdate)
def _(update: SetCurrentViewVersionUpdate, builder: ViewMetadataBuilder) -> None:
    builder.set_current_version_id(update.view_version_id)


def update_view_metadata(base: ViewMetadata, updates: Sequence[Any]) -> tuple[ViewMetadata, bool]:
    """Apply ``updates`` to ``base``; returns the new metadata and whether anything changed."""
    builder = ViewMetadataBuilder(base)
    for update in updates:
        _apply_view_update(update, builder)
    return builder.build(), bool(builder.changes)


def new_view_metadata(
    *,
    location: str,
    schema: Schema,
    view_version: ViewVersion,
    properties: dict[str, str] | None = None,
    view_uuid: str | None = None,
) -> ViewMetadata:
    """The metadata of a newly created view (Java ``ViewMetadata.builder()...setCurrentVersion``)."""
    builder = ViewMetadataBuilder()
    builder.assign_uuid(view_uuid or str(uuid.uuid4()))
    builder.set_properties(dict(properties or {}))
    builder.set_location(location)
    builder.set_current_version(view_version, schema)
    return builder.build()


def metadata_to_json(metadata: ViewMetadata) -> dict[str, Any]:
    return metadata.model_dump(mode="json")


def parse_view_metadata(raw: bytes | str | dict[str, Any]) -> ViewMetadata:
    """A view metadata file's content (400 when it is not valid view metadata)."""
    try:
        if isinstance(raw, dict):
            return ViewMetadata.model_validate(raw)
        return ViewMetadata.model_validate_json(raw)
    except (ValidationError, ValueError, TypeError) as exc:
        raise bad_request(f"Invalid view metadata: {_validation_message(exc)}") from None
