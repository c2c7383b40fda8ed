"""``GcsStorage``: one warehouse's Google Cloud Storage for the host (lakekeeper_host.service.storage.Storage).

google-cloud-storage is synchronous, so every call runs in a worker thread. The client and the
google-auth credentials behind it are created on first use and shared (the host keeps one storage
object per warehouse version), so building the object stays cheap.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx

from lakekeeper_host.errors import CatalogError, bad_request
from lakekeeper_host.service.storage import (
    DataAccess,
    StoragePermission,
    TableAccessRequest,
    TableConfig,
    ValidationCheck,
    is_sublocation,
)
from lakekeeper_host.store import new_id
from lakekeeper_storage_gcs.locations import GcsLocation, InvalidGcsLocation, canonical
from lakekeeper_storage_gcs.model import (
    GcsCredential,
    GcsProfile,
    GcsServiceAccountKeyCredential,
    GcsStorageConfig,
    GcsSystemIdentityCredential,
)
from lakekeeper_storage_gcs.sts import (
    STORAGE_SCOPE,
    DownscopedToken,
    SourceToken,
    TokenCache,
    access_boundary,
    exchange_token,
)

log = logging.getLogger(__name__)

DELETE_CONCURRENCY = 16
LIST_PAGE_SIZE = 1000  # the most one GCS listing request returns


class StorageMisconfigured(CatalogError):
    def __init__(self, message: str):
        super().__init__(400, "StorageMisconfigured", message)


def os_error(exc: Exception, location: str, credential_field: str) -> OSError:
    """google-cloud-storage and google-auth errors as the OSError family the host expects."""
    from google.api_core import exceptions as api
    from google.auth import exceptions as auth

    if isinstance(exc, auth.GoogleAuthError):
        # Lakekeeper's own token could not be obtained: the credential is what the user must fix
        return PermissionError(f"{credential_field} was not accepted: {exc} ({location})")
    if isinstance(exc, api.NotFound):
        return FileNotFoundError(f"{exc.message} ({location})")
    if isinstance(exc, (api.Forbidden, api.Unauthorized)):
        return PermissionError(f"{exc.message} ({location})")
    return OSError(f"{type(exc).__name__}: {exc} ({location})")


class GcsStorage:
    storage_type = "gcs"
    list_page_size = LIST_PAGE_SIZE

    def __init__(
        self,
        profile: GcsProfile,
        credential: GcsCredential | None,
        config: GcsStorageConfig,
        cache: TokenCache,
        *,
        system_identity_enabled: bool = False,
    ):
        if credential is None:
            raise bad_request(
                "Invalid storage-credential: a gcs warehouse needs one "
                '({"type": "gcs", "credential-type": "service-account-key", "key": {...}} or gcp-system-identity)',
                "InvalidStorageCredential",
            )
        if isinstance(credential, GcsSystemIdentityCredential) and not system_identity_enabled:
            raise StorageMisconfigured(
                "System identity credentials are disabled in this Lakekeeper deployment "
                "(LAKEKEEPER__ENABLE_GCP_SYSTEM_CREDENTIALS)."
            )
        self.profile = profile
        self.credential = credential
        self.config = config
        self.cache = cache
        self._base = GcsLocation(profile.bucket, profile.base_key())
        self._lock = threading.Lock()
        self._google_credentials: Any = None
        self._project: str | None = None
        self._source: SourceToken | None = None
        self._client_instance: Any = None

    # ------------------------------------------------------------------ credentials and clients

    @property
    def credential_field(self) -> str:
        """The request field that names Lakekeeper's own identity (for error messages)."""
        if isinstance(self.credential, GcsServiceAccountKeyCredential):
            return "storage-credential.key"
        return "storage-credential (gcp-system-identity)"

    def _credentials(self) -> tuple[Any, str | None]:
        with self._lock:
            if self._google_credentials is None:
                if isinstance(self.credential, GcsServiceAccountKeyCredential):
                    from google.oauth2 import service_account

                    self._google_credentials = service_account.Credentials.from_service_account_info(
                        self.credential.key.info(), scopes=[STORAGE_SCOPE]
                    )
                    self._project = self.credential.key.project_id
                else:
                    import google.auth

                    self._google_credentials, self._project = google.auth.default(scopes=[STORAGE_SCOPE])
                self._source = SourceToken(self._google_credentials)
            return self._google_credentials, self._project

    @property
    def project_id(self) -> str | None:
        if isinstance(self.credential, GcsServiceAccountKeyCredential):
            return self.credential.key.project_id
        return self._credentials()[1]

    def _client(self) -> Any:
        credentials, project = self._credentials()
        with self._lock:
            if self._client_instance is None:
                self._client_instance = self._make_client(credentials, project)
            return self._client_instance

    def _make_client(self, credentials: Any, project: str | None) -> Any:
        from google.cloud import storage

        return storage.Client(
            project=project or "_",  # listing objects needs no project; the client insists on one
            credentials=credentials,
            client_options={"api_endpoint": self.config.storage_endpoint},
        )

    def _token_client(self, token: str) -> Any:
        """A storage client that acts with a vended token only (what a table client can do)."""
        from google.oauth2.credentials import Credentials

        return self._make_client(Credentials(token), self.project_id)

    # ------------------------------------------------------------------ locations

    def base_location(self) -> str:
        return str(self._base)

    def normalize_location(self, location: str) -> str:
        return canonical(location)

    def is_allowed_location(self, location: str) -> bool:
        if location.partition("://")[0].lower() != "gs":
            return False
        normalized = canonical(location)
        base = str(self._base)
        # strictly below the warehouse root: the root itself is not a table location
        return normalized != base and is_sublocation(normalized, base)

    def _parse(self, location: str) -> GcsLocation:
        try:
            return GcsLocation.parse(location)
        except InvalidGcsLocation as exc:
            raise OSError(str(exc)) from None

    # ------------------------------------------------------------------ object IO

    async def _call(self, location: str, operation: Callable[[], Any]) -> Any:
        from google.api_core.exceptions import GoogleAPIError
        from google.auth.exceptions import GoogleAuthError
        from requests import RequestException

        def run() -> Any:
            try:
                return operation()
            except (GoogleAPIError, GoogleAuthError, RequestException) as exc:
                raise os_error(exc, location, self.credential_field) from exc

        return await asyncio.to_thread(run)

    def _blob(self, location: str) -> Any:
        target = self._parse(location)
        return self._client().bucket(target.bucket).blob(target.name)

    async def write(self, location: str, data: bytes) -> None:
        await self._call(location, lambda: self._blob(location).upload_from_string(data))

    async def read(self, location: str) -> bytes:
        return await self._call(location, lambda: self._blob(location).download_as_bytes())

    async def exists(self, location: str) -> bool:
        return await self._call(location, lambda: self._blob(location).exists())

    async def delete(self, location: str) -> None:
        from google.api_core.exceptions import NotFound

        def delete() -> None:
            try:
                self._blob(location).delete()
            except NotFound:  # deleting what is gone already is done
                pass

        await self._call(location, delete)

    async def list(self, prefix: str) -> AsyncIterator[str]:
        root = self._parse(prefix)

        def first_page() -> Any:
            listing = self._client().list_blobs(root.bucket, prefix=root.dir_prefix, page_size=self.list_page_size)
            return iter(listing.pages)

        pages = await self._call(prefix, first_page)
        while True:
            names = await self._call(prefix, lambda: _next_page(pages))
            if names is None:
                return
            for name in names:
                yield str(root.child(name))

    async def is_empty(self, prefix: str) -> bool:
        root = self._parse(prefix)

        def first() -> list[str]:
            return [b.name for b in self._client().list_blobs(root.bucket, prefix=root.dir_prefix, max_results=1)]

        return not await self._call(prefix, first)

    async def delete_prefix(self, prefix: str) -> int:
        gate = asyncio.Semaphore(DELETE_CONCURRENCY)

        async def delete_one(location: str) -> None:
            async with gate:
                await self.delete(location)

        locations = [location async for location in self.list(prefix)]
        await asyncio.gather(*(delete_one(location) for location in locations))
        return len(locations)

    # ------------------------------------------------------------------ vended credentials

    def _vends(self, access: DataAccess) -> bool:
        """GCS has no remote signing: vend whenever the profile allows it, unless the client manages access."""
        if access & DataAccess.CLIENT_MANAGED and not access & (
            DataAccess.VENDED_CREDENTIALS | DataAccess.REMOTE_SIGNING
        ):
            return False
        return self.profile.sts_enabled

    async def vend(self, table_location: str, permission: StoragePermission) -> DownscopedToken:
        """A token limited to ``table_location`` and below (cached)."""
        location = GcsLocation.parse(canonical(table_location))
        key = (location.bucket, location.name, permission, self.config.gcs_sts_endpoint, self._credential_identity())
        return await self.cache.get_or_fetch(key, lambda: self._downscope(location, permission))

    async def _downscope(self, location: GcsLocation, permission: StoragePermission) -> DownscopedToken:
        await asyncio.to_thread(self._credentials)
        assert self._source is not None
        try:
            subject_token = await self._source.get_async()
        except Exception as exc:  # google-auth raises RefreshError, TransportError, ValueError...
            raise StorageMisconfigured(f"{self.credential_field} was not accepted: {exc}") from exc
        async with httpx.AsyncClient() as http:
            return await exchange_token(
                http, self.config.gcs_sts_endpoint, subject_token, access_boundary(location, permission)
            )

    def _credential_identity(self) -> tuple:
        if isinstance(self.credential, GcsServiceAccountKeyCredential):
            return ("service-account-key", self.credential.key.client_email, self.credential.key.private_key_id)
        return ("gcp-system-identity",)

    async def table_config(self, request: TableAccessRequest) -> TableConfig:
        properties: dict[str, str] = {}
        project = await asyncio.to_thread(lambda: self.project_id)
        if project:
            properties["gcs.project-id"] = project
        if self.config.custom_storage_endpoint:
            properties["gcs.service.host"] = self.config.storage_endpoint
        if not self._vends(request.access):
            return TableConfig(config=properties)
        token = await self.vend(request.table_location, request.permission)
        credentials = {
            **properties,
            "gcs.oauth2.token": token.token,
            "gcs.oauth2.token-expires-at": str(token.expires_at_ms),
            "expiration-time": str(token.expires_at_ms),
        }
        if request.refresh_credentials_endpoint:
            credentials["gcs.oauth2.refresh-credentials-endpoint"] = request.refresh_credentials_endpoint
        return TableConfig(
            config=credentials,
            storage_credentials=[{"prefix": request.table_location, "config": credentials}],
            expires_at_ms=token.expires_at_ms,
        )

    def catalog_defaults(self, *, soft_delete_enabled: bool) -> dict[str, str]:
        return {}

    def immutable_fields(self) -> tuple[str, ...]:
        return ("bucket", "key-prefix")

    # ------------------------------------------------------------------ validation

    async def validate(self, *, vending: bool = True) -> list[ValidationCheck]:
        """Lakekeeper's physical probe (§2.6) on a fresh table location below the warehouse root."""
        test_location = self._base.join(new_id())
        checks: list[ValidationCheck] = []
        try:
            await asyncio.to_thread(self._client)
        except Exception as exc:  # google.auth.default() raises DefaultCredentialsError, ValueError...
            return [ValidationCheck("storage-client-initialized", "failed", f"{self.credential_field}: {exc}")]
        checks.append(ValidationCheck("storage-client-initialized", "passed"))

        async def direct() -> ValidationCheck:
            probe = str(test_location.join("metadata", "test"))
            try:
                await self.write(probe, b"test")
                if await self.read(probe) != b"test":
                    raise OSError("read back different content")
                await self.delete(probe)
            except OSError as exc:
                return ValidationCheck("lakekeeper-read-write", "failed", f"{probe}: {exc}")
            return ValidationCheck("lakekeeper-read-write", "passed")

        jobs = [direct()]
        if vending and self.profile.sts_enabled:
            jobs.append(self._validate_vending(test_location))
        results = await asyncio.gather(*jobs)
        checks.append(results[0])
        if len(results) > 1:
            checks.extend(results[1])
        else:
            reason = "sts-enabled is false for this profile" if not self.profile.sts_enabled else "not requested"
            checks.append(ValidationCheck("vended-credentials-issued", "skipped", reason))
        checks.append(await self._cleanup(test_location))
        return checks

    async def _validate_vending(self, test_location: GcsLocation) -> list[ValidationCheck]:
        vended_location = test_location.join("vended-test")
        try:
            token = await self._downscope(vended_location, StoragePermission.READ_WRITE_DELETE)
        except CatalogError as exc:
            return [ValidationCheck("vended-credentials-issued", "failed", exc.message)]
        checks = [ValidationCheck("vended-credentials-issued", "passed")]
        client = await asyncio.to_thread(self._token_client, token.token)
        allowed = vended_location.join("metadata", f"{new_id()}.gz.metadata.json")
        forbidden = test_location.join("metadata", "forbidden-write-test")

        def read_write() -> None:
            blob = client.bucket(allowed.bucket).blob(allowed.name)
            blob.upload_from_string(b"test")
            if blob.download_as_bytes() != b"test":
                raise OSError("read back different content")
            blob.delete()

        def forbidden_write() -> bool:
            from google.api_core.exceptions import Forbidden, Unauthorized

            try:
                client.bucket(forbidden.bucket).blob(forbidden.name).upload_from_string(b"forbidden-content")
            except (Forbidden, Unauthorized):
                return True
            return False

        try:
            await self._call(str(allowed), read_write)
            checks.append(ValidationCheck("vended-credentials-read-write", "passed"))
        except OSError as exc:
            checks.append(ValidationCheck("vended-credentials-read-write", "failed", f"{allowed}: {exc}"))
        try:
            denied = await self._call(str(forbidden), forbidden_write)
        except OSError as exc:
            checks.append(ValidationCheck("vended-credentials-scope-enforced", "failed", str(exc)))
            return checks
        if denied:
            checks.append(ValidationCheck("vended-credentials-scope-enforced", "passed"))
        elif self.config.custom_storage_endpoint:
            # emulators such as fake-gcs-server accept any token; only Google enforces access boundaries
            checks.append(
                ValidationCheck(
                    "vended-credentials-scope-enforced",
                    "skipped",
                    f"The storage endpoint {self.config.storage_endpoint} accepted a write outside the access "
                    "boundary: it does not check tokens (an emulator); Google Cloud Storage enforces them",
                )
            )
        else:
            checks.append(
                ValidationCheck(
                    "vended-credentials-scope-enforced",
                    "failed",
                    f"A downscoped token could write to the parent location {forbidden}",
                )
            )
        return checks

    async def _cleanup(self, test_location: GcsLocation) -> ValidationCheck:
        try:
            await self.delete_prefix(str(test_location))
            if not await self.is_empty(str(test_location)):
                return ValidationCheck("cleanup", "failed", f"Files are left after cleanup in {test_location}")
        except OSError as exc:
            return ValidationCheck("cleanup", "failed", f"{test_location}: {exc}")
        return ValidationCheck("cleanup", "passed")

    async def close(self) -> None:
        with self._lock:
            client, self._client_instance = self._client_instance, None
        if client is not None:
            await asyncio.to_thread(client.close)


def _next_page(pages: Any) -> list[str] | None:
    page = next(pages, None)
    return None if page is None else [blob.name for blob in page]
