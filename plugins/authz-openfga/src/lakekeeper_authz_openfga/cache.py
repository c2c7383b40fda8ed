"""A bounded TTL cache of OpenFGA answers: check results, and the object ids of ListObjects.

OpenFGA answers the same questions over and over on the read path (loadTable checks the same
table for the same user on every call; a list asks which tables the user may see). The cache
answers repeats for a few seconds. Grants this process writes clear it at once; grants written by
other Lakekeeper processes take effect within the TTL, which is why the TTL is short.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

CheckKey = tuple[str, str, str]  # (user, relation, object) in OpenFGA's spelling
ListKey = tuple[str, str, str]  # (user, relation, object type): a ListObjects question


class TtlCache:
    def __init__(self, capacity: int, ttl_seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.capacity = capacity
        self.ttl = ttl_seconds
        self._clock = clock
        self._entries: OrderedDict[Hashable, tuple[float, Any]] = OrderedDict()
        # bumped by every invalidation: an answer fetched before a write must not be stored after it
        self.generation = 0
        self.hits = 0
        self.misses = 0
        # ("hit" | "miss", how many), for Prometheus: counted once per batch of lookups
        self.on_lookup: Callable[[str, int], None] | None = None

    @property
    def enabled(self) -> bool:
        return self.capacity > 0 and self.ttl > 0

    def get(self, key: Hashable) -> Any:
        """The cached answer, or None (use :meth:`get_many` where None is an answer)."""
        return self.get_many([key]).get(key)

    def get_many(self, keys: list[Hashable]) -> dict[Hashable, Any]:
        """The cached answers among ``keys`` (a list page asks a thousand at once)."""
        if not self.enabled:
            return {}
        now = self._clock()
        found: dict[Hashable, Any] = {}
        entries = self._entries
        for key in keys:
            entry = entries.get(key)
            if entry is not None and entry[0] > now:
                entries.move_to_end(key)
                found[key] = entry[1]
            elif entry is not None:
                del entries[key]
        self._count("hit", len(found))
        self._count("miss", len(keys) - len(found))
        return found

    def put(self, key: Hashable, answer: Any, generation: int) -> None:
        if not self.enabled or generation != self.generation:
            return
        self._entries[key] = (self._clock() + self.ttl, answer)
        self._entries.move_to_end(key)
        while len(self._entries) > self.capacity:
            self._entries.popitem(last=False)

    def invalidate(self) -> None:
        self.generation += 1
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)

    def _count(self, result: str, count: int) -> None:
        if not count:
            return
        if result == "hit":
            self.hits += count
        else:
            self.misses += count
        if self.on_lookup is not None:
            self.on_lookup(result, count)
