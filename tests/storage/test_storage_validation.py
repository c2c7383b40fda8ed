"""The host's storage validation sequence (service/storage_validation.py) and the words it uses for
failures (service/storage_errors.py), on the built-in file storage with test-only probes.

The S3, ADLS and GCS plugins run the same sequence against their real local stores
(plugins/storage-*/tests); here each branch of it is driven on purpose.
"""

from __future__ import annotations

import socket
import ssl
import threading

import pytest

from lakekeeper_host.builtins.storage_file import FileProfile, FileStorage
from lakekeeper_host.errors import CatalogError
from lakekeeper_host.service.storage import ValidationProbes, VendedAccess, is_sublocation
from lakekeeper_host.service.storage_errors import (
    StorageFailure,
    describe_exception,
    network_failure,
    storage_error,
)
from lakekeeper_host.service.storage_validation import STORAGE_CHECKS, validate_storage

SECRET = "internal-banner-secret"


class ProbedStorage(FileStorage):
    """A file storage whose vended "credentials" allow writes below one location only (or anywhere)."""

    def __init__(self, root, *, enforce_scope=True, connect_error=None, vend_error=None, io_error=None, **vended):
        super().__init__(FileProfile(root=str(root)))
        self.enforce_scope = enforce_scope
        self.connect_error = connect_error
        self.vend_error = vend_error
        self.io_error = io_error
        self.vended_options = vended
        self.vended_for: list[str] = []
        self.closed = 0

    async def write(self, location, data):
        if self.io_error is not None:
            raise self.io_error
        await super().write(location, data)

    def validation_probes(self) -> ValidationProbes:
        return ValidationProbes(connect=self._connect, vend=self._vend, explain=lambda exc, loc: f"explained: {exc}")

    async def _connect(self):
        if self.connect_error is not None:
            raise self.connect_error

    async def _vend(self, location: str) -> VendedAccess:
        if self.vend_error is not None:
            raise self.vend_error
        self.vended_for.append(location)

        async def write(target, data):
            if self.enforce_scope and not is_sublocation(target, location):
                raise PermissionError(f"access denied: {target}")
            await FileStorage.write(self, target, data)

        async def close():
            self.closed += 1

        return VendedAccess(write=write, read=self.read, delete=self.delete, close=close, **self.vended_options)


def statuses(checks):
    assert [c.name for c in checks] == list(STORAGE_CHECKS)
    return {c.name: c.status for c in checks}


async def leftovers(storage):
    return [item async for item in storage.list(storage.base_location())]


async def test_every_check_passes_and_nothing_is_left(tmp_path):
    storage = ProbedStorage(tmp_path / "wh")
    checks = await validate_storage(storage)
    assert set(statuses(checks).values()) == {"passed"}
    assert storage.vended_for and storage.vended_for[0].endswith("/vended-test")
    assert storage.closed == 1
    assert await leftovers(storage) == []


async def test_credentials_that_reach_outside_their_location_fail_validation(tmp_path):
    storage = ProbedStorage(tmp_path / "wh", enforce_scope=False)
    checks = {c.name: c for c in await validate_storage(storage)}
    assert checks["vended-credentials-scope-enforced"].status == "failed"
    assert "outside it" in checks["vended-credentials-scope-enforced"].message
    assert checks["cleanup"].status == "passed" and await leftovers(storage) == []


async def test_a_store_that_checks_no_credentials_can_be_reported_as_skipped(tmp_path):
    storage = ProbedStorage(tmp_path / "wh", enforce_scope=False, scope_unenforced_reason="an emulator")
    checks = {c.name: c for c in await validate_storage(storage)}
    assert checks["vended-credentials-scope-enforced"].status == "skipped"
    assert checks["vended-credentials-scope-enforced"].message == "an emulator"
    storage = ProbedStorage(tmp_path / "wh2", scope_not_checked="a container-wide SAS")
    checks = {c.name: c for c in await validate_storage(storage)}
    assert (
        checks["vended-credentials-scope-enforced"].status,
        checks["vended-credentials-scope-enforced"].message,
    ) == (
        "skipped",
        "a container-wide SAS",
    )


async def test_a_client_that_cannot_be_built_skips_every_probe(tmp_path):
    storage = ProbedStorage(tmp_path / "wh", connect_error=CatalogError(400, "StorageMisconfigured", "no client"))
    checks = await validate_storage(storage)
    assert statuses(checks) == {
        "storage-client-initialized": "failed",
        **{name: "skipped" for name in STORAGE_CHECKS[1:]},
    }
    assert checks[0].message == "no client"
    assert storage.vended_for == []


async def test_credentials_that_cannot_be_issued_skip_their_probes(tmp_path):
    storage = ProbedStorage(
        tmp_path / "wh", vend_error=CatalogError(500, "FailedToGetShortTermCredentials", "STS said no")
    )
    checks = {c.name: c for c in await validate_storage(storage)}
    assert checks["lakekeeper-read-write"].status == "passed"
    assert (checks["vended-credentials-issued"].status, checks["vended-credentials-issued"].message) == (
        "failed",
        "STS said no",
    )
    assert checks["vended-credentials-read-write"].status == "skipped"
    assert checks["vended-credentials-scope-enforced"].status == "skipped"


async def test_no_vending_is_reported_with_the_plugins_reason(tmp_path):
    storage = FileStorage(FileProfile(root=str(tmp_path / "wh")))
    checks = {c.name: c for c in await validate_storage(storage)}
    assert checks["lakekeeper-read-write"].status == "passed"
    for name in ("vended-credentials-issued", "vended-credentials-read-write", "vended-credentials-scope-enforced"):
        assert (checks[name].status, checks[name].message) == ("skipped", "file storage vends no credentials")


class SdkError(Exception):
    """Stands for an SDK's exception, whose text quotes what the endpoint answered."""


async def test_an_sdk_error_is_described_without_its_text(tmp_path):
    storage = ProbedStorage(tmp_path / "wh", io_error=SdkError(f"501 Not Implemented: <Message>{SECRET}</Message>"))
    checks = {c.name: c for c in await validate_storage(storage)}
    message = checks["lakekeeper-read-write"].message
    assert checks["lakekeeper-read-write"].status == "failed"
    assert SECRET not in message and "SdkError" in message


async def test_the_plugin_explains_failures_of_its_own_io(tmp_path):
    storage = ProbedStorage(tmp_path / "wh", io_error=PermissionError("access denied: somewhere"))
    checks = {c.name: c for c in await validate_storage(storage)}
    assert checks["lakekeeper-read-write"].message == "explained: access denied: somewhere"


# ---------------------------------------------------------------- the words for failures


def test_storage_error_names_what_failed_and_only_known_codes():
    error = storage_error(StorageFailure.NOT_FOUND, "s3://b/k", status=404, code="NoSuchKey", known_codes={"NoSuchKey"})
    assert isinstance(error, FileNotFoundError) and str(error) == "not found (HTTP 404 NoSuchKey): s3://b/k"
    error = storage_error(StorageFailure.ACCESS_DENIED, "s3://b/k", status=403, code=SECRET, known_codes={"NoSuchKey"})
    assert isinstance(error, PermissionError) and SECRET not in str(error)
    assert isinstance(storage_error(StorageFailure.REFUSED, "x"), ConnectionRefusedError)
    assert isinstance(storage_error(StorageFailure.TIMEOUT, "x"), TimeoutError)
    assert str(storage_error(StorageFailure.UNEXPECTED_RESPONSE, "x", status=501, note="hint")) == (
        "unexpected response (HTTP 501): x (hint)"
    )


def _wrapped(cause: BaseException) -> Exception:
    """``cause`` two levels down, the way SDKs wrap transport errors."""
    try:
        try:
            raise cause
        except BaseException as inner:
            raise SdkError(f"request failed: {SECRET}") from inner
    except SdkError as outer:
        try:
            raise RuntimeError("retry failed") from outer
        except RuntimeError as top:
            return top


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _refused() -> OSError:
    try:
        socket.create_connection(("127.0.0.1", _closed_port()), timeout=5)
    except OSError as exc:
        return exc
    raise AssertionError("connected to a closed port")


def _tls_failure() -> ssl.SSLError:
    """A TLS handshake with a loopback listener that answers in plain HTTP."""
    server = socket.create_server(("127.0.0.1", 0))

    def answer():
        conn, _ = server.accept()
        conn.recv(4096)
        conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")
        conn.close()

    threading.Thread(target=answer, daemon=True).start()
    context = ssl.create_default_context()
    try:
        with socket.create_connection(server.getsockname(), timeout=5) as sock:
            context.wrap_socket(sock, server_hostname="localhost")
    except ssl.SSLError as exc:
        return exc
    finally:
        server.close()
    raise AssertionError("a TLS handshake with a plain HTTP server succeeded")


@pytest.mark.parametrize(
    "make,failure",
    [
        (_refused, StorageFailure.REFUSED),
        (_tls_failure, StorageFailure.TLS),
        (lambda: socket.gaierror(-2, "Name or service not known"), StorageFailure.UNRESOLVABLE),
        (lambda: TimeoutError("timed out"), StorageFailure.TIMEOUT),
    ],
)
def test_network_failures_are_found_inside_sdk_exceptions(make, failure):
    exc = _wrapped(make())
    assert network_failure(exc) is failure
    assert describe_exception(exc) == failure.value
    assert SECRET not in describe_exception(exc)


def test_describe_exception_keeps_the_words_of_plugins_and_local_errors():
    assert describe_exception(CatalogError(400, "StorageMisconfigured", "fix storage-profile.bucket")) == (
        "fix storage-profile.bucket"
    )
    assert describe_exception(FileNotFoundError("not found: file:///x")) == "not found: file:///x"
    assert SECRET not in describe_exception(SdkError(SECRET))
