"""Where a ``file`` warehouse may live (issue 30): the server reads, writes and deletes its files with
its own rights, so a project's data admin may root one only inside a directory the operator allows
(``LAKEKEEPER__FILE_STORAGE_ALLOWED_ROOTS``, default: the data directory), never over the catalog's
own database, and nothing the catalog does leaves the root, also not through a symbolic link.
Before the fix a warehouse at ``/etc`` was created (201). On SQLite and PostgreSQL.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import httpx
import pytest

from lakekeeper_testing.server import CatalogServer

MGMT = "/management/v1"
SETTING = "LAKEKEEPER__FILE_STORAGE_ALLOWED_ROOTS"


def create(server: CatalogServer, root: str | Path) -> httpx.Response:
    body = {"warehouse-name": f"wh-{uuid.uuid4().hex[:8]}", "storage-profile": {"type": "file", "root": str(root)}}
    return httpx.post(server.url + MGMT + "/warehouse", json=body, timeout=30)


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def default_server(request, lakekeeper_server_factory):
    """A server with the default allow-list: its data directory."""
    server = lakekeeper_server_factory({SETTING: ""}, backend=request.param)
    yield server
    server.close()


def test_roots_outside_the_data_directory_are_refused(default_server, tmp_path):
    data_dir = Path(default_server.data_dir)
    for root in ("/etc", "/", "/proc/self", str(tmp_path / "elsewhere"), f"{data_dir}-sibling/wh",
                 f"{data_dir}/../escape"):  # fmt: skip
        response = create(default_server, root)
        assert response.status_code == 400, (root, response.text)
        error = response.json()["error"]
        assert error["type"] == "InvalidStorageProfile" and SETTING in error["message"], (root, error)
    assert not (Path("/etc") / ".lakekeeper-validation").exists()


def test_a_symbolic_link_does_not_lead_out_of_the_allowed_directory(default_server, tmp_path):
    outside = tmp_path / "target"
    outside.mkdir()
    link = Path(default_server.data_dir) / f"link-{uuid.uuid4().hex[:6]}"
    os.symlink(outside, link)
    response = create(default_server, link / "wh")
    assert response.status_code == 400, response.text
    assert SETTING in response.json()["error"]["message"]
    assert list(outside.iterdir()) == []


def test_roots_inside_the_data_directory_work(default_server):
    root = Path(default_server.data_dir) / "warehouses" / f"mine-{uuid.uuid4().hex[:6]}"
    response = create(default_server, root)
    assert response.status_code == 201, response.text
    prefix = f"{default_server.url}/catalog/v1/{response.json()['warehouse-id']}"
    assert httpx.post(f"{prefix}/namespaces", json={"namespace": ["ns"]}).status_code == 200
    table = httpx.post(f"{prefix}/namespaces/ns/tables", json={"name": "t", "schema": {
        "type": "struct", "fields": [{"id": 1, "name": "a", "type": "int", "required": False}]}})  # fmt: skip
    assert table.status_code == 200, table.text
    assert table.json()["metadata-location"].startswith(f"file://{root}/")


def test_a_root_over_the_embedded_database_is_refused(tmp_path, lakekeeper_server_factory):
    allowed = tmp_path / "allowed"
    database = allowed / "db" / "catalog.sqlite"
    database.parent.mkdir(parents=True)
    server = lakekeeper_server_factory({SETTING: json.dumps([str(allowed)]), "LAKEKEEPER__SQLITE_PATH": str(database)})
    try:
        for root in (allowed, allowed / "db"):
            response = create(server, root)
            assert response.status_code == 400, (root, response.text)
            assert "the catalog's own database" in response.json()["error"]["message"]
        assert create(server, allowed / "warehouse").status_code == 201
        assert database.exists()
    finally:
        server.close()


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_warehouse_whose_root_is_no_longer_allowed_is_not_served(tmp_path, backend, lakekeeper_server_factory):
    """Narrowing the allow-list takes effect for existing warehouses too: their storage is not touched.
    (The embedded quickstart's own warehouse is skipped with a warning: the data dir is not allowed.)"""
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    kept, dropped = tmp_path / "kept", tmp_path / "dropped"
    # a restart with a narrower allow-list: the second server runs on the first one's database
    first = lakekeeper_server_factory({SETTING: json.dumps([str(kept), str(dropped)])}, backend=backend,
                                      data_dir=str(data_dir))
    pg_url = first.extra_env.get("LAKEKEEPER__PG_DATABASE_URL_WRITE")
    try:
        response = create(first, dropped / "wh")
        assert response.status_code == 201, response.text
        warehouse_id = response.json()["warehouse-id"]
        prefix = f"/catalog/v1/{warehouse_id}"
        assert httpx.post(first.url + prefix + "/namespaces", json={"namespace": ["ns"]}).status_code == 200
    finally:
        first.stop()
    second = lakekeeper_server_factory({SETTING: json.dumps([str(kept)])}, pg_url=pg_url, bootstrap=False,
                                       data_dir=str(data_dir))
    try:
        response = httpx.post(second.url + prefix + "/namespaces/ns/tables", json={"name": "t", "schema": {
            "type": "struct", "fields": [{"id": 1, "name": "a", "type": "int", "required": False}]}})  # fmt: skip
        assert response.status_code == 400, response.text
        assert SETTING in response.json()["error"]["message"]
        assert not any(path.is_file() for path in (dropped / "wh").rglob("*"))
    finally:
        second.stop()
