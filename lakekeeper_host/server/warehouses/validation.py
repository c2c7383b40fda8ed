"""Warehouse validations and the storage check pipeline (Lakekeeper "Storage Validation"):
a mutating endpoint fails with the first failed check's error; the ``validate-*`` endpoints return
the whole per-check report with HTTP 200."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from attrs import define, field

from lakekeeper_host.errors import CatalogError, bad_request
from lakekeeper_host.serde import kebab
from lakekeeper_host.server.namespaces.layout import validate_storage_layout
from lakekeeper_host.service.state import AppState
from lakekeeper_host.service.storage import Storage, ValidationCheck, is_sublocation
from lakekeeper_host.service.storage_validation import PREREQUISITE_FAILED, STORAGE_CHECKS, validate_storage
from lakekeeper_host.store import warehouses as warehouse_store
from lakekeeper_host.store.warehouses import WarehouseRow

# profile keys that keep their previous value when a replacement profile omits them
STICKY_PROFILE_KEYS = ("storage-layout", "allow-alternative-protocols")


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


async def run_storage_checks(
    state: AppState, report: CheckReport, storage: Storage | None, *, prerequisite: bool
) -> None:
    """The storage probes (``service/storage_validation.py``), unless disabled or a prerequisite failed."""
    if state.settings.host.skip_storage_validation:
        for name in STORAGE_CHECKS:
            report.skip(name, "Storage validation is disabled (LAKEKEEPER__SKIP_STORAGE_VALIDATION=true)")
        return
    if storage is None or not prerequisite:
        for name in STORAGE_CHECKS:
            report.skip(name, PREREQUISITE_FAILED)
        return
    started = time.perf_counter()
    results = await validate_storage(storage)
    elapsed = int((time.perf_counter() - started) * 1000)
    for check in results:
        report.add(check, elapsed)


async def build_candidate_storage(state: AppState, profile_json: Any, credential_json: Any) -> tuple[Any, Storage]:
    """The storage a request asks for, built (no IO) and with its endpoints checked against the policy."""
    profile = state.parse_profile(profile_json)
    validate_storage_layout(profile_json.get("storage-layout"))
    credential = state.parse_credential(profile_json["type"], credential_json)
    storage = state.build_storage(profile, credential)
    await state.check_endpoints(storage)
    return profile, storage


async def check_location_exclusive(
    state: AppState, project_id: str, storage: Storage, exclude: str | None = None
) -> None:
    """No two warehouses share storage, in any project (Lakekeeper checks one project): the catalog
    deletes and reads a warehouse's files with that warehouse's rights -- for ``file`` storage always
    the server's own -- so an overlapping warehouse of another project could purge or register this
    one's tables. Another project's warehouse is not named."""
    base = storage.base_location()
    for other in await warehouse_store.list_all_warehouses(state.store):
        if other.id == exclude:
            continue
        try:
            other_storage = await state.storage_for(other, io=False)
        except CatalogError:
            continue
        if other_storage.storage_type != storage.storage_type:
            continue
        other_base = other_storage.base_location()
        if is_sublocation(base, other_base) or is_sublocation(other_base, base):
            whose = f"existing warehouse {other.name}" if other.project_id == project_id else (
                "the storage of a warehouse in another project"
            )
            raise bad_request(f"Storage profile overlaps with {whose}", "CreateWarehouseStorageProfileOverlap")


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
