"""The table page: Overview, Data (rows and column statistics read by the server) and History (what each
commit changed, growth over time, schema changes). Each tab asks the API for what it shows only."""

from __future__ import annotations

from typing import Any

from quart import render_template, request

from lakekeeper_host.ui import charts, formatting, history
from lakekeeper_host.ui.api_client import ApiError, encode_namespace
from lakekeeper_host.ui.views import (
    SNAPSHOT_ROWS,
    api,
    blueprint,
    namespace_arg,
    namespace_tree,
    or_error,
    protection_of,
    table_overview,
    warehouse_of,
)

TABS = ("overview", "data", "history")
PREVIEW_ROWS = 25


def data_api_path(warehouse_id: str, table_id: str, what: str) -> str:
    return f"/warehouse/{warehouse_id}/table/{table_id}/{what}"


async def data_tab(warehouse_id: str, metadata: dict[str, Any]) -> dict[str, Any]:
    """Rows of the chosen snapshot, branch or tag (a page of them) and its column statistics, through the
    API's preview endpoints; a refusal (no ``read_data``) is shown in place of the data."""
    table_id = metadata.get("table-uuid", "")
    ref = request.args.get("ref") or None
    snapshot_id = request.args.get("snapshot", type=int)
    if ref is None and snapshot_id is None and metadata.get("refs", {}).get("main"):
        ref = "main"
    choice = {"ref": ref} if ref else ({"snapshotId": snapshot_id} if snapshot_id is not None else {})
    try:
        rows, rows_error = await api().management(
            "GET", data_api_path(warehouse_id, table_id, "preview"), pageSize=PREVIEW_ROWS,
            pageToken=request.args.get("data_token"), **choice), None
    except ApiError as error:
        rows, rows_error = None, error
    refused = rows_error is not None and rows_error.status == 403
    stats, stats_error = (None, None) if refused else await or_error(api().management(
        "GET", data_api_path(warehouse_id, table_id, "column-statistics"), **choice))
    return {"rows": rows, "rows_error": str(rows_error) if rows_error else None, "refused": refused,
            "stats": stats, "stats_error": stats_error, "ref": ref, "snapshot_id": snapshot_id,
            "largest_nulls": max([c.get("null-count") or 0 for c in (stats or {}).get("columns", [])] + [0])}


def history_tab(metadata: dict[str, Any], overview: dict[str, Any]) -> dict[str, Any]:
    series = history.growth(metadata)
    return {
        "changes": history.snapshot_changes(overview["snapshots"]),
        "schemas": history.schema_history(metadata),
        "charts": [
            charts.line_chart([("size", series["total-files-size"])], chart_id="chart-size", title="Table size",
                              value_format=formatting.size, base=1024),
            charts.line_chart([("data files", series["total-data-files"])], chart_id="chart-files",
                              title="Data files", value_format=formatting.count),
            charts.line_chart([("rows", series["total-records"])], chart_id="chart-rows", title="Rows",
                              value_format=formatting.count),
        ],
    }


@blueprint.get("/warehouses/<warehouse_id>/table")
async def table(warehouse_id: str):
    details = await warehouse_of(warehouse_id)
    parts, name = namespace_arg(), request.args.get("name", "")
    tab = request.args.get("tab") if request.args.get("tab") in TABS else "overview"
    loaded = await api().catalog("GET", details["name"], f"/namespaces/{encode_namespace(parts)}/tables/"
                                 f"{encode_namespace([name])}", snapshots="all")
    metadata = loaded.get("metadata", {})
    tree = await namespace_tree(details, parts)
    protection = await protection_of(warehouse_id, "table", metadata.get("table-uuid"))
    overview = table_overview(metadata, None if request.args.get("all_snapshots") else SNAPSHOT_ROWS)
    current = next((s for s in metadata.get("snapshots") or []
                    if s.get("snapshot-id") == metadata.get("current-snapshot-id")), None)
    context: dict[str, Any] = {}
    if tab == "data":
        context["data"] = await data_tab(warehouse_id, metadata)
    elif tab == "history":
        context["history"] = history_tab(metadata, overview)
    return await render_template(
        "table.html", warehouse=details, ns=parts, name=name, loaded=loaded, metadata=metadata, tree=tree,
        current_ns=parts, protection=protection, overview=overview, tab=tab,
        totals=(current or {}).get("summary") or {}, **context)

