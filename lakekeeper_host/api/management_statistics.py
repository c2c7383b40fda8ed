"""Management API: ``POST /endpoint-statistics``; installs the per-response endpoint counter."""

from __future__ import annotations

from quart import Blueprint

from lakekeeper_host.api.common import json_body, json_response, metadata, state
from lakekeeper_host.server.management import statistics
from lakekeeper_host.server.resolve import resolve_project_id

blueprint = Blueprint("management_statistics", __name__, url_prefix="/management/v1")


@blueprint.post("/endpoint-statistics")
async def endpoint_statistics():
    body = await json_body()
    project_id = resolve_project_id(state(), metadata().project_id)
    return json_response(await statistics.endpoint_statistics(state(), metadata(), project_id, body))
