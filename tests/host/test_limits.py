"""Request limits of a served catalog (issue 24): body size (413), deep JSON (400), page sizes (clamped or
400), slow clients (408 / closed connection); every answer an Iceberg ErrorModel, never a 500."""

from __future__ import annotations

import socket
import time
import uuid
from urllib.parse import urlsplit

import httpx
import pytest

from lakekeeper_testing.server import CatalogServer, create_file_warehouse

BODY_LIMIT = 65536
pytestmark = pytest.mark.slow  # an own server process, and the slow-client tests wait out its timeouts


@pytest.fixture(scope="module")
def limited(tmp_path_factory, lakekeeper_server_factory):
    """A served catalog with small, quickly testable limits."""
    srv = lakekeeper_server_factory({
        "LAKEKEEPER__MAX_REQUEST_BODY_SIZE": str(BODY_LIMIT),
        "LAKEKEEPER__MAX_REQUEST_TIME": "2s",
        "LAKEKEEPER__HTTP_KEEP_ALIVE_TIMEOUT": "2s",
    })
    warehouse_id = create_file_warehouse(srv.url, "limits", str(tmp_path_factory.mktemp("limits")))
    with httpx.Client(base_url=srv.url, timeout=30) as client:
        assert client.post(f"/catalog/v1/{warehouse_id}/namespaces", json={"namespace": ["ns"]}).status_code == 200
        yield srv, client, warehouse_id
    srv.close()


def _error(response: httpx.Response, status: int, type_: str) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"} and body["error"]["code"] == status and body["error"]["type"] == type_, body
    return body["error"]["message"]


def _still_serving(client: httpx.Client, warehouse_id: str) -> None:
    assert client.get(f"/catalog/v1/{warehouse_id}/namespaces/ns").status_code == 200


def test_body_over_the_limit_is_413_on_every_route(limited):
    _, client, wh = limited
    big = {"namespace": ["big"], "properties": {"k": "v" * (BODY_LIMIT + 10)}}
    for method, path in [
        ("POST", f"/catalog/v1/{wh}/namespaces"),  # a Quart route
        ("POST", "/management/v1/warehouse"),  # a management route
        ("GET", f"/catalog/v1/{wh}/namespaces"),  # the read lane (a GET with a body)
        ("POST", f"/catalog/v1/{wh}/namespaces/ns/tables/t"),  # a commit
    ]:
        response = client.request(method, path, json=big)
        message = _error(response, 413, "RequestEntityTooLarge")
        assert str(BODY_LIMIT) in message and "MAX_REQUEST_BODY_SIZE" in message, message
        assert response.headers.get("x-request-id")
    assert client.get(f"/catalog/v1/{wh}/namespaces/big").status_code == 404
    _still_serving(client, wh)


def test_chunked_body_over_the_limit_is_413(limited):
    _, client, wh = limited
    chunk = b'{"namespace": ["chunked"], "properties": {"k": "' + b"v" * 8192

    def body():  # no Content-Length: the limit applies while the body is read
        yield chunk
        for _ in range(BODY_LIMIT // 8192 + 1):
            yield b"v" * 8192
        yield b'"}}'

    response = client.post(f"/catalog/v1/{wh}/namespaces", content=body(), headers={"content-type": "application/json"})
    _error(response, 413, "RequestEntityTooLarge")
    _still_serving(client, wh)


def test_body_at_the_limit_is_accepted(limited):
    _, client, wh = limited
    name = f"fits{uuid.uuid4().hex[:6]}"
    body = {"namespace": [name], "properties": {"k": "v" * (BODY_LIMIT - 200)}}
    assert client.post(f"/catalog/v1/{wh}/namespaces", json=body).status_code == 200


@pytest.mark.parametrize("depth", [10_000, 300])
def test_deeply_nested_json_is_400(limited, depth):
    _, client, wh = limited
    for path in (f"/catalog/v1/{wh}/namespaces", f"/catalog/v1/{wh}/namespaces/ns/tables", "/management/v1/warehouse",
                 f"/catalog/v1/{wh}/namespaces/ns/tables/t"):
        deep = '{"a":' * depth + "1" + "}" * depth
        response = client.post(path, content=deep, headers={"content-type": "application/json"})
        assert "nested too deeply" in _error(response, 400, "BadRequestException")
    _still_serving(client, wh)


def test_deep_but_allowed_schema_creates_a_table(limited):
    """60 nested structs (about 180 JSON levels) are fine: the limit does not bite real schemas."""
    _, client, wh = limited
    typ: object = "int"
    for level in range(60):
        typ = {"type": "struct", "fields": [{"id": level + 1, "name": f"f{level}", "type": typ, "required": False}]}
    schema = {"type": "struct", "schema-id": 0, "fields": [{"id": 100, "name": "top", "type": typ, "required": False}]}
    response = client.post(f"/catalog/v1/{wh}/namespaces/ns/tables", json={"name": "deep", "schema": schema})
    assert response.status_code == 200, response.text


@pytest.mark.parametrize("size", ["1000000000000", "1" + "0" * 30, "9223372036854775808", "-5", "0"],
                         ids=["1e12", "1e30", "2^63", "negative", "zero"])
def test_huge_or_negative_page_sizes_are_clamped(limited, size):
    _, client, wh = limited
    for path in (f"/catalog/v1/{wh}/namespaces", f"/catalog/v1/{wh}/namespaces/ns/tables",
                 f"/catalog/v1/{wh}/namespaces/ns/views", "/management/v1/user", "/management/v1/role",
                 f"/management/v1/warehouse/{wh}/deleted-tabulars"):
        for params in ({"pageSize": size}, {"pageSize": size, "pageToken": ""}):
            response = client.get(path, params=params)
            assert response.status_code == 200, (path, params, response.text)


@pytest.mark.parametrize("size", ["abc", "1e3", "1.5", "1" * 5000], ids=["abc", "1e3", "1.5", "5000-digits"])
def test_non_numeric_page_size_is_400(limited, size):
    _, client, wh = limited
    for path in (f"/catalog/v1/{wh}/namespaces", f"/catalog/v1/{wh}/namespaces/ns/tables", "/management/v1/user"):
        message = _error(client.get(path, params={"pageSize": size}), 400, "BadRequestException")
        assert "pageSize" in message and len(message) < 300, message


def _connect(srv: CatalogServer) -> socket.socket:
    url = urlsplit(srv.url)
    return socket.create_connection((url.hostname, url.port), timeout=20)


def _read_all(sock: socket.socket) -> bytes:
    data = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            break
        if not chunk:
            break
        data += chunk
        if b"\r\n\r\n" in data and data.rstrip().endswith(b"}"):
            break
    return data


def test_slow_body_is_cut_off_with_408(limited):
    srv, client, wh = limited
    with _connect(srv) as sock:
        started = time.monotonic()
        sock.sendall(
            f"POST /catalog/v1/{wh}/namespaces HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
            "Content-Length: 200\r\n\r\n".encode()
        )
        sock.sendall(b'{"namespace": ')  # ... and then nothing more
        answer = _read_all(sock)
        elapsed = time.monotonic() - started
    assert answer.startswith(b"HTTP/1.1 408"), answer[:300]
    assert b'"type":"RequestTimeout"' in answer and b"MAX_REQUEST_TIME" in answer
    assert elapsed < 15, elapsed  # MAX_REQUEST_TIME is 2 s here (a bound, not a speed claim)
    _still_serving(client, wh)


def test_slow_headers_are_cut_off(limited):
    srv, client, wh = limited
    with _connect(srv) as sock:
        started = time.monotonic()
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: test\r\n")  # the headers never end
        answer = _read_all(sock)
        elapsed = time.monotonic() - started
    assert answer == b"" or b" 408" in answer.split(b"\r\n", 1)[0], answer[:300]
    assert elapsed < 15, elapsed  # HTTP_KEEP_ALIVE_TIMEOUT is 2 s here; the socket's own timeout is 20 s
    _still_serving(client, wh)
