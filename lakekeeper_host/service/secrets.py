"""Secret stores hold storage credentials; the host keeps only their ids."""

from __future__ import annotations

import time
from collections import OrderedDict
from typing import Any, Protocol

from lakekeeper_host.errors import CatalogError


class SecretNotFound(CatalogError):
    def __init__(self, secret_id: str):
        super().__init__(404, "SecretNotFound", f"Secret {secret_id} not found")


class SecretStore(Protocol):
    """What a secret backend implements (Lakekeeper's ``*_impl`` methods)."""

    name: str

    async def create_impl(self, secret_id: str, value: dict[str, Any]) -> None: ...

    async def get_impl(self, secret_id: str) -> dict[str, Any] | None: ...

    async def delete_impl(self, secret_id: str) -> None: ...

    async def health(self) -> bool: ...

    async def close(self) -> None: ...


class Secrets:
    """Host facade over the selected store: ids, a TTL cache and ``SecretNotFound``."""

    def __init__(self, store: SecretStore, *, capacity: int = 500, ttl_seconds: float = 600):
        self.store = store
        self._cache: OrderedDict[str, tuple[float, dict[str, Any]]] = OrderedDict()
        self._capacity = capacity
        self._ttl = ttl_seconds
        self.hits = 0
        self.misses = 0

    async def create(self, value: dict[str, Any]) -> str:
        from lakekeeper_host.store import new_id

        secret_id = new_id()
        await self.store.create_impl(secret_id, value)
        return secret_id

    async def get(self, secret_id: str) -> dict[str, Any]:
        entry = self._cache.get(secret_id)
        if entry and entry[0] > time.monotonic():
            self.hits += 1
            self._cache.move_to_end(secret_id)
            return entry[1]
        self.misses += 1
        value = await self.store.get_impl(secret_id)
        if value is None:
            raise SecretNotFound(secret_id)
        self._cache[secret_id] = (time.monotonic() + self._ttl, value)
        while len(self._cache) > self._capacity:
            self._cache.popitem(last=False)
        return value

    async def delete(self, secret_id: str) -> None:
        self._cache.pop(secret_id, None)
        await self.store.delete_impl(secret_id)

    def invalidate(self) -> None:
        self._cache.clear()
