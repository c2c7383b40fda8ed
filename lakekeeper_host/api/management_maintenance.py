"""Management API: table maintenance policy overrides and immediate maintenance runs.

The warehouse policy is the ``table_maintenance`` queue config
(``/management/v1/warehouse/{id}/task-queue/table_maintenance/config``, api/management_tasks.py);
results are in the task API (``/management/v1/warehouse/{id}/task/...``).
"""

from __future__ import annotations

from quart import Blueprint

from lakekeeper_host.api.common import empty, json_body, json_response, metadata, optional_json_body, state
from lakekeeper_host.server.management import maintenance

blueprint = Blueprint("management_maintenance", __name__, url_prefix="/management/v1")


@blueprint.get("/warehouse/<warehouse_id>/table/<table_id>/maintenance")
async def get_table_maintenance(warehouse_id: str, table_id: str):
    """The table's maintenance policy override and its effective policy."""
    return json_response(await maintenance.get_table_policy(state(), metadata(), warehouse_id, table_id))


@blueprint.post("/warehouse/<warehouse_id>/table/<table_id>/maintenance")
async def set_table_maintenance(warehouse_id: str, table_id: str):
    """Set the table's override: a partial policy merged over the warehouse policy."""
    body = await json_body()
    return json_response(await maintenance.set_table_policy(state(), metadata(), warehouse_id, table_id, body))


@blueprint.delete("/warehouse/<warehouse_id>/table/<table_id>/maintenance")
async def delete_table_maintenance(warehouse_id: str, table_id: str):
    """Remove the table's override: the warehouse policy applies."""
    await maintenance.delete_table_policy(state(), metadata(), warehouse_id, table_id)
    return empty(204)


@blueprint.post("/warehouse/<warehouse_id>/table/<table_id>/maintenance/run")
async def run_table_maintenance(warehouse_id: str, table_id: str):
    """Maintain the table now (its table_maintenance task is scheduled or moved to now)."""
    (run,) = await maintenance.run_now(state(), metadata(), warehouse_id, [table_id])
    return json_response(run, status=202)


@blueprint.post("/warehouse/<warehouse_id>/maintenance/run")
async def run_warehouse_maintenance(warehouse_id: str):
    """Maintain the given tables (``table-ids``), or every table of the warehouse, now."""
    table_ids = maintenance.parse_run_request(await optional_json_body())
    runs = await maintenance.run_now(state(), metadata(), warehouse_id, table_ids)
    return json_response({"runs": runs}, status=202)
