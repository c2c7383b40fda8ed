"""Fixtures of the management tests: extra servers with test-only plugins loaded by entry point."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from lakekeeper_testing.server import CatalogServer

PLUGIN_DIR = Path(__file__).parent / "plugins"


@pytest.fixture(scope="session")
def test_plugin_path(tmp_path_factory) -> str:
    """A sys.path entry holding the test plugins and a dist-info that declares them as
    ``lakekeeper`` entry points, so a ``lakekeeper serve`` subprocess discovers them for real."""
    root = tmp_path_factory.mktemp("lk-test-plugins")
    for module in PLUGIN_DIR.glob("lk_test_*.py"):
        shutil.copy(module, root / module.name)
    dist = root / "lk_test_plugins-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: lk-test-plugins\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        "[lakekeeper]\n"
        + "".join(f"{m.stem} = {m.stem}\n" for m in sorted(PLUGIN_DIR.glob("lk_test_*.py")))
    )
    return str(root)


BACKENDS = ["sqlite", "postgres"]


def plugin_server_env(test_plugin_path: str, sqlite_path: Path) -> dict[str, str]:
    """Settings of a server with the test plugins (on SQLite: in ``sqlite_path``)."""
    return {
        "PYTHONPATH": os.pathsep.join(p for p in (test_plugin_path, os.environ.get("PYTHONPATH")) if p),
        "LAKEKEEPER__TASK_POLL_INTERVAL": "100ms",
        "LAKEKEEPER__SQLITE_PATH": str(sqlite_path),  # ignored on PostgreSQL
    }


@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    return request.param


@pytest.fixture(scope="module", params=BACKENDS)
def plugin_server(request, test_plugin_path, tmp_path_factory, lakekeeper_server_factory) -> CatalogServer:
    """One bootstrapped server with the test plugins per backend and module, shared by the tests
    that need no settings of their own; each isolates its state in a fresh warehouse
    (``new_file_warehouse``). A server of its own costs a process start (seconds) per test; module
    scope stops it when the module is done (an idle server's task pollers keep using CPU)."""
    sqlite_path = tmp_path_factory.mktemp("plugin-server") / "catalog.sqlite"
    srv = lakekeeper_server_factory(plugin_server_env(test_plugin_path, sqlite_path), backend=request.param)
    yield srv
    srv.close()


@pytest.fixture
def make_server(
    backend, test_plugin_path, tmp_path, lakekeeper_server_factory, pg_url_factory
) -> Callable[..., CatalogServer]:
    """Start servers sharing one fresh database of ``backend`` (SQLite file or PostgreSQL db).

    ``make_server(env={...})`` -> a started ``CatalogServer``; all are stopped after the test.
    """
    env = plugin_server_env(test_plugin_path, tmp_path / "catalog.sqlite")
    pg_url = pg_url_factory() if backend == "postgres" else None
    servers: list[CatalogServer] = []

    def make(extra: dict[str, str] | None = None, *, bootstrap: bool = True) -> CatalogServer:
        """``bootstrap=False``: a pristine server (PostgreSQL: not bootstrapped; SQLite: no quickstart)."""
        settings = {**env, **(extra or {})}
        if not bootstrap and backend == "sqlite":
            settings["LAKEKEEPER__EMBEDDED_QUICKSTART"] = "false"
        srv = lakekeeper_server_factory(settings, pg_url=pg_url, bootstrap=bootstrap and not servers)
        servers.append(srv)
        return srv

    yield make
    for srv in servers:
        srv.close()
