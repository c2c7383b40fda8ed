"""The Kafka sink against a real Kafka-protocol broker (Tansu): binary CloudEvents, keys, outages."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest
from aiokafka.errors import KafkaError

from lakekeeper_events_kafka import KafkaConfig, build_kafka_sink
from lakekeeper_host.service.events import CloudEvent, EventDispatcher
from lakekeeper_testing.services import read_kafka_topic


def make_event(n: int = 0, tabular_id: str = "t-1", data=None) -> CloudEvent:
    return CloudEvent(
        id=str(uuid.uuid4()),
        source="uri:iceberg-catalog-service:test",
        type="updateTable",
        data={"n": n} if data is None else data,
        time="2025-01-01T00:00:00Z",
        extensions={
            "tabular-type": "table",
            "tabular-id": tabular_id,
            "warehouse-id": "wh",
            "num-events": 2,
            "sequence-number": 1,
            "actor": '{"type":"anonymous"}',
        },
    )


def config(servers: str, topic: str, **extra: str) -> KafkaConfig:
    return KafkaConfig(kafka_topic=topic, kafka_config={"bootstrap.servers": servers, **extra})


async def consume(servers: str, topic: str, count: int, timeout: float = 30, until=None) -> list:
    """Messages of ``topic`` from the beginning, in partition order: ``count`` of them, or until ``until(messages)``."""
    return await read_kafka_topic(servers, topic, until or (lambda messages: len(messages) >= count), timeout)


async def test_binary_content_mode_keyed_by_tabular_id(kafka_broker):
    topic = f"events-{uuid.uuid4().hex[:8]}"
    sink = await build_kafka_sink(config(kafka_broker.bootstrap_servers, topic), None)
    try:
        event = make_event(7, tabular_id="table-uuid-1")
        other = make_event(tabular_id="t-2", data={})
        await sink.publish(event)
        await sink.publish(other)
    finally:
        await sink.close()
    by_key = {m.key: m for m in await consume(kafka_broker.bootstrap_servers, topic, 2)}
    first, second = by_key[b"table-uuid-1"], by_key[b"t-2"]  # different keys, maybe different partitions
    headers = {k: v.decode() for k, v in first.headers}
    assert first.key == b"table-uuid-1"
    assert json.loads(first.value) == {"n": 7}
    assert headers["ce_specversion"] == "1.0"
    assert headers["ce_id"] == event.id and headers["ce_type"] == "updateTable"
    assert headers["ce_source"] == event.source and headers["ce_time"] == event.time
    assert headers["ce_tabular-id"] == "table-uuid-1" and headers["ce_tabular-type"] == "table"
    assert headers["ce_num-events"] == "2" and headers["ce_sequence-number"] == "1"
    assert headers["ce_actor"] == '{"type":"anonymous"}'
    assert headers["content-type"] == "application/json"
    assert "ce_datacontenttype" not in headers
    assert json.loads(second.value) == {}


async def test_null_data_is_json_null(kafka_broker):
    topic = f"events-{uuid.uuid4().hex[:8]}"
    sink = await build_kafka_sink(config(kafka_broker.bootstrap_servers, topic), None)
    event = CloudEvent(id="x", source="s", type="dropTable", data=None, time="t", extensions={"tabular-id": "t"})
    try:
        await sink.publish(event)
    finally:
        await sink.close()
    (message,) = await consume(kafka_broker.bootstrap_servers, topic, 1)
    assert message.value == b"null"


async def test_broker_down_at_startup_then_up(kafka_factory):
    broker = kafka_factory(start=False)
    topic = f"events-{uuid.uuid4().hex[:8]}"
    sink = await build_kafka_sink(config(broker.bootstrap_servers, topic, **{"message.timeout.ms": "2000"}), None)
    try:
        with pytest.raises((KafkaError, TimeoutError)):
            await sink.publish(make_event())
        broker.start()
        event = make_event()
        await sink.publish(event)
    finally:
        await sink.close()
    (message,) = await consume(broker.bootstrap_servers, topic, 1)
    assert dict(message.headers)["ce_id"] == event.id.encode()


async def test_broker_killed_during_a_burst(kafka_factory):
    """Publishing never blocks; queued events arrive in order once the broker is back; failures are counted."""
    broker = kafka_factory()
    topic = f"events-{uuid.uuid4().hex[:8]}"
    cfg = config(broker.bootstrap_servers, topic, **{"message.timeout.ms": "2000", "request.timeout.ms": "2000"})
    sink = await build_kafka_sink(cfg, None)
    failures: list[str] = []
    dispatcher = EventDispatcher([sink], max_backoff=0.5)
    dispatcher.on_failure = failures.append
    dispatcher.start()
    events = [make_event(i) for i in range(30)]
    try:
        dispatcher.publish(events[:10])
        assert await dispatcher.drain(30)
        broker.stop()
        dispatcher.publish(events[10:20])
        await asyncio.sleep(3)  # let deliveries fail
        broker.start()
        dispatcher.publish(events[20:])
        assert await dispatcher.drain(90)
    finally:
        await dispatcher.close()
    expected = {e.id for e in events}

    def ids(messages) -> list[str]:
        return [dict(m.headers)["ce_id"].decode() for m in messages]

    received = ids(await consume(broker.bootstrap_servers, topic, 0, until=lambda ms: expected <= set(ids(ms))))
    # at-least-once: an ack lost in the crash may cause a re-send, never a loss or reordering
    assert list(dict.fromkeys(received)) == [e.id for e in events]
    assert failures
