"""Deployments written for Lakekeeper run unchanged (issue 32): the commands, flags and environment of
Lakekeeper's Helm chart (lakekeeper/lakekeeper-charts, charts/lakekeeper/templates: ``_pods.tpl``,
``_helpers.tpl``, ``config/secret-config-envs.yaml``, ``db-migration.yaml``,
``catalog/catalog-deployment.yaml``) and of its compose files (lakekeeper/lakekeeper: ``examples/minimal``,
``examples/access-control-advanced``, ``docker-compose/docker-compose.yaml``), driven against the real
PostgreSQL of the test run.

Only what a test machine needs differs: free ports instead of 8181/9000, the test database's host and
credentials, and the OpenFGA API double's HTTP address (no OpenFGA server runs here; see
``lakekeeper_testing.openfga_double``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
import yaml

from lakekeeper_testing.oidc import OidcIssuer
from lakekeeper_testing.openfga_double import OpenFgaDouble
from lakekeeper_testing.services import free_port

pytestmark = [pytest.mark.slow, pytest.mark.postgres]


def lakekeeper(*args: str, env: dict[str, str], cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lakekeeper_host", *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("lakekeeper: error:")]


def clean(**settings: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("LAKEKEEPER__", "ICEBERG_REST__")) and k != "RUST_LOG"}
    return {**env, **settings}


def helm_environment(pg_url: str, port: int, metrics_port: int) -> dict[str, str]:
    """What the chart's ``-config-envs`` Secret and ``iceberg-catalog.env`` put into every pod, for an
    external database (``externalDatabase.*``) and the postgres secret backend."""
    parts = urlsplit(pg_url)
    env = {
        "LAKEKEEPER__PG_HOST_R": parts.hostname,
        "LAKEKEEPER__PG_HOST_W": parts.hostname,
        "LAKEKEEPER__PG_PORT": str(parts.port or 5432),
        "LAKEKEEPER__PG_DATABASE": parts.path.lstrip("/"),
        "LAKEKEEPER__PG_USER": parts.username or "postgres",
        "LAKEKEEPER__PG_PASSWORD": parts.password or "",
        "LAKEKEEPER__BASE_URI": f"http://127.0.0.1:{port}",
        "LAKEKEEPER__SECRET_BACKEND": "Postgres",  # the chart's spelling
        "LAKEKEEPER__PG_ENCRYPTION_KEY": "helm-generated-encryption-key-0123456789",
        "LAKEKEEPER__PLACEHOLDER": "placeholder",  # the chart appends it to every env list
        # the machine's, not the chart's: free ports (the chart uses 8181 and 9000)
        "LAKEKEEPER__LISTEN_PORT": str(port),
        "LAKEKEEPER__METRICS__PORT": str(metrics_port),
        # and a proof that none of the chart's variables is unknown here
        "LAKEKEEPER__STRICT_CONFIG": "true",
    }
    return clean(**env)


@contextmanager
def serving(*args: str, env: dict[str, str], cwd: Path, port: int) -> Iterator[subprocess.Popen]:
    """``lakekeeper <args>`` until its /health answers 200, as the chart's readiness probe asks."""
    log = open(cwd / f"serve-{port}.log", "w")
    process = subprocess.Popen([sys.executable, "-m", "lakekeeper_host", *args], env=env, cwd=cwd,
                               stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and process.poll() is None:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        else:
            pytest.fail("not serving:\n" + (cwd / f"serve-{port}.log").read_text())
        yield process
    finally:
        if process.poll() is None:
            os.killpg(process.pid, 15)
            process.wait(30)
        log.close()


def test_the_helm_charts_commands_and_environment(pg_url_factory, tmp_path):
    port, metrics_port = free_port(), free_port()
    env = helm_environment(pg_url_factory(), port, metrics_port)

    # the Deployment's init container (`check-db`, awaitMigration: true) waits for migrations ...
    init = subprocess.Popen([sys.executable, "-m", "lakekeeper_host", "wait-for-db", "-dm", "-r", "100", "-b", "2"],
                            env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # ... while the migration Job runs: its init container (`-d`), then `migrate`
        job_init = lakekeeper("wait-for-db", "-d", "-r", "100", "-b", "2", env=env, cwd=tmp_path)
        assert job_init.returncode == 0, job_init.stderr
        migrate = lakekeeper("migrate", env=env, cwd=tmp_path)
        assert migrate.returncode == 0, migrate.stderr
        out, err = init.communicate(timeout=60)
    finally:
        if init.poll() is None:
            init.kill()
    assert init.returncode == 0, err
    assert "database is ready and migrated" in out

    # the Deployment's container: `serve`, probed at /health on the API port
    with serving("serve", env=env, cwd=tmp_path, port=port):
        health = httpx.get(f"http://127.0.0.1:{port}/health", timeout=10).json()
        assert health["health"] == "ok" and set(health["services"]) == {"catalog", "secrets", "auth"}
        assert {s["name"] for s in health["services"]["catalog"]} == {"read_pool", "write_pool"}
        assert all(s["status"] == "ok" and isinstance(s["lastCheck"], int)
                   for services in health["services"].values() for s in services)
        assert health["maintenance_mode"] == "off"
        # the compose files' container health check (no flag), and Lakekeeper's flags
        for flags in ((), ("-a",), ("-d",), ("-s",), ("-d", "-s")):
            checked = lakekeeper("healthcheck", *flags, env=env, cwd=tmp_path)
            assert checked.returncode == 0, (flags, checked.stderr)
            assert "httpx" not in checked.stderr and "HTTP Request" not in checked.stderr  # no library log line
        assert json.loads(lakekeeper("healthcheck", env=env, cwd=tmp_path).stdout)["health"] == "ok"
        # the chart's pod annotations: Prometheus scrapes the metrics port; Lakekeeper's dashboard names
        metrics = httpx.get(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10).text
        assert 'axum_http_requests_total{endpoint="/health",method="GET",status="200"}' in metrics
        assert "axum_http_requests_duration_seconds_bucket{" in metrics
        assert 'lakekeeper_cache_misses_total{cache_type="warehouse"}' in metrics or \
            "lakekeeper_cache_hits_total" in metrics
        # the chart's bootstrap test (templates/tests/bootstrap.yaml) and Lakekeeper's recovery path
        bootstrap = {"accept-terms-of-use": True}
        assert httpx.post(f"http://127.0.0.1:{port}/management/v1/bootstrap", json=bootstrap).status_code == 204
        assert httpx.post(f"http://127.0.0.1:{port}/management/v1/bootstrap", json=bootstrap).status_code == 400
        refused = lakekeeper("reopen-bootstrap", env=env, cwd=tmp_path)
        assert refused.returncode == 1 and "--yes" in refused.stderr
        reopened = lakekeeper("reopen-bootstrap", "--yes", env=env, cwd=tmp_path)
        assert reopened.returncode == 0, reopened.stderr
        server_id = httpx.get(f"http://127.0.0.1:{port}/management/v1/info").json()["server-id"]
        assert f"server id: {server_id}" in reopened.stdout  # the server id stays
        assert httpx.post(f"http://127.0.0.1:{port}/management/v1/bootstrap", json=bootstrap).status_code == 204

    # `management-openapi`, as Lakekeeper's docs generate the Management API document
    document = lakekeeper("management-openapi", env=env, cwd=tmp_path)
    assert document.returncode == 0, document.stderr
    assert "/management/v1/warehouse" in yaml.safe_load(document.stdout)["paths"]

    # the version guard: a database migrated by a newer version (here: one more migration than this
    # server knows) refuses `serve` and `wait-for-db -m` at once; `serve -f` starts anyway
    newer = lakekeeper_sql(env, "INSERT INTO lk_migrations (version, name, applied_at) VALUES (9999, 'future', 0)")
    assert newer == 0
    refused = lakekeeper("serve", env=env, cwd=tmp_path)
    assert refused.returncode == 2 and len(error_lines(refused.stderr)) == 1, refused.stderr
    assert "migrated by a newer lakekeeper-host" in refused.stderr and "--force-start" in refused.stderr
    assert "Traceback" not in refused.stderr
    started = time.monotonic()
    waited = lakekeeper("wait-for-db", "-dm", "-r", "100", "-b", "2", env=env, cwd=tmp_path)
    assert waited.returncode == 2 and "newer" in waited.stderr and time.monotonic() - started < 30
    with serving("serve", "-f", env=env, cwd=tmp_path, port=port):
        assert httpx.get(f"http://127.0.0.1:{port}/health", timeout=10).json()["health"] == "ok"
    assert "starting anyway (--force-start)" in (tmp_path / f"serve-{port}.log").read_text()


def lakekeeper_sql(env: dict[str, str], sql: str) -> int:
    """Run one statement on the chart's database (what a newer release's `migrate` would have left)."""
    code = (
        "import asyncio, sys\n"
        "from lakekeeper_host.config import load_settings\n"
        "from lakekeeper_host.store import Store\n"
        "async def run():\n"
        "    store = Store.from_settings(load_settings())\n"
        "    await store.connect()\n"
        "    try:\n"
        f"        await store.execute({sql!r})\n"
        "    finally:\n"
        "        await store.disconnect()\n"
        "asyncio.run(run())\n"
    )
    return subprocess.run([sys.executable, "-c", code], env=env, timeout=60).returncode


def test_the_compose_files_environments(pg_url_factory, tmp_path):
    """examples/minimal (the legacy ICEBERG_REST__ prefix, RUST_LOG) and examples/access-control-advanced
    (OpenFGA, OIDC, the console's settings, request-body logging)."""
    url = pg_url_factory()
    port = free_port()
    minimal = clean(
        ICEBERG_REST__BASE_URI=f"http://127.0.0.1:{port}",
        ICEBERG_REST__PG_ENCRYPTION_KEY="This-is-NOT-Secure!",
        ICEBERG_REST__PG_DATABASE_URL_READ=url,
        ICEBERG_REST__PG_DATABASE_URL_WRITE=url,
        RUST_LOG="trace,axum=trace,sqlx=trace,iceberg-catalog=trace",
        LAKEKEEPER__LISTEN_PORT=str(port),
        LAKEKEEPER__METRICS__PORT=str(free_port()),
        LAKEKEEPER__STRICT_CONFIG="true",
    )
    migrate = lakekeeper("migrate", env={**minimal, "RUST_LOG": "info"}, cwd=tmp_path)
    assert migrate.returncode == 0, migrate.stderr
    with serving("serve", env=minimal, cwd=tmp_path, port=port):
        assert lakekeeper("healthcheck", env=minimal, cwd=tmp_path).returncode == 0

    # access-control-advanced, with its OpenFGA address as Lakekeeper writes it: the gRPC port
    with OidcIssuer("iceberg", audience="lakekeeper") as idp:
        double = OpenFgaDouble().start()
        try:
            url = pg_url_factory()
            port = free_port()
            advanced = clean(
                LAKEKEEPER__BASE_URI=f"http://127.0.0.1:{port}",
                LAKEKEEPER__PG_ENCRYPTION_KEY="This-is-NOT-Secure!",
                LAKEKEEPER__PG_DATABASE_URL_READ=url,
                LAKEKEEPER__PG_DATABASE_URL_WRITE=url,
                LAKEKEEPER__AUTHZ_BACKEND="openfga",
                LAKEKEEPER__OPENFGA__ENDPOINT="http://127.0.0.1:8081",
                LAKEKEEPER__OPENFGA__MAX_BATCH_CHECK_SIZE="200",
                LAKEKEEPER__OPENID_PROVIDER_URI=idp.issuer,
                LAKEKEEPER__OPENID_ADDITIONAL_ISSUERS="http://localhost:30080/realms/iceberg",
                LAKEKEEPER__OPENID_AUDIENCE="lakekeeper",
                LAKEKEEPER__UI__OPENID_CLIENT_ID="lakekeeper",
                LAKEKEEPER__UI__OPENID_PROVIDER_URI="http://localhost:30080/realms/iceberg",
                LAKEKEEPER__DEBUG__LOG_REQUEST_BODIES="true",
                RUST_LOG="info,lakekeeper=debug",
                LAKEKEEPER__LISTEN_PORT=str(port),
                LAKEKEEPER__METRICS__PORT=str(free_port()),
                LAKEKEEPER__STRICT_CONFIG="true",
            )
            grpc = lakekeeper("migrate", env=advanced, cwd=tmp_path)
            assert grpc.returncode == 2 and len(error_lines(grpc.stderr)) == 1, grpc.stderr
            assert "LAKEKEEPER__OPENFGA__ENDPOINT" in grpc.stderr and "http://127.0.0.1:8080" in grpc.stderr
            advanced["LAKEKEEPER__OPENFGA__ENDPOINT"] = double.url  # OpenFGA's HTTP port
            migrate = lakekeeper("migrate", env=advanced, cwd=tmp_path)
            assert migrate.returncode == 0, migrate.stderr
            with serving("serve", env=advanced, cwd=tmp_path, port=port):
                token = idp.mint("peter", {"name": "Peter"})
                answer = httpx.post(f"http://127.0.0.1:{port}/management/v1/bootstrap",
                                    json={"accept-terms-of-use": True},
                                    headers={"Authorization": f"Bearer {token}"}, timeout=30)
                assert answer.status_code == 204, answer.text
                for args in (("--mode", "add-missing"), ("--mode", "add-and-delete-drift", "--dry-run"), ()):
                    reconciled = lakekeeper("openfga", "reconcile", *args, env=advanced, cwd=tmp_path)
                    assert reconciled.returncode == 0, (args, reconciled.stderr)
                    assert "openfga: " in reconciled.stdout
            log = (tmp_path / f"serve-{port}.log").read_text()
            # DEBUG__LOG_REQUEST_BODIES with lakekeeper=debug: the bootstrap body, its token redacted
            assert "accept-terms-of-use" in log and token not in log
        finally:
            double.stop()
