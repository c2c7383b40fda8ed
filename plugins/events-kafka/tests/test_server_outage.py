"""A real catalog server publishing to a Kafka-protocol broker that dies in the middle of a burst
of commits: every commit succeeds, the failures show in the metrics, and once the broker is back
every commit's event is in the topic (the broker keeps its log in SeaweedFS, so a restart
forgets nothing it had acknowledged)."""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import IntegerType, NestedField

from lakekeeper_testing.server import CatalogServer

from .test_kafka_sink import consume

TABLES = ["t0", "t1", "t2"]


def metric(server: CatalogServer, name: str, **labels: str) -> float:
    text = httpx.get(f"http://127.0.0.1:{server.metrics_port}/metrics", timeout=10).text
    selector = ",".join(f'{k}="{v}"' for k, v in labels.items())
    match = re.search(rf"^{re.escape(name)}\{{{re.escape(selector)}\}} (\S+)$", text, re.MULTILINE)
    return float(match.group(1)) if match else 0.0


def wait_until(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def committed_keys(messages) -> set[tuple[str, str]]:
    """(table, property key) of every updateTable event in the topic."""
    keys = set()
    for message in messages:
        headers = {k: v.decode() for k, v in message.headers}
        if headers.get("ce_type") != "updateTable":
            continue
        body = json.loads(message.value)
        for update in body["updates"]:
            keys |= {(body["identifier"]["name"], k) for k in update.get("updates", {})}
    return keys


@pytest.mark.slow
def test_broker_killed_during_a_commit_burst_loses_no_commit_and_events_resume(
    kafka_factory, tmp_path, lakekeeper_server_factory
):
    broker = kafka_factory()
    topic = f"outage-{uuid.uuid4().hex[:8]}"
    kafka_config = {"bootstrap.servers": broker.bootstrap_servers, "message.timeout.ms": "2000",
                    "request.timeout.ms": "2000"}
    env = {"LAKEKEEPER__KAFKA_TOPIC": topic, "LAKEKEEPER__KAFKA_CONFIG": json.dumps(kafka_config)}
    with lakekeeper_server_factory(env) as server:
        created = httpx.post(f"{server.url}/management/v1/warehouse", timeout=30, json={
            "warehouse-name": "burst", "storage-profile": {"type": "file", "root": str(tmp_path)},
        })
        assert created.status_code == 201, created.text
        warehouse_id = created.json()["warehouse-id"]
        catalog = RestCatalog("kafka-outage", uri=server.catalog_url, warehouse="burst")
        catalog.create_namespace("burst")
        for name in TABLES:
            catalog.create_table(f"burst.{name}", Schema(NestedField(1, "id", IntegerType())))

        commits_after_outage: list[int] = []
        broker_down = threading.Event()
        lock = threading.Lock()

        def burst(name: str) -> tuple[int, list[int]]:
            """Commit until 5 commits of this table happened with the broker dead."""
            statuses, after = [], 0
            while after < 5 and len(statuses) < 500:
                i = len(statuses)
                response = httpx.post(
                    f"{server.url}/catalog/v1/{warehouse_id}/namespaces/burst/tables/{name}",
                    json={"requirements": [], "updates": [{"action": "set-properties", "updates": {f"k{i}": str(i)}}]},
                    timeout=60,
                )
                statuses.append(response.status_code)
                if broker_down.is_set():
                    after += 1
                    with lock:
                        commits_after_outage.append(response.status_code)
            return len(statuses), statuses

        with ThreadPoolExecutor(len(TABLES)) as pool:
            futures = {name: pool.submit(burst, name) for name in TABLES}
            broker.stop()  # the broker dies while the commits go on
            broker_down.set()
            results = {name: future.result() for name, future in futures.items()}
        assert len(commits_after_outage) == 5 * len(TABLES)
        for name, (count, statuses) in results.items():
            assert statuses == [200] * count  # no commit failed or was blocked by the broker
            keys = [k for k in catalog.load_table(f"burst.{name}").properties if re.fullmatch(r"k\d+", k)]
            assert len(keys) == count  # nor lost

        wait_until(lambda: metric(server, "lakekeeper_event_publish_failures_total", sink="kafka") > 0, 60,
                   "the outage to show in the metrics")

        broker.start()  # events resume: every commit's event reaches the topic
        expected = {(name, f"k{i}") for name, (count, _) in results.items() for i in range(count)}
        messages = asyncio.run(
            consume(broker.bootstrap_servers, topic, 0, timeout=120, until=lambda ms: expected <= committed_keys(ms))
        )
        assert expected <= committed_keys(messages)
        assert metric(server, "lakekeeper_events_published_total", sink="kafka") >= len(expected)
