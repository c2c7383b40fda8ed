"""Endpoint policy suite for storage plugins: the URLs a warehouse creator chooses cannot make the
server connect where the operator does not allow (issue 37, docs/security.md "Storage endpoints").

A storage plugin subclasses ``StorageEndpointPolicy`` in a test module and provides an
``endpoint_case`` fixture returning an ``EndpointCase``: a working profile (through a
``TcpProxy`` in front of its real local store, so every connection is counted) and, for each field
that names an endpoint, how to put another host into it::

    class TestMyEndpointPolicy(StorageEndpointPolicy):
        @pytest.fixture
        def store_url(self, my_store) -> str:
            return my_store.url  # the suite puts a counting proxy (store_proxy) in front of it

        @pytest.fixture
        def endpoint_case(self, store_proxy, ...) -> EndpointCase:
            return EndpointCase(
                profile={..., "endpoint": f"http://{store_proxy.netloc}"},
                endpoint_fields={"storage-profile.endpoint": lambda url: ({..., "endpoint": url}, credential)},
                allowed=(store_proxy.netloc,),
                store_traffic=lambda: store_proxy.connections,
            )

The suite runs a catalog in this process (so it can swap the endpoint policy and stub the resolver)
and checks, through the management and catalog APIs: endpoints outside the allow-list are refused
before any connection (create, creation validation, storage update, validate-profile,
validate-credential, storage-credential update, validate-access, table IO); link-local and metadata
addresses are refused by default (names a stub resolver maps there: no test connects to such an
address); the real local store works when allowed; and a failing endpoint's answer (body, headers)
never reaches the caller, while the message still says what failed.

The class name deliberately does not start with ``Test``: only the subclasses are collected.
"""

from __future__ import annotations

import contextlib
import functools
import ipaddress
import socket
import threading
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from http.server import ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import attrs
import pytest

from lakekeeper_host.service.endpoints import EndpointPolicy
from lakekeeper_testing.http_double import JsonHandler

TELL_TALE_BODY = "TELL-TALE-BODY-7f3a9c"
TELL_TALE_HEADER = "TELL-TALE-HEADER-51d2e8"
TELL_TALE_CODE = "TellTaleCode42"
MGMT = "/management/v1"
# names the stub resolver maps to link-local / metadata addresses (never resolved for real)
LINK_LOCAL_NAMES = {
    "metadata-lookalike.test": ["169.254.169.254"],
    "mapped-metadata.test": ["::ffff:169.254.169.254"],
    "aws-v6-metadata.test": ["fd00:ec2::254"],
    "one-bad-address.test": ["192.0.2.10", "169.254.10.1"],  # every address is checked
}
FAR_AWAY = ("192.0.2.0/24",)  # TEST-NET-1: an allow-list that no local store is in


class _Listener:
    """A loopback TCP listener on a free port, serving each connection in a thread."""

    def __init__(self) -> None:
        self._socket = socket.create_server(("127.0.0.1", 0))
        self.port = self._socket.getsockname()[1]
        self.connections = 0
        self._closed = False
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    @property
    def netloc(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._socket.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self.serve, args=(conn,), daemon=True).start()

    def serve(self, conn: socket.socket) -> None:
        conn.close()

    def close(self) -> None:
        self._closed = True
        self._socket.close()


class ConnectionTrap(_Listener):
    """Counts connections and closes them at once: proof that nothing connected."""


class TcpProxy(_Listener):
    """Forwards every connection to ``upstream`` (host, port) unchanged, counting them."""

    def __init__(self, upstream: tuple[str, int]):
        self.upstream = upstream
        super().__init__()

    def serve(self, conn: socket.socket) -> None:
        try:
            upstream = socket.create_connection(self.upstream, timeout=30)
        except OSError:
            conn.close()
            return

        def pump(source: socket.socket, target: socket.socket) -> None:
            try:
                while data := source.recv(65536):
                    target.sendall(data)
            except OSError:
                pass
            finally:
                for sock in (source, target):
                    try:
                        sock.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass

        threading.Thread(target=pump, args=(upstream, conn), daemon=True).start()
        pump(conn, upstream)
        conn.close()
        upstream.close()


class PlainAnswer(_Listener):
    """Answers whatever arrives (a TLS ClientHello too) at once with a plain HTTP ``501`` carrying the
    tell-tale body and header, then closes: a TLS client fails its handshake right away."""

    def serve(self, conn: socket.socket) -> None:
        body = f"<Error><Code>{TELL_TALE_CODE}</Code><Message>{TELL_TALE_BODY}</Message></Error>".encode()
        head = f"HTTP/1.1 501 Not Implemented\r\nX-Tell-Tale: {TELL_TALE_HEADER}\r\nContent-Length: {len(body)}\r\n\r\n"
        try:
            conn.settimeout(10)
            conn.recv(65536)
            conn.sendall(head.encode() + body)
        except OSError:
            pass
        finally:
            conn.close()


class _AnsweringServer:
    """A loopback HTTP server answering every request with ``status``, ``headers`` and ``body``."""

    def __init__(self, status: int, headers: Callable[[str], dict[str, str]], body: bytes = b""):
        self.requests: list[str] = []
        server = self

        class Handler(JsonHandler):
            def _answer(self) -> None:
                server.requests.append(f"{self.command} {self.path}")
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                self.send_response(status)
                for name, value in {**headers(self.path), "Content-Length": str(len(body))}.items():
                    self.send_header(name, value)
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _answer  # noqa: N815 - the http.server API

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    @property
    def netloc(self) -> str:
        return f"127.0.0.1:{self.port}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class TellTaleServer(_AnsweringServer):
    """Answers every request with ``501`` and a distinctive body and headers (an S3-style XML error and
    an Azure error code header, so every SDK parses something out of it)."""

    def __init__(self) -> None:
        body = f'<?xml version="1.0"?><Error><Code>{TELL_TALE_CODE}</Code><Message>{TELL_TALE_BODY}</Message></Error>'
        headers = {
            "X-Tell-Tale": TELL_TALE_HEADER,
            "x-ms-error-code": TELL_TALE_CODE,
            "Content-Type": "application/xml",
        }
        super().__init__(501, lambda path: headers, body.encode())


class Redirector(_AnsweringServer):
    """Answers every request with a redirect to the same path on ``target`` (``host:port``)."""

    def __init__(self, target: str):
        super().__init__(307, lambda path: {"Location": f"http://{target}{path}", "x-amz-bucket-region": "us-west-2"})


@contextlib.contextmanager
def proxied(url: str) -> Iterator[TcpProxy]:
    """A ``TcpProxy`` to the host and port of ``url`` (a local store), closed afterwards."""
    upstream = urlsplit(url)
    proxy = TcpProxy((upstream.hostname or "127.0.0.1", upstream.port or 80))
    try:
        yield proxy
    finally:
        proxy.close()


@functools.cache
def _builder() -> Any:
    from lakekeeper_testing.storage_conformance import StorageBuilder

    return StorageBuilder()


def declared_endpoints(profile: dict[str, Any], credential: dict[str, Any] | None) -> dict[str, str]:
    """{field: url} of the endpoints a storage built from this JSON declares (built as the server does; no IO)."""
    return {endpoint.field: endpoint.url for endpoint in _builder().build(profile, credential).endpoints()}


# "http(s)://host:port" -> (storage-profile JSON, storage-credential JSON or None) with that endpoint
WithEndpoint = Callable[[str], tuple[dict[str, Any], "dict[str, Any] | None"]]


@attrs.frozen(kw_only=True)
class EndpointCase:
    """One storage under the endpoint policy suite."""

    # a working storage-profile / storage-credential, reaching the real local store through a counting proxy
    profile: dict[str, Any]
    credential: dict[str, Any] | None = None
    # LAKEKEEPER__* settings of the catalog (e.g. the GCS endpoints)
    environment: Mapping[str, str] = attrs.field(factory=dict)
    # field name (as errors name it) -> the profile and credential with another endpoint in that field
    endpoint_fields: Mapping[str, WithEndpoint]
    # the fields that take https URLs only (the others take http too)
    https_only_fields: Sequence[str] = ()
    # allow-list patterns that cover the working profile (the proxies in front of the local store)
    allowed: Sequence[str]
    # how many connections (or requests) reached the local store so far
    store_traffic: Callable[[], int]


@attrs.define
class CatalogInProcess:
    """A catalog app in this process: its test client and its ``AppState``."""

    client: Any
    state: Any
    created: list[str] = attrs.field(factory=list)

    def allow(self, patterns: Sequence[str]) -> None:
        self.state.set_endpoint_policy(EndpointPolicy.from_patterns(patterns))

    def stub_resolver(self, names: Mapping[str, Sequence[str]]) -> None:
        async def resolve(host: str, port: int) -> list[Any]:
            # the name and its subdomains, as a DNS zone its owner controls would answer
            for name, addresses in names.items():
                if host == name or host.endswith("." + name):
                    return [ipaddress.ip_address(a) for a in addresses]
            return []

        self.state.resolve_host = resolve

    async def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        response = await self.client.open(path, method=method, json=body)
        return response.status_code, await response.get_json()

    async def create_warehouse(self, profile: dict[str, Any], credential: dict[str, Any] | None) -> tuple[int, Any]:
        body: dict[str, Any] = {"warehouse-name": f"wh-{uuid.uuid4().hex[:10]}", "storage-profile": profile}
        if credential is not None:
            body["storage-credential"] = credential
        return await self.call("POST", f"{MGMT}/warehouse", body)

    async def validate_creation(self, profile: dict[str, Any], credential: dict[str, Any] | None) -> Any:
        body: dict[str, Any] = {"warehouse-name": f"wh-{uuid.uuid4().hex[:10]}", "storage-profile": profile}
        if credential is not None:
            body["storage-credential"] = credential
        status, report = await self.call("POST", f"{MGMT}/warehouse-creation-validation", body)
        assert status == 200, report
        return report

    @staticmethod
    def url(case: EndpointCase, field_name: str, netloc: str) -> str:
        return f"{'https' if field_name in case.https_only_fields else 'http'}://{netloc}"

    async def working_warehouse(self, case: EndpointCase) -> str:
        status, created = await self.create_warehouse(case.profile, case.credential)
        assert status == 201, created
        return created["warehouse-id"]

    async def create_table(self, warehouse_id: str, name: str) -> tuple[int, Any]:
        schema = {
            "type": "struct",
            "schema-id": 0,
            "fields": [{"id": 1, "name": "id", "required": False, "type": "long"}],
        }
        return await self.call(
            "POST", f"/catalog/v1/{warehouse_id}/namespaces/ns/tables", {"name": name, "schema": schema}
        )


def _refused(status: int, body: Any, field_name: str | None = None) -> str:
    assert status == 400, body
    error = body["error"]
    assert error["type"] == "StorageEndpointNotAllowed", error
    assert field_name is None or field_name.split(" ")[0] in error["message"], error
    return error["message"]


def _report_refused(report: dict[str, Any], field_name: str | None = None) -> str:
    assert report["valid"] is False, report
    checks = {check["name"]: check for check in report["checks"]}
    failed = checks["profile-well-formed"]
    assert failed["status"] == "failed", report
    assert failed["error"]["type"] == "StorageEndpointNotAllowed", failed
    assert field_name is None or field_name.split(" ")[0] in failed["error"]["message"], failed
    # nothing was probed
    assert checks["lakekeeper-read-write"]["status"] == "skipped", report
    return failed["error"]["message"]


def _assert_no_tell_tale(text: str) -> None:
    for secret in (TELL_TALE_BODY, TELL_TALE_HEADER, TELL_TALE_CODE):
        assert secret not in text, f"the endpoint's answer ({secret}) reached the caller: {text}"


class StorageEndpointPolicy:
    """The endpoint policy suite (see the module docstring)."""

    @pytest.fixture
    def store_proxy(self, store_url: str) -> Iterator[TcpProxy]:
        """A counting proxy in front of the plugin's local store (its ``store_url`` fixture)."""
        with proxied(store_url) as proxy:
            yield proxy

    @pytest.fixture
    async def catalog(self, endpoint_case: EndpointCase, tmp_path) -> AsyncIterator[CatalogInProcess]:
        from lakekeeper_host.app import create_app
        from lakekeeper_host.config import load_settings
        from lakekeeper_host.plugins import make_plugin_manager

        env = {
            "LAKEKEEPER__DATA_DIR": str(tmp_path),
            # a failing endpoint takes an SDK's retries to fail; the answer, not the time limit, is under test
            "LAKEKEEPER__MAX_REQUEST_TIME": "120s",
            **endpoint_case.environment,
        }
        for queue in ("SOFT_DELETION", "TABULAR_PURGE", "LOG_CLEANUP", "TABLE_MAINTENANCE"):
            env[f"LAKEKEEPER__TASK_{queue}_WORKERS"] = "0"
        app = create_app(load_settings(env), make_plugin_manager())
        async with app.test_app() as test_app:
            yield CatalogInProcess(client=test_app.test_client(), state=app.extensions["lakekeeper"])

    # ------------------------------------------------------------ allowed private endpoints

    async def test_a_private_store_works_when_allowed(self, catalog: CatalogInProcess, endpoint_case: EndpointCase):
        catalog.allow(endpoint_case.allowed)
        warehouse = await catalog.working_warehouse(endpoint_case)
        status, report = await catalog.call("POST", f"{MGMT}/warehouse/{warehouse}/storage/validate-access")
        assert status == 200 and report["valid"] is True, report
        status, body = await catalog.call("POST", f"/catalog/v1/{warehouse}/namespaces", {"namespace": ["ns"]})
        assert status == 200, body
        status, body = await catalog.create_table(warehouse, "t")
        assert status == 200, body
        status, body = await catalog.call("GET", f"/catalog/v1/{warehouse}/namespaces/ns/tables/t")
        assert status == 200, body

    # ------------------------------------------------------------ the allow-list

    async def test_endpoints_outside_the_allow_list_are_refused_before_any_connection(
        self, catalog: CatalogInProcess, endpoint_case: EndpointCase
    ):
        catalog.allow(endpoint_case.allowed)
        trap = ConnectionTrap()
        try:
            await self._assert_refused_everywhere(catalog, endpoint_case, trap.netloc)
            assert trap.connections == 0, f"{trap.connections} connection(s) reached an endpoint outside the allow-list"
        finally:
            trap.close()

    async def test_a_warehouse_outside_a_new_allow_list_does_no_io(
        self, catalog: CatalogInProcess, endpoint_case: EndpointCase
    ):
        warehouse = await catalog.working_warehouse(endpoint_case)
        status, body = await catalog.call("POST", f"/catalog/v1/{warehouse}/namespaces", {"namespace": ["ns"]})
        assert status == 200, body
        status, body = await catalog.create_table(warehouse, "before")
        assert status == 200, body
        catalog.allow(FAR_AWAY)  # the operator restricts endpoints; the warehouse's store is not in the list
        traffic = endpoint_case.store_traffic()
        status, report = await catalog.call("POST", f"{MGMT}/warehouse/{warehouse}/storage/validate-access")
        assert status == 200
        _report_refused(report)
        status, body = await catalog.call("GET", f"/catalog/v1/{warehouse}/namespaces/ns/tables/before")
        _refused(status, body)
        status, body = await catalog.create_table(warehouse, "after")
        _refused(status, body)
        if endpoint_case.credential is not None:
            path = f"{MGMT}/warehouse/{warehouse}/storage-credential"
            status, body = await catalog.call("POST", path, {"new-storage-credential": endpoint_case.credential})
            _refused(status, body)
        assert endpoint_case.store_traffic() == traffic, "the store was contacted although its endpoint is not allowed"
        catalog.allow(endpoint_case.allowed)  # allowed again: the same warehouse works
        status, body = await catalog.call("GET", f"/catalog/v1/{warehouse}/namespaces/ns/tables/before")
        assert status == 200, body

    async def _assert_refused_everywhere(
        self, catalog: CatalogInProcess, case: EndpointCase, netloc: str, *, names: Sequence[str] = ()
    ) -> list[str]:
        """Each endpoint field set to ``netloc`` (or to ``<name>:<port of netloc>`` for each of
        ``names``) is refused by: create, creation validation, and on an existing warehouse the
        storage update and its validation, and for a credential's endpoint the storage-credential
        update and its validation. Returns the messages."""
        port = netloc.rpartition(":")[2]
        targets = [f"{name}:{port}" for name in names] or [netloc]
        attempts = [
            (field_name, with_endpoint(catalog.url(case, field_name, target)))
            for field_name, with_endpoint in case.endpoint_fields.items()
            for target in targets
        ]
        messages = []
        # first without any warehouse, so no other check (an overlapping location) can answer first
        for field_name, (profile, credential) in attempts:
            status, body = await catalog.create_warehouse(profile, credential)
            messages.append(_refused(status, body, field_name))
            messages.append(_report_refused(await catalog.validate_creation(profile, credential), field_name))
        warehouse = await catalog.working_warehouse(case)
        for field_name, (profile, credential) in attempts:
            update: dict[str, Any] = {"storage-profile": profile}
            if credential is not None:
                update["storage-credential"] = credential
            messages += await self._route_and_dry_run(
                catalog, warehouse, "storage", "validate-profile", update, field_name
            )
            if field_name.startswith("storage-credential"):
                change = {"new-storage-credential": credential}
                messages += await self._route_and_dry_run(
                    catalog, warehouse, "storage-credential", "validate-credential", change, field_name
                )
        return messages

    @staticmethod
    async def _route_and_dry_run(
        catalog: CatalogInProcess, warehouse: str, route: str, dry_run: str, body: dict[str, Any], field_name: str
    ) -> list[str]:
        """``POST /warehouse/{id}/<route>`` refuses ``body`` with a 400, its ``storage/<dry_run>`` in the report."""
        status, answer = await catalog.call("POST", f"{MGMT}/warehouse/{warehouse}/{route}", body)
        refused = _refused(status, answer, field_name)
        status, report = await catalog.call("POST", f"{MGMT}/warehouse/{warehouse}/storage/{dry_run}", body)
        assert status == 200, report
        return [refused, _report_refused(report, field_name)]

    # ------------------------------------------------------------ link-local and metadata addresses

    async def test_link_local_and_metadata_endpoints_are_refused_by_default(
        self, catalog: CatalogInProcess, endpoint_case: EndpointCase
    ):
        catalog.stub_resolver(LINK_LOCAL_NAMES)  # the default policy: no allow-list
        trap = ConnectionTrap()
        try:
            names = (*LINK_LOCAL_NAMES, "metadata.google.internal")
            messages = await self._assert_refused_everywhere(catalog, endpoint_case, trap.netloc, names=names)
            assert all("metadata" in message for message in messages), messages
            assert trap.connections == 0
        finally:
            trap.close()

    # ------------------------------------------------------------ errors

    async def test_a_failing_endpoint_is_described_without_its_answer(
        self, catalog: CatalogInProcess, endpoint_case: EndpointCase
    ):
        fields = [name for name in endpoint_case.endpoint_fields if name not in endpoint_case.https_only_fields]
        if not fields:
            pytest.skip("no endpoint field of this storage takes plain HTTP")
        tell_tale = TellTaleServer()
        try:
            for field_name in fields:
                profile, credential = endpoint_case.endpoint_fields[field_name](f"http://{tell_tale.netloc}")
                before = len(tell_tale.requests)
                status, body = await catalog.create_warehouse(profile, credential)
                assert len(tell_tale.requests) > before, f"{field_name}: nothing reached the test server"
                assert status == 400, body
                _assert_no_tell_tale(str(body))
                message = body["error"]["message"]
                assert any(words in message for words in ("unexpected response", "access denied", "HTTP 501")), message
                report = await catalog.validate_creation(profile, credential)
                assert report["valid"] is False
                _assert_no_tell_tale(str(report))
        finally:
            tell_tale.close()

    async def test_unreachable_and_tls_failures_say_what_failed(
        self, catalog: CatalogInProcess, endpoint_case: EndpointCase
    ):
        tell_tale = PlainAnswer()  # speaks plain HTTP: a TLS handshake with it fails
        closed = ConnectionTrap()
        closed.close()  # nothing listens there any more: connections are refused
        try:
            for field_name, with_endpoint in endpoint_case.endpoint_fields.items():
                status, body = await catalog.create_warehouse(*with_endpoint(f"https://{tell_tale.netloc}"))
                assert status == 400, body
                assert "TLS handshake failed" in body["error"]["message"], body
                _assert_no_tell_tale(str(body))
                if field_name not in endpoint_case.https_only_fields:
                    status, body = await catalog.create_warehouse(*with_endpoint(f"http://{closed.netloc}"))
                    assert status == 400, body
                    assert "connection refused" in body["error"]["message"], body
        finally:
            tell_tale.close()

    async def test_redirects_are_not_followed(self, catalog: CatalogInProcess, endpoint_case: EndpointCase):
        fields = [name for name in endpoint_case.endpoint_fields if name not in endpoint_case.https_only_fields]
        if not fields:
            pytest.skip("no endpoint field of this storage takes plain HTTP")
        trap = ConnectionTrap()
        redirector = Redirector(trap.netloc)  # an allowed endpoint that points elsewhere
        try:
            for field_name in fields:
                before = len(redirector.requests)
                status, body = await catalog.create_warehouse(
                    *endpoint_case.endpoint_fields[field_name](f"http://{redirector.netloc}")
                )
                assert len(redirector.requests) > before, f"{field_name}: nothing reached the redirecting server"
                assert status == 400, body
            assert trap.connections == 0, "a redirect was followed"
        finally:
            redirector.close()
            trap.close()
