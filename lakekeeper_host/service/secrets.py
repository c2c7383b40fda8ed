"""Secret stores hold storage credentials; the host keeps only their ids.

A secret value is a JSON object (a ``storage-credential``). It must never reach an API response,
a log line, an error message, an event or a metric: the errors below carry secret *ids* only,
and backends must keep it that way.
"""

from __future__ import annotations

import asyncio
import copy
import random
import time
from collections import OrderedDict
from typing import Any, Protocol

from lakekeeper_host.errors import CatalogError
from lakekeeper_host.ids import new_id

CACHE_NAME = "secrets"
# Lakekeeper jitters cache TTLs down by up to 10 % so entries of one burst do not expire together
_TTL_JITTER = 0.1


class SecretNotFound(CatalogError):
    def __init__(self, secret_id: str):
        super().__init__(404, "SecretNotFound", f"Secret {secret_id} not found")


class SecretStoreError(CatalogError):
    """The secret store is unreachable or refused the request. The message never holds a value."""

    def __init__(self, message: str, *, code: int = 503, type_: str = "SecretStoreUnavailable"):
        super().__init__(code, type_, message)


class SecretStore(Protocol):
    """What a secret backend implements (Lakekeeper's ``*_impl`` methods).

    ``get_impl`` returns ``None`` for an unknown id; ``delete_impl`` of an unknown id is a no-op.
    Failures raise ``SecretStoreError`` (or another ``CatalogError``) whose message names ids,
    never values. ``lakekeeper_testing.secrets_conformance`` checks these rules.
    """

    name: str

    async def create_impl(self, secret_id: str, value: dict[str, Any]) -> None: ...

    async def get_impl(self, secret_id: str) -> dict[str, Any] | None: ...

    async def delete_impl(self, secret_id: str) -> None: ...

    async def health(self) -> bool: ...

    async def close(self) -> None: ...


class Secrets:
    """Host facade over the selected store: new ids, ``SecretNotFound``, a TTL cache.

    The cache follows Lakekeeper (500 entries, 600 s, TTL jitter, single-flight misses).
    ``metrics`` (``lakekeeper_host.metrics.Metrics``) counts hits and misses when bound.
    """

    def __init__(self, store: SecretStore, *, capacity: int = 500, ttl_seconds: float = 600, metrics: Any = None):
        self.store = store
        self.metrics = metrics
        self._cache: OrderedDict[str, tuple[float, dict[str, Any]]] = OrderedDict()
        self._capacity = capacity
        self._ttl = ttl_seconds
        self._loading: dict[str, asyncio.Future[dict[str, Any] | None]] = {}
        # bumped by every delete/invalidate: a load that started before must not refill the cache
        self._epoch = 0
        self.hits = 0
        self.misses = 0

    async def create(self, value: dict[str, Any]) -> str:

        if not isinstance(value, dict):
            raise TypeError("a secret value must be a JSON object")
        secret_id = new_id()
        await self.store.create_impl(secret_id, value)
        return secret_id

    async def get(self, secret_id: str) -> dict[str, Any]:
        entry = self._cache.get(secret_id)
        if entry is not None and entry[0] > time.monotonic():
            self._count("hit")
            self._cache.move_to_end(secret_id)
            return copy.deepcopy(entry[1])
        self._count("miss")
        value = await self._load(secret_id)
        if value is None:
            raise SecretNotFound(secret_id)
        return copy.deepcopy(value)

    async def delete(self, secret_id: str) -> None:
        self._epoch += 1
        self._cache.pop(secret_id, None)
        await self.store.delete_impl(secret_id)

    def invalidate(self, secret_id: str | None = None) -> None:
        self._epoch += 1
        if secret_id is None:
            self._cache.clear()
        else:
            self._cache.pop(secret_id, None)

    async def _load(self, secret_id: str) -> dict[str, Any] | None:
        """One store read per id at a time; concurrent misses wait for it (single flight)."""
        pending = self._loading.get(secret_id)
        if pending is None:
            pending = asyncio.ensure_future(self._read_through(secret_id))
            self._loading[secret_id] = pending
            pending.add_done_callback(lambda _: self._loading.pop(secret_id, None))
        return await asyncio.shield(pending)

    async def _read_through(self, secret_id: str) -> dict[str, Any] | None:
        epoch = self._epoch
        value = await self.store.get_impl(secret_id)
        if value is not None and self._capacity > 0 and self._ttl > 0 and epoch == self._epoch:
            expires = time.monotonic() + self._ttl * (1 - random.random() * _TTL_JITTER)
            self._cache[secret_id] = (expires, value)
            while len(self._cache) > self._capacity:
                self._cache.popitem(last=False)
        return value

    def _count(self, result: str) -> None:
        if result == "hit":
            self.hits += 1
        else:
            self.misses += 1
        if self.metrics is not None:
            self.metrics.cache.labels(CACHE_NAME, result).inc()
