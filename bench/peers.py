"""Peers that need more than a class from lakekeeper_testing: lakana-server in its own venv.

lakana-server (PyPI, FastAPI + uvicorn) pins dependencies newer than ours (fsspec, s3fs,
cryptography >= 50, pydantic-settings), so it lives in a separate virtualenv,
``~/.cache/lakekeeper-bench/lakana-venv`` (``python -m bench setup-peers``). Its Iceberg REST
catalog serves ``/v1/{environment}/...``, authenticates with a personal access token, has no
HEAD routes and no views, and creates tables only below the top-level namespaces ``bronze``,
``silver`` or ``gold``.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import attrs
import httpx

from lakekeeper_testing.services import free_port, stop_process_group

LAKANA_VERSION = "0.20.0"
LAKANA_VENV = Path(os.environ.get("BENCH_LAKANA_VENV", Path.home() / ".cache/lakekeeper-bench/lakana-venv"))
LAKANA_NAMESPACE = ["bronze"]


def setup_lakana() -> str:
    """Create the venv and install lakana-server (network: PyPI only)."""
    if not (LAKANA_VENV / "bin" / "python").exists():
        LAKANA_VENV.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "venv", str(LAKANA_VENV)], check=True)
    subprocess.run([str(LAKANA_VENV / "bin" / "pip"), "install", "-q", f"lakana-server=={LAKANA_VERSION}"],
                   check=True)
    return f"lakana-server {LAKANA_VERSION} installed in {LAKANA_VENV}"


@attrs.define
class LakanaServer:
    """``lakana-server`` (uvicorn, one process) on a fresh SQLite file or PostgreSQL database."""

    database_url: str | None = None  # SQLAlchemy URL; None = SQLite in the temp dir
    port: int = attrs.field(factory=free_port)
    key_id: str = attrs.field(factory=lambda: "bench" + secrets.token_hex(6))
    secret: str = attrs.field(factory=lambda: secrets.token_hex(20))
    process: subprocess.Popen | None = None
    startup_s: float | None = None
    migrate_s: float | None = None
    _dir: str | None = None

    @property
    def binary(self) -> Path:
        return LAKANA_VENV / "bin" / "lakana-server"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def token(self) -> str:
        return f"lakana_pat_{self.key_id}_{self.secret}"

    @property
    def database_kind(self) -> str:
        return "sqlite" if self.database_url is None or self.database_url.startswith("sqlite") else "postgresql"

    @property
    def version(self) -> str:
        return LAKANA_VERSION

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def environment(self) -> dict[str, str]:
        assert self._dir is not None
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LAKANA_", "PYTHONPATH", "VIRTUAL_ENV"))}
        env.update({
            "LAKANA_DATABASE__URL": self.database_url or f"sqlite:///{self._dir}/lakana.db",
            "LAKANA_BOOTSTRAP_PAT_KEY_ID": self.key_id,
            "LAKANA_BOOTSTRAP_PAT_SECRET": self.secret,
            "LAKANA_PORT": str(self.port),
            "LAKANA_HOST": "127.0.0.1",
            "LAKANA_LOG__LEVEL": "WARNING",
            "LAKANA_LOG__ACCESS": "false",
        })
        return env

    def start(self, timeout: float = 120) -> LakanaServer:
        if not self.binary.exists():
            raise FileNotFoundError(f"{self.binary} not found: run `python -m bench setup-peers` first")
        self._dir = tempfile.mkdtemp(prefix="bench-lakana-")
        env = self.environment()
        log = open(Path(self._dir) / "server.log", "ab")
        began = time.perf_counter()
        subprocess.run([str(self.binary), "migrate"], env=env, stdout=log, stderr=subprocess.STDOUT, check=True,
                       timeout=timeout, cwd=self._dir)
        self.migrate_s = round(time.perf_counter() - began, 2)
        began = time.perf_counter()
        self.process = subprocess.Popen([str(self.binary)], env=env, stdout=log, stderr=subprocess.STDOUT,
                                        cwd=self._dir, start_new_session=True)
        log.close()
        while time.perf_counter() - began < timeout:
            if self.process.poll() is not None:
                raise RuntimeError(f"lakana-server exited with {self.process.returncode}: {self.log_tail()}")
            try:
                if httpx.get(self.url + "/v1/config", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        else:
            raise RuntimeError(f"lakana-server not ready after {timeout}s: {self.log_tail()}")
        self.startup_s = round(time.perf_counter() - began, 3)
        root = Path(self._dir) / "warehouse"
        root.mkdir()
        response = httpx.post(self.url + "/api/v1/environments", headers={"authorization": f"Bearer {self.token}"},
                              json={"name": "bench", "storage": {"scheme": "file", "root": root.as_uri()}}, timeout=30)
        response.raise_for_status()
        return self

    def target(self) -> dict[str, Any]:
        return {"name": "lakana", "catalog_url": self.url, "warehouse": None, "prefix": "bench", "token": self.token}

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = (Path(self._dir or "") / "server.log").read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def close(self) -> None:
        stop_process_group(self.process)
        self.process = None
        if self._dir:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
