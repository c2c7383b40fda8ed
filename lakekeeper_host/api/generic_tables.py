"""Lakekeeper's Generic Table API under ``/lakekeeper/v1`` (``{prefix}`` = warehouse id).

Path parameters are raw (percent-encoded), exactly as under ``/catalog/v1`` (see ``api/catalog.py``):
the pipeline routes ``/lakekeeper/v1`` on the undecoded path, handlers decode with
``server/names.py`` (``%1F`` joins namespace levels, ``+`` is a space).
"""

from __future__ import annotations

from quart import Blueprint, request

from lakekeeper_host.api.common import empty, json_body, json_response, metadata, query_bool, query_int, state
from lakekeeper_host.api.idempotency import idempotent
from lakekeeper_host.server import generic_tables
from lakekeeper_host.server.names import parse_name_path, parse_namespace_path
from lakekeeper_host.server.resolve import catalog_warehouse
from lakekeeper_host.service.storage import DataAccess

blueprint = Blueprint("generic_tables", __name__, url_prefix="/lakekeeper/v1")


def _access() -> DataAccess:
    return DataAccess.from_header(request.headers.get("x-iceberg-access-delegation"))


@blueprint.get("/<prefix>/namespaces/<namespace>/generic-tables")
async def list_generic_tables(prefix: str, namespace: str):
    """List generic tables in a namespace"""
    warehouse = await catalog_warehouse(state(), prefix)
    return json_response(await generic_tables.list_generic_tables(
        state(), metadata(), warehouse, parse_namespace_path(namespace),
        page_token=request.args.get("pageToken"), page_size=query_int("pageSize"),
    ))


@blueprint.post("/<prefix>/namespaces/<namespace>/generic-tables")
@idempotent("createGenericTable")
async def create_generic_table(prefix: str, namespace: str):
    """Create a generic table"""
    warehouse = await catalog_warehouse(state(), prefix)
    return json_response(await generic_tables.create_generic_table(
        state(), metadata(), warehouse, parse_namespace_path(namespace), await json_body()
    ))


@blueprint.get("/<prefix>/namespaces/<namespace>/generic-tables/<table>")
async def load_generic_table(prefix: str, namespace: str, table: str):
    """Load a generic table"""
    warehouse = await catalog_warehouse(state(), prefix)
    return json_response(await generic_tables.load_generic_table(
        state(), metadata(), warehouse, parse_namespace_path(namespace), parse_name_path(table), _access()
    ))


@blueprint.delete("/<prefix>/namespaces/<namespace>/generic-tables/<table>")
@idempotent("dropGenericTable")
async def drop_generic_table(prefix: str, namespace: str, table: str):
    """Drop a generic table"""
    warehouse = await catalog_warehouse(state(), prefix)
    await generic_tables.drop_generic_table(
        state(), metadata(), warehouse, parse_namespace_path(namespace), parse_name_path(table),
        # as for Iceberg tables, purgeRequested defaults to true: the catalog manages the location
        purge=query_bool("purgeRequested", default=True), force=query_bool("force"),
    )
    return empty()


@blueprint.post("/<prefix>/generic-tables/rename")
@idempotent("renameGenericTable")
async def rename_generic_table(prefix: str):
    """Rename a generic table"""
    warehouse = await catalog_warehouse(state(), prefix)
    await generic_tables.rename_generic_table(state(), metadata(), warehouse, await json_body())
    return empty()


@blueprint.get("/<prefix>/namespaces/<namespace>/generic-tables/<table>/credentials")
async def load_generic_table_credentials(prefix: str, namespace: str, table: str):
    """Load credentials for a generic table"""
    warehouse = await catalog_warehouse(state(), prefix)
    return json_response(await generic_tables.load_generic_table_credentials(
        state(), metadata(), warehouse, parse_namespace_path(namespace), parse_name_path(table), _access()
    ))
