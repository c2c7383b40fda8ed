"""Metrics reports (``POST .../tables/{table}/metrics``): stored, bounded, and listable.

Lakekeeper accepts and discards the ScanReport/CommitReport that the Java client sends after
scans and commits; we keep them per table so operators can see what engines did:
``GET /management/v1/warehouse/{warehouse-id}/table/{table-id}/metrics`` lists them, newest first,
filtered by type, snapshot and time, keyset-paginated.

Retention (``LAKEKEEPER__METRICS_REPORTS__*``): at most ``max_reports_per_table`` per table (the
oldest are dropped on insert) and none older than ``max_age`` (a housekeeping loop). With
``enabled=false`` reports are accepted and discarded, as in Lakekeeper.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta
from typing import Any

from attrs import field, frozen, validators

from lakekeeper_host.errors import bad_request, no_such_table, not_found
from lakekeeper_host.serde import iso_timestamp
from lakekeeper_host.server import pagination
from lakekeeper_host.server.authorize import authorize
from lakekeeper_host.server.pagination import decode_page_token, encode_page_token
from lakekeeper_host.server.resolve import require_warehouse, resolve_table
from lakekeeper_host.service.request import RequestMetadata
from lakekeeper_host.service.state import AppState
from lakekeeper_host.store import metrics_reports as store
from lakekeeper_host.store import tabular_admin
from lakekeeper_host.store.db import now_ms
from lakekeeper_host.store.warehouses import WarehouseRow

log = logging.getLogger(__name__)

REPORT_TYPES = {
    "scan-report": "scan-report",
    "commit-report": "commit-report",
    "scan": "scan-report",
    "commit": "commit-report",
}


@frozen
class MetricsReportsConfig:
    # store the scan and commit reports clients send (POST .../metrics); false: accept and drop them
    enabled: bool = True
    # reports kept per table, the oldest dropped first
    # example: 100
    max_reports_per_table: int = field(default=1000, validator=validators.ge(1))
    # reports older than this are deleted
    # example: P1D
    max_age: timedelta = timedelta(days=7)


@frozen
class Section:
    # the Iceberg metrics reports of tables
    metrics_reports: MetricsReportsConfig = MetricsReportsConfig()


def reports_config(state: AppState) -> MetricsReportsConfig:
    return state.settings.section(Section).metrics_reports


# ---------------------------------------------------------------- VALIDATIONS


_REQUIRED = {
    "scan-report": (
        "table-name", "snapshot-id", "filter", "schema-id", "projected-field-ids", "projected-field-names", "metrics"
    ),
    "commit-report": ("table-name", "snapshot-id", "sequence-number", "operation", "metrics"),
}
_INTEGERS = ("snapshot-id", "schema-id", "sequence-number")


def validate_report(body: Any) -> tuple[str, int | None]:
    """(report type, snapshot id) of a ReportMetricsRequest; 400 naming what is wrong."""
    if not isinstance(body, dict):
        raise bad_request("Metrics report must be a JSON object")
    report_type = body.get("report-type")
    if report_type not in _REQUIRED:
        raise bad_request(f"Unknown report-type {report_type!r}; expected 'scan-report' or 'commit-report'")
    missing = [k for k in _REQUIRED[report_type] if k not in body]
    if missing:
        raise bad_request(f"Invalid {report_type}: missing {', '.join(missing)}")
    for key in _INTEGERS:
        value = body.get(key)
        if key in body and (isinstance(value, bool) or not isinstance(value, int)):
            raise bad_request(f"Invalid {report_type}: {key} must be an integer")
    if not isinstance(body.get("metrics"), dict):
        raise bad_request(f"Invalid {report_type}: metrics must be an object")
    return report_type, body.get("snapshot-id")


# ---------------------------------------------------------------- BUSINESS LOGIC


async def report_metrics(
    state: AppState, meta: RequestMetadata, warehouse: WarehouseRow, parts: list[str], name: str, body: Any
) -> None:
    """Store a ScanReport/CommitReport for a table (a client's own report: any caller that can
    resolve the table may send one, as in Lakekeeper)."""
    _, row = await resolve_table(state, warehouse, parts, name)
    await authorize(state, meta, "get_metadata", "table", row.id, warehouse.id, hidden=no_such_table(parts, name))
    warehouse_id, tabular_id = warehouse.id, row.id
    report_type, snapshot_id = validate_report(body)
    config = reports_config(state)
    if not config.enabled:
        return
    async with state.store.transaction() as tx:
        await store.insert_report(
            tx,
            warehouse_id=warehouse_id,
            tabular_id=tabular_id,
            report_type=report_type,
            snapshot_id=snapshot_id,
            report=body,
            keep_per_table=config.max_reports_per_table,
        )


def _parse_time(name: str, value: str | None) -> int | None:
    if value is None or value == "":
        return None
    if value.lstrip("-").isdigit():
        return int(value)
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise bad_request(f"Query parameter {name} must be an ISO-8601 timestamp or epoch milliseconds") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


async def list_reports(
    state: AppState,
    meta: RequestMetadata,
    warehouse_id: str,
    table_id: str,
    *,
    report_type: str | None = None,
    snapshot_id: int | None = None,
    created_after: str | None = None,
    created_before: str | None = None,
    page_token: str | None = None,
    page_size: int | None = None,
) -> dict[str, Any]:
    """Stored reports of one table, newest first."""

    # ------------------------------------------------ VALIDATIONS
    warehouse = await require_warehouse(state, warehouse_id, active_only=True)
    kind = None
    if report_type:
        kind = REPORT_TYPES.get(report_type)
        if kind is None:
            raise bad_request(f"Query parameter type must be 'scan' or 'commit', got {report_type!r}")
    after = _parse_time("created-after", created_after)
    before = _parse_time("created-before", created_before)
    cursor = decode_page_token(page_token, str)
    limit = pagination.page_size(state, page_size)
    table = await tabular_admin.get_tabular_info(state.store, warehouse.id, table_id)
    if table is None or table.typ != "table":
        raise not_found(f"Table {table_id} not found", "TableNotFound")

    # ------------------------------------------------ AUTHZ
    await authorize(state, meta, "get_metadata", "table", table.id, warehouse.id,
                    hidden=not_found(f"Table {table_id} not found", "TableNotFound"))

    # ------------------------------------------------ BUSINESS LOGIC
    rows = await store.list_reports(
        state.store,
        warehouse_id=warehouse.id,
        tabular_id=table.id,
        report_type=kind,
        snapshot_id=snapshot_id,
        created_after=after,
        created_before=before,
        before_id=cursor[0] if cursor else None,
        limit=limit + 1,
    )
    more = len(rows) > limit
    rows = rows[:limit]
    return {
        "reports": [
            {
                "report-id": r.id,
                "report-type": r.report_type,
                "snapshot-id": r.snapshot_id,
                "created-at": iso_timestamp(r.created_at, "milliseconds"),
                "report": r.report,
            }
            for r in rows
        ],
        "next-page-token": encode_page_token(rows[-1].id) if more else None,
    }


# ---------------------------------------------------------------- retention


async def expire_reports(state: AppState) -> int:
    cutoff = now_ms() - int(reports_config(state).max_age.total_seconds() * 1000)
    async with state.store.transaction() as tx:
        return await store.delete_older_than(tx, cutoff)


async def retention_loop(state: AppState) -> None:
    interval = min(3600.0, max(1.0, reports_config(state).max_age.total_seconds() / 4))
    while True:
        try:
            removed = await expire_reports(state)
            if removed:
                log.debug("removed %d expired metrics report(s)", removed)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("metrics report retention failed")
        await asyncio.sleep(interval)
