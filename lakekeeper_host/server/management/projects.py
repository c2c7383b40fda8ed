"""Project resolution, bootstrap and project management."""

from __future__ import annotations

from typing import Any

from lakekeeper_host.errors import CatalogError, bad_request, project_not_found
from lakekeeper_host.ids import new_id
from lakekeeper_host.server.authorize import authorize, authorize_project, created, deleted, visible
from lakekeeper_host.server.resolve import resolve_project_id
from lakekeeper_host.service.authz import Resource
from lakekeeper_host.service.request import RequestMetadata
from lakekeeper_host.service.state import AppState
from lakekeeper_host.store import projects as project_store
from lakekeeper_host.store import statistics as stats_store
from lakekeeper_host.store import tasks as task_store
from lakekeeper_host.store import warehouses as warehouse_store
from lakekeeper_host.store.projects import ProjectRow

DEFAULT_PROJECT_NAME = "Default Project"


# ------------------------------------------------ new projects (bootstrap: server/management/bootstrap.py)


async def after_project_created(state: AppState, meta: RequestMetadata, project_id: str) -> None:
    """A new project's housekeeping task; the authorizer makes its creator the project admin."""
    from lakekeeper_host.server.management.tasks import ensure_task_log_cleanup

    await ensure_task_log_cleanup(state, project_id)
    await created(state, meta, "project", project_id, None)


# ---------------------------------------------------------------- CRUD


async def create_project(state: AppState, meta: RequestMetadata, name: str, explicit_id: str | None) -> str:
    if not isinstance(name, str) or not name.strip():
        raise bad_request(
            "Invalid request body: project-name must not be empty @ body.project-name", "EmptyProjectName"
        )
    project_id = resolve_project_id(state, None, explicit_id) if explicit_id else new_id()

    await authorize(state, meta, "create_project", "server", state.server_id or "server")
    if not await project_store.create_project(state.store, project_id, name):
        raise CatalogError(409, "ProjectIdAlreadyExists", f"Project {project_id} already exists")
    await after_project_created(state, meta, project_id)
    return project_id


async def get_project(state: AppState, meta: RequestMetadata, project_id: str) -> ProjectRow:
    await authorize_project(state, meta, "get_metadata", project_id)
    project = await project_store.get_project(state.store, project_id)
    if project is None:
        raise project_not_found(project_id)
    return project


async def list_projects(state: AppState, meta: RequestMetadata) -> list[ProjectRow]:
    projects = await project_store.list_projects(state.store)
    return await visible(state, meta, projects, lambda p: Resource("project", p.id))


async def rename_project(state: AppState, meta: RequestMetadata, project_id: str, new_name: Any) -> None:
    if not isinstance(new_name, str) or not new_name.strip():
        raise bad_request("Invalid request body: new-name must be a non-empty string @ body.new-name")
    await authorize_project(state, meta, "rename", project_id)
    if not await project_store.rename_project(state.store, project_id, new_name):
        raise project_not_found(project_id)


async def delete_project(state: AppState, meta: RequestMetadata, project_id: str) -> None:
    """Refused while the project has warehouses; its tasks, task logs and statistics go with it."""
    await authorize_project(state, meta, "delete", project_id)
    async with state.store.transaction() as tx:
        if await project_store.get_project(tx, project_id) is None:
            raise project_not_found(project_id)
        if await warehouse_store.list_warehouses(tx, project_id):
            raise CatalogError(
                409, "ProjectNotEmpty", f"Project {project_id} still has warehouses; delete them first"
            )
        await task_store.delete_project_tasks(tx, project_id)
        await stats_store.delete_project_statistics(tx, project_id)
        await project_store.delete_project(tx, project_id)
    await deleted(state, "project", [project_id])
