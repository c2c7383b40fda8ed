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
from lakekeeper_host.service.endpoints import StorageEndpoint
from lakekeeper_host.service.storage import (
    DataAccess,
    StoragePermission,
    TableAccessRequest,
    TableConfig,
    ValidationProbes,
    VendedAccess,
    is_table_location,
)
from lakekeeper_host.service.storage_errors import answer_error, network_error, network_failure
from lakekeeper_storage_adls.locations import (
    ALTERNATIVE_SCHEMES,
    CANONICAL_SCHEME,
    AdlsLocation,
    InvalidAdlsLocation,
    canonical,
)
from lakekeeper_storage_adls.model import (
    DEFAULT_AUTHORITY_HOST,
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


# Azure Storage and Entra ID error codes that may appear in a message: fixed words, never the
# service's free text
KNOWN_CODES = frozenset(
    {
        "AccountIsDisabled",
        "AuthenticationFailed",
        "AuthorizationFailure",
        "AuthorizationPermissionMismatch",
        "AuthorizationProtocolMismatch",
        "AuthorizationResourceTypeMismatch",
        "BlobNotFound",
        "ContainerNotFound",
        "FilesystemNotFound",
        "InsufficientAccountPermissions",
        "InvalidAuthenticationInfo",
        "KeyBasedAuthenticationNotPermitted",
        "NoAuthenticationInformation",
        "OperationTimedOut",
        "PathNotFound",
        "ResourceNotFound",
        "ServerBusy",
    }
)


def os_error(exc: Exception, location: str, *, note: str | None = None) -> OSError:
    """Azure SDK errors as the OSError family the host expects from every storage, in words that
    quote nothing the endpoint answered (``storage_errors``); the full error goes to the log."""
    status = getattr(exc, "status_code", None)
    not_found = isinstance(exc, ResourceNotFoundError)
    denied = isinstance(exc, ClientAuthenticationError)
    # no answer at all (a token request's neither): a network failure, or one we cannot name
    if not isinstance(status, int) and (network_failure(exc) is not None or not (not_found or denied)):
        return network_error(exc, location, note=note)
    return answer_error(
        exc,
        status if isinstance(status, int) else None,
        location,
        not_found=not_found,
        denied=denied,
        code=getattr(exc, "error_code", None),
        known_codes=KNOWN_CODES,
        note=note,
    )


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

    def endpoints(self) -> list[StorageEndpoint]:
        """The Blob endpoint and, for credentials that get Entra ID tokens, the authority host."""
        if self.profile.endpoint:
            field_name = "storage-profile.endpoint"
        elif self.profile.host:
            field_name = "storage-profile.host"
        else:
            field_name = "storage-profile.account-name (the Azure Blob endpoint)"
        found = [StorageEndpoint(field_name, self.profile.blob_endpoint)]
        if isinstance(self.credential, (ClientCredentialsCredential, SystemIdentityCredential)):
            authority = self.profile.authority_host
            found.append(
                StorageEndpoint("storage-profile.authority-host", authority)
                if authority
                else StorageEndpoint("storage-profile.authority-host (default)", DEFAULT_AUTHORITY_HOST)
            )
        return found

    def _client_options(self) -> dict[str, Any]:
        # Redirects are not followed: they could lead anywhere, past the endpoint policy. A request that
        # could not be sent (connection refused, TLS, a name that does not resolve) is not retried: the
        # Blob SDK waits 15 s, then 45 s, between tries, so validation would run into the request time
        # limit instead of saying what failed. Answers (throttling, 5xx) are retried as before.
        options: dict[str, Any] = {
            "retry_total": 3,
            "retry_connect": 0,
            "connection_timeout": 10,
            "read_timeout": 60,
            "permit_redirects": False,
        }
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
        alternatives = ALTERNATIVE_SCHEMES if self.profile.allow_alternative_protocols else ()
        return is_table_location(location, str(self._base), (CANONICAL_SCHEME, *alternatives), canonical)

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
        await self._upload(self._container(), location, data)

    async def read(self, location: str) -> bytes:
        return await self._download(self._container(), location)

    async def exists(self, location: str) -> bool:
        path = self._blob_path(location)
        return await self._call(location, self._container().get_blob_client(path.path).exists())

    async def delete(self, location: str) -> None:
        await self._delete_blob(self._container(), location)

    async def _upload(self, container: ContainerClient, location: str, data: bytes, note: str | None = None) -> None:
        path = self._blob_path(location)
        await self._call(location, container.upload_blob(path.path, data, overwrite=True), note=note)

    async def _download(self, container: ContainerClient, location: str, note: str | None = None) -> bytes:
        path = self._blob_path(location)

        async def download() -> bytes:
            stream = await container.download_blob(path.path)
            return await stream.readall()

        return await self._call(location, download(), note=note)

    async def _delete_blob(self, container: ContainerClient, location: str, note: str | None = None) -> None:
        path = self._blob_path(location)
        try:
            await self._call(location, container.delete_blob(path.path), note=note)
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

    async def _call(self, location: str, operation: Any, note: str | None = None) -> Any:
        try:
            return await operation
        except AzureError as exc:
            raise os_error(exc, location, note=note) from exc

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

    def validation_probes(self) -> ValidationProbes:
        return ValidationProbes(
            connect=self._connect,
            vend=self._vended_access if self.profile.sas_enabled else None,
            no_vending_reason="sas-enabled is false for this profile",
            explain=self._explain,
        )

    async def _connect(self) -> None:
        try:
            self._service_client()
        except (AzureError, ValueError) as exc:  # raised before any request: our own words
            raise StorageMisconfigured(f"The Blob client cannot be created: {type(exc).__name__}: {exc}") from exc

    def _explain(self, exc: OSError, location: str) -> str:
        if isinstance(exc, PermissionError):
            return f"{self.credential_field} was refused by {self.profile.blob_endpoint}: {exc}"
        if isinstance(exc, FileNotFoundError) and "ContainerNotFound" in str(exc):
            return f"storage-profile.filesystem {self.profile.filesystem!r} does not exist: {exc}"
        return str(exc)

    async def _vended_access(self, location: str) -> VendedAccess:
        token, _ = await self.sas_token(location, StoragePermission.READ_WRITE_DELETE)
        client = self.vended_container(token)
        directory = self.profile.sas_scope == "directory"
        hint = (
            "directory SAS need a storage account with hierarchical namespace; "
            "for other accounts set sas-scope to filesystem"
        )
        note = hint if directory else None
        return VendedAccess(
            write=lambda target, data: self._upload(client, target, data, note),
            read=lambda target: self._download(client, target, note),
            delete=lambda target: self._delete_blob(client, target, note),
            close=client.close,
            scope_not_checked=None
            if directory
            else "sas-scope is filesystem: vended SAS cover the whole filesystem, not one table",
        )

    async def close(self) -> None:
        service, self._service = self._service, None
        credential, self._token_credential = self._token_credential, None
        if service is not None:
            await service.close()
        if credential is not None:
            await credential.close()
