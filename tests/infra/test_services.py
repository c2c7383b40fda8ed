"""Smoke tests for the test infrastructure: each real server starts, does a real round-trip, stops.

A test skips only when a server binary is genuinely not installed (``BinaryNotFound``); anything
else that goes wrong is a failure.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from typing import Any, ClassVar, TypeVar

import asyncpg
import hvac
import nats
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from botocore.exceptions import ClientError
from hvac.exceptions import Forbidden

from lakekeeper_host.engines.duckdb_util import attach_catalog, connect_duckdb
from lakekeeper_host.engines.spark import spark_snippet
from lakekeeper_testing.http_double import JsonHandler
from lakekeeper_testing.services import (
    PG_URL_ENV,
    BinaryNotFound,
    KafkaBroker,
    ManagedService,
    NatsServer,
    OpenBaoServer,
    PostgresServer,
    SeaweedS3,
    ServiceError,
    create_kafka_topic,
    postgres_for_tests,
    seaweed_iam_config,
    seaweed_role_arn,
    service_or_skip,
)

S = TypeVar("S", bound=ManagedService)


@contextlib.contextmanager
def running(service: S) -> Iterator[S]:
    """Start ``service`` for the block, then check that it really is gone."""
    service_or_skip(service)
    tmp_dir = service.tmp_dir
    try:
        yield service
    finally:
        pid = service.pid
        service.close()
        assert not tmp_dir.exists()
        if pid is not None:
            with pytest.raises(ProcessLookupError):
                os.kill(pid, 0)  # the process is gone (and reaped)


def port_closed(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) != 0


# ---------------------------------------------------------------------------------------------
# generic lifecycle


def test_startup_failure_reports_log_tail_and_cleans_up() -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))  # bound, not listening: NATS cannot take the port
        server = NatsServer(port=squatter.getsockname()[1], start_timeout=5)
        try:
            with pytest.raises(ServiceError, match=r"(?s)exited with code.*last lines.*address already in use"):
                server.start()
        except BinaryNotFound as exc:
            pytest.skip(str(exc))
    assert not server.running
    with pytest.raises(ServiceError, match="no temp dir"):
        server.tmp_dir  # noqa: B018 - the failed first start removed it


# ---------------------------------------------------------------------------------------------
# PostgreSQL


@pytest.fixture(scope="module")
def postgres() -> Iterator[PostgresServer]:
    with running(PostgresServer()) as server:
        yield server


@pytest.mark.postgres
async def test_postgres_database_round_trip(postgres: PostgresServer) -> None:
    url = postgres.create_database("smoke")
    assert url.endswith(f":{postgres.port}/smoke")
    connection = await asyncpg.connect(url)
    try:
        await connection.execute("CREATE TABLE t (id int PRIMARY KEY, name text)")
        await connection.execute("INSERT INTO t VALUES (1, 'one'), (2, 'two')")
        rows = await connection.fetch("SELECT name FROM t ORDER BY id")
        assert [row["name"] for row in rows] == ["one", "two"]
        assert await connection.fetchval("SELECT current_setting('listen_addresses')") == "127.0.0.1"
    finally:
        await connection.close()


@pytest.mark.postgres
async def test_postgres_for_tests_uses_shared_server_with_fresh_database(
    postgres: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(PG_URL_ENV, postgres.url)
    with postgres_for_tests() as first, postgres_for_tests() as second:
        assert first != second
        connection = await asyncpg.connect(first)
        try:
            tables = await connection.fetchval("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'")
            assert tables == 0
        finally:
            await connection.close()
    name = first.rsplit("/", 1)[1]
    admin = await asyncpg.connect(postgres.url)
    try:
        assert await admin.fetchval("SELECT count(*) FROM pg_database WHERE datname = $1", name) == 0
    finally:
        await admin.close()


@pytest.mark.postgres
async def test_postgres_for_tests_starts_its_own_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PG_URL_ENV, raising=False)
    with contextlib.ExitStack() as stack:
        try:
            url = stack.enter_context(postgres_for_tests())
        except BinaryNotFound as exc:
            pytest.skip(str(exc))
        connection = await asyncpg.connect(url)
        assert await connection.fetchval("SELECT 1") == 1
        await connection.close()
    assert port_closed(int(urllib.parse.urlsplit(url).port or 0))


# ---------------------------------------------------------------------------------------------
# SeaweedFS

BUCKET = "warehouse"
TABLE_ONE_POLICY = {
    "Statement": [
        {
            "Effect": "Allow",
            "Action": ["s3:GetObject", "s3:PutObject", "s3:ListBucket"],
            "Resource": [f"arn:aws:s3:::{BUCKET}", f"arn:aws:s3:::{BUCKET}/tbl1/*"],
        }
    ]
}


@pytest.fixture(scope="module")
def seaweed() -> Iterator[SeaweedS3]:
    config = seaweed_iam_config({"vended": TABLE_ONE_POLICY})
    with running(SeaweedS3(iam_config=config, buckets=[BUCKET])) as server:
        admin = server.client()
        for key in ("tbl1/data.txt", "tbl2/data.txt"):
            admin.put_object(Bucket=BUCKET, Key=key, Body=b"hello")
        yield server


def _error_code(call: Any, **kwargs: Any) -> str | None:
    try:
        call(**kwargs)
    except ClientError as exc:
        return exc.response["Error"]["Code"]
    return None


@pytest.mark.s3
def test_seaweed_put_get_and_signature_checks(seaweed: SeaweedS3) -> None:
    s3 = seaweed.client()
    s3.put_object(Bucket=BUCKET, Key="smoke/a.txt", Body=b"payload")
    assert s3.get_object(Bucket=BUCKET, Key="smoke/a.txt")["Body"].read() == b"payload"

    forged = seaweed.client(aws_access_key_id=seaweed.access_key, aws_secret_access_key="wrong-secret")
    assert _error_code(forged.get_object, Bucket=BUCKET, Key="smoke/a.txt") == "SignatureDoesNotMatch"


@pytest.mark.s3
def test_seaweed_presigned_url_is_validated(seaweed: SeaweedS3) -> None:
    url = seaweed.client().generate_presigned_url(
        "get_object", Params={"Bucket": BUCKET, "Key": "tbl1/data.txt"}, ExpiresIn=60
    )
    with urllib.request.urlopen(url, timeout=5) as response:
        assert response.read() == b"hello"

    assert "X-Amz-Signature=" in url  # SigV4, as Iceberg clients use
    tampered = url[:-1] + ("1" if url[-1] == "0" else "0")  # the signature is the last parameter
    with pytest.raises(urllib.error.HTTPError) as excinfo:
        urllib.request.urlopen(tampered, timeout=5)
    assert excinfo.value.code == 403


@pytest.mark.s3
def test_seaweed_sts_enforces_role_and_session_policies(seaweed: SeaweedS3) -> None:
    sts = seaweed.client("sts")

    def assumed(**kwargs: Any) -> Any:
        credentials = sts.assume_role(
            RoleArn=seaweed_role_arn("vended"), RoleSessionName="smoke", DurationSeconds=900, **kwargs
        )["Credentials"]
        assert credentials["AccessKeyId"] != seaweed.access_key
        return seaweed.client(
            aws_access_key_id=credentials["AccessKeyId"],
            aws_secret_access_key=credentials["SecretAccessKey"],
            aws_session_token=credentials["SessionToken"],
        )

    role_only = assumed()
    assert role_only.get_object(Bucket=BUCKET, Key="tbl1/data.txt")["Body"].read() == b"hello"
    assert _error_code(role_only.put_object, Bucket=BUCKET, Key="tbl1/new.txt", Body=b"x") is None
    assert _error_code(role_only.get_object, Bucket=BUCKET, Key="tbl2/data.txt") == "AccessDenied"

    read_only = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": ["s3:GetObject"], "Resource": [f"arn:aws:s3:::{BUCKET}/tbl1/*"]}],
    }
    narrowed = assumed(Policy=json.dumps(read_only))
    assert narrowed.get_object(Bucket=BUCKET, Key="tbl1/data.txt")["Body"].read() == b"hello"
    assert _error_code(narrowed.put_object, Bucket=BUCKET, Key="tbl1/denied.txt", Body=b"x") == "AccessDenied"


# ---------------------------------------------------------------------------------------------
# OpenBao


def test_openbao_userpass_kv_and_relogin_after_restart() -> None:
    with running(OpenBaoServer()) as bao:
        access = bao.add_userpass_kv(mount="lakekeeper", user="lk")
        client = hvac.Client(url=access.url)
        client.auth.userpass.login(username=access.user, password=access.password)
        kv = client.secrets.kv.v2
        kv.create_or_update_secret(path="warehouse/s3", secret={"key": "v1"}, mount_point=access.mount)
        read = kv.read_secret_version(path="warehouse/s3", mount_point=access.mount, raise_on_deleted_version=True)
        assert read["data"]["data"] == {"key": "v1"}
        with pytest.raises(Forbidden):
            kv.read_secret_version(path="anything", mount_point="secret", raise_on_deleted_version=True)

        bao.stop()
        assert port_closed(bao.port)
        bao.start()

        # Dev mode forgets tokens on restart: the old one is refused, a new login works.
        with pytest.raises(Forbidden):
            kv.create_or_update_secret(path="warehouse/s3", secret={"key": "v2"}, mount_point=access.mount)
        client.auth.userpass.login(username=access.user, password=access.password)
        kv.create_or_update_secret(path="warehouse/s3", secret={"key": "v2"}, mount_point=access.mount)
        read = kv.read_secret_version(path="warehouse/s3", mount_point=access.mount, raise_on_deleted_version=True)
        assert read["data"]["data"] == {"key": "v2"}


# ---------------------------------------------------------------------------------------------
# NATS


async def test_nats_pub_sub_and_jetstream_survive_restart() -> None:
    with running(NatsServer()) as server:
        connection = await nats.connect(server.url, allow_reconnect=False)
        subscription = await connection.subscribe("smoke.core")
        await connection.publish("smoke.core", b"ping")
        assert (await subscription.next_msg(timeout=2)).data == b"ping"
        jetstream = connection.jetstream()
        await jetstream.add_stream(name="SMOKE", subjects=["smoke.js.>"])
        assert (await jetstream.publish("smoke.js.a", b"one")).seq == 1
        await connection.close()

        server.stop()
        assert port_closed(server.port)
        server.start()

        connection = await nats.connect(server.url, allow_reconnect=False)
        ack = await connection.jetstream().publish("smoke.js.a", b"two")
        assert (ack.stream, ack.seq) == ("SMOKE", 2)  # the stream was kept on disk
        await connection.close()


# ---------------------------------------------------------------------------------------------
# Kafka protocol (Tansu)


async def _kafka_round_trip(
    bootstrap: str, topic: str, *, group: bool
) -> list[tuple[bytes, bytes, list[tuple[str, bytes]]]]:
    await create_kafka_topic(bootstrap, topic)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        metadata = await producer.send_and_wait(topic, b"value", key=b"key", headers=[("h", b"1")])
        assert metadata.offset == 0
    finally:
        await producer.stop()
    group_id = f"g-{uuid.uuid4().hex[:6]}" if group else None  # joining a group costs Tansu ~5 s
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group_id, auto_offset_reset="earliest")
    await consumer.start()
    try:
        record = await consumer.getone()
        return [(record.key, record.value, list(record.headers))]
    finally:
        await consumer.stop()


async def test_kafka_produce_consume_and_restart() -> None:
    with running(KafkaBroker()) as broker:
        expected = [(b"key", b"value", [("h", b"1")])]
        assert await _kafka_round_trip(broker.bootstrap_servers, "smoke", group=True) == expected
        broker.stop()
        assert port_closed(broker.port)
        broker.start()
        # Memory storage: the restarted broker is empty, so the same topic starts at offset 0 again.
        assert await _kafka_round_trip(broker.bootstrap_servers, "smoke", group=False) == expected


# ---------------------------------------------------------------------------------------------
# Spark: no JVM of its own here. The run's shared session (tests/conftest.py ``spark``) proves the
# jars and Iceberg on every test of tests/spark/, and s3a against SeaweedFS in
# plugins/storage-s3/tests/test_clients.py::test_spark_writes_and_reads_an_s3a_table_through_the_catalog.


def test_spark_snippet_is_valid_python_for_the_catalog() -> None:
    snippet = spark_snippet("http://127.0.0.1:8181/catalog", "demo")
    compile(snippet, "<snippet>", "exec")
    assert "'spark.sql.catalog.lakekeeper.uri', 'http://127.0.0.1:8181/catalog'" in snippet
    assert "iceberg-spark-runtime-3.5_2.12" in snippet
    # offline it cannot work as it is: its first line says so, and what to run instead
    assert snippet.startswith(
        "# fetches the Iceberg runtime from Maven Central; offline, run scripts/build-spark-jars.sh")


def test_the_connection_help_says_first_whether_spark_works_offline(monkeypatch) -> None:
    """The banner's build_spark_session snippet: offline it needs the jars scripts/build-spark-jars.sh builds,
    and the line introducing it says so before the code (issue 32)."""
    from lakekeeper_host.runtime import snippets

    missing = ["iceberg-shaded-jackson.jar and iceberg-shaded-httpclient5.jar: scripts/build-spark-jars.sh"]
    monkeypatch.setattr(snippets, "offline_jars_missing", lambda: missing)
    text = snippets.connection_snippets("http://127.0.0.1:8181/catalog", "demo")
    intro, code = text.split("PySpark with this package", 1)[1].split("\n", 1)
    assert "offline, first install" in intro and "scripts/build-spark-jars.sh" in intro
    assert code.lstrip().startswith("from lakekeeper_host.engines.spark import build_spark_session")
    monkeypatch.setattr(snippets, "offline_jars_missing", lambda: [])
    ready = snippets.connection_snippets("http://127.0.0.1:8181/catalog", "demo")
    assert "works offline: the Iceberg jars are on this machine" in ready


# ---------------------------------------------------------------------------------------------
# DuckDB


class _StubCatalog(JsonHandler):
    """Just enough Iceberg REST for DuckDB's ATTACH: config plus a namespace listing."""

    seen: ClassVar[list[tuple[str, str | None]]] = []

    def do_GET(self) -> None:
        self.seen.append((self.path, self.headers.get("Authorization")))
        if self.path.startswith("/v1/config"):
            body: dict[str, Any] = {"defaults": {}, "overrides": {"prefix": "wh"}}
        elif self.path.startswith("/v1/wh/namespaces"):
            body = {"namespaces": [["sales"], ["ops"]]}
        else:
            self.send_error(404)
            return
        self.send_json(200, body)


@pytest.mark.duckdb
def test_duckdb_loads_extensions_offline_and_attaches_with_token() -> None:
    con = connect_duckdb()
    loaded = {name for (name,) in con.execute("SELECT extension_name FROM duckdb_extensions() WHERE loaded").fetchall()}
    assert {"iceberg", "httpfs", "avro"} <= loaded

    server = ThreadingHTTPServer(("127.0.0.1", 0), _StubCatalog)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        attach_catalog(con, "lk", f"http://127.0.0.1:{server.server_port}", "demo", token="t0k'en")
        schemas = con.execute("SELECT schema_name FROM duckdb_schemas() WHERE database_name = 'lk'").fetchall()
    finally:
        con.close()
        server.shutdown()
        server.server_close()
        thread.join()
    assert sorted(name for (name,) in schemas) == ["ops", "sales"]
    assert ("/v1/config?warehouse=demo", "Bearer t0k'en") in _StubCatalog.seen
    assert all(auth == "Bearer t0k'en" for _, auth in _StubCatalog.seen)
