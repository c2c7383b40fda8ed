"""Warehouse logic shared by the management API and the embedded quickstart.

Creation and every storage change run the same check pipeline (Lakekeeper "Storage Validation"):
a mutating endpoint fails with the first failed check's error; the ``validate-*`` endpoints and
``/warehouse-creation-validation`` return the whole per-check report with HTTP 200.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from attrs import define, field, frozen

from lakekeeper_host.errors import CatalogError, already_exists, bad_request, no_such_warehouse
from lakekeeper_host.serde import kebab, structure_body
from lakekeeper_host.server import events
from lakekeeper_host.server.namespaces import validate_storage_layout
from lakekeeper_host.service.authz import Resource
from lakekeeper_host.service.state import AppState
from lakekeeper_host.service.storage import Storage, ValidationCheck, is_sublocation
from lakekeeper_host.store import namespace_admin as ns_store
from lakekeeper_host.store import new_id
from lakekeeper_host.store import projects as project_store
from lakekeeper_host.store import tasks as task_store
from lakekeeper_host.store import warehouses as warehouse_store
from lakekeeper_host.store.warehouses import WarehouseRow

log = logging.getLogger(__name__)

STORAGE_CHECKS = (
    "storage-client-initialized",
    "lakekeeper-read-write",
    "vended-credentials-issued",
    "vended-credentials-read-write",
    "vended-credentials-scope-enforced",
    "cleanup",
)
# profile keys that keep their previous value when a replacement profile omits them
STICKY_PROFILE_KEYS = ("storage-layout", "allow-alternative-protocols")


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


@frozen
class UpdateStorage:
    storage_profile: dict[str, Any]
    storage_credential: dict[str, Any] | None = None


@frozen
class UpdateCredential:
    new_storage_credential: dict[str, Any] | None = None


@frozen
class FormatVersionPolicy:
    allowed_format_versions: list[int]
    default_format_version: int | None = None


# ---------------------------------------------------------------- VALIDATIONS


def validate_warehouse_name(name: str) -> None:
    if not name or not name.strip():
        raise bad_request("Warehouse name cannot be empty", "EmptyWarehouseName")
    if len(name) > 128:
        raise bad_request("Warehouse must be shorter than 128 chars", "WarehouseNameTooLong")
    if "/" in name:
        raise bad_request("Warehouse name may not contain '/'", "InvalidWarehouseName")


def validate_delete_profile(profile: Any, field_path: str = "delete-profile") -> dict[str, Any]:
    if not isinstance(profile, dict) or profile.get("type") not in ("hard", "soft"):
        raise bad_request(
            f"Invalid request body: {field_path} must be {{\"type\": \"hard\"}} or "
            f"{{\"type\": \"soft\", \"expiration-seconds\": N}} @ body.{field_path}"
        )
    if profile["type"] == "soft":
        seconds = profile.get("expiration-seconds", profile.get("expiration_seconds"))
        if not isinstance(seconds, int) or isinstance(seconds, bool) or seconds < 0:
            raise bad_request(
                f"Invalid request body: expected a non-negative integer @ body.{field_path}.expiration-seconds"
            )
        return {"type": "soft", "expiration-seconds": seconds}
    return {"type": "hard"}


def validate_format_versions(allowed: list[int] | None, default: int | None) -> tuple[list[int] | None, int | None]:
    if allowed is not None:
        if not allowed or any(v not in (1, 2, 3) for v in allowed):
            raise bad_request(
                "allowed-format-versions must be a non-empty subset of [1, 2, 3]", "InvalidFormatVersionPolicy"
            )
        allowed = sorted(set(allowed))
    if default is not None and default not in (allowed or [1, 2, 3]):
        raise bad_request(
            "default-format-version must be one of the allowed format versions", "InvalidFormatVersionPolicy"
        )
    return allowed, default


def effective_format_versions(warehouse: WarehouseRow) -> tuple[list[int], int]:
    """(allowed, default): default v2 if allowed, else the highest allowed (Lakekeeper §9.5)."""
    allowed = warehouse.allowed_format_versions or [1, 2, 3]
    default = warehouse.default_format_version or (2 if 2 in allowed else max(allowed))
    return allowed, default


async def authorize(
    state: AppState, meta: Any, action: str, kind: str, object_id: str, warehouse_id: str | None = None
) -> None:
    """AUTHZ: the configured authorizer decides; a denial is a 403."""
    actor = getattr(meta, "actor", None)
    if actor is None:
        return
    if not await state.authorizer.is_allowed(actor, action, Resource(kind, object_id, warehouse_id)):
        raise CatalogError(
            403, "ForbiddenException", f"Not allowed to {action.replace('_', ' ')} on {kind} {object_id}"
        )


async def require_warehouse(state: AppState, warehouse_id: str, *, active_only: bool = False) -> WarehouseRow:
    warehouse = await warehouse_store.get_warehouse(state.store, warehouse_id) if _is_uuid(warehouse_id) else None
    if warehouse is None or (active_only and not warehouse.is_active):
        raise no_such_warehouse(f"Warehouse {warehouse_id} not found")
    return warehouse


def _is_uuid(value: str) -> bool:
    import uuid

    try:
        uuid.UUID(value)
        return True
    except ValueError:
        return False


# ---------------------------------------------------------------- the check pipeline


@define
class CheckReport:
    """Runs named checks in order; a failed check keeps its ``CatalogError`` for the mutating endpoints."""

    checks: list[dict[str, Any]] = field(factory=list)
    first_error: CatalogError | None = None

    @property
    def valid(self) -> bool:
        return not any(c["status"] == "failed" for c in self.checks)

    def skip(self, name: str, reason: str) -> None:
        self.checks.append({"name": name, "status": "skipped", "reason": reason})

    def add(self, check: ValidationCheck, duration_ms: int | None = None) -> None:
        entry: dict[str, Any] = {"name": check.name, "status": check.status}
        if check.status == "skipped":
            entry["reason"] = check.message or "Does not apply"
        else:
            if duration_ms is not None:
                entry["duration-ms"] = duration_ms
            if check.status in ("failed", "warning"):
                entry["error"] = {
                    "message": check.message or check.name, "type": "StorageValidationFailed", "code": 400
                }
                if check.status == "failed" and self.first_error is None:
                    self.first_error = CatalogError(
                        400, "StorageValidationFailed", f"Storage validation failed ({check.name}): {check.message}"
                    )
        self.checks.append(entry)

    async def run(self, name: str, fn: Callable[[], Awaitable[Any] | Any]) -> bool:
        started = time.perf_counter()
        try:
            result = fn()
            if hasattr(result, "__await__"):
                await result
        except CatalogError as exc:
            self.checks.append(
                {
                    "name": name,
                    "status": "failed",
                    "duration-ms": int((time.perf_counter() - started) * 1000),
                    "error": exc.to_model()["error"],
                }
            )
            if self.first_error is None:
                self.first_error = exc
            return False
        duration_ms = int((time.perf_counter() - started) * 1000)
        self.checks.append({"name": name, "status": "passed", "duration-ms": duration_ms})
        return True

    def raise_first(self) -> None:
        if self.first_error is not None:
            raise self.first_error

    def to_json(self) -> dict[str, Any]:
        return {"valid": self.valid, "checks": self.checks}


async def _storage_checks(state: AppState, report: CheckReport, storage: Storage | None, *, prerequisite: bool) -> None:
    """``storage-client-initialized`` and the plugin's physical probes."""
    if state.settings.host.skip_storage_validation:
        for name in STORAGE_CHECKS:
            report.skip(name, "Storage validation is disabled (LAKEKEEPER__SKIP_STORAGE_VALIDATION=true)")
        return
    if storage is None or not prerequisite:
        for name in STORAGE_CHECKS:
            report.skip(name, "A prerequisite check failed")
        return
    report.checks.append({"name": "storage-client-initialized", "status": "passed", "duration-ms": 0})
    started = time.perf_counter()
    try:
        results = await storage.validate()
    except Exception as exc:  # a broken plugin probe is a failed check, not a 500
        results = [ValidationCheck("lakekeeper-read-write", "failed", f"{type(exc).__name__}: {exc}")]
    elapsed = int((time.perf_counter() - started) * 1000)
    seen = set()
    for check in results:
        seen.add(check.name)
        report.add(check, elapsed)
    for name in STORAGE_CHECKS[1:]:
        if name in seen:
            continue
        if name == "cleanup" and "lakekeeper-read-write" in seen:
            report.skip(name, f"The {storage.storage_type} storage removes its probe within lakekeeper-read-write")
        else:
            report.skip(name, f"Not applicable to {storage.storage_type} storage")


def _build_storage(state: AppState, profile_json: Any, credential_json: Any) -> tuple[Any, Storage]:
    profile = state.parse_profile(profile_json)
    validate_storage_layout(profile_json.get("storage-layout"))
    credential = state.parse_credential(profile_json["type"], credential_json)
    return profile, state.build_storage(profile, credential)


async def check_location_exclusive(
    state: AppState, project_id: str, storage: Storage, exclude: str | None = None
) -> None:
    base = storage.base_location()
    for other in await warehouse_store.list_warehouses(state.store, project_id):
        if other.id == exclude:
            continue
        try:
            other_storage = await state.storage_for(other)
        except CatalogError:
            continue
        if other_storage.storage_type != storage.storage_type:
            continue
        other_base = other_storage.base_location()
        if is_sublocation(base, other_base) or is_sublocation(other_base, base):
            raise bad_request(
                f"Storage profile overlaps with existing warehouse {other.name}", "CreateWarehouseStorageProfileOverlap"
            )


async def creation_report(
    state: AppState, meta: Any, project_id: str, request: CreateWarehouse
) -> tuple[CheckReport, Any, Any]:
    """Every creation check; returns (report, profile, delete profile)."""
    report = CheckReport()
    built: dict[str, Any] = {}

    def well_formed() -> None:
        built["profile"], built["storage"] = _build_storage(state, request.storage_profile, request.storage_credential)

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
            actor = getattr(meta, "actor", None)
            admins = state.settings.host.instance_admins
            if actor is None or actor.user_id not in admins:
                raise CatalogError(
                    403, "ManagedByNotAllowed", "Only instance admins may create instance-admin managed warehouses"
                )

    await report.run("managed-by-allowed", managed_by_allowed)
    await _storage_checks(state, report, built.get("storage"), prerequisite=profile_ok)
    return report, built.get("profile"), None


# ---------------------------------------------------------------- BUSINESS LOGIC: create


async def validate_creation(state: AppState, meta: Any, project_id: str, body: Any) -> dict[str, Any]:
    request = structure_body(body, CreateWarehouse)
    await authorize(state, meta, "create_warehouse", "project", project_id)
    report, _, _ = await creation_report(state, meta, project_id, request)
    return report.to_json()


async def create_warehouse(
    state: AppState, project_id: str, request: CreateWarehouse, meta: Any = None
) -> WarehouseRow:
    # ------------------------------------------------ VALIDATIONS
    delete_profile = validate_delete_profile(request.delete_profile)
    allowed, default = validate_format_versions(request.allowed_format_versions, request.default_format_version)
    if await project_store.get_project(state.store, project_id) is None:
        raise CatalogError(404, "ProjectNotFound", f"Project {project_id} does not exist")
    # ------------------------------------------------ AUTHZ
    await authorize(state, meta, "create_warehouse", "project", project_id)
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
    return warehouse


# ---------------------------------------------------------------- BUSINESS LOGIC: simple updates


async def rename_warehouse(state: AppState, meta: Any, warehouse_id: str, new_name: str) -> WarehouseRow:
    warehouse = await require_warehouse(state, warehouse_id)
    await authorize(state, meta, "rename", "warehouse", warehouse.id)
    validate_warehouse_name(new_name)
    other = await warehouse_store.get_warehouse_by_name(state.store, warehouse.project_id, new_name)
    if other is not None and other.id != warehouse.id:
        raise already_exists(f"Warehouse {new_name!r} already exists in the project", "WarehouseAlreadyExists")
    try:
        await warehouse_store.update_warehouse(state.store, warehouse.id, name=new_name)
    except Exception as exc:  # the unique index lost a race
        if "unique" in str(exc).lower():
            raise already_exists(
                f"Warehouse {new_name!r} already exists in the project", "WarehouseAlreadyExists"
            ) from None
        raise
    events.warehouse_renamed(state, meta, warehouse.id, new_name, warehouse.project_id, old_name=warehouse.name)
    return await require_warehouse(state, warehouse.id)


async def set_warehouse_status(state: AppState, meta: Any, warehouse_id: str, status: str) -> WarehouseRow:
    warehouse = await require_warehouse(state, warehouse_id)
    await authorize(state, meta, "activate" if status == "active" else "deactivate", "warehouse", warehouse.id)
    if warehouse.status != status:
        await warehouse_store.update_warehouse(state.store, warehouse.id, status=status)
    return await require_warehouse(state, warehouse.id)


async def set_delete_profile(state: AppState, meta: Any, warehouse_id: str, body: Any) -> WarehouseRow:
    if not isinstance(body, dict):
        raise bad_request("Request body must be a JSON object")
    if "delete-profile" not in body:
        raise bad_request("Invalid request body: required field missing @ body.delete-profile")
    profile = validate_delete_profile(body["delete-profile"])
    warehouse = await require_warehouse(state, warehouse_id, active_only=True)
    await authorize(state, meta, "modify_soft_deletion", "warehouse", warehouse.id)
    await warehouse_store.update_warehouse(state.store, warehouse.id, delete_profile=profile)
    return await require_warehouse(state, warehouse.id)


async def set_warehouse_protection(state: AppState, meta: Any, warehouse_id: str, protected: bool) -> WarehouseRow:
    warehouse = await require_warehouse(state, warehouse_id)
    await authorize(state, meta, "set_protection", "warehouse", warehouse.id)
    await warehouse_store.update_warehouse(state.store, warehouse.id, protected=protected)
    return await require_warehouse(state, warehouse.id)


async def set_format_version_policy(state: AppState, meta: Any, warehouse_id: str, body: Any) -> WarehouseRow:
    request = structure_body(body, FormatVersionPolicy)
    allowed, default = validate_format_versions(request.allowed_format_versions, request.default_format_version)
    warehouse = await require_warehouse(state, warehouse_id)
    await authorize(state, meta, "set_format_version_policy", "warehouse", warehouse.id)
    await warehouse_store.update_warehouse(
        state.store, warehouse.id, allowed_format_versions=allowed, default_format_version=default
    )
    return await require_warehouse(state, warehouse.id)


# ---------------------------------------------------------------- BUSINESS LOGIC: storage replacement


def merge_profile(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    merged = dict(new)
    for key in STICKY_PROFILE_KEYS:
        if key not in merged and key in old:
            merged[key] = old[key]
    return merged


def check_immutable(old_storage: Storage, old: dict[str, Any], new: dict[str, Any]) -> None:
    if old.get("type") != new.get("type"):
        raise bad_request(
            f"The storage type cannot change (from {old.get('type')!r} to {new.get('type')!r})", "ImmutableField"
        )
    for name in old_storage.immutable_fields():
        key = kebab(name)
        if old.get(key) != new.get(key):
            raise bad_request(
                f"Storage profile field {key!r} cannot be changed (from {old.get(key)!r} to {new.get(key)!r})",
                "ImmutableField",
            )


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

    def well_formed() -> None:
        built["profile"], built["storage"] = _build_storage(state, profile_json, credential_json)

    profile_ok = await report.run("profile-well-formed", well_formed)
    if compare:
        if profile_ok:
            old_storage = await state.storage_for(warehouse)
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
    await _storage_checks(state, report, built.get("storage"), prerequisite=profile_ok)
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


async def update_storage(state: AppState, meta: Any, warehouse_id: str, body: Any, *, dry_run: bool = False):
    request = structure_body(body, UpdateStorage)
    warehouse = await require_warehouse(state, warehouse_id, active_only=True)
    await authorize(state, meta, "update_storage", "warehouse", warehouse.id)
    profile_json = merge_profile(warehouse.storage_profile, request.storage_profile) if isinstance(
        request.storage_profile, dict
    ) else request.storage_profile
    report, profile = await _update_report(state, warehouse, profile_json, request.storage_credential, compare=True)
    if dry_run:
        return report.to_json()
    report.raise_first()
    return await _replace_storage(state, warehouse, profile, request.storage_credential)


async def update_credential(state: AppState, meta: Any, warehouse_id: str, body: Any, *, dry_run: bool = False):
    request = structure_body(body, UpdateCredential)
    warehouse = await require_warehouse(state, warehouse_id, active_only=True)
    await authorize(state, meta, "update_storage", "warehouse", warehouse.id)
    report, _ = await _update_report(
        state, warehouse, warehouse.storage_profile, request.new_storage_credential, compare=False
    )
    if dry_run:
        return report.to_json()
    report.raise_first()
    return await _replace_storage(state, warehouse, None, request.new_storage_credential)


async def validate_access(state: AppState, meta: Any, warehouse_id: str) -> dict[str, Any]:
    """Probe the storage the warehouse currently runs with."""
    warehouse = await require_warehouse(state, warehouse_id)
    await authorize(state, meta, "update_storage", "warehouse", warehouse.id)
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
    await _storage_checks(state, report, storage.get("s"), prerequisite=ok)
    return report.to_json()


# ---------------------------------------------------------------- BUSINESS LOGIC: delete


async def delete_warehouse(state: AppState, meta: Any, warehouse_id: str, *, force: bool) -> None:
    """Refused when protected (unless ``force``), while namespaces remain, or while tasks are unfinished."""
    warehouse = await require_warehouse(state, warehouse_id)
    await authorize(state, meta, "delete", "warehouse", warehouse.id)
    async with state.store.transaction() as tx:
        current = await warehouse_store.get_warehouse(tx, warehouse.id)
        if current is None:
            raise no_such_warehouse(f"Warehouse {warehouse_id} not found")
        if current.protected and not force:
            raise CatalogError(
                409,
                "WarehouseProtected",
                f"Warehouse {current.name!r} is protected; set protection to false or use force=true",
            )
        if await task_store.count_active_tasks(tx, current.id):
            raise CatalogError(
                409,
                "WarehouseHasUnfinishedTasks",
                f"Warehouse {current.name!r} has unfinished tasks (e.g. pending purges); wait for them or cancel them",
            )
        if await ns_store.count_namespaces(tx, current.id):
            raise CatalogError(
                409, "WarehouseNotEmpty", f"Warehouse {current.name!r} is not empty: drop its namespaces first"
            )
        await task_store.delete_warehouse_task_history(tx, current.id)
        await warehouse_store.delete_warehouse(tx, current.id)
    if current.storage_secret_id:
        try:
            await state.secrets.delete(current.storage_secret_id)
        except Exception:
            log.warning("deleting the storage secret of warehouse %s failed", current.id)
    events.warehouse_deleted(state, meta, current.id, current.name, current.project_id)
