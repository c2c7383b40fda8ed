"""``/swagger-ui`` and the OpenAPI documents of the catalog and management APIs.

The documents are generated from the routes the server actually mounts (path, methods, and the
first docstring line of each view), so they never drift from what is served. What a URL rule
cannot say (query parameters, headers, success statuses) comes from the small tables below, kept
next to the handlers' reads; ``tests/host/test_openapi.py`` compares them with the handlers'
source. Request and answer bodies are described by the classes the server parses with (attrs
classes, the registered storage profiles and credentials, pyiceberg's REST models; see
``openapi_schemas.py``), and the tests validate real requests and answers against them.
Swagger UI's assets come from the ``swagger-ui-bundle`` package: no network needed.
"""

from __future__ import annotations

import importlib
import inspect
import re
from typing import Any

from quart import Blueprint, current_app, send_from_directory

from lakekeeper_host import __version__
from lakekeeper_host.api import idempotency as idempotency_api
from lakekeeper_host.api import reads
from lakekeeper_host.api.common import json_response, state
from lakekeeper_host.api.management_actions import ACTION_OBJECTS
from lakekeeper_host.api.management_grants import GRANT_OBJECTS
from lakekeeper_host.api.management_permissions import PERMISSION_MANAGED_ACCESS, PERMISSION_OBJECTS
from lakekeeper_host.api.openapi_schemas import ERROR_SCHEMAS, Schemas, reachable
from lakekeeper_host.errors import not_found
from lakekeeper_host.registry import Registry

blueprint = Blueprint("docs", __name__)

DOCUMENTS = {
    "catalog": ("/catalog/", "Lakekeeper Iceberg REST Catalog API"),
    "management": ("/management/", "Lakekeeper Management API"),
    "generic-table": ("/lakekeeper/", "Lakekeeper Generic Table API"),
    "trino-opa": ("/trino/", "Lakekeeper Trino OPA policy API"),
}
# documents of routes that take no bearer token (Trino sends none; the key in the path is the credential)
TOKENLESS = frozenset({"trino-opa"})
_PARAM = re.compile(r"<(?:[a-z]+:)?([a-zA-Z_]+)>")
_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>Lakekeeper API</title>
<link rel="stylesheet" href="/swagger-ui/assets/swagger-ui.css"></head>
<body><div id="swagger-ui"></div>
<script src="/swagger-ui/assets/swagger-ui-bundle.js"></script>
<script src="/swagger-ui/assets/swagger-ui-standalone-preset.js"></script>
<script>
window.ui = SwaggerUIBundle({
  urls: [{url: "/api-docs/catalog/v1/openapi.json", name: "Iceberg REST Catalog"},
         {url: "/api-docs/management/v1/openapi.json", name: "Management"},
         {url: "/api-docs/generic-table/v1/openapi.json", name: "Generic Table"},
         {url: "/api-docs/trino-opa/v1/openapi.json", name: "Trino OPA policy"}],
  dom_id: "#swagger-ui", presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
  layout: "StandaloneLayout"});
</script></body></html>"""

# ---------------------------------------------------------------- what every failure answers

_ERROR_REF = {"$ref": "#/components/responses/IcebergErrorResponse"}
COMPONENTS: dict[str, Any] = {
    "schemas": ERROR_SCHEMAS,
    "responses": {
        "IcebergErrorResponse": {
            "description": "Error (see ErrorModel)",
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/IcebergErrorResponse"}}},
        },
    },
}


# ---------------------------------------------------------------- parameters the handlers read

def _query(name: str, schema: dict[str, Any], description: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "schema": schema, "description": description, **extra}


def _header(name: str, description: str, **schema: Any) -> dict[str, Any]:
    return {"name": name, "in": "header", "required": False, "schema": {"type": "string", **schema},
            "description": description}


_BOOL = {"type": "boolean", "default": False}
_LIST_OF_STRINGS = {"type": "array", "items": {"type": "string"}}


PARAMETERS: dict[str, dict[str, Any]] = {
    "pageToken": _query("pageToken", {"type": "string"}, "Continue a listing: the previous page's next-page-token"),
    "pageSize": _query("pageSize", {"type": "integer", "minimum": 1},
                       "Entries per page (default PAGINATION_SIZE_DEFAULT, capped at PAGINATION_SIZE_MAX)"),
    "page_token": _query("page_token", {"type": "string"}, "Older spelling of pageToken", deprecated=True),
    "page_size": _query("page_size", {"type": "integer", "minimum": 1}, "Older spelling of pageSize",
                        deprecated=True),
    "warehouse": _query("warehouse", {"type": "string"},
                        "Warehouse name (in the x-project-id project); the answer then carries its prefix"),
    "parent": _query("parent", {"type": "string"},
                     "List the children of this namespace (levels joined by the unit separator %1F)"),
    "returnUuids": _query("returnUuids", _BOOL, "Also return the id of every entry"),
    "returnProtectionStatus": _query("returnProtectionStatus", _BOOL,
                                     "Also return whether each entry is protected from deletion"),
    "returnUuid": _query("returnUuid", _BOOL, "Also return the namespace id"),
    "snapshots": _query("snapshots", {"type": "string", "enum": ["all", "refs"], "default": "all"},
                        "`refs`: only the snapshots a branch or tag references"),
    "recursive": _query("recursive", _BOOL, "Drop everything below the namespace too"),
    "purge": _query("purge", _BOOL, "With recursive: also delete the data files of the dropped tables and views"),
    "purgeRequested": _query("purgeRequested", {"type": "boolean", "default": True},
                             "Delete the data files too (every table here is managed, so this defaults to true)"),
    "force": _query("force", _BOOL, "Proceed although the entity is protected (and skip soft deletion)"),
    "name": _query("name", {"type": "string"}, "Only users whose name contains this text"),
    "projectId": _query("projectId", {"type": "string"}, "Project to list in (default: x-project-id)"),
    "roleIds": _query("roleIds", _LIST_OF_STRINGS, "Only these roles (repeated or comma-separated)"),
    "sourceIds": _query("sourceIds", _LIST_OF_STRINGS, "Only roles with these source-system ids"),
    "providerIds": _query("providerIds", _LIST_OF_STRINGS, "Only roles from these providers"),
    "memberType": _query("type", {"type": "string", "enum": ["user", "role"]}, "Only members of this kind"),
    "warehouseStatus": _query("warehouseStatus", {"type": "array", "items": {"type": "string",
                              "enum": ["active", "inactive"]}}, "Statuses to include (default: active)"),
    "namespaceId": _query("namespaceId", {"type": "string"}, "Only entries directly in this namespace"),
    "reportType": _query("type", {"type": "string", "enum": ["scan", "commit"]}, "Only reports of this kind"),
    "snapshotId": _query("snapshot-id", {"type": "integer"}, "Only reports about this snapshot"),
    "createdAfter": _query("created-after", {"type": "string", "format": "date-time"},
                           "Only reports received after this instant"),
    "createdBefore": _query("created-before", {"type": "string", "format": "date-time"},
                            "Only reports received before this instant"),
    "readSnapshotId": _query("snapshotId", {"type": "integer"}, "Read this snapshot (default: the current one)"),
    "ref": _query("ref", {"type": "string"}, "Read the head of this branch or tag"),
    "numAttempts": _query("numAttempts", {"type": "integer", "minimum": 0}, "How many past attempts to include"),
    "principalUser": _query("principalUser", {"type": "string"},
                            "Show the access of this user instead of the caller's (needs read_assignments)"),
    "principalRole": _query("principalRole", {"type": "string"},
                            "Show the access of this role's assignees (needs read_assignments)"),
    "relations": _query("relations", _LIST_OF_STRINGS, "Only assignments of these relations (repeated or "
                        "comma-separated)"),
    # headers
    "projectIdHeader": _header("x-project-id", "Project to act in (default: the server's default project)"),
    "accessDelegation": _header(
        "X-Iceberg-Access-Delegation",
        "How the client wants to reach the data: comma-separated vended-credentials, remote-signing",
    ),
    "ifNoneMatch": _header("If-None-Match", "ETag of a copy the client holds: 304 when it is still current"),
    "idempotencyKey": _header(
        "Idempotency-Key", "Retry-safe key: a repeated request replays the first outcome", format="uuid"
    ),
}

PATH_PARAMETERS = {
    "prefix": "Warehouse id: the prefix GET /catalog/v1/config?warehouse=<name> answers",
    "namespace": "Namespace, levels joined by %1F (unit separator), percent-encoded",
    "table": "Table name, percent-encoded",
    "view": "View name, percent-encoded",
    "generic_table_id": "Generic table id",
    "key": "The Trino policy key (LAKEKEEPER__TRINO_OPA__KEY): these routes' credential; without one "
           "configured they answer 404",
}
_PAGING = ("pageToken", "pageSize")
_LISTING = (*_PAGING, "returnUuids", "returnProtectionStatus")
# the query parameters each endpoint's handler reads (the HEAD of a read route reads none)
QUERY: dict[str, tuple[str, ...]] = {
    "catalog.get_config": ("warehouse",),
    "catalog.list_namespaces": ("parent", *_LISTING),
    "catalog.load_namespace": ("returnUuid",),
    "catalog.drop_namespace": ("recursive", "force", "purge"),
    "catalog.list_tables": _LISTING,
    "catalog.load_table": ("snapshots",),
    "catalog.drop_table": ("purgeRequested", "force"),
    "views.list_views": _LISTING,
    "views.drop_view": ("purgeRequested", "force"),
    "generic_tables.list_generic_tables": _PAGING,
    "generic_tables.drop_generic_table": ("purgeRequested", "force"),
    "management_users.list_users": ("name", *_PAGING),
    "management_users.get_user_roles": _PAGING,
    "management_users.get_user_roles_transitive": _PAGING,
    "management_users.list_roles": (*_PAGING, "roleIds", "sourceIds", "providerIds", "projectId"),
    "management_users.list_role_members": (*_PAGING, "memberType"),
    "management_users.list_role_members_transitive": (*_PAGING, "memberType"),
    "management_users.list_member_of": _PAGING,
    "management_users.list_member_of_transitive": _PAGING,
    "management_warehouses.list_warehouses": ("warehouseStatus", "projectId"),
    "management_warehouses.delete_warehouse": ("force",),
    "management_warehouses.warehouse_statistics": (*_PAGING, "page_token", "page_size"),
    "management_warehouses.list_deleted_tabulars": ("namespaceId", *_PAGING),
    "metrics_reports.list_table_metrics": ("reportType", "snapshotId", "createdAfter", "createdBefore", *_PAGING),
    "table_data.preview_table": ("readSnapshotId", "ref", *_PAGING),
    "table_data.table_column_statistics": ("readSnapshotId", "ref"),
    "management_tasks.get_task": ("numAttempts",),
    "management_tasks.get_project_task": ("numAttempts",),
    **{f"management_permissions.{name}_access": ("principalUser", "principalRole")
       for name in PERMISSION_OBJECTS},
    **{f"management_permissions.{name}_assignments": ("relations",) for name in PERMISSION_OBJECTS},
    **{f"management_actions.{name}": ("principalUser", "principalRole") for name in ACTION_OBJECTS},
    "management_grants.list_principal_grants": ("principalUser", "principalRole"),
    **{f"management_grants.{name}_grants": ("principalUser", "principalRole", *_PAGING) for name in GRANT_OBJECTS},
    **{f"management_grants.{name}_grantable_privileges": ("principalUser", "principalRole")
       for name in GRANT_OBJECTS},
}
# handlers that read X-Iceberg-Access-Delegation (they vend credentials or sign for the table)
ACCESS_DELEGATION = frozenset({
    "catalog.create_table", "catalog.register_table", "catalog.load_table", "catalog.commit_table",
    "views.create_view", "views.load_view", "views.replace_view", "views.register_view",
    "credentials.load_credentials", "scan_planning.plan_table_scan",
    "generic_tables.load_generic_table", "generic_tables.load_generic_table_credentials",
})
CONDITIONAL = frozenset({"catalog.load_table"})  # reads If-None-Match

# success statuses other than a plain 200 (the HEAD of a read route answers 204)
SUCCESS: dict[str, tuple[int, ...]] = {
    "catalog.load_table": (200, 304),
    **dict.fromkeys((
        "catalog.drop_namespace", "catalog.drop_table", "catalog.rename_table", "catalog.report_metrics",
        "catalog.commit_transaction", "views.drop_view", "views.rename_view", "scan_planning.cancel_planning",
        "generic_tables.drop_generic_table", "generic_tables.rename_generic_table",
        "management.bootstrap", "management.delete_project", "management.delete_project_by_id",
        "management_maintenance.delete_table_maintenance", "management_tasks.set_queue_config",
        "management_tasks.control_tasks", "management_tasks.set_project_queue_config",
        "management_tasks.control_project_tasks", "management_users.delete_user", "management_users.delete_role",
        "management_users.remove_role_member", "management_warehouses.delete_warehouse",
        "management_warehouses.undrop_tabulars",
        *(f"management_permissions.{name}_update_assignments" for name in PERMISSION_OBJECTS),
        *(f"management_grants.{name}_apply_grants" for name in GRANT_OBJECTS),
    ), (204,)),
    **dict.fromkeys(("management.create_project", "management_users.create_role",
                     "management_warehouses.create_warehouse"), (201,)),
    "management_users.create_user": (201, 200),  # 200: the user existed already
    **dict.fromkeys(("management_maintenance.run_table_maintenance",
                     "management_maintenance.run_warehouse_maintenance"), (202,)),
}
# ---------------------------------------------------------------- bodies and answers

# endpoint -> the body it reads: a schema name (Schemas.named) or an attrs class
# (handlers that structure their body themselves are found in their source, see _body_model)
REQUEST_BODIES: dict[str, str | tuple[str, str]] = {
    "catalog.create_namespace": "CreateNamespaceRequest",
    "catalog.update_namespace_properties": "UpdateNamespacePropertiesRequest",
    "catalog.create_table": "CreateTableRequest",
    "catalog.register_table": "RegisterTableRequest",
    "catalog.commit_table": "CommitTableRequest",
    "catalog.rename_table": "RenameTableRequest",
    "catalog.report_metrics": "ReportMetricsRequest",
    "catalog.commit_transaction": "CommitTransactionRequest",
    "views.create_view": "CreateViewRequest",
    "views.register_view": "RegisterViewRequest",
    "views.replace_view": "CommitViewRequest",
    "views.rename_view": "RenameTableRequest",
    "generic_tables.create_generic_table": "CreateGenericTableRequest",
    "generic_tables.rename_generic_table": "RenameGenericTableRequest",
    "scan_planning.plan_table_scan": "PlanTableScanRequest",
    "scan_planning.fetch_scan_tasks": "FetchScanTasksRequest",
    **dict.fromkeys(("s3_signer.sign_global", "s3_signer.sign_in_warehouse", "s3_signer.sign_for_table"),
                    ("lakekeeper_host.server.security.signer", "SignRequest")),
    "management_warehouses.validate_warehouse_creation":
        ("lakekeeper_host.server.warehouses.create", "CreateWarehouse"),
    "management_warehouses.set_format_version_policy":
        ("lakekeeper_host.server.warehouses.settings", "FormatVersionPolicy"),
    **dict.fromkeys(("management_warehouses.update_storage", "management_warehouses.validate_storage_profile"),
                    ("lakekeeper_host.server.warehouses.storage", "UpdateStorage")),
    **dict.fromkeys(
        ("management_warehouses.update_storage_credential", "management_warehouses.validate_storage_credential"),
        ("lakekeeper_host.server.warehouses.storage", "UpdateCredential"),
    ),
    "management_maintenance.set_table_maintenance": ("lakekeeper_host.engines.spark_maintenance", "MaintenancePolicy"),
    **{f"management_permissions.{name}_update_assignments": "UpdateAssignmentsRequest"
       for name in PERMISSION_OBJECTS},
    **{f"management_permissions.{name}_set_managed_access": "SetManagedAccessRequest"
       for name in PERMISSION_MANAGED_ACCESS},
    "management_permissions.check": "CheckRequest",
    "management_actions.batch_check": "BatchCheckRequest",
    **{f"management_grants.{name}_apply_grants": "ApplyGrantsRequest" for name in GRANT_OBJECTS},
    "trino_opa.allow": "TrinoOpaRequest",
    "trino_opa.batch": "TrinoOpaRequest",
}
# endpoint -> the schema of its answer (Schemas.named): a pyiceberg model, what PyIceberg's
# RestCatalog parses, or one of the Management API's answers
RESPONSES: dict[str, str | tuple[str, ...]] = {
    "management.info": "ServerInfo",
    "management.create_project": "CreateProjectResponse",
    "management.list_projects": "ProjectList",
    "management.get_project": "Project",
    "management.get_project_by_id": "Project",
    "management_warehouses.create_warehouse": "Warehouse",
    "management_warehouses.get_warehouse": "Warehouse",
    "management_warehouses.list_warehouses": "WarehouseList",
    "management_users.whoami": "User",
    "management_users.create_user": "User",
    "management_users.get_user": "User",
    "management_users.list_users": "UserList",
    "management_users.create_role": "Role",
    "management_users.get_role": "Role",
    "management_users.list_roles": "RoleList",
    "management_users.search_user": "SearchUserList",
    "management_users.search_role": "SearchRoleList",
    **dict.fromkeys(("management_users.update_role", "management_users.update_role_source_system"), "Role"),
    "management_users.get_role_metadata": "RoleMetadata",
    **dict.fromkeys(("management_users.get_user_roles", "management_users.get_user_roles_transitive",
                     "management_users.list_member_of", "management_users.list_member_of_transitive"),
                    "RoleMembershipList"),
    **dict.fromkeys(("management_users.list_role_members", "management_users.list_role_members_transitive"),
                    "RoleMemberList"),
    "management_users.add_role_members": "AddedRoleMembers",
    **dict.fromkeys((
        "management_warehouses.rename_warehouse", "management_warehouses.set_delete_profile",
        "management_warehouses.set_format_version_policy", "management_warehouses.update_storage",
        "management_warehouses.update_storage_credential",
    ), "Warehouse"),
    **dict.fromkeys((
        "management_warehouses.get_warehouse_protection", "management_warehouses.set_warehouse_protection",
        "management_warehouses.get_table_protection", "management_warehouses.set_table_protection",
        "management_warehouses.get_view_protection", "management_warehouses.set_view_protection",
        "management_warehouses.get_namespace_protection", "management_warehouses.set_namespace_protection",
        "management_warehouses.get_generic_table_protection", "management_warehouses.set_generic_table_protection",
    ), "Protection"),
    **dict.fromkeys((
        "management_warehouses.validate_warehouse_creation", "management_warehouses.validate_storage_profile",
        "management_warehouses.validate_storage_credential", "management_warehouses.validate_storage_access",
    ), "ValidationReport"),
    "management_warehouses.list_deleted_tabulars": "DeletedTabularList",
    "management_warehouses.search_tabular": "SearchTabularList",
    "management_warehouses.search_namespace": "SearchNamespaceList",
    "table_data.preview_table": "TablePreview",
    "table_data.table_column_statistics": "ColumnStatistics",
    "management_warehouses.move_namespace": "MovedNamespace",
    "management_warehouses.warehouse_statistics": "WarehouseStatistics",
    "management_statistics.endpoint_statistics": "EndpointStatistics",
    **dict.fromkeys(("management_tasks.get_queue_config", "management_tasks.get_project_queue_config"),
                    "QueueConfig"),
    "management_tasks.schedule_task": "ScheduledTask",
    **dict.fromkeys(("management_tasks.list_tasks", "management_tasks.list_project_tasks"), "TaskList"),
    **dict.fromkeys(("management_tasks.get_task", "management_tasks.get_project_task"), "TaskDetails"),
    **dict.fromkeys(("management_maintenance.get_table_maintenance", "management_maintenance.set_table_maintenance"),
                    "TableMaintenance"),
    "management_maintenance.run_table_maintenance": "MaintenanceRun",
    "management_maintenance.run_warehouse_maintenance": "MaintenanceRuns",
    "metrics_reports.list_table_metrics": "TableMetricsReports",
    "plugins_listing.plugins": "PluginList",
    "catalog.get_config": "ConfigResponse",
    "catalog.list_namespaces": "ListNamespaceResponse",
    "catalog.create_namespace": "NamespaceResponse",
    "catalog.load_namespace": "NamespaceResponse",
    "catalog.update_namespace_properties": "UpdateNamespacePropertiesResponse",
    "catalog.list_tables": "ListTablesResponse",
    "catalog.create_table": "TableResponse",
    "catalog.register_table": "TableResponse",
    "catalog.load_table": "TableResponse",
    "catalog.commit_table": "CommitTableResponse",
    "credentials.load_credentials": "LoadCredentialsResponse",
    "views.list_views": "ListViewsResponse",
    "views.create_view": "ViewResponse",
    "views.register_view": "ViewResponse",
    "views.load_view": "ViewResponse",
    "views.replace_view": "ViewResponse",
    "generic_tables.list_generic_tables": "ListGenericTablesResponse",
    **dict.fromkeys(("generic_tables.create_generic_table", "generic_tables.load_generic_table"),
                    "LoadGenericTableResponse"),
    "generic_tables.load_generic_table_credentials": "LoadGenericTableCredentialsResponse",
    "scan_planning.plan_table_scan": ("PlanCompleted", "PlanSubmitted"),
    "scan_planning.fetch_planning_result": ("PlanCompleted", "PlanSubmitted", "PlanCancelled", "PlanFailed"),
    "scan_planning.fetch_scan_tasks": "ScanTasks",
    **{f"management_permissions.{name}_access": "AllowedActions" for name in PERMISSION_OBJECTS},
    **{f"management_permissions.{name}_assignments": "Assignments" for name in PERMISSION_OBJECTS},
    **{f"management_permissions.{name}_{op}": "ManagedAccess"
       for name in PERMISSION_MANAGED_ACCESS for op in ("properties", "managed_access")},
    "management_permissions.check": "CheckResponse",
    "management_actions.batch_check": "BatchCheckResponse",
    **{f"management_actions.{name}": "AllowedActions" for name in ACTION_OBJECTS},
    "management_grants.grantable_privileges": "PrivilegeVocabulary",
    "management_grants.list_principal_grants": "Grants",
    **{f"management_grants.{name}_grants": "Grants" for name in GRANT_OBJECTS},
    **{f"management_grants.{name}_grantable_privileges": "GrantablePrivileges" for name in GRANT_OBJECTS},
    "trino_opa.allow": "TrinoOpaDecision",
    "trino_opa.batch": "TrinoOpaFilterResult",
    **dict.fromkeys(("s3_signer.sign_global", "s3_signer.sign_in_warehouse", "s3_signer.sign_for_table"),
                    "S3SignResponse"),
}
_STRUCTURED = re.compile(r"structure_body\(\s*await json_body\(\)\s*,\s*([\w.]+)\s*\)")


def _body_model(endpoint: str, view: Any) -> Any:
    """What the handler's body is parsed into; ``{}`` (any JSON) when it reads one by hand, None
    when it reads none."""
    known = REQUEST_BODIES.get(endpoint)
    if isinstance(known, tuple):
        module, name = known
        return getattr(importlib.import_module(module), name)
    if known is not None:
        return known
    if view is None:
        return None
    source = inspect.getsource(inspect.unwrap(view))
    structured = _STRUCTURED.search(source)
    if structured:
        target: Any = inspect.unwrap(view).__globals__
        first, *rest = structured.group(1).split(".")
        target = target[first]
        for part in rest:
            target = getattr(target, part)
        return target
    return {} if "json_body()" in source else None


def _schema(schemas: Schemas, model: Any) -> dict[str, Any]:
    if isinstance(model, str):
        return schemas.named(model)
    return schemas.of(model) if model != {} else {"type": "object"}


def _storage_schemas(schemas: Schemas, registry: Registry) -> dict[str, dict[str, Any]]:
    """``storage-profile`` / ``storage-credential``: one of the registered storage types."""
    profiles, credentials = [], []
    for spec in registry.unique(registry.storage):
        tag = {"type": "object", "properties": {"type": {"const": spec.storage_type}}}
        profiles.append({"allOf": [{**tag, "required": ["type"]}, schemas.of(spec.profile_cls)]})
        if spec.credential_cls is not None:  # the credential's own `type` may be left out
            credentials.append({"allOf": [tag, schemas.of(spec.credential_cls)]})
    profile = schemas.add("StorageProfile", {"oneOf": profiles, "description": "A storage profile, by `type`"})
    credential = schemas.add(
        "StorageCredential", {"oneOf": credentials, "description": "Credentials for the profile's `type`"}
    )
    return {"storage_profile": profile, "storage_credential": credential, "new_storage_credential": credential}


_STATUS_TEXT = {200: "OK", 201: "Created", 202: "Accepted", 204: "No Content",
                304: "Not Modified: the If-None-Match ETag is still current"}


def _ref(key: str) -> dict[str, str]:
    return {"$ref": f"#/components/parameters/{key}"}


def _idempotent(view: Any) -> bool:
    """Wrapped by ``@idempotent`` (``api/idempotency.py``), so the route honours Idempotency-Key."""
    return inspect.unwrap(view) is not view and view.__code__.co_filename == idempotency_api.__file__


def _lane_head_routes() -> dict[str, str]:
    """Quart rule -> operationId of the existence checks the read lane answers for HEAD."""
    return {
        route.rule: _camel(route.handler.__name__.removeprefix("load_") + "_exists")
        for route in reads.ROUTES if "HEAD" in route.methods
    }


def _camel(snake: str) -> str:
    first, *rest = snake.split("_")
    return first + "".join(word.capitalize() for word in rest)


def _operation(
    rule: Any, view: Any, method: str, head_id: str | None, operation_ids: set[str], schemas: Schemas
) -> dict[str, Any]:
    endpoint = rule.endpoint
    doc = (view.__doc__ or "").strip().splitlines() if view and method != "head" else []
    keys: list[dict[str, str]] = []
    if method != "head":
        keys += [_ref(key) for key in QUERY.get(endpoint, ())]
        if endpoint in ACCESS_DELEGATION:
            keys.append(_ref("accessDelegation"))
        if endpoint in CONDITIONAL:
            keys.append(_ref("ifNoneMatch"))
        if view is not None and _idempotent(view):
            keys.append(_ref("idempotencyKey"))
    statuses = (204,) if method == "head" else SUCCESS.get(endpoint, (200,))
    operation_id = head_id if method == "head" and head_id else _camel(endpoint.split(".", 1)[1])
    unique, n = operation_id, 1
    while unique in operation_ids:  # one handler on several paths (e.g. /project and /default-project)
        n += 1
        unique = f"{operation_id}{n}"
    operation_ids.add(unique)
    responses: dict[str, Any] = {str(status): {"description": _STATUS_TEXT[status]} for status in statuses}
    answer = RESPONSES.get(endpoint) if method != "head" else None
    if answer is not None:
        names = answer if isinstance(answer, tuple) else (answer,)
        choices = [schemas.named(name) for name in names]
        schema = choices[0] if len(choices) == 1 else {"oneOf": choices}
        for status in statuses:
            if status in (200, 201, 202):
                responses[str(status)]["content"] = {"application/json": {"schema": schema}}
    operation: dict[str, Any] = {
        "summary": doc[0] if doc else re.sub(r"([A-Z])", r" \1", operation_id).capitalize(),
        "operationId": unique,
        "tags": [endpoint.split(".")[0]],
        "parameters": [
            *({"name": name, "in": "path", "required": True, "schema": {"type": "string"},
               **({"description": PATH_PARAMETERS[name]} if name in PATH_PARAMETERS else {})}
              for name in _PARAM.findall(rule.rule)),
            *keys,
            _ref("projectIdHeader"),
        ],
        "responses": {**responses, "4XX": _ERROR_REF, "5XX": _ERROR_REF},
    }
    model = _body_model(endpoint, view) if method in ("post", "put") else None
    if model is not None:
        operation["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": _schema(schemas, model)}},
        }
    return operation


def _used_parameters(paths: dict[str, dict]) -> dict[str, Any]:
    used = {
        parameter["$ref"].rsplit("/", 1)[1]
        for operations in paths.values() for operation in operations.values()
        for parameter in operation["parameters"] if "$ref" in parameter
    }
    return {key: value for key, value in PARAMETERS.items() if key in used}


def served_document(name: str, *, registry: Registry, authenticated: bool) -> dict:
    """The document ``/api-docs/<name>/v1/openapi.json`` serves (``authenticated``: the server requires
    bearer tokens, which the document then asks for, except on the routes of a TOKENLESS one)."""
    return build_openapi(*DOCUMENTS[name], registry=registry, authenticated=authenticated and name not in TOKENLESS)


def build_openapi(prefix: str, title: str, *, registry: Registry, authenticated: bool) -> dict:
    """The document of the routes under ``prefix`` (inside the app's context; ``lakekeeper
    management-openapi`` builds it without a running server)."""
    head_ids = _lane_head_routes()
    schemas = Schemas()
    schemas.field_overrides = _storage_schemas(schemas, registry)
    paths: dict[str, dict] = {}
    operation_ids: set[str] = set()
    for rule in sorted(current_app.url_map.iter_rules(), key=lambda r: r.rule):
        if not rule.rule.startswith(prefix):
            continue
        view = current_app.view_functions.get(rule.endpoint)
        # Quart adds HEAD to every GET route; only the read lane's existence checks mean it
        methods = (rule.methods or set()) - {"OPTIONS", "HEAD"} or {"HEAD"}
        if rule.rule in head_ids and "GET" in methods:
            methods = methods | {"HEAD"}
        path = _PARAM.sub(r"{\1}", rule.rule)
        for method in sorted(m.lower() for m in methods):
            paths.setdefault(path, {})[method] = _operation(
                rule, view, method, head_ids.get(rule.rule), operation_ids, schemas
            )
    document: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {"title": title, "version": __version__},
        "paths": {path: dict(sorted(ops.items())) for path, ops in sorted(paths.items())},
        "components": {
            **COMPONENTS,
            "schemas": {**COMPONENTS["schemas"], **dict(sorted(schemas.collected.items()))},
            "parameters": _used_parameters(paths),
        },
    }
    used = reachable(document)  # the storage schemas are built for both documents, used by one
    document["components"]["schemas"] = {k: v for k, v in document["components"]["schemas"].items() if k in used}
    if authenticated:
        document["components"]["securitySchemes"] = {"bearerAuth": {"type": "http", "scheme": "bearer"}}
        document["security"] = [{"bearerAuth": []}]
    return document


def _require_enabled() -> None:
    if not state().settings.host.serve_swagger_ui:
        raise not_found("Swagger UI is disabled (LAKEKEEPER__SERVE_SWAGGER_UI=false)")


@blueprint.get("/api-docs/<name>/v1/openapi.json")
async def openapi(name: str):
    """The generated OpenAPI document of one API."""
    _require_enabled()
    if name not in DOCUMENTS:
        raise not_found(f"No API document named {name!r}")
    app_state = state()
    return json_response(served_document(name, registry=app_state.registry,
                                         authenticated=app_state.authenticator is not None))


@blueprint.get("/swagger-ui")
async def swagger_ui():
    """Swagger UI for both APIs."""
    _require_enabled()
    return _PAGE, 200, {"Content-Type": "text/html; charset=utf-8"}


@blueprint.get("/swagger-ui/assets/<path:filename>")
async def swagger_assets(filename: str):
    _require_enabled()
    from swagger_ui_bundle import swagger_ui_path

    return await send_from_directory(swagger_ui_path, filename)
