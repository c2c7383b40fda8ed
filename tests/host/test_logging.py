"""Structured JSON logs, and the configuration's secrets kept out of logs and API responses."""

from __future__ import annotations

import json
import uuid

import httpx
import pytest

from lakekeeper_testing.server import create_file_warehouse


@pytest.mark.postgres
def test_log_is_json_lines_and_never_shows_a_configured_secret(pg_url_factory, tmp_path, lakekeeper_server_factory):
    """At debug level, with plugin tracing (which logs the whole application state) and CloudEvents
    in the log: every line is a JSON object, and neither the encryption key nor the database
    password shows up in it or in anything the API answers."""
    encryption_key = f"key-{uuid.uuid4().hex}"
    password = f"pw{uuid.uuid4().hex}"
    url = pg_url_factory()
    assert url.startswith("postgresql://") and "@" in url and ":" not in url.split("//", 1)[1].split("@", 1)[0]
    url_with_password = url.replace("@", f":{password}@", 1)
    env = {
        "LAKEKEEPER__PG_DATABASE_URL_WRITE": url_with_password,
        "LAKEKEEPER__PG_ENCRYPTION_KEY": encryption_key,
        "LAKEKEEPER__LOG_LEVEL": "debug",
        "LAKEKEEPER__TRACE_PLUGINS": "true",
        "LAKEKEEPER__LOG_CLOUDEVENTS": "true",
    }
    answers: list[httpx.Response] = []
    with lakekeeper_server_factory(env) as server:
        with httpx.Client(base_url=server.url, timeout=30, event_hooks={"response": [answers.append]}) as client:
            assert client.post("/management/v1/bootstrap", json={"accept-terms-of-use": True}).status_code == 204
            warehouse_id = create_file_warehouse(server.url, "logged", str(tmp_path))
            tables = f"/catalog/v1/{warehouse_id}/namespaces/ns/tables"
            client.post(f"/catalog/v1/{warehouse_id}/namespaces", json={"namespace": ["ns"]}).raise_for_status()
            client.post(tables, json={"name": "t", "schema": {"type": "struct", "fields": []}}).raise_for_status()
            for path in ("/health", "/management/v1/info", "/management/v1/plugins", "/management/v1/whoami",
                         "/catalog/v1/config?warehouse=logged", f"{tables}/t", f"{tables}/missing",
                         "/management/v1/warehouse", "/api-docs/management/v1/openapi.json"):
                client.get(path)
            client.get(f"http://127.0.0.1:{server.metrics_port}/metrics")
        assert {response.status_code for response in answers} >= {200, 204, 404}
        for response in answers:
            seen = response.text + json.dumps(dict(response.headers))
            assert encryption_key not in seen and password not in seen, response.request.url
        server.stop()  # shutdown lines too
        text = server.log_path.read_text()

    assert encryption_key not in text and password not in text
    records = [json.loads(line) for line in text.splitlines() if line.strip()]
    assert all(isinstance(record, dict) for record in records)
    for record in records:
        assert {"timestamp", "level", "target", "message"} <= record.keys(), record
        assert record["timestamp"].endswith("Z") and record["level"] in {"DEBUG", "INFO", "WARNING", "ERROR"}
    levels = {record["level"] for record in records}
    targets = {record["target"] for record in records}
    assert "DEBUG" in levels  # LOG_LEVEL=debug took effect: the plugin trace is in the log
    assert "lakekeeper_host.runtime.lifecycle" in targets  # the migrations it applied
    assert "hypercorn.error" in targets  # the web server's own lines are JSON too
    assert any(record["message"].startswith("cloudevent ") for record in records)


@pytest.mark.s3
@pytest.mark.parametrize("libraries", ["", "botocore"], ids=["default", "botocore-asked-for"])
def test_debug_level_logs_no_access_key_id_unless_a_library_is_asked_for(
    tmp_path, libraries, lakekeeper_server_factory
):
    """LOG_LEVEL=debug: botocore would log every canonical request with the access key id and the
    signature. Third-party loggers stay at INFO unless LOG_DEBUG_LIBRARIES names them (the second
    case shows the key would be there: what the first case keeps out)."""
    from lakekeeper_testing.services import SeaweedS3, service_or_skip

    access_key = f"AKIALOG{uuid.uuid4().hex[:12].upper()}"
    seaweed = service_or_skip(SeaweedS3(access_key=access_key, buckets=["logged"]))
    try:
        env = {"LAKEKEEPER__LOG_LEVEL": "debug", "LAKEKEEPER__LOG_DEBUG_LIBRARIES": libraries}
        with lakekeeper_server_factory(env) as server, httpx.Client(base_url=server.url, timeout=60) as client:
            made = client.post("/management/v1/warehouse", json={
                "warehouse-name": "s3-logged", "project-id": client.get("/management/v1/info").json()[
                    "default-project-id"],
                "storage-profile": {"type": "s3", "bucket": "logged", "key-prefix": "wh", "endpoint": seaweed.endpoint,
                                    "region": seaweed.region, "path-style-access": True, "flavor": "s3-compat",
                                    "sts-enabled": False},
                "storage-credential": {"type": "s3", "credential-type": "access-key",
                                       "aws-access-key-id": access_key, "aws-secret-access-key": seaweed.secret_key},
            })
            assert made.status_code == 201, made.text
            prefix = f"/catalog/v1/{made.json()['warehouse-id']}"
            assert client.post(f"{prefix}/namespaces", json={"namespace": ["ns"]}).status_code == 200
            table = client.post(f"{prefix}/namespaces/ns/tables",
                                json={"name": "t", "schema": {"type": "struct", "fields": []}})
            assert table.status_code == 200, table.text
            assert client.delete(f"{prefix}/namespaces/ns/tables/t", params={"purgeRequested": "true"}).status_code \
                == 204
            server.stop()
            text = server.log_path.read_text()
        assert '"level": "DEBUG"' in text and "lakekeeper" in text  # debug logging was on
        if libraries:
            assert access_key in text  # botocore, asked for, logs the canonical request
        else:
            assert access_key not in text and seaweed.secret_key not in text
            assert "botocore" not in {json.loads(line)["target"].split(".")[0] for line in text.splitlines()
                                      if line.startswith("{") and json.loads(line)["level"] == "DEBUG"}
    finally:
        seaweed.close()
