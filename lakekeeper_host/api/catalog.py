"""Iceberg REST catalog routes under ``/catalog/v1``: config, namespaces, tables, commits.

Path parameters are taken from the RAW request path (still percent-encoded): a table called
``a/b`` arrives as ``a%2Fb`` and must not split the path. The pipeline's ASGI wrapper
(``api/pipeline.py``) makes Quart route ``/catalog/v1/...`` on ``raw_path``; every handler decodes
its parameters with ``server.names.parse_namespace_path`` / ``parse_name_path`` (``+`` is a space, ``%1F`` joins
namespace levels). Other blueprints under ``/catalog/v1`` (views, ...) must decode the same way.
"""

from __future__ import annotations

import json

from quart import Blueprint, current_app, request

from lakekeeper_host.api import reads
from lakekeeper_host.api.common import (
    empty,
    json_body,
    json_response,
    metadata,
    optional_json_body,
    query_bool,
    state,
)
from lakekeeper_host.api.idempotency import idempotent
from lakekeeper_host.errors import bad_request
from lakekeeper_host.server import catalog_config, namespaces, tables, tabulars
from lakekeeper_host.server.names import parse_name_path, parse_namespace_path
from lakekeeper_host.server.resolve import catalog_warehouse
from lakekeeper_host.server.tables import metrics_reports
from lakekeeper_host.server.tables.commit.parse import parse_change
from lakekeeper_host.server.tables.commit.protocol import commit_tables
from lakekeeper_host.service.storage import DataAccess

blueprint = Blueprint("catalog", __name__, url_prefix="/catalog/v1")
reads.register(blueprint)  # listNamespaces, loadNamespace, listTables, loadTable: api/reads.py

ACCESS_DELEGATION_HEADER = "x-iceberg-access-delegation"


def _access() -> DataAccess:
    return DataAccess.from_header(request.headers.get(ACCESS_DELEGATION_HEADER))


def _etag_headers(etag: str | None) -> dict[str, str]:
    return {"ETag": etag} if etag else {}


# ---------------------------------------------------------------- config


@blueprint.get("/config")
async def get_config():
    routes = [(rule.rule, rule.methods or ()) for rule in current_app.url_map.iter_rules()]
    return json_response(
        await catalog_config.get_config(state(), metadata(), request.args.get("warehouse"), routes)
    )


# ---------------------------------------------------------------- namespaces


@blueprint.post("/<prefix>/namespaces")
@idempotent("createNamespace")
async def create_namespace(prefix: str):
    warehouse = await catalog_warehouse(state(), prefix)
    return json_response(await namespaces.create_namespace(state(), metadata(), warehouse, await json_body()))


@blueprint.delete("/<prefix>/namespaces/<namespace>")
@idempotent("dropNamespace")
async def drop_namespace(prefix: str, namespace: str):
    warehouse = await catalog_warehouse(state(), prefix)
    await namespaces.drop_namespace(
        state(),
        metadata(),
        warehouse,
        parse_namespace_path(namespace),
        recursive=query_bool("recursive"),
        force=query_bool("force"),
        purge=query_bool("purge"),
    )
    return empty()


@blueprint.post("/<prefix>/namespaces/<namespace>/properties")
@idempotent("updateProperties")
async def update_namespace_properties(prefix: str, namespace: str):
    warehouse = await catalog_warehouse(state(), prefix)
    result = await namespaces.update_namespace_properties(
        state(), metadata(), warehouse, parse_namespace_path(namespace), await json_body()
    )
    return json_response(result)


# ---------------------------------------------------------------- tables


@blueprint.post("/<prefix>/namespaces/<namespace>/tables")
@idempotent("createTable")
async def create_table(prefix: str, namespace: str):
    warehouse = await catalog_warehouse(state(), prefix)
    body, etag = await tables.create_table(
        state(), metadata(), warehouse, parse_namespace_path(namespace), await json_body(), _access()
    )
    return json_response(body, headers=_etag_headers(etag))


@blueprint.post("/<prefix>/namespaces/<namespace>/register")
@idempotent("registerTable")
async def register_table(prefix: str, namespace: str):
    warehouse = await catalog_warehouse(state(), prefix)
    body, etag = await tables.register_table(
        state(), metadata(), warehouse, parse_namespace_path(namespace), await json_body(), _access()
    )
    return json_response(body, headers=_etag_headers(etag))


@blueprint.post("/<prefix>/namespaces/<namespace>/tables/<table>")
@idempotent("updateTable")
async def commit_table(prefix: str, namespace: str, table: str):
    warehouse = await catalog_warehouse(state(), prefix)
    change = parse_change(
        await json_body(), namespace=parse_namespace_path(namespace), name=parse_name_path(table)
    )
    (result,) = await commit_tables(state(), metadata(), warehouse, [change])
    body = f'{{"metadata-location":{json.dumps(result.metadata_location)},"metadata":{result.metadata_json}}}'
    return json_response(body, headers=_etag_headers(tables.load_etag(warehouse, result.metadata_location, _access())))


@blueprint.delete("/<prefix>/namespaces/<namespace>/tables/<table>")
@idempotent("dropTable")
async def drop_table(prefix: str, namespace: str, table: str):
    warehouse = await catalog_warehouse(state(), prefix)
    await tables.drop_table(
        state(),
        metadata(),
        warehouse,
        parse_namespace_path(namespace),
        parse_name_path(table),
        # Lakekeeper: purgeRequested defaults to TRUE when absent (every table is managed)
        purge=query_bool("purgeRequested", default=True),
        force=query_bool("force"),
    )
    return empty()


@blueprint.post("/<prefix>/tables/rename")
@idempotent("renameTable")
async def rename_table(prefix: str):
    warehouse = await catalog_warehouse(state(), prefix)
    await tabulars.rename_tabular(state(), metadata(), warehouse, "table", await json_body())
    return empty()


@blueprint.post("/<prefix>/namespaces/<namespace>/tables/<table>/metrics")
async def report_metrics(prefix: str, namespace: str, table: str):
    warehouse = await catalog_warehouse(state(), prefix)
    await metrics_reports.report_metrics(
        state(), metadata(), warehouse, parse_namespace_path(namespace), parse_name_path(table),
        await optional_json_body(),
    )
    return empty()


@blueprint.post("/<prefix>/transactions/commit")
@idempotent("commitTransaction")
async def commit_transaction(prefix: str):
    warehouse = await catalog_warehouse(state(), prefix)
    body = await json_body()
    changes = body.get("table-changes") if isinstance(body, dict) else None
    if not isinstance(changes, list) or not changes:
        raise bad_request("Invalid request body: `table-changes` must be a non-empty list @ body.table-changes")
    parsed = [parse_change(change) for change in changes]
    await commit_tables(state(), metadata(), warehouse, parsed)
    return empty()
