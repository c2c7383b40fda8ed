"""Management API ``/management/v1``: server, projects, warehouses."""

from __future__ import annotations

from typing import Any

from attrs import frozen
from quart import Blueprint, request

from lakekeeper_host import __version__
from lakekeeper_host.api.common import empty, json_body, json_response, metadata, state
from lakekeeper_host.errors import CatalogError, bad_request, no_such_warehouse
from lakekeeper_host.serde import structure_body
from lakekeeper_host.server.projects import resolve_project_id
from lakekeeper_host.server.warehouses import CreateWarehouse, create_warehouse
from lakekeeper_host.store import new_id
from lakekeeper_host.store import projects as project_store
from lakekeeper_host.store import warehouses as warehouse_store
from lakekeeper_host.store.server import get_or_create_server, mark_bootstrapped
from lakekeeper_host.store.warehouses import WarehouseRow

blueprint = Blueprint("management", __name__, url_prefix="/management/v1")


@frozen
class BootstrapRequest:
    accept_terms_of_use: bool
    is_operator: bool = False
    user_name: str | None = None
    user_email: str | None = None
    user_type: str | None = None


@frozen
class CreateProjectRequest:
    project_name: str
    project_id: str | None = None


@frozen
class RenameRequest:
    new_name: str


def warehouse_json(warehouse: WarehouseRow) -> dict[str, Any]:
    return {
        "id": warehouse.id,
        "warehouse-id": warehouse.id,
        "name": warehouse.name,
        "project-id": warehouse.project_id,
        "storage-profile": warehouse.storage_profile,
        "delete-profile": warehouse.delete_profile,
        "status": warehouse.status,
        "protected": warehouse.protected,
        "allowed-format-versions": warehouse.allowed_format_versions or [1, 2, 3],
        "default-format-version": warehouse.default_format_version or 2,
    }


@blueprint.post("/bootstrap")
async def bootstrap():
    body = structure_body(await json_body(), BootstrapRequest)
    if not body.accept_terms_of_use:
        raise bad_request("You must accept the terms of use (accept-terms-of-use: true)", "TermsOfUseNotAccepted")
    app_state = state()
    if not await mark_bootstrapped(app_state.store):
        raise CatalogError(400, "CatalogAlreadyBootstrapped", "Catalog is already bootstrapped")
    if app_state.settings.host.enable_default_project:
        await project_store.create_project(
            app_state.store, app_state.settings.host.default_project_id, "Default Project"
        )
    return empty(204)


@blueprint.get("/info")
async def info():
    app_state = state()
    server = await get_or_create_server(app_state.store)
    host = app_state.settings.host
    return json_response(
        {
            "version": __version__,
            "lakekeeper-version": __version__,
            "server-id": server.server_id,
            "bootstrapped": server.bootstrapped,
            "default-project-id": host.default_project_id if host.enable_default_project else None,
            "authz-backend": host.authz_backend,
            "aws-system-identities-enabled": False,
            "azure-system-identities-enabled": False,
            "gcp-system-identities-enabled": False,
            "queues": sorted(app_state.registry.task_queues),
        }
    )


@blueprint.post("/project")
async def create_project():
    body = structure_body(await json_body(), CreateProjectRequest)
    if not body.project_name.strip():
        raise bad_request("project-name must not be empty")
    project_id = resolve_project_id(state(), None, body.project_id) if body.project_id else new_id()
    if not await project_store.create_project(state().store, project_id, body.project_name):
        raise CatalogError(409, "ProjectIdAlreadyExists", f"Project {project_id} already exists")
    return json_response({"project-id": project_id}, 201)


@blueprint.get("/project-list")
async def list_projects():
    projects = await project_store.list_projects(state().store)
    return json_response({"projects": [{"project-id": p.id, "project-name": p.name} for p in projects]})


@blueprint.get("/project")
async def get_project():
    project_id = resolve_project_id(state(), metadata().project_id)
    project = await project_store.get_project(state().store, project_id)
    if project is None:
        raise CatalogError(404, "ProjectNotFound", f"Project {project_id} does not exist")
    return json_response({"project-id": project.id, "project-name": project.name})


@blueprint.post("/warehouse")
async def post_warehouse():
    body = await json_body()
    request_obj = structure_body(body, CreateWarehouse)
    project_id = resolve_project_id(state(), metadata().project_id, request_obj.project_id)
    warehouse = await create_warehouse(state(), project_id, request_obj)
    return json_response(warehouse_json(warehouse), 201)


@blueprint.get("/warehouse")
async def get_warehouses():
    project_id = resolve_project_id(state(), metadata().project_id, request.args.get("projectId"))
    statuses = request.args.getlist("warehouseStatus") or ["active"]
    warehouses = await warehouse_store.list_warehouses(state().store, project_id, statuses)
    return json_response({"warehouses": [warehouse_json(w) for w in warehouses]})


@blueprint.get("/warehouse/<warehouse_id>")
async def get_warehouse(warehouse_id: str):
    warehouse = await warehouse_store.get_warehouse(state().store, warehouse_id)
    if warehouse is None:
        raise no_such_warehouse(f"Warehouse {warehouse_id} does not exist")
    return json_response(warehouse_json(warehouse))
