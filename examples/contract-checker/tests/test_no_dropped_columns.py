"""The example checker on pyiceberg's own update objects, as the catalog hands them over."""

from __future__ import annotations

from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC
from pyiceberg.schema import Schema
from pyiceberg.table.metadata import new_table_metadata
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER
from pyiceberg.table.update import (
    AddSchemaUpdate,
    SetCurrentSchemaUpdate,
    SetPropertiesUpdate,
)
from pyiceberg.types import IntegerType, LongType, NestedField, StringType, StructType

from lakekeeper_contract_example import NoDroppedColumns

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "name", StringType()),
    NestedField(3, "address", StructType(NestedField(4, "city", StringType()), NestedField(5, "zip", IntegerType()))),
    schema_id=0,
)


def metadata(**properties):
    return new_table_metadata(SCHEMA, UNPARTITIONED_PARTITION_SPEC, UNSORTED_SORT_ORDER, "file:///t", properties)


def evolve(*fields: NestedField, schema_id: int = 1) -> list:
    return [AddSchemaUpdate(schema_=Schema(*fields, schema_id=schema_id)), SetCurrentSchemaUpdate(schema_id=-1)]


checker = NoDroppedColumns()


async def test_dropping_a_column_of_a_table_under_contract_is_refused():
    current = metadata(**{"contract.owner": "billing"})
    updates = evolve(SCHEMA.fields[0], SCHEMA.fields[2])  # without "name"
    violation = await checker.check_table_updates(updates, current)
    assert violation is not None
    assert "contract.owner" in violation.message and "name" in violation.message


async def test_dropping_a_nested_column_is_refused():
    current = metadata(**{"contract.sla": "gold"})
    address = NestedField(3, "address", StructType(NestedField(4, "city", StringType())))
    violation = await checker.check_table_updates(evolve(SCHEMA.fields[0], SCHEMA.fields[1], address), current)
    assert violation is not None and "address.zip" in violation.message


async def test_adding_and_renaming_columns_is_fine():
    current = metadata(**{"contract.owner": "billing"})
    renamed = NestedField(2, "full_name", StringType())
    updates = evolve(SCHEMA.fields[0], renamed, SCHEMA.fields[2], NestedField(6, "email", StringType()))
    assert await checker.check_table_updates(updates, current) is None


async def test_tables_without_contract_and_non_schema_commits_pass():
    assert await checker.check_table_updates(evolve(SCHEMA.fields[0]), metadata()) is None
    current = metadata(**{"contract.owner": "billing"})
    assert await checker.check_table_updates([SetPropertiesUpdate(updates={"a": "b"})], current) is None
    assert await checker.check_table_updates(evolve(SCHEMA.fields[0]), None) is None  # a create


async def test_custom_prefix():
    current = metadata(**{"dc.owner": "billing"})
    assert await NoDroppedColumns("dc.").check_table_updates(evolve(SCHEMA.fields[0]), current) is not None
    assert await checker.check_table_updates(evolve(SCHEMA.fields[0]), current) is None
