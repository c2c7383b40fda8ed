# Asking the catalog: a technical user's token (OAuth2 client credentials), the warehouses' ids, and
# POST /management/v1/action/batch-check for the Trino user, in chunks of max_batch_check_size.
# Configuration: data.lakekeeper_trino_config (see data.example.json).
package lakekeeper_trino

import rego.v1

config := data.lakekeeper_trino_config

max_batch_check_size := object.get(config, "max_batch_check_size", 1000)

cache_seconds := object.get(config, "cache_seconds", 60)

# the catalog user the Trino identity stands for
trino_user := concat("", [object.get(config, "user_prefix", "oidc~"), input.context.identity.user])

client_secret := config.client_secret

client_secret := opa.runtime().env.LAKEKEEPER_TRINO_CLIENT_SECRET if not config.client_secret

token_response := http.send({
	"method": "POST",
	"url": config.token_endpoint,
	"headers": {"content-type": "application/x-www-form-urlencoded"},
	"raw_body": urlquery.encode_object(object.union(
		{"grant_type": "client_credentials", "client_id": config.client_id, "client_secret": client_secret},
		{k: v | some k in ["scope"]; v := config[k]},
	)),
	"force_cache": true,
	"force_cache_duration_seconds": object.get(config, "token_cache_seconds", 60),
	"raise_error": false,
})

token := token_response.body.access_token if token_response.status_code == 200

headers := object.union(
	{"authorization": concat(" ", ["Bearer", token]), "content-type": "application/json"},
	{"x-project-id": config.project_id | is_string(config.project_id)},
)

warehouses_response := http.send({
	"method": "GET",
	"url": concat("", [config.url, "/management/v1/warehouse"]),
	"headers": headers,
	"force_cache": true,
	"force_cache_duration_seconds": cache_seconds,
	"raise_error": false,
})

warehouse_ids[w.name] := object.get(w, "warehouse-id", object.get(w, "id", null)) if {
	warehouses_response.status_code == 200
	some w in warehouses_response.body.warehouses
}

# the catalog's form of an action in a check
action_value(action) := {"action": action}

# Many tables of a schema at once (FilterTables): the schema's tables and views are listed (one page
# each, with their ids) and checked by id, which the catalog looks up in one query; a schema with more
# than one page, or few names, is checked by name.
listing_threshold := object.get(config, "listing_threshold", 20)

listing(warehouse_id, schema, typ) := response.body if {
	response := http.send({
		"method": "GET",
		"url": sprintf("%s/catalog/v1/%s/namespaces/%s/%ss?pageSize=1000&returnUuids=true", [
			config.url, warehouse_id,
			concat("%1F", [urlquery.encode(part) | some part in schema]), typ,
		]),
		"headers": headers,
		"raise_error": false,
	})
	response.status_code == 200
	object.get(response.body, "next-page-token", null) == null
}

schema_objects(warehouse_id, schema) := object.union(
	{lower(t.name): {"kind": "table", "id": tables["table-uuids"][i]} | some i, t in tables.identifiers},
	{lower(v.name): {"kind": "view", "id": views["view-uuids"][i]} | some i, v in views.identifiers},
) if {
	tables := listing(warehouse_id, schema, "table")
	views := listing(warehouse_id, schema, "view")
}

# [catalog, schema] -> name -> {"kind", "id"}, for the schemas listed
listed_objects(checks) := {} if {
	count([c | some c in checks; c.kind in {"table", "tabular"}]) < listing_threshold
} else := {[catalog, schema]: objects |
	some [catalog, schema] in {[c.catalog, c.schema] | some c in checks; c.kind in {"table", "tabular"}}
	objects := schema_objects(warehouse_ids[warehouse_name(catalog)], schema)
}

# the batch-check operations one check needs (none: its warehouse does not exist, so it is denied)
operations(c, listed) := ops if {
	warehouse_id := warehouse_ids[warehouse_name(c.catalog)]
	ops := operations_in(c, warehouse_id, listed)
} else := []

operations_in(c, warehouse_id, _) := [{"warehouse": {"action": action_value(c.action), "warehouse-id": warehouse_id}}] if {
	c.kind == "warehouse"
}

operations_in(c, warehouse_id, _) := [{"namespace": {
	"action": action_value(c.action), "warehouse-id": warehouse_id,
	"namespace": c.schema,
}}] if {
	c.kind == "namespace"
}

operations_in(c, warehouse_id, listed) := [{"table": tabular(c, c.action, warehouse_id)}] if {
	c.kind == "table"
	not listed[[c.catalog, c.schema]]
}

operations_in(c, warehouse_id, listed) := [{"table": tabular(c, c.action, warehouse_id)}, {"view": tabular(c, c.view_action, warehouse_id)}] if {
	c.kind == "tabular"
	not listed[[c.catalog, c.schema]]
}

# listed: by id, or nothing to ask when the name is not there (or is the other kind)
operations_in(c, warehouse_id, listed) := ops if {
	c.kind in {"table", "tabular"}
	objects := listed[[c.catalog, c.schema]]
	ops := [op |
		found := objects[lower(c.name)]
		some op in by_id(c, found, warehouse_id)
	]
}

by_id(c, found, warehouse_id) := [{"table": {"action": action_value(c.action), "warehouse-id": warehouse_id, "table-id": found.id}}] if {
	found.kind == "table"
} else := [{"view": {"action": action_value(c.view_action), "warehouse-id": warehouse_id, "view-id": found.id}}] if {
	c.kind == "tabular"
	found.kind == "view"
} else := []

tabular(c, action, warehouse_id) := {
	"action": action_value(action), "warehouse-id": warehouse_id,
	"namespace": c.schema, "table": c.name,
}

# every rule decided (true / false, in order), each distinct check asked once
decisions(rules) := ds if {
	checks := [c | some c in {c | some r in rules; is_object(r); some g in r.groups; some c in g}]
	answers := answer(checks)
	ds := [decide(r, answers) | some r in rules]
	count(ds) == count(rules)
}

decide(r, answers) := r if {
	is_boolean(r)
} else := true if {
	every group in r.groups {
		some c in group
		answers[c]
	}
} else := false

answer(checks) := {} if {
	count(checks) == 0
} else := {c: ok | some i, c in checks; ok := i in allowed} if {
	listed := listed_objects(checks)
	items := [{"check": i, "operation": op} | some i, c in checks; some op in operations(c, listed)]
	results := batch_check([{"id": sprintf("%d", [j]), "identity": {"user": trino_user}, "operation": item.operation} |
		some j, item in items
	])
	allowed := {item.check | some j, item in items; results[j] == true}
}

batch_check(checks) := [] if {
	count(checks) == 0
} else := results if {
	chunks := ceil(count(checks) / max_batch_check_size)
	results := [allowed |
		some k in numbers.range(0, chunks - 1)
		some allowed in batch_check_chunk(array.slice(checks, k * max_batch_check_size, (k + 1) * max_batch_check_size))
	]
	count(results) == count(checks) # a failed chunk fails the decision: denied, never shifted
}

batch_check_chunk(checks) := [r.allowed | some r in response.body.results] if {
	response := http.send({
		"method": "POST",
		"url": concat("", [config.url, "/management/v1/action/batch-check"]),
		"headers": headers,
		"body": {"checks": checks, "error-on-not-found": false},
		"raise_error": false,
	})
	response.status_code == 200
	count(response.body.results) == count(checks)
}
