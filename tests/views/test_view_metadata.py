"""The view update logic (server/views/metadata.py), mirroring Iceberg Java's ViewMetadata.Builder."""

from __future__ import annotations

import pytest
from pyiceberg.schema import Schema
from pyiceberg.types import IntegerType, NestedField, StringType
from pyiceberg.view.metadata import ViewVersion

from lakekeeper_host.errors import CatalogError
from lakekeeper_host.server.views import metadata as vm

SCHEMA = Schema(
    NestedField(3, "id", IntegerType(), required=True, doc="unique ID"),
    NestedField(4, "data", StringType(), required=True),
    schema_id=5,
)
OTHER_SCHEMA = Schema(NestedField(1, "some_id", IntegerType(), required=True), schema_id=7)


def version(sql: str, dialect: str = "spark", *, version_id: int = 1, schema_id: int = 0, ts: int = 1000, **more):
    reprs = more.pop("reprs", [{"type": "sql", "sql": sql, "dialect": dialect}])
    return ViewVersion.model_validate(
        {
            "version-id": version_id,
            "schema-id": schema_id,
            "timestamp-ms": ts,
            "summary": more.pop("summary", {"operation": "create"}),
            "representations": reprs,
            "default-namespace": ["ns"],
            **more,
        }
    )


def created(**props):
    return vm.new_view_metadata(
        location="file:///wh/ns/view", schema=SCHEMA, view_version=version("select * from ns.tbl"), properties=props
    )


def updates(*raw):
    return vm.parse_view_updates(list(raw))


def replace_updates(sql, dialect="spark", schema=None, schema_id=None, ts=2000):
    if schema_id is None:
        schema_id = -1 if schema is not None else 0
    raw = []
    if schema is not None:
        raw.append({"action": "add-schema", "schema": schema.model_dump(mode="json")})
    vv = version(sql, dialect, version_id=2, schema_id=schema_id, ts=ts, summary={"operation": "replace"})
    raw.append({"action": "add-view-version", "view-version": vv.model_dump(mode="json")})
    raw.append({"action": "set-current-view-version", "view-version-id": -1})
    return updates(*raw)


def test_create_renumbers_the_schema_to_zero_and_logs_version_one():
    metadata = created(prop1="val1")
    assert metadata.format_version == 1
    assert [s.schema_id for s in metadata.schemas] == [0]
    assert metadata.schemas[0] == SCHEMA  # same columns, new id
    assert metadata.current_version_id == 1
    assert metadata.versions[0].schema_id == 0
    assert [(e.version_id, e.timestamp_ms) for e in metadata.version_log] == [(1, 1000)]
    assert metadata.properties == {"prop1": "val1"}
    assert metadata.view_uuid


def test_replace_with_a_new_schema_resolves_last_added_ids():
    base = created(**{vm.REPLACE_DROP_DIALECT_ALLOWED: "true"})
    new, changed = vm.update_view_metadata(base, replace_updates("select count(*) from ns.tbl", "trino", OTHER_SCHEMA))
    assert changed
    assert [s.schema_id for s in new.schemas] == [0, 1]
    assert new.current_version_id == 2
    current = next(v for v in new.versions if v.version_id == 2)
    assert current.schema_id == 1
    assert [(e.version_id, e.timestamp_ms) for e in new.version_log] == [(1, 1000), (2, 2000)]
    assert base.current_version_id == 1  # the base is untouched


def test_an_identical_version_is_reused_not_duplicated():
    base = created()
    same = version("select * from ns.tbl", version_id=7, ts=5000)
    new, changed = vm.update_view_metadata(
        base,
        updates(
            {"action": "add-view-version", "view-version": same.model_dump(mode="json")},
            {"action": "set-current-view-version", "view-version-id": -1},
        ),
    )
    assert [v.version_id for v in new.versions] == [1]
    assert new.current_version_id == 1
    assert not changed
    assert len(new.version_log) == 1


def test_an_identical_schema_is_reused():
    base = created()
    new, _ = vm.update_view_metadata(base, replace_updates("select 1 from ns.tbl", schema=SCHEMA))
    assert [s.schema_id for s in new.schemas] == [0]
    assert next(v for v in new.versions if v.version_id == 2).schema_id == 0


def test_server_side_retry_of_a_concurrent_replace_gets_the_next_version_id():
    """Iceberg's concurrentReplaceViewVersion: both replaces computed against version 1."""
    base = created(**{vm.REPLACE_DROP_DIALECT_ALLOWED: "true"})
    first, _ = vm.update_view_metadata(
        base, replace_updates("select count(some_id) from ns.tbl", "spark", OTHER_SCHEMA)
    )
    second, _ = vm.update_view_metadata(first, replace_updates("select count(id) from ns.tbl", "trino", schema_id=0))
    assert second.current_version_id == 3
    by_id = {v.version_id: v for v in second.versions}
    assert (by_id[2].schema_id, by_id[2].representations[0].root.sql) == (1, "select count(some_id) from ns.tbl")
    assert (by_id[3].schema_id, by_id[3].representations[0].root.sql) == (0, "select count(id) from ns.tbl")


def test_dropping_a_dialect_needs_the_property():
    base = created()
    with pytest.raises(CatalogError) as info:
        vm.update_view_metadata(base, replace_updates("select 1", "trino"))
    assert info.value.code == 400
    assert "Cannot replace view due to loss of view dialects" in info.value.message
    allowed, _ = vm.update_view_metadata(
        base,
        (*updates({"action": "set-properties", "updates": {vm.REPLACE_DROP_DIALECT_ALLOWED: "true"}}),
         *replace_updates("select 1", "trino")),
    )
    assert allowed.current_version_id == 2


def test_multiple_queries_for_one_dialect_are_rejected():
    base = created()
    reprs = [{"type": "sql", "sql": "a", "dialect": "trino"}, {"type": "sql", "sql": "b", "dialect": "Trino"}]
    vv = version("", reprs=reprs, version_id=2)
    with pytest.raises(CatalogError) as info:
        vm.update_view_metadata(
            base, updates({"action": "add-view-version", "view-version": vv.model_dump(mode="json")})
        )
    assert info.value.message == "Invalid view version: Cannot add multiple queries for dialect trino"
    assert info.value.type == "IllegalArgumentException"


def test_last_added_without_anything_added_is_a_validation_error():
    base = created()
    with pytest.raises(CatalogError) as info:
        vm.update_view_metadata(base, updates({"action": "set-current-view-version", "view-version-id": -1}))
    assert info.value.type == "ValidationException"
    vv = version("x", version_id=2, schema_id=-1)
    with pytest.raises(CatalogError) as info:
        vm.update_view_metadata(
            base, updates({"action": "add-view-version", "view-version": vv.model_dump(mode="json")})
        )
    assert "no schema has been added" in info.value.message


def test_unknown_version_and_schema_ids_are_rejected():
    base = created()
    with pytest.raises(CatalogError, match="unknown version: 9"):
        vm.update_view_metadata(base, updates({"action": "set-current-view-version", "view-version-id": 9}))
    vv = version("x", version_id=2, schema_id=4)
    with pytest.raises(CatalogError, match="unknown schema: 4"):
        vm.update_view_metadata(
            base, updates({"action": "add-view-version", "view-version": vv.model_dump(mode="json")})
        )


def test_properties_location_and_uuid():
    base = created(keep="1", drop="2")
    new, changed = vm.update_view_metadata(
        base,
        updates(
            {"action": "set-properties", "updates": {"a": "b"}},
            {"action": "remove-properties", "removals": ["drop", "missing"]},
            {"action": "set-location", "location": "file:///wh/elsewhere"},
            {"action": "assign-uuid", "uuid": base.view_uuid},
            {"action": "upgrade-format-version", "format-version": 1},
        ),
    )
    assert changed
    assert new.properties == {"keep": "1", "a": "b"}
    assert new.location == "file:///wh/elsewhere"
    assert new.version_log == base.version_log and new.versions == base.versions
    with pytest.raises(CatalogError, match="Cannot reassign uuid"):
        vm.update_view_metadata(
            base, updates({"action": "assign-uuid", "uuid": "00000000-0000-0000-0000-000000000001"})
        )
    with pytest.raises(CatalogError, match="Unsupported format version: 2"):
        vm.update_view_metadata(base, updates({"action": "upgrade-format-version", "format-version": 2}))


def test_old_versions_expire_after_the_history_size():
    metadata = created(**{vm.VERSION_HISTORY_SIZE: "2"})
    for n in range(2, 6):
        metadata, _ = vm.update_view_metadata(metadata, replace_updates(f"select {n}", ts=1000 * n))
    assert sorted(v.version_id for v in metadata.versions) == [4, 5]
    assert [e.version_id for e in metadata.version_log] == [4, 5]
    assert metadata.current_version_id == 5


def test_reactivating_an_old_version_logs_it_again():
    metadata, _ = vm.update_view_metadata(created(), replace_updates("select 2"))
    back, changed = vm.update_view_metadata(
        metadata, updates({"action": "set-current-view-version", "view-version-id": 1})
    )
    assert changed and back.current_version_id == 1
    assert [e.version_id for e in back.version_log] == [1, 2, 1]


def test_unknown_actions_and_requirement_types_are_400_naming_them():
    with pytest.raises(CatalogError) as info:
        vm.parse_view_updates([{"action": "add-snapshot", "snapshot": {}}])
    assert info.value.code == 400 and "add-snapshot" in info.value.message
    with pytest.raises(CatalogError) as info:
        vm.parse_view_requirements([{"type": "assert-table-uuid", "uuid": "x"}])
    assert info.value.code == 400 and "assert-table-uuid" in info.value.message
    with pytest.raises(CatalogError) as info:
        vm.parse_view_updates([{"action": "set-current-view-version"}])
    assert info.value.code == 400 and "view-version-id" in info.value.message
    assert vm.parse_view_requirements(None) == ()


def test_assert_view_uuid():
    base = created()
    (ok,) = vm.parse_view_requirements([{"type": "assert-view-uuid", "uuid": base.view_uuid}])
    vm.validate_requirements([ok], base)
    (wrong,) = vm.parse_view_requirements(
        [{"type": "assert-view-uuid", "uuid": "00000000-0000-0000-0000-000000000001"}]
    )
    with pytest.raises(CatalogError) as info:
        vm.validate_requirements([wrong], base)
    assert info.value.code == 409 and info.value.type == "CommitFailedException"
    assert info.value.message.startswith("Requirement failed: view UUID does not match")


def test_metadata_round_trips_through_json():
    metadata, _ = vm.update_view_metadata(created(), replace_updates("select 2", schema=OTHER_SCHEMA))
    again = vm.parse_view_metadata(metadata.model_dump_json())
    assert again == metadata
    with pytest.raises(CatalogError):
        vm.parse_view_metadata(b'{"format-version": 1}')
