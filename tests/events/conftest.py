"""Catalog servers that publish change events to a real NATS server and a real Kafka-protocol broker.

``events_server`` (once per database backend) requires tokens from an in-process OIDC issuer, so
events carry a real principal as ``actor``; it publishes to core NATS and to a single-partition
Tansu topic (one partition keeps the Kafka order total, not just per table).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from lakekeeper_testing.server import CatalogServer
from tests.events.support import (
    create_topic,
    oidc_env,
)
from tests.plugins.installed import plugin_env

EXAMPLE_CHECKER_SRC = Path(__file__).resolve().parents[2] / "examples" / "contract-checker" / "src"


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def events_server(request, idp, nats_server, kafka_broker, lakekeeper_server_factory) -> Iterator[CatalogServer]:
    backend = request.param
    nats_topic = f"lakekeeper.events.{uuid.uuid4().hex[:8]}"
    kafka_topic = f"lakekeeper-events-{uuid.uuid4().hex[:8]}"
    create_topic(kafka_broker.bootstrap_servers, kafka_topic)
    env = {
        **oidc_env(idp),
        "LAKEKEEPER__NATS_ADDRESS": nats_server.url,
        "LAKEKEEPER__NATS_TOPIC": nats_topic,
        "LAKEKEEPER__KAFKA_TOPIC": kafka_topic,
        "LAKEKEEPER__KAFKA_CONFIG": json.dumps({"bootstrap.servers": kafka_broker.bootstrap_servers}),
    }
    server = lakekeeper_server_factory(env, backend=backend, bootstrap_token=idp.mint("root"))
    server.nats_url, server.nats_topic = nats_server.url, nats_topic
    server.kafka_bootstrap, server.kafka_topic = kafka_broker.bootstrap_servers, kafka_topic
    yield server
    server.close()


@pytest.fixture
def example_checker_env(tmp_path) -> dict[str, str]:
    """``PYTHONPATH`` that makes the example contract checker an installed entry-point plugin."""
    return plugin_env(
        tmp_path / "plugins", extra_paths=(str(EXAMPLE_CHECKER_SRC),), contract_example="lakekeeper_contract_example"
    )
