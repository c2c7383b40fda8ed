"""An asyncio Iceberg REST client for the load driver (aiohttp), recording every request.

The same client drives every catalog in the benchmark: ours, the web-stack floor, SeaweedFS
(requests signed with SigV4, signing name ``s3tables``) and lakana (bearer token). It speaks
the spec paths below ``{catalog_url}/v1/{prefix}``; the prefix comes from ``GET /v1/config``.
"""

from __future__ import annotations

import hashlib
import json
import time
import urllib.parse
from typing import Any

import aiohttp

from bench.stats import Recorder

NAMESPACE_SEPARATOR = "\x1f"
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()


def encode_namespace(namespace: list[str] | tuple[str, ...]) -> str:
    return urllib.parse.quote(NAMESPACE_SEPARATOR.join(namespace), safe="")


def quote(name: str) -> str:
    return urllib.parse.quote(name, safe="")


class SigV4Signer:
    """SigV4 headers from botocore, reused for identical requests for up to a minute.

    A real client signs every request; reusing a signature for the same method, URL and body
    keeps the driver's own CPU cost (which competes with the server on this machine) from
    being charged to the signed peer. The server accepts signatures for 15 minutes.
    """

    def __init__(self, access_key: str, secret_key: str, region: str, service: str = "s3tables"):
        from botocore.auth import SigV4Auth
        from botocore.credentials import Credentials

        self._auth = SigV4Auth(Credentials(access_key, secret_key), service, region)
        self._cache: dict[tuple[str, str, bytes], tuple[float, dict[str, str]]] = {}

    def headers(self, method: str, url: str, body: bytes | None, content_type: str | None) -> dict[str, str]:
        key = (method, url, body or b"")
        cached = self._cache.get(key)
        now = time.monotonic()
        if cached and now - cached[0] < 60:
            return cached[1]
        from botocore.awsrequest import AWSRequest

        headers = {"x-amz-content-sha256": hashlib.sha256(body or b"").hexdigest()}
        if content_type:
            headers["content-type"] = content_type
        split = urllib.parse.urlsplit(url)
        params = dict(urllib.parse.parse_qsl(split.query, keep_blank_values=True))
        request = AWSRequest(method=method, url=url.split("?")[0], params=params, data=body, headers=headers)
        self._auth.add_auth(request)
        signed = {k: v for k, v in request.headers.items()}
        if len(self._cache) > 50_000:
            self._cache.clear()
        self._cache[key] = (now, signed)
        return signed


class RestCatalogClient:
    """One catalog endpoint, one connection pool, one ``Recorder``.

    ``target`` is a plain dict (it crosses the process boundary as JSON):
    ``{"name", "catalog_url", "warehouse", "prefix"?, "token"?, "sigv4"?: {access_key, secret_key, region}}``.
    """

    def __init__(self, target: dict[str, Any], recorder: Recorder | None = None, *, concurrency: int = 16,
                 timeout: float = 60.0):
        self.target = target
        self.recorder = recorder or Recorder()
        self.catalog_url = target["catalog_url"].rstrip("/")
        self.prefix: str | None = target.get("prefix")
        self.concurrency = concurrency
        self.timeout = timeout
        sigv4 = target.get("sigv4")
        self.signer = SigV4Signer(**sigv4) if sigv4 else None
        self.base_headers = {"accept": "application/json"}
        if target.get("token"):
            self.base_headers["authorization"] = f"Bearer {target['token']}"
        self.session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> RestCatalogClient:
        connector = aiohttp.TCPConnector(limit=max(self.concurrency, 1) + 4, ttl_dns_cache=3600,
                                         enable_cleanup_closed=True)
        self.session = aiohttp.ClientSession(connector=connector,
                                             timeout=aiohttp.ClientTimeout(total=self.timeout),
                                             skip_auto_headers=("User-Agent",))
        if self.prefix is None:
            try:
                await self.resolve_prefix()
            except BaseException:
                await self.session.close()
                raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.session is not None:
            await self.session.close()

    # -- transport ----------------------------------------------------------------------------

    async def resolve_prefix(self) -> str:
        params = {"warehouse": self.target["warehouse"]} if self.target.get("warehouse") else {}
        status, body, _ = await self.raw("GET", f"{self.catalog_url}/v1/config", params=params)
        if status != 200:
            raise RuntimeError(f"{self.target['name']}: GET /v1/config -> {status}: {body[:300]!r}")
        config = json.loads(body)
        prefix = config.get("overrides", {}).get("prefix") or config.get("defaults", {}).get("prefix")
        self.prefix = prefix or ""
        return self.prefix

    def url(self, path: str) -> str:
        base = f"{self.catalog_url}/v1/{self.prefix}" if self.prefix else f"{self.catalog_url}/v1"
        return base + path

    async def raw(self, method: str, url: str, *, params: dict[str, str] | None = None, body: Any = None,
                  headers: dict[str, str] | None = None) -> tuple[int, bytes, dict[str, str]]:
        assert self.session is not None, "use the client as an async context manager"
        if params:
            url = url + ("&" if "?" in url else "?") + urllib.parse.urlencode(params)
        data = None
        request_headers = dict(self.base_headers)
        if body is not None:
            data = json.dumps(body, separators=(",", ":")).encode()
            request_headers["content-type"] = "application/json"
        if self.signer is not None:
            request_headers.update(self.signer.headers(method, url, data, request_headers.get("content-type")))
        if headers:
            request_headers.update(headers)
        async with self.session.request(method, url, data=data, headers=request_headers) as response:
            payload = await response.read()
            return response.status, payload, dict(response.headers)

    async def call(self, op: str, method: str, path: str, *, params: dict[str, str] | None = None,
                   body: Any = None, ok: tuple[int, ...] = (200, 204), headers: dict[str, str] | None = None,
                   started: float | None = None) -> tuple[int, bytes]:
        """One recorded request; ``started`` lets an open-model caller count queueing delay too."""
        began = time.perf_counter() if started is None else started
        try:
            status, payload, _ = await self.raw(method, self.url(path), params=params, body=body, headers=headers)
        except Exception as exc:  # a refused/reset/timed-out request is a result too
            self.recorder.record(op, time.perf_counter() - began, f"exception:{type(exc).__name__}", False, str(exc))
            return -1, b""
        self.recorder.record(op, time.perf_counter() - began, status, status in ok,
                             "" if status in ok else payload.decode(errors="replace"))
        return status, payload

    # -- Iceberg REST operations --------------------------------------------------------------

    async def create_namespace(self, namespace: list[str], properties: dict[str, str], **kw: Any):
        return await self.call("create_namespace", "POST", "/namespaces",
                               body={"namespace": namespace, "properties": properties}, **kw)

    async def list_namespaces(self, parent: list[str] | None = None, **kw: Any):
        params = {"parent": NAMESPACE_SEPARATOR.join(parent)} if parent else None
        return await self.call("list_namespaces", "GET", "/namespaces", params=params, **kw)

    async def namespace_exists(self, namespace: list[str], **kw: Any):
        return await self.call("namespace_exists", "HEAD", f"/namespaces/{encode_namespace(namespace)}", **kw)

    async def load_namespace(self, namespace: list[str], **kw: Any):
        return await self.call("load_namespace", "GET", f"/namespaces/{encode_namespace(namespace)}", **kw)

    async def update_namespace_properties(self, namespace: list[str], updates: dict[str, str], **kw: Any):
        return await self.call("update_namespace_properties", "POST",
                               f"/namespaces/{encode_namespace(namespace)}/properties",
                               body={"removals": [], "updates": updates}, **kw)

    async def create_table(self, namespace: list[str], body: dict[str, Any], **kw: Any):
        return await self.call("create_table", "POST", f"/namespaces/{encode_namespace(namespace)}/tables",
                               body=body, **kw)

    async def list_tables(self, namespace: list[str], *, page_size: int | None = None,
                          page_token: str | None = None, op: str = "list_tables", **kw: Any):
        params = {}
        if page_size:
            params["pageSize"] = str(page_size)
        if page_token is not None:
            params["pageToken"] = page_token
        return await self.call(op, "GET", f"/namespaces/{encode_namespace(namespace)}/tables",
                               params=params or None, **kw)

    async def table_exists(self, namespace: list[str], table: str, **kw: Any):
        return await self.call("table_exists", "HEAD",
                               f"/namespaces/{encode_namespace(namespace)}/tables/{quote(table)}", **kw)

    async def load_table(self, namespace: list[str], table: str, *, snapshots: str | None = None,
                         op: str = "load_table", **kw: Any):
        params = {"snapshots": snapshots} if snapshots else None
        return await self.call(op, "GET", f"/namespaces/{encode_namespace(namespace)}/tables/{quote(table)}",
                               params=params, **kw)

    async def commit_table(self, namespace: list[str], table: str, updates: list[dict[str, Any]],
                           requirements: list[dict[str, Any]] | None = None, *, op: str = "commit_table",
                           **kw: Any):
        body: dict[str, Any] = {"updates": updates}
        if requirements is not None:
            body["requirements"] = requirements
        return await self.call(op, "POST", f"/namespaces/{encode_namespace(namespace)}/tables/{quote(table)}",
                               body=body, **kw)

    async def create_view(self, namespace: list[str], body: dict[str, Any], **kw: Any):
        return await self.call("create_view", "POST", f"/namespaces/{encode_namespace(namespace)}/views",
                               body=body, **kw)

    async def list_views(self, namespace: list[str], **kw: Any):
        return await self.call("list_views", "GET", f"/namespaces/{encode_namespace(namespace)}/views", **kw)

    async def view_exists(self, namespace: list[str], view: str, **kw: Any):
        return await self.call("view_exists", "HEAD",
                               f"/namespaces/{encode_namespace(namespace)}/views/{quote(view)}", **kw)

    async def load_view(self, namespace: list[str], view: str, **kw: Any):
        return await self.call("load_view", "GET",
                               f"/namespaces/{encode_namespace(namespace)}/views/{quote(view)}", **kw)

    async def commit_view(self, namespace: list[str], view: str, updates: list[dict[str, Any]], **kw: Any):
        return await self.call("commit_view", "POST",
                               f"/namespaces/{encode_namespace(namespace)}/views/{quote(view)}",
                               body={"updates": updates}, **kw)
