"""The change feed: PostgreSQL tells every server process what changed, so lookups can be cached.

Migration 0009 makes every change to a warehouse, namespace or tabular row announce its
warehouse id on ``lakekeeper_catalog_changes``. One connection per process (outside the pools)
``LISTEN``s there and bumps the warehouse's epoch in the :class:`~lakekeeper_host.store.cache.LookupCache`.
The cache holds entries only while that connection is up: losing it (or getting it back) empties
the cache, and until it is back every load reads the database.

Only where the read pool is the write database: a read replica may apply a change after its
notification arrived, and a lookup re-read from it then would be cached stale.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

import asyncpg

from lakekeeper_host.store.cache import LookupCache

log = logging.getLogger(__name__)

CHANNEL = "lakekeeper_catalog_changes"
APPLICATION_NAME = "lakekeeper-change-feed"  # how operators (and tests) find the connection


class ChangeFeed:
    def __init__(self, dsn: str, cache: LookupCache, *, check_interval: float = 5.0, retry_interval: float = 1.0,
                 ssl: str | None = None):
        self.dsn = dsn
        self.ssl = ssl  # PG_SSL_MODE, as the pools use it
        self.cache = cache
        self.check_interval = check_interval
        self.retry_interval = retry_interval
        self._task: asyncio.Task | None = None
        self._connected = asyncio.Event()
        self._lost = asyncio.Event()

    async def start(self, wait: float = 5.0) -> None:
        """Start listening; waits up to ``wait`` seconds for the first connection (the cache stays
        off until it is there, so a slow database only costs cache hits)."""
        self._task = asyncio.create_task(self._run(), name="catalog-change-feed")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._connected.wait(), wait)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def _on_change(self, connection: Any, pid: int, channel: str, payload: str) -> None:
        self.cache.changed(payload)

    def _on_lost(self, connection: Any) -> None:
        self.cache.set_live(False)
        self._lost.set()

    async def _run(self) -> None:
        failures = 0
        while True:
            connection = None
            try:
                connection = await asyncpg.connect(
                    self.dsn, timeout=10, server_settings={"application_name": APPLICATION_NAME},
                    **({"ssl": self.ssl} if self.ssl else {}),
                )
                self._lost.clear()
                connection.add_termination_listener(self._on_lost)
                await connection.add_listener(CHANNEL, self._on_change)
                self.cache.set_live(True)
                self._connected.set()
                if failures:
                    log.info("catalog change feed listening again; lookups are cached again")
                failures = 0
                while not self._lost.is_set():
                    # a silent network failure does not close the socket: ask now and then
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._lost.wait(), self.check_interval)
                    if not self._lost.is_set():
                        await asyncio.wait_for(connection.fetchval("SELECT 1"), self.check_interval)
                raise ConnectionError("the listening connection was closed")
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - any failure means: not listening
                failures += 1
                if failures == 1:
                    log.warning("catalog change feed lost (%s: %s); loads read the database until it is back",
                                type(exc).__name__, exc)
            finally:
                self.cache.set_live(False)
                if connection is not None and not connection.is_closed():
                    connection.terminate()
            await asyncio.sleep(min(self.retry_interval * max(failures, 1), 30))
