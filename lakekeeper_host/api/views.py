"""Iceberg REST view routes under ``/catalog/v1`` (raw, percent-encoded path parameters: see
``api/catalog.py``)."""

from __future__ import annotations

from quart import Blueprint, request

from lakekeeper_host.api import reads
from lakekeeper_host.api.common import empty, json_body, json_response, metadata, query_bool, state
from lakekeeper_host.api.idempotency import idempotent
from lakekeeper_host.server.names import parse_name_path, parse_namespace_path
from lakekeeper_host.server.resolve import catalog_warehouse
from lakekeeper_host.server.tabulars import rename
from lakekeeper_host.server.views import create as view_create
from lakekeeper_host.server.views import drop as view_drop
from lakekeeper_host.server.views import register as view_register
from lakekeeper_host.server.views.commit import commit_view
from lakekeeper_host.service.storage import DataAccess

blueprint = Blueprint("views", __name__, url_prefix="/catalog/v1")
reads.register(blueprint)  # listViews, loadView: api/reads.py


def _access() -> DataAccess:
    return DataAccess.from_header(request.headers.get("x-iceberg-access-delegation"))


@blueprint.post("/<prefix>/namespaces/<namespace>/views")
@idempotent("createView")
async def create_view(prefix: str, namespace: str):
    warehouse = await catalog_warehouse(state(), prefix)
    return json_response(
        await view_create.create_view(
            state(), metadata(), warehouse, parse_namespace_path(namespace), await json_body(), _access()
        )
    )


@blueprint.post("/<prefix>/namespaces/<namespace>/views/<view>")
@idempotent("replaceView")
async def replace_view(prefix: str, namespace: str, view: str):
    warehouse = await catalog_warehouse(state(), prefix)
    result = await commit_view(
        state(), metadata(), warehouse, parse_namespace_path(namespace), parse_name_path(view), await json_body(),
        _access(),
    )
    return json_response(result)


@blueprint.delete("/<prefix>/namespaces/<namespace>/views/<view>")
@idempotent("dropView")
async def drop_view(prefix: str, namespace: str, view: str):
    warehouse = await catalog_warehouse(state(), prefix)
    await view_drop.drop_view(
        state(),
        metadata(),
        warehouse,
        parse_namespace_path(namespace),
        parse_name_path(view),
        # Lakekeeper: purgeRequested defaults to TRUE when absent
        purge=query_bool("purgeRequested", default=True),
        force=query_bool("force"),
    )
    return empty()


@blueprint.post("/<prefix>/views/rename")
@idempotent("renameView")
async def rename_view(prefix: str):
    warehouse = await catalog_warehouse(state(), prefix)
    await rename.rename_view(state(), metadata(), warehouse, await json_body())
    return empty()


@blueprint.post("/<prefix>/namespaces/<namespace>/register-view")
@idempotent("registerView")
async def register_view(prefix: str, namespace: str):
    warehouse = await catalog_warehouse(state(), prefix)
    return json_response(
        await view_register.register_view(
            state(), metadata(), warehouse, parse_namespace_path(namespace), await json_body(), _access()
        )
    )
