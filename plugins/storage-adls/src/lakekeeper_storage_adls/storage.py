"""``AdlsStorage``: one warehouse's ADLS / Azure Blob storage for the host (lakekeeper_host.service.storage.Storage).

Object IO goes through the Blob API (azure-storage-blob's async client), which ADLS Gen2 accounts
serve as well. Vended credentials are SAS tokens: directory-scoped over the table path (Lakekeeper's
behaviour, needs a hierarchical-namespace account), or with ``sas-scope: filesystem`` a container
SAS for accounts without one. They are signed with the account key (``shared-access-key``) or a
user-delegation key (``client-credentials``, ``azure-system-identity``).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from typing import Any

from azure.core.exceptions import (
    AzureError,
    ClientAuthenticationError,
    ResourceNotFoundError,
)
from azure.storage.blob import (
    BlobSasPermissions,
    ContainerSasPermissions,
    UserDelegationKey,
    generate_blob_sas,
    generate_container_sas,
)
from azure.storage.blob.aio import BlobServiceClient, ContainerClient

from lakekeeper_host.errors import CatalogError
from lakekeeper_host.service.storage import (
    DataAccess,
    StoragePermission,
    TableAccessRequest,
    TableConfig,
    ValidationCheck,
    is_sublocation,
)
from lakekeeper_host.store import new_id
from lakekeeper_storage_adls.locations import (
    ALTERNATIVE_SCHEMES,
    CANONICAL_SCHEME,
    AdlsLocation,
    InvalidAdlsLocation,
    canonical,
    scheme_of,
)
from lakekeeper_storage_adls.model import (
    AdlsCredential,
    AdlsProfile,
    AdlsStorageConfig,
    ClientCredentialsCredential,
    SharedAccessKeyCredential,
    SystemIdentityCredential,
)

log = logging.getLogger(__name__)

DELETE_CONCURRENCY = 16
# a vended SAS is served again for half its remaining validity, at most an hour (Lakekeeper's STC
# serve window), so repeated loads of a table answer the same credential
MAX_SAS_REUSE_SECONDS = 3600
CLOCK_SKEW = dt.timedelta(minutes=5)  # SAS and delegation keys start a little in the past
# a user-delegation key is fetched for this long (Azure's maximum is 7 days) and reused until a new
# SAS would outlive it
DELEGATION_KEY_LIFETIME = dt.timedelta(days=1)
_SAS_PERMISSIONS = {
    # Lakekeeper: read `rl`, read-write `rwal`, read-write-delete `rwadl` (the SDK writes them in Azure's order)
    StoragePermission.READ: {"read": True, "list": True},
    StoragePermission.READ_WRITE: {"read": True, "write": True, "add": True, "list": True},
    StoragePermission.READ_WRITE_DELETE: {"read": True, "write": True, "add": True, "delete": True, "list": True},
}


class StorageMisconfigured(CatalogError):
    def __init__(self, message: str):
        super().__init__(400, "StorageMisconfigured", message)


def os_error(exc: Exception, location: str) -> OSError:
    """Azure SDK errors as the OSError family the host expects from every storage."""
    code = getattr(exc, "error_code", None) or ""
    status = getattr(exc, "status_code", None)
    first_line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    message = f"{code or type(exc).__name__}: {first_line} ({location})"
    if isinstance(exc, ResourceNotFoundError) or status == 404:
        return FileNotFoundError(message)
    if isinstance(exc, ClientAuthenticationError) or status in (401, 403):
        return PermissionError(message)
    return OSError(message)


def sas_permissions(permission: StoragePermission, *, directory: bool) -> str:
    flags = _SAS_PERMISSIONS[permission]
    return str(BlobSasPermissions(**flags) if directory else ContainerSasPermissions(**flags))


class AdlsStorage:
    storage_type = "adls"

    def __init__(
        self,
        profile: AdlsProfile,
        credential: AdlsCredential | None,
        config: AdlsStorageConfig,
        *,
        system_identity_enabled: bool = False,
        sas_cache_capacity: int = 10000,
        clock: Callable[[], float] = time.time,
    ):
        self.profile = profile
        self.credential = credential
        self.config = config
        self.system_identity_enabled = system_identity_enabled
        self._clock = clock
        self._base = AdlsLocation(
            CANONICAL_SCHEME, profile.filesystem, profile.account_name, profile.dfs_host, profile.key_prefix or ""
        )
        self._service: BlobServiceClient | None = None
        self._token_credential: Any = None
        self._delegation_key: UserDelegationKey | None = None
        self._delegation_key_expiry: dt.datetime | None = None
        self._delegation_lock = asyncio.Lock()
        # (canonical table location, permission) -> (token, expires at ms, serve until epoch s)
        self._sas_cache: OrderedDict[tuple[str, StoragePermission], tuple[str, int, float]] = OrderedDict()
        self._sas_cache_capacity = sas_cache_capacity
        self._check_credential()

    # ------------------------------------------------------------------ credentials and clients

    def _check_credential(self) -> None:
        if self.credential is None:
            raise StorageMisconfigured("adls warehouses need a storage-credential (type az)")
        if isinstance(self.credential, SystemIdentityCredential) and not self.system_identity_enabled:
            raise StorageMisconfigured(
                "System identity credentials are disabled in this Lakekeeper deployment "
                "(LAKEKEEPER__ENABLE_AZURE_SYSTEM_CREDENTIALS)."
            )

    @property
    def credential_field(self) -> str:
        """The credential field a refusal points to."""
        if isinstance(self.credential, SharedAccessKeyCredential):
            return "storage-credential.key"
        if isinstance(self.credential, ClientCredentialsCredential):
            return "storage-credential.client-secret"
        return "storage-credential (azure-system-identity)"

    def _client_options(self) -> dict[str, Any]:
        options: dict[str, Any] = {"retry_total": 3, "connection_timeout": 10, "read_timeout": 60}
        if self.config.adls_ca_bundle:
            options["connection_verify"] = self.config.adls_ca_bundle
        return options

    def _make_token_credential(self) -> Any:
        from azure.identity.aio import ClientSecretCredential, DefaultAzureCredential

        authority = self.profile.authority
        if isinstance(self.credential, ClientCredentialsCredential):
            return ClientSecretCredential(
                self.credential.tenant_id,
                self.credential.client_id,
                self.credential.client_secret.get(),
                authority=authority,
            )
        # the machine's managed identity (or workload identity, or environment)
        return DefaultAzureCredential(authority=authority, exclude_interactive_browser_credential=True)

    def _service_client(self) -> BlobServiceClient:
        if self._service is None:
            if isinstance(self.credential, SharedAccessKeyCredential):
                credential: Any = {"account_name": self.profile.account_name, "account_key": self.credential.key.get()}
            else:
                self._token_credential = self._make_token_credential()
                credential = self._token_credential
            self._service = BlobServiceClient(
                self.profile.blob_endpoint, credential=credential, **self._client_options()
            )
        return self._service

    def _container(self) -> ContainerClient:
        return self._service_client().get_container_client(self.profile.filesystem)

    # ------------------------------------------------------------------ locations

    def base_location(self) -> str:
        return str(self._base)

    def normalize_location(self, location: str) -> str:
        return canonical(location)

    def is_allowed_location(self, location: str) -> bool:
        scheme = scheme_of(location)
        if scheme != CANONICAL_SCHEME and not (
            self.profile.allow_alternative_protocols and scheme in ALTERNATIVE_SCHEMES
        ):
            return False
        normalized = canonical(location)
        base = str(self._base)
        # strictly below the warehouse root: the root itself is not a table location
        return normalized != base and is_sublocation(normalized, base)

    def _blob_path(self, location: str) -> AdlsLocation:
        """The canonical location, which must lie in this warehouse's filesystem."""
        try:
            parsed = AdlsLocation.parse(location).canonical()
        except InvalidAdlsLocation as exc:
            raise OSError(str(exc)) from None
        if (parsed.filesystem, parsed.account, parsed.host) != (
            self._base.filesystem,
            self._base.account,
            self._base.host,
        ):
            raise OSError(f"{location} is not in the filesystem {self._base}")
        return parsed

    # ------------------------------------------------------------------ object IO

    async def write(self, location: str, data: bytes) -> None:
        path = self._blob_path(location)
        await self._call(location, self._container().upload_blob(path.path, data, overwrite=True))

    async def read(self, location: str) -> bytes:
        path = self._blob_path(location)

        async def download() -> bytes:
            stream = await self._container().download_blob(path.path)
            return await stream.readall()

        return await self._call(location, download())

    async def exists(self, location: str) -> bool:
        path = self._blob_path(location)
        return await self._call(location, self._container().get_blob_client(path.path).exists())

    async def delete(self, location: str) -> None:
        path = self._blob_path(location)
        try:
            await self._call(location, self._container().delete_blob(path.path))
        except FileNotFoundError:
            pass  # already gone: what the caller wanted

    async def _names(self, root: AdlsLocation, limit: int | None = None) -> AsyncIterator[tuple[str, bool]]:
        """(blob name, is a directory marker) of every blob below ``root``."""
        pager = self._container().list_blobs(name_starts_with=root.dir_prefix, include=["metadata"])
        count = 0
        try:
            async for blob in pager:
                # on hierarchical-namespace accounts directories are listed as blobs marked hdi_isfolder
                folder = (blob.metadata or {}).get("hdi_isfolder") == "true"
                yield blob.name, folder
                count += 1
                if limit is not None and count >= limit:
                    return
        except AzureError as exc:
            raise os_error(exc, str(root)) from exc

    async def list(self, prefix: str) -> AsyncIterator[str]:
        root = self._blob_path(prefix)
        async for name, folder in self._names(root):
            if not folder:
                yield str(root.child(name))

    async def is_empty(self, prefix: str) -> bool:
        async for _ in self.list(prefix):
            return False
        return True

    async def delete_prefix(self, prefix: str) -> int:
        """Delete blob by blob (Azurite has no DFS endpoint for a recursive directory delete).

        On hierarchical-namespace accounts the directory markers go last, deepest first, because
        a directory must be empty before it can be deleted.
        """
        root = self._blob_path(prefix)
        files, folders = [], []
        async for name, folder in self._names(root):
            (folders if folder else files).append(name)
        container = self._container()
        semaphore = asyncio.Semaphore(DELETE_CONCURRENCY)

        async def remove(name: str) -> None:
            async with semaphore:
                try:
                    await self._call(str(root.child(name)), container.delete_blob(name))
                except FileNotFoundError:
                    pass

        await asyncio.gather(*(remove(name) for name in files))
        for name in sorted(folders, key=lambda n: n.count("/"), reverse=True):
            await remove(name)
        return len(files)

    async def _call(self, location: str, operation: Any) -> Any:
        try:
            return await operation
        except AzureError as exc:
            raise os_error(exc, location) from exc

    # ------------------------------------------------------------------ vended credentials

    def _now(self) -> dt.datetime:
        return dt.datetime.fromtimestamp(self._clock(), dt.UTC)

    async def _user_delegation_key(self, needed_until: dt.datetime) -> UserDelegationKey:
        async with self._delegation_lock:
            if self._delegation_key is None or self._delegation_key_expiry < needed_until:
                now = self._now()
                expiry = max(needed_until, now + DELEGATION_KEY_LIFETIME)
                try:
                    key = await self._service_client().get_user_delegation_key(now - CLOCK_SKEW, expiry)
                except AzureError as exc:
                    raise CatalogError(
                        500,
                        "FailedToGetShortTermCredentials",
                        f"Failed to get a user delegation key with {self.credential_field}: "
                        f"{os_error(exc, self.profile.blob_endpoint)}",
                    ) from exc
                self._delegation_key, self._delegation_key_expiry = key, expiry
            return self._delegation_key

    async def sas_token(self, table_location: str, permission: StoragePermission) -> tuple[str, int]:
        """A SAS for one table (its directory, or the whole filesystem with ``sas-scope: filesystem``)."""
        location = self._blob_path(table_location)
        now = self._now()
        expiry = now + dt.timedelta(seconds=self.profile.sas_validity_seconds)
        signing: dict[str, Any]
        if isinstance(self.credential, SharedAccessKeyCredential):
            signing = {"account_key": self.credential.key.get()}
        else:
            signing = {"user_delegation_key": await self._user_delegation_key(expiry)}
        common = {
            "account_name": self.profile.account_name,
            "container_name": self.profile.filesystem,
            "start": now - CLOCK_SKEW,
            "expiry": expiry,
            # https only, except for a plain-http endpoint (emulators)
            "protocol": None if self.profile.blob_endpoint.startswith("http://") else "https",
            **signing,
        }
        directory = self.profile.sas_scope == "directory"
        if directory:
            token = generate_blob_sas(
                blob_name=location.path.strip("/"),
                permission=sas_permissions(permission, directory=True),
                is_directory=True,
                **common,
            )
        else:
            token = generate_container_sas(permission=sas_permissions(permission, directory=False), **common)
        return token, int(expiry.timestamp() * 1000)

    async def vended_sas(self, table_location: str, permission: StoragePermission) -> tuple[str, int]:
        """``sas_token``, reused for half its remaining validity (at most an hour)."""
        key = (canonical(table_location), permission)
        now = self._clock()
        cached = self._sas_cache.get(key)
        if cached is not None and cached[2] > now:
            self._sas_cache.move_to_end(key)
            return cached[0], cached[1]
        token, expires_at_ms = await self.sas_token(table_location, permission)
        if self._sas_cache_capacity > 0:
            serve_for = min((expires_at_ms / 1000 - now) / 2, MAX_SAS_REUSE_SECONDS)
            self._sas_cache[key] = (token, expires_at_ms, now + serve_for)
            self._sas_cache.move_to_end(key)
            while len(self._sas_cache) > self._sas_cache_capacity:
                self._sas_cache.popitem(last=False)
        return token, expires_at_ms

    def _vends(self, access: DataAccess) -> bool:
        if not self.profile.sas_enabled:
            return False
        # ADLS has no remote signing: any server-delegated request gets a SAS (Lakekeeper)
        client_managed_only = access & DataAccess.CLIENT_MANAGED and not access & (
            DataAccess.VENDED_CREDENTIALS | DataAccess.REMOTE_SIGNING
        )
        return not client_managed_only

    def sas_property_key(self) -> str:
        return f"adls.sas-token.{self.profile.account_name}.{self.profile.dfs_host}"

    async def table_config(self, request: TableAccessRequest) -> TableConfig:
        account_host = f"{self.profile.account_name}.{self.profile.dfs_host}"
        config: dict[str, str] = {"adls.account-name": self.profile.account_name}
        if not self._vends(request.access):
            return TableConfig(config=config)
        token, expires_at_ms = await self.vended_sas(request.table_location, request.permission)
        creds = {
            "adls.account-name": self.profile.account_name,
            f"adls.sas-token.{account_host}": token,
            f"adls.sas-token-expires-at-ms.{account_host}": str(expires_at_ms),
            "expiration-time": str(expires_at_ms),
        }
        if self.profile.endpoint:
            # a custom Blob endpoint (emulator, private endpoint): clients cannot derive it from the
            # location's host, so they get a connection string carrying the endpoint and the SAS
            creds["adls.connection-string"] = f"BlobEndpoint={self.profile.endpoint};SharedAccessSignature={token}"
        if request.refresh_credentials_endpoint:
            creds["adls.refresh-credentials-endpoint"] = request.refresh_credentials_endpoint
        config |= creds
        return TableConfig(
            config=config,
            storage_credentials=[{"prefix": request.table_location, "config": creds}],
            expires_at_ms=expires_at_ms,
        )

    def catalog_defaults(self, *, soft_delete_enabled: bool) -> dict[str, str]:
        return {}

    def immutable_fields(self) -> tuple[str, ...]:
        return ("filesystem", "key-prefix", "authority-host", "host")

    def vended_container(self, token: str) -> ContainerClient:
        """A client that holds nothing but a vended SAS (validation, tests)."""
        return ContainerClient(
            self.profile.blob_endpoint, self.profile.filesystem, credential=token, **self._client_options()
        )

    # ------------------------------------------------------------------ validation

    async def validate(self, *, vending: bool = True) -> list[ValidationCheck]:
        """Lakekeeper's probe (§2.6) on a fresh location below the warehouse root."""
        test_location = self._base.child(f"{self._base.dir_prefix}{new_id()}")
        try:
            self._service_client()
        except (AzureError, ValueError) as exc:
            return [ValidationCheck("storage-client-initialized", "failed", f"{type(exc).__name__}: {exc}")]
        checks = [ValidationCheck("storage-client-initialized", "passed")]

        async def direct() -> ValidationCheck:
            probe = str(test_location.child(f"{test_location.path}/metadata/test"))
            try:
                await self.write(probe, b"test")
                if await self.read(probe) != b"test":
                    raise OSError("read back different content")
                await self.delete(probe)
            except OSError as exc:
                return ValidationCheck("lakekeeper-read-write", "failed", self._explain(exc, probe))
            return ValidationCheck("lakekeeper-read-write", "passed")

        jobs = [direct()]
        if vending and self.profile.sas_enabled:
            jobs.append(self._validate_vending(test_location))
        results = await asyncio.gather(*jobs)
        checks.append(results[0])
        if len(results) > 1:
            checks.extend(results[1])
        else:
            reason = "sas-enabled is false for this profile" if not self.profile.sas_enabled else "not requested"
            checks.append(ValidationCheck("vended-credentials-issued", "skipped", reason))
        checks.append(await self._cleanup(test_location))
        return checks

    def _explain(self, exc: OSError, location: str) -> str:
        if isinstance(exc, PermissionError):
            return f"{self.credential_field} was refused by {self.profile.blob_endpoint}: {exc}"
        if isinstance(exc, FileNotFoundError) and "ContainerNotFound" in str(exc):
            return f"storage-profile.filesystem {self.profile.filesystem!r} does not exist: {exc}"
        return f"{location}: {exc}"

    async def _validate_vending(self, test_location: AdlsLocation) -> list[ValidationCheck]:
        sub_location = test_location.child(f"{test_location.path}/vended-test")
        try:
            token, _ = await self.sas_token(str(sub_location), StoragePermission.READ_WRITE_DELETE)
        except CatalogError as exc:
            return [ValidationCheck("vended-credentials-issued", "failed", exc.message)]
        checks = [ValidationCheck("vended-credentials-issued", "passed")]
        allowed = f"{sub_location.path}/metadata/vended/{new_id()}.gz.metadata.json"
        forbidden = f"{test_location.path}/metadata/forbidden-write-test"
        async with self.vended_container(token) as client:
            try:
                await client.upload_blob(allowed, b"test", overwrite=True)
                body = await (await client.download_blob(allowed)).readall()
                if body != b"test":
                    raise OSError("read back different content")
                await client.delete_blob(allowed)
                checks.append(ValidationCheck("vended-credentials-read-write", "passed"))
            except (AzureError, OSError) as exc:
                hint = ""
                if self.profile.sas_scope == "directory" and getattr(exc, "status_code", None) == 403:
                    hint = (
                        " (directory SAS need a storage account with hierarchical namespace; "
                        "for other accounts set sas-scope to filesystem)"
                    )
                message = f"{os_error(exc, allowed) if isinstance(exc, AzureError) else exc}{hint}"
                checks.append(ValidationCheck("vended-credentials-read-write", "failed", message))
            if self.profile.sas_scope != "directory":
                checks.append(
                    ValidationCheck(
                        "vended-credentials-scope-enforced",
                        "skipped",
                        "sas-scope is filesystem: vended SAS cover the whole filesystem, not one table",
                    )
                )
                return checks
            try:
                await client.upload_blob(forbidden, b"forbidden-content", overwrite=True)
            except AzureError:
                checks.append(ValidationCheck("vended-credentials-scope-enforced", "passed"))
            else:
                await self.delete(str(test_location.child(forbidden)))
                checks.append(
                    ValidationCheck(
                        "vended-credentials-scope-enforced",
                        "failed",
                        f"A SAS for {sub_location} could write to its parent {test_location}",
                    )
                )
        return checks

    async def _cleanup(self, test_location: AdlsLocation) -> ValidationCheck:
        try:
            await self.delete_prefix(str(test_location))
            if not await self.is_empty(str(test_location)):
                return ValidationCheck("cleanup", "failed", f"Files are left after cleanup in {test_location}")
        except OSError as exc:
            return ValidationCheck("cleanup", "failed", self._explain(exc, str(test_location)))
        return ValidationCheck("cleanup", "passed")

    async def close(self) -> None:
        service, self._service = self._service, None
        credential, self._token_credential = self._token_credential, None
        if service is not None:
            await service.close()
        if credential is not None:
            await credential.close()
