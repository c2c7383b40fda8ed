"""Fixtures of the maintenance tests: servers with their own maintenance settings, a Spark
standalone cluster (master + worker from the pyspark package) on loopback ports."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from lakekeeper_testing.server import CatalogServer
from lakekeeper_testing.services import free_port


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request) -> str:
    return request.param


@pytest.fixture
def make_server(lakekeeper_server_factory, backend, tmp_path) -> Callable[..., CatalogServer]:
    """``make_server(env)``: a started server of ``backend`` on a fresh database, stopped after the test."""
    servers: list[CatalogServer] = []

    def make(extra: dict[str, str]) -> CatalogServer:
        env = {"LAKEKEEPER__TASK_POLL_INTERVAL": "100ms", **extra}
        if backend == "sqlite":
            env["LAKEKEEPER__SQLITE_PATH"] = str(tmp_path / f"catalog-{len(servers)}.sqlite")
        servers.append(lakekeeper_server_factory(env, backend=backend))
        return servers[-1]

    yield make
    for srv in servers:
        srv.close()


class StandaloneCluster:
    """``spark-class org.apache.spark.deploy.master.Master`` and one ``Worker`` (1 core, 512 MiB: room
    for one executor of Spark's smallest allowed size), loopback only."""

    def __init__(self, work_dir: Path):
        import pyspark

        self.spark_home = Path(pyspark.__file__).parent
        self.work_dir = work_dir
        self.master_port, self.worker_port = free_port(), free_port()
        self.master_url = f"spark://127.0.0.1:{self.master_port}"
        self.master_log, self.worker_log = work_dir / "master.log", work_dir / "worker.log"
        self.processes: list[subprocess.Popen] = []

    def _start(self, args: list[str], log: Path) -> None:
        # small daemons: C1 JIT only, little heap (they only hand out one executor)
        env = {**os.environ, "SPARK_HOME": str(self.spark_home), "SPARK_LOCAL_IP": "127.0.0.1",
               "SPARK_DAEMON_MEMORY": "256m", "SPARK_DAEMON_JAVA_OPTS": "-XX:TieredStopAtLevel=1",
               "SPARK_WORKER_DIR": str(self.work_dir / "work")}  # fmt: skip
        with open(log, "ab") as out:
            self.processes.append(
                subprocess.Popen([str(self.spark_home / "bin" / "spark-class"), *args], env=env, stdout=out,
                                 stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
            )

    def _wait_for_log(self, log: Path, text: str, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if log.exists() and text in log.read_text(errors="replace"):
                return
            if any(p.poll() is not None for p in self.processes):
                break
            time.sleep(0.3)
        raise RuntimeError(f"Spark standalone cluster did not start ({text!r} not in {log.name}):\n"
                           + (log.read_text(errors="replace")[-3000:] if log.exists() else ""))  # fmt: skip

    def start(self) -> StandaloneCluster:
        self._start(["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(self.master_port),
                     "--webui-port", str(free_port())], self.master_log)  # fmt: skip
        self._wait_for_log(self.master_log, "I have been elected leader")
        self._start(["org.apache.spark.deploy.worker.Worker", self.master_url, "--host", "127.0.0.1",
                     "--port", str(self.worker_port), "--webui-port", str(free_port()), "--cores", "1",
                     "--memory", "512m", "--work-dir", str(self.work_dir / "work")], self.worker_log)  # fmt: skip
        self._wait_for_log(self.master_log, "Registering worker")
        return self

    def stop(self) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(20)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait(5)


@pytest.fixture(scope="module")
def spark_cluster(tmp_path_factory) -> StandaloneCluster:
    cluster = StandaloneCluster(tmp_path_factory.mktemp("spark-standalone"))
    try:
        yield cluster.start()
    finally:
        cluster.stop()
