"""Replacing a warehouse's storage profile or credential (and their dry-run validations)."""

from __future__ import annotations

import logging
from typing import Any

from attrs import frozen

from lakekeeper_host.serde import structure_body
from lakekeeper_host.server.authorize import authorize_warehouse
from lakekeeper_host.server.resolve import require_warehouse
from lakekeeper_host.server.warehouses.validation import (
    CheckReport,
    build_candidate_storage,
    check_immutable,
    check_location_exclusive,
    merge_profile,
    run_storage_checks,
)
from lakekeeper_host.service.request import RequestMetadata
from lakekeeper_host.service.state import AppState
from lakekeeper_host.service.storage import Storage
from lakekeeper_host.store import warehouses as warehouse_store
from lakekeeper_host.store.warehouses import WarehouseRow

log = logging.getLogger(__name__)


@frozen
class UpdateStorage:
    storage_profile: dict[str, Any]
    storage_credential: dict[str, Any] | None = None


@frozen
class UpdateCredential:
    new_storage_credential: dict[str, Any] | None = None


async def _update_report(
    state: AppState,
    warehouse: WarehouseRow,
    profile_json: dict[str, Any],
    credential_json: dict[str, Any] | None,
    *,
    compare: bool,
) -> tuple[CheckReport, Any]:
    report = CheckReport()
    built: dict[str, Any] = {}

    async def well_formed() -> None:
        built["profile"], built["storage"] = await build_candidate_storage(state, profile_json, credential_json)

    profile_ok = await report.run("profile-well-formed", well_formed)
    if compare:
        if profile_ok:
            old_storage = await state.storage_for(warehouse, io=False)
            await report.run(
                "profile-compatible",
                lambda: check_immutable(
                    old_storage, warehouse.storage_profile, state.profile_to_json(built["profile"])
                ),
            )
        else:
            report.skip("profile-compatible", "A prerequisite check failed")
    else:
        report.skip("profile-compatible", "The storage profile does not change.")
    report.skip("warehouse-name-valid", "Only applies when creating a warehouse.")
    if compare and profile_ok:
        await report.run(
            "location-exclusive",
            lambda: check_location_exclusive(state, warehouse.project_id, built["storage"], exclude=warehouse.id),
        )
    else:
        report.skip(
            "location-exclusive",
            "The storage location does not change." if not compare else "A prerequisite check failed",
        )
    report.checks.append({"name": "spec-mutable", "status": "passed", "duration-ms": 0})
    report.skip("format-version-policy-consistent", "Only applies when creating a warehouse.")
    report.skip("managed-by-allowed", "Only applies when creating a warehouse.")
    await run_storage_checks(state, report, built.get("storage"), prerequisite=profile_ok)
    return report, built.get("profile")


async def _replace_storage(
    state: AppState, warehouse: WarehouseRow, profile: Any, credential_json: dict[str, Any] | None
) -> WarehouseRow:
    """Write the new secret first, point the warehouse at it, then delete the old one (best effort)."""
    old_secret = warehouse.storage_secret_id
    new_secret = await state.secrets.create(credential_json) if credential_json is not None else None
    try:
        changes: dict[str, Any] = {"storage_secret_id": new_secret}
        if profile is not None:
            changes["storage_profile"] = state.profile_to_json(profile)
        await warehouse_store.update_warehouse(state.store, warehouse.id, **changes)
    except BaseException:
        if new_secret:
            await state.secrets.delete(new_secret)
        raise
    if old_secret:
        try:
            await state.secrets.delete(old_secret)
        except Exception:
            log.warning("deleting the old storage secret %s of warehouse %s failed", old_secret, warehouse.id)
    return await require_warehouse(state, warehouse.id)


async def update_storage(
    state: AppState, meta: RequestMetadata, warehouse_id: str, body: Any, *, dry_run: bool = False
):
    request = structure_body(body, UpdateStorage)
    warehouse = await require_warehouse(state, warehouse_id, active_only=True)
    await authorize_warehouse(state, meta, "update_storage", warehouse.id)
    profile_json = (
        merge_profile(warehouse.storage_profile, request.storage_profile)
        if isinstance(request.storage_profile, dict)
        else request.storage_profile
    )
    report, profile = await _update_report(state, warehouse, profile_json, request.storage_credential, compare=True)
    if dry_run:
        return report.to_json()
    report.raise_first()
    return await _replace_storage(state, warehouse, profile, request.storage_credential)


async def update_credential(
    state: AppState, meta: RequestMetadata, warehouse_id: str, body: Any, *, dry_run: bool = False
):
    request = structure_body(body, UpdateCredential)
    warehouse = await require_warehouse(state, warehouse_id, active_only=True)
    await authorize_warehouse(state, meta, "update_storage", warehouse.id)
    report, _ = await _update_report(
        state, warehouse, warehouse.storage_profile, request.new_storage_credential, compare=False
    )
    if dry_run:
        return report.to_json()
    report.raise_first()
    return await _replace_storage(state, warehouse, None, request.new_storage_credential)


async def validate_access(state: AppState, meta: RequestMetadata, warehouse_id: str) -> dict[str, Any]:
    """Probe the storage the warehouse currently runs with."""
    warehouse = await require_warehouse(state, warehouse_id)
    await authorize_warehouse(state, meta, "update_storage", warehouse.id)
    report = CheckReport()
    storage: dict[str, Storage] = {}

    async def current() -> None:
        storage["s"] = await state.storage_for(warehouse)

    ok = await report.run("profile-well-formed", current)
    for name, reason in (
        ("profile-compatible", "The storage profile does not change."),
        ("warehouse-name-valid", "Only applies when creating a warehouse."),
        ("location-exclusive", "The storage location does not change."),
    ):
        report.skip(name, reason)
    report.checks.append({"name": "spec-mutable", "status": "passed", "duration-ms": 0})
    report.skip("format-version-policy-consistent", "Only applies when creating a warehouse.")
    report.skip("managed-by-allowed", "Only applies when creating a warehouse.")
    await run_storage_checks(state, report, storage.get("s"), prerequisite=ok)
    return report.to_json()
