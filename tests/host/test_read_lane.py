"""The read lane (api/reads.py) answers the catalog's reads below Quart; Quart answers the requests it
passes on (here: the same paths with a trailing slash) through the same handlers. Both must look the
same to a client: status, body, and the headers every response carries."""

from __future__ import annotations

import json
import uuid

import httpx
import pytest

from lakekeeper_host.api.reads import ROUTES, match
from lakekeeper_testing.server import create_file_warehouse

SCHEMA = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]}
VIEW = {
    "name": "v",
    "schema": SCHEMA,
    "view-version": {
        "version-id": 1, "schema-id": 0, "timestamp-ms": 1700000000000, "summary": {},
        "default-namespace": ["ns"], "representations": [{"type": "sql", "sql": "select 1", "dialect": "spark"}],
    },
    "properties": {},
}
SAME_HEADERS = ("etag", "cache-control", "vary")


@pytest.fixture(scope="module")
def tree(sqlite_server, tmp_path_factory):
    """A warehouse with a namespace holding a table and a view."""
    url = sqlite_server.url
    wid = create_file_warehouse(url, f"lane-{uuid.uuid4().hex[:8]}", str(tmp_path_factory.mktemp("lane")))
    prefix = f"{url}/catalog/v1/{wid}"
    with httpx.Client(timeout=30) as http:
        http.post(f"{prefix}/namespaces", json={"namespace": ["ns"], "properties": {"k": "v"}}).raise_for_status()
        http.post(f"{prefix}/namespaces/ns/tables", json={"name": "t", "schema": SCHEMA}).raise_for_status()
        http.post(f"{prefix}/namespaces/ns/views", json=VIEW).raise_for_status()
    return {"prefix": prefix, "warehouse_id": wid, "server": sqlite_server}


@pytest.mark.parametrize(
    ("method", "path", "headers"),
    [
        ("GET", "/namespaces", {}),
        ("GET", "/namespaces?pageSize=1&pageToken=", {}),
        ("GET", "/namespaces/ns", {}),
        ("HEAD", "/namespaces/ns", {}),
        ("GET", "/namespaces/ns/tables?returnUuids=true", {}),
        ("GET", "/namespaces/ns/tables/t", {}),
        ("GET", "/namespaces/ns/tables/t?snapshots=refs", {}),
        ("HEAD", "/namespaces/ns/tables/t", {}),
        ("GET", "/namespaces/ns/views", {}),
        ("GET", "/namespaces/ns/views/v", {}),
        ("HEAD", "/namespaces/ns/views/v", {}),
        ("GET", "/namespaces/nope/tables/t", {}),
        ("HEAD", "/namespaces/ns/tables/nope", {}),
        ("GET", "/namespaces/ns/tables/t?snapshots=some", {}),
        ("GET", "/namespaces/ns/tables?pageSize=x", {}),
    ],
)
def test_lane_and_quart_answer_alike(tree, method, path, headers):
    base, _, query = path.partition("?")
    lane_url = f"{tree['prefix']}{base}" + (f"?{query}" if query else "")
    quart_url = f"{tree['prefix']}{base}/" + (f"?{query}" if query else "")
    assert match(method, lane_url.split("?")[0].split(tree["server"].url, 1)[1]) is not None
    assert match(method, quart_url.split("?")[0].split(tree["server"].url, 1)[1]) is None
    with httpx.Client(timeout=30) as http:
        lane = http.request(method, lane_url, headers=headers)
        quart = http.request(method, quart_url, headers=headers)
    assert lane.status_code == quart.status_code
    for name in SAME_HEADERS:
        assert lane.headers.get(name) == quart.headers.get(name), name
    assert lane.headers["x-request-id"] and lane.headers["x-request-id"] != quart.headers["x-request-id"]
    if method == "GET":
        assert lane.headers["content-type"] == "application/json"
        assert lane.content == quart.content  # byte for byte
    else:
        assert lane.content == quart.content == b""
    if lane.status_code >= 400 and method == "GET":
        assert set(lane.json()["error"]) == {"message", "type", "code"}


def test_load_table_bytes_are_the_metadata_file_spliced_into_the_reference_envelope(tree):
    """The lane's loadTable body is, byte for byte, the metadata file's JSON in the envelope the
    straightforward serialisation builds (the ETag: tests/host/test_metadata_json.py)."""
    from lakekeeper_host.server.metadata_io import decode
    from lakekeeper_host.service.storage import TableConfig
    from tests.host.test_metadata_json import reference_load_result_json

    with httpx.Client(timeout=30) as http:
        response = http.get(f"{tree['prefix']}/namespaces/ns/tables/t")
    location = response.json()["metadata-location"]
    with open(location.removeprefix("file://"), "rb") as handle:
        metadata_json = decode(handle.read())
    assert response.content == reference_load_result_json(location, metadata_json, TableConfig()).encode()


def test_etag_revalidation_through_the_lane(tree):
    url = f"{tree['prefix']}/namespaces/ns/tables/t"
    with httpx.Client(timeout=30) as http:
        first = http.get(url)
        again = http.get(url, headers={"If-None-Match": first.headers["etag"]})
    assert again.status_code == 304 and again.content == b""
    assert again.headers["etag"] == first.headers["etag"]


def test_lane_requests_are_measured_and_counted(tree):
    server = tree["server"]
    url = f"{tree['prefix']}/namespaces/ns/tables/t"
    with httpx.Client(timeout=30) as http:
        for _ in range(3):
            assert http.get(url, headers={"x-request-id": "lane-trace"}).headers["x-request-id"] == "lane-trace"
        assert http.head(f"{tree['prefix']}/namespaces/ns/tables/missing").status_code == 404
        metrics = http.get(f"http://127.0.0.1:{server.metrics_port}/metrics").text
        stats = http.post(f"{server.url}/management/v1/endpoint-statistics",
                          json={"warehouse": {"type": "warehouse-id", "id": tree["warehouse_id"]}}).json()
    rule = "/catalog/v1/<prefix>/namespaces/<namespace>/tables/<table>"
    counted = [line for line in metrics.splitlines()
               if line.startswith("lakekeeper_http_requests_total{") and f'endpoint="{rule}"' in line]
    assert any('method="GET"' in line and 'status="200"' in line for line in counted), counted
    assert any('method="HEAD"' in line and 'status="404"' in line for line in counted), counted
    calls = {(e["http-route"], e["status-code"]): e["count"]
             for per_time in stats["called-endpoints"] for e in per_time}
    route = "/catalog/v1/{prefix}/namespaces/{namespace}/tables/{table}"
    assert calls[(f"GET {route}", 200)] >= 3
    assert calls[(f"HEAD {route}", 404)] >= 1


async def test_lane_applies_cors_and_errors_under_the_test_client(tmp_path):
    from tests.host.test_app import make_app

    app = make_app(tmp_path, ALLOW_ORIGIN="http://ui.example")
    async with app.test_app() as test_app:
        client = test_app.test_client()
        response = await client.get(f"/catalog/v1/{uuid.uuid4()}/namespaces/ns/tables/t",
                                    headers={"Origin": "http://ui.example"})
        assert response.status_code == 404
        assert response.headers["Access-Control-Allow-Origin"] == "http://ui.example"
        body = json.loads(await response.get_data())
        assert body["error"]["type"] == "NoSuchWarehouseException"


def test_one_route_table_feeds_the_lane_and_quart(tmp_path):
    """Every read route is a Quart rule with the same rule, endpoint and methods, generated from the
    table, and no other Quart rule answers GET on it; the lane finds each route, parameters and all."""
    from tests.host.test_app import make_app

    app = make_app(tmp_path)
    quart_rules = [rule for rule in app.url_map.iter_rules() if rule.rule.startswith("/catalog/v1/")]
    for route in ROUTES:
        [rule] = [r for r in quart_rules if r.rule == route.rule and "GET" in r.methods]
        assert rule.endpoint == f"{route.blueprint}.{route.endpoint}"
        assert route.methods <= rule.methods
        path = route.rule
        for name in route.params:
            path = path.replace(f"<{name}>", f"{name}%2Fvalue")
        for method in route.methods:
            found, params = match(method, path)
            assert found is route
            assert params == {name: f"{name}%2Fvalue" for name in route.params}
        assert match("POST", path) is None
        assert match("GET", path + "/") is None
