"""Trino's OPA access control, answered by the catalog itself (no OPA server in between).

Trino posts ``{"input": {"context": {"identity": {"user": ...}}, "action": {"operation": ..., ...}}}``
to ``opa.policy.uri`` and expects ``{"result": true|false}``; the ``Filter*`` operations go to
``opa.policy.batched-uri`` with ``action.filterResources`` and expect the indices of what may be kept
(``FilterColumns``: one table, the indices of its columns).

Every operation becomes checks of the catalog's own actions, asked of the one authorizer of the host
for the Trino user (``user_prefix`` + the Trino user name): a Trino catalog is a warehouse, a schema a
namespace (``a.b``: nested), a table a table or a view. The Rego bundle in ``deploy/trino-opa`` maps
the same operations to the same actions through ``POST /management/v1/action/batch-check``; the case
table in ``plugins/authz-openfga/tests/trino_cases.py`` holds both to the same decisions.

An object that does not exist is denied (Trino then reports "access denied", never whether it
exists), except where creating it is the point. Catalogs in ``open_catalogs`` (Trino's ``system``)
are not the catalog's to decide: everything about them is allowed.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from attrs import frozen

from lakekeeper_host.errors import bad_request, not_found
from lakekeeper_host.server.authorize import actor_allowed_many
from lakekeeper_host.service.authz import Actor, Resource
from lakekeeper_host.service.request import RequestMetadata
from lakekeeper_host.service.state import AppState
from lakekeeper_host.store import namespaces as namespace_store
from lakekeeper_host.store import tabulars as tabular_store
from lakekeeper_host.store import warehouses as warehouse_store
from lakekeeper_host.store.tabulars import TabularRow
from lakekeeper_host.store.warehouses import WarehouseRow

# the most resources one batched request may ask about: a schema of this many tables still answers in
# a few seconds on a small machine, and a request can no longer make the catalog look up unbounded names
MAX_FILTER_RESOURCES = 10_000


@frozen
class Check:
    """One question for the authorizer, about an object named as Trino names it: ``kind`` in
    warehouse | namespace | table | view | tabular (a table or a view: whichever exists, with
    ``action`` for a table and ``view_action`` for a view)."""

    kind: str
    action: str
    catalog: str
    schema: tuple[str, ...] = ()
    name: str | None = None
    view_action: str | None = None


# A rule: every group must hold; a group holds when any of its checks does. True / False: decided
# without asking (an open catalog, an operation the catalog never allows).
Rule = bool | list[list[Check]]

# Operations about what the catalog does not hold, decided the same for everyone
ALWAYS = frozenset({"ExecuteQuery", "SetSystemSessionProperty"})
# Grants, roles, ownership and catalogs are managed in the catalog, not through Trino
NEVER = frozenset(
    {
        "CreateCatalog",
        "DropCatalog",
        "RenameSchema",
        "SetSchemaAuthorization",
        "SetTableAuthorization",
        "SetViewAuthorization",
        "SetMaterializedViewAuthorization",
        "ReadSystemInformation",
        "WriteSystemInformation",
        "GrantSchemaPrivilege",
        "DenySchemaPrivilege",
        "RevokeSchemaPrivilege",
        "GrantTablePrivilege",
        "DenyTablePrivilege",
        "RevokeTablePrivilege",
        "CreateRole",
        "DropRole",
        "GrantRoles",
        "RevokeRoles",
        "ShowRoles",
        "ShowCurrentRoles",
        "ShowRoleGrants",
        "SetEntityAuthorization",
    }
)
# table operations: the action on a table, the action on a view (None: not for views)
TABLE_ACTIONS: dict[str, tuple[str, str | None]] = {
    "ShowColumns": ("get_metadata", "get_metadata"),
    "ShowCreateTable": ("get_metadata", "get_metadata"),
    "DropTable": ("drop", None),
    "DropView": ("drop", "drop"),
    "DropMaterializedView": ("drop", "drop"),
    "SetTableProperties": ("commit", None),
    "SetTableComment": ("commit", None),
    "SetViewComment": ("commit", "commit"),
    "SetColumnComment": ("commit", "commit"),
    "SetMaterializedViewProperties": ("commit", "commit"),
    "RefreshMaterializedView": ("commit", "commit"),
    "AddColumn": ("commit", None),
    "AlterColumn": ("commit", None),
    "DropColumn": ("commit", None),
    "RenameColumn": ("commit", None),
    "InsertIntoTable": ("write_data", None),
    "DeleteFromTable": ("write_data", None),
    "TruncateTable": ("write_data", None),
    "UpdateTableColumns": ("write_data", None),
    "ExecuteTableProcedure": ("write_data", None),
}
# reading data, one check per column: the catalog grants whole tables, so every column asks the
# same, but a column a policy refuses would fail the query as Trino means it to
SELECT_OPERATIONS = frozenset({"SelectFromColumns", "CreateViewWithSelectFromColumns"})
# operations whose resource is the new object: the action on its namespace (or warehouse)
CREATE_ACTIONS: dict[str, tuple[str, ...]] = {
    "CreateTable": ("create_table",),
    "CreateView": ("create_view",),
    "CreateMaterializedView": ("create_table", "create_view"),
}
RENAME_OPERATIONS = {
    "RenameTable": ("rename", None, "create_table"),
    "RenameView": ("rename", "rename", "create_view"),
    "RenameMaterializedView": ("rename", "rename", "create_view"),
}
FILTER_OPERATIONS = frozenset(
    {"FilterCatalogs", "FilterSchemas", "FilterTables", "FilterColumns", "FilterFunctions", "FilterViewQueryOwnedBy"}
)
INFORMATION_SCHEMA = "information_schema"


def check_key(state: AppState, key: str) -> None:
    """The path's key must be the configured one; without one the endpoints do not exist."""
    configured = state.settings.host.trino_opa.key
    if configured is None or not hmac.compare_digest(key.encode(), configured.get().encode()):
        raise not_found("No Trino policy endpoint here", "NotFoundException")


def trino_actor(state: AppState, document: Any) -> Actor:
    """The catalog user the Trino identity stands for."""
    try:
        user = document["context"]["identity"]["user"]
    except (KeyError, TypeError):
        raise bad_request("input.context.identity.user is required") from None
    if not isinstance(user, str) or not user:
        raise bad_request("input.context.identity.user must be a non-empty string")
    return Actor(user_id=f"{state.settings.host.trino_opa.user_prefix}{user}", name=user)


def _action(document: Any) -> Mapping[str, Any]:
    action = document.get("action") if isinstance(document, Mapping) else None
    if not isinstance(action, Mapping) or not isinstance(action.get("operation"), str):
        raise bad_request("input.action.operation is required")
    return action


async def allow(state: AppState, meta: RequestMetadata, document: Any) -> bool:
    """``opa.policy.uri``: may the Trino user do ``input.action``?"""
    actor = trino_actor(state, document)
    action = _action(document)
    operation = action["operation"]
    if operation in FILTER_OPERATIONS:  # sent one resource at a time without a batched URI
        resource = _object(action.get("resource"))
        return bool(await _filter(state, meta, actor, operation, [resource]))
    rule = _rule(state, actor, operation, _object(action.get("resource")), _object(action.get("targetResource")))
    return (await _decide(state, meta, actor, [rule]))[0]


async def batch(state: AppState, meta: RequestMetadata, document: Any) -> list[int]:
    """``opa.policy.batched-uri``: the indices of ``filterResources`` the Trino user may keep."""
    actor = trino_actor(state, document)
    action = _action(document)
    operation = action["operation"]
    resources = action.get("filterResources")
    if not isinstance(resources, list):
        raise bad_request("input.action.filterResources must be a list")
    if len(resources) > MAX_FILTER_RESOURCES:
        raise bad_request(
            f"input.action.filterResources holds {len(resources)} resources; at most {MAX_FILTER_RESOURCES} "
            "are decided in one request",
            "TooManyFilterResources",
        )
    if operation not in FILTER_OPERATIONS:
        rules = [_rule(state, actor, operation, _object(r), {}) for r in resources]
        return [i for i, ok in enumerate(await _decide(state, meta, actor, rules)) if ok]
    return await _filter(state, meta, actor, operation, resources)


async def _filter(
    state: AppState, meta: RequestMetadata, actor: Actor, operation: str, resources: Sequence[Any]
) -> list[int]:
    if operation == "FilterColumns":
        # one table; its columns are kept or dropped together (the catalog grants whole tables)
        table = _object(_object(resources[0]).get("table")) if resources else {}
        columns = table.get("columns") if isinstance(table.get("columns"), list) else []
        rule = _table_rule(state, table, "get_metadata", "get_metadata")
        visible = (await _decide(state, meta, actor, [rule]))[0]
        return list(range(len(columns))) if visible else []
    if operation == "FilterViewQueryOwnedBy":
        return [i for i, r in enumerate(resources) if _user_of(r) == actor.name]
    rules: list[Rule] = []
    for resource in resources:
        resource = _object(resource)
        if operation == "FilterCatalogs":
            rules.append(_catalog_rule(state, _object(resource.get("catalog")).get("name"), "get_config"))
        elif operation == "FilterSchemas":
            schema = _object(resource.get("schema"))
            rules.append(_schema_rule(state, schema.get("catalogName"), schema.get("schemaName"), "get_metadata"))
        elif operation == "FilterTables":
            rules.append(_table_rule(state, _object(resource.get("table")), "get_metadata", "get_metadata"))
        else:  # FilterFunctions: the catalog holds no functions
            function = _object(resource.get("function"))
            rules.append(_open(state, function.get("catalogName")))
    return [i for i, ok in enumerate(await _decide(state, meta, actor, rules)) if ok]


def _object(value: Any) -> Mapping[str, Any]:
    """A part of Trino's input that should be an object; anything else counts as empty (denied)."""
    return value if isinstance(value, Mapping) else {}


def _user_of(resource: Any) -> str | None:
    user = _object(resource).get("user")
    return user.get("user") if isinstance(user, Mapping) else None


# ------------------------------------------------------------ operations -> rules


def _rule(
    state: AppState, actor: Actor, operation: str, resource: Mapping[str, Any], target: Mapping[str, Any]
) -> Rule:
    if operation in ALWAYS:
        return True
    if operation in NEVER:
        return False
    if operation in ("ImpersonateUser", "ViewQueryOwnedBy", "KillQueryOwnedBy"):
        return _user_of(resource) == actor.name  # only oneself
    if operation in ("AccessCatalog", "ShowSchemas"):
        catalog = _object(resource.get("catalog")).get("name")
        return _catalog_rule(state, catalog, "get_config" if operation == "AccessCatalog" else "list_namespaces")
    if operation == "SetCatalogSessionProperty":
        return _catalog_rule(state, _object(resource.get("catalogSessionProperty")).get("catalogName"), "get_config")
    schema = _object(resource.get("schema"))
    if operation == "CreateSchema":
        return _create_schema_rule(state, schema.get("catalogName"), schema.get("schemaName"))
    if operation in ("DropSchema", "ShowCreateSchema", "ShowTables"):
        action = {"DropSchema": "delete", "ShowCreateSchema": "get_metadata", "ShowTables": "list_tables"}[operation]
        return _schema_rule(state, schema.get("catalogName"), schema.get("schemaName"), action)
    if operation == "ShowFunctions":
        return _open(state, schema.get("catalogName"))
    table = _object(resource.get("table"))
    if operation in TABLE_ACTIONS:
        return _table_rule(state, table, *TABLE_ACTIONS[operation])
    if operation in SELECT_OPERATIONS:
        rule = _table_rule(state, table, "read_data", "select")
        columns = table.get("columns") if isinstance(table.get("columns"), list) else []
        if isinstance(rule, list) and len(columns) > 1:
            return rule * len(columns)  # one group per column
        return rule
    if operation in CREATE_ACTIONS:
        return _in_schema_rule(state, table.get("catalogName"), table.get("schemaName"), CREATE_ACTIONS[operation])
    if operation in RENAME_OPERATIONS:
        return _rename_rule(state, table, _object(target.get("table")), *RENAME_OPERATIONS[operation])
    if operation in (
        "ExecuteFunction",
        "CreateViewWithExecuteFunction",
        "ExecuteProcedure",
        "CreateFunction",
        "DropFunction",
        "ShowCreateFunction",
    ):
        return _open(state, _object(resource.get("function")).get("catalogName"))
    return False  # an operation this policy does not know is denied


def _warehouse_name(state: AppState, catalog: Any) -> str | None:
    """The warehouse a Trino catalog stands for (None: an open catalog or a bad name)."""
    if not isinstance(catalog, str) or not catalog or catalog in state.settings.host.trino_opa.open_catalogs:
        return None
    for pair in state.settings.host.trino_opa.catalogs:
        name, _, warehouse = pair.partition("=")
        if name.strip() == catalog:
            return warehouse.strip()
    return catalog


def _open(state: AppState, catalog: Any) -> bool:
    return isinstance(catalog, str) and catalog in state.settings.host.trino_opa.open_catalogs


def _schema_parts(schema: Any) -> tuple[str, ...] | None:
    if not isinstance(schema, str) or not schema:
        return None
    return tuple(schema.split("."))


def _catalog_rule(state: AppState, catalog: Any, action: str) -> Rule:
    if _open(state, catalog):
        return True
    if _warehouse_name(state, catalog) is None:
        return False
    return [[Check("warehouse", action, catalog)]]


def _schema_rule(state: AppState, catalog: Any, schema: Any, action: str) -> Rule:
    if _open(state, catalog):
        return True
    parts = _schema_parts(schema)
    if _warehouse_name(state, catalog) is None or parts is None:
        return False
    if parts == (INFORMATION_SCHEMA,):  # Trino's own view of the catalog, filtered by Trino
        return _catalog_rule(state, catalog, "get_config") if action != "delete" else False
    return [[Check("namespace", action, catalog, parts)]]


def _create_schema_rule(state: AppState, catalog: Any, schema: Any) -> Rule:
    parts = _schema_parts(schema)
    if _open(state, catalog):
        return True
    if parts is None or _warehouse_name(state, catalog) is None:
        return False
    if len(parts) == 1:
        return [[Check("warehouse", "create_namespace", catalog)]]
    return [[Check("namespace", "create_namespace", catalog, parts[:-1])]]


def _in_schema_rule(state: AppState, catalog: Any, schema: Any, actions: Iterable[str]) -> Rule:
    if _open(state, catalog):
        return True
    parts = _schema_parts(schema)
    if parts is None or _warehouse_name(state, catalog) is None or parts == (INFORMATION_SCHEMA,):
        return False
    return [[Check("namespace", action, catalog, parts)] for action in actions]


def _table_rule(state: AppState, table: Mapping[str, Any], action: str, view_action: str | None) -> Rule:
    catalog = table.get("catalogName")
    if _open(state, catalog):
        return True
    parts = _schema_parts(table.get("schemaName"))
    name = table.get("tableName")
    if parts is None or not isinstance(name, str) or not name or _warehouse_name(state, catalog) is None:
        return False
    if parts == (INFORMATION_SCHEMA,):
        return _catalog_rule(state, catalog, "get_config") if action in ("get_metadata", "read_data") else False
    # Iceberg's metadata tables ("orders$snapshots") are read as their table is
    name = name.split("$", 1)[0]
    if view_action is None:
        return [[Check("table", action, catalog, parts, name)]]
    return [[Check("tabular", action, catalog, parts, name, view_action)]]


def _rename_rule(
    state: AppState,
    source: Mapping[str, Any],
    target: Mapping[str, Any],
    action: str,
    view_action: str | None,
    target_action: str,
) -> Rule:
    if source.get("catalogName") != target.get("catalogName"):
        return False  # a rename never leaves its warehouse
    rule = _table_rule(state, source, action, view_action)
    if not isinstance(rule, list):
        return rule
    destination = _in_schema_rule(state, target.get("catalogName"), target.get("schemaName"), (target_action,))
    if not isinstance(destination, list):
        return destination and rule
    return rule + destination


# ------------------------------------------------------------ rules -> decisions


async def _decide(state: AppState, meta: RequestMetadata, actor: Actor, rules: Sequence[Rule]) -> list[bool]:
    """Every rule decided, with each distinct check asked once (one authorizer batch per action)."""
    checks = {check for rule in rules if isinstance(rule, list) for group in rule for check in group}
    answers = await _answer(state, meta, actor, checks)
    return [rule if isinstance(rule, bool) else all(any(answers[c] for c in group) for group in rule) for rule in rules]


async def _answer(state: AppState, meta: RequestMetadata, actor: Actor, checks: set[Check]) -> dict[Check, bool]:
    if not checks:
        return {}
    resolved = await _resolve(state, checks)
    if getattr(state.authorizer, "allows_all", False):  # the allow-all authorizer: what exists is allowed
        return {c: resolved[c] is not None for c in checks}
    by_action: dict[str, list[tuple[Check, Resource]]] = {}
    answers = {c: False for c in checks}
    for check, found in resolved.items():
        if found is not None:
            by_action.setdefault(found[1], []).append((check, found[0]))
    for action, pairs in by_action.items():
        decisions = await actor_allowed_many(state, actor, action, [r for _, r in pairs])
        for (check, _), ok in zip(pairs, decisions, strict=True):
            answers[check] = ok
    return answers


async def _resolve(state: AppState, checks: set[Check]) -> dict[Check, tuple[Resource, str] | None]:
    """Each check's object and the action to ask on it; None when the object does not exist."""
    project_id = state.settings.host.trino_opa.project_id or state.settings.host.default_project_id
    warehouses: dict[str, WarehouseRow | None] = {}
    for catalog in {c.catalog for c in checks}:
        name = _warehouse_name(state, catalog)
        row = await warehouse_store.get_warehouse_by_name(state.store, project_id, name) if name else None
        warehouses[catalog] = row if row is not None and row.is_active else None
    namespaces: dict[tuple[str, tuple[str, ...]], Any] = {}
    for catalog, parts in {(c.catalog, c.schema) for c in checks if c.kind != "warehouse"}:
        warehouse = warehouses[catalog]
        namespaces[(catalog, parts)] = (
            await namespace_store.get_namespace(state.store, warehouse.id, parts) if warehouse else None
        )
    # the tables and views named in each schema, one query per schema
    names: dict[tuple[str, tuple[str, ...]], set[str]] = {}
    for check in checks:
        if check.kind in ("table", "tabular") and check.name:
            names.setdefault((check.catalog, check.schema), set()).add(check.name)
    tabulars: dict[tuple[str, tuple[str, ...]], dict[str, TabularRow]] = {}
    for (catalog, parts), wanted in names.items():
        warehouse = warehouses[catalog]
        found = namespaces[(catalog, parts)] is not None and warehouse is not None
        tabulars[(catalog, parts)] = (
            await tabular_store.find_tabulars_by_name(state.store, warehouse.id, parts, wanted) if found else {}
        )
    resolved: dict[Check, tuple[Resource, str] | None] = {}
    for check in checks:
        warehouse = warehouses[check.catalog]
        if warehouse is None:
            resolved[check] = None
        elif check.kind == "warehouse":
            resolved[check] = (Resource("warehouse", warehouse.id, warehouse.id), check.action)
        elif check.kind == "namespace":
            namespace = namespaces[(check.catalog, check.schema)]
            resolved[check] = (Resource("namespace", namespace.id, warehouse.id), check.action) if namespace else None
        else:
            row = tabulars.get((check.catalog, check.schema), {}).get((check.name or "").casefold())
            if row is None or row.typ not in ("table", "view") or (check.kind == "table" and row.typ != "table"):
                resolved[check] = None
            elif row.typ == "view":
                resolved[check] = (Resource("view", row.id, warehouse.id), check.view_action or check.action)
            else:
                resolved[check] = (Resource("table", row.id, warehouse.id), check.action)
    return resolved
