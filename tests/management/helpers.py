"""Helpers shared by the management tests."""

from __future__ import annotations

import time
import uuid

from lakekeeper_testing.server import create_file_warehouse
from lakekeeper_testing.services import wait_for  # noqa: F401 - the tests import it from here


def new_file_warehouse(server_url: str, tmp_path_factory, **kwargs) -> dict:
    name = f"wh-{uuid.uuid4().hex[:10]}"
    root = str(tmp_path_factory.mktemp(name))
    warehouse_id = create_file_warehouse(server_url, name, root, **kwargs)
    return {"name": name, "id": warehouse_id, "root": root}


VIEW_SCHEMA = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]}


def create_view(http, prefix_url: str, namespace: str, name: str) -> dict:
    """Create a one-column SQL view over HTTP (as Iceberg's REST view builder does); returns the
    ``LoadViewResult`` (``metadata-location``, ``metadata`` with ``view-uuid``)."""
    body = {
        "name": name,
        "schema": VIEW_SCHEMA,
        "view-version": {
            "version-id": 1,
            "schema-id": 0,
            "timestamp-ms": int(time.time() * 1000),
            "summary": {"engine-name": "pytest"},
            "representations": [{"type": "sql", "dialect": "spark", "sql": f"SELECT 1 AS id -- {name}"}],
            "default-namespace": [namespace],
        },
        "properties": {},
    }
    response = http.post(f"{prefix_url}/namespaces/{namespace}/views", json=body)
    assert response.status_code == 200, response.text
    return response.json()
