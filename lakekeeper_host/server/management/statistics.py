"""Statistics: per-endpoint call counts (hourly buckets) and warehouse table/view counts.

Every response is counted in memory (``EndpointStatsBuffer.record`` is a dict increment) and the
buffer is flushed to ``endpoint_statistics`` every ``LAKEKEEPER__ENDPOINT_STAT_FLUSH_INTERVAL``
(30 s), on shutdown, and right before endpoint statistics are read.

Each flush also records the current hour's table/view counts of every warehouse the flushed
requests named. Lakekeeper keeps those counts with a trigger on every tabular change; here every
such change is a request that names its warehouse (soft-deletion expiry and purges do not change
the live counts), so the flush records every change within one interval, and reading the
statistics never writes.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
from datetime import timedelta
from typing import Any

from lakekeeper_host.config.types import parse_duration
from lakekeeper_host.errors import bad_request
from lakekeeper_host.ids import now_ms
from lakekeeper_host.serde import iso_timestamp
from lakekeeper_host.server import pagination
from lakekeeper_host.server.authorize import authorize_project, authorize_warehouse
from lakekeeper_host.server.management.tasks import parse_time, runtime_config
from lakekeeper_host.server.pagination import decode_page_token, encode_page_token
from lakekeeper_host.server.resolve import require_warehouse
from lakekeeper_host.service.endpoint_stats import HOUR_MS, EndpointStatsBuffer, bucket_of
from lakekeeper_host.service.request import RequestMetadata
from lakekeeper_host.service.state import AppState
from lakekeeper_host.store import statistics as stats_store
from lakekeeper_host.store import tabular_admin

log = logging.getLogger(__name__)

_RULE_VAR = re.compile(r"<(?:[^:<>]+:)?([^<>]+)>")


@functools.lru_cache(maxsize=1024)  # called for every response; routes are few
def http_route(method: str, rule: str) -> str:
    """The endpoint as the statistics name it: a Quart rule with its variables in braces.

    ``GET /catalog/v1/<prefix>/namespaces/<path:namespace>`` -> ``GET /catalog/v1/{prefix}/namespaces/{namespace}``.
    """
    return f"{method} {_RULE_VAR.sub(lambda m: '{' + m.group(1) + '}', rule)}"


def request_ids(
    project_header: str | None, path: str, view_args: dict[str, Any] | None
) -> tuple[str | None, str | None]:
    """(project id, warehouse id) a request is counted under: ``x-project-id`` and the route's
    ``warehouse_id`` (management) or ``prefix`` (catalog) parameter."""
    args = view_args or {}
    warehouse_id = args.get("warehouse_id")
    if warehouse_id is None and path.startswith(("/catalog/v1/", "/lakekeeper/v1/")):
        warehouse_id = args.get("prefix")
    return project_header or None, warehouse_id


def start_endpoint_statistics(state: AppState) -> None:

    buffer = EndpointStatsBuffer()
    state.endpoint_stats = buffer
    interval = max(0.05, runtime_config(state).endpoint_stat_flush_interval.total_seconds())

    async def loop() -> None:
        while True:
            await asyncio.sleep(interval)
            try:
                await flush_endpoint_statistics(state)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("flushing endpoint statistics failed")

    state.background_tasks.append(asyncio.create_task(loop(), name="endpoint-stats-flush"))


async def stop_endpoint_statistics(state: AppState) -> None:
    try:
        await flush_endpoint_statistics(state)
    except Exception:
        log.exception("final flush of endpoint statistics failed")


async def flush_endpoint_statistics(state: AppState) -> None:
    buffer = state.endpoint_stats
    if buffer is None or not buffer.counts:
        return
    counts, first_seen = buffer.take()
    default_project = state.settings.host.default_project_id if state.settings.host.enable_default_project else None
    warehouse_ids = {key[1] for key, _ in counts if key[1]}
    projects = await stats_store.warehouse_projects(state.store, sorted(warehouse_ids))
    rows = []
    for (key, bucket), count in counts.items():
        header_project, warehouse_id, route, status = key
        if warehouse_id is not None and warehouse_id not in projects:
            warehouse_id = None  # not a warehouse of ours (bad prefix): count as unmapped
        project_id = projects.get(warehouse_id) if warehouse_id else (header_project or default_project)
        if project_id is None:
            continue
        rows.append(
            {
                "p": project_id,
                "w": warehouse_id or "",
                "path": route.split(" ", 1)[1],
                "method": route.split(" ", 1)[0],
                "status": status,
                "bucket": bucket,
                "count": count,
                "first": first_seen.get((key, bucket), bucket),
            }
        )
    async with state.store.transaction() as tx:
        await stats_store.add_endpoint_counts(tx, rows)
        for warehouse_id in sorted(w for w in warehouse_ids if w in projects):
            await snapshot_warehouse(tx, warehouse_id)


# ---------------------------------------------------------------- endpoint statistics query


def _parse_window(spec: Any) -> tuple[int, int]:
    """(end ms, interval ms) from ``range-specifier`` (window or page-token); default: the last day."""

    if spec is None:
        return now_ms(), int(timedelta(days=1).total_seconds() * 1000)
    if not isinstance(spec, dict):
        raise bad_request("Invalid request body: expected an object @ body.range-specifier")
    kind = spec.get("type")
    if kind == "window":
        for name in ("end", "interval"):
            if name not in spec:
                raise bad_request(f"Invalid request body: required field missing @ body.range-specifier.{name}")
        end = parse_time(spec["end"], "range-specifier.end")
        try:
            interval = parse_duration(str(spec["interval"]))
        except ValueError as exc:
            raise bad_request(f"Invalid request body: {exc} @ body.range-specifier.interval") from None
        return end, int(interval.total_seconds() * 1000)
    if kind == "page-token":
        token = spec.get("token")
        try:
            end_s, interval_s = str(token).split("_", 1)
            return int(end_s), int(interval_s)
        except ValueError:
            raise bad_request("Invalid request body: invalid page token @ body.range-specifier.token") from None
    raise bad_request("Invalid request body: type must be window or page-token @ body.range-specifier.type")


async def endpoint_statistics(state: AppState, meta: RequestMetadata, project_id: str, body: Any) -> dict[str, Any]:
    """The project's per-endpoint request counts, for a caller allowed ``get_endpoint_statistics`` on it."""
    await authorize_project(state, meta, "get_endpoint_statistics", project_id)
    if not isinstance(body, dict):
        raise bad_request("Request body must be a JSON object")
    warehouse = body.get("warehouse")
    if not isinstance(warehouse, dict) or warehouse.get("type") not in ("all", "unmapped", "warehouse-id"):
        raise bad_request(
            "Invalid request body: warehouse must be {type: all|unmapped|warehouse-id} @ body.warehouse"
        )
    warehouse_filter: str | None = None
    if warehouse["type"] == "warehouse-id":
        if not isinstance(warehouse.get("id"), str):
            raise bad_request("Invalid request body: required field missing @ body.warehouse.id")
        warehouse_filter = warehouse["id"]
    elif warehouse["type"] == "unmapped":
        warehouse_filter = ""
    status_codes = body.get("status-codes")
    if status_codes is not None and (
        not isinstance(status_codes, list)
        or not all(isinstance(c, int) and not isinstance(c, bool) for c in status_codes)
    ):
        raise bad_request("Invalid request body: expected a list of integers @ body.status-codes")
    end, interval = _parse_window(body.get("range-specifier"))
    if interval <= 0:
        raise bad_request("Invalid request body: interval must be positive @ body.range-specifier.interval")
    await flush_endpoint_statistics(state)
    rows = await stats_store.endpoint_counts(
        state.store,
        project_id=project_id,
        warehouse_id=warehouse_filter,
        status_codes=status_codes,
        start=end - interval,
        end=end,
    )
    warehouse_ids = sorted({r["warehouse_id"] for r in rows if r["warehouse_id"]})
    names = await stats_store.warehouse_names(state.store, warehouse_ids)
    buckets: dict[int, list[dict[str, Any]]] = {}
    for row in rows:
        buckets.setdefault(row["bucket_start"], []).append(
            {
                "count": int(row["count"]),
                "http-route": f"{row['method']} {row['matched_path']}",
                "status-code": int(row["status_code"]),
                "warehouse-id": row["warehouse_id"] or None,
                "warehouse-name": names.get(row["warehouse_id"]) if row["warehouse_id"] else None,
                "created-at": iso_timestamp(row["created_at"] or row["bucket_start"]),
                "updated-at": iso_timestamp(row["updated_at"]),
            }
        )
    ordered = sorted(buckets)
    return {
        # each bucket is labelled with the end of its hour, as Lakekeeper does
        "timestamps": [iso_timestamp(b + HOUR_MS) for b in ordered],
        "called-endpoints": [buckets[b] for b in ordered],
        "previous-page-token": f"{end - interval}_{interval}",
        "next-page-token": f"{end + interval}_{interval}",
    }


# ---------------------------------------------------------------- warehouse statistics


async def snapshot_warehouse(db, warehouse_id: str) -> dict[str, int]:
    counts = await tabular_admin.count_tabulars(db, warehouse_id)
    await stats_store.upsert_warehouse_stats(db, warehouse_id, bucket_of(now_ms()), counts["table"], counts["view"])
    return counts


async def warehouse_statistics(
    state: AppState, meta: RequestMetadata, warehouse_id: str, page_token: str | None, page_size: int | None
) -> dict[str, Any]:
    """Hourly table/view counts, newest first; reads only.

    The counts are of every table and view in the warehouse, so only who may see all of them reads
    them: ``list_everything`` on the warehouse (Lakekeeper asks ``get_metadata``, which anyone who
    sees one namespace of the warehouse has; the counts would tell them about the rest).

    The first entry is the current hour counted now; earlier hours are the snapshots that
    :func:`flush_endpoint_statistics` records for every warehouse requests touched (every change
    to a warehouse's tables and views is such a request, so no change goes unrecorded).
    """
    warehouse_id = (await require_warehouse(state, warehouse_id)).id
    await authorize_warehouse(state, meta, "list_everything", warehouse_id)
    limit = pagination.page_size(state, page_size)
    before = (decode_page_token(page_token, int) or (None,))[0]
    stats: list[dict[str, Any]] = []
    last_bucket = None
    if before is None:
        now = now_ms()
        last_bucket = before = bucket_of(now)
        counts = await tabular_admin.count_tabulars(state.store, warehouse_id)
        stats.append(_stats_entry(last_bucket, counts["table"], counts["view"], now))
    if len(stats) < limit:
        rows = await stats_store.warehouse_stats(state.store, warehouse_id, before=before, limit=limit - len(stats))
        for r in rows:
            last_bucket = r["bucket_start"]
            stats.append(_stats_entry(last_bucket, r["number_of_tables"], r["number_of_views"], r["updated_at"]))
    next_token = encode_page_token(last_bucket) if len(stats) == limit else None
    return {"warehouse-ident": warehouse_id, "stats": stats, "next-page-token": next_token}


def _stats_entry(bucket: int, tables: int, views: int, updated_at: int | None) -> dict[str, Any]:
    return {
        # labelled with the end of its hour, as Lakekeeper does
        "timestamp": iso_timestamp(bucket + HOUR_MS),
        "number-of-tables": int(tables),
        "number-of-views": int(views),
        "updated-at": iso_timestamp(updated_at),
    }
