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
from lakekeeper_host.service.storage_errors import (
    StorageFailure,
    answer_error,
    network_error,
    network_failure,
    storage_error,
)
from lakekeeper_storage_gcs.locations import GcsLocation, InvalidGcsLocation, canonical
from lakekeeper_storage_gcs.model import (
    GcsCredential,
    GcsProfile,
    GcsServiceAccountKeyCredential,
    GcsStorageConfig,
    GcsSystemIdentityCredential,
)
from lakekeeper_storage_gcs.sts import (
    OAUTH_ERROR_CODES,
    STORAGE_SCOPE,
    DownscopedToken,
    SourceToken,
    TokenCache,
    access_boundary,
    exchange_token,
    no_redirects,
    oauth_error_code,
)

log = logging.getLogger(__name__)

DELETE_CONCURRENCY = 16
LIST_PAGE_SIZE = 1000  # the most one GCS listing request returns


# what google-cloud-storage retries (for up to two minutes), except failures a retry cannot mend
_NOT_RETRIED = {StorageFailure.TLS, StorageFailure.REFUSED, StorageFailure.UNRESOLVABLE, StorageFailure.REDIRECTED}
_RETRIED_STATUS = {408, 429, 500, 502, 503, 504}


def retryable(exc: BaseException) -> bool:
    """Whether a failed GCS call is worth another try: an overloaded or briefly unreachable service
    is; a TLS failure, a refused connection, a name that does not resolve or a redirect are not
    (validation then says what failed within the request time limit)."""
    from google.api_core import exceptions as api
    from google.auth import exceptions as auth

    if isinstance(exc, api.GoogleAPICallError):
        return exc.code in _RETRIED_STATUS
    failure = network_failure(exc)
    if failure in _NOT_RETRIED:
        return False
    return failure is not None or isinstance(exc, auth.TransportError)


def _retry() -> Any:
    from google.cloud.storage.retry import DEFAULT_RETRY

    return DEFAULT_RETRY.with_predicate(retryable)


class StorageMisconfigured(CatalogError):
    def __init__(self, message: str):
        super().__init__(400, "StorageMisconfigured", message)


def os_error(exc: Exception, location: str, credential_field: str) -> OSError:
    """google-cloud-storage and google-auth errors as the OSError family the host expects, in words
    that quote nothing the endpoint answered (``storage_errors``); the full error goes to the log."""
    from google.api_core import exceptions as api
    from google.auth import exceptions as auth

    if isinstance(exc, auth.GoogleAuthError):
        log.info("GCS token for %s: %s", location, exc)
        cause = network_failure(exc)
        if cause is not None:  # the token endpoint was not reached
            return storage_error(cause, location, note=f"the token endpoint of {credential_field}")
        # Lakekeeper's own token was refused: the credential is what the user must fix
        return storage_error(
            StorageFailure.ACCESS_DENIED,
            location,
            code=oauth_error_code(exc.args[1] if len(exc.args) > 1 else None),
            known_codes=OAUTH_ERROR_CODES,
            note=f"{credential_field} was not accepted",
        )
    if isinstance(exc, api.GoogleAPICallError) and isinstance(exc.code, int):
        denied = isinstance(exc, (api.Forbidden, api.Unauthorized))
        return answer_error(exc, exc.code, location, not_found=isinstance(exc, api.NotFound), denied=denied)
    return network_error(exc, location)


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
        import requests
        from google.auth.transport.requests import AuthorizedSession, Request
        from google.cloud import storage

        # redirects are not followed (by the storage calls, nor by the token refreshes behind them):
        # they could lead anywhere, past the endpoint policy
        auth_request = Request(no_redirects(requests.Session()))
        return storage.Client(
            project=project or "_",  # listing objects needs no project; the client insists on one
            credentials=credentials,
            client_options={"api_endpoint": self.config.storage_endpoint},
            _http=no_redirects(AuthorizedSession(credentials, auth_request=auth_request)),
        )

    def endpoints(self) -> list[StorageEndpoint]:
        """The storage endpoint, the key's token endpoint and, when tokens are vended, Google STS."""
        found = [StorageEndpoint("LAKEKEEPER__GCS_STORAGE_ENDPOINT", self.config.storage_endpoint)]
        if isinstance(self.credential, GcsServiceAccountKeyCredential):
            found.append(StorageEndpoint("storage-credential.key.token_uri", self.credential.key.token_uri))
        if self.profile.sts_enabled:
            found.append(StorageEndpoint("LAKEKEEPER__GCS_STS_ENDPOINT", self.config.gcs_sts_endpoint))
        return found

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
        return is_table_location(location, str(self._base), ("gs",), canonical)

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

    def _blob(self, location: str, client: Any = None) -> Any:
        target = self._parse(location)
        return (client or self._client()).bucket(target.bucket).blob(target.name)

    async def write(self, location: str, data: bytes) -> None:
        await self._write(location, data)

    async def read(self, location: str) -> bytes:
        return await self._read(location)

    async def exists(self, location: str) -> bool:
        return await self._call(location, lambda: self._blob(location).exists(retry=_retry()))

    async def delete(self, location: str) -> None:
        await self._delete(location)

    async def _write(self, location: str, data: bytes, client: Any = None) -> None:
        await self._call(location, lambda: self._blob(location, client).upload_from_string(data, retry=_retry()))

    async def _read(self, location: str, client: Any = None) -> bytes:
        return await self._call(location, lambda: self._blob(location, client).download_as_bytes(retry=_retry()))

    async def _delete(self, location: str, client: Any = None) -> None:
        from google.api_core.exceptions import NotFound

        def delete() -> None:
            try:
                self._blob(location, client).delete(retry=_retry())
            except NotFound:  # deleting what is gone already is done
                pass

        await self._call(location, delete)

    async def list(self, prefix: str) -> AsyncIterator[str]:
        root = self._parse(prefix)

        def first_page() -> Any:
            listing = self._client().list_blobs(
                root.bucket, prefix=root.dir_prefix, page_size=self.list_page_size, retry=_retry()
            )
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
            listing = self._client().list_blobs(root.bucket, prefix=root.dir_prefix, max_results=1, retry=_retry())
            return [b.name for b in listing]

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
            raise StorageMisconfigured(str(os_error(exc, self._token_endpoint(), self.credential_field))) from exc
        async with httpx.AsyncClient() as http:
            return await exchange_token(
                http, self.config.gcs_sts_endpoint, subject_token, access_boundary(location, permission)
            )

    def _token_endpoint(self) -> str:
        if isinstance(self.credential, GcsServiceAccountKeyCredential):
            return self.credential.key.token_uri
        return "the machine's Google credentials"

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

    def validation_probes(self) -> ValidationProbes:
        return ValidationProbes(
            connect=self._connect,
            vend=self._vended_access if self.profile.sts_enabled else None,
            no_vending_reason="sts-enabled is false for this profile",
        )

    async def _connect(self) -> None:
        try:
            await asyncio.to_thread(self._client)
        except Exception as exc:  # google.auth.default() raises DefaultCredentialsError, ValueError...
            raise StorageMisconfigured(f"{self.credential_field}: {exc}") from exc

    async def _vended_access(self, location: str) -> VendedAccess:
        token = await self._downscope(GcsLocation.parse(location), StoragePermission.READ_WRITE_DELETE)
        client = await asyncio.to_thread(self._token_client, token.token)
        unenforced = None
        if self.config.custom_storage_endpoint:
            # emulators such as fake-gcs-server accept any token; only Google enforces access boundaries
            unenforced = (
                f"The storage endpoint {self.config.storage_endpoint} accepted a write outside the access "
                "boundary: it does not check tokens (an emulator); Google Cloud Storage enforces them"
            )
        return VendedAccess(
            write=lambda target, data: self._write(target, data, client),
            read=lambda target: self._read(target, client),
            delete=lambda target: self._delete(target, client),
            close=lambda: asyncio.to_thread(client.close),
            scope_unenforced_reason=unenforced,
        )

    async def close(self) -> None:
        with self._lock:
            client, self._client_instance = self._client_instance, None
        if client is not None:
            await asyncio.to_thread(client.close)


def _next_page(pages: Any) -> list[str] | None:
    page = next(pages, None)
    return None if page is None else [blob.name for blob in page]
