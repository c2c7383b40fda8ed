"""Creating a warehouse (shared by the management API and the embedded quickstart)."""

from __future__ import annotations

from typing import Any

from attrs import field, frozen

from lakekeeper_host.errors import CatalogError, already_exists, bad_request, no_such_warehouse, project_not_found
from lakekeeper_host.ids import new_id
from lakekeeper_host.serde import structure_body
from lakekeeper_host.server import events
from lakekeeper_host.server.authorize import authorize, created, is_instance_admin
from lakekeeper_host.server.warehouses.validation import (
    CheckReport,
    build_candidate_storage,
    check_location_exclusive,
    run_storage_checks,
    validate_delete_profile,
    validate_format_versions,
    validate_warehouse_name,
)
from lakekeeper_host.service.request import RequestMetadata
from lakekeeper_host.service.state import AppState
from lakekeeper_host.store import projects as project_store
from lakekeeper_host.store import warehouses as warehouse_store
from lakekeeper_host.store.warehouses import WarehouseRow


@frozen
class CreateWarehouse:
    warehouse_name: str
    storage_profile: dict[str, Any]
    storage_credential: dict[str, Any] | None = None
    delete_profile: dict[str, Any] = field(factory=lambda: {"type": "hard"})
    project_id: str | None = None
    allowed_format_versions: list[int] | None = None
    default_format_version: int | None = None
    managed_by: str | None = None


async def creation_report(
    state: AppState, meta: RequestMetadata, project_id: str, request: CreateWarehouse
) -> tuple[CheckReport, Any, Any]:
    """Every creation check; returns (report, profile, delete profile)."""
    report = CheckReport()
    built: dict[str, Any] = {}

    async def well_formed() -> None:
        built["profile"], built["storage"] = await build_candidate_storage(
            state, request.storage_profile, request.storage_credential
        )

    profile_ok = await report.run("profile-well-formed", well_formed)
    report.skip("profile-compatible", "Only applies when updating an existing warehouse.")

    async def name_valid() -> None:
        validate_warehouse_name(request.warehouse_name)
        if await warehouse_store.get_warehouse_by_name(state.store, project_id, request.warehouse_name):
            raise already_exists(
                f"Warehouse {request.warehouse_name!r} already exists in the project", "WarehouseAlreadyExists"
            )

    await report.run("warehouse-name-valid", name_valid)
    if profile_ok:
        await report.run("location-exclusive", lambda: check_location_exclusive(state, project_id, built["storage"]))
    else:
        report.skip("location-exclusive", "A prerequisite check failed")
    report.skip("spec-mutable", "Only applies when updating an existing warehouse.")
    await report.run(
        "format-version-policy-consistent",
        lambda: validate_format_versions(request.allowed_format_versions, request.default_format_version),
    )

    def managed_by_allowed() -> None:
        if request.managed_by not in (None, "self-managed", "instance-admin"):
            raise bad_request("managed-by must be self-managed or instance-admin", "InvalidManagedBy")
        if request.managed_by == "instance-admin":
            if not is_instance_admin(state, getattr(meta, "actor", None)):
                raise CatalogError(
                    403, "ManagedByNotAllowed", "Only instance admins may create instance-admin managed warehouses"
                )

    await report.run("managed-by-allowed", managed_by_allowed)
    await run_storage_checks(state, report, built.get("storage"), prerequisite=profile_ok)
    return report, built.get("profile"), None


async def validate_creation(state: AppState, meta: RequestMetadata, project_id: str, body: Any) -> dict[str, Any]:
    request = structure_body(body, CreateWarehouse)
    await authorize(state, meta, "create_warehouse", "project", project_id, hidden=project_not_found(project_id))
    report, _, _ = await creation_report(state, meta, project_id, request)
    return report.to_json()


async def create_warehouse(
    state: AppState, project_id: str, request: CreateWarehouse, meta: RequestMetadata | None = None
) -> WarehouseRow:
    # ------------------------------------------------ VALIDATIONS
    delete_profile = validate_delete_profile(request.delete_profile)
    allowed, default = validate_format_versions(request.allowed_format_versions, request.default_format_version)
    if await project_store.get_project(state.store, project_id) is None:
        raise CatalogError(404, "ProjectNotFound", f"Project {project_id} does not exist")
    # ------------------------------------------------ AUTHZ
    await authorize(state, meta, "create_warehouse", "project", project_id, hidden=project_not_found(project_id))
    report, profile, _ = await creation_report(state, meta, project_id, request)
    report.raise_first()

    # ------------------------------------------------ BUSINESS LOGIC
    secret_id = None
    if request.storage_credential is not None:
        secret_id = await state.secrets.create(request.storage_credential)
    warehouse_id = new_id()
    try:
        inserted = await warehouse_store.insert_warehouse(
            state.store,
            warehouse_id=warehouse_id,
            project_id=project_id,
            name=request.warehouse_name,
            storage_profile=state.profile_to_json(profile),
            storage_secret_id=secret_id,
            delete_profile=delete_profile,
            allowed_format_versions=allowed,
            default_format_version=default,
        )
    except BaseException:
        if secret_id:
            await state.secrets.delete(secret_id)
        raise
    if not inserted:
        if secret_id:
            await state.secrets.delete(secret_id)
        raise already_exists(
            f"Warehouse {request.warehouse_name!r} already exists in the project", "WarehouseAlreadyExists"
        )
    warehouse = await warehouse_store.get_warehouse(state.store, warehouse_id)
    if warehouse is None:  # pragma: no cover - inserted just above
        raise no_such_warehouse()

    # ------------------------------------------------ EVENTS
    events.warehouse_created(
        state,
        meta,
        warehouse.id,
        warehouse.name,
        project_id,
        {"storage-profile": warehouse.storage_profile, "delete-profile": warehouse.delete_profile},
    )
    await created(state, meta, "warehouse", warehouse.id, ("project", project_id), warehouse.id)
    return warehouse
