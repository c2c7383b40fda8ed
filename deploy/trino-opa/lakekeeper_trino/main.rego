# Trino's OPA access control decided by the catalog's permissions.
#
# Trino (access-control.name=opa) posts its input to
#   opa.policy.uri          = <opa>/v1/data/lakekeeper_trino/allow   -> true | false
#   opa.policy.batched-uri  = <opa>/v1/data/lakekeeper_trino/batch   -> indices of input.action.filterResources
# Every operation becomes checks of the catalog's own actions for the Trino user, asked through
# POST /management/v1/action/batch-check (catalog.rego); rules.rego says which. The catalog's own
# endpoint (/trino/{key}/allow, /batch) decides the same operations the same way.
package lakekeeper_trino

import rego.v1

filter_operations := {
	"FilterCatalogs", "FilterSchemas", "FilterTables", "FilterColumns",
	"FilterFunctions", "FilterViewQueryOwnedBy",
}

default allow := false

allow if {
	not input.action.operation in filter_operations
	decisions([rule(input.action, object.get(input.action, "resource", {}), object.get(input.action, "targetResource", {}))])[0]
}

# Trino without a batched URI asks about one resource of a Filter* operation at a time
allow if {
	input.action.operation in filter_operations
	count(filtered([input.action.resource])) > 0
}

default batch := []

batch := filtered(input.action.filterResources) if {
	input.action.operation in filter_operations
}

batch := [i | some i, ok in decisions(rules); ok] if {
	not input.action.operation in filter_operations
	rules := [rule(input.action, r, {}) | some r in input.action.filterResources]
	count(rules) == count(input.action.filterResources) # indices never shift
}

# FilterColumns: one table, its columns kept together (the catalog grants whole tables)
filtered(resources) := [i | some i, _ in resources[0].table.columns] if {
	input.action.operation == "FilterColumns"
	decisions([table_rule(resources[0].table, "get_metadata", "get_metadata")])[0]
}

filtered(resources) := [] if {
	input.action.operation == "FilterColumns"
	not decisions([table_rule(resources[0].table, "get_metadata", "get_metadata")])[0]
}

filtered(resources) := [i | some i, r in resources; object.get(r, ["user", "user"], null) == input.context.identity.user] if {
	input.action.operation == "FilterViewQueryOwnedBy"
}

filtered(resources) := [i | some i, ok in decisions(rules); ok] if {
	not input.action.operation in {"FilterColumns", "FilterViewQueryOwnedBy"}
	rules := [filter_rule(r) | some r in resources]
	count(rules) == count(resources) # indices never shift
}

filter_rule(r) := catalog_rule(object.get(r, ["catalog", "name"], null), "get_config") if {
	input.action.operation == "FilterCatalogs"
}

filter_rule(r) := schema_rule(
	object.get(r, ["schema", "catalogName"], null),
	object.get(r, ["schema", "schemaName"], null),
	"get_metadata",
) if {
	input.action.operation == "FilterSchemas"
}

filter_rule(r) := table_rule(object.get(r, "table", {}), "get_metadata", "get_metadata") if {
	input.action.operation == "FilterTables"
}

filter_rule(r) := open(object.get(r, ["function", "catalogName"], null)) if {
	input.action.operation == "FilterFunctions"
}
