# Which of the catalog's actions each Trino operation needs.
#
# A rule is true or false (decided without asking), or {"groups": [[check, ...], ...]}: every group
# must hold, a group holds when any of its checks does. A check names an object as Trino does:
#   {"kind": "warehouse" | "namespace" | "table" | "tabular", "action": ..., "view_action": ...,
#    "catalog": <Trino catalog>, "schema": [namespace parts], "name": <table or view>}
# "tabular" is a table or a view, whichever exists ("action" for a table, "view_action" for a view).
# A Trino catalog is a warehouse, a schema a namespace ("a.b": nested), a table a table or a view.
# An object that does not exist is denied, except where creating it is the point.
package lakekeeper_trino

import rego.v1

# about what the catalog does not hold: the same for everyone
always := {"ExecuteQuery", "SetSystemSessionProperty"}

# grants, roles, ownership and catalogs are managed in the catalog, not through Trino
never := {
	"CreateCatalog", "DropCatalog", "RenameSchema", "SetSchemaAuthorization", "SetTableAuthorization",
	"SetViewAuthorization", "SetMaterializedViewAuthorization", "ReadSystemInformation",
	"WriteSystemInformation", "GrantSchemaPrivilege", "DenySchemaPrivilege", "RevokeSchemaPrivilege",
	"GrantTablePrivilege", "DenyTablePrivilege", "RevokeTablePrivilege", "CreateRole", "DropRole",
	"GrantRoles", "RevokeRoles", "ShowRoles", "ShowCurrentRoles", "ShowRoleGrants", "SetEntityAuthorization",
}

# table operations: [action on a table, action on a view (null: not for views)]
table_actions := {
	"ShowColumns": ["get_metadata", "get_metadata"],
	"ShowCreateTable": ["get_metadata", "get_metadata"],
	"DropTable": ["drop", null],
	"DropView": ["drop", "drop"],
	"DropMaterializedView": ["drop", "drop"],
	"SetTableProperties": ["commit", null],
	"SetTableComment": ["commit", null],
	"SetViewComment": ["commit", "commit"],
	"SetColumnComment": ["commit", "commit"],
	"SetMaterializedViewProperties": ["commit", "commit"],
	"RefreshMaterializedView": ["commit", "commit"],
	"AddColumn": ["commit", null],
	"AlterColumn": ["commit", null],
	"DropColumn": ["commit", null],
	"RenameColumn": ["commit", null],
	"InsertIntoTable": ["write_data", null],
	"DeleteFromTable": ["write_data", null],
	"TruncateTable": ["write_data", null],
	"UpdateTableColumns": ["write_data", null],
	"ExecuteTableProcedure": ["write_data", null],
}

select_operations := {"SelectFromColumns", "CreateViewWithSelectFromColumns"}

create_actions := {
	"CreateTable": ["create_table"],
	"CreateView": ["create_view"],
	"CreateMaterializedView": ["create_table", "create_view"],
}

# [action on the source table, on a source view, on the target namespace]
rename_actions := {
	"RenameTable": ["rename", null, "create_table"],
	"RenameView": ["rename", "rename", "create_view"],
	"RenameMaterializedView": ["rename", "rename", "create_view"],
}

function_operations := {
	"ExecuteFunction", "CreateViewWithExecuteFunction", "ExecuteProcedure", "CreateFunction",
	"DropFunction", "ShowCreateFunction",
}

own_query_operations := {"ImpersonateUser", "ViewQueryOwnedBy", "KillQueryOwnedBy"}

schema_actions := {"DropSchema": "delete", "ShowCreateSchema": "get_metadata", "ShowTables": "list_tables"}

information_schema := "information_schema"

rule(action, resource, target) := true if {
	action.operation in always
} else := false if {
	action.operation in never
} else := object.get(resource, ["user", "user"], null) == input.context.identity.user if {
	action.operation in own_query_operations
} else := catalog_rule(object.get(resource, ["catalog", "name"], null), "get_config") if {
	action.operation == "AccessCatalog"
} else := catalog_rule(object.get(resource, ["catalog", "name"], null), "list_namespaces") if {
	action.operation == "ShowSchemas"
} else := catalog_rule(object.get(resource, ["catalogSessionProperty", "catalogName"], null), "get_config") if {
	action.operation == "SetCatalogSessionProperty"
} else := create_schema_rule(object.get(resource, "schema", {})) if {
	action.operation == "CreateSchema"
} else := schema_rule(
	object.get(resource, ["schema", "catalogName"], null),
	object.get(resource, ["schema", "schemaName"], null),
	schema_actions[action.operation],
) if {
	schema_actions[action.operation]
} else := open(object.get(resource, ["schema", "catalogName"], null)) if {
	action.operation == "ShowFunctions"
} else := table_rule(object.get(resource, "table", {}), actions[0], actions[1]) if {
	actions := table_actions[action.operation]
} else := select_rule(object.get(resource, "table", {})) if {
	action.operation in select_operations
} else := in_schema_rule(
	object.get(resource, ["table", "catalogName"], null),
	object.get(resource, ["table", "schemaName"], null),
	create_actions[action.operation],
) if {
	create_actions[action.operation]
} else := rename_rule(object.get(resource, "table", {}), object.get(target, "table", {}), actions) if {
	actions := rename_actions[action.operation]
} else := open(object.get(resource, ["function", "catalogName"], null)) if {
	action.operation in function_operations
} else := false # an operation this policy does not know is denied

# reading data, one group per column: the catalog grants whole tables, so every column asks the
# same check, but a policy added here that refuses a column fails the query as Trino means it to
select_rule(table) := {"groups": [group | some _ in table.columns; some group in rule.groups]} if {
	rule := table_rule(table, "read_data", "select")
	is_object(rule)
	count(object.get(table, "columns", [])) > 1
} else := table_rule(table, "read_data", "select")

open(catalog) if catalog in open_catalogs

default open(_) := false

open_catalogs := object.get(config, "open_catalogs", ["system"])

# the warehouse a Trino catalog stands for; undefined for an open catalog
warehouse_name(catalog) := name if {
	is_string(catalog)
	catalog != ""
	not open(catalog)
	name := object.get(object.get(config, "catalogs", {}), catalog, catalog)
}

schema_parts(schema) := split(schema, ".") if {
	is_string(schema)
	schema != ""
}

check(kind, action, catalog, parts, name, view_action) := {
	"kind": kind, "action": action, "catalog": catalog, "schema": parts, "name": name,
	"view_action": view_action,
}

catalog_rule(catalog, action) := true if {
	open(catalog)
} else := {"groups": [[check("warehouse", action, catalog, [], null, null)]]} if {
	warehouse_name(catalog)
} else := false

schema_rule(catalog, schema, action) := true if {
	open(catalog)
} else := false if {
	not warehouse_name(catalog)
} else := false if {
	not schema_parts(schema)
} else := false if {
	schema_parts(schema) == [information_schema]
	action == "delete"
} else := catalog_rule(catalog, "get_config") if {
	schema_parts(schema) == [information_schema] # Trino's own view of the catalog, filtered by Trino
} else := {"groups": [[check("namespace", action, catalog, schema_parts(schema), null, null)]]}

create_schema_rule(schema) := true if {
	open(schema.catalogName)
} else := false if {
	not warehouse_name(object.get(schema, "catalogName", null))
} else := false if {
	not schema_parts(object.get(schema, "schemaName", null))
} else := {"groups": [[check("warehouse", "create_namespace", schema.catalogName, [], null, null)]]} if {
	count(schema_parts(schema.schemaName)) == 1
} else := {"groups": [[check(
	"namespace", "create_namespace", schema.catalogName,
	array.slice(parts, 0, count(parts) - 1), null, null,
)]]} if {
	parts := schema_parts(schema.schemaName)
}

in_schema_rule(catalog, schema, actions) := true if {
	open(catalog)
} else := false if {
	not warehouse_name(catalog)
} else := false if {
	not schema_parts(schema)
} else := false if {
	schema_parts(schema) == [information_schema]
} else := {"groups": [[check("namespace", action, catalog, schema_parts(schema), null, null)] | some action in actions]}

table_rule(table, action, view_action) := true if {
	open(object.get(table, "catalogName", null))
} else := false if {
	not warehouse_name(object.get(table, "catalogName", null))
} else := false if {
	not schema_parts(object.get(table, "schemaName", null))
} else := false if {
	not is_string(object.get(table, "tableName", null))
} else := false if {
	table.tableName == ""
} else := catalog_rule(table.catalogName, "get_config") if {
	schema_parts(table.schemaName) == [information_schema]
	action in {"get_metadata", "read_data"}
} else := false if {
	schema_parts(table.schemaName) == [information_schema]
} else := {"groups": [[check("table", action, table.catalogName, schema_parts(table.schemaName), base_name(table.tableName), null)]]} if {
	view_action == null
} else := {"groups": [[check(
	"tabular", action, table.catalogName, schema_parts(table.schemaName),
	base_name(table.tableName), view_action,
)]]}

# Iceberg's metadata tables ("orders$snapshots") are read as their table is
base_name(name) := split(name, "$")[0]

rename_rule(source, target, actions) := false if {
	object.get(source, "catalogName", null) != object.get(target, "catalogName", null) # never leaves its warehouse
} else := rule if {
	rule := table_rule(source, actions[0], actions[1])
	is_boolean(rule)
} else := destination if {
	destination := in_schema_rule(target.catalogName, object.get(target, "schemaName", null), [actions[2]])
	is_boolean(destination)
	destination == false
} else := table_rule(source, actions[0], actions[1]) if {
	destination := in_schema_rule(target.catalogName, object.get(target, "schemaName", null), [actions[2]])
	destination == true
} else := {"groups": array.concat(
	table_rule(source, actions[0], actions[1]).groups,
	in_schema_rule(target.catalogName, object.get(target, "schemaName", null), [actions[2]]).groups,
)}
