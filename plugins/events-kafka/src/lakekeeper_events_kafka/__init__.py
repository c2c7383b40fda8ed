"""Lakekeeper event sink ``kafka``: CloudEvents produced to a Kafka topic with aiokafka.

Registered through the entry point ``events_kafka`` in the group ``lakekeeper``. Enabled when
``LAKEKEEPER__KAFKA_TOPIC`` and a ``bootstrap.servers`` in ``LAKEKEEPER__KAFKA_CONFIG`` (or
``LAKEKEEPER__KAFKA_CONFIG_FILE``) are set, as in Lakekeeper.

Events use the CloudEvents Kafka protocol binding in binary content mode: the value is the
event data (JSON), the context attributes are ``ce_<name>`` headers, ``datacontenttype`` is the
``content-type`` header, and the message key is the ``tabular-id`` so one table's events land
in one partition, in order. The idempotent producer stays off (aiokafka's default): Tansu and
other Kafka-protocol brokers do not support it.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from lakekeeper_events_kafka.config import (
    KafkaConfig,
    ProducerSettings,
    parse_librdkafka,
    producer_settings,
    redacted,
)
from lakekeeper_host import hookimpl
from lakekeeper_host.registry import BackendSpec, BuildContext
from lakekeeper_host.service.events import CloudEvent

if TYPE_CHECKING:
    from aiokafka import AIOKafkaProducer

__version__ = "0.1.0"
__all__ = [
    "KafkaConfig",
    "KafkaSink",
    "binary_message",
    "parse_librdkafka",
    "producer_settings",
    "redacted",
]

log = logging.getLogger(__name__)


def binary_message(event: CloudEvent) -> tuple[bytes, bytes, list[tuple[str, bytes]]]:
    """``(key, value, headers)`` of the CloudEvents Kafka binding, binary content mode."""
    headers = [(f"ce_{name}", value.encode()) for name, value in event.attribute_strings().items()]
    headers.append(("content-type", event.datacontenttype.encode()))
    ext = event.extensions
    # one partition per table keeps its events ordered; non-tabular events key on their entity
    key = ext.get("tabular-id") or ext.get("namespace-id") or ext.get("warehouse-id") or ""
    return str(key).encode(), event.data_bytes(), headers


class KafkaSink:
    """Produces each event to ``KAFKA_TOPIC`` and waits for the broker's acknowledgement."""

    name = "kafka"

    def __init__(self, topic: str, settings: ProducerSettings):
        self.topic = topic
        self.settings = settings
        self._producer: AIOKafkaProducer | None = None
        self._lock = asyncio.Lock()
        # (event id, delivery future) of an event whose ack timed out: a retry of the same event
        # waits for that delivery instead of producing a duplicate
        self._inflight: tuple[str, asyncio.Future] | None = None

    def __repr__(self) -> str:
        return f"KafkaSink(topic={self.topic!r}, config={self.settings.redacted_conf!r})"

    async def start(self) -> None:
        """Connect the producer (idempotent). Raises while no broker can be reached."""
        if self._producer is not None:
            return
        async with self._lock:
            if self._producer is not None:
                return
            from aiokafka import AIOKafkaProducer  # only servers that publish to Kafka import it

            producer = AIOKafkaProducer(**self.settings.kwargs)
            try:
                await producer.start()
            except BaseException:
                await producer.stop()
                raise
            self._producer = producer
            log.info(
                "publishing CloudEvents to Kafka topic %r via %s", self.topic, ",".join(self.settings.bootstrap_servers)
            )

    async def publish(self, event: CloudEvent) -> None:
        timeout = self.settings.delivery_timeout
        delivery = self._pending_delivery(event.id)
        if delivery is None:
            await self.start()
            assert self._producer is not None
            key, value, headers = binary_message(event)
            # send() waits for topic metadata while the broker is away; nothing is queued until it returns
            delivery = await asyncio.wait_for(
                self._producer.send(self.topic, value=value, key=key, headers=headers), timeout
            )
            self._inflight = (event.id, delivery)
        try:
            await asyncio.wait_for(asyncio.shield(delivery), timeout)
        except TimeoutError:
            raise TimeoutError(f"Kafka did not acknowledge event {event.id} within {timeout:g}s") from None
        self._inflight = None

    def _pending_delivery(self, event_id: str) -> asyncio.Future | None:
        if self._inflight is None or self._inflight[0] != event_id:
            self._inflight = None
            return None
        delivery = self._inflight[1]
        if delivery.done() and (delivery.cancelled() or delivery.exception() is not None):
            self._inflight = None
            return None  # that delivery failed for good: produce again
        return delivery

    async def close(self) -> None:
        producer, self._producer = self._producer, None
        if producer is not None:
            try:
                await asyncio.wait_for(producer.stop(), 10)
            except Exception:
                log.warning("Kafka event sink: producer did not stop cleanly", exc_info=True)


async def build_kafka_sink(config: KafkaConfig, ctx: BuildContext) -> KafkaSink | None:
    topic = (config.kafka_topic or "").strip()
    conf = config.librdkafka()
    if not topic or conf is None:
        if topic or conf is not None:
            log.warning("Kafka event sink disabled: set both LAKEKEEPER__KAFKA_TOPIC and LAKEKEEPER__KAFKA_CONFIG")
        return None
    sink = KafkaSink(topic, producer_settings(conf))
    try:
        await asyncio.wait_for(sink.start(), 5)
    except Exception as exc:  # noqa: BLE001 - the server must start while Kafka is down; events wait and retry
        log.error(
            "Kafka event sink: cannot reach %s yet (%s); will keep retrying", sink.settings.bootstrap_servers, exc
        )
    return sink


@hookimpl
def lakekeeper_event_sinks() -> list[BackendSpec]:
    return [BackendSpec(name="kafka", factory=build_kafka_sink, config_cls=KafkaConfig)]
