"""Checking commit requirements against the current metadata, worded as the Java server words them."""

from __future__ import annotations

from typing import Any

from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.update import (
    AssertCreate,
    AssertCurrentSchemaId,
    AssertDefaultSortOrderId,
    AssertDefaultSpecId,
    AssertLastAssignedFieldId,
    AssertLastAssignedPartitionId,
    AssertRefSnapshotId,
    AssertTableUUID,
)

from lakekeeper_host.errors import (
    CatalogError,
    commit_failed,
)


def _fail(message: str) -> CatalogError:
    return commit_failed(message)


def check_requirement(requirement: Any, base: TableMetadata | None) -> None:
    """Validate one requirement; the messages are those of Iceberg's ``UpdateRequirement``."""
    if isinstance(requirement, AssertCreate):
        if base is not None:
            raise _fail("Requirement failed: table already exists")
        return
    if isinstance(requirement, (AssertLastAssignedFieldId, AssertLastAssignedPartitionId)) and base is None:
        return  # Java: vacuous on a table being created
    if base is None:
        raise _fail("Requirement failed: current table metadata is missing")
    if isinstance(requirement, AssertTableUUID):
        if str(requirement.uuid).lower() != str(base.table_uuid).lower():
            raise _fail(f"Requirement failed: UUID does not match: expected {base.table_uuid} != {requirement.uuid}")
    elif isinstance(requirement, AssertRefSnapshotId):
        ref = base.refs.get(requirement.ref)
        if ref is not None:
            kind = "branch" if str(ref.snapshot_ref_type).lower().endswith("branch") else "tag"
            if requirement.snapshot_id is None:
                raise _fail(f"Requirement failed: {kind} {requirement.ref} was created concurrently")
            if requirement.snapshot_id != ref.snapshot_id:
                raise _fail(
                    f"Requirement failed: {kind} {requirement.ref} has changed: "
                    f"expected id {requirement.snapshot_id} != {ref.snapshot_id}"
                )
        elif requirement.snapshot_id is not None:
            raise _fail(
                f"Requirement failed: branch or tag {requirement.ref} is missing, expected {requirement.snapshot_id}"
            )
    elif isinstance(requirement, AssertLastAssignedFieldId):
        if base.last_column_id != requirement.last_assigned_field_id:
            raise _fail(
                "Requirement failed: last assigned field id changed: "
                f"expected id {requirement.last_assigned_field_id} != {base.last_column_id}"
            )
    elif isinstance(requirement, AssertCurrentSchemaId):
        if base.current_schema_id != requirement.current_schema_id:
            raise _fail(
                "Requirement failed: current schema changed: "
                f"expected id {requirement.current_schema_id} != {base.current_schema_id}"
            )
    elif isinstance(requirement, AssertLastAssignedPartitionId):
        if base.last_partition_id != requirement.last_assigned_partition_id:
            raise _fail(
                "Requirement failed: last assigned partition id changed: "
                f"expected id {requirement.last_assigned_partition_id} != {base.last_partition_id}"
            )
    elif isinstance(requirement, AssertDefaultSpecId):
        if base.default_spec_id != requirement.default_spec_id:
            raise _fail(
                "Requirement failed: default partition spec changed: "
                f"expected id {requirement.default_spec_id} != {base.default_spec_id}"
            )
    elif isinstance(requirement, AssertDefaultSortOrderId):
        if base.default_sort_order_id != requirement.default_sort_order_id:
            raise _fail(
                "Requirement failed: default sort order changed: "
                f"expected id {requirement.default_sort_order_id} != {base.default_sort_order_id}"
            )
