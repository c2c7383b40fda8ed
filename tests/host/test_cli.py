"""The CLI: one-line errors naming the variable, non-zero exits, migrate/serve behaviour."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time

import httpx
import pytest

from lakekeeper_testing.services import free_port

pytestmark = pytest.mark.slow  # every test runs the CLI as a subprocess


def run_cli(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("LAKEKEEPER__", "ICEBERG_REST__"))}
    base.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "lakekeeper_host", *args],
        env=base,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.parametrize(
    "env, variable",
    [
        ({"LAKEKEEPER__LISTEN_PORT": "abc"}, "LAKEKEEPER__LISTEN_PORT"),
        ({"LAKEKEEPER__AUTHZ_BACKEND": "opnfga"}, "LAKEKEEPER__AUTHZ_BACKEND"),
        ({"LAKEKEEPER__PG_DATABASE_URL_WRITE": "mysql://x@y/z"}, "LAKEKEEPER__PG_DATABASE_URL_WRITE"),
        ({"LAKEKEEPER__PG_DATABASE_URL_WRITE": "postgresql://u@h:notaport/db"}, "LAKEKEEPER__PG_DATABASE_URL_WRITE"),
        ({"LAKEKEEPER__PG_HOST_W": "db.example"}, "LAKEKEEPER__PG_DATABASE"),
        ({"LAKEKEEPER__STRICT_CONFIG": "true", "LAKEKEEPER__LISTEN_PROT": "1"}, "LAKEKEEPER__LISTEN_PROT"),
        ({"LAKEKEEPER__ALLOWED_STORAGE_ENDPOINTS": "10.0.0.0/40"}, "LAKEKEEPER__ALLOWED_STORAGE_ENDPOINTS"),
    ],
)
def test_bad_config_is_one_line_naming_the_variable(env, variable, tmp_path):
    env = {"LAKEKEEPER__DATA_DIR": str(tmp_path), **env}
    result = run_cli("serve", env=env)
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if line.startswith("lakekeeper: error:")]
    assert len(lines) == 1, result.stderr
    assert variable in lines[0]
    assert "Traceback" not in result.stderr


def test_version_and_plugins():
    version = run_cli("version")
    assert version.returncode == 0 and version.stdout.strip()
    plugins = run_cli("plugins")
    assert plugins.returncode == 0, plugins.stderr
    names = {p["name"] for p in json.loads(plugins.stdout)}
    assert "lakekeeper_host.builtins.storage_file" in names


def test_migrate_embedded_is_idempotent(tmp_path):
    env = {"LAKEKEEPER__DATA_DIR": str(tmp_path)}
    first = run_cli("migrate", env=env)
    assert first.returncode == 0, first.stderr
    assert "applied: 0001_initial" in first.stdout
    second = run_cli("migrate", env=env)
    assert second.returncode == 0 and "up to date" in second.stdout


def test_authz_reconcile_needs_a_migrated_database_and_has_nothing_to_do_for_allow_all(tmp_path):
    env = {"LAKEKEEPER__DATA_DIR": str(tmp_path)}
    unmigrated = run_cli("authz", "reconcile", env=env)
    assert unmigrated.returncode == 2 and "run `lakekeeper migrate` first" in unmigrated.stderr
    assert run_cli("migrate", env=env).returncode == 0
    result = run_cli("authz", "reconcile", "--dry-run", env=env)
    assert result.returncode == 0, result.stderr
    assert "'allowall' allows everything and keeps no records" in result.stdout
    assert "allowall: would write 0, would delete 0 record(s) (dry run)" in result.stdout


@pytest.mark.postgres
def test_serve_refuses_unmigrated_postgres_then_migrate_and_wait(pg_url_factory, tmp_path):
    url = pg_url_factory()
    env = {
        "LAKEKEEPER__PG_DATABASE_URL_WRITE": url,
        "LAKEKEEPER__DATA_DIR": str(tmp_path),
        "LAKEKEEPER__LISTEN_PORT": "0",
    }
    refused = run_cli("serve", env=env)
    assert refused.returncode == 2
    assert "run `lakekeeper migrate`" in refused.stderr
    waiting = run_cli("wait-for-db", "-m", "--retries", "1", env=env)
    assert waiting.returncode == 1 and "pending" in waiting.stderr
    assert run_cli("migrate", env=env).returncode == 0
    assert run_cli("wait-for-db", "-m", "--retries", "1", env=env).returncode == 0


def test_wait_for_db_reports_unreachable_database(tmp_path):
    env = {"LAKEKEEPER__PG_DATABASE_URL_WRITE": "postgresql://postgres@127.0.0.1:1/none"}
    result = run_cli("wait-for-db", "--retries", "1", env=env)
    assert result.returncode == 1
    assert "database not ready" in result.stderr


def test_healthcheck_against_nothing_fails_cleanly():
    result = run_cli("healthcheck", "--url", "http://127.0.0.1:1")
    assert result.returncode == 1 and "unreachable" in result.stderr


def test_healthcheck_of_a_healthy_server_exits_zero(sqlite_server, tmp_path):
    """Without --url it asks 127.0.0.1 on the configured LISTEN_PORT."""
    env = {"LAKEKEEPER__LISTEN_PORT": str(sqlite_server.port), "LAKEKEEPER__DATA_DIR": str(tmp_path)}
    result = run_cli("healthcheck", env=env)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["status"] == "healthy"


def test_readme_quickstart_serves_from_an_empty_directory(tmp_path):
    """The README's first command: the `lakekeeper` console script, no configuration, an empty
    directory. Only the ports are set, so the test cannot collide with other servers on the machine."""
    lakekeeper = shutil.which("lakekeeper")
    assert lakekeeper, "`pip install -e .` puts the `lakekeeper` console script on PATH"
    port, metrics_port = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LAKEKEEPER__", "ICEBERG_REST__"))}
    env.update({"LAKEKEEPER__LISTEN_PORT": str(port), "LAKEKEEPER__METRICS__PORT": str(metrics_port)})
    process = subprocess.Popen(
        [lakekeeper, "serve"], cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, start_new_session=True,
    )
    output: list[str] = []
    reader = threading.Thread(target=lambda: output.extend(process.stdout), daemon=True)
    reader.start()
    base = f"http://127.0.0.1:{port}"
    try:
        health = None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and process.poll() is None:
            try:
                health = httpx.get(base + "/health", timeout=2)
                if health.status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        assert health is not None and health.json()["status"] == "healthy", "".join(output)

        # the printed PyIceberg snippet works as pasted
        printed = "".join(output)
        snippet = printed.split("PyIceberg:\n", 1)[1].split("\n\n", 1)[0]
        assert f'uri="{base}/catalog", warehouse="demo"' in snippet
        scope: dict = {}
        exec(textwrap.dedent(snippet), scope)  # noqa: S102 - the user's copy-paste, verbatim
        catalog = scope["catalog"]
        catalog.create_namespace("quickstart")
        import pyarrow as pa

        table = catalog.create_table("quickstart.hello", schema=pa.schema([("id", pa.int64())]))
        table.append(pa.table({"id": [1, 2, 3]}))
        assert catalog.load_table("quickstart.hello").scan().to_arrow().num_rows == 3
        assert f"ATTACH 'demo' AS lakekeeper (TYPE iceberg, ENDPOINT '{base}/catalog'" in printed
        assert f'build_spark_session("{base}/catalog", "demo")' in printed

        # state lives under ./lakekeeper-data: the SQLite catalog and the demo warehouse's files
        data = tmp_path / "lakekeeper-data"
        assert (data / "catalog.sqlite").is_file()
        assert list((data / "warehouses" / "demo").rglob("*.parquet"))
        assert "demo" in [w["name"] for w in httpx.get(base + "/management/v1/warehouse").json()["warehouses"]]
        # Prometheus metrics on METRICS__PORT
        metrics = httpx.get(f"http://127.0.0.1:{metrics_port}/metrics").text
        assert 'lakekeeper_http_requests_total{endpoint="/health",method="GET",status="200"}' in metrics
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
        returncode = process.wait(30)
        reader.join(5)
    assert returncode == 0, "".join(output)  # graceful shutdown on SIGTERM


def test_config_file_option_and_environment_override(tmp_path):
    from_file, from_env = tmp_path / "from-file", tmp_path / "from-env"
    config = tmp_path / "lk.toml"
    config.write_text(f'data_dir = "{from_file}"\n')
    result = run_cli("--config", str(config), "migrate")
    assert result.returncode == 0, result.stderr
    assert (from_file / "catalog.sqlite").is_file()
    overridden = run_cli("--config", str(config), "migrate", env={"LAKEKEEPER__DATA_DIR": str(from_env)})
    assert overridden.returncode == 0, overridden.stderr
    assert (from_env / "catalog.sqlite").is_file()


@pytest.mark.parametrize(
    "source, message",
    [
        (  # a hook name that is not in hookspecs.py
            "@hookimpl\ndef lakekeeper_storage_profile():\n    return []\n",
            "lakekeeper_storage_profile",
        ),
        (  # a second backend called "allowall"
            "async def _build(config, ctx):\n    return None\n\n"
            "@hookimpl\ndef lakekeeper_authorizers():\n    return [BackendSpec(name='AllowAll', factory=_build)]\n",
            "Duplicate authorizer name 'allowall'",
        ),
    ],
    ids=["misspelled-hookimpl", "duplicate-backend"],
)
def test_broken_entry_point_plugin_stops_serve_with_one_line(source, message, tmp_path):
    """An installed plugin (a dist-info with a `lakekeeper` entry point) that is wrong stops startup."""
    (tmp_path / "lk_broken_plugin.py").write_text(
        "from lakekeeper_host import hookimpl\nfrom lakekeeper_host.registry import BackendSpec\n\n" + source
    )
    dist = tmp_path / "lk_broken_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: lk-broken-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[lakekeeper]\nbroken = lk_broken_plugin\n")
    pythonpath = os.pathsep.join(p for p in (str(tmp_path), os.environ.get("PYTHONPATH")) if p)
    result = run_cli("serve", env={"PYTHONPATH": pythonpath, "LAKEKEEPER__DATA_DIR": str(tmp_path / "data"),
                                   "LAKEKEEPER__LISTEN_PORT": "0"})
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("lakekeeper: error:")]
    assert len(lines) == 1 and message in lines[0], result.stderr
    assert "Traceback" not in result.stderr
    # the same plugin, disabled by name, is not loaded and the server configuration is fine again
    disabled = run_cli("plugins", env={"PYTHONPATH": pythonpath, "LAKEKEEPER__DISABLED_PLUGINS": "broken"})
    assert disabled.returncode == 0, disabled.stderr
    assert "broken" not in {p["name"] for p in json.loads(disabled.stdout)}
