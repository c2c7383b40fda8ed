"""Port of Iceberg's ``ViewCatalogTests`` (the REST compatibility kit's view half) to pytest.

Each test names the Java test it ports. Views go through :class:`ViewClient` (the requests the
Java REST client sends); tables through PyIceberg. The RCK's switches are the RCK's defaults:
namespaces must be created, the server retries commits server-side, requested locations are
honoured. Where a Java check happens in the client (a missing query, ``sqlFor(null)``...), the
port asserts what the server does with the request the client would otherwise send.
"""

from __future__ import annotations

import gzip
import json

import pytest
from pyiceberg.exceptions import (
    NamespaceNotEmptyError,
    NoSuchTableError,
    TableAlreadyExistsError,
)
from pyiceberg.schema import Schema
from pyiceberg.types import IntegerType, NestedField, StringType

SCHEMA = {
    "type": "struct",
    "schema-id": 5,
    "fields": [
        {"id": 3, "name": "id", "type": "int", "required": True, "doc": "unique ID"},
        {"id": 4, "name": "data", "type": "string", "required": True},
    ],
}
OTHER_SCHEMA = {
    "type": "struct", "schema-id": 7, "fields": [{"id": 1, "name": "some_id", "type": "int", "required": True}]
}
TABLE_SCHEMA = Schema(
    NestedField(3, "id", IntegerType(), required=True, doc="unique ID"),
    NestedField(4, "data", StringType(), required=True),
)
NS = ("ns",)
VIEW = (NS, "view")
SPARK = ("spark", "select * from ns.tbl")
TRINO = ("trino", "select * from ns.tbl")


@pytest.fixture
def ns(catalog):
    catalog.create_namespace("ns")
    return catalog


def create(views, ident=VIEW, queries=(SPARK,), schema=SCHEMA, **kwargs):
    return views.create(ident, schema=schema, queries=list(queries), **kwargs)


def fields(schema: dict) -> list:
    return schema["fields"]


def current_version(metadata: dict) -> dict:
    return next(v for v in metadata["versions"] if v["version-id"] == metadata["current-version-id"])


def current_schema(metadata: dict) -> dict:
    schema_id = current_version(metadata)["schema-id"]
    return next(s for s in metadata["schemas"] if s["schema-id"] == schema_id)


def reprs(version: dict) -> list[tuple[str, str]]:
    return [(r["dialect"], r["sql"]) for r in version["representations"]]


def location_in(warehouse, *parts) -> str:
    return "file://" + "/".join([warehouse["root"], *parts])


# ---------------------------------------------------------------- loading


def test_load_view_with_non_existing_namespace(views):  # loadViewWithNonExistingNamespace
    ident = (("non-existing",), "view")
    assert not views.exists(ident)
    with pytest.raises(views.Error) as info:
        views.load(ident)
    assert info.value.type == "NoSuchViewException"
    assert info.value.message.startswith("View does not exist: non-existing.view")


def test_load_view_that_already_exists_as_table(views, ns):  # loadViewThatAlreadyExistsAsTable
    ns.create_table("ns.table", TABLE_SCHEMA)
    assert ns.table_exists("ns.table")
    assert not views.exists((NS, "table"))
    with pytest.raises(views.Error) as info:
        views.load((NS, "table"))
    assert info.value.type == "NoSuchViewException" and info.value.message.startswith("View does not exist")


def test_load_table_that_already_exists_as_view(views, ns):  # loadTableThatAlreadyExistsAsView
    create(views, (NS, "table"))
    assert views.exists((NS, "table"))
    assert not ns.table_exists("ns.table")
    with pytest.raises(NoSuchTableError, match="Table does not exist"):
        ns.load_table("ns.table")


# ---------------------------------------------------------------- creating


def test_basic_create_view(views, ns):  # basicCreateView
    assert not views.exists(VIEW)
    result = create(views, default_namespace=NS)
    assert result["metadata-location"]
    assert views.exists(VIEW)
    metadata = result["metadata"]
    assert [e["version-id"] for e in metadata["version-log"]] == [1]
    assert current_schema(metadata)["schema-id"] == 0 and fields(current_schema(metadata)) == fields(SCHEMA)
    assert [s["schema-id"] for s in metadata["schemas"]] == [0]
    version = current_version(metadata)
    assert version["summary"]["operation"] == "create"
    assert (version["version-id"], version["schema-id"]) == (1, 0)
    assert reprs(version) == [SPARK] and version["default-namespace"] == ["ns"]
    assert "default-catalog" not in version
    assert views.load(VIEW) == result
    assert views.drop(VIEW)
    assert not views.exists(VIEW)


def test_default_view_properties(views, ns):  # defaultViewProperties
    # the RCK's "view-default.*" properties are merged by the client; the server keeps what it gets
    props = {"key1": "catalog-default-key1", "key2": "catalog-overridden-key2", "prop1": "val1"}
    result = create(views, default_catalog="rest", properties=props)
    assert result["metadata"]["properties"] == props
    assert views.drop(VIEW) and not views.exists(VIEW)


def test_override_view_properties(views, ns):  # overrideViewProperties
    props = {"key1": "catalog-default-key1", "key2": "catalog-default-key2", "key3": "catalog-override-key3",
             "key4": "catalog-override-key4", "prop1": "val1"}
    result = create(views, default_catalog="rest", properties=props)
    assert views.load(VIEW)["metadata"]["properties"] == props
    assert result["metadata"]["properties"] == props
    assert views.drop(VIEW)


def test_complete_create_view(views, ns, warehouse):  # completeCreateView
    location = location_in(warehouse, "tmp", "ns", "view")
    result = create(
        views, queries=[SPARK, ("trino", "select * from ns.tbl using X")], default_catalog="rest",
        properties={"prop1": "val1", "prop2": "val2"}, location=location,
    )
    metadata = result["metadata"]
    assert metadata["location"] == location
    assert result["metadata-location"].startswith(location + "/metadata/")
    assert metadata["properties"] == {"prop1": "val1", "prop2": "val2"}
    assert [e["version-id"] for e in metadata["version-log"]] == [1]
    version = current_version(metadata)
    assert version["summary"]["operation"] == "create"
    assert current_schema(metadata)["schema-id"] == 0 and [s["schema-id"] for s in metadata["schemas"]] == [0]
    assert len(metadata["versions"]) == 1
    assert version["default-catalog"] == "rest"
    assert reprs(version) == [SPARK, ("trino", "select * from ns.tbl using X")]
    assert views.drop(VIEW) and not views.exists(VIEW)


def test_create_view_with_custom_metadata_location(views, ns, warehouse):  # createViewWithCustomMetadataLocation
    # Lakekeeper manages metadata locations: write.metadata.path is refused (as for tables)
    with pytest.raises(views.Error) as info:
        create(views, properties={"write.metadata.path": location_in(warehouse, "custom-location")})
    assert (info.value.status, info.value.type) == (409, "FailedToSetProperties")
    assert not views.exists(VIEW)


def test_create_view_error_cases(views, ns, http, prefix_url):  # createViewErrorCases
    url = f"{prefix_url}/namespaces/ns/views"
    version = views.version(1, 5, [TRINO], NS, None, "create")
    # query, schema and default namespace are required
    for body in (
        {"name": "view", "schema": SCHEMA, "view-version": {**version, "representations": []}},
        {"name": "view", "view-version": version},
        {"name": "view", "schema": SCHEMA,
         "view-version": {k: v for k, v in version.items() if k != "default-namespace"}},
    ):
        response = http.post(url, json=body)
        assert response.status_code == 400, response.text
    # cannot define multiple SQLs for the same dialect
    with pytest.raises(views.Error) as info:
        create(views, queries=[TRINO, TRINO])
    assert info.value.status == 400
    assert "Invalid view version: Cannot add multiple queries for dialect trino" in info.value.message
    assert not views.exists(VIEW)


def test_create_view_that_already_exists(views, ns):  # createViewThatAlreadyExists
    create(views)
    with pytest.raises(views.Error) as info:
        create(views, schema=OTHER_SCHEMA)
    assert info.value.type == "AlreadyExistsException"
    assert info.value.message.startswith("View already exists: ns.view")


def test_create_view_that_already_exists_as_table(views, ns):  # createViewThatAlreadyExistsAsTable
    ns.create_table("ns.table", TABLE_SCHEMA)
    with pytest.raises(views.Error) as info:
        create(views, (NS, "table"), schema=OTHER_SCHEMA)
    assert info.value.status == 409
    assert info.value.message.startswith("Table with same name already exists: ns.table")


def test_create_table_that_already_exists_as_view(views, ns):  # createTableThatAlreadyExistsAsView
    create(views)
    with pytest.raises(TableAlreadyExistsError, match="View with same name already exists: ns.view"):
        ns.create_table("ns.view", TABLE_SCHEMA)


def test_create_table_via_transaction_that_already_exists_as_view(views, ns):
    # createTableViaTransactionThatAlreadyExistsAsView: the staged table loses to the view
    transaction = ns.create_table_transaction("ns.view", TABLE_SCHEMA)
    create(views)
    assert views.exists(VIEW)
    with pytest.raises(Exception) as info:
        transaction.commit_transaction()
    assert "View with same name already exists: ns.view" in str(info.value)
    assert not ns.table_exists("ns.view")


@pytest.mark.parametrize("java_test", ["replaceTableViaTransaction", "createOrReplaceTableViaTransaction"])
def test_replace_table_via_transaction_that_already_exists_as_view(views, ns, java_test):
    # (createOr)replaceTableViaTransactionThatAlreadyExistsAsView: the Java client refuses after
    # asking the server whether a view of that name exists and whether a table does
    create(views)
    assert views.exists(VIEW)
    assert not views.table_exists(VIEW)
    with pytest.raises(NoSuchTableError):
        ns.load_table("ns.view")


def test_replace_view_that_already_exists_as_table(views, ns):  # replaceViewThatAlreadyExistsAsTable
    ns.create_table("ns.table", TABLE_SCHEMA)
    with pytest.raises(views.Error) as info:
        views.replace((NS, "table"), schema=OTHER_SCHEMA, queries=[SPARK])
    assert "Table with same name already exists: ns.table" in info.value.message
    # and the server refuses a commit to a view that is a table
    with pytest.raises(views.Error) as info:
        views.commit((NS, "table"), [], [{"action": "set-properties", "updates": {"a": "b"}}])
    assert info.value.type == "NoSuchViewException"


def test_create_or_replace_view_that_already_exists_as_table(views, ns):  # createOrReplaceViewThatAlreadyExistsAsTable
    ns.create_table("ns.table", TABLE_SCHEMA)
    with pytest.raises(views.Error) as info:
        views.create_or_replace((NS, "table"), schema=OTHER_SCHEMA, queries=[SPARK])
    assert info.value.message.startswith("Table with same name already exists: ns.table")


# ---------------------------------------------------------------- renaming


def test_rename_view(views, ns):  # renameView
    target = (NS, "renamedView")
    original = create(views)
    views.rename(VIEW, target)
    assert not views.exists(VIEW) and views.exists(target)
    assert views.load(target) == original  # metadata unchanged
    assert not views.drop(VIEW)
    assert views.drop(target) and not views.exists(target)


def test_rename_view_using_different_namespace(views, ns):  # renameViewUsingDifferentNamespace
    ns.create_namespace("other_ns")
    target = (("other_ns",), "renamedView")
    original = create(views)
    views.rename(VIEW, target)
    assert not views.exists(VIEW) and views.exists(target)
    assert views.load(target) == original
    assert not views.drop(VIEW)
    assert views.drop(target)


def test_rename_view_namespace_missing(views, ns):  # renameViewNamespaceMissing
    create(views)
    with pytest.raises(views.Error) as info:
        views.rename(VIEW, (("non_existing",), "renamedView"))
    assert info.value.type == "NoSuchNamespaceException"
    assert "Namespace does not exist: non_existing" in info.value.message


def test_rename_view_source_missing(views, ns):  # renameViewSourceMissing
    with pytest.raises(views.Error) as info:
        views.rename((NS, "non_existing"), (NS, "renamedView"))
    assert info.value.type == "NoSuchViewException" and "View does not exist" in info.value.message


def test_rename_view_target_already_exists_as_view(views, ns):  # renameViewTargetAlreadyExistsAsView
    create(views, (NS, "viewOne"))
    create(views, (NS, "viewTwo"))
    with pytest.raises(views.Error) as info:
        views.rename((NS, "viewOne"), (NS, "viewTwo"))
    assert info.value.type == "AlreadyExistsException"
    assert "Cannot rename ns.viewOne to ns.viewTwo. View already exists" in info.value.message


def test_rename_view_target_already_exists_as_table(views, ns):  # renameViewTargetAlreadyExistsAsTable
    ns.create_table("ns.table", TABLE_SCHEMA)
    create(views)
    with pytest.raises(views.Error) as info:
        views.rename(VIEW, (NS, "table"))
    assert "Cannot rename ns.view to ns.table. Table already exists" in info.value.message


def test_rename_table_target_already_exists_as_view(views, ns):  # renameTableTargetAlreadyExistsAsView
    ns.create_table("ns.table", TABLE_SCHEMA)
    create(views)
    with pytest.raises(TableAlreadyExistsError, match="Cannot rename ns.table to ns.view. View already exists"):
        ns.rename_table("ns.table", "ns.view")


# ---------------------------------------------------------------- listing


def test_list_views(views, catalog):  # listViews
    catalog.create_namespace("ns1")
    catalog.create_namespace("ns2")
    view1, view2, view3 = (("ns1",), "view1"), (("ns2",), "view2"), (("ns2",), "view3")
    assert views.list(("ns1",)) == [] and views.list(("ns2",)) == []
    create(views, view1)
    assert views.list(("ns1",)) == [view1] and views.list(("ns2",)) == []
    create(views, view2)
    assert views.list(("ns1",)) == [view1] and views.list(("ns2",)) == [view2]
    create(views, view3)
    assert sorted(views.list(("ns2",))) == [view2, view3]
    assert views.drop(view2)
    assert views.list(("ns1",)) == [view1] and views.list(("ns2",)) == [view3]
    assert views.drop(view3)
    assert views.list(("ns2",)) == []
    assert views.drop(view1)
    assert views.list(("ns1",)) == []


@pytest.mark.skip(reason="listViewsInEmptyNamespace: skipped by the RCK too (supportsEmptyNamespace=false); "
                         "Lakekeeper needs a namespace for every table and view")
def test_list_views_in_empty_namespace():  # listViewsInEmptyNamespace
    pass


def test_list_views_and_tables(views, ns):  # listViewsAndTables
    assert views.list(NS) == [] and ns.list_tables("ns") == []
    ns.create_table("ns.table", TABLE_SCHEMA)
    assert views.list(NS) == [] and ns.list_tables("ns") == [("ns", "table")]
    create(views)
    assert views.list(NS) == [VIEW] and ns.list_tables("ns") == [("ns", "table")]
    ns.drop_table("ns.table")
    assert views.list(NS) == [VIEW] and ns.list_tables("ns") == []
    assert views.drop(VIEW)
    assert views.list(NS) == []


def test_list_views_pages_without_duplicates(views, ns):  # beyond the RCK: pagination
    names = [f"v{i:02d}" for i in range(11)]
    for name in reversed(names):
        create(views, (NS, name))
    ns.create_table("ns.v05a", TABLE_SCHEMA)  # a table among the views is not listed
    listed = views.list(NS, page_size=3)
    assert [n for _, n in listed] == names


# ---------------------------------------------------------------- replacing


@pytest.mark.parametrize("use_create_or_replace", [False, True])
def test_create_or_replace_view(views, ns, use_create_or_replace):  # createOrReplaceView(bool)
    kwargs = {"schema": SCHEMA, "queries": [SPARK], "properties": {"prop1": "val1", "prop2": "val2"}}
    result = views.create_or_replace(VIEW, **kwargs) if use_create_or_replace else views.create(VIEW, **kwargs)
    view_version = current_version(result["metadata"])
    assert reprs(view_version) == [SPARK]

    replace = {
        "schema": OTHER_SCHEMA,
        "queries": [("trino", "select count(*) from ns.tbl")],
        "properties": {"replacedProp1": "val1", "replacedProp2": "val2", "replace.drop-dialect.allowed": "true"},
    }
    replaced = views.create_or_replace(VIEW, **replace) if use_create_or_replace else views.replace(VIEW, **replace)
    metadata = replaced["metadata"]
    assert replaced["metadata-location"] != result["metadata-location"]
    expected = {"prop1": "val1", "prop2": "val2", "replacedProp1": "val1", "replacedProp2": "val2"}
    assert expected.items() <= metadata["properties"].items()
    assert [e["version-id"] for e in metadata["version-log"]] == [1, 2]
    assert current_schema(metadata)["schema-id"] == 1 and fields(current_schema(metadata)) == fields(OTHER_SCHEMA)
    assert sorted(s["schema-id"] for s in metadata["schemas"]) == [0, 1]
    replaced_version = current_version(metadata)
    assert metadata["versions"] == [view_version, replaced_version]
    assert (replaced_version["version-id"], replaced_version["schema-id"]) == (2, 1)
    assert replaced_version["summary"]["operation"] == "replace"
    assert reprs(replaced_version) == [("trino", "select count(*) from ns.tbl")]
    assert views.drop(VIEW) and not views.exists(VIEW)


def test_replace_view_error_cases(views, ns):  # replaceViewErrorCases
    create(views, queries=[TRINO])
    # replacing a view that does not exist
    with pytest.raises(views.Error) as info:
        views.replace((NS, "non_existing"), schema=SCHEMA, queries=[TRINO])
    assert info.value.type == "NoSuchViewException"
    assert info.value.message.startswith("View does not exist: ns.non_existing")
    # multiple SQLs for one dialect
    with pytest.raises(views.Error) as info:
        views.replace(VIEW, schema=SCHEMA, queries=[TRINO, TRINO])
    assert info.value.status == 400
    assert info.value.message == "Invalid view version: Cannot add multiple queries for dialect trino"
    # a version without a query
    with pytest.raises(views.Error) as info:
        views.replace(VIEW, schema=SCHEMA, queries=[])
    assert info.value.status == 400


def test_update_view_properties(views, ns):  # updateViewProperties
    created = create(views)
    view_version = current_version(created["metadata"])
    views.update_properties(VIEW, set={"key1": "val1", "key2": "val2"}, remove=["non-existing"])
    updated = views.load(VIEW)["metadata"]
    assert {"key1": "val1", "key2": "val2"}.items() <= updated["properties"].items()
    # history and versions stay the same
    assert updated["version-log"] == created["metadata"]["version-log"]
    assert updated["versions"] == [view_version]
    assert views.drop(VIEW)


def test_update_view_properties_error_cases(views, ns):  # updateViewPropertiesErrorCases
    # Java checks null keys/values and "Cannot remove and update the same key" before sending;
    # the server refuses what a client could still send: null values and non-string keys
    base = create(views)
    assert_uuid = [{"type": "assert-view-uuid", "uuid": base["metadata"]["view-uuid"]}]
    for update in (
        {"action": "set-properties", "updates": {"key1": None}},
        {"action": "remove-properties", "removals": [None]},
        {"action": "set-properties"},
    ):
        with pytest.raises(views.Error) as info:
            views.commit(VIEW, assert_uuid, [update])
        assert info.value.status == 400
    assert views.load(VIEW) == base


def test_replace_view_version(views, ns):  # replaceViewVersion
    created = create(views, queries=[TRINO, SPARK], properties={"replace.drop-dialect.allowed": "true"})
    view_version = current_version(created["metadata"])
    assert reprs(view_version) == [TRINO, SPARK]
    views.replace(VIEW, schema=OTHER_SCHEMA, queries=[TRINO], default_catalog="default")
    updated = views.load(VIEW)["metadata"]
    log_versions = [e["version-id"] for e in updated["version-log"]]
    assert log_versions == [view_version["version-id"], updated["current-version-id"]]
    assert sorted(s["schema-id"] for s in updated["schemas"]) == [0, 1]
    current = current_version(updated)
    assert updated["versions"] == [view_version, current]
    assert current["version-id"] == view_version["version-id"] + 1
    assert current["summary"]["operation"] == "replace"
    assert reprs(current) == [TRINO]
    assert current["schema-id"] == 1 and current["default-catalog"] == "default"
    assert current["default-namespace"] == ["ns"]
    assert views.drop(VIEW)


def test_replace_view_version_by_updating_sql_for_dialect(views, ns):  # replaceViewVersionByUpdatingSQLForDialect
    created = create(views)
    view_version = current_version(created["metadata"])
    updated_spark = ("spark", "select * from ns.updated_tbl")
    views.replace(VIEW, schema=SCHEMA, queries=[updated_spark])
    updated = views.load(VIEW)["metadata"]
    assert [e["version-id"] for e in updated["version-log"]] == [1, 2]
    assert updated["versions"] == [view_version, current_version(updated)]
    assert reprs(current_version(updated)) == [updated_spark]
    assert views.drop(VIEW)


def test_dropping_a_dialect_needs_the_property(views, ns):  # the server side of replace.drop-dialect.allowed
    create(views)
    with pytest.raises(views.Error) as info:
        views.replace(VIEW, schema=SCHEMA, queries=[TRINO])
    assert info.value.status == 400 and "loss of view dialects" in info.value.message


def test_replace_view_version_error_cases(views, ns):  # replaceViewVersionErrorCases
    base = create(views, queries=[TRINO])
    requirements, updates = views.replace_changes(
        base, schema=SCHEMA, queries=[TRINO, TRINO, TRINO], default_namespace=NS
    )
    with pytest.raises(views.Error) as info:
        views.commit(VIEW, requirements, updates)
    assert info.value.message == "Invalid view version: Cannot add multiple queries for dialect trino"
    # a version without a default namespace is not a version
    updates[-2]["view-version"].pop("default-namespace")
    with pytest.raises(views.Error) as info:
        views.commit(VIEW, requirements, updates)
    assert info.value.status == 400 and "default-namespace" in info.value.message


def test_update_view_properties_conflict(views, ns):  # updateViewPropertiesConflict
    base = create(views, queries=[TRINO])
    views.drop(VIEW)
    assert not views.exists(VIEW)
    with pytest.raises(views.Error) as info:
        views.commit(VIEW, [{"type": "assert-view-uuid", "uuid": base["metadata"]["view-uuid"]}],
                     [{"action": "set-properties", "updates": {"key1": "val1"}}])
    assert info.value.type == "NoSuchViewException" and "View does not exist: ns.view" in info.value.message


def test_replace_view_version_conflict(views, ns):  # replaceViewVersionConflict
    base = create(views, queries=[TRINO])
    requirements, updates = views.replace_changes(base, schema=SCHEMA, queries=[TRINO], default_namespace=NS)
    views.drop(VIEW)
    with pytest.raises(views.Error) as info:
        views.commit(VIEW, requirements, updates)
    assert info.value.type == "NoSuchViewException" and "View does not exist: ns.view" in info.value.message


def test_create_view_conflict(views, ns):  # createViewConflict
    create(views, queries=[TRINO])
    with pytest.raises(views.Error) as info:
        create(views, queries=[TRINO])
    assert info.value.type == "AlreadyExistsException" and "View already exists: ns.view" in info.value.message


def test_replace_view_conflict(views, ns):  # replaceViewConflict
    create(views, queries=[TRINO])
    views.drop(VIEW)
    with pytest.raises(views.Error) as info:
        views.replace(VIEW, schema=SCHEMA, queries=[TRINO])
    assert info.value.message.startswith("View does not exist: ns.view")


def test_a_different_view_uuid_is_a_conflict(views, ns):  # the requirement of every replace
    base = create(views)
    requirements, updates = views.replace_changes(base, schema=SCHEMA, queries=[SPARK], default_namespace=NS)
    views.drop(VIEW)
    create(views)  # a new view of the same name
    with pytest.raises(views.Error) as info:
        views.commit(VIEW, requirements, updates)
    assert (info.value.status, info.value.type) == (409, "CommitFailedException")
    assert info.value.message.startswith("Requirement failed: view UUID does not match")


def test_create_and_replace_view_with_location(views, ns, warehouse):  # createAndReplaceViewWithLocation
    location = location_in(warehouse, "tmp", "ns", "view")
    created = create(views, queries=[TRINO], location=location)
    assert created["metadata"]["location"] == location
    updated_location = location_in(warehouse, "tmp", "updated", "ns", "view")
    replaced = views.replace(VIEW, schema=SCHEMA, queries=[TRINO], location=updated_location)
    assert replaced["metadata"]["location"] == updated_location
    assert replaced["metadata-location"].startswith(updated_location + "/metadata/")
    assert views.drop(VIEW) and not views.exists(VIEW)


def test_update_view_location(views, ns, warehouse):  # updateViewLocation
    location = location_in(warehouse, "tmp", "ns", "view")
    created = create(views, queries=[TRINO], location=location)
    updated_location = location_in(warehouse, "tmp", "updated", "ns", "view")
    views.commit(VIEW, [{"type": "assert-view-uuid", "uuid": created["metadata"]["view-uuid"]}],
                 [{"action": "set-location", "location": updated_location}])
    updated = views.load(VIEW)["metadata"]
    assert updated["location"] == updated_location
    assert updated["version-log"] == created["metadata"]["version-log"]
    assert updated["versions"] == created["metadata"]["versions"]
    # a location outside the warehouse is refused
    with pytest.raises(views.Error) as info:
        views.commit(VIEW, [], [{"action": "set-location", "location": "file:///somewhere/else"}])
    assert info.value.status == 400
    assert views.drop(VIEW)


def test_update_view_location_conflict(views, ns):  # updateViewLocationConflict
    created = create(views, queries=[TRINO])
    with pytest.raises(views.Error) as info:
        views.commit(VIEW, [], [{"action": "set-location", "location": None}])
    assert info.value.status == 400
    views.drop(VIEW)
    with pytest.raises(views.Error) as info:
        views.commit(VIEW, [{"type": "assert-view-uuid", "uuid": created["metadata"]["view-uuid"]}],
                     [{"action": "set-location", "location": "new-location"}])
    assert info.value.type == "NoSuchViewException" and "View does not exist: ns.view" in info.value.message


def test_concurrent_replace_view_version(views, ns):  # concurrentReplaceViewVersion (server-side retry)
    base = create(views, queries=[TRINO], properties={"replace.drop-dialect.allowed": "true"})
    one = views.replace_changes(base, schema=SCHEMA, queries=[("trino", "select count(id) from ns.tbl")],
                                default_namespace=NS)
    two = views.replace_changes(base, schema=OTHER_SCHEMA, queries=[("spark", "select count(some_id) from ns.tbl")],
                                default_namespace=NS)
    views.commit(VIEW, *two)
    views.commit(VIEW, *one)  # computed against version 1; the server retries against version 2

    metadata = views.load(VIEW)["metadata"]
    assert metadata["current-version-id"] == 3
    by_id = {v["version-id"]: v for v in metadata["versions"]}
    assert sorted(by_id) == [1, 2, 3]
    assert (by_id[1]["schema-id"], reprs(by_id[1])) == (0, [TRINO])
    assert (by_id[2]["schema-id"], reprs(by_id[2])) == (1, [("spark", "select count(some_id) from ns.tbl")])
    assert (by_id[3]["schema-id"], reprs(by_id[3])) == (0, [("trino", "select count(id) from ns.tbl")])


# ---------------------------------------------------------------- SQL per dialect


def test_sql_for_multiple_dialects(views, ns):  # testSqlForMultipleDialects
    created = create(views, queries=[SPARK, ("trino", "select * from ns.tbl using X")], default_catalog="rest")
    # the client picks by dialect; the first representation is the fallback, so order matters
    assert reprs(current_version(views.load(VIEW)["metadata"])) == reprs(current_version(created["metadata"])) == [
        SPARK, ("trino", "select * from ns.tbl using X")]


def test_sql_for_case_insensitive(views, ns):  # testSqlForCaseInsensitive
    create(views, queries=[SPARK, ("trino", "select * from ns.tbl using X")])
    # dialects are stored as sent; "SPARK" and "spark" are one dialect for the uniqueness rule
    assert {d for d, _ in reprs(current_version(views.load(VIEW)["metadata"]))} == {"spark", "trino"}
    with pytest.raises(views.Error) as info:
        create(views, (NS, "other"), queries=[("SPARK", "a"), ("spark", "b")])
    assert "Cannot add multiple queries for dialect spark" in info.value.message


def test_sql_for_invalid_arguments(views, ns, http, prefix_url):  # testSqlForInvalidArguments
    # sqlFor(null) is a client-side check; the server refuses a representation without a dialect
    version = views.version(1, 5, [SPARK], NS, None, "create")
    version["representations"] = [{"type": "sql", "sql": "select 1"}]
    response = http.post(
        f"{prefix_url}/namespaces/ns/views", json={"name": "view", "schema": SCHEMA, "view-version": version}
    )
    assert response.status_code == 400 and "dialect" in response.json()["error"]["message"]


# ---------------------------------------------------------------- namespaces and registration


def test_drop_non_empty_namespace(views, ns):  # dropNonEmptyNamespace
    create(views)
    with pytest.raises(NamespaceNotEmptyError):
        ns.drop_namespace("ns")
    assert views.drop(VIEW)
    ns.drop_namespace("ns")


def test_register_table_that_already_exists_as_view(views, ns):  # registerTableThatAlreadyExistsAsView
    table = ns.create_table("ns.table", TABLE_SCHEMA)
    create(views)
    with pytest.raises(TableAlreadyExistsError, match="View with same name already exists: ns.view"):
        ns.register_table("ns.view", table.metadata_location)


def _metadata_file(location: str) -> dict:
    path = location.removeprefix("file://")
    with open(path, "rb") as fh:
        data = fh.read()
    return json.loads(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)


def test_register_view(views, ns):  # registerView
    created = create(views, queries=[SPARK, TRINO])
    assert _metadata_file(created["metadata-location"]) == created["metadata"]
    # drop without purging, then register the metadata file again under a new name
    views.http.delete(views.view_url(VIEW), params={"purgeRequested": "false"}).raise_for_status()
    registered = views.register((NS, "registered"), created["metadata-location"])
    assert registered["metadata-location"] == created["metadata-location"]
    assert registered["metadata"] == created["metadata"]
    assert views.exists((NS, "registered"))
    assert views.list(NS) == [(NS, "registered")]
    # it is an ordinary view now: replace works
    views.replace((NS, "registered"), schema=SCHEMA, queries=[SPARK, ("trino", "select 1")])
    assert views.load((NS, "registered"))["metadata"]["current-version-id"] == 2
    # PyIceberg registers views too
    ns.drop_view("ns.registered")


def test_register_existing_view(views, ns):  # registerExistingView
    created = create(views)
    with pytest.raises(views.Error) as info:
        views.register(VIEW, created["metadata-location"])
    assert info.value.type == "AlreadyExistsException" and info.value.message.startswith("View already exists: ns.view")


def test_register_view_that_already_exists_as_table(views, ns):  # registerViewThatAlreadyExistsAsTable
    ns.create_table("ns.table", TABLE_SCHEMA)
    created = create(views)
    with pytest.raises(views.Error) as info:
        views.register((NS, "table"), created["metadata-location"])
    assert info.value.message.startswith("Table with same name already exists: ns.table")


def test_register_view_errors(views, ns, warehouse):  # beyond the RCK
    with pytest.raises(views.Error) as info:
        views.register((NS, "v"), location_in(warehouse, "nope", "00000-x.metadata.json"))
    assert info.value.status == 404 and info.value.message.startswith("Failed to open input stream for file")
    with pytest.raises(views.Error) as info:
        views.register((NS, "v"), "file:///outside/the/warehouse.metadata.json")
    assert info.value.status == 400


def test_unknown_view_updates_and_requirements_are_400(views, ns):  # spec: unknown types are 400
    create(views)
    with pytest.raises(views.Error) as info:
        views.commit(VIEW, [], [{"action": "add-snapshot", "snapshot": {}}])
    assert info.value.status == 400 and "add-snapshot" in info.value.message
    with pytest.raises(views.Error) as info:
        views.commit(VIEW, [{"type": "assert-current-schema-id", "current-schema-id": 0}], [])
    assert info.value.status == 400 and "assert-current-schema-id" in info.value.message


def test_malformed_view_bodies_are_400_not_500(views, ns, http, prefix_url):  # found by tests/drills (fuzzing)
    create(views)
    # an update whose action is not a string, a requirement whose type is not one
    response = http.post(views.view_url(VIEW), json={"updates": [{"action": {"set-properties": 1}}]})
    assert response.status_code == 400 and "Unknown view update action" in response.json()["error"]["message"]
    response = http.post(views.view_url(VIEW), json={"requirements": [{"type": ["x"]}], "updates": []})
    assert response.status_code == 400 and "Unknown view requirement type" in response.json()["error"]["message"]
    # a default value pyiceberg cannot read (its validator raises TypeError, not a ValidationError)
    body = {"name": "bad", "schema": {"type": "struct", "fields": [{"id": 1, "name": "a", "required": False,
                                                                    "initial-default": "x"}]},
            "view-version": {"version-id": 1, "schema-id": 0, "timestamp-ms": 1, "summary": {},
                             "default-namespace": list(NS),
                             "representations": [{"type": "sql", "dialect": "spark", "sql": "SELECT 1"}]}}
    response = http.post(f"{prefix_url}/namespaces/ns/views", json=body)
    assert response.status_code == 400, response.text
    # the body's field has no type either: the body validation names that first
    assert response.json()["error"]["message"] == "Invalid request body: schema.fields[0].type: is required"
