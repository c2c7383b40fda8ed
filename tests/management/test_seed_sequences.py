"""The ``curl`` sequences of the seed documents, run with ``curl`` against a fresh server.

Seed 003 (Fluss: bootstrap, warehouse in the default project) and seed 004 (Doris: project,
project list, warehouses with ``x-project-id``, warehouse list, namespace). The bodies are the
seeds' own; only the ``storage-profile`` is the ``file`` variant of their S3 profile (the S3
variant runs in plugins/storage-s3) and the file profile takes no ``storage-credential``.
"""

from __future__ import annotations

import json
import subprocess

import httpx
import pytest

pytestmark = pytest.mark.slow  # replays whole seed sequences against a server

NIL = "00000000-0000-0000-0000-000000000000"


def curl(*args: str) -> tuple[int, str]:
    """Run curl; returns (HTTP status, body). ``-w`` appends the status on its own line."""
    result = subprocess.run(
        ["curl", "-sS", "-w", "\n%{http_code}", *args], capture_output=True, text=True, timeout=60, check=True
    )
    body, _, status = result.stdout.rpartition("\n")
    return int(status), body


def strip_headers(body: str) -> str:
    """``curl -i`` output: drop the status line and headers."""
    normalized = body.replace("\r\n", "\n")
    return normalized.split("\n\n", 1)[1] if "\n\n" in normalized else normalized


def test_seed_003_fluss_bootstrap_and_default_project_warehouse(make_server, tmp_path):
    server = make_server(bootstrap=False)
    host = server.url

    status, body = curl(
        "-X", "POST", f"{host}/management/v1/bootstrap",
        "-H", "Content-Type: application/json",
        "-d", '{"accept-terms-of-use": true}',
    )
    assert status == 204, body
    assert httpx.get(f"{host}/management/v1/info").json()["bootstrapped"] is True

    status, body = curl(
        "-X", "POST", f"{host}/management/v1/warehouse",
        "-H", "Content-Type: application/json",
        "-d", json.dumps({
            "warehouse-name": "my-warehouse",
            "project-id": NIL,
            "storage-profile": {"type": "file", "root": str(tmp_path / "iceberg")},
        }),
    )
    assert status == 201, body
    warehouse = json.loads(body)
    assert warehouse["name"] == "my-warehouse"
    assert warehouse["project-id"] == NIL
    assert warehouse["warehouse-id"] == warehouse["id"]
    assert warehouse["delete-profile"] == {"type": "hard"}
    assert warehouse["status"] == "active"

    # a second bootstrap is refused
    status, body = curl(
        "-X", "POST", f"{host}/management/v1/bootstrap",
        "-H", "Content-Type: application/json",
        "-d", '{"accept-terms-of-use": true}',
    )
    assert status == 400 and json.loads(body)["error"]["type"] == "CatalogAlreadyBootstrapped"

    config = httpx.get(f"{host}/catalog/v1/config", params={"warehouse": "my-warehouse"})
    assert config.status_code == 200
    assert config.json()["defaults"]["prefix"] == warehouse["warehouse-id"]


def test_seed_004_doris_project_warehouses_and_namespace(make_server, tmp_path):
    server = make_server()
    host = server.url

    status, body = curl(
        "-i", "-X", "POST", f"{host}/management/v1/project",
        "-H", "Content-Type: application/json",
        "--data", '{"project-name":"default"}',
    )
    assert status == 201, body
    assert "content-type: application/json" in body.lower()
    project_id = json.loads(strip_headers(body))["project-id"]

    status, body = curl(f"{host}/management/v1/project-list")
    assert status == 200
    assert {"project-id": project_id, "project-name": "default"} in json.loads(body)["projects"]

    for name, file_name in (("lakekeeper-vc-warehouse", "vc"), ("lakekeeper-warehouse", "static")):
        request_file = tmp_path / f"create-warehouse-{file_name}.json"
        request_file.write_text(json.dumps({
            "warehouse-name": name,
            "storage-profile": {"type": "file", "root": str(tmp_path / f"warehouse-{file_name}")},
        }))
        status, body = curl(
            "-i", "-X", "POST", f"{host}/management/v1/warehouse",
            "-H", "Content-Type: application/json",
            "-H", f"x-project-id: {project_id}",
            "--data", f"@{request_file}",
        )
        assert status == 201, body
        assert json.loads(strip_headers(body))["project-id"] == project_id

    status, body = curl(f"{host}/management/v1/warehouse", "-H", f"x-project-id: {project_id}")
    assert status == 200
    warehouses = {w["name"]: w for w in json.loads(body)["warehouses"]}
    assert set(warehouses) == {"lakekeeper-vc-warehouse", "lakekeeper-warehouse"}
    warehouse_id = warehouses["lakekeeper-warehouse"]["warehouse-id"]
    # the default project does not see them
    status, body = curl(f"{host}/management/v1/warehouse")
    assert "lakekeeper-warehouse" not in {w["name"] for w in json.loads(body)["warehouses"]}

    status, body = curl(
        "-X", "POST",
        "-H", "Content-Type: application/json",
        "-H", "Accept: application/json",
        f"{host}/catalog/v1/{warehouse_id}/namespaces",
        "-d", '{\n        "namespace": ["demo"],\n        "properties": {}\n      }',
    )
    assert status == 200, body
    assert json.loads(body)["namespace"] == ["demo"]
