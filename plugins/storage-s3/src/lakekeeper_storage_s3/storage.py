"""``S3Storage``: one warehouse's S3 storage for the host (lakekeeper_host.service.storage.Storage).

boto3 is synchronous, so every call runs in a worker thread; clients are created once per
storage object (the host keeps one per warehouse version) and shared, which boto3 allows.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import logging
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any
from urllib.parse import urlsplit

import boto3
import botocore.session
from botocore import UNSIGNED
from botocore.config import Config
from botocore.credentials import DeferredRefreshableCredentials, ReadOnlyCredentials
from botocore.exceptions import BotoCoreError, ClientError

from lakekeeper_host.errors import CatalogError
from lakekeeper_host.service.endpoints import StorageEndpoint, parse_ip
from lakekeeper_host.service.storage import (
    DataAccess,
    StoragePermission,
    TableAccessRequest,
    TableConfig,
    ValidationProbes,
    VendedAccess,
    is_table_location,
)
from lakekeeper_host.service.storage_errors import answer_error, network_error
from lakekeeper_storage_s3 import signing
from lakekeeper_storage_s3.cache import CredentialCache, VendedCredential
from lakekeeper_storage_s3.locations import InvalidS3Location, S3Location, canonical
from lakekeeper_storage_s3.model import (
    S3AccessKeyCredential,
    S3Credential,
    S3Profile,
    S3StorageConfig,
    S3SystemIdentityCredential,
)
from lakekeeper_storage_s3.policy import session_policy

log = logging.getLogger(__name__)

DELETE_BATCH = 1000  # the DeleteObjects limit
STS_SESSION_NAME = "lakekeeper-sts"
_NOT_FOUND = {"NoSuchKey", "404", "NotFound", "NoSuchBucket"}
_DENIED = {"AccessDenied", "403", "Forbidden", "InvalidAccessKeyId", "SignatureDoesNotMatch"}
# error codes of S3 and STS that may appear in a message: fixed words, never the store's free text
KNOWN_CODES = _NOT_FOUND | _DENIED | {
    "AllAccessDisabled",
    "AuthorizationHeaderMalformed",
    "BadDigest",
    "ExpiredToken",
    "InvalidBucketName",
    "InvalidClientTokenId",
    "InvalidDigest",
    "InvalidRequest",
    "InvalidToken",
    "MalformedPolicyDocument",
    "MissingContentMD5",
    "NotImplemented",
    "PackedPolicyTooLarge",
    "PermanentRedirect",
    "RegionDisabledException",
    "RequestTimeTooSkewed",
    "ServiceUnavailable",
    "SlowDown",
}


class StorageMisconfigured(CatalogError):
    def __init__(self, message: str):
        super().__init__(400, "StorageMisconfigured", message)


def os_error(exc: Exception, location: str) -> OSError:
    """botocore errors as the OSError family the host expects from every storage, in words that
    quote nothing the endpoint answered (``storage_errors``); the full error goes to the log."""
    if isinstance(exc, ClientError):
        code = str(exc.response.get("Error", {}).get("Code", ""))
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        return answer_error(
            exc,
            status if isinstance(status, int) else None,
            location,
            not_found=code in _NOT_FOUND,
            denied=code in _DENIED,
            code=code,
            known_codes=KNOWN_CODES,
        )
    return network_error(exc, location)


class S3Storage:
    storage_type = "s3"

    def __init__(
        self,
        profile: S3Profile,
        credential: S3Credential | None,
        config: S3StorageConfig,
        cache: CredentialCache,
        *,
        clock: Callable[[], float] | None = None,
    ):
        self.profile = profile
        self.credential = credential
        self.config = config
        self.cache = cache
        self._clock = clock or cache.clock
        self._base = S3Location("s3", profile.bucket, profile.base_key())
        self._lock = threading.RLock()
        self._clients: dict[str, Any] = {}
        self._check_credential()

    # ------------------------------------------------------------------ credentials and clients

    def _check_credential(self) -> None:
        if isinstance(self.credential, S3SystemIdentityCredential):
            if not self.config.enable_aws_system_credentials:
                raise StorageMisconfigured(
                    "System identity credentials are disabled in this Lakekeeper deployment "
                    "(LAKEKEEPER__ENABLE_AWS_SYSTEM_CREDENTIALS)."
                )
            if self.profile.assume_role_arn is None and not self.config.s3_enable_direct_system_credentials:
                raise StorageMisconfigured(
                    "This deployment of Lakekeeper requires an `assume-role-arn` to be set for system "
                    "identity credentials."
                )
            if (
                self.profile.assume_role_arn is not None
                and self.credential.external_id is None
                and self.config.s3_require_external_id_for_system_credentials
            ):
                raise StorageMisconfigured("An `external-id` is required when using `assume-role-arn`.")

    @property
    def region(self) -> str:
        return self.profile.region

    @property
    def remote_signing_enabled(self) -> bool:
        return self.profile.remote_signing_enabled

    @property
    def remote_signing_url_style(self) -> str:
        return self.profile.remote_signing_url_style

    @property
    def vending_enabled(self) -> bool:
        return self.profile.sts_enabled

    def _endpoint_url(self) -> str | None:
        return self.profile.endpoint.rstrip("/") if self.profile.endpoint else None

    def _sts_endpoint_url(self) -> str | None:
        endpoint = self.profile.sts_endpoint or self.profile.endpoint
        return endpoint.rstrip("/") if endpoint else None

    def endpoints(self) -> list[StorageEndpoint]:
        """The S3 endpoint (as botocore addresses the bucket) and, when STS is used, the STS endpoint."""
        found = []
        if self.profile.endpoint:
            parts = urlsplit(self.profile.endpoint)
            found.append(StorageEndpoint("storage-profile.endpoint", self.profile.endpoint))
            if self.profile.path_style_access is False and parse_ip(parts.hostname or "") is None:
                # virtual-hosted addressing puts the bucket in front of the endpoint's host
                found.append(
                    StorageEndpoint(
                        "storage-profile.endpoint (virtual-hosted: bucket.host; path-style-access avoids it)",
                        f"{parts.scheme}://{self.profile.bucket}.{parts.netloc}/",
                    )
                )
        else:
            virtual = self.profile.path_style_access is not True and "." not in self.profile.bucket
            host = f"s3.{self.profile.region}.amazonaws.com"
            url = f"https://{self.profile.bucket}.{host}/" if virtual else f"https://{host}/"
            found.append(StorageEndpoint("storage-profile.region (the AWS S3 endpoint)", url))
        if self.credential is not None and (self.profile.sts_enabled or self.profile.assume_role_arn):
            if self.profile.sts_endpoint:
                found.append(StorageEndpoint("storage-profile.sts-endpoint", self.profile.sts_endpoint))
            elif self.profile.endpoint:
                found.append(StorageEndpoint("storage-profile.endpoint (as the STS endpoint)", self.profile.endpoint))
            else:
                url = f"https://sts.{self.profile.region}.amazonaws.com/"
                found.append(StorageEndpoint("storage-profile.region (the AWS STS endpoint)", url))
        return found

    def _s3_config(self) -> Config:
        style = {True: "path", False: "virtual"}.get(self.profile.path_style_access, "auto")
        return Config(
            region_name=self.profile.region,
            # no credential: anonymous requests, never the machine's identity behind the operator's back
            signature_version=UNSIGNED if self.credential is None else "s3v4",
            s3={"addressing_style": style},
            retries={"max_attempts": 3, "mode": "standard"},
            connect_timeout=10,
            read_timeout=60,
            max_pool_connections=32,
        )

    def _base_session(self) -> boto3.Session:
        """The warehouse credential: static keys, or the machine's default credential chain."""
        if isinstance(self.credential, S3AccessKeyCredential):
            return boto3.Session(
                aws_access_key_id=self.credential.aws_access_key_id,
                aws_secret_access_key=self.credential.aws_secret_access_key.get(),
                region_name=self.profile.region,
            )
        return boto3.Session(region_name=self.profile.region)

    def _client(self, name: str, factory: Callable[[], Any]) -> Any:
        with self._lock:  # boto3 client creation is not thread-safe; use is
            client = self._clients.get(name)
            if client is None:
                client = self._clients[name] = factory()
            return client

    def _sts(self) -> Any:
        if self.credential is None:
            raise StorageMisconfigured("STS needs a storage-credential; this warehouse has none")
        return self._client(
            "sts",
            lambda: self._base_session().client(
                "sts",
                endpoint_url=self._sts_endpoint_url(),
                region_name=self.profile.region,
                config=Config(retries={"max_attempts": 3, "mode": "standard"}, connect_timeout=10, read_timeout=30),
            ),
        )

    def _io_session(self) -> boto3.Session:
        """The identity of Lakekeeper's own IO: the credential, or the ``assume-role-arn`` it assumes."""
        base = self._base_session()
        if not self.profile.assume_role_arn:
            return base
        external_id = getattr(self.credential, "external_id", None)

        def refresh() -> dict[str, str]:
            kwargs: dict[str, Any] = {
                "RoleArn": self.profile.assume_role_arn,
                "RoleSessionName": "lakekeeper",
                "DurationSeconds": 3600,
            }
            if external_id:
                kwargs["ExternalId"] = external_id
            creds = self._sts().assume_role(**kwargs)["Credentials"]
            return {
                "access_key": creds["AccessKeyId"],
                "secret_key": creds["SecretAccessKey"],
                "token": creds["SessionToken"],
                "expiry_time": creds["Expiration"].isoformat(),
            }

        core = botocore.session.get_session()
        core._credentials = DeferredRefreshableCredentials(refresh_using=refresh, method="assume-role")  # noqa: SLF001
        return boto3.Session(botocore_session=core, region_name=self.profile.region)

    def _s3(self) -> Any:
        return self._client("s3", self._make_s3_client)

    def _make_s3_client(self) -> Any:
        session = self._client("io-session", self._io_session)
        client = session.client("s3", endpoint_url=self._endpoint_url(), config=self._s3_config())
        if self.profile.legacy_md5_behavior:
            client.meta.events.register("before-sign.s3.DeleteObjects", _add_content_md5)
        return client

    def _vended_client(self, credential: VendedCredential) -> Any:
        return boto3.client(
            "s3",
            endpoint_url=self._endpoint_url(),
            aws_access_key_id=credential.access_key_id,
            aws_secret_access_key=credential.secret_access_key,
            aws_session_token=credential.session_token,
            config=self._s3_config(),
        )

    def signing_credentials(self) -> ReadOnlyCredentials:
        credentials = None
        if self.credential is not None:
            credentials = self._client("io-session", self._io_session).get_credentials()
        if credentials is None:
            raise CatalogError(
                412, "SignWithoutCredentials", "Cannot sign requests for Warehouses without S3 credentials"
            )
        return credentials.get_frozen_credentials()

    # ------------------------------------------------------------------ locations

    def base_location(self) -> str:
        return str(self._base)

    def normalize_location(self, location: str) -> str:
        return canonical(location)

    def is_allowed_location(self, location: str) -> bool:
        schemes = ("s3", "s3a", "s3n") if self.profile.alternative_protocols_allowed else ("s3",)
        return is_table_location(location, str(self._base), schemes, canonical)

    def _parse(self, location: str) -> S3Location:
        try:
            return S3Location.parse(location)
        except InvalidS3Location as exc:
            raise OSError(str(exc)) from None

    # ------------------------------------------------------------------ object IO

    async def write(self, location: str, data: bytes) -> None:
        await self._put(self._s3, location, data)

    async def read(self, location: str) -> bytes:
        return await self._get(self._s3, location)

    async def exists(self, location: str) -> bool:
        target = self._parse(location)
        try:
            await self._call(location, lambda: self._s3().head_object(Bucket=target.bucket, Key=target.key))
        except FileNotFoundError:
            return False
        return True

    async def delete(self, location: str) -> None:
        await self._remove(self._s3, location)

    async def _put(self, client: Callable[[], Any], location: str, data: bytes) -> None:
        target = self._parse(location)
        await self._call(location, lambda: client().put_object(Bucket=target.bucket, Key=target.key, Body=data))

    async def _get(self, client: Callable[[], Any], location: str) -> bytes:
        target = self._parse(location)
        return await self._call(
            location, lambda: client().get_object(Bucket=target.bucket, Key=target.key)["Body"].read()
        )

    async def _remove(self, client: Callable[[], Any], location: str) -> None:
        target = self._parse(location)
        await self._call(location, lambda: client().delete_object(Bucket=target.bucket, Key=target.key))

    async def list(self, prefix: str) -> AsyncIterator[str]:
        root = self._parse(prefix)
        token: str | None = None
        while True:
            page = await self._list_page(root, token)
            for item in page.get("Contents", []):
                yield str(root.child(item["Key"]))
            token = page.get("NextContinuationToken")
            if not page.get("IsTruncated") or not token:
                return

    async def _list_page(self, root: S3Location, token: str | None, limit: int = 1000) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"Bucket": root.bucket, "Prefix": root.dir_prefix, "MaxKeys": limit}
        if token:
            kwargs["ContinuationToken"] = token
        return await self._call(str(root), lambda: self._s3().list_objects_v2(**kwargs))

    async def is_empty(self, prefix: str) -> bool:
        page = await self._list_page(self._parse(prefix), None, limit=1)
        return not page.get("Contents")

    async def delete_prefix(self, prefix: str) -> int:
        root = self._parse(prefix)
        deleted = 0
        batch: list[str] = []
        async for location in self.list(prefix):
            batch.append(S3Location.parse(location).key)
            if len(batch) == DELETE_BATCH:
                deleted += await self._delete_batch(root, batch)
                batch = []
        if batch:
            deleted += await self._delete_batch(root, batch)
        return deleted

    async def _delete_batch(self, root: S3Location, keys: list[str]) -> int:
        request = {"Objects": [{"Key": key} for key in keys], "Quiet": True}
        response = await self._call(
            str(root), lambda: self._s3().delete_objects(Bucket=root.bucket, Delete=request)
        )
        errors = response.get("Errors") or []
        if errors:
            first = errors[0]
            log.info("DeleteObjects under %s: %s", root, errors[:10])
            code = str(first.get("Code", ""))
            key = first.get("Key") if first.get("Key") in keys else "?"  # a key of ours, not the store's text
            raise OSError(
                f"{len(errors)} of {len(keys)} deletes failed under {root}; first: {key}"
                + (f" ({code})" if code in KNOWN_CODES else "")
            )
        return len(keys)

    async def _call(self, location: str, operation: Callable[[], Any]) -> Any:
        def run() -> Any:
            try:
                return operation()
            except (ClientError, BotoCoreError) as exc:
                raise os_error(exc, location) from exc

        return await asyncio.to_thread(run)

    # ------------------------------------------------------------------ vended credentials

    def _choose_access(self, access: DataAccess) -> tuple[bool, bool]:
        """(vended credentials, remote signing) as Lakekeeper's ``DataAccessMode`` selection."""
        if access & DataAccess.CLIENT_MANAGED and not access & (
            DataAccess.VENDED_CREDENTIALS | DataAccess.REMOTE_SIGNING
        ):
            return False, False
        vended = bool(access & DataAccess.VENDED_CREDENTIALS) and self.vending_enabled
        signing = bool(access & DataAccess.REMOTE_SIGNING) and self.remote_signing_enabled
        if not vended and not signing:
            if self.vending_enabled:
                vended = True
            elif self.remote_signing_enabled:
                signing = True
        return vended, signing

    async def vend(self, table_location: str, permission: StoragePermission) -> VendedCredential:
        """STS credentials for one table prefix (cached)."""
        location = S3Location.parse(canonical(table_location))
        key = (
            location.bucket,
            location.key,
            permission,
            json.dumps(_profile_identity(self.profile), sort_keys=True),
            _credential_identity(self.credential),
        )
        return await self.cache.get_or_fetch(key, lambda: self._assume_role_for(location, permission))

    async def _assume_role_for(self, location: S3Location, permission: StoragePermission) -> VendedCredential:
        role_arn = self.profile.vended_role_arn
        if role_arn is None and self.profile.flavor == "aws":
            raise StorageMisconfigured(
                "Either `sts-role-arn` or `assume-role-arn` is required for Storage Profiles with AWS "
                "flavor if STS is enabled."
            )
        kwargs: dict[str, Any] = {
            "RoleSessionName": STS_SESSION_NAME,
            "DurationSeconds": self.profile.sts_token_validity_seconds,
            "Policy": session_policy(location, permission, self.profile.aws_kms_key_arn),
        }
        if role_arn:
            kwargs["RoleArn"] = role_arn
        external_id = getattr(self.credential, "external_id", None)
        if external_id:
            kwargs["ExternalId"] = external_id
        if self.profile.sts_session_tags:
            kwargs["Tags"] = [{"Key": k, "Value": v} for k, v in sorted(self.profile.sts_session_tags.items())]

        def assume() -> dict[str, Any]:
            try:
                return self._sts().assume_role(**kwargs)["Credentials"]
            except (ClientError, BotoCoreError) as exc:
                log.warning("STS AssumeRole failed for %s: %s", location, exc)
                sts = self._sts_endpoint_url() or "AWS STS"
                raise CatalogError(
                    500, "FailedToGetShortTermCredentials", f"Failed to assume role via STS: {os_error(exc, sts)}"
                ) from exc

        creds = await asyncio.to_thread(assume)
        return VendedCredential(
            access_key_id=creds["AccessKeyId"],
            secret_access_key=creds["SecretAccessKey"],
            session_token=creds["SessionToken"],
            expiration_ms=int(creds["Expiration"].timestamp() * 1000),
        )

    async def table_config(self, request: TableAccessRequest) -> TableConfig:
        vended, signing = self._choose_access(request.access)
        profile = self.profile
        config: dict[str, str] = {}
        creds: dict[str, str] = {}
        if profile.path_style_access:
            config["s3.path-style-access"] = creds["s3.path-style-access"] = "true"
        config["s3.region"] = creds["s3.region"] = profile.region
        config["region"] = profile.region
        config["client.region"] = creds["client.region"] = profile.region
        if profile.endpoint:
            config["s3.endpoint"] = creds["s3.endpoint"] = profile.endpoint
        if profile.aws_kms_key_arn:
            config["s3.sse.type"] = "kms"
            config["s3.sse.key"] = profile.aws_kms_key_arn

        expires_at_ms = None
        storage_credentials: list[dict[str, Any]] = []
        if vended:
            credential = await self.vend(request.table_location, request.permission)
            expires_at_ms = credential.expiration_ms
            creds |= {
                "s3.access-key-id": credential.access_key_id,
                "s3.secret-access-key": credential.secret_access_key,
                "s3.session-token": credential.session_token,
                "s3.session-token-expires-at-ms": str(credential.expiration_ms),
                "expiration-time": str(credential.expiration_ms),
            }
            if request.refresh_credentials_endpoint:
                creds["client.refresh-credentials-endpoint"] = request.refresh_credentials_endpoint
            config |= creds
            storage_credentials.append({"prefix": request.table_location, "config": creds})
        if signing and request.signer_uri and request.signer_endpoint:  # views have no signer route
            config |= {
                "s3.remote-signing-enabled": "true",
                "s3.signer": "S3V4RestSigner",
                "py-io-impl": "pyiceberg.io.fsspec.FsspecFileIO",
            }
            config["s3.signer.uri"] = config["signer.uri"] = request.signer_uri
            config["s3.signer.endpoint"] = config["signer.endpoint"] = request.signer_endpoint
        return TableConfig(config=config, storage_credentials=storage_credentials, expires_at_ms=expires_at_ms)

    def catalog_defaults(self, *, soft_delete_enabled: bool) -> dict[str, str]:
        defaults: dict[str, str] = {}
        if self.profile.push_s3_delete_disabled and soft_delete_enabled:
            defaults["s3.delete-enabled"] = "false"
        if self.profile.aws_kms_key_arn:
            defaults["s3.sse.type"] = "kms"
            defaults["s3.sse.key"] = self.profile.aws_kms_key_arn
        return defaults

    def immutable_fields(self) -> tuple[str, ...]:
        # with a custom endpoint the region is only a label, so it may change (Lakekeeper §2.3)
        if self.profile.endpoint:
            return ("bucket", "key-prefix")
        return ("bucket", "key-prefix", "region")

    # ------------------------------------------------------------------ remote signing

    async def sign_request(
        self, *, method: str, uri: str, headers: dict[str, list[str]], body: str | None, region: str
    ) -> tuple[str, dict[str, list[str]]]:
        """SigV4-sign a client's request with the warehouse credential; returns (uri, headers)."""

        def run() -> tuple[str, dict[str, list[str]]]:
            try:
                credentials = self.signing_credentials()
            except (ClientError, BotoCoreError) as exc:
                sts = self._sts_endpoint_url() or "AWS STS"
                raise CatalogError(
                    412, "SigningIdentityError", f"Failed to obtain signing identity: {os_error(exc, sts)}"
                ) from exc
            return signing.sign(
                credentials=credentials, method=method, uri=uri, headers=headers, body=body, region=region
            )

        return await asyncio.to_thread(run)

    # ------------------------------------------------------------------ validation

    def validation_probes(self) -> ValidationProbes:
        return ValidationProbes(
            connect=self._connect,
            vend=self._vended_access if self.vending_enabled else None,
            no_vending_reason="STS is not enabled for this profile",
        )

    async def _connect(self) -> None:
        try:
            await asyncio.to_thread(self._s3)
        except (BotoCoreError, ValueError) as exc:  # raised before any request: our own words
            raise StorageMisconfigured(f"The S3 client cannot be created: {type(exc).__name__}: {exc}") from exc

    async def _vended_access(self, location: str) -> VendedAccess:
        credential = await self._assume_role_for(S3Location.parse(location), StoragePermission.READ_WRITE_DELETE)
        client = await asyncio.to_thread(self._vended_client, credential)

        def vended() -> Any:
            return client

        async def close() -> None:
            client.close()

        return VendedAccess(
            write=lambda target, data: self._put(vended, target, data),
            read=lambda target: self._get(vended, target),
            delete=lambda target: self._remove(vended, target),
            close=close,
        )

    async def close(self) -> None:
        with self._lock:
            clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            close = getattr(client, "close", None)  # boto3 clients; the cached session has none
            if close is not None:
                close()


def _add_content_md5(request: Any, **_: Any) -> None:
    """Old S3-compatible stores want Content-MD5 on DeleteObjects instead of the newer CRC checksums."""
    body = request.body if isinstance(request.body, bytes) else (request.body or b"")
    request.headers["Content-MD5"] = base64.b64encode(hashlib.md5(body).digest()).decode()  # noqa: S324


def _profile_identity(profile: S3Profile) -> dict[str, Any]:
    """What in a profile changes the credentials STS hands out."""
    return {
        "bucket": profile.bucket,
        "region": profile.region,
        "endpoint": profile.endpoint,
        "sts_endpoint": profile.sts_endpoint,
        "role": profile.vended_role_arn,
        "flavor": profile.flavor,
        "validity": profile.sts_token_validity_seconds,
        "tags": profile.sts_session_tags,
        "kms": profile.aws_kms_key_arn,
    }


def _credential_identity(credential: S3Credential | None) -> tuple:
    if isinstance(credential, S3AccessKeyCredential):
        digest = hashlib.sha256(credential.aws_secret_access_key.get().encode()).hexdigest()
        return ("access-key", credential.aws_access_key_id, digest, credential.external_id)
    if isinstance(credential, S3SystemIdentityCredential):
        return ("system", credential.external_id)
    return ("none",)
