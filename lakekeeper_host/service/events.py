"""Change events: CloudEvents v1.0 fanned out to every configured sink after a commit.

Publishing never blocks or fails a request: events go to a bounded in-process queue per sink,
and a worker per sink delivers them with retries and exponential backoff.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any, Protocol

from attrs import define, field, frozen

log = logging.getLogger(__name__)


@frozen
class CloudEvent:
    """A CloudEvent v1.0; ``extensions`` holds Lakekeeper's attributes (tabular-id, actor...)."""

    id: str
    source: str
    type: str
    data: Any
    time: str
    extensions: Mapping[str, Any] = field(factory=dict)
    datacontenttype: str = "application/json"
    specversion: str = "1.0"

    def attributes(self) -> dict[str, Any]:
        """Context attributes (everything but ``data``), as the bindings carry them."""
        attrs = {
            "specversion": self.specversion,
            "id": self.id,
            "source": self.source,
            "type": self.type,
            "time": self.time,
            "datacontenttype": self.datacontenttype,
        }
        attrs.update({k: v for k, v in self.extensions.items() if v is not None})
        return attrs

    def to_structured(self) -> dict[str, Any]:
        return {**self.attributes(), "data": self.data}


class EventSink(Protocol):
    name: str

    async def publish(self, event: CloudEvent) -> None: ...

    async def close(self) -> None: ...


def utc_now_iso() -> str:
    return datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")


@define
class SinkStats:
    published: int = 0
    failed_attempts: int = 0
    dropped: int = 0


class EventDispatcher:
    """Queues events per sink and delivers them in order with retry and backoff."""

    def __init__(
        self,
        sinks: list[EventSink],
        *,
        queue_size: int = 10000,
        max_backoff: float = 30.0,
        max_attempts: int | None = None,
    ):
        self.sinks = sinks
        self.stats: dict[str, SinkStats] = {s.name: SinkStats() for s in sinks}
        self._queues: dict[str, asyncio.Queue[CloudEvent]] = {}
        self._workers: list[asyncio.Task] = []
        self._queue_size = queue_size
        self._max_backoff = max_backoff
        self._max_attempts = max_attempts
        self.on_failure = None  # optional callback(sink_name) for metrics

    def start(self) -> None:
        for sink in self.sinks:
            queue: asyncio.Queue[CloudEvent] = asyncio.Queue(self._queue_size)
            self._queues[sink.name] = queue
            self._workers.append(asyncio.create_task(self._run(sink, queue), name=f"events-{sink.name}"))

    def publish(self, events: list[CloudEvent]) -> None:
        """Enqueue (never awaits, never raises): call after the database commit."""
        for sink in self.sinks:
            queue = self._queues.get(sink.name)
            if queue is None:
                continue
            for event in events:
                try:
                    queue.put_nowait(event)
                except asyncio.QueueFull:
                    self.stats[sink.name].dropped += 1
                    log.error("event queue of sink %r is full; dropped event %s", sink.name, event.id)

    async def _run(self, sink: EventSink, queue: asyncio.Queue[CloudEvent]) -> None:
        while True:
            event = await queue.get()
            attempt = 0
            while True:
                try:
                    await sink.publish(event)
                    self.stats[sink.name].published += 1
                    break
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # a sink failure must never escape the worker
                    attempt += 1
                    self.stats[sink.name].failed_attempts += 1
                    if self.on_failure:
                        self.on_failure(sink.name)
                    if self._max_attempts and attempt >= self._max_attempts:
                        self.stats[sink.name].dropped += 1
                        log.error("sink %r gave up on event %s: %s", sink.name, event.id, exc)
                        break
                    delay = min(self._max_backoff, 0.1 * 2 ** min(attempt, 10))
                    delay *= 1 + random.random() * 0.1
                    log.warning("sink %r failed (attempt %d): %s; retry in %.1fs", sink.name, attempt, exc, delay)
                    await asyncio.sleep(delay)
            queue.task_done()

    async def drain(self, timeout: float = 5.0) -> None:
        """Wait until every queued event was delivered (or the timeout passes)."""
        try:
            await asyncio.wait_for(
                asyncio.gather(*(q.join() for q in self._queues.values())), timeout
            )
        except asyncio.TimeoutError:
            log.warning("event queues not drained within %.1fs", timeout)

    async def close(self, timeout: float = 5.0) -> None:
        await self.drain(timeout)
        for worker in self._workers:
            worker.cancel()
        await asyncio.gather(*self._workers, return_exceptions=True)
        for sink in self.sinks:
            try:
                await sink.close()
            except Exception:
                log.exception("closing event sink %r failed", sink.name)
