"""Warehouse logic shared by the management API and the embedded quickstart."""

from __future__ import annotations

from typing import Any

from attrs import field, frozen

from lakekeeper_host.errors import CatalogError, already_exists, bad_request, no_such_warehouse
from lakekeeper_host.service.state import AppState
from lakekeeper_host.service.storage import ValidationCheck, is_sublocation
from lakekeeper_host.store import new_id
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


def validate_warehouse_name(name: str) -> None:
    if not name or not name.strip():
        raise bad_request("warehouse-name must not be empty", "InvalidWarehouseName")
    if "/" in name:
        raise bad_request("warehouse-name must not contain '/'", "InvalidWarehouseName")
    if len(name) > 128:
        raise bad_request("warehouse-name must be at most 128 characters", "InvalidWarehouseName")


def validate_delete_profile(profile: Any) -> dict[str, Any]:
    if not isinstance(profile, dict) or profile.get("type") not in ("hard", "soft"):
        raise bad_request("delete-profile must be {\"type\": \"hard\"} or {\"type\": \"soft\", \"expiration-seconds\": N}")
    if profile["type"] == "soft":
        seconds = profile.get("expiration-seconds")
        if not isinstance(seconds, int) or isinstance(seconds, bool) or seconds < 0:
            raise bad_request("delete-profile.expiration-seconds must be a non-negative integer")
        return {"type": "soft", "expiration-seconds": seconds}
    return {"type": "hard"}


def validate_format_versions(allowed: list[int] | None, default: int | None) -> tuple[list[int] | None, int | None]:
    if allowed is not None:
        if not allowed or any(v not in (1, 2, 3) for v in allowed):
            raise bad_request("allowed-format-versions must be a non-empty subset of [1, 2, 3]")
        allowed = sorted(set(allowed))
    if default is not None and default not in (allowed or [1, 2, 3]):
        raise bad_request("default-format-version must be one of the allowed format versions")
    return allowed, default


async def prepare_storage(state: AppState, profile_json: dict[str, Any], credential_json: dict[str, Any] | None):
    profile = state.parse_profile(profile_json)
    credential = state.parse_credential(profile_json["type"], credential_json)
    return profile, credential, state.build_storage(profile, credential)


async def check_location_exclusive(state: AppState, project_id: str, storage, exclude: str | None = None) -> None:
    base = storage.base_location()
    for other in await warehouse_store.list_warehouses(state.store, project_id):
        if other.id == exclude:
            continue
        other_storage = await state.storage_for(other)
        if other_storage.storage_type != storage.storage_type:
            continue
        other_base = other_storage.base_location()
        if is_sublocation(base, other_base) or is_sublocation(other_base, base):
            raise CatalogError(
                409,
                "WarehouseLocationOverlap",
                f"Storage location {base} overlaps with warehouse {other.name!r} ({other_base})",
            )


def failed_checks(checks: list[ValidationCheck]) -> list[ValidationCheck]:
    return [c for c in checks if c.status == "failed"]


async def create_warehouse(state: AppState, project_id: str, request: CreateWarehouse) -> WarehouseRow:
    # ------------------------------------------------ VALIDATIONS
    validate_warehouse_name(request.warehouse_name)
    delete_profile = validate_delete_profile(request.delete_profile)
    allowed, default = validate_format_versions(request.allowed_format_versions, request.default_format_version)
    if await project_store.get_project(state.store, project_id) is None:
        raise CatalogError(404, "ProjectNotFound", f"Project {project_id} does not exist")
    profile, credential, storage = await prepare_storage(state, request.storage_profile, request.storage_credential)
    await check_location_exclusive(state, project_id, storage)
    if not state.settings.host.skip_storage_validation:
        failures = failed_checks(await storage.validate())
        if failures:
            first = failures[0]
            raise CatalogError(400, "StorageValidationFailed", f"Storage validation failed ({first.name}): {first.message}")

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
        raise already_exists(f"Warehouse {request.warehouse_name!r} already exists in the project", "WarehouseAlreadyExists")
    warehouse = await warehouse_store.get_warehouse(state.store, warehouse_id)
    if warehouse is None:  # pragma: no cover - inserted just above
        raise no_such_warehouse()
    return warehouse
