"""Downscoped tokens: Lakekeeper's own token exchanged at Google STS for one limited to a table.

The exchange is OAuth 2.0 Token Exchange (RFC 8693) with a Credential Access Boundary in
``options`` (https://cloud.google.com/iam/docs/downscoping-short-lived-credentials): the boundary
names the bucket, the IAM roles the client may use there, and a CEL condition that keeps every
object and listing request below the table's prefix. As in Lakekeeper (``gcs/sts.rs``), read is
``objectViewer``, read-write adds ``objectCreator``, read-write-delete is ``objectUser``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from typing import TYPE_CHECKING, Any

from attrs import field, frozen

from lakekeeper_host.errors import CatalogError
from lakekeeper_host.service.storage import StoragePermission
from lakekeeper_host.service.storage_errors import http_failure, network_error, storage_error
from lakekeeper_storage_gcs.locations import GcsLocation

if TYPE_CHECKING:
    import httpx
    import requests

log = logging.getLogger(__name__)

TOKEN_EXCHANGE_GRANT = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
# what Lakekeeper's own token may do; the boundary narrows it for clients
STORAGE_SCOPE = "https://www.googleapis.com/auth/devstorage.full_control"
LIST_PREFIX_ATTRIBUTE = "storage.googleapis.com/objectListPrefix"
MAX_REUSE_SECONDS = 3600

ROLES = {
    StoragePermission.READ: ("roles/storage.objectViewer",),
    StoragePermission.READ_WRITE: ("roles/storage.objectViewer", "roles/storage.objectCreator"),
    StoragePermission.READ_WRITE_DELETE: ("roles/storage.objectUser",),
}


# RFC 6749 / RFC 8693 error codes a token endpoint answers with; only these reach a message, never
# the endpoint's own description (the endpoint may be anything a key's token_uri names)
OAUTH_ERROR_CODES = frozenset(
    {
        "access_denied",
        "invalid_client",
        "invalid_grant",
        "invalid_request",
        "invalid_scope",
        "invalid_target",
        "unauthorized_client",
        "unsupported_grant_type",
    }
)


def oauth_error_code(body: Any) -> str | None:
    """The ``error`` of an OAuth error answer (a dict, or its JSON text), when it is a known code."""
    if isinstance(body, (str, bytes)):
        try:
            body = json.loads(body)
        except ValueError:
            return None
    code = body.get("error") if isinstance(body, dict) else None
    return code if isinstance(code, str) and code in OAUTH_ERROR_CODES else None


def no_redirects(session: requests.Session) -> requests.Session:
    """``session``, made to raise ``TooManyRedirects`` instead of following a redirect anywhere."""
    session.max_redirects = 0
    return session


class TokenExchangeFailed(CatalogError):
    def __init__(self, message: str):
        super().__init__(500, "FailedToGetShortTermCredentials", message)


@frozen
class DownscopedToken:
    token: str = field(repr=False)
    expires_at_ms: int


def _cel_string(value: str) -> str:
    """A CEL single-quoted string literal."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def access_boundary(location: GcsLocation, permission: StoragePermission) -> dict[str, Any]:
    """The Credential Access Boundary that limits a token to ``location`` and below."""
    prefix = location.dir_prefix
    bucket_path = f"projects/_/buckets/{location.bucket}"
    condition = " || ".join(
        [
            f"resource.name.startsWith({_cel_string(f'{bucket_path}/objects/{prefix}')})",
            # buckets with hierarchical namespace address folders as resources of their own
            f"resource.name.startsWith({_cel_string(f'{bucket_path}/folders/{prefix}')})",
            # a listing is a request on the bucket; its prefix is an attribute of the request
            f"api.getAttribute({_cel_string(LIST_PREFIX_ATTRIBUTE)}, '').startsWith({_cel_string(prefix)})",
        ]
    )
    return {
        "accessBoundary": {
            "accessBoundaryRules": [
                {
                    "availableResource": f"//storage.googleapis.com/{bucket_path}",
                    "availablePermissions": [f"inRole:{role}" for role in ROLES[permission]],
                    "availabilityCondition": {
                        "title": "lakekeeper-table-prefix",
                        "expression": condition,
                    },
                }
            ]
        }
    }


async def exchange_token(
    client: httpx.AsyncClient,
    sts_endpoint: str,
    subject_token: str,
    boundary: dict[str, Any],
    *,
    clock: Callable[[], float] = time.time,
) -> DownscopedToken:
    """POST the RFC 8693 exchange; the answer is ``{access_token, expires_in, ...}``."""
    form = {
        "grant_type": TOKEN_EXCHANGE_GRANT,
        "subject_token_type": ACCESS_TOKEN_TYPE,
        "requested_token_type": ACCESS_TOKEN_TYPE,
        "subject_token": subject_token,
        "options": json.dumps(boundary, separators=(",", ":")),
    }
    import httpx  # loaded with the client that calls here: discovering the plugin does not load it

    started = clock()
    # what the endpoint answered stays out of the messages (storage_errors); it goes to the log
    try:
        response = await client.post(sts_endpoint, data=form, timeout=30)
    except httpx.HTTPError as exc:
        raise TokenExchangeFailed(f"Token exchange failed: {network_error(exc, sts_endpoint)}") from exc
    if response.status_code != 200:
        log.info("token exchange at %s answered %s: %s", sts_endpoint, response.status_code, response.text[:500])
        error = storage_error(
            http_failure(response.status_code),
            sts_endpoint,
            status=response.status_code,
            code=oauth_error_code(response.content),
            known_codes=OAUTH_ERROR_CODES,
        )
        raise TokenExchangeFailed(f"Token exchange failed: {error}")
    try:
        body = response.json()
        token = body["access_token"]
        expires_in = int(body.get("expires_in", 3600))
    except (ValueError, KeyError, TypeError) as exc:
        raise TokenExchangeFailed(
            f"Token exchange at {sts_endpoint} gave no access_token ({type(exc).__name__})"
        ) from exc
    return DownscopedToken(token=token, expires_at_ms=int((started + expires_in) * 1000))


class SourceToken:
    """Lakekeeper's own access token from google-auth credentials, refreshed when it runs out.

    google-auth refreshes synchronously (a JWT-bearer grant at the key's ``token_uri``, or the
    metadata server), so it runs in a worker thread; one lock keeps concurrent callers to one refresh.
    """

    def __init__(self, credentials: Any):
        self.credentials = credentials
        self._lock = threading.Lock()
        self._request: Any = None

    def get(self) -> str:
        with self._lock:
            if not self.credentials.valid:
                if self._request is None:
                    import requests
                    from google.auth.transport.requests import Request

                    self._request = Request(no_redirects(requests.Session()))
                self.credentials.refresh(self._request)
            return self.credentials.token

    async def get_async(self) -> str:
        return await asyncio.to_thread(self.get)


class TokenCache:
    """Downscoped tokens reused while fresh (half their remaining life, at most an hour).

    Keyed like Lakekeeper's STC cache by location, permission and credential; concurrent misses on
    one key share a single exchange.
    """

    def __init__(self, capacity: int = 10000, *, enabled: bool = True, clock: Callable[[], float] = time.time):
        self.capacity = capacity
        self.enabled = enabled and capacity > 0
        self.clock = clock
        self.hits = 0
        self.misses = 0
        self._entries: OrderedDict[Hashable, tuple[DownscopedToken, float]] = OrderedDict()
        self._inflight: dict[Hashable, asyncio.Future[DownscopedToken]] = {}

    def configure(self, *, capacity: int, enabled: bool) -> None:
        self.capacity = capacity
        self.enabled = enabled and capacity > 0
        while len(self._entries) > max(self.capacity, 0):
            self._entries.popitem(last=False)

    async def get_or_fetch(self, key: Hashable, fetch: Callable[[], Awaitable[DownscopedToken]]) -> DownscopedToken:
        if not self.enabled:
            return await fetch()
        entry = self._entries.get(key)
        if entry is not None and entry[1] > self.clock():
            self._entries.move_to_end(key)
            self.hits += 1
            return entry[0]
        pending = self._inflight.get(key)
        if pending is not None and pending.get_loop() is asyncio.get_running_loop():
            self.hits += 1
            return await asyncio.shield(pending)
        self.misses += 1
        future: asyncio.Future[DownscopedToken] = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        try:
            token = await fetch()
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: no warning when nobody else waited
            raise
        finally:
            if self._inflight.get(key) is future:
                del self._inflight[key]
        future.set_result(token)
        now = self.clock()
        reuse = max(0.0, min((token.expires_at_ms / 1000 - now) / 2, MAX_REUSE_SECONDS))
        self._entries[key] = (token, now + reuse)
        self._entries.move_to_end(key)
        while len(self._entries) > self.capacity:
            self._entries.popitem(last=False)
        return token
