"""The short-term-credential (STC) cache: vended STS credentials are reused while fresh enough.

As in Lakekeeper (``storage/cache.rs``): keyed by table location, permission, profile and storage
credential; an entry is served for half of the credential's remaining validity, at most one hour,
so a client never receives credentials that are about to expire. Concurrent misses on one key
share a single STS call.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from typing import Any

from attrs import field, frozen

MAX_REUSE_SECONDS = 3600


@frozen
class VendedCredential:
    access_key_id: str
    secret_access_key: str = field(repr=False)
    session_token: str = field(repr=False)
    expiration_ms: int


def reuse_window_seconds(credential: VendedCredential, now: float) -> float:
    remaining = credential.expiration_ms / 1000 - now
    return max(0.0, min(remaining / 2, MAX_REUSE_SECONDS))


class CredentialCache:
    """LRU of vended credentials with hit/miss counters (and Prometheus, once bound)."""

    def __init__(self, capacity: int = 10000, *, enabled: bool = True, clock: Callable[[], float] = time.time):
        self.capacity = capacity
        self.enabled = enabled and capacity > 0
        self.clock = clock
        self.hits = 0
        self.misses = 0
        self.metrics: Any = None  # lakekeeper_host.metrics.Metrics, bound at server startup
        self._entries: OrderedDict[Hashable, tuple[VendedCredential, float]] = OrderedDict()
        self._inflight: dict[Hashable, asyncio.Future[VendedCredential]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def configure(self, *, capacity: int, enabled: bool) -> None:
        self.capacity = capacity
        self.enabled = enabled and capacity > 0
        self._evict()

    async def get_or_fetch(
        self, key: Hashable, fetch: Callable[[], Awaitable[VendedCredential]]
    ) -> VendedCredential:
        if not self.enabled:
            return await fetch()
        now = self.clock()
        entry = self._entries.get(key)
        if entry is not None and entry[1] > now:
            self._entries.move_to_end(key)
            self._count("hit")
            return entry[0]
        pending = self._inflight.get(key)
        if pending is not None and pending.get_loop() is asyncio.get_running_loop():
            self._count("hit")
            return await asyncio.shield(pending)
        self._count("miss")
        future: asyncio.Future[VendedCredential] = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        try:
            credential = await fetch()
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: no "never retrieved" warning when nobody else waited
            raise
        else:
            future.set_result(credential)
            now = self.clock()
            self._entries[key] = (credential, now + reuse_window_seconds(credential, now))
            self._entries.move_to_end(key)
            self._evict()
            return credential
        finally:
            if self._inflight.get(key) is future:
                del self._inflight[key]

    def _evict(self) -> None:
        while len(self._entries) > max(self.capacity, 0):
            self._entries.popitem(last=False)

    def _count(self, result: str) -> None:
        if result == "hit":
            self.hits += 1
        else:
            self.misses += 1
        if self.metrics is not None:
            self.metrics.cache.labels("stc", result).inc()
