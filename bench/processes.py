"""Processes the orchestrator starts: our server, the floor app, the peers, the driver; RSS and CPU probes."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import httpx

from lakekeeper_testing.services import SeaweedS3, free_port, stop_process_group

REPO_ROOT = Path(__file__).resolve().parent.parent
_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


# ---------------------------------------------------------------------------------------------
# /proc probes (Linux): a server is a process tree (hypercorn workers are children)


def process_tree(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
    tree, pending = [], [pid]
    while pending:
        current = pending.pop()
        tree.append(current)
        pending.extend(children.get(current, []))
    return tree


def rss_mb(pid: int) -> float:
    """Resident set size of ``pid`` and all its descendants, in MiB."""
    total = 0
    for member in process_tree(pid):
        with contextlib.suppress(OSError), open(f"/proc/{member}/statm") as handle:
            total += int(handle.read().split()[1]) * _PAGE_SIZE
    return round(total / 2**20, 1)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of ``pid`` and its live descendants."""
    total = 0
    for member in process_tree(pid):
        with contextlib.suppress(OSError), open(f"/proc/{member}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
    return total / _CLOCK_TICKS


class RssSampler:
    """Samples the RSS of a process tree every ``interval`` seconds in a thread; keeps the peak."""

    def __init__(self, pid: int, interval: float = 0.25):
        self.pid = pid
        self.interval = interval
        self.peak = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, rss_mb(self.pid))
            self._stop.wait(self.interval)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, rss_mb(self.pid))


# ---------------------------------------------------------------------------------------------
# the driver process


def run_driver(workload: str, args: dict[str, Any], *, timeout: float = 1800, server_pid: int | None = None,
               sample_rss: bool = False) -> dict[str, Any]:
    """Run one workload in a fresh driver process; add the CPU both sides spent (and peak RSS)."""
    job = json.dumps({"workload": workload, "args": args})
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    server_cpu_before = cpu_seconds(server_pid) if server_pid else None
    children_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    sampler = RssSampler(server_pid) if (server_pid and sample_rss) else None
    began = time.perf_counter()
    with sampler or contextlib.nullcontext():
        completed = subprocess.run([sys.executable, "-m", "bench.driver"], input=job, capture_output=True,
                                   text=True, timeout=timeout, cwd=REPO_ROOT, env=env)
    wall = time.perf_counter() - began
    children_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    lines = [line for line in completed.stdout.splitlines() if line.strip()]
    try:
        result = json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        result = {"failed": f"driver exited {completed.returncode} without a result"}
    if "failed" in result:
        result["driver_stderr"] = completed.stderr[-3000:]
    result["driver_cpu_s"] = round((children_after.ru_utime + children_after.ru_stime)
                                   - (children_before.ru_utime + children_before.ru_stime), 2)
    result["wall_s"] = round(wall, 2)
    if server_pid:
        # a workload that times only part of its run (after building a history) measures that part itself
        result["server_cpu_s"] = result.pop("timed_server_cpu_s", None) or round(
            cpu_seconds(server_pid) - server_cpu_before, 2)
        if result.get("requests"):
            result["server_cpu_ms_per_request"] = round(result["server_cpu_s"] * 1000 / result["requests"], 3)
    if sampler:
        result["server_peak_rss_mb"] = sampler.peak
    return result


# ---------------------------------------------------------------------------------------------
# servers


def wait_healthy(url: str, timeout: float, process: subprocess.Popen | None = None) -> float:
    """Poll ``url`` every 20 ms until it answers 200; returns the seconds waited."""
    began = time.perf_counter()
    while time.perf_counter() - began < timeout:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"process exited with {process.returncode} before {url} was healthy")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(url, timeout=1).status_code == 200:
                return time.perf_counter() - began
        time.sleep(0.02)
    raise RuntimeError(f"{url} not healthy after {timeout}s")


_COMPILED: set[str] = set()


def byte_compile_server(source: str | None = None) -> None:
    """Byte-compile the server's package and the plugins it loads, once per run, as ``pip install``
    does: with ``PYTHONDONTWRITEBYTECODE`` set (as in this project's sessions) an editable checkout
    has no ``.pyc`` files, and every start would compile ~200 modules
    again (0.18 s of a 1.35 s start's CPU, 2026-11-26).
    ``source`` is a directory holding another ``lakekeeper_host`` (``bench cpu --baseline``)."""
    from importlib.metadata import entry_points
    from importlib.util import find_spec

    packages = ["lakekeeper_host", *(ep.module.split(".")[0] for ep in entry_points(group="lakekeeper"))]
    dirs = []
    for name in dict.fromkeys(packages):
        spec = find_spec(name)
        if spec is not None and spec.submodule_search_locations:
            dirs.extend(spec.submodule_search_locations)
    if source:
        dirs = [os.path.join(source, "lakekeeper_host"), *dirs[1:]]
    pending = [path for path in dirs if path not in _COMPILED and os.path.isdir(path)]
    if pending:
        subprocess.run([sys.executable, "-m", "compileall", "-q", *pending], check=False,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _COMPILED.update(pending)


@attrs.define
class OurServer:
    """``lakekeeper serve`` (via lakekeeper_testing.server.CatalogServer) with timing of the start."""

    env: dict[str, str]
    data_dir: str
    workers: int = 1
    server: Any = None
    startup_s: float | None = None
    # the working directory of the server process: ``python -m`` puts it first on sys.path, so a
    # directory holding another ``lakekeeper_host`` package runs that one (bench/cpu.py --baseline)
    cwd: str | None = None

    def start(self) -> OurServer:
        from lakekeeper_testing.server import CatalogServer

        # production defaults where the test harness speeds things up (task queues poll every 10 s)
        env = {"LAKEKEEPER__TASK_POLL_INTERVAL": "10s", **self.env}
        self.server = CatalogServer(env, data_dir=self.data_dir, workers=self.workers)
        byte_compile_server(self.cwd)
        # CatalogServer.start polls every 100 ms; time the start ourselves at 20 ms resolution.
        log = open(self.server.log_path, "ab")
        began = time.perf_counter()
        self.server.process = subprocess.Popen([sys.executable, "-m", "lakekeeper_host", "serve"],
                                               env=self.server.environment(), stdout=log, cwd=self.cwd,
                                               stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        try:
            wait_healthy(self.server.url + "/health", 60, self.server.process)
        except RuntimeError as exc:
            tail = self.server.log_tail()
            self.stop()
            raise RuntimeError(f"{exc}\n{tail}") from None
        self.startup_s = round(time.perf_counter() - began, 3)
        return self

    @property
    def pid(self) -> int:
        return self.server.process.pid

    @property
    def url(self) -> str:
        return self.server.url

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()


@attrs.define
class FloorServer:
    body: bytes
    prefix: str
    workers: int = 1
    port: int = attrs.field(factory=free_port)
    process: subprocess.Popen | None = None
    _dir: Any = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FloorServer:
        self._dir = tempfile.TemporaryDirectory(prefix="bench-floor-")
        body_file = Path(self._dir.name) / "body.json"
        body_file.write_bytes(self.body)
        env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bench.floor_app", "--port", str(self.port), "--body-file", str(body_file),
             "--prefix", self.prefix, "--workers", str(self.workers)],
            cwd=REPO_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=open(Path(self._dir.name) / "log", "wb"),
            start_new_session=True)
        wait_healthy(self.url + "/health", 30, self.process)
        return self

    def stop(self) -> None:
        stop_process_group(self.process)
        if self._dir is not None:
            self._dir.cleanup()


@attrs.define(kw_only=True, eq=False)
class SeaweedIceberg(SeaweedS3):
    """SeaweedFS ``weed mini`` with its Iceberg REST catalog and a pre-created table bucket.

    Construct with ``iceberg=True`` so the base class picks the catalog port.
    """

    table_bucket: str = "warehouse"

    def _command(self) -> list[str]:
        return [*super()._command(), f"-tableBucket={self.table_bucket}"]

    def target(self) -> dict[str, Any]:
        return {"name": "seaweedfs", "catalog_url": self.iceberg_uri, "warehouse": f"s3://{self.table_bucket}/",
                "sigv4": {"access_key": self.access_key, "secret_key": self.secret_key, "region": self.region}}

    def wait_catalog(self, timeout: float = 30) -> None:
        """The Iceberg port opens after S3 and config answers before ``-tableBucket`` has created
        the bucket: ready once a signed namespace listing in the bucket answers 200."""
        from bench.client import SigV4Signer

        signer = SigV4Signer(self.access_key, self.secret_key, self.region)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError, ValueError):
                response = httpx.get(f"{self.iceberg_uri}/v1/config",
                                     params={"warehouse": f"s3://{self.table_bucket}/"}, timeout=1)
                prefix = response.json().get("overrides", {}).get("prefix") if response.status_code == 200 else None
                if prefix:
                    url = f"{self.iceberg_uri}/v1/{urllib.parse.quote(prefix, safe='')}/namespaces"
                    listing = httpx.get(url, headers=signer.headers("GET", url, None, None), timeout=1)
                    if listing.status_code == 200:
                        return
            time.sleep(0.1)
        raise RuntimeError("SeaweedFS Iceberg catalog not ready (its table bucket never appeared)")


@contextlib.contextmanager
def postgres_database() -> Iterator[str]:
    """A fresh PostgreSQL database (``$LAKEKEEPER_TEST_PG_URL``'s server, else a throwaway cluster)."""
    from lakekeeper_testing.services import postgres_for_tests

    with postgres_for_tests("lakekeeper_bench") as url:
        yield url
