"""What a new operator sees at startup (issue 25): a production configuration refuses to run on
the embedded SQLite, and the banner names the backends that are actually active."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from lakekeeper_testing.services import free_port

pytestmark = pytest.mark.slow  # every test starts a server process

REPO = Path(__file__).parents[2]
PRODUCTION = str(REPO / "config" / "production.toml")


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LAKEKEEPER__", "ICEBERG_REST__"))}
    env.update(extra)
    return env


def run_cli(*args: str, env: dict[str, str], cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "lakekeeper_host", *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=60
    )


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("lakekeeper: error:")]


@contextlib.contextmanager
def serving(*args: str, env: dict[str, str], cwd: Path,
            entry: tuple[str, ...] = ("-m", "lakekeeper_host")) -> Iterator[list[str]]:
    """``lakekeeper <args> serve`` until /health answers; yields the output lines so far (and later)."""
    port = int(env["LAKEKEEPER__LISTEN_PORT"])
    process = subprocess.Popen(
        [sys.executable, *entry, *args, "serve"], cwd=cwd, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )
    output: list[str] = []
    reader = threading.Thread(target=lambda: output.extend(process.stdout), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and process.poll() is None:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                    break
            time.sleep(0.1)
        else:
            pytest.fail("server did not become healthy:\n" + "".join(output))
        yield output
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
        process.wait(30)
        reader.join(5)


def banner_of(output: list[str]) -> str:
    for line in output:
        with contextlib.suppress(ValueError):
            message = json.loads(line).get("message", "")
            if message.startswith("Lakekeeper ") and "database:" in message:
                return message
    raise AssertionError("no startup banner in:\n" + "".join(output))


def test_production_config_refuses_to_start_without_postgres(tmp_path):
    result = run_cli("--config", PRODUCTION, "serve", env=clean_env(), cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    [line] = error_lines(result.stderr)
    assert "LAKEKEEPER__PG_DATABASE_URL_WRITE" in line and "LAKEKEEPER__REQUIRE_POSTGRES" in line
    assert "production.toml" in line
    assert "Traceback" not in result.stderr
    # nothing was created: no SQLite catalog, no demo warehouse
    assert list(tmp_path.iterdir()) == []
    # the same for the migrate command: it must not migrate an embedded SQLite instead
    migrate = run_cli("--config", PRODUCTION, "migrate", env=clean_env(), cwd=tmp_path)
    assert migrate.returncode == 2 and "LAKEKEEPER__PG_DATABASE_URL_WRITE" in migrate.stderr


def test_embedded_banner_names_sqlite_and_the_active_backends(tmp_path):
    env = clean_env(
        LAKEKEEPER__LISTEN_PORT=str(free_port()),
        LAKEKEEPER__METRICS__ENABLED="false",
        LAKEKEEPER__LOG_CLOUDEVENTS="true",
    )
    with serving(env=env, cwd=tmp_path) as output:
        banner = banner_of(output)
    assert f"database: sqlite {tmp_path / 'lakekeeper-data' / 'catalog.sqlite'} (embedded)" in banner
    assert "authorizer: allowall" in banner
    assert "secret store: database (sqlite)" in banner  # the built-in store, in the SQLite file
    printed = "".join(output)
    assert "THIS IS UNSAFE" not in printed  # the quickstart's default key is mentioned calmly, at info level
    # where the data lives, as an absolute path: ./lakekeeper-data depends on where `serve` was started
    assert f"Data (SQLite catalog and the 'demo' warehouse): {tmp_path / 'lakekeeper-data'}" in printed
    assert "event sinks: log;" in banner  # LOG_CLOUDEVENTS built the log sink
    assert "storage: " in banner and "file" in banner.split("storage: ")[1]
    assert f"listening on http://127.0.0.1:{env['LAKEKEEPER__LISTEN_PORT']}" in banner


def test_production_config_refuses_to_start_without_authentication(tmp_path):
    """A PostgreSQL URL but no identity provider: config/production.toml (REQUIRE_AUTHENTICATION) stops
    before anything is served or migrated."""
    env = clean_env(LAKEKEEPER__PG_DATABASE_URL_WRITE="postgresql://nobody@127.0.0.1:1/never")
    for command in ("serve", "migrate"):
        result = run_cli("--config", PRODUCTION, command, env=env, cwd=tmp_path)
        assert result.returncode == 2, result.stderr
        [line] = error_lines(result.stderr)
        assert "LAKEKEEPER__REQUIRE_AUTHENTICATION" in line and "LAKEKEEPER__OPENID_PROVIDER_URI" in line
        assert "production.toml" in line and "Traceback" not in result.stderr


@pytest.mark.postgres
def test_an_unauthenticated_server_on_postgres_says_so_loudly(pg_url_factory, tmp_path):
    url = pg_url_factory()
    env = clean_env(LAKEKEEPER__PG_DATABASE_URL_WRITE=url, LAKEKEEPER__LISTEN_PORT=str(free_port()),
                    LAKEKEEPER__BIND_IP="127.0.0.1", LAKEKEEPER__METRICS__ENABLED="false")
    assert run_cli("migrate", env=env, cwd=tmp_path).returncode == 0
    with serving(env=env, cwd=tmp_path) as output:
        pass
    warnings = [json.loads(line) for line in output if line.startswith("{") and "UNAUTHENTICATED" in line]
    assert len(warnings) == 1 and warnings[0]["level"] == "WARNING", output
    assert "allowall" in warnings[0]["message"] and "may do everything" in warnings[0]["message"]
    # the embedded laptop default on 127.0.0.1 stays quiet
    quiet = clean_env(LAKEKEEPER__LISTEN_PORT=str(free_port()), LAKEKEEPER__METRICS__ENABLED="false")
    (tmp_path / "embedded").mkdir()
    with serving(env=quiet, cwd=tmp_path / "embedded") as embedded:
        pass
    assert not any("UNAUTHENTICATED" in line for line in embedded)


@pytest.mark.postgres
def test_production_config_with_postgres_serves_and_says_so(pg_url_factory, tmp_path):
    from lakekeeper_testing.oidc import OidcIssuer

    url = pg_url_factory()
    with OidcIssuer("production", audience="lakekeeper") as idp:
        _serve_production(url, idp, tmp_path)


def _serve_production(url: str, idp, tmp_path) -> None:
    env = clean_env(
        LAKEKEEPER__OPENID_PROVIDER_URI=idp.uri,
        LAKEKEEPER__OPENID_AUDIENCE="lakekeeper",
        LAKEKEEPER__PG_DATABASE_URL_WRITE=url,
        LAKEKEEPER__PG_ENCRYPTION_KEY="a-long-random-production-key-0123456789",
        LAKEKEEPER__LISTEN_PORT=str(free_port()),
        LAKEKEEPER__BIND_IP="127.0.0.1",
        LAKEKEEPER__WORKERS="1",
        LAKEKEEPER__METRICS__ENABLED="false",
    )
    assert run_cli("--config", PRODUCTION, "migrate", env=env, cwd=tmp_path).returncode == 0
    with serving("--config", PRODUCTION, env=env, cwd=tmp_path) as output:
        banner = banner_of(output)
    database = url.rsplit("/", 1)[1]
    assert "database: postgresql " in banner and banner.split("database: ")[1].split(";")[0].endswith("/" + database)
    assert "password" not in banner and "@" not in banner
    assert "event sinks: none" in banner
    assert not (tmp_path / "lakekeeper-data").exists()
    assert not any("UNAUTHENTICATED" in line for line in output)


def test_out_of_range_port_is_a_config_error_before_the_banner(tmp_path):
    result = run_cli("serve", env=clean_env(LAKEKEEPER__LISTEN_PORT="70000"), cwd=tmp_path)
    assert result.returncode == 2
    [line] = error_lines(result.stderr)
    assert line == "lakekeeper: error: LAKEKEEPER__LISTEN_PORT: must be <= 65535: 70000"
    assert "serving" not in result.stderr + result.stdout and "Traceback" not in result.stderr
    metrics = run_cli("serve", env=clean_env(LAKEKEEPER__METRICS__PORT="-1"), cwd=tmp_path)
    assert error_lines(metrics.stderr) == ["lakekeeper: error: LAKEKEEPER__METRICS__PORT: must be >= 0: -1"]


def test_port_in_use_names_host_and_port(tmp_path):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_cli("serve", env=clean_env(LAKEKEEPER__LISTEN_PORT=str(port)), cwd=tmp_path)
    assert result.returncode == 2
    [line] = error_lines(result.stderr)
    assert f"cannot listen on 127.0.0.1:{port}: Address already in use" in line
    assert "serving" not in result.stderr and "Traceback" not in result.stderr


def test_misspelled_variables_warn_once_each_with_a_suggestion(tmp_path):
    port = free_port()
    env = clean_env(
        LAKEKEEPER__LISTEN_PORT=str(port),
        LAKEKEEPER__METRICS__ENABLED="false",
        LAKEKEPER__LOG_LEVEL="debug",  # prefix typo
        LAKEKEEPER_WORKERS="2",  # one underscore, a real key
        LAKEKEEPER__LISTEN_PROT="1",  # near-miss key
        LAKEKEEPER_SPARK_JARS_DIR="/nowhere",  # a tool's own variable, not ours: no warning
    )
    with serving(env=env, cwd=tmp_path) as output:
        pass
    warnings = [json.loads(line)["message"] for line in output
                if line.startswith("{") and json.loads(line)["level"] == "WARNING"]
    expected = [
        "Ignored variable LAKEKEPER__LOG_LEVEL (did you mean LAKEKEEPER__LOG_LEVEL?)",
        "Ignored variable LAKEKEEPER_WORKERS (did you mean LAKEKEEPER__WORKERS?)",
        "Unknown config key LAKEKEEPER__LISTEN_PROT (did you mean LAKEKEEPER__LISTEN_PORT?)",
    ]
    for message in expected:
        assert warnings.count(message) == 1, warnings
    assert not any("SPARK_JARS_DIR" in w for w in warnings)

    strict = run_cli("serve", env={**env, "LAKEKEEPER__STRICT_CONFIG": "true"}, cwd=tmp_path)
    assert strict.returncode == 2
    [line] = error_lines(strict.stderr)
    assert all(message in line for message in expected)


def test_a_failed_startup_is_one_line_with_exit_2_and_no_connection_help(tmp_path):
    """OpenFGA unreachable when the backends are built (after the database check): one line naming the
    variable, exit 2, no logged traceback, and no connection help for a server that never served."""
    pytest.importorskip("lakekeeper_authz_openfga")
    nothing_there = free_port()
    env = clean_env(
        LAKEKEEPER__LISTEN_PORT=str(free_port()),
        LAKEKEEPER__METRICS__ENABLED="false",
        LAKEKEEPER__AUTHZ_BACKEND="openfga",
        LAKEKEEPER__OPENFGA__ENDPOINT=f"http://127.0.0.1:{nothing_there}",
    )
    result = run_cli("serve", env=env, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    [line] = error_lines(result.stderr)
    assert f"OpenFGA at http://127.0.0.1:{nothing_there} (LAKEKEEPER__OPENFGA__ENDPOINT) is unreachable" in line
    assert "Traceback" not in result.stderr and '"level": "ERROR"' not in result.stderr
    assert "Lakekeeper is serving" not in result.stdout + result.stderr


def test_a_short_trino_policy_key_is_warned_about_and_a_long_one_is_not(tmp_path):
    """The Trino policy key is the only credential of /trino/<key>/...: one too short to be random
    is a loud warning at startup (the key itself never appears in it)."""
    for key, warned in (("trino-key", True), ("5b0e1f0c8a9d4e3f9c2b7a6d1e0f4c3b", False)):
        workdir = tmp_path / str(len(key))
        workdir.mkdir()
        env = clean_env(LAKEKEEPER__LISTEN_PORT=str(free_port()), LAKEKEEPER__METRICS__ENABLED="false",
                        LAKEKEEPER__TRINO_OPA__KEY=key)
        with serving(env=env, cwd=workdir) as output:
            pass
        warnings = [json.loads(line) for line in output if line.startswith("{") and "TRINO_OPA__KEY" in line]
        assert len(warnings) == int(warned), output
        if warned:
            assert warnings[0]["level"] == "WARNING" and "9 characters" in warnings[0]["message"]
        assert not any(key in line for line in output)


def banners_of(output: list[str], count: int, timeout: float = 30) -> list[str]:
    """The startup banners of ``count`` processes (one per worker), waiting for the slower workers."""
    deadline = time.monotonic() + timeout
    while True:
        banners = [json.loads(line)["message"] for line in list(output)
                   if line.startswith("{") and '"message": "Lakekeeper ' in line]
        if len(banners) >= count or time.monotonic() > deadline:
            return banners
        time.sleep(0.1)


def test_workers_serve_on_uvloop_when_it_is_installed(tmp_path):
    pytest.importorskip("uvloop")  # the `fast` extra; the test extra installs it
    env = clean_env(LAKEKEEPER__LISTEN_PORT=str(free_port()), LAKEKEEPER__METRICS__ENABLED="false",
                    LAKEKEEPER__WORKERS="2")
    with serving(env=env, cwd=tmp_path) as output:
        banners = banners_of(output, 2)
        assert httpx.get(f"http://127.0.0.1:{env['LAKEKEEPER__LISTEN_PORT']}/catalog/v1/config",
                         params={"warehouse": "demo"}).status_code == 200
    assert len(banners) == 2 and all(banner.endswith("event loop: uvloop") for banner in banners), banners


def test_event_loop_asyncio_serves_on_asyncios_own_loop(tmp_path):
    env = clean_env(LAKEKEEPER__LISTEN_PORT=str(free_port()), LAKEKEEPER__METRICS__ENABLED="false",
                    LAKEKEEPER__EVENT_LOOP="asyncio")
    with serving(env=env, cwd=tmp_path) as output:
        assert httpx.get(f"http://127.0.0.1:{env['LAKEKEEPER__LISTEN_PORT']}/catalog/v1/config",
                         params={"warehouse": "demo"}).status_code == 200
    assert banner_of(output).endswith("event loop: asyncio")


def test_event_loop_uvloop_without_uvloop_is_a_config_error(tmp_path):
    # an interpreter where `import uvloop` fails (a None entry in sys.modules blocks the import)
    blocked = "import sys; sys.modules['uvloop'] = None; from lakekeeper_host.cli import main; sys.exit(main())"
    env = clean_env(LAKEKEEPER__LISTEN_PORT=str(free_port()), LAKEKEEPER__EVENT_LOOP="uvloop")
    result = subprocess.run([sys.executable, "-c", blocked, "serve"], env=env, cwd=tmp_path,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    [line] = error_lines(result.stderr)
    assert "LAKEKEEPER__EVENT_LOOP=uvloop but uvloop is not installed" in line and "[fast]" in line
    assert "Traceback" not in result.stderr
    # the default falls back to asyncio's loop in the same interpreter: `auto` never fails
    with serving(env={**env, "LAKEKEEPER__EVENT_LOOP": "auto"}, cwd=tmp_path, entry=("-c", blocked)) as output:
        pass
    assert banner_of(output).endswith("event loop: asyncio")
