"""Server-side scan planning routes (planTableScan, fetchPlanningResult, cancelPlanning,
fetchScanTasks) under ``/catalog/v1`` (raw path parameters: see ``api/catalog.py``)."""

from __future__ import annotations

from quart import Blueprint, request

from lakekeeper_host.api.common import empty, json_body, json_response, metadata, optional_json_body, state
from lakekeeper_host.server.names import parse_name_path, parse_namespace_path
from lakekeeper_host.server.resolve import catalog_warehouse
from lakekeeper_host.server.tables.scan_planning import (
    cancel_planning_for_table,
    plan_for_table,
    planning_result_for_table,
    scan_tasks_for_table,
)
from lakekeeper_host.service.storage import DataAccess

blueprint = Blueprint("scan_planning", __name__, url_prefix="/catalog/v1")

TABLE = "/<prefix>/namespaces/<namespace>/tables/<table>"


@blueprint.post(TABLE + "/plan")
async def plan_table_scan(prefix: str, namespace: str, table: str):
    warehouse = await catalog_warehouse(state(), prefix)
    access = DataAccess.from_header(request.headers.get("x-iceberg-access-delegation"))
    body = await optional_json_body()
    result = await plan_for_table(
        state(), metadata(), warehouse, parse_namespace_path(namespace), parse_name_path(table),
        {} if body is None else body, access,
    )
    return json_response(result)


@blueprint.get(TABLE + "/plan/<plan_id>")
async def fetch_planning_result(prefix: str, namespace: str, table: str, plan_id: str):
    warehouse = await catalog_warehouse(state(), prefix)
    return json_response(
        await planning_result_for_table(
            state(), metadata(), warehouse, parse_namespace_path(namespace), parse_name_path(table), plan_id
        )
    )


@blueprint.delete(TABLE + "/plan/<plan_id>")
async def cancel_planning(prefix: str, namespace: str, table: str, plan_id: str):
    warehouse = await catalog_warehouse(state(), prefix)
    await cancel_planning_for_table(
        state(), metadata(), warehouse, parse_namespace_path(namespace), parse_name_path(table), plan_id
    )
    return empty()


@blueprint.post(TABLE + "/tasks")
async def fetch_scan_tasks(prefix: str, namespace: str, table: str):
    warehouse = await catalog_warehouse(state(), prefix)
    return json_response(
        await scan_tasks_for_table(
            state(), metadata(), warehouse, parse_namespace_path(namespace), parse_name_path(table), await json_body()
        )
    )
