"""The PostgreSQL connection settings Lakekeeper has: PG_SCHEMA, PG_SSL_MODE, PG_SSL_ROOT_CERT,
PG_ACQUIRE_TIMEOUT.

Against the real PostgreSQL of the test run (fresh databases from ``pg_url_factory``) and, for TLS,
a throwaway cluster of our own that serves a certificate signed by a throwaway CA.
"""

from __future__ import annotations

import asyncio
import ssl
import uuid

import asyncpg
import httpx
import pytest

from lakekeeper_host.config import ConfigError
from lakekeeper_host.store import Store
from lakekeeper_host.store.db import PoolTimeout
from lakekeeper_host.store.migrate import migrate
from lakekeeper_testing.server import create_file_warehouse
from lakekeeper_testing.services import PostgresServer, self_signed_chain

pytestmark = pytest.mark.slow  # needs PostgreSQL and server processes


def _asyncpg(url: str) -> str:
    return url.replace("postgresql://", "postgresql+asyncpg://", 1)


async def _tables_by_schema(url: str) -> dict[str, set[str]]:
    connection = await asyncpg.connect(url)
    try:
        rows = await connection.fetch(
            "SELECT table_schema, table_name FROM information_schema.tables "
            "WHERE table_schema NOT IN ('pg_catalog', 'information_schema')"
        )
    finally:
        await connection.close()
    found: dict[str, set[str]] = {}
    for row in rows:
        found.setdefault(row["table_schema"], set()).add(row["table_name"])
    return found


def test_two_catalogs_share_one_database_in_their_own_schemas(pg_url_factory, lakekeeper_server_factory, tmp_path):
    url = pg_url_factory()
    servers = [lakekeeper_server_factory({"LAKEKEEPER__PG_SCHEMA": schema}, pg_url=url)
               for schema in ("tenant_a", "tenant_b")]
    try:
        for index, server in enumerate(servers):
            root = tmp_path / f"wh{index}"
            root.mkdir()
            create_file_warehouse(server.url, "same-name", str(root))  # the same name: separate catalogs
        for server, other in (servers, servers[::-1]):
            listed = httpx.get(f"{server.url}/management/v1/warehouse", timeout=30).json()["warehouses"]
            assert [w["name"] for w in listed] == ["same-name"]
            other_listed = httpx.get(f"{other.url}/management/v1/warehouse", timeout=30).json()["warehouses"]
            assert listed[0]["id"] != other_listed[0]["id"]
    finally:
        for server in servers:
            server.close()
    tables = asyncio.run(_tables_by_schema(url))
    assert {"lk_migrations", "warehouse", "tabular", "secret"} <= tables["tenant_a"]
    assert tables["tenant_a"] == tables["tenant_b"]
    assert "public" not in tables  # nothing landed in the default schema


async def test_ssl_mode_against_the_test_runs_postgres(pg_url_factory):
    url = pg_url_factory()
    plain = Store(_asyncpg(url), ssl_mode="disable")
    await plain.connect()
    try:
        server_ssl = await plain.fetch_val("SHOW ssl") == "on"
        ssl_query = "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()"
        assert await plain.fetch_val(ssl_query) is False
    finally:
        await plain.disconnect()

    for store in (Store(_asyncpg(url), ssl_mode="require"), Store(_asyncpg(url) + "?sslmode=require")):
        if server_ssl:
            await store.connect()
            try:
                assert await store.fetch_val(ssl_query) is True
            finally:
                await store.disconnect()
        else:  # this PostgreSQL has no TLS: asking for it must fail, not fall back to plain text
            with pytest.raises(ConnectionError, match="(?i)ssl"):
                await store.connect()

    with pytest.raises(ConfigError, match="LAKEKEEPER__PG_SSL_MODE: 'required' is not one of disable"):
        Store(_asyncpg(url), ssl_mode="required")
    with pytest.raises(ConfigError, match="LAKEKEEPER__PG_SCHEMA: 'a;drop' is not a plain identifier"):
        Store(_asyncpg(url), schema="a;drop")


async def test_waiting_for_a_pooled_connection_is_bounded_by_the_acquire_timeout(pg_url_factory):
    store = Store(_asyncpg(pg_url_factory()), pool=(1, 1), acquire_timeout=0.5)
    await store.connect()
    holding, release = asyncio.Event(), asyncio.Event()

    async def hold_the_only_connection() -> None:
        async with store.transaction() as tx:
            await tx.fetch_val("SELECT 1")
            holding.set()
            await release.wait()

    holder = asyncio.create_task(hold_the_only_connection())
    try:
        await holding.wait()
        with pytest.raises(PoolTimeout) as info:
            async with store.transaction():
                pass
        assert info.value.code == 503 and info.value.type == "DatabaseConnectionTimeout"
        assert "LAKEKEEPER__PG_ACQUIRE_TIMEOUT" in info.value.message
        assert info.value.headers == {"Retry-After": "1"}
        with pytest.raises(PoolTimeout):
            await store.fetch_val("SELECT 1")  # reads wait on the same bound
        release.set()
        await holder
        assert await store.fetch_val("SELECT 2") == 2  # the timed-out waits left the pool whole
        assert await migrate(store) != []  # and a transaction works again
    finally:
        release.set()
        await holder
        await store.disconnect()


SSL_QUERY = "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()"


@pytest.fixture(scope="module")
def tls_postgres():
    with PostgresServer(tls=True) as server:
        yield server


async def _uses_tls(store: Store) -> bool:
    await store.connect()
    try:
        return await store.fetch_val(SSL_QUERY)
    finally:
        await store.disconnect()


async def test_ssl_modes_and_root_certificate_against_a_tls_server(tls_postgres, tmp_path):
    url = _asyncpg(tls_postgres.create_database(f"tls_{uuid.uuid4().hex[:8]}"))
    ca = str(tls_postgres.ca_path)
    assert await _uses_tls(Store(url, ssl_mode="disable")) is False
    assert await _uses_tls(Store(url, ssl_mode="require")) is True
    assert await _uses_tls(Store(url + "?sslmode=require")) is True
    assert await _uses_tls(Store(url, ssl_mode="verify-full", ssl_root_cert=ca)) is True
    assert await _uses_tls(Store(url, ssl_mode="verify-ca", ssl_root_cert=ca)) is True

    foreign_ca = tmp_path / "other-ca.pem"
    foreign_ca.write_bytes(self_signed_chain("127.0.0.1")[0])
    with pytest.raises(ssl.SSLCertVerificationError):  # a server the given CA did not sign
        await _uses_tls(Store(url, ssl_mode="verify-full", ssl_root_cert=str(foreign_ca)))
    with pytest.raises(ssl.SSLCertVerificationError):  # require with a root certificate verifies, as libpq
        await _uses_tls(Store(url, ssl_mode="require", ssl_root_cert=str(foreign_ca)))

    with pytest.raises(ConfigError, match="LAKEKEEPER__PG_SSL_ROOT_CERT: needs LAKEKEEPER__PG_SSL_MODE require"):
        Store(url, ssl_mode="prefer", ssl_root_cert=ca)
    with pytest.raises(ConfigError, match="LAKEKEEPER__PG_SSL_ROOT_CERT: cannot read"):
        Store(url, ssl_mode="verify-full", ssl_root_cert=str(tmp_path / "missing.pem"))


def test_a_server_verifying_its_database_keeps_every_connection_on_tls(
    tls_postgres, tmp_path, lakekeeper_server_factory
):
    plain_url = tls_postgres.create_database(f"tls_{uuid.uuid4().hex[:8]}")
    env = {"LAKEKEEPER__PG_SSL_MODE": "verify-full", "LAKEKEEPER__PG_SSL_ROOT_CERT": str(tls_postgres.ca_path)}
    server = lakekeeper_server_factory(env, pg_url=plain_url)
    try:
        create_file_warehouse(server.url, "over-tls", str(tmp_path))
        database = plain_url.rsplit("/", 1)[1]

        async def sessions() -> list[tuple[str, bool]]:
            connection = await asyncpg.connect(plain_url, ssl="disable")
            try:
                rows = await connection.fetch(
                    "SELECT a.application_name, s.ssl FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid) "
                    "WHERE a.datname = $1 AND a.pid <> pg_backend_pid()",
                    database,
                )
            finally:
                await connection.close()
            return [(r["application_name"], r["ssl"]) for r in rows]

        found = asyncio.run(sessions())
    finally:
        server.close()
    assert found and all(on_tls for _, on_tls in found), found
    assert "lakekeeper-change-feed" in {name for name, _ in found}  # the LISTEN connection too


async def test_a_connection_lost_before_begin_is_a_503_and_the_task_gets_a_fresh_one(pg_url_factory):
    """A long-lived task (a task-queue poller) whose connection died under it: the transaction it
    tries is a 503 ``DatabaseUnavailable``, and its next one runs on a fresh connection (it used to
    keep the dead one for ever; found by tests/drills/test_outages.py)."""
    from lakekeeper_host.store.db import DatabaseUnavailable

    store = Store(_asyncpg(pg_url_factory()), pool=(1, 1))
    await store.connect()
    try:
        with pytest.raises(DatabaseUnavailable) as info:
            async with store._write.connection() as raw:  # this task's connection ...
                raw.terminate()  # ... dies, as in a database restart
                async with store.transaction() as tx:  # BEGIN on the dead connection
                    await tx.fetch_val("SELECT 1")
        assert info.value.code == 503 and info.value.to_model()["error"]["type"] == "DatabaseUnavailable"
        for _ in range(3):  # the same task again: every transaction works
            async with store.transaction() as tx:
                assert await tx.fetch_val("SELECT 1") == 1
        assert await store.fetch_val("SELECT 2") == 2
    finally:
        await store.disconnect()


# ---------------------------------------------------------------- Lakekeeper's pool settings (issue 32)


async def _backend_pid(store: Store) -> int:
    return await store.fetch_val("SELECT pg_backend_pid()")


async def test_test_before_acquire_replaces_a_connection_that_fails_its_test(pg_url_factory):
    """PG_TEST_BEFORE_ACQUIRE: every connection is tried (SELECT 1) before it is handed out; one that
    fails (here: the server ends it during the test, as after a failover or an idle timeout on the
    way) is closed and a fresh one answers the request instead of a 503."""
    from lakekeeper_host.store.db import PoolOptions

    store = Store(_asyncpg(pg_url_factory()), pool=(1, 1),
                  pool_options=PoolOptions(test_before_acquire=True, log_statements=True))
    await store.connect()
    guard = store._write.guard
    probe, killed = guard.probe, []

    async def probe_that_dies_once(connection) -> None:
        if not killed:
            killed.append(await connection.fetchval("SELECT pg_backend_pid()"))
            await connection.execute("SELECT pg_terminate_backend(pg_backend_pid())")
        await probe(connection)

    guard.probe = probe_that_dies_once
    try:
        pid = await _backend_pid(store)
        assert killed and pid != killed[0]  # answered, on a fresh connection
        assert await _backend_pid(store) == pid  # which passes its test from now on
    finally:
        await store.disconnect()


async def test_connection_max_lifetime_replaces_old_connections(pg_url_factory):
    from lakekeeper_host.store.db import PoolOptions

    store = Store(_asyncpg(pg_url_factory()), pool=(1, 1), pool_options=PoolOptions(max_lifetime=0.3))
    await store.connect()
    try:
        first = await _backend_pid(store)
        assert await _backend_pid(store) == first  # young: kept
        await asyncio.sleep(0.5)
        assert await _backend_pid(store) != first  # old: closed when handed out, a new one answers
    finally:
        await store.disconnect()


async def test_statement_logging_logs_statements_without_their_values(pg_url_factory, caplog):
    import logging

    from lakekeeper_host.store.db import PoolOptions

    store = Store(_asyncpg(pg_url_factory()), pool=(1, 1), pool_options=PoolOptions(log_statements=True))
    await store.connect()
    try:
        with caplog.at_level(logging.INFO, logger="lakekeeper_host.store.statements"):
            assert await store.fetch_val("SELECT CAST(:secret AS text)", {"secret": "hunter2"}) == "hunter2"
    finally:
        await store.disconnect()
    logged = [r.getMessage() for r in caplog.records if r.name == "lakekeeper_host.store.statements"]
    assert any("SELECT CAST($1 AS text)" in line and " ms " in line for line in logged), logged
    assert not any("hunter2" in line for line in logged)
