"""Run a real ``lakekeeper serve`` process for tests, benchmarks and examples."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from lakekeeper_testing.services import free_port, stop_process_group

# Settings for a long-lived test server none of whose tests waits for a task: its pollers look every
# 5 s instead of every 200 ms. Idle, a server polling every 200 ms uses ~8 % of a core (measured);
# a session-scoped one does so for the rest of the run.
IDLE_POLLING = {"LAKEKEEPER__TASK_POLL_INTERVAL": "5s"}


class CatalogServer:
    """A ``lakekeeper serve`` subprocess on free loopback ports.

    ``env`` adds ``LAKEKEEPER__*`` settings; without a PostgreSQL URL it runs embedded (SQLite
    in a temporary data dir).
    """

    def __init__(self, env: dict[str, str] | None = None, *, data_dir: str | None = None, workers: int = 1):
        self._tmp = tempfile.TemporaryDirectory(prefix="lakekeeper-test-") if data_dir is None else None
        self.data_dir = data_dir or self._tmp.name
        self.port = free_port()
        self.metrics_port = free_port()
        self.extra_env = dict(env or {})
        self.workers = workers
        self.process: subprocess.Popen | None = None
        self.log_path = Path(self.data_dir) / "server.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def catalog_url(self) -> str:
        return self.url + "/catalog"

    def environment(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LAKEKEEPER__", "ICEBERG_REST__"))}
        env.update(
            {
                "LAKEKEEPER__DATA_DIR": self.data_dir,
                "LAKEKEEPER__LISTEN_PORT": str(self.port),
                "LAKEKEEPER__BIND_IP": "127.0.0.1",
                "LAKEKEEPER__METRICS__PORT": str(self.metrics_port),
                "LAKEKEEPER__WORKERS": str(self.workers),
                "LAKEKEEPER__PG_ENCRYPTION_KEY": "test-encryption-key-0123456789abcdef",
                "LAKEKEEPER__DEBUG__MIGRATE_BEFORE_SERVE": "true",
                "LAKEKEEPER__TASK_POLL_INTERVAL": "200ms",
                # tests root their file warehouses in temporary directories, not in the data dir
                "LAKEKEEPER__FILE_STORAGE_ALLOWED_ROOTS": json.dumps([tempfile.gettempdir(), self.data_dir]),
            }
        )
        env.update(self.extra_env)
        return env

    def start(self, timeout: float = 30) -> CatalogServer:
        log = open(self.log_path, "ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "lakekeeper_host", "serve"],
            env=self.environment(),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        # one client for all polls: each new httpx client builds a TLS context (~0.4 s on a loaded machine)
        with httpx.Client(timeout=1) as client:
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    raise RuntimeError(f"lakekeeper serve exited with {self.process.returncode}:\n{self.log_tail()}")
                try:
                    if client.get(self.url + "/health").status_code == 200:
                        return self
                except httpx.HTTPError:
                    pass
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"lakekeeper serve not healthy after {timeout}s:\n{self.log_tail()}")

    def store_url(self) -> str:
        """The database URL of this server's store, for tests that look at rows directly."""
        pg = self.extra_env.get("LAKEKEEPER__PG_DATABASE_URL_WRITE")
        if pg:
            from lakekeeper_host.store.db import asyncpg_url

            return asyncpg_url(pg, "LAKEKEEPER__PG_DATABASE_URL_WRITE")
        path = self.extra_env.get("LAKEKEEPER__SQLITE_PATH") or os.path.join(self.data_dir, "catalog.sqlite")
        return f"sqlite+aiosqlite:///{os.path.abspath(path)}"

    def fetch_val(self, sql: str, values: dict | None = None):
        """One value from this server's database (what the API does not show, e.g. cleaned-up rows)."""
        from lakekeeper_host.store import Store

        async def fetch():
            store = Store(self.store_url())
            await store.connect()
            try:
                return await store.fetch_val(sql, values or {})
            finally:
                await store.disconnect()

        return asyncio.run(fetch())

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self) -> None:
        stop_process_group(self.process)
        self.process = None

    def close(self) -> None:
        self.stop()
        if self._tmp is not None:
            self._tmp.cleanup()

    def __enter__(self) -> CatalogServer:
        # a server ``lakekeeper_server_factory`` started is already running: ``with`` only closes it
        return self if self.process is not None else self.start()

    def __exit__(self, *exc) -> None:
        self.close()


def start_server(
    env: dict[str, str] | None = None,
    *,
    pg_url: str | None = None,
    timeout: float = 30,
    bootstrap: bool = True,
    bootstrap_token: str | None = None,
    **kwargs,
) -> CatalogServer:
    """A started server with ``env``: embedded (SQLite), or on the PostgreSQL database ``pg_url``
    and bootstrapped there unless ``bootstrap=False`` (the embedded default bootstraps itself).
    ``bootstrap_token`` authenticates the bootstrap call on a server that requires tokens; the
    bootstrap must then succeed. ``kwargs`` go to ``CatalogServer``."""
    env = dict(env or {})
    if pg_url:
        env |= {"LAKEKEEPER__PG_DATABASE_URL_WRITE": pg_url, "LAKEKEEPER__PG_DATABASE_URL_READ": pg_url}
    server = CatalogServer(env, **kwargs).start(timeout)
    if pg_url and bootstrap:
        headers = {"Authorization": f"Bearer {bootstrap_token}"} if bootstrap_token else {}
        response = httpx.post(
            server.url + "/management/v1/bootstrap", json={"accept-terms-of-use": True}, headers=headers, timeout=30
        )
        if bootstrap_token:
            response.raise_for_status()
    return server


def create_file_warehouse(server_url: str, name: str, root: str, *, project_id: str | None = None,
                          delete_profile: dict | None = None) -> str:
    """Create a ``file`` warehouse through the management API; returns its id."""
    headers = {"x-project-id": project_id} if project_id else {}
    body = {"warehouse-name": name, "storage-profile": {"type": "file", "root": root}}
    if delete_profile:
        body["delete-profile"] = delete_profile
    response = httpx.post(f"{server_url}/management/v1/warehouse", json=body, headers=headers, timeout=30)
    response.raise_for_status()
    return response.json()["warehouse-id"]
