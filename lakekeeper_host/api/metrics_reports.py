"""Management API: the stored metrics reports of a table."""

from __future__ import annotations

from quart import Blueprint, request

from lakekeeper_host.api.common import json_response, metadata, query_int, state
from lakekeeper_host.server.tables import metrics_reports

blueprint = Blueprint("metrics_reports", __name__, url_prefix="/management/v1")


@blueprint.get("/warehouse/<warehouse_id>/table/<table_id>/metrics")
async def list_table_metrics(warehouse_id: str, table_id: str):
    args = request.args
    return json_response(
        await metrics_reports.list_reports(
            state(),
            metadata(),
            warehouse_id,
            table_id,
            report_type=args.get("type") or None,
            snapshot_id=query_int("snapshot-id"),
            created_after=args.get("created-after"),
            created_before=args.get("created-before"),
            page_token=args.get("pageToken") or None,
            page_size=query_int("pageSize"),
        )
    )
