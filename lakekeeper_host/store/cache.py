"""In-process caches of the store, safe with several stateless replicas.

* :class:`MetadataCache` -- table metadata by **metadata location**. A metadata file is never
  rewritten in place (every commit writes a new file), so what a location names never changes
  and an entry is right on every replica for as long as it is kept. It holds the JSON text,
  derived texts (the ``snapshots=refs`` body) and parsed ``TableMetadata`` objects (frozen
  pydantic models, shared read-only). LRU, bounded by an estimate of memory.
* :class:`TtlCache` -- warehouse rows for a short time, as Lakekeeper caches them (60 s by
  default, ``LAKEKEEPER__CACHE__WAREHOUSE__*``). A change made by this process forgets the
  entry at once (and again when its transaction ends); another replica's change is seen within
  the TTL -- except by loadTable and commits, which check the warehouse version in the same
  query that finds the table.
* :class:`LookupCache` -- what loadTable/loadView look up first (namespace, tabular row,
  warehouse version) by name, kept only while a change feed tells this process about every
  change to those rows (PostgreSQL ``LISTEN``, see ``store/changes.py``), and forgotten when it
  does; without a live feed it holds nothing.
"""


from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

# ``observer(cache, "hit" | "miss")``: how the server counts lookups in its metrics
Observer = Callable[[str, str], None]


def _ignore(cache: str, result: str) -> None:
    pass


# parsed pydantic metadata takes several times the memory of its JSON text
PARSED_WEIGHT = 8
DEFAULT_METADATA_BYTES = 128 * 2**20


class MetadataCache:
    """LRU of ``(kind, metadata location) -> value`` bounded by ``max_bytes`` (estimated)."""

    def __init__(self, max_bytes: int = DEFAULT_METADATA_BYTES):
        self.max_bytes = max_bytes
        self.bytes = 0
        self._entries: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self.observer: Observer = _ignore

    def get(self, kind: str, location: str) -> Any:
        entry = self._entries.get((kind, location))
        if entry is None:
            self.observer("table-metadata", "miss")
            return None
        self._entries.move_to_end((kind, location))
        self.observer("table-metadata", "hit")
        return entry[0]

    def put(self, kind: str, location: str, value: Any, size: int) -> None:
        # one huge table must not evict everything else: at most half the cache (the parsed metadata of a
        # table with 10,000 snapshots is ~33 MiB; parsing it again costs a commit about a second)
        if size > self.max_bytes // 2:
            return
        key = (kind, location)
        old = self._entries.pop(key, None)
        if old is not None:
            self.bytes -= old[1]
        self._entries[key] = (value, size)
        self.bytes += size
        while self.bytes > self.max_bytes and self._entries:
            _, (_, evicted) = self._entries.popitem(last=False)
            self.bytes -= evicted

    def forget(self, kind: str, location: str) -> None:
        entry = self._entries.pop((kind, location), None)
        if entry is not None:
            self.bytes -= entry[1]

    def __len__(self) -> int:
        return len(self._entries)


class TtlCache:
    """``key -> value`` for ``ttl`` seconds, at most ``capacity`` entries (oldest dropped first)."""

    def __init__(self, ttl: float, capacity: int, *, enabled: bool = True, name: str = "warehouse"):
        self.name = name  # the ``cache`` label of its lookups in the metrics
        self.ttl = ttl
        self.capacity = capacity
        self.enabled = enabled and ttl > 0 and capacity > 0
        self._entries: OrderedDict[Hashable, tuple[float, Any]] = OrderedDict()
        self.observer: Observer = _ignore

    def get(self, key: Hashable) -> Any:
        if not self.enabled:
            return None
        entry = self._entries.get(key)
        if entry is None or entry[0] < time.monotonic():
            if entry is not None:
                self._entries.pop(key, None)
            self.observer(self.name, "miss")
            return None
        self.observer(self.name, "hit")
        return entry[1]

    def put(self, key: Hashable, value: Any) -> None:
        if not self.enabled:
            return
        self._entries.pop(key, None)
        self._entries[key] = (time.monotonic() + self.ttl, value)
        while len(self._entries) > self.capacity:
            self._entries.popitem(last=False)

    def forget(self, key: Hashable) -> None:
        self._entries.pop(key, None)

    def clear(self) -> None:
        self._entries.clear()


class LookupCache:
    """``(warehouse id, key) -> value``, valid until a change in that warehouse is announced.

    Every entry remembers the epochs it was read under: the process-wide epoch (bumped when the
    change feed goes down or comes back, and when a write transaction of this process ends) and
    its warehouse's epoch (bumped by each change the feed announces for the warehouse). An entry
    whose epochs moved on is stale. A reader takes a :meth:`token` *before* it queries and
    :meth:`put` keeps the result only under that token, so a change announced while the query
    ran is never papered over by the older result.

    Another replica's change is seen when its notification arrives (PostgreSQL delivers it at
    commit; milliseconds): the same bounded staleness as reading from a replica. Changes made by
    this process are seen at once.
    """

    def __init__(self, capacity: int = 10000, *, enabled: bool = True):
        self.capacity = capacity
        self.enabled = enabled and capacity > 0
        self.live = False  # a change feed is listening
        self.epoch = 0
        self._warehouse_epochs: dict[str, int] = {}
        self._entries: OrderedDict[Hashable, tuple[int, int, Any]] = OrderedDict()
        self.observer: Observer = _ignore

    def token(self, warehouse_id: str) -> tuple[int, int] | None:
        """The epochs a read starts under; None when nothing may be cached now."""
        if not (self.enabled and self.live):
            return None
        return self.epoch, self._warehouse_epochs.get(warehouse_id, 0)

    def get(self, warehouse_id: str, key: Hashable) -> Any:
        if not (self.enabled and self.live):
            return None
        entry = self._entries.get((warehouse_id, key))
        if entry is None or entry[:2] != (self.epoch, self._warehouse_epochs.get(warehouse_id, 0)):
            self.observer("tabular-lookup", "miss")
            return None
        self._entries.move_to_end((warehouse_id, key))
        self.observer("tabular-lookup", "hit")
        return entry[2]

    def put(self, warehouse_id: str, key: Hashable, value: Any, token: tuple[int, int] | None) -> None:
        if token is None or token != self.token(warehouse_id):
            return
        self._entries[(warehouse_id, key)] = (*token, value)
        self._entries.move_to_end((warehouse_id, key))
        while len(self._entries) > self.capacity:
            self._entries.popitem(last=False)

    def changed(self, warehouse_id: str) -> None:
        """Something in the warehouse changed (its row, a namespace, a table or view)."""
        self._warehouse_epochs[warehouse_id] = self._warehouse_epochs.get(warehouse_id, 0) + 1

    def changed_everything(self) -> None:
        self.epoch += 1
        self._entries.clear()
        self._warehouse_epochs.clear()

    def set_live(self, live: bool) -> None:
        """The change feed started (or resumed) listening, or lost its connection: either way
        what was cached may have missed a change."""
        self.live = live
        self.changed_everything()

    def __len__(self) -> int:
        return len(self._entries)


class StoreCaches:
    """The caches one ``Store`` (one process) keeps."""

    def __init__(self, *, warehouse_ttl: float = 60.0, warehouse_capacity: int = 1000,
                 warehouse_enabled: bool = True, metadata_bytes: int = DEFAULT_METADATA_BYTES,
                 lookup_capacity: int = 10000, lookup_enabled: bool = True,
                 role_ttl: float = 120.0, role_capacity: int = 10000, role_enabled: bool = True):
        self.warehouses = TtlCache(warehouse_ttl, warehouse_capacity, enabled=warehouse_enabled)
        # roles by id, as Lakekeeper's role cache (LAKEKEEPER__CACHE__ROLE__*): the x-assume-role header of
        # every request is resolved through it; a deletion by this process forgets the role at once
        self.roles = TtlCache(role_ttl, role_capacity, enabled=role_enabled, name="role")
        self.metadata = MetadataCache(metadata_bytes)
        self.lookups = LookupCache(lookup_capacity, enabled=lookup_enabled)
        # metadata files a load found in storage (a HEAD request on object stores): asked again
        # after 30 s, so a file deleted behind the catalog's back is noticed, but not on every load
        self.present_files = TtlCache(30.0, 10000, name="metadata-file")

    def observe(self, observer: Observer) -> None:
        """Report every lookup as ``observer(cache, "hit" | "miss")``."""
        self.warehouses.observer = self.metadata.observer = self.lookups.observer = observer
        self.present_files.observer = self.roles.observer = observer
