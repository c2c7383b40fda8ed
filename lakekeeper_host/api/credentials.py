"""``GET /catalog/v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials`` (loadCredentials)."""

from __future__ import annotations

from quart import Blueprint, request

from lakekeeper_host.api.common import json_response, metadata, state
from lakekeeper_host.server.names import parse_name_path, parse_namespace_path
from lakekeeper_host.server.resolve import catalog_warehouse
from lakekeeper_host.server.tables import credentials
from lakekeeper_host.service.storage import DataAccess

blueprint = Blueprint("credentials", __name__, url_prefix="/catalog/v1")


@blueprint.get("/<prefix>/namespaces/<namespace>/tables/<table>/credentials")
async def load_credentials(prefix: str, namespace: str, table: str):
    warehouse = await catalog_warehouse(state(), prefix)
    access = DataAccess.from_header(request.headers.get("x-iceberg-access-delegation"))
    return json_response(
        await credentials.load_credentials(
            state(), metadata(), warehouse, parse_namespace_path(namespace), parse_name_path(table), access
        )
    )
