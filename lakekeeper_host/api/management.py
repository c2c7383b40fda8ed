"""Management API ``/management/v1``: server (bootstrap, info) and projects.

Warehouses, tasks and statistics live in the sibling ``management_*`` modules; users, roles and
``whoami`` in ``management_users``.
"""

from __future__ import annotations

from typing import Any

from attrs import frozen
from quart import Blueprint

from lakekeeper_host.api.common import empty, json_body, json_response, metadata, state
from lakekeeper_host.serde import structure_body
from lakekeeper_host.server.management import bootstrap as server_bootstrap
from lakekeeper_host.server.management import projects
from lakekeeper_host.server.management.bootstrap import server_info
from lakekeeper_host.server.resolve import resolve_project_id

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


def project_json(project: Any) -> dict[str, Any]:
    return {"project-id": project.id, "project-name": project.name}


# ---------------------------------------------------------------- server


@blueprint.post("/bootstrap")
async def bootstrap():
    body = structure_body(await json_body(), BootstrapRequest)
    await server_bootstrap.bootstrap(
        state(),
        metadata(),
        accept_terms_of_use=body.accept_terms_of_use,
        is_operator=body.is_operator,
        user_name=body.user_name or None,
        user_email=body.user_email or None,
        user_type=body.user_type,
    )
    return empty(204)


@blueprint.get("/info")
async def info():
    return json_response(await server_info(state()))


# ---------------------------------------------------------------- projects


def current_project_id(explicit: str | None = None) -> str:
    return resolve_project_id(state(), metadata().project_id, explicit)


@blueprint.post("/project")
async def create_project():
    body = structure_body(await json_body(), CreateProjectRequest)
    project_id = await projects.create_project(state(), metadata(), body.project_name, body.project_id)
    return json_response({"project-id": project_id}, 201)


@blueprint.get("/project-list")
async def list_projects():
    found = await projects.list_projects(state(), metadata())
    return json_response({"projects": [project_json(p) for p in found]})


@blueprint.get("/project")
@blueprint.get("/default-project")
async def get_project():
    project = await projects.get_project(state(), metadata(), current_project_id())
    return json_response(project_json(project))


@blueprint.get("/project/<project_id>")
async def get_project_by_id(project_id: str):
    project = await projects.get_project(state(), metadata(), current_project_id(project_id))
    return json_response(project_json(project))


@blueprint.delete("/project")
@blueprint.delete("/default-project")
async def delete_project():
    await projects.delete_project(state(), metadata(), current_project_id())
    return empty(204)


@blueprint.delete("/project/<project_id>")
async def delete_project_by_id(project_id: str):
    await projects.delete_project(state(), metadata(), current_project_id(project_id))
    return empty(204)


@blueprint.post("/project/rename")
@blueprint.post("/default-project/rename")
async def rename_project():
    body = structure_body(await json_body(), RenameRequest)
    await projects.rename_project(state(), metadata(), current_project_id(), body.new_name)
    return empty(200)


@blueprint.post("/project/<project_id>/rename")
async def rename_project_by_id(project_id: str):
    body = structure_body(await json_body(), RenameRequest)
    await projects.rename_project(state(), metadata(), current_project_id(project_id), body.new_name)
    return empty(200)
