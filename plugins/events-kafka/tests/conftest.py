"""Tansu, a Kafka-protocol broker, on free ports.

``kafka_broker`` (the run's, from ``lakekeeper_testing``) keeps messages in memory. Tests that
restart a broker use ``kafka_factory``, whose brokers store their log in a SeaweedFS bucket so
messages (and topics) survive the restart -- Tansu's memory store forgets topics on restart while
still accepting writes to them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import attrs
import pytest

from lakekeeper_testing.services import KafkaBroker, SeaweedS3, service_or_skip, serving

BUCKET = "tansu"


@attrs.define(kw_only=True, eq=False)
class PersistentKafkaBroker(KafkaBroker):
    """Tansu with ``s3://`` storage on a SeaweedFS server."""

    s3: SeaweedS3

    def _command(self) -> list[str]:
        command = super()._command()
        command[command.index("--storage-engine") + 1] = f"s3://{BUCKET}/"
        return command

    def _popen_kwargs(self) -> dict:
        return {
            "env": {
                **os.environ,
                "AWS_ACCESS_KEY_ID": self.s3.access_key,
                "AWS_SECRET_ACCESS_KEY": self.s3.secret_key,
                "AWS_DEFAULT_REGION": self.s3.region,
                "AWS_ENDPOINT": self.s3.endpoint,
                "AWS_ALLOW_HTTP": "true",
            }
        }


@pytest.fixture(scope="module")
def seaweed() -> Iterator[SeaweedS3]:
    with serving(SeaweedS3(buckets=[BUCKET])) as server:
        yield server


@pytest.fixture
def kafka_factory(seaweed) -> Iterator:
    """Persistent brokers a test starts, stops and restarts itself; all closed afterwards."""
    made: list[KafkaBroker] = []

    def make(start: bool = True) -> KafkaBroker:
        broker = PersistentKafkaBroker(s3=seaweed)
        made.append(broker)
        if start:
            service_or_skip(broker)
        return broker

    yield make
    for broker in made:
        broker.close()
