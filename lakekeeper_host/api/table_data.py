"""Management API extension: a table's rows and column statistics, read on the server (not Lakekeeper's)."""

from __future__ import annotations

from quart import Blueprint, request

from lakekeeper_host.api.common import json_response, metadata, query_int, state
from lakekeeper_host.server.tables import preview

blueprint = Blueprint("table_data", __name__, url_prefix="/management/v1")


@blueprint.get("/warehouse/<warehouse_id>/table/<table_id>/preview")
async def preview_table(warehouse_id: str, table_id: str):
    """One page of the table's rows: the current snapshot, a snapshot (snapshotId) or a branch or tag (ref)"""
    return json_response(await preview.preview(
        state(), metadata(), warehouse_id, table_id, snapshot_id=query_int("snapshotId"),
        ref=request.args.get("ref") or None, page_token=request.args.get("pageToken") or None,
        page_size=query_int("pageSize"),
    ))


@blueprint.get("/warehouse/<warehouse_id>/table/<table_id>/column-statistics")
async def table_column_statistics(warehouse_id: str, table_id: str):
    """Per column: value, null and NaN counts, bounds and sizes from the manifests; file and row counts"""
    return json_response(await preview.column_statistics(
        state(), metadata(), warehouse_id, table_id, snapshot_id=query_int("snapshotId"),
        ref=request.args.get("ref") or None,
    ))
