"""Management API ``/management/v1/action/...``: Lakekeeper's batch permission check.

``POST /action/batch-check`` answers many "may this user or role do that on this object" questions
in one request (the console, OPA bridges, Trino). The logic is in
:mod:`lakekeeper_host.server.batch_check`.
"""

from __future__ import annotations

from quart import Blueprint

from lakekeeper_host.api.common import json_body, json_response, metadata, state
from lakekeeper_host.server import batch_check as checks

blueprint = Blueprint("management_actions", __name__, url_prefix="/management/v1")


@blueprint.post("/action/batch-check")
async def batch_check():
    """Check up to 1,000 actions on servers, projects, warehouses, namespaces, tables and views"""
    results = await checks.batch_check(state(), metadata(), await json_body())
    return json_response({"results": results})
