"""Strict validation of createTable, createView and commit bodies: a 400 that names the field path and the
reason in the client's terms, never a silently "repaired" table or a library's internals (issue 25)."""

from __future__ import annotations

import copy
import uuid

import pytest

from tests.catalog.helpers import SCHEMA, Rest, error, ns_path

NS = "validation"



def _spec(source_id: int, transform: str, name: str = "p", spec_id: int = 0) -> dict:
    field = {"source-id": source_id, "field-id": 1000, "name": name, "transform": transform}
    return {"spec-id": spec_id, "fields": [field]}


def _order(source_id: int, direction: str = "asc") -> dict:
    field = {"source-id": source_id, "transform": "identity", "direction": direction, "null-order": "nulls-first"}
    return {"order-id": 1, "fields": [field]}


PARTITION = _spec(1, "bucket[4]", "id_bucket")
ORDER = _order(1)
LEAKS = ("pydantic", "For further information", "Traceback", "NestedField", "IcebergType", "ValidationError")


def _schema(*fields) -> dict:
    return {"type": "struct", "schema-id": 0, "fields": list(fields)}


def _field(field_id, name, typ, required=False) -> dict:
    return {"id": field_id, "name": name, "type": typ, "required": required}


@pytest.fixture(scope="module")
def rest_module(sqlite_server, tmp_path_factory):
    """One warehouse and namespace for all bad bodies: none of them may create anything."""
    from lakekeeper_testing.server import create_file_warehouse

    name = f"wh-{uuid.uuid4().hex[:10]}"
    root = tmp_path_factory.mktemp(name)
    warehouse_id = create_file_warehouse(sqlite_server.url, name, str(root))
    client = Rest(sqlite_server.url, warehouse_id)
    client.root = root
    assert client.create_namespace(NS).status_code == 200
    yield client
    client.close()


def _assert_bad(response, *fragments: str) -> str:
    assert response.status_code == 400, response.text
    err = error(response)
    assert err["type"] == "BadRequestException", err
    message = err["message"]
    for fragment in fragments:
        assert fragment in message, message
    for leak in LEAKS:
        assert leak not in message, message
    return message


# (body changes, the field path the message must name, a word of the reason)
CREATE_CASES = {
    "struct-without-fields": (
        {"schema": _schema(_field(1, "id", "int"), _field(2, "s", {"type": "struct"}))},
        "schema.fields[1].type.fields", "required",
    ),
    "required-yes": (
        {"schema": _schema(_field(1, "id", "int"), _field(2, "a", "string"), _field(3, "b", "long", "yes"))},
        "schema.fields[2].required", "true or false",
    ),
    "bogus-transform": (
        {"partition-spec": _spec(1, "bogus[3]")},
        "partition-spec.fields[0].transform", "unknown transform 'bogus[3]'",
    ),
    "bucket-not-a-number": (
        {"partition-spec": _spec(1, "bucket[x]")}, "partition-spec.fields[0].transform", "bucket[x]"
    ),
    "bucket-zero": ({"partition-spec": _spec(1, "bucket[0]")}, "partition-spec.fields[0].transform", "at least 1"),
    "truncate-zero": ({"partition-spec": _spec(2, "truncate[0]")}, "partition-spec.fields[0].transform", "at least 1"),
    "name-is-number": ({"name": 5}, "name", "must be a string"),
    "partition-on-missing-column": (
        {"partition-spec": _spec(42, "identity")},
        "partition-spec.fields[0].source-id", "no column with id 42",
    ),
    "sort-on-missing-column": (
        {"write-order": _order(9)},
        "write-order.fields[0].source-id", "no column with id 9",
    ),
    "sort-direction": (
        {"write-order": _order(1, "up")},
        "write-order.fields[0].direction", "asc, desc",
    ),
    "duplicate-field-id": (
        {"schema": _schema(_field(1, "id", "int"), _field(1, "data", "string"))},
        "schema.fields[1].id", "duplicate field id 1",
    ),
    "duplicate-field-name": (
        {"schema": _schema(_field(1, "id", "int"), _field(2, "id", "string"))},
        "schema.fields[1].name", "duplicate field name 'id'",
    ),
    "list-without-element": (
        {"schema": _schema(_field(1, "tags", {"type": "list", "element-id": 2, "element-required": True}))},
        "schema.fields[0].type.element", "required",
    ),
    "map-without-key": (
        {"schema": _schema(_field(1, "m", {"type": "map", "value-id": 3, "value": "string", "value-required": True}))},
        "schema.fields[0].type.key-id", "required",
    ),
    "map-without-value": (
        {"schema": _schema(_field(1, "m", {"type": "map", "key-id": 2, "key": "string", "value-required": True}))},
        "schema.fields[0].type.value-id", "required",
    ),
    "unknown-primitive": (
        {"schema": _schema(_field(1, "id", "int"), _field(2, "x", "varchar"))},
        "schema.fields[1].type", "unknown type 'varchar'",
    ),
    "nested-unknown-type": (
        {"schema": _schema(_field(1, "s", {"type": "struct", "fields": [_field(2, "x", {"type": "tuple"})]}))},
        "schema.fields[0].type.fields[0].type.type", "unknown type 'tuple'",
    ),
    "field-id-not-integer": (
        {"schema": _schema(_field("1", "id", "int"))},
        "schema.fields[0].id", "must be an integer",
    ),
    "transform-not-for-type": (
        {"partition-spec": _spec(2, "year")},
        "partition-spec.fields[0].transform", "cannot be applied",
    ),
    "schema-missing": ({"schema": None}, "schema", "is required"),
    "schema-not-object": ({"schema": [1, 2]}, "schema", "must be a JSON object"),
}


@pytest.mark.parametrize("case", list(CREATE_CASES))
def test_create_table_rejects_with_field_path(rest_module, case):
    changes, path, reason = CREATE_CASES[case]
    body = {"name": f"t_{case.replace('-', '_')}", "schema": copy.deepcopy(SCHEMA), **copy.deepcopy(changes)}
    if body["schema"] is None:
        del body["schema"]
    response = rest_module.http.post(f"/namespaces/{ns_path(NS)}/tables", json=body)
    message = _assert_bad(response, path, reason)
    assert f"{path}:" in message
    listed = rest_module.http.get(f"/namespaces/{ns_path(NS)}/tables").json()["identifiers"]
    assert listed == [], "a rejected body must not create a table"


def test_create_view_rejects_bad_schema(rest_module):
    body = {
        "name": "v_bad",
        "schema": _schema(_field(1, "id", "int", "yes")),
        "view-version": {
            "version-id": 1, "timestamp-ms": 1, "schema-id": 0, "summary": {}, "default-namespace": [NS],
            "representations": [{"type": "sql", "sql": "select 1 as id", "dialect": "spark"}],
        },
    }
    _assert_bad(rest_module.http.post(f"/namespaces/{ns_path(NS)}/views", json=body), "schema.fields[0].required")


def test_commit_updates_are_checked_with_their_path(rest_module):
    name = "t_commit"
    assert rest_module.create_table(NS, name).status_code == 200
    bad_schema = {"action": "add-schema", "schema": _schema(_field(1, "id", "int"), _field(3, "s", {"type": "struct"}))}
    _assert_bad(rest_module.commit(NS, name, [bad_schema]), "updates[0].schema.fields[1].type.fields", "required")
    bad_spec = {"action": "add-spec", "spec": _spec(1, "bogus[3]", spec_id=1)}
    _assert_bad(rest_module.commit(NS, name, [bad_spec]), "updates[0].spec.fields[0].transform", "bogus[3]")
    missing_column = {"action": "add-spec", "spec": _spec(77, "identity", spec_id=1)}
    _assert_bad(rest_module.commit(NS, name, [missing_column]), "updates[0].spec.fields[0].source-id", "id 77")
    missing_sort_column = {"action": "add-sort-order", "sort-order": _order(55)}
    _assert_bad(rest_module.commit(NS, name, [missing_sort_column]), "updates[0].sort-order.fields[0].source-id", "55")
    # the same checks through transactions/commit
    change = {"identifier": {"namespace": [NS], "name": name}, "requirements": [], "updates": [bad_schema]}
    _assert_bad(rest_module.transaction([change]), "updates[0].schema.fields[1].type.fields")
    # nothing of the above was applied
    assert len(rest_module.metadata(NS, name)["schemas"]) == 1


def test_valid_bodies_still_create(rest_module):
    """Lists, maps, nested structs, decimals, partition and sort on existing columns: all accepted."""
    schema = _schema(
        _field(1, "id", "long", True),
        _field(2, "price", "decimal(10,2)"),
        _field(3, "tags", {"type": "list", "element-id": 6, "element": "string", "element-required": False}),
        _field(4, "attrs", {"type": "map", "key-id": 7, "key": "string", "value-id": 8, "value": "int",
                            "value-required": True}),
        _field(5, "point", {"type": "struct", "fields": [_field(9, "x", "double"), _field(10, "y", "double")]}),
    )
    schema["identifier-field-ids"] = [1]
    body = {"name": "t_valid", "schema": schema, "partition-spec": PARTITION, "write-order": ORDER}
    response = rest_module.http.post(f"/namespaces/{ns_path(NS)}/tables", json=body)
    assert response.status_code == 200, response.text
    metadata = response.json()["metadata"]
    assert metadata["partition-specs"][0]["fields"][0]["transform"] == "bucket[4]"
    assert metadata["sort-orders"][-1]["fields"][0]["direction"] == "asc"


def test_pyiceberg_create_and_evolve_still_work(catalog):
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import DayTransform
    from pyiceberg.types import IntegerType, ListType, NestedField, StringType, StructType, TimestamptzType

    catalog.create_namespace("pyi")
    schema = Schema(
        NestedField(1, "id", IntegerType(), required=True),
        NestedField(2, "ts", TimestamptzType()),
        NestedField(3, "tags", ListType(4, StringType())),
        NestedField(5, "s", StructType(NestedField(6, "a", StringType()))),
    )
    spec = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=DayTransform(), name="ts_day"))
    table = catalog.create_table("pyi.t", schema, partition_spec=spec)
    with table.update_schema() as update:
        update.add_column("extra", StringType())
    with table.update_spec() as update:
        update.add_identity("extra")
    table = catalog.load_table("pyi.t")
    assert "extra" in table.schema().column_names
    assert [f.name for f in table.spec().fields] == ["ts_day", "extra"]


def test_view_and_register_bodies_name_the_field(rest_module):
    version = {
        "version-id": 1, "timestamp-ms": 1, "schema-id": 0, "summary": {}, "default-namespace": [NS],
        "representations": [{"type": "sql", "dialect": "spark"}],  # no sql
    }
    body = {"name": "v", "schema": _schema(_field(1, "id", "int")), "view-version": version}
    views = f"/namespaces/{ns_path(NS)}/views"
    _assert_bad(rest_module.http.post(views, json=body), "view-version.representations[0]", "sql")
    _assert_bad(rest_module.http.post(views, json=body | {"name": 5}), "name", "must be a string")
    register = {"name": 5, "metadata-location": "file:///x/metadata/00000-a.metadata.json"}
    _assert_bad(rest_module.http.post(f"/namespaces/{ns_path(NS)}/register", json=register), "body.name", "string")


def test_register_of_invalid_metadata_speaks_plainly(rest_module):
    metadata_dir = rest_module.root / "registered" / "metadata"
    metadata_dir.mkdir(parents=True)
    path = metadata_dir / "00000-0196a0b8-0000-7000-8000-000000000000.metadata.json"
    path.write_text('{"format-version": 2, "location": "x"}')
    body = {"name": "reg", "metadata-location": f"file://{path}"}
    response = rest_module.http.post(f"/namespaces/{ns_path(NS)}/register", json=body)
    assert response.status_code == 400, response.text
    err = error(response)
    assert err["type"] == "InvalidTableMetadata" and "last-column-id: Field required" in err["message"], err
    for leak in LEAKS:
        assert leak not in err["message"], err["message"]


def test_view_commit_add_schema_is_checked(rest_module):
    version = {
        "version-id": 1, "timestamp-ms": 1, "schema-id": 0, "summary": {}, "default-namespace": [NS],
        "representations": [{"type": "sql", "sql": "select 1 as id", "dialect": "spark"}],
    }
    body = {"name": "v_commit", "schema": _schema(_field(1, "id", "int")), "view-version": version}
    views = f"/namespaces/{ns_path(NS)}/views"
    assert rest_module.http.post(views, json=body).status_code == 200
    bad = {"action": "add-schema", "schema": _schema(_field(1, "id", "int", "yes")) | {"schema-id": 1}}
    response = rest_module.http.post(f"{views}/v_commit", json={"updates": [bad]})
    _assert_bad(response, "updates[0].schema.fields[0].required", "true or false")
