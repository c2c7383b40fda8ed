"""Change events end to end: a real server, real clients, a real NATS server and Kafka-protocol broker."""

from __future__ import annotations

import asyncio
import json
import re
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor

import httpx
import nats
import nats.js.errors
import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import IntegerType, NestedField, StringType

from lakekeeper_testing.services import NatsServer, service_or_skip
from tests.events.support import (
    NatsCollector,
    kafka_events,
    wait_until,
)

SCHEMA = Schema(
    NestedField(1, "id", IntegerType(), required=True),
    NestedField(2, "data", StringType()),
    NestedField(3, "note", StringType()),
)
LIFECYCLE = ["createNamespace", "createTable", "updateTable", "renameTable", "dropTable", "undropTabulars"]


def rows(*ids: int) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(ids, pa.int32()),
            "data": pa.array([f"v{i}" for i in ids], pa.string()),
            "note": pa.array([None for _ in ids], pa.string()),
        },
        schema=pa.schema(
            [pa.field("id", pa.int32(), nullable=False), pa.field("data", pa.string()), pa.field("note", pa.string())]
        ),
    )


def make_warehouse(server, headers: dict[str, str], root: str, *, soft_delete: bool = False) -> dict:
    name = f"wh-{uuid.uuid4().hex[:10]}"
    body = {"warehouse-name": name, "storage-profile": {"type": "file", "root": root}}
    if soft_delete:
        body["delete-profile"] = {"type": "soft", "expiration-seconds": 3600}
    response = httpx.post(f"{server.url}/management/v1/warehouse", json=body, headers=headers, timeout=30)
    response.raise_for_status()
    return {"name": name, "id": response.json()["warehouse-id"]}


def of_warehouse(events: list[dict], warehouse_id: str, types=None) -> list[dict]:
    return [e for e in events if e.get("warehouse-id") == warehouse_id and (types is None or e["type"] in types)]


def is_uuid7(value: str) -> bool:
    return uuid.UUID(value).version == 7


def test_lifecycle_events_reach_nats_and_kafka_in_order(events_server, idp, tmp_path):
    server = events_server
    token = idp.mint("alice")
    headers = {"Authorization": f"Bearer {token}"}
    with NatsCollector(server.nats_url, server.nats_topic) as nats:
        warehouse = make_warehouse(server, headers, str(tmp_path), soft_delete=True)
        catalog = RestCatalog("events", uri=server.catalog_url, warehouse=warehouse["name"], token=token)
        catalog.create_namespace("sales")
        table = catalog.create_table("sales.orders", SCHEMA)
        table.append(rows(1, 2))
        catalog.rename_table("sales.orders", "sales.orders_v2")
        catalog.drop_table("sales.orders_v2")
        table_id = str(table.metadata.table_uuid)
        httpx.post(
            f"{server.url}/management/v1/warehouse/{warehouse['id']}/deleted-tabulars/undrop",
            json={"targets": [{"type": "table", "id": table_id}]},
            headers=headers,
            timeout=30,
        ).raise_for_status()
        assert catalog.load_table("sales.orders_v2").scan().to_arrow().num_rows == 2

        received = nats.wait_for(lambda ev: len(of_warehouse(ev, warehouse["id"], LIFECYCLE)) >= len(LIFECYCLE))

    lifecycle = of_warehouse(received, warehouse["id"], LIFECYCLE)
    assert [e["type"] for e in lifecycle] == LIFECYCLE
    actor = {"type": "principal", "principal": "oidc~alice"}
    for event in lifecycle:
        assert event["specversion"] == "1.0" and event["datacontenttype"] == "application/json"
        assert is_uuid7(event["id"])
        assert json.loads(event["actor"]) == actor
        assert event["trace-id"]
        assert event["namespace"] == "sales"
        assert event["warehouse-id"] == event["prefix"] == warehouse["id"]  # the catalog prefix is the warehouse id
        assert event["source"].startswith("uri:iceberg-catalog-service:")
    assert len({e["id"] for e in lifecycle}) == len(lifecycle)
    table_events = lifecycle[1:]
    for event in table_events:
        assert event["tabular-type"] == "table" and event["tabular-id"] == table_id
    by_type = {e["type"]: e for e in lifecycle}
    assert by_type["createTable"]["name"] == "orders"
    assert by_type["updateTable"]["data"]["identifier"] == {"namespace": ["sales"], "name": "orders"}
    assert any(u["action"] == "add-snapshot" for u in by_type["updateTable"]["data"]["updates"])
    assert by_type["renameTable"]["name"] == "orders"  # the source, as Lakekeeper
    assert by_type["dropTable"]["name"] == "orders_v2" and by_type["dropTable"]["data"] is None
    assert by_type["undropTabulars"]["name"] == "orders_v2"

    # Kafka: the same events, in the same order, binary mode keyed by the table id
    kafka = of_warehouse(
        kafka_events(
            server.kafka_bootstrap,
            server.kafka_topic,
            lambda ev: len(of_warehouse(ev, warehouse["id"], LIFECYCLE)) >= len(LIFECYCLE),
        ),
        warehouse["id"],
        LIFECYCLE,
    )
    assert [e["id"] for e in kafka] == [e["id"] for e in lifecycle]
    for nats_event, kafka_event in zip(lifecycle, kafka, strict=True):
        assert kafka_event["type"] == nats_event["type"]
        assert kafka_event["actor"] == nats_event["actor"]
        assert kafka_event["data"] == nats_event["data"]
        assert kafka_event["datacontenttype"] == "application/json"
    for event in kafka[1:]:
        assert event["_key"] == table_id and event["tabular-id"] == table_id


def test_multi_table_transaction_yields_one_update_per_table(events_server, idp, tmp_path):
    server = events_server
    token = idp.mint("bob")
    headers = {"Authorization": f"Bearer {token}"}
    with NatsCollector(server.nats_url, server.nats_topic) as nats:
        warehouse = make_warehouse(server, headers, str(tmp_path))
        catalog = RestCatalog("events", uri=server.catalog_url, warehouse=warehouse["name"], token=token)
        catalog.create_namespace("tx")
        ids = {name: str(catalog.create_table(f"tx.{name}", SCHEMA).metadata.table_uuid) for name in ("a", "b")}
        request_id = str(uuid.uuid4())
        changes = [
            {
                "identifier": {"namespace": ["tx"], "name": name},
                "requirements": [{"type": "assert-table-uuid", "uuid": ids[name]}],
                "updates": [{"action": "set-properties", "updates": {"batch": name}}],
            }
            for name in ("a", "b")
        ]
        response = httpx.post(
            f"{server.url}/catalog/v1/{warehouse['id']}/transactions/commit",
            json={"table-changes": changes},
            headers={**headers, "x-request-id": request_id},
            timeout=30,
        )
        assert response.status_code == 204, response.text
        received = nats.wait_for(lambda ev: len(of_warehouse(ev, warehouse["id"], {"updateTable"})) >= 2)

    updates = of_warehouse(received, warehouse["id"], {"updateTable"})
    assert len(updates) == 2
    assert [e["name"] for e in updates] == ["a", "b"]
    assert [e["tabular-id"] for e in updates] == [ids["a"], ids["b"]]
    assert [e["sequence-number"] for e in updates] == [0, 1]
    assert [e["num-events"] for e in updates] == [2, 2]
    assert {e["trace-id"] for e in updates} == {request_id}
    assert [e["data"] for e in updates] == changes


def test_contract_violation_is_409_leaves_table_unchanged_and_emits_nothing(
    nats_server, example_checker_env, tmp_path, lakekeeper_server_factory
):
    topic = f"contract.{uuid.uuid4().hex[:8]}"
    env = {
        **example_checker_env,
        "LAKEKEEPER__NATS_ADDRESS": nats_server.url,
        "LAKEKEEPER__NATS_TOPIC": topic,
    }
    server = lakekeeper_server_factory(env)
    try:
        with NatsCollector(nats_server.url, topic) as nats:
            warehouse = make_warehouse(server, {}, str(tmp_path))
            catalog = RestCatalog("events", uri=server.catalog_url, warehouse=warehouse["name"])
            catalog.create_namespace("billing")
            table = catalog.create_table("billing.invoices", SCHEMA, properties={"contract.owner": "finance"})
            table_url = f"{server.url}/catalog/v1/{warehouse['id']}/namespaces/billing/tables/invoices"
            without_note = Schema(*SCHEMA.fields[:2], schema_id=1)
            response = httpx.post(
                table_url,
                json={
                    "requirements": [{"type": "assert-current-schema-id", "current-schema-id": 0}],
                    "updates": [
                        {"action": "add-schema", "schema": json.loads(without_note.model_dump_json())},
                        {"action": "set-current-schema", "schema-id": -1},
                    ],
                },
                timeout=30,
            )
            assert response.status_code == 409, response.text
            error = response.json()["error"]
            assert error["type"] == "ContractViolation"
            assert "contract.owner" in error["message"] and "note" in error["message"]

            assert [f.name for f in catalog.load_table("billing.invoices").schema().fields] == ["id", "data", "note"]
            # a permitted commit goes through; it is the only updateTable of this table
            table.transaction().set_properties({"reviewed": "yes"}).commit_transaction()
            received = nats.wait_for(lambda ev: any(e["type"] == "updateTable" for e in ev))
        updates = [e for e in received if e["type"] == "updateTable"]
        assert len(updates) == 1
        assert updates[0]["data"]["updates"][0]["action"] == "set-properties"
        assert [e["type"] for e in received] == ["createWarehouse", "createNamespace", "createTable", "updateTable"]
    finally:
        server.close()


# ---------------------------------------------------------------- broker outage


@pytest.fixture
def outage_nats():
    server = service_or_skip(NatsServer())
    yield server
    server.close()


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_broker_outage_during_a_commit_burst_loses_nothing(backend, outage_nats, tmp_path, lakekeeper_server_factory):
    """JetStream mode: the NATS server dies mid-burst; every commit succeeds, every event arrives."""
    stream = f"LK_{uuid.uuid4().hex[:8]}"
    topic = f"outage.{uuid.uuid4().hex[:8]}"
    env = {
        "LAKEKEEPER__NATS_ADDRESS": outage_nats.url,
        "LAKEKEEPER__NATS_TOPIC": topic,
        "LAKEKEEPER__NATS_JETSTREAM": "true",
        "LAKEKEEPER__NATS_JETSTREAM_STREAM": stream,
        "LAKEKEEPER__NATS_ACK_TIMEOUT": "1",
    }
    server = lakekeeper_server_factory(env, backend=backend)
    try:
        warehouse = make_warehouse(server, {}, str(tmp_path))
        catalog = RestCatalog("events", uri=server.catalog_url, warehouse=warehouse["name"])
        catalog.create_namespace("burst")
        tables = [f"t{i}" for i in range(4)]
        for name in tables:
            catalog.create_table(f"burst.{name}", SCHEMA)
        broker_down = threading.Event()

        def burst(name: str) -> list[int]:
            """Commit until 4 commits of this table happened with the broker dead."""
            statuses, after = [], 0
            while after < 4 and len(statuses) < 500:
                i = len(statuses)
                response = httpx.post(
                    f"{server.url}/catalog/v1/{warehouse['id']}/namespaces/burst/tables/{name}",
                    json={"requirements": [], "updates": [{"action": "set-properties", "updates": {f"k{i}": str(i)}}]},
                    timeout=60,
                )
                statuses.append(response.status_code)
                after += broker_down.is_set()
            return statuses

        with ThreadPoolExecutor(len(tables)) as pool:
            futures = {name: pool.submit(burst, name) for name in tables}
            outage_nats.stop()  # the broker dies while the commits go on
            broker_down.set()
            statuses = {name: future.result() for name, future in futures.items()}
        for codes in statuses.values():
            assert codes == [200] * len(codes)  # no commit failed or was blocked because of the broker

        # the outage shows in the metrics
        wait_until(lambda: metric(server, "lakekeeper_event_publish_failures_total", sink="nats") > 0, 60,
                   lambda: "no publish failure counted")
        failures = metric(server, "lakekeeper_event_publish_failures_total", sink="nats")
        for name, codes in statuses.items():  # every commit is in the table
            keys = [k for k in catalog.load_table(f"burst.{name}").properties if re.fullmatch(r"k\d+", k)]
            assert len(keys) == len(codes)

        outage_nats.start()  # events resume: JetStream ends up with every commit's event
        expected = {(name, f"k{i}") for name, codes in statuses.items() for i in range(len(codes))}
        wait_until(lambda: expected <= committed_keys(outage_nats.url, stream), 90, lambda: "stream incomplete")
        assert metric(server, "lakekeeper_event_publish_failures_total", sink="nats") >= failures
    finally:
        server.close()


def committed_keys(url: str, stream: str) -> set[tuple[str, str]]:
    async def run() -> set[tuple[str, str]]:
        nc = await nats.connect(url)
        try:
            js = nc.jetstream()
            try:
                info = await js.stream_info(stream)
            except nats.js.errors.NotFoundError:
                return set()
            keys = set()
            for seq in range(info.state.first_seq, info.state.last_seq + 1):
                event = json.loads((await js.get_msg(stream, seq)).data)
                if event["type"] == "updateTable":
                    for update in event["data"]["updates"]:
                        keys |= {(event["name"], k) for k in update.get("updates", {})}
            return keys
        finally:
            await nc.close()

    try:
        return asyncio.run(run())
    except (OSError, nats.errors.Error):  # the server is still coming back
        return set()


def metric(server, name: str, **labels: str) -> float:
    text = httpx.get(f"http://127.0.0.1:{server.metrics_port}/metrics", timeout=10).text
    selector = ",".join(f'{k}="{v}"' for k, v in labels.items())
    match = re.search(rf"^{re.escape(name)}\{{{re.escape(selector)}\}} (\S+)$", text, re.MULTILINE)
    return float(match.group(1)) if match else 0.0
