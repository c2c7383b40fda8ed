"""Example contract checker ``no-dropped-columns``.

A table whose properties contain a key starting with ``contract.`` (for instance
``contract.owner=billing``) is under a data contract: a commit that would make a column of its
current schema disappear -- dropping it, or switching to a schema without it -- is refused
with ``409 ContractViolation``. Everything else (adding columns, renaming them, data commits,
dropping or renaming the table) passes. Removing the last ``contract.`` property lifts the
contract for later commits.

Registered through the entry point ``contract_example`` in the group ``lakekeeper``. The
property prefix is ``LAKEKEEPER__CONTRACT_PROPERTY_PREFIX`` (default ``contract.``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from attrs import frozen
from pyiceberg.schema import Schema
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.update import AddSchemaUpdate, SetCurrentSchemaUpdate
from pyiceberg.types import ListType, MapType, NestedField, StructType

from lakekeeper_host import hookimpl
from lakekeeper_host.registry import BackendSpec, BuildContext
from lakekeeper_host.service.contracts import RenameDestination, TabularView, Violation

__version__ = "0.1.0"
__all__ = ["ContractExampleConfig", "NoDroppedColumns"]

LAST_ADDED_SCHEMA = -1  # SetCurrentSchemaUpdate: "the schema added last in this commit"


@frozen
class ContractExampleConfig:
    contract_property_prefix: str = "contract."


class NoDroppedColumns:
    """Refuses commits that drop a column from a table under contract."""

    name = "no-dropped-columns"

    def __init__(self, prefix: str = "contract."):
        self.prefix = prefix

    async def check_table_updates(self, updates: Sequence[Any], metadata: TableMetadata | None) -> Violation | None:
        if metadata is None:  # the commit creates the table: nothing to keep yet
            return None
        contract = sorted(k for k in metadata.properties if k.startswith(self.prefix))
        if not contract:
            return None
        new_schema = _schema_after(updates, metadata)
        if new_schema is None:
            return None
        kept = set(_field_ids(new_schema))
        dropped = [path for field_id, path in _field_ids(metadata.schema()).items() if field_id not in kept]
        if not dropped:
            return None
        return Violation(
            f"Table is under contract ({', '.join(contract)}): dropping column(s) "
            f"{', '.join(dropped)} is not allowed. Remove the contract property first."
        )

    # views, drops and renames are not governed by this contract
    async def check_view_updates(self, updates: Sequence[Any], metadata: Any) -> Violation | None:
        return None

    async def check_drop(self, tabular: TabularView) -> Violation | None:
        return None

    async def check_rename(self, tabular: TabularView, destination: RenameDestination) -> Violation | None:
        return None


def _schema_after(updates: Sequence[Any], metadata: TableMetadata) -> Schema | None:
    """The current schema once ``updates`` are applied, or None if it does not change."""
    added: dict[int, Schema] = {}
    last_added: Schema | None = None
    current_id = metadata.current_schema_id
    for update in updates:
        if isinstance(update, AddSchemaUpdate):
            last_added = update.schema_
            added[update.schema_.schema_id] = update.schema_
        elif isinstance(update, SetCurrentSchemaUpdate):
            if update.schema_id == LAST_ADDED_SCHEMA:
                if last_added is None:
                    return None  # invalid commit; the catalog itself rejects it
                current_id = last_added.schema_id
            else:
                current_id = update.schema_id
    if current_id == metadata.current_schema_id:
        return None
    if current_id in added:
        return added[current_id]
    return next((s for s in metadata.schemas if s.schema_id == current_id), None)


def _field_ids(schema: Schema) -> dict[int, str]:
    """Every field id of the schema (nested ones too) -> its dotted column path."""
    out: dict[int, str] = {}

    def walk(fields: Sequence[NestedField], prefix: str) -> None:
        for field in fields:
            path = f"{prefix}{field.name}"
            out[field.field_id] = path
            kind = field.field_type
            if isinstance(kind, StructType):
                walk(kind.fields, f"{path}.")
            elif isinstance(kind, ListType):
                walk([kind.element_field], f"{path}.")
            elif isinstance(kind, MapType):
                walk([kind.key_field, kind.value_field], f"{path}.")

    walk(schema.fields, "")
    return out


async def _build(config: ContractExampleConfig, ctx: BuildContext) -> NoDroppedColumns:
    return NoDroppedColumns(config.contract_property_prefix)


@hookimpl
def lakekeeper_contract_checkers() -> list[BackendSpec]:
    return [BackendSpec(name="no-dropped-columns", factory=_build, config_cls=ContractExampleConfig)]
