"""The event dispatcher: per-sink queues, in-order delivery, retries, failure counting."""

from __future__ import annotations

import asyncio
import logging

import pytest

from lakekeeper_host.config import load_settings
from lakekeeper_host.config.env import ConfigError
from lakekeeper_host.metrics import Metrics
from lakekeeper_host.server import events as server_events
from lakekeeper_host.service.authz import Actor
from lakekeeper_host.service.events import CloudEvent, EventDispatcher


def make_event(n: int) -> CloudEvent:
    return CloudEvent(id=f"id-{n}", source="test", type="updateTable", data={"n": n}, time="t")


class RecordingSink:
    def __init__(self, name: str = "recording"):
        self.name = name
        self.received: list[str] = []
        self.closed = False

    async def publish(self, event: CloudEvent) -> None:
        self.received.append(event.id)

    async def close(self) -> None:
        self.closed = True


class FlakySink(RecordingSink):
    """Fails the first ``failures`` attempts of every event."""

    def __init__(self, failures: int):
        super().__init__("flaky")
        self.failures = failures
        self.attempts: dict[str, int] = {}

    async def publish(self, event: CloudEvent) -> None:
        self.attempts[event.id] = self.attempts.get(event.id, 0) + 1
        if self.attempts[event.id] <= self.failures:
            raise ConnectionError("broker away")
        self.received.append(event.id)


class BlockedSink(RecordingSink):
    """Never returns until released: a broker that accepts the connection and then hangs."""

    def __init__(self):
        super().__init__("blocked")
        self.release = asyncio.Event()

    async def publish(self, event: CloudEvent) -> None:
        await self.release.wait()
        self.received.append(event.id)


async def test_every_sink_receives_every_event_in_order():
    a, b = RecordingSink("a"), RecordingSink("b")
    dispatcher = EventDispatcher([a, b])
    dispatcher.start()
    dispatcher.publish([make_event(i) for i in range(5)])
    dispatcher.publish([make_event(5)])
    assert await dispatcher.drain(5)
    assert a.received == b.received == [f"id-{i}" for i in range(6)]
    await dispatcher.close()
    assert a.closed and b.closed


async def test_failures_are_retried_in_order_and_counted():
    sink = FlakySink(failures=2)
    failures: list[str] = []
    delivered: list[str] = []
    dispatcher = EventDispatcher([sink], max_backoff=0.01)
    dispatcher.on_failure = failures.append
    dispatcher.on_published = delivered.append
    dispatcher.start()
    dispatcher.publish([make_event(i) for i in range(3)])
    assert await dispatcher.drain(10)
    assert sink.received == ["id-0", "id-1", "id-2"]
    assert failures == ["flaky"] * 6
    assert delivered == ["flaky"] * 3
    assert dispatcher.stats["flaky"].failed_attempts == 6
    assert dispatcher.stats["flaky"].published == 3
    await dispatcher.close()


async def test_a_hanging_sink_blocks_neither_publish_nor_other_sinks():
    blocked, healthy = BlockedSink(), RecordingSink("healthy")
    dispatcher = EventDispatcher([blocked, healthy])
    dispatcher.start()
    dispatcher.publish([make_event(i) for i in range(3)])  # returns at once: nothing awaited
    await asyncio.wait_for(_until(lambda: len(healthy.received) == 3), 5)
    assert blocked.received == []
    assert dispatcher.pending()["blocked"] == 3
    blocked.release.set()
    assert await dispatcher.drain(5)
    assert blocked.received == ["id-0", "id-1", "id-2"]
    await dispatcher.close()


async def test_a_hanging_attempt_times_out_and_is_retried():
    class HangOnce(RecordingSink):
        hung = False

        async def publish(self, event):
            if not self.hung:
                self.hung = True
                await asyncio.sleep(3600)
            self.received.append(event.id)

    sink = HangOnce("hang-once")
    failures: list[str] = []
    dispatcher = EventDispatcher([sink], attempt_timeout=0.05, max_backoff=0.01)
    dispatcher.on_failure = failures.append
    dispatcher.start()
    dispatcher.publish([make_event(1)])
    assert await dispatcher.drain(5)
    assert sink.received == ["id-1"]
    assert failures == ["hang-once"]
    await dispatcher.close()


async def test_a_full_queue_drops_and_counts_instead_of_blocking(caplog):
    sink = BlockedSink()
    failures: list[str] = []
    dropped: list[str] = []
    dispatcher = EventDispatcher([sink], queue_size=2)
    dispatcher.on_failure = failures.append
    dispatcher.on_dropped = dropped.append
    with caplog.at_level(logging.WARNING, logger="lakekeeper_host.service.events"):
        dispatcher.publish([make_event(i) for i in range(5)])  # not started: the queue holds 2
    assert dispatcher.stats["blocked"].dropped == 3
    # a drop is a lost event, counted on its own; no delivery was attempted, so no failure
    assert dropped == ["blocked"] * 3
    assert failures == []
    # one warning for the burst (not one per event), naming the sink and the setting
    overflow = [r.getMessage() for r in caplog.records if "is full" in r.getMessage()]
    assert len(overflow) == 1
    assert "'blocked'" in overflow[0] and "LAKEKEEPER__EVENTS__QUEUE_CAPACITY" in overflow[0]
    assert "id-2" in overflow[0]  # the first event that was lost

    dispatcher.start()
    sink.release.set()
    assert await dispatcher.drain(5)
    assert sink.received == ["id-0", "id-1"]
    # once there is room again, events are queued (and the warning says how many were lost)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="lakekeeper_host.service.events"):
        dispatcher.publish([make_event(5)])
    assert await dispatcher.drain(5)
    assert sink.received == ["id-0", "id-1", "id-5"]
    assert any("has room again; 3 event(s) were dropped" in r.getMessage() for r in caplog.records)
    assert dispatcher.stats["blocked"].dropped == 3
    await dispatcher.close()


async def test_queue_capacity_comes_from_the_events_setting():
    settings = load_settings({"LAKEKEEPER__EVENTS__QUEUE_CAPACITY": "3"})
    assert load_settings({}).host.events.queue_capacity == 10000
    sink = BlockedSink()
    metrics = Metrics()
    dispatcher = EventDispatcher([sink], queue_size=settings.host.events.queue_capacity)
    dispatcher.on_dropped = lambda name: metrics.events_dropped.labels(name).inc()
    dispatcher.on_failure = lambda name: metrics.event_failures.labels(name).inc()
    dispatcher.publish([make_event(i) for i in range(10)])
    assert dispatcher.pending() == {"blocked": 3}
    assert metrics.registry.get_sample_value("lakekeeper_events_dropped_total", {"sink": "blocked"}) == 7
    assert metrics.registry.get_sample_value("lakekeeper_event_publish_failures_total", {"sink": "blocked"}) is None
    await dispatcher.close(timeout=0.01)


def test_a_queue_capacity_below_one_is_a_config_error():
    with pytest.raises(ConfigError, match="LAKEKEEPER__EVENTS"):
        load_settings({"LAKEKEEPER__EVENTS__QUEUE_CAPACITY": "0"})


async def test_max_attempts_gives_up_and_moves_on():
    sink = FlakySink(failures=10**6)
    dropped: list[str] = []
    dispatcher = EventDispatcher([sink], max_attempts=3, max_backoff=0.01)
    dispatcher.on_dropped = dropped.append
    dispatcher.start()
    dispatcher.publish([make_event(1), make_event(2)])
    assert await dispatcher.drain(5)
    assert sink.attempts == {"id-1": 3, "id-2": 3}
    assert dispatcher.stats["flaky"].dropped == 2
    assert dropped == ["flaky"] * 2
    await dispatcher.close()


class FakeMeta:
    request_id = "req-1"
    actor = Actor(user_id="oidc~alice")


class FakeState:
    def __init__(self):
        self.published: list[CloudEvent] = []
        self.events = self

    def publish(self, events):
        self.published.extend(events)


def test_multi_table_commit_yields_one_update_per_table():
    state = FakeState()
    commits = [
        (["db"], "a", "tid-a", {"requirements": [], "updates": [{"action": "set-properties", "updates": {"k": "v"}}]}),
        (["db", "inner"], "b", "tid-b", {"identifier": {"namespace": ["db", "inner"], "name": "b"}, "updates": []}),
    ]
    events = server_events.tables_updated(state, FakeMeta(), "wh-1", commits)
    assert state.published == events
    assert [e.type for e in events] == ["updateTable", "updateTable"]
    assert [e.extensions["sequence-number"] for e in events] == [0, 1]
    assert [e.extensions["num-events"] for e in events] == [2, 2]
    assert [e.extensions["tabular-id"] for e in events] == ["tid-a", "tid-b"]
    assert events[1].extensions["namespace"] == "db\x1finner"
    # the commit request is the data, with its identifier filled in
    assert events[0].data["identifier"] == {"namespace": ["db"], "name": "a"}
    assert events[0].data["updates"][0]["action"] == "set-properties"
    first = events[0].to_structured()
    assert first["specversion"] == "1.0" and first["datacontenttype"] == "application/json"
    assert first["source"].startswith("uri:iceberg-catalog-service:")
    assert first["trace-id"] == "req-1"
    assert first["actor"] == '{"type":"principal","principal":"oidc~alice"}'
    assert first["warehouse-id"] == "wh-1" and first["tabular-type"] == "table"
    assert events[0].id != events[1].id


def test_event_ids_are_uuid_v7():
    import uuid

    (event,) = server_events.table_dropped(FakeState(), FakeMeta(), "wh", ["ns"], "t", "tid")
    assert uuid.UUID(event.id).version == 7
    assert event.type == "dropTable" and event.data is None


async def _until(predicate) -> None:
    while not predicate():
        await asyncio.sleep(0.01)
