"""Change events: CloudEvents v1.0 fanned out to every configured sink after a commit.

Publishing never blocks or fails a request: events go to a bounded in-process queue per sink,
and a worker per sink delivers them in order, one at a time, with retries and exponential
backoff. A sink that hangs is timed out and retried like one that fails; every failed attempt
is reported through ``on_failure`` (a Prometheus counter in the server).

A sink that stays down long enough fills its queue (``LAKEKEEPER__EVENTS__QUEUE_CAPACITY``
events); from then on new events for that sink are dropped -- never waited for, since the
request has already committed -- and every dropped event is reported through ``on_dropped``
(its own counter: a drop is a lost event, a failure only a retried attempt).
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
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
        """The JSON event format (structured content mode)."""
        return {**self.attributes(), "data": self.data}

    def structured_json(self) -> bytes:
        return json.dumps(self.to_structured(), separators=(",", ":"), default=str).encode()

    def data_bytes(self) -> bytes:
        """``data`` encoded per ``datacontenttype`` (JSON), as the binary content mode carries it."""
        if isinstance(self.data, bytes):
            return self.data
        return json.dumps(self.data, separators=(",", ":"), default=str).encode()

    def attribute_strings(self) -> dict[str, str]:
        """Every context attribute but ``datacontenttype`` as a string (binary-mode headers)."""
        out: dict[str, str] = {}
        for key, value in self.attributes().items():
            if key == "datacontenttype":
                continue
            if isinstance(value, bool):
                out[key] = "true" if value else "false"
            else:
                out[key] = str(value)
        return out


class EventSink(Protocol):
    name: str

    async def publish(self, event: CloudEvent) -> None:
        """Deliver one event or raise; the dispatcher retries the same event until it succeeds."""

    async def close(self) -> None: ...


def utc_now_iso() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


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
        attempt_timeout: float = 30.0,
    ):
        self.sinks = sinks
        self.stats: dict[str, SinkStats] = {s.name: SinkStats() for s in sinks}
        # asyncio queues bind no loop until used: events published before start() wait here
        self._queues: dict[str, asyncio.Queue[CloudEvent]] = {s.name: asyncio.Queue(queue_size) for s in sinks}
        self._workers: list[asyncio.Task[None]] = []
        self._max_backoff = max_backoff
        self._max_attempts = max_attempts
        self._attempt_timeout = attempt_timeout
        # events dropped per sink since its queue last had room (one warning per overflow)
        self._overflowing: dict[str, int] = {s.name: 0 for s in sinks}
        # metrics hooks, called with the sink name
        self.on_failure: Callable[[str], None] | None = None
        self.on_published: Callable[[str], None] | None = None
        self.on_dropped: Callable[[str], None] | None = None

    def start(self) -> None:
        if self._workers:
            return
        for sink in self.sinks:
            queue = self._queues[sink.name]
            self._workers.append(asyncio.create_task(self._run(sink, queue), name=f"events-{sink.name}"))

    def publish(self, events: list[CloudEvent]) -> None:
        """Enqueue (never awaits, never raises): call after the database commit."""
        for sink in self.sinks:
            queue = self._queues[sink.name]
            for event in events:
                try:
                    queue.put_nowait(event)
                except asyncio.QueueFull:
                    self._drop(sink.name, event, queue.maxsize)
                else:
                    self._end_overflow(sink.name)

    def _drop(self, sink_name: str, event: CloudEvent, capacity: int) -> None:
        self.stats[sink_name].dropped += 1
        self._notify(self.on_dropped, sink_name)
        if self._overflowing[sink_name] == 0:  # once per overflow, not once per event of a burst
            log.warning(
                "event queue of sink %r is full (%d events, LAKEKEEPER__EVENTS__QUEUE_CAPACITY); dropping "
                "new events until it has room again, starting with %s (%s); see lakekeeper_events_dropped_total",
                sink_name, capacity, event.id, event.type,
            )  # fmt: skip
        self._overflowing[sink_name] += 1

    def _end_overflow(self, sink_name: str) -> None:
        dropped = self._overflowing[sink_name]
        if dropped:
            self._overflowing[sink_name] = 0
            log.warning("event queue of sink %r has room again; %d event(s) were dropped", sink_name, dropped)

    def pending(self) -> dict[str, int]:
        """Events not yet delivered, per sink (queued plus the one being attempted)."""
        return {name: queue._unfinished_tasks for name, queue in self._queues.items()}  # type: ignore[attr-defined]

    async def _run(self, sink: EventSink, queue: asyncio.Queue[CloudEvent]) -> None:
        while True:
            event = await queue.get()
            try:
                await self._deliver(sink, event)
            finally:
                queue.task_done()

    async def _deliver(self, sink: EventSink, event: CloudEvent) -> None:
        stats = self.stats[sink.name]
        attempt = 0
        while True:
            try:
                await asyncio.wait_for(sink.publish(event), self._attempt_timeout)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - a sink failure must never escape the worker
                attempt += 1
                stats.failed_attempts += 1
                self._notify(self.on_failure, sink.name)
                reason = f"timed out after {self._attempt_timeout:.0f}s" if isinstance(exc, TimeoutError) else repr(exc)
                if self._max_attempts and attempt >= self._max_attempts:
                    stats.dropped += 1
                    self._notify(self.on_dropped, sink.name)
                    log.error("sink %r gave up on event %s after %d attempts: %s", sink.name, event.id, attempt, reason)
                    return
                delay = min(self._max_backoff, 0.1 * 2 ** min(attempt, 10)) * (1 + random.random() * 0.1)
                log.warning(
                    "sink %r failed to publish event %s (attempt %d): %s; retry in %.1fs",
                    sink.name, event.id, attempt, reason, delay,
                )  # fmt: skip
                await asyncio.sleep(delay)
            else:
                stats.published += 1
                self._notify(self.on_published, sink.name)
                if attempt:
                    log.info("sink %r delivered event %s after %d failed attempt(s)", sink.name, event.id, attempt)
                return

    @staticmethod
    def _notify(callback: Callable[[str], None] | None, sink_name: str) -> None:
        if callback is None:
            return
        try:
            callback(sink_name)
        except Exception:  # metrics must never break delivery
            log.exception("event metrics callback failed")

    async def drain(self, timeout: float = 5.0) -> bool:
        """Wait until every queued event was delivered; False if the timeout passed first."""
        try:
            await asyncio.wait_for(asyncio.gather(*(q.join() for q in self._queues.values())), timeout)
            return True
        except TimeoutError:
            return False

    async def close(self, timeout: float = 5.0) -> None:
        if self._workers and not await self.drain(timeout):
            left = {name: count for name, count in self.pending().items() if count}
            log.warning("shutting down with undelivered events (per sink): %s", left)
        for worker in self._workers:
            worker.cancel()
        await asyncio.gather(*self._workers, return_exceptions=True)
        self._workers.clear()
        for sink in self.sinks:
            try:
                await sink.close()
            except Exception:
                log.exception("closing event sink %r failed", sink.name)
