"""What the catalog deletes with its own rights, beyond the request paths (issue 30): the metadata-log
clean-up of a table registered before register checked what a file names (its row is in the
database already), and the ``tabular_purge`` task. In-process (Quart test app) on SQLite and
PostgreSQL, a ``file`` warehouse in the data directory.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import pytest

from lakekeeper_host.app import create_app
from lakekeeper_host.config import load_settings
from lakekeeper_host.ids import new_id
from lakekeeper_host.plugins import make_plugin_manager
from lakekeeper_host.server.tabulars.deletion import purge_tabular
from lakekeeper_host.store import tabulars as tabular_store
from lakekeeper_host.store.tasks import TaskRow
from lakekeeper_testing.services import backend_database

SCHEMA = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "a", "type": "int", "required": False}]}


@pytest.fixture(params=["sqlite", "postgres"])
async def app(request, tmp_path):
    with backend_database(request.param) as db_env:
        environ = {
            "LAKEKEEPER__DATA_DIR": str(tmp_path),
            "LAKEKEEPER__DEBUG__MIGRATE_BEFORE_SERVE": "true",
            "LAKEKEEPER__EMBEDDED_QUICKSTART": "false",
            # the purge task is run by the test itself
            "LAKEKEEPER__TASK_TABULAR_PURGE_WORKERS": "0",
            **db_env,
        }
        quart = create_app(load_settings(environ), make_plugin_manager())
        async with quart.test_app() as test_app:
            client = test_app.test_client()
            client.state = quart.extensions["lakekeeper"]
            await client.post("/management/v1/bootstrap", json={"accept-terms-of-use": True})
            root = tmp_path / "warehouse"
            created = await client.post("/management/v1/warehouse", json={
                "warehouse-name": "wh", "storage-profile": {"type": "file", "root": str(root)}})  # fmt: skip
            assert created.status_code == 201, await created.get_data()
            client.warehouse_id = (await created.get_json())["warehouse-id"]
            client.root = root
            client.prefix = f"/catalog/v1/{client.warehouse_id}"
            assert (await client.post(client.prefix + "/namespaces", json={"namespace": ["ns"]})).status_code == 200
            yield client


async def create_table(client, name: str, **extra) -> dict:
    body = {"name": name, "schema": SCHEMA, **extra}
    response = await client.post(client.prefix + "/namespaces/ns/tables", json=body)
    assert response.status_code == 200, await response.get_data()
    return await response.get_json()


def path_of(location: str) -> Path:
    return Path(location.removeprefix("file://"))


async def test_expiring_a_legacy_rows_metadata_log_deletes_nothing_outside_the_table(app, tmp_path):
    """A row registered by an older release may name anything in its metadata log: the clean-up after
    a commit deletes only what lies inside the table's own location."""
    outside = tmp_path / "outside" / "precious"
    outside.parent.mkdir()
    outside.write_text("keep")
    alice = await create_table(app, "alice")
    in_warehouse = app.root / "unclaimed.json"
    in_warehouse.write_text("keep")
    victims = [f"file://{outside}", alice["metadata-location"], f"file://{in_warehouse}"]

    location = f"file://{app.root}/legacy"
    metadata = dict(alice["metadata"])
    metadata.update({
        "location": location, "table-uuid": str(uuid.uuid4()),
        "metadata-log": [{"metadata-file": v, "timestamp-ms": 1000 + i} for i, v in enumerate(victims)],
        "properties": {"write.metadata.delete-after-commit.enabled": "true",
                       "write.metadata.previous-versions-max": "1"},
    })  # fmt: skip
    own_old = f"{location}/metadata/00000-{uuid.uuid4()}.metadata.json"
    path_of(own_old).parent.mkdir(parents=True)
    path_of(own_old).write_text(json.dumps(metadata))
    store = app.state.store
    namespace_id = await store.fetch_val("SELECT id FROM namespace WHERE warehouse_id = :w", {"w": app.warehouse_id})
    async with store.transaction() as tx:
        assert await tabular_store.insert_tabular(
            tx, tabular_id=new_id(), warehouse_id=app.warehouse_id, namespace_id=namespace_id, name="legacy",
            typ="table", location=location, metadata_location=own_old, metadata=json.dumps(metadata),
        )  # fmt: skip

    for step in ("1", "2"):
        response = await app.post(app.prefix + "/namespaces/ns/tables/legacy", json={
            "updates": [{"action": "set-properties", "updates": {"step": step}}]})  # fmt: skip
        assert response.status_code == 200, await response.get_data()
    for victim in victims:
        assert path_of(victim).exists(), f"the catalog deleted {victim}"
    assert not path_of(own_old).exists()  # the table's own expired file is still cleaned up
    assert (await app.get(app.prefix + "/namespaces/ns/tables/alice")).status_code == 200


def purge_task(app, location: str) -> TaskRow:
    now = int(time.time() * 1000)
    return TaskRow(
        id=new_id(), project_id="00000000-0000-0000-0000-000000000000", warehouse_id=app.warehouse_id,
        queue_name="tabular_purge", entity_type="table", entity_id=new_id(), entity_name=["ns", "gone"],
        status="running", attempt=1, scheduled_for=now, picked_up_at=now, last_heartbeat_at=now, worker_id="test",
        payload={"tabular-location": location, "typ": "table"}, progress=0.0, execution_details=None,
        created_at=now, updated_at=None,
    )  # fmt: skip


async def test_a_purge_spares_a_table_created_inside_the_dropped_location(app):
    """Dropped (its purge still pending), its location is free: a new table inside it must survive the purge."""
    old = await create_table(app, "old")
    old_location = old["metadata"]["location"]
    dropped = await app.delete(app.prefix + "/namespaces/ns/tables/old", query_string={"purgeRequested": "false"})
    assert dropped.status_code == 204
    newcomer = await create_table(app, "newcomer", location=f"{old_location}/inner")
    result = await purge_tabular(app.state, purge_task(app, old_location))
    assert "Not purged" in result, result
    assert path_of(newcomer["metadata-location"]).exists()
    assert (await app.get(app.prefix + "/namespaces/ns/tables/newcomer")).status_code == 200


async def test_a_purge_never_leaves_the_warehouse(app, tmp_path):
    outside = tmp_path / "not-a-table"
    (outside / "metadata").mkdir(parents=True)
    (outside / "metadata" / "precious").write_text("keep")
    for location in (f"file://{outside}", f"file://{app.root}", f"file://{app.root}/../not-a-table"):
        result = await purge_tabular(app.state, purge_task(app, location))
        assert "Not purged" in result, (location, result)
    assert (outside / "metadata" / "precious").exists()


async def test_a_purge_still_removes_a_dropped_tables_files(app):
    old = await create_table(app, "old")
    dropped = await app.delete(app.prefix + "/namespaces/ns/tables/old", query_string={"purgeRequested": "false"})
    assert dropped.status_code == 204
    result = await purge_tabular(app.state, purge_task(app, old["metadata"]["location"]))
    assert result.startswith("Removed"), result
    assert not path_of(old["metadata-location"]).exists()
