# Unit tests of the bundle (`opa test deploy/trino-opa`), no catalog needed: http.send is replaced by
# mock_send, which plays the identity provider, the warehouse list and the batch check. The tests
# against a live catalog are plugins/authz-openfga/tests/test_trino_opa.py.
package lakekeeper_trino_test

import rego.v1

import data.lakekeeper_trino

config := {
	"url": "http://catalog.test",
	"token_endpoint": "http://idp.test/token",
	"client_id": "trino-opa",
	"client_secret": "secret",
	"catalogs": {"lake": "production"},
	"open_catalogs": ["system"],
	"max_batch_check_size": 2,
	"listing_threshold": 1000,
}

# what the mocked catalog allows: batch-check operations, as the bundle sends them
allowed := {
	{"warehouse": {"action": {"action": "get_config"}, "warehouse-id": "wh-prod"}},
	{"table": {"action": {"action": "read_data"}, "warehouse-id": "wh-prod", "namespace": ["sales"], "table": "orders"}},
	{"table": {"action": {"action": "get_metadata"}, "warehouse-id": "wh-prod", "namespace": ["sales"], "table": "orders"}},
	{"view": {"action": {"action": "get_metadata"}, "warehouse-id": "wh-prod", "namespace": ["sales"], "table": "daily"}},
}

mock_send(request) := {"status_code": 200, "body": {"access_token": "token"}} if {
	request.url == "http://idp.test/token"
	contains(request.raw_body, "client_secret=secret")
} else := {"status_code": 200, "body": {"warehouses": [{"name": "production", "warehouse-id": "wh-prod"}]}} if {
	request.url == "http://catalog.test/management/v1/warehouse"
	request.headers.authorization == "Bearer token"
} else := {"status_code": 200, "body": {"results": [{"allowed": c.operation in allowed} | some c in request.body.checks]}} if {
	request.url == "http://catalog.test/management/v1/action/batch-check"
	request.headers.authorization == "Bearer token"
	every c in request.body.checks {
		c.identity == {"user": "oidc~bob"}
	}
} else := {"status_code": 500, "body": {}}

# every chunk of a batch check answers 500
failing_batch_check(request) := {"status_code": 500, "body": {}} if {
	request.url == "http://catalog.test/management/v1/action/batch-check"
} else := mock_send(request)

# the identity provider refuses the client
refusing_idp(request) := {"status_code": 401, "body": {}} if {
	request.url == "http://idp.test/token"
} else := mock_send(request)

context := {"identity": {"user": "bob", "groups": []}, "softwareStack": {"trinoVersion": "476"}}

table(catalog, schema, name) := {"table": {"catalogName": catalog, "schemaName": schema, "tableName": name}}

allow_of(action) if {
	lakekeeper_trino.allow with input as {"context": context, "action": action}
		with data.lakekeeper_trino_config as config
		with http.send as mock_send
}

batch_of(action) := kept if {
	kept := lakekeeper_trino.batch with input as {"context": context, "action": action}
		with data.lakekeeper_trino_config as config
		with http.send as mock_send
}

# ---------------------------------------------------------------- rules: operations -> checks

test_a_table_operation_asks_its_action_on_a_table_only_where_views_do_not_apply if {
	rule := lakekeeper_trino.rule({"operation": "InsertIntoTable"}, table("lake", "sales", "orders"), {})
		with data.lakekeeper_trino_config as config
	rule == {"groups": [[{
		"kind": "table", "action": "write_data", "catalog": "lake", "schema": ["sales"], "name": "orders",
		"view_action": null,
	}]]}
}

test_a_nested_schema_is_a_nested_namespace_and_a_metadata_table_its_table if {
	rule := lakekeeper_trino.rule({"operation": "ShowColumns"}, table("lake", "a.b", "orders$snapshots"), {})
		with data.lakekeeper_trino_config as config
	[check] := rule.groups[0]
	check.kind == "tabular"
	check.schema == ["a", "b"]
	check.name == "orders"
}

test_what_the_catalog_does_not_hold_is_decided_without_asking if {
	lakekeeper_trino.rule({"operation": "ExecuteQuery"}, {}, {}) with data.lakekeeper_trino_config as config
	lakekeeper_trino.rule({"operation": "GrantTablePrivilege"}, table("lake", "sales", "orders"), {}) == false
		with data.lakekeeper_trino_config as config
	lakekeeper_trino.rule({"operation": "NoSuchOperation"}, {}, {}) == false
		with data.lakekeeper_trino_config as config
	lakekeeper_trino.rule({"operation": "SelectFromColumns"}, table("system", "runtime", "nodes"), {})
		with data.lakekeeper_trino_config as config
}

test_a_rename_never_leaves_its_warehouse if {
	rule := lakekeeper_trino.rule(
		{"operation": "RenameTable"}, table("lake", "sales", "orders"), table("other", "sales", "orders2"),
	) with data.lakekeeper_trino_config as config
	rule == false
}

test_a_trino_catalog_maps_to_its_configured_warehouse if {
	lakekeeper_trino.warehouse_name("lake") == "production" with data.lakekeeper_trino_config as config
	lakekeeper_trino.warehouse_name("sandbox") == "sandbox" with data.lakekeeper_trino_config as config
	not lakekeeper_trino.warehouse_name("system") with data.lakekeeper_trino_config as config
}

# ---------------------------------------------------------------- decisions through the mocked catalog

test_a_single_decision_asks_the_catalog_for_the_trino_user if {
	allow_of({"operation": "SelectFromColumns", "resource": {"table": {
		"catalogName": "lake", "schemaName": "sales", "tableName": "orders", "columns": ["id", "total"],
	}}})
	not allow_of({"operation": "InsertIntoTable", "resource": table("lake", "sales", "orders")})
	not allow_of({"operation": "SelectFromColumns", "resource": table("unknown", "sales", "orders")})
}

test_filtering_keeps_indices_in_order_across_chunks if {
	# five names, a table or a view each (ten checks), asked two at a time: five chunks
	resources := [table("lake", "sales", name) | some name in ["x", "orders", "y", "daily", "z"]]
	batch_of({"operation": "FilterTables", "filterResources": resources}) == [1, 3]
}

test_filtering_catalogs_and_columns if {
	catalogs := [{"catalog": {"name": name}} | some name in ["lake", "sandbox", "system"]]
	batch_of({"operation": "FilterCatalogs", "filterResources": catalogs}) == [0, 2]
	columns := {"operation": "FilterColumns", "filterResources": [{"table": {
		"catalogName": "lake", "schemaName": "sales", "tableName": "orders", "columns": ["id", "total", "note"],
	}}]}
	batch_of(columns) == [0, 1, 2]
}

test_queries_are_filtered_to_their_owner if {
	resources := [{"user": {"user": "bob"}}, {"user": {"user": "alice"}}, {"user": {"user": "bob"}}]
	batch_of({"operation": "FilterViewQueryOwnedBy", "filterResources": resources}) == [0, 2]
}

# ---------------------------------------------------------------- failures deny, never shift

test_a_failed_batch_check_denies_everything if {
	resources := [table("lake", "sales", name) | some name in ["orders", "daily"]]
	kept := lakekeeper_trino.batch with input as {"context": context, "action": {
		"operation": "FilterTables", "filterResources": resources,
	}}
		with data.lakekeeper_trino_config as config
		with http.send as failing_batch_check
	kept == []
	not lakekeeper_trino.allow with input as {"context": context, "action": {
		"operation": "SelectFromColumns", "resource": table("lake", "sales", "orders"),
	}}
		with data.lakekeeper_trino_config as config
		with http.send as failing_batch_check
}

test_without_a_token_nothing_the_catalog_decides_is_allowed if {
	not lakekeeper_trino.allow with input as {"context": context, "action": {
		"operation": "SelectFromColumns", "resource": table("lake", "sales", "orders"),
	}}
		with data.lakekeeper_trino_config as config
		with http.send as refusing_idp
	lakekeeper_trino.allow with input as {"context": context, "action": {"operation": "ExecuteQuery"}}
		with data.lakekeeper_trino_config as config
		with http.send as refusing_idp
}
