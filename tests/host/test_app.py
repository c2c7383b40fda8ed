"""Cross-cutting HTTP behaviour of the host: health, errors, request ids, headers, limits, docs, metrics."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from lakekeeper_host import hookimpl
from lakekeeper_host.app import create_app
from lakekeeper_host.config import load_settings
from lakekeeper_host.plugins import make_plugin_manager
from lakekeeper_host.registry import BackendSpec


def make_app(tmp_path, **env):
    environ = {"LAKEKEEPER__DATA_DIR": str(tmp_path), **{f"LAKEKEEPER__{k}": v for k, v in env.items()}}
    return create_app(load_settings(environ), make_plugin_manager(load_entrypoints=False))


@pytest.fixture
async def client(tmp_path):
    app = make_app(tmp_path)
    async with app.test_app() as test_app:
        yield test_app.test_client()


async def test_health_reports_each_backend(client):
    response = await client.get("/health")
    assert response.status_code == 200
    body = await response.get_json()
    assert body["status"] == "healthy"
    assert body["checks"] == {"database": "healthy", "secret-store": "healthy", "authorizer": "healthy"}
    assert "Cache-Control" not in response.headers
    # Lakekeeper's shape (service/health.rs HealthState), which its `healthcheck -s` and tools read
    assert body["health"] == "ok" and body["maintenance_mode"] == "off"
    assert {name: [s["name"] for s in services] for name, services in body["services"].items()} == {
        "catalog": ["sqlite"], "secrets": ["postgres"], "auth": ["allowall"]}
    assert all(s["status"] == "ok" and s["lastCheck"] > 0 for services in body["services"].values() for s in services)


async def test_info_names_the_console_and_the_commit(client):
    from lakekeeper_host.server.management.bootstrap import commit_sha

    info = await (await client.get("/management/v1/info")).get_json()
    assert info["console"]["edition"] == "lakekeeper-host-console" and info["console"]["version"] == info["version"]
    assert info.get("lakekeeper-commit-sha") == commit_sha()  # a checkout: the HEAD commit; a wheel: left out
    assert info["license-status"] == {"license-type": "Apache-2.0", "valid": True, "audience": "lakekeeper-core"}


@pytest.mark.postgres
def test_health_is_503_while_postgres_is_down_and_recovers(lakekeeper_server_factory):
    """A real outage: the server's PostgreSQL is stopped and started again under it."""
    from lakekeeper_testing.services import PostgresServer

    with PostgresServer() as pg:
        url = pg.create_database("health_outage")
        with lakekeeper_server_factory({"LAKEKEEPER__PG_DATABASE_URL_WRITE": url}) as server:
            assert httpx.get(server.url + "/health").status_code == 200
            pg.stop()
            down = httpx.get(server.url + "/health", timeout=30)
            assert down.status_code == 503
            assert down.json()["checks"]["database"] == "unhealthy"
            # an API request is a 503 ErrorModel a client may retry, not a 500 (tests/drills/test_outages.py)
            listed = httpx.get(server.url + "/management/v1/warehouse", timeout=30)
            assert listed.status_code == 503 and listed.headers["Retry-After"] == "1"
            assert listed.json()["error"]["type"] == "DatabaseUnavailable"
            pg.start()
            statuses = [httpx.get(server.url + "/health", timeout=30).status_code for _ in range(20)]
            assert statuses[-1] == 200
            assert httpx.get(server.url + "/management/v1/warehouse", timeout=30).status_code == 200


async def test_unknown_route_is_an_iceberg_error_model(client):
    response = await client.get("/catalog/v1/nothing/here/at/all")
    assert response.status_code == 404
    assert await response.get_json() == {
        "error": {
            "message": "No route for GET /catalog/v1/nothing/here/at/all", "type": "NotFoundException", "code": 404
        }
    }


async def test_request_id_is_generated_or_propagated(client):
    generated = await client.get("/management/v1/info")
    assert len(generated.headers["x-request-id"]) == 36
    echoed = await client.get("/management/v1/info", headers={"x-request-id": "my-trace-1"})
    assert echoed.headers["x-request-id"] == "my-trace-1"


async def test_cache_headers_on_api_responses(client):
    response = await client.get("/management/v1/info")
    assert response.headers["Cache-Control"] == "private"
    assert response.headers["Vary"] == "authorization, x-project-id, x-iceberg-access-delegation"


async def test_cors_only_when_configured(tmp_path, client):
    plain = await client.get("/management/v1/info", headers={"Origin": "http://ui.example"})
    assert "Access-Control-Allow-Origin" not in plain.headers
    app = make_app(tmp_path / "cors", ALLOW_ORIGIN="http://ui.example")
    async with app.test_app() as test_app:
        cors = test_app.test_client()
        allowed = await cors.get("/management/v1/info", headers={"Origin": "http://ui.example"})
        assert allowed.headers["Access-Control-Allow-Origin"] == "http://ui.example"
        assert "etag" in allowed.headers["Access-Control-Expose-Headers"]
        other = await cors.get("/management/v1/info", headers={"Origin": "http://evil.example"})
        assert "Access-Control-Allow-Origin" not in other.headers
        preflight = await cors.options("/catalog/v1/config", headers={"Origin": "http://ui.example"})
        assert preflight.status_code == 204
        assert "x-iceberg-access-delegation" in preflight.headers["Access-Control-Allow-Headers"]


async def test_body_size_limit(tmp_path):
    app = make_app(tmp_path, MAX_REQUEST_BODY_SIZE="1024")
    async with app.test_app() as test_app:
        response = await test_app.test_client().post(
            "/management/v1/project", data=b'{"project-name": "' + b"x" * 4096 + b'"}',
            headers={"Content-Type": "application/json"},
        )
        assert response.status_code == 413
        assert (await response.get_json())["error"]["type"] == "RequestEntityTooLarge"


class SlowContractChecker:
    """Takes 5 s to approve a table commit: a request that outlives MAX_REQUEST_TIME."""

    name = "slow"

    async def check_table_updates(self, updates, metadata):
        await asyncio.sleep(5)


class SlowContractPlugin:
    @hookimpl
    def lakekeeper_contract_checkers(self):
        async def build(config, ctx):
            return SlowContractChecker()

        return [BackendSpec(name="slow", factory=build)]


async def test_request_time_limit_is_a_408_and_the_change_is_not_applied(tmp_path):
    settings = load_settings({"LAKEKEEPER__DATA_DIR": str(tmp_path), "LAKEKEEPER__MAX_REQUEST_TIME": "1s"})
    pm = make_plugin_manager(load_entrypoints=False, extra_plugins=[(SlowContractPlugin(), "slow_contracts")])
    async with create_app(settings, pm).test_app() as test_app:
        client = test_app.test_client()
        prefix = (await (await client.get("/catalog/v1/config?warehouse=demo")).get_json())["defaults"]["prefix"]
        tables = f"/catalog/v1/{prefix}/namespaces/slow/tables"
        assert (await client.post(f"/catalog/v1/{prefix}/namespaces", json={"namespace": ["slow"]})).status_code == 200
        schema = {
            "type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]
        }
        assert (await client.post(tables, json={"name": "t", "schema": schema})).status_code == 200

        response = await client.post(
            f"{tables}/t", json={"requirements": [], "updates": [{"action": "set-properties", "updates": {"k": "v"}}]}
        )
        assert response.status_code == 408
        error = (await response.get_json())["error"]
        assert error["type"] == "RequestTimeout" and "MAX_REQUEST_TIME" in error["message"]
        table = await (await client.get(f"{tables}/t")).get_json()
        assert "k" not in table["metadata"]["properties"]


async def test_maintenance_mode_rejects_writes_but_serves_reads(tmp_path):
    app = make_app(tmp_path, MAINTENANCE_MODE="read-only")
    async with app.test_app() as test_app:
        client = test_app.test_client()
        write = await client.post("/management/v1/project", json={"project-name": "p"})
        assert write.status_code == 503
        assert write.headers["Retry-After"] == "60"
        assert (await write.get_json())["error"]["type"] == "MaintenanceModeError"
        assert (await client.get("/management/v1/project-list")).status_code == 200


async def test_malformed_body_names_the_field(client):
    response = await client.post("/management/v1/bootstrap", json={"accept-terms-of-use": "yes please"})
    assert response.status_code == 400
    error = (await response.get_json())["error"]
    assert error["type"] == "BadRequestException"
    assert "accept-terms-of-use" in error["message"]
    not_json = await client.post(
        "/management/v1/bootstrap", data=b"{nope", headers={"Content-Type": "application/json"}
    )
    assert not_json.status_code == 400 and "not valid JSON" in (await not_json.get_json())["error"]["message"]


async def test_embedded_default_is_bootstrapped_once(client):
    info = await (await client.get("/management/v1/info")).get_json()
    assert info["bootstrapped"] is True
    again = await client.post("/management/v1/bootstrap", json={"accept-terms-of-use": True})
    assert again.status_code == 400
    assert (await again.get_json())["error"]["type"] == "CatalogAlreadyBootstrapped"
    warehouses = await (await client.get("/management/v1/warehouse")).get_json()
    assert [w["name"] for w in warehouses["warehouses"]] == ["demo"]


async def test_openapi_documents_list_the_served_routes(client):
    catalog = await (await client.get("/api-docs/management/v1/openapi.json")).get_json()
    assert "/management/v1/plugins" in catalog["paths"]
    assert "get" in catalog["paths"]["/management/v1/warehouse/{warehouse_id}"]
    page = await client.get("/swagger-ui")
    assert page.status_code == 200 and b"SwaggerUIBundle" in await page.get_data()
    asset = await client.get("/swagger-ui/assets/swagger-ui-bundle.js")
    assert asset.status_code == 200


async def test_swagger_can_be_disabled(tmp_path):
    app = make_app(tmp_path, SERVE_SWAGGER_UI="false")
    async with app.test_app() as test_app:
        assert (await test_app.test_client().get("/swagger-ui")).status_code == 404


@pytest.mark.postgres
def test_two_workers_on_postgres_share_one_port_and_report_pools(pg_url, lakekeeper_server_factory):
    env = {"LAKEKEEPER__PG_DATABASE_URL_WRITE": pg_url, "LAKEKEEPER__PG_DATABASE_URL_READ": pg_url}
    with lakekeeper_server_factory(env, workers=2) as server:
        for _ in range(40):
            with httpx.Client() as client:  # a new connection each time, so both workers are hit
                response = client.get(server.url + "/health")
                assert response.status_code == 200
        info = httpx.get(server.url + "/management/v1/info").json()
        assert info["server-id"]
        # the parent aggregates the workers' counters on the metrics port
        metrics = httpx.get(f"http://127.0.0.1:{server.metrics_port}/metrics").text
        count = [
            line for line in metrics.splitlines()
            if line.startswith('lakekeeper_http_requests_total{endpoint="/health",method="GET",status="200"}')
        ]
        assert count and float(count[0].split()[-1]) >= 40
        # Lakekeeper's names, from the same aggregated counters
        axum = [line for line in metrics.splitlines()
                if line.startswith('axum_http_requests_total{endpoint="/health",method="GET",status="200"}')]
        assert axum and float(axum[0].split()[-1]) == float(count[0].split()[-1])


@pytest.mark.postgres
def test_pool_gauges_and_request_metrics(pg_url, lakekeeper_server_factory):
    env = {"LAKEKEEPER__PG_DATABASE_URL_WRITE": pg_url}
    unknown_warehouse = "00000000-0000-0000-0000-00000000abcd"
    with lakekeeper_server_factory(env) as server:
        for _ in range(3):
            httpx.get(server.url + "/management/v1/info")
        # a read-lane route (answered below Quart): 404, the warehouse does not exist
        assert httpx.get(f"{server.url}/catalog/v1/{unknown_warehouse}/namespaces").status_code == 404
        text = httpx.get(f"http://127.0.0.1:{server.metrics_port}/metrics").text
    assert 'lakekeeper_db_pool_connections{pool="write",state="open"}' in text
    assert 'lakekeeper_http_requests_total{endpoint="/management/v1/info",method="GET",status="200"}' in text

    # the latency histogram, by method and endpoint (the route's rule, never the raw path)
    families = text_string_to_metric_families(text)
    (latency,) = [f for f in families if f.name == "lakekeeper_http_request_duration_seconds"]
    assert latency.type == "histogram"
    assert not [s for s in latency.samples if unknown_warehouse in s.labels.get("endpoint", "")]
    for endpoint, requests in (("/management/v1/info", 3), ("/catalog/v1/<prefix>/namespaces", 1)):
        samples = [s for s in latency.samples if s.labels.get("endpoint") == endpoint and s.labels["method"] == "GET"]
        buckets = [(float(s.labels["le"]), s.value) for s in samples if s.name.endswith("_bucket")]
        counts = [value for _, value in buckets]
        assert len(buckets) > 5 and counts == sorted(counts)  # cumulative: never decreasing
        assert buckets[-1] == (float("inf"), requests)
        (count,) = [s.value for s in samples if s.name.endswith("_count")]
        (total,) = [s.value for s in samples if s.name.endswith("_sum")]
        assert count == requests and total > 0


@pytest.mark.slow  # own server processes or waits out timeouts
def test_store_cache_lookups_are_counted_in_the_metrics(lakekeeper_server_factory):
    with lakekeeper_server_factory({}) as server:
        config = httpx.get(server.url + "/catalog/v1/config", params={"warehouse": "demo"}).json()
        prefix = config["defaults"]["prefix"]
        tables = f"{server.url}/catalog/v1/{prefix}/namespaces/cached/tables"
        httpx.post(f"{server.url}/catalog/v1/{prefix}/namespaces", json={"namespace": ["cached"]}).raise_for_status()
        httpx.post(tables, json={"name": "t", "schema": {"type": "struct", "fields": [
            {"id": 1, "name": "x", "type": "long", "required": False}]}}).raise_for_status()
        for _ in range(3):
            assert httpx.get(tables + "/t").status_code == 200
        text = httpx.get(f"http://127.0.0.1:{server.metrics_port}/metrics").text

    def count(cache: str, result: str) -> float:
        prefix = f'lakekeeper_cache_requests_total{{cache="{cache}",result="{result}"}}'
        return sum(float(line.split()[-1]) for line in text.splitlines() if line.startswith(prefix))

    # the create put the new metadata in the cache, so every load found it; the warehouse row
    # is read once and then served from the cache
    assert count("table-metadata", "hit") >= 3
    # the same lookups under Lakekeeper's names (its dashboards' hit-ratio panels and alerts)
    hits = [line for line in text.splitlines()
            if line.startswith('lakekeeper_cache_hits_total{cache_type="table_metadata"}')]
    assert hits and float(hits[0].split()[-1]) == count("table-metadata", "hit")
    assert count("warehouse", "miss") >= 1
    assert count("warehouse", "hit") >= 3
