"""Contract checkers are consulted on every kind of change they can veto: table commits, view
commits, drops and renames of tables and views. A veto is a 409 with the checker's message, the
object stays as it was, and no event is published for it.

The checker is the test-only ``deny-all`` plugin (tests/plugins/deny_all_contracts.py, Lakekeeper's
DenyAllChecker), installed into the server as an entry-point plugin.
"""

from __future__ import annotations

import uuid

import httpx
import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField
from pyiceberg.view.metadata import SQLViewRepresentation, ViewVersion

from tests.events.support import NatsCollector
from tests.plugins.installed import plugin_env


@pytest.fixture
def deny_all_env(tmp_path) -> dict[str, str]:
    return plugin_env(tmp_path / "plugins", deny_all="tests.plugins.deny_all_contracts")


def test_every_vetoed_change_is_a_409_changes_nothing_and_emits_nothing(
    nats_server, deny_all_env, tmp_path, lakekeeper_server_factory
):
    topic = f"contracts.{uuid.uuid4().hex[:8]}"
    env = {**deny_all_env, "LAKEKEEPER__NATS_ADDRESS": nats_server.url, "LAKEKEEPER__NATS_TOPIC": topic}
    server = lakekeeper_server_factory(env)
    try:
        plugins = httpx.get(server.url + "/management/v1/plugins").json()["plugins"]
        assert "contract-checker:deny-all" in [c for p in plugins for c in p["provides"]]
        http = httpx.Client(base_url=server.url, timeout=60)
        with NatsCollector(nats_server.url, topic) as nats:
            created = http.post("/management/v1/warehouse", json={
                "warehouse-name": "guarded", "storage-profile": {"type": "file", "root": str(tmp_path / "wh")},
            })
            assert created.status_code == 201, created.text
            prefix = f"/catalog/v1/{created.json()['warehouse-id']}"
            catalog = RestCatalog("contracts", uri=server.catalog_url, warehouse="guarded")
            catalog.create_namespace("ops")
            table = catalog.create_table("ops.t", schema=pa.schema([("id", pa.int64())]))
            view = catalog.create_view("ops.v", Schema(NestedField(1, "id", LongType())), ViewVersion(
                version_id=1, schema_id=0, timestamp_ms=1_700_000_000_000, summary={"engine-name": "test"},
                representations=[SQLViewRepresentation(type="sql", sql="SELECT 1 AS id", dialect="spark")],
                default_namespace=["ops"],
            ))
            set_comment = {
                "requirements": [], "updates": [{"action": "set-properties", "updates": {"comment": "changed"}}]
            }
            vetoed = {
                "table commit": http.post(f"{prefix}/namespaces/ops/tables/t", json=set_comment),
                "view commit": http.post(f"{prefix}/namespaces/ops/views/v", json=set_comment),
                "table rename": http.post(f"{prefix}/tables/rename", json={
                    "source": {"namespace": ["ops"], "name": "t"},
                    "destination": {"namespace": ["ops"], "name": "t2"}}),
                "view rename": http.post(f"{prefix}/views/rename", json={
                    "source": {"namespace": ["ops"], "name": "v"},
                    "destination": {"namespace": ["ops"], "name": "v2"}}),
                "table drop": http.delete(f"{prefix}/namespaces/ops/tables/t"),
                "view drop": http.delete(f"{prefix}/namespaces/ops/views/v"),
            }
            for what, response in vetoed.items():
                assert response.status_code == 409, (what, response.text)
                error = response.json()["error"]
                assert error["type"] == "ContractViolation", what
                assert error["message"].startswith("deny-all checker blocks"), what
            # drops and renames hand the checker the tabular and the destination it names
            assert vetoed["table drop"].json()["error"]["message"].endswith("every drop: table t")
            assert vetoed["view rename"].json()["error"]["message"].endswith("every rename: view v to ops.v2")

            # everything is as it was
            assert catalog.list_tables("ops") == [("ops", "t")] and catalog.list_views("ops") == [("ops", "v")]
            reloaded = catalog.load_table("ops.t")
            assert reloaded.metadata_location == table.metadata_location and "comment" not in reloaded.properties
            assert "comment" not in catalog.load_view("ops.v").properties
            assert catalog.load_view("ops.v").metadata.view_uuid == view.metadata.view_uuid

            received = nats.wait_for(lambda ev: len(ev) >= 4)
            # a change that is allowed afterwards still publishes: nothing was stuck in the queue
            catalog.create_namespace("after")
            received = nats.wait_for(
                lambda ev: any(e["type"] == "createNamespace" and e["name"] == "after" for e in ev)
            )
        assert [e["type"] for e in received] == [
            "createWarehouse", "createNamespace", "createTable", "createView", "createNamespace"
        ]
    finally:
        server.close()
