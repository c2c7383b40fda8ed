"""The ``kv2`` secret store: one KV v2 secret per storage credential, reached through hvac.

hvac is synchronous, so every call runs in a worker thread (``asyncio.to_thread``). The token
from the userpass login is renewed in the background at two thirds of its lease; when renewal is
no longer possible (max TTL) the store logs in again. A request answered with 401/403 -- the
token expired, or Vault/OpenBao restarted and forgot it -- triggers one new login and one retry.
Concurrent failures share that one login.

Errors never carry a secret value: they name the operation, the secret id and Vault's own error
text, which describes the request, not its body.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, TypeVar

import hvac
import hvac.exceptions
import requests

from lakekeeper_host.registry import StartupError
from lakekeeper_host.service.secrets import SecretStoreError
from lakekeeper_secrets_vault.config import Kv2Config

log = logging.getLogger(__name__)
T = TypeVar("T")

REQUEST_TIMEOUT_SECONDS = 10
# renew at this fraction of the lease; log in again when a renewal grants less than MIN_LEASE
RENEW_AT = 2 / 3
MIN_LEASE_SECONDS = 2
RETRY_LOGIN_SECONDS = 5
_AUTH_ERRORS = (hvac.exceptions.Forbidden, hvac.exceptions.Unauthorized)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, hvac.exceptions.VaultError):
        errors = [str(e) for e in (exc.errors or []) if e] if isinstance(exc.errors, list) else []
        detail = "; ".join(errors) or type(exc).__name__
        return f"{detail} (HTTP {type(exc).__name__})"
    if isinstance(exc, requests.exceptions.RequestException):
        return f"unreachable ({type(exc).__name__})"
    return type(exc).__name__


class VaultKv2Store:
    """Secrets under ``<mount>/lakekeeper/<server-id>/<secret-id>``."""

    name = "kv2"

    def __init__(self, config: Kv2Config, server_id: str):
        self.config = config
        self.mount = config.secret_mount
        self.prefix = f"lakekeeper/{server_id}"
        # token="" and an explicit URL: hvac would otherwise read VAULT_TOKEN / ~/.vault-token
        self._client = hvac.Client(url=config.url, token="", timeout=REQUEST_TIMEOUT_SECONDS)
        self._login_lock = asyncio.Lock()
        self._generation = 0  # bumped by every successful login
        self._renewal: asyncio.Task | None = None
        self._lease_seconds = 0
        self._renewable = False
        # observable for tests and debugging (no secrets)
        self.logins = 0
        self.renewals = 0

    def __repr__(self) -> str:
        return f"VaultKv2Store(url={self.config.url!r}, mount={self.mount!r})"

    def path_of(self, secret_id: str) -> str:
        return f"{self.prefix}/{secret_id}"

    # ------------------------------------------------------------ lifecycle

    async def start(self) -> VaultKv2Store:
        try:
            await self._login()
        except (hvac.exceptions.VaultError, requests.exceptions.RequestException) as exc:
            raise StartupError(
                f"KV2 secret store: login as {self.config.user!r} at {self.config.url} failed: {_describe(exc)}"
            ) from None
        self._renewal = asyncio.create_task(self._keep_token_alive(), name="kv2-token-renewal")
        return self

    async def close(self) -> None:
        if self._renewal is not None:
            self._renewal.cancel()
            try:
                await self._renewal
            except asyncio.CancelledError:
                pass
            self._renewal = None
        try:  # hygiene: do not leave a live token behind
            await asyncio.to_thread(self._client.auth.token.revoke_self)
        except Exception as exc:  # noqa: BLE001 - best effort on shutdown
            log.debug("revoking the KV2 token failed: %s", _describe(exc))
        self._client.adapter.close()

    async def health(self) -> bool:
        try:
            status = await asyncio.to_thread(self._client.sys.read_health_status, method="GET")
            if not isinstance(status, dict) or status.get("sealed") or not status.get("initialized"):
                return False
            await self._call(self._client.auth.token.lookup_self)
            return True
        except Exception as exc:  # noqa: BLE001 - health reporting must never raise
            log.warning("KV2 secret store unhealthy: %s", _describe(exc))
            return False

    # ------------------------------------------------------------ SecretStore

    async def create_impl(self, secret_id: str, value: dict[str, Any]) -> None:
        await self._guarded(
            "write",
            secret_id,
            self._client.secrets.kv.v2.create_or_update_secret,
            path=self.path_of(secret_id),
            secret=value,
            mount_point=self.mount,
        )

    async def get_impl(self, secret_id: str) -> dict[str, Any] | None:
        try:
            response = await self._guarded(
                "read",
                secret_id,
                self._client.secrets.kv.v2.read_secret_version,
                path=self.path_of(secret_id),
                mount_point=self.mount,
                raise_on_deleted_version=True,
            )
        except _NotFound:
            return None
        return response["data"]["data"]

    async def delete_impl(self, secret_id: str) -> None:
        try:
            await self._guarded(
                "delete",
                secret_id,
                self._client.secrets.kv.v2.delete_metadata_and_all_versions,
                path=self.path_of(secret_id),
                mount_point=self.mount,
            )
        except _NotFound:
            return

    # ------------------------------------------------------------ calls, login, renewal

    async def _guarded(self, operation: str, secret_id: str, fn: Callable[..., T], **kwargs: Any) -> T:
        try:
            return await self._call(fn, **kwargs)
        except hvac.exceptions.InvalidPath:
            raise _NotFound() from None
        except (hvac.exceptions.VaultError, requests.exceptions.RequestException) as exc:
            raise SecretStoreError(
                f"KV2 secret store: {operation} of secret {secret_id} failed: {_describe(exc)}"
            ) from None

    async def _call(self, fn: Callable[..., T], **kwargs: Any) -> T:
        generation = self._generation
        try:
            return await asyncio.to_thread(fn, **kwargs)
        except _AUTH_ERRORS:
            # expired or forgotten token (e.g. the server restarted): log in once, retry once
            await self._relogin(generation)
            return await asyncio.to_thread(fn, **kwargs)

    async def _relogin(self, failed_generation: int) -> None:
        async with self._login_lock:
            if self._generation != failed_generation:
                return  # another caller already logged in again
            log.info("KV2 secret store: token rejected, logging in again as %r", self.config.user)
            await self._login()

    async def _login(self) -> None:
        response = await asyncio.to_thread(
            self._client.auth.userpass.login, self.config.user, self.config.password.get()
        )
        auth = response["auth"]
        self._lease_seconds = int(auth.get("lease_duration") or 0)
        self._renewable = bool(auth.get("renewable"))
        self._generation += 1
        self.logins += 1

    async def _keep_token_alive(self) -> None:
        """Renew before the lease runs out; log in again when renewal cannot extend it."""
        while True:
            if self._lease_seconds <= 0:  # a token without expiry needs no care
                await asyncio.sleep(60)
                continue
            await asyncio.sleep(max(self._lease_seconds * RENEW_AT, 0.5))
            generation = self._generation
            try:
                if self._renewable:
                    response = await asyncio.to_thread(self._client.auth.token.renew_self)
                    lease = int(response["auth"].get("lease_duration") or 0)
                    if lease >= MIN_LEASE_SECONDS:
                        self._lease_seconds = lease
                        self.renewals += 1
                        continue
                # not renewable, or at its max TTL: a fresh login
                await self._relogin(generation)
            except asyncio.CancelledError:
                raise
            except _AUTH_ERRORS:
                try:
                    await self._relogin(generation)
                except Exception as exc:  # noqa: BLE001 - the renewal loop must survive
                    log.warning("KV2 secret store: login failed: %s", _describe(exc))
                    await asyncio.sleep(RETRY_LOGIN_SECONDS)
            except Exception as exc:  # noqa: BLE001 - the renewal loop must survive
                log.warning("KV2 secret store: token renewal failed: %s", _describe(exc))
                await asyncio.sleep(RETRY_LOGIN_SECONDS)


class _NotFound(Exception):
    pass
