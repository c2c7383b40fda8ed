"""Storage validation, written once for every storage plugin (Lakekeeper's physical probe).

Creating a warehouse, replacing its storage profile or credential, and the ``validate-*`` routes
probe the store before anything is saved. The host runs the sequence; a storage plugin supplies only
the parts that differ between stores, through ``Storage.validation_probes()``::

    def validation_probes(self) -> ValidationProbes:
        return ValidationProbes(
            connect=self._connect,                      # build the SDK clients (no request yet)
            vend=self._vended_access if self.profile.sts_enabled else None,
            no_vending_reason="sts-enabled is false for this profile",
        )

The sequence, on a fresh location ``<warehouse root>/<uuid>``, reported as ``ValidationCheck``s:

1. ``storage-client-initialized``: ``connect()``.
2. ``lakekeeper-read-write``: write, read back and delete ``<test>/metadata/test`` with the storage's
   own ``write``/``read``/``delete``, and, at the same time,
3. ``vended-credentials-issued``: ``vend(<test>/vended-test)`` returns a ``VendedAccess`` holding only
   credentials for that location; ``vended-credentials-read-write``: write, read, delete below it
   with them; ``vended-credentials-scope-enforced``: a write to ``<test>/metadata/...``, outside the
   vended location, must raise ``PermissionError``.
4. ``cleanup``: ``delete_prefix(<test>)``, then the location must be empty.

Failure messages come from ``describe_exception`` (see ``storage_errors``): a plugin's own errors as
they are, never what a remote server answered. Which endpoints a storage may reach at all is checked
before this sequence runs (``endpoints.check_endpoints``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from lakekeeper_host.ids import new_id
from lakekeeper_host.service.storage import Storage, ValidationCheck, ValidationProbes, VendedAccess, join_location
from lakekeeper_host.service.storage_errors import describe_exception

CLIENT_INITIALIZED = "storage-client-initialized"
READ_WRITE = "lakekeeper-read-write"
VENDED_ISSUED = "vended-credentials-issued"
VENDED_READ_WRITE = "vended-credentials-read-write"
VENDED_SCOPE = "vended-credentials-scope-enforced"
CLEANUP = "cleanup"
STORAGE_CHECKS = (CLIENT_INITIALIZED, READ_WRITE, VENDED_ISSUED, VENDED_READ_WRITE, VENDED_SCOPE, CLEANUP)
PREREQUISITE_FAILED = "A prerequisite check failed"
PROBE_CONTENT = b"test"


def _skipped(names: tuple[str, ...], reason: str) -> list[ValidationCheck]:
    return [ValidationCheck(name, "skipped", reason) for name in names]


def _failure(probes: ValidationProbes, exc: BaseException, location: str) -> str:
    if probes.explain is not None and isinstance(exc, OSError):
        return probes.explain(exc, location)
    return describe_exception(exc)


async def _round_trip(
    write: Callable[[str, bytes], Awaitable[None]],
    read: Callable[[str], Awaitable[bytes]],
    delete: Callable[[str], Awaitable[None]],
    location: str,
) -> None:
    await write(location, PROBE_CONTENT)
    if await read(location) != PROBE_CONTENT:
        raise OSError(f"read back different content: {location}")
    await delete(location)


async def _read_write(storage: Storage, probes: ValidationProbes, test_location: str) -> ValidationCheck:
    probe = join_location(test_location, "metadata", "test")
    try:
        await _round_trip(storage.write, storage.read, storage.delete, probe)
    except Exception as exc:  # noqa: BLE001 - any failure of the store is a failed check, not a 500
        return ValidationCheck(READ_WRITE, "failed", _failure(probes, exc, probe))
    return ValidationCheck(READ_WRITE, "passed")


async def _vending(probes: ValidationProbes, test_location: str) -> list[ValidationCheck]:
    assert probes.vend is not None
    vended_location = join_location(test_location, "vended-test")
    try:
        access = await probes.vend(vended_location)
    except Exception as exc:  # noqa: BLE001
        return [
            ValidationCheck(VENDED_ISSUED, "failed", describe_exception(exc)),
            *_skipped((VENDED_READ_WRITE, VENDED_SCOPE), PREREQUISITE_FAILED),
        ]
    checks = [ValidationCheck(VENDED_ISSUED, "passed")]
    try:
        allowed = join_location(vended_location, "metadata", "vended", f"{new_id()}.gz.metadata.json")
        try:
            await _round_trip(access.write, access.read, access.delete, allowed)
            checks.append(ValidationCheck(VENDED_READ_WRITE, "passed"))
        except Exception as exc:  # noqa: BLE001
            checks.append(ValidationCheck(VENDED_READ_WRITE, "failed", describe_exception(exc)))
        checks.append(await _scope_enforced(access, vended_location, test_location))
    finally:
        await access.close()
    return checks


async def _scope_enforced(access: VendedAccess, vended_location: str, test_location: str) -> ValidationCheck:
    if access.scope_not_checked is not None:
        return ValidationCheck(VENDED_SCOPE, "skipped", access.scope_not_checked)
    # below the test location, so cleanup removes it should the store accept it
    forbidden = join_location(test_location, "metadata", "forbidden-write-test")
    try:
        await access.write(forbidden, b"forbidden-content")
    except PermissionError:
        return ValidationCheck(VENDED_SCOPE, "passed")
    except Exception as exc:  # noqa: BLE001
        return ValidationCheck(VENDED_SCOPE, "failed", describe_exception(exc))
    if access.scope_unenforced_reason is not None:
        return ValidationCheck(VENDED_SCOPE, "skipped", access.scope_unenforced_reason)
    return ValidationCheck(
        VENDED_SCOPE, "failed", f"Credentials vended for {vended_location} could also write {forbidden}, outside it"
    )


async def _cleanup(storage: Storage, probes: ValidationProbes, test_location: str) -> ValidationCheck:
    try:
        await storage.delete_prefix(test_location)
        if not await storage.is_empty(test_location):
            return ValidationCheck(CLEANUP, "failed", f"Files are left after cleanup in {test_location}")
    except Exception as exc:  # noqa: BLE001
        return ValidationCheck(CLEANUP, "failed", _failure(probes, exc, test_location))
    return ValidationCheck(CLEANUP, "passed")


async def validate_storage(storage: Storage) -> list[ValidationCheck]:
    """Run the probe sequence on ``storage``; one ``ValidationCheck`` for each of ``STORAGE_CHECKS``."""
    probes = storage.validation_probes()
    try:
        await probes.connect()
    except Exception as exc:  # noqa: BLE001
        return [
            ValidationCheck(CLIENT_INITIALIZED, "failed", describe_exception(exc)),
            *_skipped(STORAGE_CHECKS[1:], PREREQUISITE_FAILED),
        ]
    checks = [ValidationCheck(CLIENT_INITIALIZED, "passed")]
    test_location = join_location(storage.base_location(), new_id())
    if probes.vend is None:
        checks.append(await _read_write(storage, probes, test_location))
        checks.extend(_skipped((VENDED_ISSUED, VENDED_READ_WRITE, VENDED_SCOPE), probes.no_vending_reason))
    else:
        direct, vended = await asyncio.gather(
            _read_write(storage, probes, test_location), _vending(probes, test_location)
        )
        checks.extend([direct, *vended])
    checks.append(await _cleanup(storage, probes, test_location))
    return checks
