"""Finding things and seeing how a warehouse is used: the search (Lakekeeper's ``search-tabular`` and the
namespace search beside it, both filtered by what the caller may see) and the warehouse statistics
(``GET .../statistics`` for tables and views, ``POST /endpoint-statistics`` for requests) as charts."""

from __future__ import annotations

from collections import defaultdict
from datetime import timedelta
from typing import Any

from quart import jsonify, render_template, request, url_for

from lakekeeper_host.ui import charts, formatting
from lakekeeper_host.ui.views import api, blueprint, namespace_tree, ns_param, or_error, warehouse_of

STATISTIC_PAGES = 3  # pages of hourly table/view counts drawn (each up to the API's page size)
REQUEST_WINDOW_DAYS = 7
HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS


async def search_results(warehouse_id: str, term: str) -> dict[str, Any]:
    """Tables, views and namespaces matching ``term``, each with the console URL that opens it."""
    body = {"search": term}
    tabulars, tabular_error = await or_error(
        api().management("POST", f"/warehouse/{warehouse_id}/search-tabular", json=body))
    namespaces, namespace_error = await or_error(
        api().management("POST", f"/warehouse/{warehouse_id}/search-namespace", json=body))
    found = []
    for item in (tabulars or {}).get("tabulars", []):
        kind = item["tabular-id"]["type"]
        endpoint = "console.view" if kind == "view" else "console.table"
        found.append({"kind": kind, "name": ".".join([*item["namespace-name"], item["tabular-name"]]),
                      "distance": item.get("distance") or 0,
                      "url": url_for(endpoint, warehouse_id=warehouse_id, ns=ns_param(item["namespace-name"]),
                                     name=item["tabular-name"])})
    for item in (namespaces or {}).get("namespaces", []):
        found.append({"kind": "namespace", "name": ".".join(item["namespace-name"]),
                      "distance": item.get("distance") or 0,
                      "url": url_for("console.namespace", warehouse_id=warehouse_id,
                                     ns=ns_param(item["namespace-name"]))})
    found.sort(key=lambda f: (f["distance"], len(f["name"]), f["name"]))
    return {"results": found, "error": tabular_error or namespace_error}


@blueprint.get("/warehouses/<warehouse_id>/search")
async def search(warehouse_id: str):
    """The results page of the sidebar's search box, or (``format=json``) its suggestions."""
    term = (request.args.get("q") or "").strip()
    found = await search_results(warehouse_id, term) if term else {"results": [], "error": None}
    if request.args.get("format") == "json":
        return jsonify(found)
    details = await warehouse_of(warehouse_id)
    tree = await namespace_tree(details, [])
    return await render_template("search.html", warehouse=details, tree=tree, current_ns=[], term=term, **found)


# ---------------------------------------------------------------- statistics


async def table_counts(warehouse_id: str) -> tuple[list[dict[str, Any]], str | None]:
    """Hourly table and view counts, newest first, a few pages of them."""
    stats: list[dict[str, Any]] = []
    token = None
    for _ in range(STATISTIC_PAGES):
        page, error = await or_error(api().management("GET", f"/warehouse/{warehouse_id}/statistics",
                                                      page_token=token))
        if error:
            return stats, error
        stats += page.get("stats", [])
        token = page.get("next-page-token")
        if not token:
            break
    return stats, None


async def request_counts(warehouse_id: str) -> tuple[dict[str, Any] | None, str | None]:
    """Calls per hour over the last days (``POST /endpoint-statistics`` for this warehouse)."""
    body = {"warehouse": {"type": "warehouse-id", "id": warehouse_id},
            "range-specifier": {"type": "window", "end": formatting.utc_now_iso(),
                                "interval": f"PT{REQUEST_WINDOW_DAYS * 24}H"}}
    answer, error = await or_error(api().management("POST", "/endpoint-statistics", json=body))
    if answer is None:
        return None, error
    totals: dict[int, int] = defaultdict(int)
    failed: dict[int, int] = defaultdict(int)
    routes: dict[str, int] = defaultdict(int)
    for stamp, calls in zip(answer.get("timestamps", []), answer.get("called-endpoints", []), strict=False):
        at = formatting.epoch_ms(stamp) or 0
        totals[at] += 0
        for call in calls:
            totals[at] += call.get("count", 0)
            if call.get("status-code", 0) >= 400:
                failed[at] += call.get("count", 0)
            routes[call.get("http-route", "")] += call.get("count", 0)
    top = sorted(routes.items(), key=lambda item: -item[1])[:8]
    return {"all": sorted(totals.items()), "failed": sorted((at, failed.get(at, 0)) for at in totals),
            "routes": top, "total": sum(totals.values())}, None


@blueprint.get("/warehouses/<warehouse_id>/statistics")
async def warehouse_statistics(warehouse_id: str):
    details = await warehouse_of(warehouse_id)
    tree = await namespace_tree(details, []) if details.get("status") == "active" else [
        {"parts": [], "name": details["name"], "children": [], "more": False}]
    counts, counts_error = await table_counts(warehouse_id)
    requests_, requests_error = await request_counts(warehouse_id)
    points = [(formatting.epoch_ms(s["timestamp"]) or 0, s) for s in counts]
    tabular_chart = charts.line_chart(
        [("tables", [(at, s["number-of-tables"]) for at, s in points]),
         ("views", [(at, s["number-of-views"]) for at, s in points])],
        chart_id="chart-tabulars", title="Tables and views (hourly)", value_format=formatting.count,
        width=860, height=210, min_span_ms=DAY_MS)
    # the API labels each hour with its end; the bars start at the hour's beginning
    request_chart = charts.bar_chart(
        [("succeeded", [(at - HOUR_MS, n - failed) for (at, n), (_, failed) in
                        zip(requests_["all"], requests_["failed"], strict=True)]),
         ("failed (4xx/5xx)", [(at - HOUR_MS, failed) for at, failed in requests_["failed"]])] if requests_ else [],
        chart_id="chart-requests", title="Requests per hour", bucket_ms=HOUR_MS, value_format=formatting.count,
        min_span_ms=DAY_MS, colors=("#2563c9", "#c23b32"))
    latest = counts[0] if counts else None
    return await render_template(
        "statistics.html", warehouse=details, tree=tree, current_ns=[], latest=latest,
        tabular_chart=tabular_chart, request_chart=request_chart, requests=requests_,
        counts_error=counts_error, requests_error=requests_error, window=timedelta(days=REQUEST_WINDOW_DAYS))
