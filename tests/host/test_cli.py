"""The CLI: one-line errors naming the variable, non-zero exits, migrate/serve behaviour."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest


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
