"""Contract checks on the commit paths docs/contracts.md makes promises about:

- a multi-table ``POST /transactions/commit`` with one vetoed table is refused as a whole;
- a commit the server retries after a concurrent update is checked again, against the newer
  metadata.

The veto comes from the example checker (examples/contract-checker: tables with a ``contract.``
property may not lose columns); the race is made deterministic by the test-only
``concurrent-commit`` checker (tests/plugins/concurrent_commit.py), which commits to the same
table while the checked commit waits. Both are installed into the server as entry-point plugins.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import httpx
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.types import LongType, NestedField, StringType

from lakekeeper_testing.server import CatalogServer, create_file_warehouse
from tests.events.conftest import EXAMPLE_CHECKER_SRC
from tests.plugins.concurrent_commit import TRIGGER
from tests.plugins.installed import plugin_env

SCHEMA = Schema(
    NestedField(1, "id", LongType()),
    NestedField(2, "data", StringType()),
    NestedField(3, "note", StringType()),
)
WITHOUT_NOTE = Schema(*SCHEMA.fields[:2], schema_id=1)
DROP_NOTE = [
    {"action": "add-schema", "schema": json.loads(WITHOUT_NOTE.model_dump_json())},
    {"action": "set-current-schema", "schema-id": -1},
]


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def contract_server(request, tmp_path_factory, lakekeeper_server_factory) -> Iterator[CatalogServer]:
    env = plugin_env(
        tmp_path_factory.mktemp("contract-plugins"),
        extra_paths=(str(EXAMPLE_CHECKER_SRC),),
        contract_example="lakekeeper_contract_example",
        concurrent_commit="tests.plugins.concurrent_commit",
    )
    server = lakekeeper_server_factory(env, backend=request.param)
    yield server
    server.close()


class Tables:
    """A fresh file warehouse with namespace ``ops``: PyIceberg for reads, raw URLs for commits."""

    def __init__(self, server: CatalogServer, root: str):
        name = f"contracts-{uuid.uuid4().hex[:8]}"
        warehouse_id = create_file_warehouse(server.url, name, root)
        self.catalog = RestCatalog("contracts", uri=server.catalog_url, warehouse=name)
        self.catalog.create_namespace("ops")
        self.prefix_url = f"{server.url}/catalog/v1/{warehouse_id}"

    def create(self, name: str, properties: dict[str, str] | None = None) -> Table:
        return self.catalog.create_table(f"ops.{name}", SCHEMA, properties=properties or {})

    def load(self, name: str) -> Table:
        return self.catalog.load_table(f"ops.{name}")

    def columns(self, name: str) -> list[str]:
        return [f.name for f in self.load(name).schema().fields]


@pytest.fixture
def tables(contract_server, tmp_path) -> Tables:
    return Tables(contract_server, str(tmp_path / "wh"))


def set_properties(**updates: str) -> dict:
    return {"action": "set-properties", "updates": updates}


def test_a_vetoed_table_refuses_the_whole_multi_table_commit(tables):
    free = tables.create("free")
    tables.create("guarded", {"contract.owner": "finance"})

    def transaction(*guarded_updates: dict) -> httpx.Response:
        changes = [
            {"identifier": {"namespace": ["ops"], "name": "free"}, "requirements": [],
             "updates": [set_properties(reviewed="yes")]},
            {"identifier": {"namespace": ["ops"], "name": "guarded"}, "requirements": [],
             "updates": list(guarded_updates)},
        ]  # fmt: skip
        return httpx.post(f"{tables.prefix_url}/transactions/commit", json={"table-changes": changes}, timeout=30)

    refused = transaction(*DROP_NOTE)
    assert refused.status_code == 409, refused.text
    error = refused.json()["error"]
    assert error["type"] == "ContractViolation" and error["code"] == 409
    assert "contract.owner" in error["message"] and "note" in error["message"]
    # neither table changed: the allowed change to `free` was refused with the vetoed one
    after = tables.load("free")
    assert after.metadata_location == free.metadata_location and "reviewed" not in after.properties
    assert tables.columns("guarded") == ["id", "data", "note"]

    # the same transaction without the forbidden drop goes through, for both tables
    accepted = transaction(set_properties(reviewed="yes"))
    assert accepted.status_code == 204, accepted.text
    assert tables.load("free").properties["reviewed"] == "yes"
    assert tables.load("guarded").properties["reviewed"] == "yes"


def race(tables: Tables, table: str, concurrent_updates: list[dict], updates: list[dict]) -> httpx.Response:
    """POST ``updates`` to ``table``; while it is being checked, ``concurrent_updates`` commit first."""
    url = f"{tables.prefix_url}/namespaces/ops/tables/{table}"
    concurrent = {"url": url, "body": {"requirements": [], "updates": concurrent_updates}}
    trigger = set_properties(**{TRIGGER: json.dumps(concurrent)})
    return httpx.post(url, json={"requirements": [], "updates": [trigger, *updates]}, timeout=60)


def test_a_retried_commit_is_checked_again_against_the_newer_metadata(tables):
    tables.create("contested")
    # Checked against the table as it was (no contract) the drop is fine; meanwhile another
    # commit puts the table under contract, so the server's retry must refuse it.
    response = race(tables, "contested", [set_properties(**{"contract.owner": "finance"})], DROP_NOTE)
    assert response.status_code == 409, response.text
    error = response.json()["error"]
    assert error["type"] == "ContractViolation"
    assert "contract.owner" in error["message"] and "note" in error["message"]
    table = tables.load("contested")
    assert table.properties["contract.owner"] == "finance"  # the concurrent commit landed
    assert TRIGGER not in table.properties
    assert [f.name for f in table.schema().fields] == ["id", "data", "note"]


def test_a_retried_commit_that_still_passes_its_checks_succeeds(tables):
    tables.create("busy")
    response = race(tables, "busy", [set_properties(owner="someone")], DROP_NOTE)
    assert response.status_code == 200, response.text
    table = tables.load("busy")
    # applied on top of the concurrent commit, not over it
    assert table.properties["owner"] == "someone"
    assert [f.name for f in table.schema().fields] == ["id", "data"]
